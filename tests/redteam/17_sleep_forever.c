/* kforge-test: task=sum expect=rejected reason=timeout threat=17 */
/*
 * Threat 17, a hang that uses no CPU: the kernel sleeps forever, so a CPU
 * rlimit alone would never fire. Only the wall-clock deadline catches it:
 * timeout.
 */
#include <stdint.h>
#include <unistd.h>

void reduce_sum(const float *x, float *out, int64_t n)
{
    for (;;)
        pause();
    (void)x;
    (void)n;
    out[0] = 0.0f;
}
