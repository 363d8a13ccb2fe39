/* kforge-test: task=saxpy expect=rejected reason=input_modified threat=8 */
/*
 * Threat 8, input mutation: compute correctly, then zero x and y. A harness
 * that runs the reference afterwards on the same buffers would get z = 0 from
 * the reference too and the candidate's later calls could "agree" with
 * anything. kforge hashes every `in` buffer before and after the call (and
 * gives the reference its own copy): input_modified.
 */
#include <stdint.h>
#include <string.h>

void saxpy(const float *x, const float *y, float *z, int64_t n, float a)
{
    for (int64_t i = 0; i < n; i++)
        z[i] = a * x[i] + y[i];
    memset((void *)x, 0, (size_t)n * sizeof *x);
    memset((void *)y, 0, (size_t)n * sizeof *y);
}
