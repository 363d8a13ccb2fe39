#include <stdint.h>
void mix(const float *x, int32_t i, double p, uint8_t k, const double *w, float q, int64_t j, double r,
         float s, double t, float u, double v, int32_t m, double *z, float *y, float e, uint8_t g, double h) {
    for (int64_t a = 0; a < j; a++) {
        z[a] = w[a] * p + x[a] * q + i + k + r * s + t * u + v + m + e + g * h;
        y[a] = x[a] * s + (float)(k - g) + e;
    }
}
