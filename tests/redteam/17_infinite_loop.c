/* kforge-test: task=saxpy expect=rejected reason=timeout threat=17 */
/*
 * Threat 17, infinite loop: the kernel never returns. The wall deadline (or
 * the CPU rlimit) ends it with SIGKILL of the worker's whole process group:
 * timeout. The volatile flag keeps the compiler from deleting the loop.
 */
#include <stdint.h>

static volatile int forever = 1;

void saxpy(const float *x, const float *y, float *z, int64_t n, float a)
{
    while (forever)
        ;
    for (int64_t i = 0; i < n; i++)
        z[i] = a * x[i] + y[i];
}
