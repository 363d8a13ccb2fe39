/* kforge-test: task=saxpy expect=rejected reason=unwritten_output threat=1 */
/*
 * Threat 1, partial output: only the first half of z is computed; the second
 * half is left to whatever the buffer held before (in a naive harness: the
 * previous correct result). kforge re-poisons z before every call, so the
 * second half still holds the sentinel: unwritten_output. For n == 1 nothing
 * is written at all, which is the same verdict.
 */
#include <stdint.h>

void saxpy(const float *x, const float *y, float *z, int64_t n, float a)
{
    for (int64_t i = 0; i < n / 2; i++)
        z[i] = a * x[i] + y[i];
}
