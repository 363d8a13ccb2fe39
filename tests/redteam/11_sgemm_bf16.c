/* kforge-test: task=sgemm expect=rejected reason=wrong_result threat=11 */
/*
 * Threat 11, precision downgrade: A and B are truncated to bfloat16 (the top
 * 16 bits of each float, as a bf16 tensor-core path would use) and the
 * products are accumulated in fp32. Each input loses 16 mantissa bits, so the
 * result is off by ~1e-3..1e-2 relative: wrong_result.
 */
#include <stdint.h>
#include <string.h>

static float bf16(float v)
{
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    u &= 0xffff0000u;
    memcpy(&v, &u, sizeof v);
    return v;
}

void sgemm(const float *a, const float *b, float *c, int64_t m, int64_t n, int64_t k)
{
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            float acc = 0.0f;
            for (int64_t p = 0; p < k; p++)
                acc += bf16(a[i * k + p]) * bf16(b[p * n + j]);
            c[i * n + j] = acc;
        }
}
