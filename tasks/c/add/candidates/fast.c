/* Fast add: restrict pointers and 8-lane GCC vectors, a scalar tail; one rounding per element
 * as the reference, so the result is bit-exact. */
#include <stdint.h>
#include <string.h>

typedef float v8f __attribute__((vector_size(32)));

void add(const float *restrict a, const float *restrict b, float *restrict y, int64_t n)
{
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        v8f x, z;
        memcpy(&x, a + i, sizeof x);
        memcpy(&z, b + i, sizeof z);
        x += z;
        memcpy(y + i, &x, sizeof x);
    }
    for (; i < n; i++) {
        y[i] = a[i] + b[i];
    }
}
