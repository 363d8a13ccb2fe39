/* Template add: W-lane GCC vectors, U of them per step, a scalar tail. */
/* kforge:param W = 8, 4, 16 */
/* kforge:param U = 1, 2 # unrolling */
#include <stdint.h>
#include <string.h>

#ifndef W
#define W 8
#endif
#ifndef U
#define U 1
#endif

typedef float vf __attribute__((vector_size(W * 4)));

void add(const float *restrict a, const float *restrict b, float *restrict y, int64_t n)
{
    int64_t i = 0;
    for (; i + W * U <= n; i += W * U) {
        for (int u = 0; u < U; u++) {
            vf x, z;
            memcpy(&x, a + i + u * W, sizeof x);
            memcpy(&z, b + i + u * W, sizeof z);
            x += z;
            memcpy(y + i + u * W, &x, sizeof x);
        }
    }
    for (; i < n; i++) {
        y[i] = a[i] + b[i];
    }
}
