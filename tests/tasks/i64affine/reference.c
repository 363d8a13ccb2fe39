#include <stdint.h>
/* y = 3x + 7 (exact 64-bit integer arithmetic) */
void affine(const int64_t *x, int64_t *y, int64_t n) { for (int64_t i = 0; i < n; i++) y[i] = 3 * x[i] + 7; }
