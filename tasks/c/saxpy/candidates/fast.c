/* Fast saxpy: restrict pointers, 4x unrolled 8-lane GCC vectors, scalar tail. */
#include <stdint.h>
#include <string.h>

typedef float v8f __attribute__((vector_size(32)));

static inline v8f load8(const float *p)
{
    v8f v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline void store8(float *p, v8f v)
{
    memcpy(p, &v, sizeof v);
}

void saxpy(const float *restrict x, const float *restrict y, float *restrict z,
           int64_t n, float a)
{
    const v8f va = (v8f){0} + a;
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        v8f z0 = va * load8(x + i) + load8(y + i);
        v8f z1 = va * load8(x + i + 8) + load8(y + i + 8);
        v8f z2 = va * load8(x + i + 16) + load8(y + i + 16);
        v8f z3 = va * load8(x + i + 24) + load8(y + i + 24);
        store8(z + i, z0);
        store8(z + i + 8, z1);
        store8(z + i + 16, z2);
        store8(z + i + 24, z3);
    }
    for (; i + 8 <= n; i += 8) {
        store8(z + i, va * load8(x + i) + load8(y + i));
    }
    for (; i < n; i++) {
        z[i] = a * x[i] + y[i];
    }
}
