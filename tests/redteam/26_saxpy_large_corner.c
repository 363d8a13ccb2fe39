/* kforge-test: task=saxpy expect=rejected reason=wrong_result threat=26 */
/* From a red team's description, for a one-size task: wrong only for n of at
 * least 90% of the maximum (a "chunked" path that drops the last element), right at the
 * maximum itself, which every check used to test as its one maximum edge shape. Defence:
 * the large corner is drawn at random and is never the all-maximum shape. */
#include <stdint.h>

void saxpy(const float *x, const float *y, float *z, int64_t n, float a) {
    int64_t end = n * 10 >= 1048576 * 9 && n != 1048576 ? n - 1 : n;
    for (int64_t i = 0; i < end; i++) z[i] = a * x[i] + y[i];
    if (end < n) z[n - 1] = y[n - 1];
}
