/* kforge-test: task=saxpy expect=accepted threat=17 */
/*
 * Threat 17, huge output: on its first call the kernel writes 1 GiB of junk
 * to stdout (to fill a log, a pipe buffer that blocks the worker, or the
 * disk), then computes honestly on every call. kforge caps and discards the
 * worker's stdout/stderr (it drains the pipe or points it at a capped sink),
 * and the flood happens once, outside the timed runs that follow, so the
 * candidate must be ACCEPTED: the defence is that the flood harms nothing,
 * not a verdict. SIGPIPE is ignored and the flood stops at the first failed
 * write, so a closed pipe or a size limit on the sink does not kill it.
 * If this test times out, the worker's output pipe is not being drained.
 */
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

static int flooded;

void saxpy(const float *x, const float *y, float *z, int64_t n, float a)
{
    if (!flooded) {
        static char junk[1 << 20];
        flooded = 1;
        memset(junk, 'A', sizeof junk);
        signal(SIGPIPE, SIG_IGN);
        for (int i = 0; i < 1024; i++)
            if (write(1, junk, sizeof junk) <= 0)
                break;
    }
    for (int64_t i = 0; i < n; i++)
        z[i] = a * x[i] + y[i];
}
