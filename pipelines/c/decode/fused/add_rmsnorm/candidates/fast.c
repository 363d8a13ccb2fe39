/* Fast add_rmsnorm: one pass per row adds, stores s and accumulates the sum of squares
 * in 8-lane GCC vectors; a second pass scales from s while it is in cache. */
#include <math.h>
#include <stdint.h>
#include <string.h>

typedef float v8f __attribute__((vector_size(32)));

static inline v8f load8(const float *p) {
    v8f v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline void store8(float *p, v8f v) { memcpy(p, &v, sizeof v); }

void add_rmsnorm(const float *restrict a, const float *restrict b, const float *restrict w, float *restrict s,
                 float *restrict y, int64_t rows, int64_t cols, float eps) {
    for (int64_t r = 0; r < rows; r++) {
        const float *ar = a + r * cols, *br = b + r * cols;
        float *sr = s + r * cols, *yr = y + r * cols;
        v8f acc = {0};
        int64_t c = 0;
        for (; c + 8 <= cols; c += 8) {
            v8f x = load8(ar + c) + load8(br + c);
            store8(sr + c, x);
            acc += x * x;
        }
        float ss = 0.0f;
        for (int l = 0; l < 8; l++) {
            ss += acc[l];
        }
        for (; c < cols; c++) {
            sr[c] = ar[c] + br[c];
            ss += sr[c] * sr[c];
        }
        const float scale = 1.0f / sqrtf(ss / (float)cols + eps);
        const v8f vs = (v8f){0} + scale;
        c = 0;
        for (; c + 8 <= cols; c += 8) {
            store8(yr + c, load8(sr + c) * vs * load8(w + c));
        }
        for (; c < cols; c++) {
            yr[c] = sr[c] * scale * w[c];
        }
    }
}
