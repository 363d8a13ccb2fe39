/* kforge-test: task=saxpy expect=rejected reason=wrong_result threat=10 */
/* From a red-team pass: wrong only for n > 2^19, accepted in 77% of checks when hidden sizes were only log-uniform. Defence: a maximum-sizes edge shape in every check. */
/* wrong only for n > 2^19: e.g. a "chunked" path that drops the last chunk's scale */
#include <stdint.h>
void saxpy(const float *x, const float *y, float *z, int64_t n, float a) {
    for (int64_t i = 0; i < n; i++) z[i] = (i < (1 << 19) ? a : 2.0f) * x[i] + y[i];
}
