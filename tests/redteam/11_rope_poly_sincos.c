/* kforge-test: task=rope expect=rejected reason=wrong_result threat=11 */
/* Threat 11, fast-math approximation: sin and cos from a low-order polynomial (the angle reduced to [-pi/4, pi/4] by its octant, then sin to degree 5 and cos to degree 4 of their Taylor series), the rotation in float. Its sines and cosines are off by up to 3e-4 (cos) and 4e-5 (sin), a few hundred to a few thousand float roundings: the task's magnitude term, a few float roundings of |x0*cos| + |x1*sin|, must not forgive it. */
#include <math.h>
#include <stdint.h>

static void sincos_poly(double a, float *s, float *c)
{
    const double q = 0.78539816339744831; /* pi/4 */
    double k = nearbyint(a / (2 * q));    /* a = k*pi/2 + r, |r| <= pi/4 */
    float r = (float)(a - k * 2 * q), r2 = r * r;
    float sr = r * (1 - r2 / 6 * (1 - r2 / 20));
    float cr = 1 - r2 / 2 * (1 - r2 / 12);
    switch (((long long)k % 4 + 4) % 4) {
    case 0: *s = sr, *c = cr; break;
    case 1: *s = cr, *c = -sr; break;
    case 2: *s = -sr, *c = -cr; break;
    default: *s = -cr, *c = sr; break;
    }
}

void rope(const float *restrict x, float *restrict y, int64_t rows, int64_t heads, int64_t hd, int64_t pos,
          float theta)
{
    int64_t np = hd / 2;
    for (int64_t r = 0; r < rows * heads; r++) {
        const float *xr = x + r * hd;
        float *yr = y + r * hd;
        for (int64_t i = 0; i < np; i++) {
            double a = (double)pos * pow((double)theta, -2.0 * (double)i / (double)hd);
            float c, s;
            sincos_poly(a, &s, &c);
            float x0 = xr[2 * i], x1 = xr[2 * i + 1];
            yr[2 * i] = x0 * c - x1 * s;
            yr[2 * i + 1] = x0 * s + x1 * c;
        }
    }
}
