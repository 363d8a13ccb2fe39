/* Template rmsnorm: W-lane GCC-vector passes, scalar tails; W picks the vector width (as in
 * tasks/c/softmax/candidates/param.c), ACC the independent sum-of-squares accumulators per
 * step of the reduction pass. The default (W=8, ACC=4) is the earlier 8-lane template. */
/* kforge:param W = 8, 4, 16 */
/* kforge:param ACC = 4, 1, 2, 8 # unrolling */
/* kforge:require W == 4 || W == 8 || W == 16 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#ifndef W
#define W 8
#endif
#ifndef ACC
#define ACC 4
#endif

typedef float vf __attribute__((vector_size(W * 4)));

static inline vf vload(const float *p)
{
    vf v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline void vstore(float *p, vf v)
{
    memcpy(p, &v, sizeof v);
}

void rmsnorm(const float *restrict x, const float *restrict w, float *restrict y,
             int64_t rows, int64_t cols, float eps)
{
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;

        vf acc[ACC];
        for (int u = 0; u < ACC; u++) {
            acc[u] = (vf){0};
        }
        int64_t c = 0;
        for (; c + W * ACC <= cols; c += W * ACC) {
#pragma GCC unroll 8
            for (int u = 0; u < ACC; u++) {
                vf xv = vload(xr + c + W * u);
                acc[u] += xv * xv;
            }
        }
        for (; c + W <= cols; c += W) {
            vf xv = vload(xr + c);
            acc[0] += xv * xv;
        }
        for (int u = 1; u < ACC; u++) {
            acc[0] += acc[u];
        }
        float ss = 0.0f;
        for (int l = 0; l < W; l++) {
            ss += acc[0][l];
        }
        for (; c < cols; c++) {
            ss += xr[c] * xr[c];
        }

        const float scale = 1.0f / sqrtf(ss / (float)cols + eps);
        c = 0;
        for (; c + W <= cols; c += W) {
            vstore(yr + c, vload(xr + c) * scale * vload(w + c));
        }
        for (; c < cols; c++) {
            yr[c] = xr[c] * scale * w[c];
        }
    }
}
