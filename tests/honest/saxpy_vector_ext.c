/* kforge-test: task=saxpy expect=accepted threat=11 */
/*
 * Honest: GCC vector extensions, 16 floats per step (unaligned loads and
 * stores through memcpy), a scalar tail, restrict pointers. Pure fp32, one
 * rounding per operation: must be accepted at every size.
 */
#include <stdint.h>
#include <string.h>

typedef float v16f __attribute__((vector_size(64)));

void saxpy(const float *restrict x, const float *restrict y, float *restrict z,
           int64_t n, float a)
{
    v16f va = { a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a };
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        v16f vx, vy, vz;
        memcpy(&vx, x + i, sizeof vx);
        memcpy(&vy, y + i, sizeof vy);
        vz = va * vx + vy;
        memcpy(z + i, &vz, sizeof vz);
    }
    for (; i < n; i++)
        z[i] = a * x[i] + y[i];
}
