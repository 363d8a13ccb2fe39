/* Reference saxpy: z[i] = a * x[i] + y[i]. */
#include <stdint.h>

void saxpy(const float *x, const float *y, float *z, int64_t n, float a)
{
    for (int64_t i = 0; i < n; i++) {
        z[i] = a * x[i] + y[i];
    }
}
