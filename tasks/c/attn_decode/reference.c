/* Reference attention decode over a KV cache (grouped-query): the new key and value of each
 * batch row and KV head go into the caches (b x kvh x t x d) at position pos; then each query
 * head (h of them, h / kvh per KV head) attends over cache positions 0..pos with scores
 * q.k / sqrt(d) and a softmax, in double: out = sum_j p_j v_j. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

void attn_decode(const float *q, const float *k, const float *v, float *kcache, float *vcache, float *out,
                 int64_t b, int64_t h, int64_t kvh, int64_t d, int64_t t, int64_t pos)
{
    for (int64_t i = 0; i < b * kvh; i++) {
        for (int64_t e = 0; e < d; e++) {
            kcache[(i * t + pos) * d + e] = k[i * d + e];
            vcache[(i * t + pos) * d + e] = v[i * d + e];
        }
    }
    double *s = malloc((size_t)(pos + 1) * sizeof *s);
    double *acc = malloc((size_t)(d > 0 ? d : 1) * sizeof *acc);
    if (!s || !acc) abort();
    double scale = 1.0 / sqrt((double)d);
    int64_t group = h / kvh;
    for (int64_t r = 0; r < b; r++) {
        for (int64_t hh = 0; hh < h; hh++) {
            const float *qh = q + (r * h + hh) * d;
            int64_t kv = r * kvh + hh / group;
            const float *kc = kcache + kv * t * d, *vc = vcache + kv * t * d;
            double m = -INFINITY;
            for (int64_t j = 0; j <= pos; j++) {
                double dot = 0;
                for (int64_t e = 0; e < d; e++) dot += (double)qh[e] * kc[j * d + e];
                s[j] = dot * scale;
                if (s[j] > m) m = s[j];
            }
            double sum = 0;
            for (int64_t j = 0; j <= pos; j++) {
                s[j] = exp(s[j] - m);
                sum += s[j];
            }
            for (int64_t e = 0; e < d; e++) acc[e] = 0;
            for (int64_t j = 0; j <= pos; j++)
                for (int64_t e = 0; e < d; e++) acc[e] += s[j] * vc[j * d + e];
            for (int64_t e = 0; e < d; e++) out[(r * h + hh) * d + e] = (float)(acc[e] / sum);
        }
    }
    free(s);
    free(acc);
}

/* The task's magnitude function (task.json "tolerance": "magnitude"): for each output
 * element o = sum_j p_j v_j over n = pos + 1 keys, in double,
 *     M = n sum_j p_j |v_j| + sum_j p_j (1 + d A_j) |v_j - o|,   A_j = |q|.|k_j| / sqrt(d),
 * the worst-case error of a float kernel over the float rounding u (a sum of n terms in
 * float is off by up to (n - 1) u times the sum of their magnitudes, whatever its order:
 * a 1024-key float sum after a dominant weight of 1 drops every term under half an ulp
 * of 1). The weighted sum and the normaliser give the first term; a score, a dot product
 * of d terms, is off by up to d u A_j, which moves its weight by that relative amount
 * and o by p_j |v_j - o| times it (the softmax's derivative: an error shared by every
 * score cancels; 1 is exp's own rounding). Where o cancels, |o| is none of these. The
 * caches are written as the entry writes them (the scores at pos read the new key). */
void attn_decode_magnitude(const float *q, const float *k, const float *v, float *kcache, float *vcache,
                           float *out, int64_t b, int64_t h, int64_t kvh, int64_t d, int64_t t, int64_t pos)
{
    for (int64_t i = 0; i < b * kvh; i++) {
        for (int64_t e = 0; e < d; e++) {
            kcache[(i * t + pos) * d + e] = k[i * d + e];
            vcache[(i * t + pos) * d + e] = v[i * d + e];
        }
    }
    double *s = malloc((size_t)(pos + 1) * sizeof *s), *mag = malloc((size_t)(pos + 1) * sizeof *mag);
    double *acc = malloc((size_t)(d > 0 ? d : 1) * sizeof *acc);
    if (!s || !mag || !acc) abort();
    double scale = 1.0 / sqrt((double)d), n = (double)(pos + 1);
    int64_t group = h / kvh;
    for (int64_t r = 0; r < b; r++) {
        for (int64_t hh = 0; hh < h; hh++) {
            const float *qh = q + (r * h + hh) * d;
            int64_t kv = r * kvh + hh / group;
            const float *kc = kcache + kv * t * d, *vc = vcache + kv * t * d;
            double m = -INFINITY;
            for (int64_t j = 0; j <= pos; j++) {
                double dot = 0, ab = 0;
                for (int64_t e = 0; e < d; e++) {
                    dot += (double)qh[e] * kc[j * d + e];
                    ab += fabs((double)qh[e] * kc[j * d + e]);
                }
                s[j] = dot * scale;
                mag[j] = 1 + (double)d * ab * scale;
                if (s[j] > m) m = s[j];
            }
            double sum = 0;
            for (int64_t j = 0; j <= pos; j++) {
                s[j] = exp(s[j] - m);
                sum += s[j];
            }
            for (int64_t e = 0; e < d; e++) acc[e] = 0;
            for (int64_t j = 0; j <= pos; j++)
                for (int64_t e = 0; e < d; e++) acc[e] += s[j] * vc[j * d + e];
            for (int64_t e = 0; e < d; e++) {
                double o = acc[e] / sum, mg = 0;
                for (int64_t j = 0; j <= pos; j++) {
                    double vj = vc[j * d + e];
                    mg += s[j] * (n * fabs(vj) + mag[j] * fabs(vj - o));
                }
                out[(r * h + hh) * d + e] = (float)(mg / sum);
            }
        }
    }
    free(s);
    free(mag);
    free(acc);
}
