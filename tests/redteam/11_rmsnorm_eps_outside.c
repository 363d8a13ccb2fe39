/* kforge-test: task=rmsnorm expect=rejected reason=wrong_result threat=11 seed=1 */
/* From a red-team pass: 1/(sqrt(ms) + eps) instead of 1/sqrt(ms + eps), on
 * rows of 32+ columns only. Invisible while mean(x^2) >> eps: inputs were rescaled by
 * 2^±2 at most. Defence: variant 2 scales normal inputs by 2^-16..2^-3 half the time, the
 * maximum shape's second call by 2^-16..2^-6. */
/* Attack / realistic bug: eps added outside the square root, 1/(sqrt(ms) + eps), instead
 * of 1/sqrt(ms + eps). Zero rows give 0 (finite), so the zero-row test passes; the 2^+-2
 * rescale never makes mean(x^2) small enough for eps to matter beyond rtol. */
#include <math.h>
#include <stdint.h>
void rmsnorm(const float *x, const float *w, float *y, int64_t rows, int64_t cols, float eps) {
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        double ss = 0.0;
        for (int64_t c = 0; c < cols; c++) ss += (double)xr[c] * xr[c];
        /* the bug lives only in the wide-row path (as in a SIMD kernel with a scalar fallback) */
        float scale = cols >= 32 ? (float)(1.0 / (sqrt(ss / (double)cols) + (double)eps))
                                 : (float)(1.0 / sqrt(ss / (double)cols + (double)eps));
        for (int64_t c = 0; c < cols; c++) yr[c] = xr[c] * scale * w[c];
    }
}
