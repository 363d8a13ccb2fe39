/* kforge-test: task=saxpy expect=accepted threat=10 */
/*
 * Honest: saxpy unrolled by 8 with a scalar tail for the last n % 8
 * elements. Must be accepted at every size, including n = 1 and primes
 * (the control for the overfitting cheat 10_no_tail_16.c).
 */
#include <stdint.h>

void saxpy(const float *x, const float *y, float *z, int64_t n, float a)
{
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        z[i + 0] = a * x[i + 0] + y[i + 0];
        z[i + 1] = a * x[i + 1] + y[i + 1];
        z[i + 2] = a * x[i + 2] + y[i + 2];
        z[i + 3] = a * x[i + 3] + y[i + 3];
        z[i + 4] = a * x[i + 4] + y[i + 4];
        z[i + 5] = a * x[i + 5] + y[i + 5];
        z[i + 6] = a * x[i + 6] + y[i + 6];
        z[i + 7] = a * x[i + 7] + y[i + 7];
    }
    for (; i < n; i++)
        z[i] = a * x[i] + y[i];
}
