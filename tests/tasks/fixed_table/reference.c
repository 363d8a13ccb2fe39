#include <stdint.h>
void fixed_table(const float *x, const float *w, float *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = x[i] * w[i % 16];
}
