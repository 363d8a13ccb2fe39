/* softmax v1: restrict pointers, float accumulation in 8 partial sums, one pass for max. */
#include <math.h>
#include <stdint.h>

void softmax(const float *restrict x, float *restrict y, int64_t rows, int64_t cols)
{
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        float mx = xr[0];
        for (int64_t c = 1; c < cols; c++) mx = xr[c] > mx ? xr[c] : mx;
        float s[8] = {0};
        int64_t c = 0;
        for (; c + 8 <= cols; c += 8)
            for (int k = 0; k < 8; k++) { float e = expf(xr[c + k] - mx); yr[c + k] = e; s[k] += e; }
        float sum = 0.0f;
        for (; c < cols; c++) { float e = expf(xr[c] - mx); yr[c] = e; sum += e; }
        for (int k = 0; k < 8; k++) sum += s[k];
        float inv = 1.0f / sum;
        for (c = 0; c < cols; c++) yr[c] *= inv;
    }
}
