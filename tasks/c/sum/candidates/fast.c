/* Fast sum: 4 x 8-lane GCC-vector float accumulators (32 partial sums), tree-combined, scalar tail. */
#include <stdint.h>
#include <string.h>

typedef float v8f __attribute__((vector_size(32)));

static inline v8f load8(const float *p)
{
    v8f v;
    memcpy(&v, p, sizeof v);
    return v;
}

void reduce_sum(const float *restrict x, float *restrict out, int64_t n)
{
    v8f a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        a0 += load8(x + i);
        a1 += load8(x + i + 8);
        a2 += load8(x + i + 16);
        a3 += load8(x + i + 24);
    }
    for (; i + 8 <= n; i += 8) {
        a0 += load8(x + i);
    }
    a0 = (a0 + a1) + (a2 + a3);
    float s = ((a0[0] + a0[1]) + (a0[2] + a0[3])) + ((a0[4] + a0[5]) + (a0[6] + a0[7]));
    float t = 0.0f;
    for (; i < n; i++) {
        t += x[i];
    }
    out[0] = s + t;
}
