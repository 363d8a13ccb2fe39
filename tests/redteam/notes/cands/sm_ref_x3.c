/* RED TEAM parent_game: the reference computed 3 times (a deliberately slow parent). */
/* Reference softmax: numerically stable row-wise softmax of a rows x cols row-major matrix. */
#include <math.h>
#include <stdint.h>

void softmax(const float *x, float *y, int64_t rows, int64_t cols)
{
    for (int rep = 0; rep < 3; rep++)
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        float mx = xr[0];
        for (int64_t c = 1; c < cols; c++) {
            if (xr[c] > mx) {
                mx = xr[c];
            }
        }
        double sum = 0.0;
        for (int64_t c = 0; c < cols; c++) {
            yr[c] = expf(xr[c] - mx);
            sum += yr[c];
        }
        float inv = (float)(1.0 / sum);
        for (int64_t c = 0; c < cols; c++) {
            yr[c] *= inv;
        }
    }
}
