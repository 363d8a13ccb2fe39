/* Template linear (y = x W^T + bias, W n x k as nn.Linear stores it): each output is the dot
 * product of a row of x and a row of W, both contiguous. Cache-blocked over rows of x (BM)
 * and over k (BK), as sgemm's template; V-lane GCC-vector accumulators along k; UP rows of W
 * (UP outputs) per pass share each load of x (UP times fewer loads of x). The parameters
 * carry sgemm's names and values (tasks/c/sgemm/candidates/param.c) where the concept is
 * the same: BM rows per block, BK depth per block, UP-fold unrolling, V lanes. */
/* kforge:param BM = 32, 16, 64 */
/* kforge:param BK = 64, 32, 128 */
/* kforge:param UP = 1, 2, 4, 8 # unrolling */
/* kforge:param V = 8, 4, 16 # vectorisation */
/* UP accumulators of V lanes, a vector of x and UP vectors of W per step: more than 64 lanes
 * of accumulators spills the 32 vector registers (AVX-512) or the 16 (AVX2). */
/* kforge:require BM >= 1 && BK >= 1 && UP * V <= 64 */
#include <stdint.h>
#include <string.h>

#ifndef BM
#define BM 32
#endif
#ifndef BK
#define BK 64
#endif
#ifndef UP
#define UP 1
#endif
#ifndef V
#define V 8
#endif

typedef float vf __attribute__((vector_size(V * 4)));

static inline vf vload(const float *p)
{
    vf v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline float hsum(vf v)
{
    float s = 0.0f;
#pragma GCC unroll 16
    for (int l = 0; l < V; l++) {
        s += v[l];
    }
    return s;
}

void linear(const float *restrict x, const float *restrict w, const float *restrict bias, float *restrict y,
            int64_t m, int64_t n, int64_t k)
{
    for (int64_t i = 0; i < m; i++) {
        for (int64_t j = 0; j < n; j++) {
            y[i * n + j] = bias[j];
        }
    }
    for (int64_t i0 = 0; i0 < m; i0 += BM) {
        const int64_t i1 = i0 + BM < m ? i0 + BM : m;
        for (int64_t p0 = 0; p0 < k; p0 += BK) {
            const int64_t p1 = p0 + BK < k ? p0 + BK : k;
            for (int64_t i = i0; i < i1; i++) {
                const float *xr = x + i * k;
                float *yr = y + i * n;
                int64_t j = 0;
                for (; j + UP <= n; j += UP) {
                    vf acc[UP];
#pragma GCC unroll 8
                    for (int u = 0; u < UP; u++) {
                        acc[u] = (vf){0};
                    }
                    int64_t p = p0;
                    for (; p + V <= p1; p += V) {
                        const vf xv = vload(xr + p);
#pragma GCC unroll 8
                        for (int u = 0; u < UP; u++) {
                            acc[u] += xv * vload(w + (j + u) * k + p);
                        }
                    }
                    float s[UP];
#pragma GCC unroll 8
                    for (int u = 0; u < UP; u++) {
                        s[u] = hsum(acc[u]);
                    }
                    for (; p < p1; p++) {
#pragma GCC unroll 8
                        for (int u = 0; u < UP; u++) {
                            s[u] += xr[p] * w[(j + u) * k + p];
                        }
                    }
#pragma GCC unroll 8
                    for (int u = 0; u < UP; u++) {
                        yr[j + u] += s[u];
                    }
                }
                for (; j < n; j++) {
                    const float *wr = w + j * k;
                    vf acc = (vf){0};
                    int64_t p = p0;
                    for (; p + V <= p1; p += V) {
                        acc += vload(xr + p) * vload(wr + p);
                    }
                    float s = hsum(acc);
                    for (; p < p1; p++) {
                        s += xr[p] * wr[p];
                    }
                    yr[j] += s;
                }
            }
        }
    }
}
