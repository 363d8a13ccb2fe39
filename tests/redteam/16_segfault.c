/* kforge-test: task=saxpy expect=rejected reason=crash threat=16 */
/*
 * Threat 16, crash mid-call: compute half of z, then write through a null
 * pointer. The worker dies of SIGSEGV alone; the parent, which never ran
 * candidate code, records crash and goes on.
 */
#include <stdint.h>

void saxpy(const float *x, const float *y, float *z, int64_t n, float a)
{
    for (int64_t i = 0; i < n / 2; i++)
        z[i] = a * x[i] + y[i];
    *(volatile float *)(uintptr_t)(n & 0) = 1.0f;
}
