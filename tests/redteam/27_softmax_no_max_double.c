/* kforge-test: task=softmax expect=rejected reason=nonfinite|wrong_result threat=27 */
/* From a red-team pass (a known gap until inputs got offsets and mixed scales): a softmax without the max subtraction, exp in double, one pass fewer than the stable kernel. It overflows only above 709, and kforge's inputs stayed within about +-500 (std 2, x4, x32 spikes): accepted, and benched a 1.09x win. Defence: mixed scales (a power of two per row and per column, up to 2^12) carry some rows past exp's range in every check, and offsets shift rows by up to 128 std. */
#include <math.h>
#include <stdint.h>
void softmax(const float *x, float *y, int64_t rows, int64_t cols) {
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        double sum = 0;
        for (int64_t c = 0; c < cols; c++) sum += exp((double)xr[c]);
        double inv = 1.0 / sum;
        for (int64_t c = 0; c < cols; c++) y[r * cols + c] = (float)(exp((double)xr[c]) * inv);
    }
}
