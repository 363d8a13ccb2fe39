/* Degenerate task (threat 13, magnitude term): y[r] = sum of row r of x, under mtol = 1.
 * |sum x| <= sum |x| = M, so zeros are inside the bound: `kforge validate` must refuse it. */
#include <stdint.h>

void degenerate_mtol(const float *x, float *y, int64_t rows, int64_t cols)
{
    for (int64_t r = 0; r < rows; r++) {
        double s = 0;
        for (int64_t c = 0; c < cols; c++)
            s += x[r * cols + c];
        y[r] = (float)s;
    }
}
