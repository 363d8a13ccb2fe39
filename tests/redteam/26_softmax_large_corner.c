/* kforge-test: task=softmax expect=rejected reason=wrong_result threat=26 */
/* From a red team's description: wrong only in the large corner (every size at
 * least 90% of its maximum: a "blocked" path that skips the last row), right on the exact
 * all-maximum shape, which was the one fixed maximum edge shape of every check. Defence:
 * the large corner is drawn at random in the top sixteenth of each range and is never
 * the all-maximum shape. */
#include <math.h>
#include <stdint.h>

void softmax(const float *x, float *y, int64_t rows, int64_t cols) {
    int corner = rows * 10 >= 512 * 9 && cols * 10 >= 4096 * 9 && !(rows == 512 && cols == 4096);
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        if (corner && r == rows - 1) { /* the "tail" the blocked path forgets */
            for (int64_t c = 0; c < cols; c++) yr[c] = 1.0f / (float)cols;
            continue;
        }
        double mx = xr[0], s = 0.0;
        for (int64_t c = 1; c < cols; c++) mx = xr[c] > mx ? xr[c] : mx;
        for (int64_t c = 0; c < cols; c++) s += exp((double)xr[c] - mx);
        for (int64_t c = 0; c < cols; c++) yr[c] = (float)(exp((double)xr[c] - mx) / s);
    }
}
