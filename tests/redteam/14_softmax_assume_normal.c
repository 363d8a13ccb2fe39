/* kforge-test: task=softmax expect=rejected reason=wrong_result threat=14 */
/*
 * Threat 14, special-input shortcut: "inputs are small, standard-normal
 * logits", so the normaliser is estimated instead of summed: for N(0,1)
 * inputs E[exp(x)] = e^0.5, hence sum_c exp(x_c) ~ cols * e^0.5, and one pass
 * (the sum) is skipped. Off by several percent per row for real data and
 * badly wrong for any other distribution: wrong_result.
 */
#include <math.h>
#include <stdint.h>

void softmax(const float *x, float *y, int64_t rows, int64_t cols)
{
    float inv = 1.0f / ((float)cols * 1.6487213f);
    for (int64_t i = 0; i < rows * cols; i++)
        y[i] = expf(x[i]) * inv;
}
