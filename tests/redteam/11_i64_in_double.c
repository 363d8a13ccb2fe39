/* kforge-test: task=tests/tasks/i64affine expect=rejected reason=wrong_result threat=11 */
/* From a red-team pass: 64-bit integer outputs were compared through double, so a kernel computing in double (wrong in the low bits above 2^53) passed. Integers now compare exactly. */
/* ATTACK C2 (task tasks/i64affine, exact tolerance): computes the int64 result in
 * double precision (a precision downgrade: ~9 low bits wrong). kf_data_compare reads
 * int64 through double, so the truncated result compares equal. */
#include <stdint.h>
void affine(const int64_t *x, int64_t *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = (int64_t)(3.0 * (double)x[i] + 7.0);
}
