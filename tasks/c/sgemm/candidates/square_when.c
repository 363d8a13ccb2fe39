/* Specialised sgemm for square m == n == k with m % 16 == 0: 4x16 GCC-vector micro-kernel, no tails or packing. */
/* kforge:when m == n && n == k && m % 16 == 0 */
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

void sgemm(const float *restrict a, const float *restrict b, float *restrict c,
           int64_t m, int64_t n, int64_t k)
{
    (void)m;
    (void)k;
    /* Domain: m == n == k == s with s % 16 == 0, so 4-row and 16-column tiles cover C exactly. */
    const int64_t s = n;
    for (int64_t i0 = 0; i0 < s; i0 += 4) {
        const float *a0 = a + (i0 + 0) * s;
        const float *a1 = a + (i0 + 1) * s;
        const float *a2 = a + (i0 + 2) * s;
        const float *a3 = a + (i0 + 3) * s;
        for (int64_t j0 = 0; j0 < s; j0 += 16) {
            v8f c00 = {0}, c01 = {0}, c10 = {0}, c11 = {0};
            v8f c20 = {0}, c21 = {0}, c30 = {0}, c31 = {0};
            const float *bcol = b + j0;
            for (int64_t p = 0; p < s; p++) {
                const v8f b0 = load8(bcol + p * s);
                const v8f b1 = load8(bcol + p * s + 8);
                v8f av = (v8f){0} + a0[p];
                c00 += av * b0;
                c01 += av * b1;
                av = (v8f){0} + a1[p];
                c10 += av * b0;
                c11 += av * b1;
                av = (v8f){0} + a2[p];
                c20 += av * b0;
                c21 += av * b1;
                av = (v8f){0} + a3[p];
                c30 += av * b0;
                c31 += av * b1;
            }
            store8(c + (i0 + 0) * s + j0, c00);
            store8(c + (i0 + 0) * s + j0 + 8, c01);
            store8(c + (i0 + 1) * s + j0, c10);
            store8(c + (i0 + 1) * s + j0 + 8, c11);
            store8(c + (i0 + 2) * s + j0, c20);
            store8(c + (i0 + 2) * s + j0 + 8, c21);
            store8(c + (i0 + 3) * s + j0, c30);
            store8(c + (i0 + 3) * s + j0 + 8, c31);
        }
    }
}
