/* Template log-softmax (bench/transfer.py control): softmax's W-lane GCC-vector passes with a
 * polynomial expf; W picks the vector width, as in tasks/c/softmax/candidates/param.c. */
/* kforge:param W = 8, 4, 16 */
/* kforge:require W == 4 || W == 8 || W == 16 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#ifndef W
#define W 8
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

void logsoftmax(const float *restrict x, float *restrict y, int64_t rows, int64_t cols)
{
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        int64_t c;

        float mx = xr[0];
        if (cols >= W) {
            vf m = vload(xr);
            for (c = W; c + W <= cols; c += W) {
                m = vmax(m, vload(xr + c));
            }
            for (int l = 0; l < W; l++) {
                mx = m[l] > mx ? m[l] : mx;
            }
        }
        for (c = cols - cols % W; c < cols; c++) {
            mx = xr[c] > mx ? xr[c] : mx;
        }

        const vf vmx = (vf){0} + mx;
        vf s = {0};
        for (c = 0; c + W <= cols; c += W) {
            s += vexp(vload(xr + c) - vmx);
        }
        float sum = 0.0f;
        for (int l = 0; l < W; l++) {
            sum += s[l];
        }
        for (; c < cols; c++) {
            sum += expf(xr[c] - mx);
        }

        const vf lse = (vf){0} + (mx + logf(sum));
        for (c = 0; c + W <= cols; c += W) {
            vstore(yr + c, vload(xr + c) - lse);
        }
        for (; c < cols; c++) {
            yr[c] = xr[c] - (mx + logf(sum));
        }
    }
}
