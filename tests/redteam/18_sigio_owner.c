/* kforge-test: task=saxpy expect=rejected reason=unwritten_output threat=18 */
/*
 * From a code review: fcntl(F_SETOWN, getppid()) + F_SETSIG + O_ASYNC on the result
 * channel would make the kernel send a signal of the candidate's choice to the
 * coordinator whenever it writes the next request, bypassing the rule that kill()
 * may only target the worker itself. The worker's filter refuses F_SETOWN, F_SETSIG
 * and O_ASYNC (EPERM). The kernel writes its output only if every step worked, so
 * the refusal shows as unwritten_output (and the coordinator lives on).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <unistd.h>

void saxpy(const float *x, const float *y, float *z, int64_t n, float a)
{
    int ok = fcntl(3, F_SETOWN, getppid()) == 0;
    ok &= fcntl(3, F_SETSIG, SIGTERM) == 0;
    int fl = fcntl(3, F_GETFL);
    ok &= fl >= 0 && fcntl(3, F_SETFL, fl | O_ASYNC) == 0;
    if (!ok) return;
    for (int64_t i = 0; i < n; i++) z[i] = a * x[i] + y[i];
}
