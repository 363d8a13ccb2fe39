/* kforge-test: task=attn_decode expect=rejected reason=wrong_result threat=11 */
/* Threat 11, fast-math approximation: the float two-pass decode with exp truncated (range reduction to |r| <= ln2/2, then e^r to degree 2 of its Taylor series: up to 7e-3 off, relative, depending on the score's fraction). The weights' errors differ from key to key, so they do not cancel in the normalisation; on centred inputs with few keys or a peaked softmax they move the output by far more than the float kernel's own rounding (tests/honest/attn_decode_two_pass_float.c is its honest twin). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

/* exp(x) for x <= 0 as 2^n * e^r, |r| <= ln2/2, e^r to degree 2 of its Taylor series */
static float exp_trunc(float x)
{
    if (x < -87.0f) return 0.0f;
    float n = nearbyintf(x * 1.44269504f), r = x - n * 0.693147181f;
    return ldexpf(1 + r * (1 + r * 0.5f), (int)n);
}

void attn_decode(const float *restrict q, const float *restrict k, const float *restrict v,
                 float *restrict kcache, float *restrict vcache, float *restrict out, int64_t b, int64_t h,
                 int64_t kvh, int64_t d, int64_t t, int64_t pos)
{
    for (int64_t i = 0; i < b * kvh; i++)
        for (int64_t e = 0; e < d; e++) {
            kcache[(i * t + pos) * d + e] = k[i * d + e];
            vcache[(i * t + pos) * d + e] = v[i * d + e];
        }
    float *p = malloc((size_t)(pos + 1) * sizeof *p);
    float *acc = malloc((size_t)(d > 0 ? d : 1) * sizeof *acc);
    if (!p || !acc) abort();
    const float scale = 1.0f / sqrtf((float)d);
    const int64_t group = h / kvh;
    for (int64_t r = 0; r < b; r++)
        for (int64_t hh = 0; hh < h; hh++) {
            const float *qh = q + (r * h + hh) * d;
            const int64_t kv = r * kvh + hh / group;
            const float *kc = kcache + kv * t * d, *vc = vcache + kv * t * d;
            float m = -INFINITY;
            for (int64_t j = 0; j <= pos; j++) {
                float part[8] = {0};
                int64_t e = 0;
                for (; e + 8 <= d; e += 8)
                    for (int l = 0; l < 8; l++) part[l] += qh[e + l] * kc[j * d + e + l];
                float dot = ((part[0] + part[1]) + (part[2] + part[3])) + ((part[4] + part[5]) + (part[6] + part[7]));
                for (; e < d; e++) dot += qh[e] * kc[j * d + e];
                p[j] = dot * scale;
                if (p[j] > m) m = p[j];
            }
            float sum = 0;
            for (int64_t j = 0; j <= pos; j++) {
                p[j] = exp_trunc(p[j] - m);
                sum += p[j];
            }
            for (int64_t e = 0; e < d; e++) acc[e] = 0;
            for (int64_t j = 0; j <= pos; j++)
                for (int64_t e = 0; e < d; e++) acc[e] += p[j] * vc[j * d + e];
            const float inv = 1.0f / sum;
            for (int64_t e = 0; e < d; e++) out[(r * h + hh) * d + e] = acc[e] * inv;
        }
    free(p);
    free(acc);
}
