/* Template rmsnorm: ACC independent 8-lane GCC-vector sum-of-squares accumulators, scalar tails. */
/* kforge:param ACC = 4, 1, 2, 8 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#ifndef ACC
#define ACC 4
#endif

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

void rmsnorm(const float *restrict x, const float *restrict w, float *restrict y,
             int64_t rows, int64_t cols, float eps)
{
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;

        v8f acc[ACC];
        for (int u = 0; u < ACC; u++) {
            acc[u] = (v8f){0};
        }
        int64_t c = 0;
        for (; c + 8 * ACC <= cols; c += 8 * ACC) {
#pragma GCC unroll 8
            for (int u = 0; u < ACC; u++) {
                v8f xv = load8(xr + c + 8 * u);
                acc[u] += xv * xv;
            }
        }
        for (; c + 8 <= cols; c += 8) {
            v8f xv = load8(xr + c);
            acc[0] += xv * xv;
        }
        for (int u = 1; u < ACC; u++) {
            acc[0] += acc[u];
        }
        float ss = 0.0f;
        for (int l = 0; l < 8; l++) {
            ss += acc[0][l];
        }
        for (; c < cols; c++) {
            ss += xr[c] * xr[c];
        }

        const float scale = 1.0f / sqrtf(ss / (float)cols + eps);
        c = 0;
        for (; c + 8 <= cols; c += 8) {
            store8(yr + c, load8(xr + c) * scale * load8(w + c));
        }
        for (; c < cols; c++) {
            yr[c] = xr[c] * scale * w[c];
        }
    }
}
