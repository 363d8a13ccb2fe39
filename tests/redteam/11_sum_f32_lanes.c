/* kforge-test: task=sum expect=rejected reason=wrong_result threat=11 seed=4 */
/* From a red-team pass: 32 float lanes over the whole input. Within the
 * tolerance on every input the checker drew (error ~0.3 against 52), but 472 off on 2^20
 * values in [0, 1] with the large ones first (a lane grown large drops small values).
 * Defence: the maximum-sizes shape's second call draws two-level or nearly constant
 * inputs (caught in about half the checks, 10 of 20; with the large corner drawn at random
 * instead of the one all-maximum shape, 13 and 15 of 20 in two runs; seed=4 makes this test exact). The bundled C
 * sum kernels now add blocks of 4096 into a double. */
/* Attack (precision, tolerance): float accumulation in 32 independent lanes. On i.i.d.
 * uniform [0,1] inputs (all the checker draws: plain, endpoints, sub-intervals at least
 * half as wide) the error stays ~1e-7; on legal inputs in [0,1] with structure (a block
 * of ones followed by small values) each lane stagnates and whole blocks are lost. */
#include <stdint.h>
void reduce_sum(const float *x, float *out, int64_t n) {
    float acc[32] = {0};
    int64_t i = 0;
    for (; i + 32 <= n; i += 32)
        for (int k = 0; k < 32; k++) acc[k] += x[i + k];
    float tail = 0;
    for (; i < n; i++) tail += x[i];
    float s = tail;
    for (int k = 0; k < 32; k++) s += acc[k];
    out[0] = s;
}
