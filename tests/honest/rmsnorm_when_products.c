/* kforge-test: task=rmsnorm expect=accepted */
/* An honest kernel with a domain written in products of sizes that stay well inside 64
 * bits (and a division guarded by &&): the domain is evaluated at every corner of the
 * size box and every drawn shape, and none of them may be misread as an evaluation
 * failure (domain_error). Rows processed four columns at a time, with a tail. */
/* kforge:when cols >= 4 && rows * cols * 4 <= 8388608 && cols / (cols / 4) <= 7 */
#include <math.h>
#include <stdint.h>

void rmsnorm(const float *x, const float *w, float *y, int64_t rows, int64_t cols, float eps) {
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
        int64_t c = 0;
        for (; c + 4 <= cols; c += 4) {
            s0 += (double)xr[c] * xr[c];
            s1 += (double)xr[c + 1] * xr[c + 1];
            s2 += (double)xr[c + 2] * xr[c + 2];
            s3 += (double)xr[c + 3] * xr[c + 3];
        }
        for (; c < cols; c++) s0 += (double)xr[c] * xr[c];
        float scale = (float)(1.0 / sqrt((s0 + s1 + s2 + s3) / (double)cols + (double)eps));
        for (c = 0; c < cols; c++) y[r * cols + c] = xr[c] * scale * w[c];
    }
}
