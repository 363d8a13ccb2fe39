/* Reference SiLU-multiply (a gated FFN's activation): y = silu(g) * u, silu(g) = g / (1 + exp(-g)),
 * in double, rounded once. */
#include <math.h>
#include <stdint.h>

void silu_mul(const float *g, const float *u, float *y, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        double x = g[i];
        y[i] = (float)(x / (1.0 + exp(-x)) * (double)u[i]);
    }
}
