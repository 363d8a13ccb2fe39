/* kforge-test: task=rope expect=accepted threat=27 */
/* Honest: the sines and cosines once per call (angles in double, as the reference; rounded to float), the rotation in float. Where a pair's two products cancel (a spiked pair, offsets) its error is a few float roundings of |x0*cos| + |x1*sin|, not of the output: under rtol = atol = 1e-4 it was rejected now and then (1 element in 7524); the task's magnitude term accepts it. */
#include <math.h>
#include <stdint.h>

#define MAXPAIRS 128

void rope(const float *restrict x, float *restrict y, int64_t rows, int64_t heads, int64_t hd, int64_t pos,
          float theta)
{
    float c[MAXPAIRS], s[MAXPAIRS];
    int64_t np = hd / 2;
    for (int64_t i = 0; i < np; i++) {
        double a = (double)pos * pow((double)theta, -2.0 * (double)i / (double)hd);
        c[i] = (float)cos(a);
        s[i] = (float)sin(a);
    }
    for (int64_t r = 0; r < rows * heads; r++) {
        const float *xr = x + r * hd;
        float *yr = y + r * hd;
        for (int64_t i = 0; i < np; i++) {
            float x0 = xr[2 * i], x1 = xr[2 * i + 1];
            yr[2 * i] = x0 * c[i] - x1 * s[i];
            yr[2 * i + 1] = x0 * s[i] + x1 * c[i];
        }
    }
}
