/* Template softmax: W-lane GCC-vector passes with a polynomial expf; W picks the vector width,
 * UM and UE the independent vectors per step of the max and the exp-sum passes, RECOMP whether
 * the last pass rescales the stored exponentials (0: three passes over y) or recomputes them
 * from x (1: y is written once; x is read three times). */
/* kforge:param W = 8, 4, 16 */
/* kforge:param UM = 1, 2, 4 # unrolling */
/* kforge:param UE = 1, 2, 4 # unrolling */
/* kforge:param RECOMP = 0, 1 # algorithm */
/* kforge:require W == 4 || W == 8 || W == 16 */
/* at most 32 lanes in flight per step: 4 x 16 lanes of exp polynomials spill the registers */
/* kforge:require W * UM <= 32 && W * UE <= 32 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#ifndef W
#define W 8
#endif
#ifndef UM
#define UM 1
#endif
#ifndef UE
#define UE 1
#endif
#ifndef RECOMP
#define RECOMP 0
#endif

typedef float vf __attribute__((vector_size(W * 4)));
typedef int32_t vi __attribute__((vector_size(W * 4)));

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

static inline vf vmax(vf a, vf b)
{
    vi m = a > b;
    return (vf)((m & (vi)a) | (~m & (vi)b));
}

/* exp(x) for x <= 0 (Cephes-style range reduction); x below -87 is clamped. */
static inline vf vexp(vf x)
{
    const vf lo = (vf){0} - 87.0f;
    vi under = x < lo;
    x = (vf)((under & (vi)lo) | (~under & (vi)x));
    const vf magic = (vf){0} + 12582912.0f;
    vf nf = (x * 1.44269504088896341f + magic) - magic;
    vf r = x - nf * 0.693359375f;
    r = r - nf * -2.12194440e-4f;
    vf p = (vf){0} + 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    vi e = (__builtin_convertvector(nf, vi) + 127) << 23;
    return p * (vf)e;
}

void softmax(const float *restrict x, float *restrict y, int64_t rows, int64_t cols)
{
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        int64_t c;

        float mx = xr[0];
        if (cols >= W) {
            vf m[UM];
#pragma GCC unroll 4
            for (int u = 0; u < UM; u++) {
                m[u] = vload(xr);
            }
            for (c = W; c + W * UM <= cols; c += W * UM) {
#pragma GCC unroll 4
                for (int u = 0; u < UM; u++) {
                    m[u] = vmax(m[u], vload(xr + c + W * u));
                }
            }
            for (; c + W <= cols; c += W) {
                m[0] = vmax(m[0], vload(xr + c));
            }
            for (int u = 1; u < UM; u++) {
                m[0] = vmax(m[0], m[u]);
            }
            for (int l = 0; l < W; l++) {
                mx = m[0][l] > mx ? m[0][l] : mx;
            }
        }
        for (c = cols - cols % W; c < cols; c++) {
            mx = xr[c] > mx ? xr[c] : mx;
        }

        const vf vmx = (vf){0} + mx;
        vf s[UE];
#pragma GCC unroll 4
        for (int u = 0; u < UE; u++) {
            s[u] = (vf){0};
        }
        for (c = 0; c + W * UE <= cols; c += W * UE) {
#pragma GCC unroll 4
            for (int u = 0; u < UE; u++) {
                vf e = vexp(vload(xr + c + W * u) - vmx);
#if !RECOMP
                vstore(yr + c + W * u, e);
#endif
                s[u] += e;
            }
        }
        for (; c + W <= cols; c += W) {
            vf e = vexp(vload(xr + c) - vmx);
#if !RECOMP
            vstore(yr + c, e);
#endif
            s[0] += e;
        }
        for (int u = 1; u < UE; u++) {
            s[0] += s[u];
        }
        float sum = 0.0f;
        for (int l = 0; l < W; l++) {
            sum += s[0][l];
        }
        for (; c < cols; c++) {
            float e = expf(xr[c] - mx);
            yr[c] = e;
            sum += e;
        }

        const float inv = 1.0f / sum;
        for (c = 0; c + W <= cols; c += W) {
#if RECOMP
            vstore(yr + c, vexp(vload(xr + c) - vmx) * inv);
#else
            vstore(yr + c, vload(yr + c) * inv);
#endif
        }
        for (; c < cols; c++) {
            yr[c] *= inv;
        }
    }
}
