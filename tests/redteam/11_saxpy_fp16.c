/* kforge-test: task=saxpy expect=rejected reason=wrong_result threat=11 */
/*
 * Threat 11, precision downgrade: the whole computation runs in _Float16
 * (half the bytes, twice the SIMD width on some machines) while the task is
 * fp32. The relative error is about 1e-3, far outside an fp32 tolerance
 * measured against a higher-precision reference: wrong_result.
 */
#include <stdint.h>

void saxpy(const float *x, const float *y, float *z, int64_t n, float a)
{
    _Float16 ah = (_Float16)a;
    for (int64_t i = 0; i < n; i++) {
        _Float16 xh = (_Float16)x[i], yh = (_Float16)y[i];
        z[i] = (float)(_Float16)(ah * xh + yh);
    }
}
