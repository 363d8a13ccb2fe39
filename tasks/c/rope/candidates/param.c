/* Template RoPE: the sines and cosines once per call, in double (TABLE 1) or per element
 * (TABLE 0: the reference's order of work); the rotation in double either way: in float, a
 * spiked pair's rotation cancels past the tolerance (1 element in 7524 of a check). */
/* kforge:param TABLE = 1, 0 # algorithm */
#include <math.h>
#include <stdint.h>

#ifndef TABLE
#define TABLE 1
#endif

#define MAXPAIRS 128

void rope(const float *restrict x, float *restrict y, int64_t rows, int64_t heads, int64_t hd, int64_t pos,
          float theta)
{
    int64_t np = hd / 2;
#if TABLE
    double c[MAXPAIRS], s[MAXPAIRS];
    for (int64_t i = 0; i < np && i < MAXPAIRS; i++) {
        double a = (double)pos * pow((double)theta, -2.0 * (double)i / (double)hd);
        c[i] = cos(a);
        s[i] = sin(a);
    }
#endif
    for (int64_t r = 0; r < rows * heads; r++) {
        const float *xr = x + r * hd;
        float *yr = y + r * hd;
        for (int64_t i = 0; i < np; i++) {
#if TABLE
            double ci = c[i], si = s[i];
#else
            double a = (double)pos * pow((double)theta, -2.0 * (double)i / (double)hd);
            double ci = cos(a), si = sin(a);
#endif
            double x0 = xr[2 * i], x1 = xr[2 * i + 1];
            yr[2 * i] = (float)(x0 * ci - x1 * si);
            yr[2 * i + 1] = (float)(x0 * si + x1 * ci);
        }
    }
}
