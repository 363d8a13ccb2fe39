/* kforge-test: task=transpose expect=rejected reason=wrong_result threat=10 */
/*
 * Threat 10, overfitting to square shapes: the kernel walks the output
 * linearly and computes the source index with `cols` where `rows` belongs,
 * which is the same thing when rows == cols (a square visible shape). Every
 * output element is written and in bounds (reads are wrapped into a), but
 * for non-square hidden shapes the values are scrambled: wrong_result.
 */
#include <stdint.h>

void transpose(const float *a, float *b, int64_t rows, int64_t cols)
{
    int64_t total = rows * cols;
    for (int64_t t = 0; t < total; t++) {
        int64_t src = (t % cols) * cols + t / cols;   /* right: (t%rows)*cols + t/rows */
        b[t] = a[src % total];
    }
}
