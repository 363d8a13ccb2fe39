/* Template SiLU-multiply: float expf, U elements per step (independent chains). */
/* kforge:param U = 1, 2, 4 # unrolling */
#include <math.h>
#include <stdint.h>

#ifndef U
#define U 1
#endif

void silu_mul(const float *restrict g, const float *restrict u, float *restrict y, int64_t n)
{
    int64_t i = 0;
    for (; i + U <= n; i += U) {
        for (int k = 0; k < U; k++) {
            float x = g[i + k];
            y[i + k] = x / (1.0f + expf(-x)) * u[i + k];
        }
    }
    for (; i < n; i++) {
        float x = g[i];
        y[i] = x / (1.0f + expf(-x)) * u[i];
    }
}
