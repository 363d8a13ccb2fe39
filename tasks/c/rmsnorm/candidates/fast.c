/* Fast rmsnorm: 4 x 8-lane GCC-vector sum-of-squares accumulators, vectorised scale pass, scalar tails. */
#include <math.h>
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

void rmsnorm(const float *restrict x, const float *restrict w, float *restrict y,
             int64_t rows, int64_t cols, float eps)
{
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;

        v8f a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};
        int64_t c = 0;
        for (; c + 32 <= cols; c += 32) {
            v8f x0 = load8(xr + c), x1 = load8(xr + c + 8);
            v8f x2 = load8(xr + c + 16), x3 = load8(xr + c + 24);
            a0 += x0 * x0;
            a1 += x1 * x1;
            a2 += x2 * x2;
            a3 += x3 * x3;
        }
        for (; c + 8 <= cols; c += 8) {
            v8f x0 = load8(xr + c);
            a0 += x0 * x0;
        }
        a0 = (a0 + a1) + (a2 + a3);
        float ss = 0.0f;
        for (int l = 0; l < 8; l++) {
            ss += a0[l];
        }
        for (; c < cols; c++) {
            ss += xr[c] * xr[c];
        }

        const float scale = 1.0f / sqrtf(ss / (float)cols + eps);
        const v8f vs = (v8f){0} + scale;
        c = 0;
        for (; c + 8 <= cols; c += 8) {
            store8(yr + c, load8(xr + c) * vs * load8(w + c));
        }
        for (; c < cols; c++) {
            yr[c] = xr[c] * scale * w[c];
        }
    }
}
