/* kforge-test: task=rope expect=rejected reason=wrong_result threat=11 */
/* Threat 11, lower precision: the rotation in bfloat16-rounded arithmetic (inputs, sines, cosines and products rounded to 8 bits of mantissa, the sums in float), as a bf16 kernel would be. Its error is about 2^-9 of |x0*cos| + |x1*sin|, 1000 times the float rotation's: the task's magnitude term must not forgive it (tests/honest/rope_float.c is its honest twin). */
#include <math.h>
#include <stdint.h>
#include <string.h>

static float bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    u = (u + 0x7fff + ((u >> 16) & 1)) & 0xffff0000u; /* round to nearest even */
    memcpy(&f, &u, 4);
    return f;
}

void rope(const float *restrict x, float *restrict y, int64_t rows, int64_t heads, int64_t hd, int64_t pos,
          float theta)
{
    int64_t np = hd / 2;
    for (int64_t r = 0; r < rows * heads; r++) {
        const float *xr = x + r * hd;
        float *yr = y + r * hd;
        for (int64_t i = 0; i < np; i++) {
            double a = (double)pos * pow((double)theta, -2.0 * (double)i / (double)hd);
            float c = bf16((float)cos(a)), s = bf16((float)sin(a));
            float x0 = bf16(xr[2 * i]), x1 = bf16(xr[2 * i + 1]);
            yr[2 * i] = bf16(x0 * c) - bf16(x1 * s);
            yr[2 * i + 1] = bf16(x0 * s) + bf16(x1 * c);
        }
    }
}
