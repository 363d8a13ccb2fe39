/* kforge-test: task=attn_decode expect=rejected reason=wrong_result threat=12 */
/* Threat 12, skipped work: the float two-pass decode that skips the values of keys whose weight is below a hundredth of the largest (sparse attention as a shortcut: the normaliser still counts them). On centred inputs almost no key is that far below the maximum; spiked and mixed-scale queries spread the scores, and the dropped keys' weight moves the output by far more than the float kernel's rounding. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

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
                p[j] = expf(p[j] - m);
                sum += p[j];
            }
            for (int64_t e = 0; e < d; e++) acc[e] = 0;
            for (int64_t j = 0; j <= pos; j++) {
                if (p[j] < 1e-2f) continue; /* below a hundredth of the largest weight */
                for (int64_t e = 0; e < d; e++) acc[e] += p[j] * vc[j * d + e];
            }
            const float inv = 1.0f / sum;
            for (int64_t e = 0; e < d; e++) out[(r * h + hh) * d + e] = acc[e] * inv;
        }
    free(p);
    free(acc);
}
