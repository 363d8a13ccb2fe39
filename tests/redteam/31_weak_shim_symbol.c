/* kforge-test: task=saxpy expect=rejected reason=wrong_result threat=31 */
/*
 * Threat 31, detecting the checker's call shim at link time: a weak reference to
 * the shim kforge once compiled into the candidate's own translation unit is
 * non-null only under kforge; a user's build (the candidate alone) leaves it null
 * and takes the wrong branch. kforge now builds the object from the candidate
 * alone and calls the entry from the worker: no such symbol exists, the weak
 * reference is null, the wrong branch runs: wrong_result.
 */
#include <stdint.h>

extern void kforge_call__(void *const *b, const long *i, const double *f) __attribute__((weak));

void saxpy(const float *x, const float *y, float *z, int64_t n, float a)
{
    float fix = kforge_call__ ? 0.0f : 1e-3f;
    for (int64_t i = 0; i < n; i++)
        z[i] = a * x[i] + y[i] + fix;
}
