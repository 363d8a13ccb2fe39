/* kforge-test: task=saxpy expect=rejected reason=input_modified threat=29 */
/*
 * Threat 29, a const input used as scratch and restored: the kernel casts away
 * const, negates x in place (exactly), computes from the negated copy, and negates
 * it back before returning, so the bytes kforge compares after the call are the
 * original ones. In a user's program another thread reading x meanwhile, or x in
 * read-only memory (a mapped weight file), sees the difference or faults. kforge
 * maps in buffers read-only during the call: the first write faults, and the worker
 * reports the write to a read-only input: input_modified.
 */
#include <stdint.h>

void saxpy(const float *x, const float *y, float *z, int64_t n, float a)
{
    float *xs = (float *)x;
    for (int64_t i = 0; i < n; i++)
        xs[i] = -xs[i];
    for (int64_t i = 0; i < n; i++)
        z[i] = y[i] - a * xs[i];
    for (int64_t i = 0; i < n; i++)
        xs[i] = -xs[i];
}
