/* Fast linear (y = x W^T + bias): W^T packed into 16-column panels (the transpose of 16 rows
 * of W, k blocked by 256), a 4x16 register-blocked GCC-vector micro-kernel (sgemm's fast.c),
 * bias added when a tile is first stored. */
#include <stdint.h>
#include <string.h>

typedef float v8f __attribute__((vector_size(32)));

#define MR 4
#define NR 16
#define KC 256

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

void linear(const float *restrict x, const float *restrict w, const float *restrict bias, float *restrict y,
            int64_t m, int64_t n, int64_t k)
{
    float bp[KC * NR] __attribute__((aligned(32)));

    if (k <= 0) {
        for (int64_t i = 0; i < m; i++) {
            for (int64_t j = 0; j < n; j++) {
                y[i * n + j] = bias[j];
            }
        }
        return;
    }
    for (int64_t j0 = 0; j0 < n; j0 += NR) {
        const int64_t nr = n - j0 < NR ? n - j0 : NR;
        for (int64_t p0 = 0; p0 < k; p0 += KC) {
            const int64_t kc = k - p0 < KC ? k - p0 : KC;

            /* Pack W[j0:j0+nr, p0:p0+kc] transposed into bp (bp[p][j] = W[j0+j][p0+p]),
             * zero-padding missing columns. */
            for (int64_t j = 0; j < nr; j++) {
                const float *src = w + (j0 + j) * k + p0;
                for (int64_t p = 0; p < kc; p++) {
                    bp[p * NR + j] = src[p];
                }
            }
            for (int64_t j = nr; j < NR; j++) {
                for (int64_t p = 0; p < kc; p++) {
                    bp[p * NR + j] = 0.0f;
                }
            }

            for (int64_t i0 = 0; i0 < m; i0 += MR) {
                const int64_t mr = m - i0 < MR ? m - i0 : MR;
                /* Rows past the end alias the last row; their results are discarded. */
                const float *a0 = x + (i0 + 0 < m ? i0 + 0 : m - 1) * k + p0;
                const float *a1 = x + (i0 + 1 < m ? i0 + 1 : m - 1) * k + p0;
                const float *a2 = x + (i0 + 2 < m ? i0 + 2 : m - 1) * k + p0;
                const float *a3 = x + (i0 + 3 < m ? i0 + 3 : m - 1) * k + p0;

                v8f c00 = {0}, c01 = {0}, c10 = {0}, c11 = {0};
                v8f c20 = {0}, c21 = {0}, c30 = {0}, c31 = {0};
                for (int64_t p = 0; p < kc; p++) {
                    const v8f b0 = load8(bp + p * NR);
                    const v8f b1 = load8(bp + p * NR + 8);
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

                float tile[MR][NR];
                store8(tile[0], c00);
                store8(tile[0] + 8, c01);
                store8(tile[1], c10);
                store8(tile[1] + 8, c11);
                store8(tile[2], c20);
                store8(tile[2] + 8, c21);
                store8(tile[3], c30);
                store8(tile[3] + 8, c31);
                for (int64_t r = 0; r < mr; r++) {
                    float *dst = y + (i0 + r) * n + j0;
                    if (p0 == 0) {
                        for (int64_t j = 0; j < nr; j++) {
                            dst[j] = bias[j0 + j] + tile[r][j];
                        }
                    } else {
                        for (int64_t j = 0; j < nr; j++) {
                            dst[j] += tile[r][j];
                        }
                    }
                }
            }
        }
    }
}
