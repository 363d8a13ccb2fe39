/* Fast RoPE: the hd/2 angles' sines and cosines once per call (in double, as the reference:
 * a float angle at pos 8191 is off by radians' hundredths), then one pass over the rows and
 * heads, the rotation in double: in float, a spiked pair's
 * rotation cancels past the tolerance (1 element in 7524 of a check). */
#include <math.h>
#include <stdint.h>

#define MAXPAIRS 128

void rope(const float *restrict x, float *restrict y, int64_t rows, int64_t heads, int64_t hd, int64_t pos,
          float theta)
{
    double c[MAXPAIRS], s[MAXPAIRS];
    int64_t np = hd / 2;
    for (int64_t i = 0; i < np && i < MAXPAIRS; i++) {
        double a = (double)pos * pow((double)theta, -2.0 * (double)i / (double)hd);
        c[i] = cos(a);
        s[i] = sin(a);
    }
    for (int64_t r = 0; r < rows * heads; r++) {
        const float *xr = x + r * hd;
        float *yr = y + r * hd;
        for (int64_t i = 0; i < np; i++) {
            double x0 = xr[2 * i], x1 = xr[2 * i + 1];
            yr[2 * i] = (float)(x0 * c[i] - x1 * s[i]);
            yr[2 * i + 1] = (float)(x0 * s[i] + x1 * c[i]);
        }
    }
}
