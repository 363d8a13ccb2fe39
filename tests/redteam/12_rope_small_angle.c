/* kforge-test: task=rope expect=rejected reason=wrong_result threat=12 */
/* Threat 12, skipped work: for small angles (|a| < 0.01, the high pairs at small positions) the rotation is taken as a scaling by cos, the x1*sin term dropped. Its error is up to 1% of the pair's magnitude where it drops the term; the visible shape at pos 17 has such angles, so every check meets it. */
#include <math.h>
#include <stdint.h>

void rope(const float *restrict x, float *restrict y, int64_t rows, int64_t heads, int64_t hd, int64_t pos,
          float theta)
{
    int64_t np = hd / 2;
    for (int64_t r = 0; r < rows * heads; r++) {
        const float *xr = x + r * hd;
        float *yr = y + r * hd;
        for (int64_t i = 0; i < np; i++) {
            double a = (double)pos * pow((double)theta, -2.0 * (double)i / (double)hd);
            float c = (float)cos(a), s = (float)sin(a);
            float x0 = xr[2 * i], x1 = xr[2 * i + 1];
            if (fabs(a) < 0.01) {
                yr[2 * i] = x0 * c;
                yr[2 * i + 1] = x1 * c;
            } else {
                yr[2 * i] = x0 * c - x1 * s;
                yr[2 * i + 1] = x0 * s + x1 * c;
            }
        }
    }
}
