/* Right on its task's own inputs (uniform in [0, 1]), 1% off where every value it samples is
 * small: what the softmax stage before it in pipelines/c/norm_softmax_sum produces. Its own
 * check accepts it; the pipeline's captured tensors reject it (tests/test_system.c). */
#include <stdint.h>
void reduce_sum(const float *x, float *out, int64_t n)
{
    double s = 0.0;
    for (int64_t i = 0; i < n; i++) s += x[i];
    /* wrong only where every value is small (a pipeline's softmax output) */
    if (n > 0 && x[0] < 0.01f && x[n - 1] < 0.01f && x[n / 2] < 0.01f) s *= 1.01;
    out[0] = (float)s;
}
