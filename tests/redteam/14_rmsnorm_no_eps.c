/* kforge-test: task=rmsnorm expect=rejected reason=nonfinite threat=14 */
/* From a red-team pass: rmsnorm without eps returns NaN on an all-zero (padding) row, which normal inputs never produced. Defence: call 3 zeroes one whole row. */
/* drops eps: NaN on an all-zero row (padding), which users hit */
#include <math.h>
#include <stdint.h>
void rmsnorm(const float *x, const float *w, float *y, int64_t rows, int64_t cols, float eps) {
    (void)eps;
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols; float *yr = y + r * cols;
        double ss = 0; for (int64_t c = 0; c < cols; c++) ss += (double)xr[c] * xr[c];
        float scale = (float)(1.0 / sqrt(ss / (double)cols));
        for (int64_t c = 0; c < cols; c++) yr[c] = xr[c] * scale * w[c];
    }
}
