/* kforge-test: task=rmsnorm expect=rejected reason=domain_error threat=26 */
/* From a red team's pass: a `when` directive whose expression overflows only on large
 * sizes. Failing to evaluate was read as "outside the domain" where the maximum edge shape
 * was searched for, so the maximum silently shrank to the largest shape where it does not
 * overflow, and the kernel, wrong exactly where it overflows (rows^2 * cols^4 >= 2^63, in
 * the large corner), passed most checks. Defence: a `when` that cannot be evaluated at a
 * shape inside the task's ranges and constraints rejects the candidate (domain_error),
 * and it is evaluated at every corner of the size box as well as at every drawn shape. */
/* kforge:when rows * rows * cols * cols * cols * cols > 0 */
#include <math.h>
#include <stdint.h>

void rmsnorm(const float *x, const float *w, float *y, int64_t rows, int64_t cols, float eps) {
    int64_t p;
    int big = __builtin_mul_overflow(rows * rows, cols * cols * cols * cols, &p);
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        double ss = 0.0;
        for (int64_t c = 0; c < cols; c++) ss += (double)xr[c] * xr[c];
        float scale = (float)(1.0 / sqrt(ss / (double)cols + (double)eps));
        for (int64_t c = 0; c < cols; c++) y[r * cols + c] = xr[c] * (big ? 1.0f : scale) * w[c];
    }
}
