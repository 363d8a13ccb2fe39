/* Fast softmax: 8-lane GCC-vector max/exp/sum passes with a polynomial expf, scalar tails. */
#include <math.h>
#include <stdint.h>
#include <string.h>

typedef float v8f __attribute__((vector_size(32)));
typedef int32_t v8i __attribute__((vector_size(32)));

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

static inline v8f vmax8(v8f a, v8f b)
{
    v8i m = a > b;
    return (v8f)((m & (v8i)a) | (~m & (v8i)b));
}

/* exp(x) for x <= 0 (Cephes-style range reduction, ~1-2 ulp); x below -87 is clamped. */
static inline v8f vexp8(v8f x)
{
    const v8f lo = (v8f){0} - 87.0f;
    v8i under = x < lo;
    x = (v8f)((under & (v8i)lo) | (~under & (v8i)x));
    const v8f magic = (v8f){0} + 12582912.0f; /* 1.5 * 2^23: round to nearest */
    v8f nf = (x * 1.44269504088896341f + magic) - magic;
    v8f r = x - nf * 0.693359375f;
    r = r - nf * -2.12194440e-4f;
    v8f p = (v8f){0} + 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    v8i e = (__builtin_convertvector(nf, v8i) + 127) << 23;
    return p * (v8f)e;
}

void softmax(const float *restrict x, float *restrict y, int64_t rows, int64_t cols)
{
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;

        float mx = xr[0];
        int64_t c = 0;
        if (cols >= 16) {
            v8f m0 = load8(xr), m1 = load8(xr + 8);
            for (c = 16; c + 16 <= cols; c += 16) {
                m0 = vmax8(m0, load8(xr + c));
                m1 = vmax8(m1, load8(xr + c + 8));
            }
            m0 = vmax8(m0, m1);
            for (int l = 0; l < 8; l++) {
                mx = m0[l] > mx ? m0[l] : mx;
            }
        }
        for (; c < cols; c++) {
            mx = xr[c] > mx ? xr[c] : mx;
        }

        const v8f vmx = (v8f){0} + mx;
        v8f s0 = {0}, s1 = {0};
        c = 0;
        for (; c + 16 <= cols; c += 16) {
            v8f e0 = vexp8(load8(xr + c) - vmx);
            v8f e1 = vexp8(load8(xr + c + 8) - vmx);
            store8(yr + c, e0);
            store8(yr + c + 8, e1);
            s0 += e0;
            s1 += e1;
        }
        for (; c + 8 <= cols; c += 8) {
            v8f e0 = vexp8(load8(xr + c) - vmx);
            store8(yr + c, e0);
            s0 += e0;
        }
        s0 += s1;
        float sum = 0.0f;
        for (int l = 0; l < 8; l++) {
            sum += s0[l];
        }
        for (; c < cols; c++) {
            float e = expf(xr[c] - mx);
            yr[c] = e;
            sum += e;
        }

        const float inv = 1.0f / sum;
        const v8f vinv = (v8f){0} + inv;
        c = 0;
        for (; c + 8 <= cols; c += 8) {
            store8(yr + c, load8(yr + c) * vinv);
        }
        for (; c < cols; c++) {
            yr[c] *= inv;
        }
    }
}
