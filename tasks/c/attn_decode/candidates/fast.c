/* Fast attention decode: the same two passes as the reference, scores and weights in double, 8
 * independent double partial sums per dot product, and the weighted sum of values in double:
 * a score's error is multiplied by the softmax (a spiked query makes scores of hundreds, where
 * float dot products missed the tolerance), and a long context's sum collects the rest. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

void attn_decode(const float *restrict q, const float *restrict k, const float *restrict v,
                 float *restrict kcache, float *restrict vcache, float *restrict out, int64_t b, int64_t h,
                 int64_t kvh, int64_t d, int64_t t, int64_t pos)
{
    for (int64_t i = 0; i < b * kvh; i++) {
        for (int64_t e = 0; e < d; e++) {
            kcache[(i * t + pos) * d + e] = k[i * d + e];
            vcache[(i * t + pos) * d + e] = v[i * d + e];
        }
    }
    double *p = malloc((size_t)(pos + 1) * sizeof *p);
    double *acc = malloc((size_t)(d > 0 ? d : 1) * sizeof *acc);
    if (!p || !acc) abort();
    const double scale = 1.0 / sqrt((double)d);
    const int64_t group = h / kvh;
    for (int64_t r = 0; r < b; r++) {
        for (int64_t hh = 0; hh < h; hh++) {
            const float *qh = q + (r * h + hh) * d;
            const int64_t kv = r * kvh + hh / group;
            const float *kc = kcache + kv * t * d, *vc = vcache + kv * t * d;
            double m = -INFINITY;
            for (int64_t j = 0; j <= pos; j++) {
                double part[8] = {0};
                int64_t e = 0;
                for (; e + 8 <= d; e += 8)
                    for (int l = 0; l < 8; l++) part[l] += (double)qh[e + l] * kc[j * d + e + l];
                double dot = ((part[0] + part[1]) + (part[2] + part[3])) + ((part[4] + part[5]) + (part[6] + part[7]));
                for (; e < d; e++) dot += (double)qh[e] * kc[j * d + e];
                p[j] = dot * scale;
                if (p[j] > m) m = p[j];
            }
            double sum = 0;
            for (int64_t j = 0; j <= pos; j++) {
                p[j] = exp(p[j] - m);
                sum += p[j];
            }
            for (int64_t e = 0; e < d; e++) acc[e] = 0;
            for (int64_t j = 0; j <= pos; j++) {
                const double pj = p[j];
                for (int64_t e = 0; e < d; e++) acc[e] += (double)pj * vc[j * d + e];
            }
            const double inv = 1.0 / sum;
            for (int64_t e = 0; e < d; e++) out[(r * h + hh) * d + e] = (float)(acc[e] * inv);
        }
    }
    free(p);
    free(acc);
}
