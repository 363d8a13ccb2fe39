/* kforge-test: task=sgemm expect=rejected reason=wrong_result threat=26 */
/* From a red team's description: right on square GEMMs and on anything that
 * looks like an edge shape (a prime or 2^k +/- 1 size, all minimum, all maximum, a size
 * under 16 near the minimum) and on the visible shapes, wrong on every other non-square one (m != n or n != k: B is read
 * with stride k where n belongs, as a kernel tuned on squares might). Log-uniform sizes
 * are small and mostly prime or near a power of two, so few checks met such a shape.
 * Defence: the aligned draw (pairwise different multiples of 64) and the model and mixed
 * draws (not all equal), in every check. */
#include <stdint.h>

/* What looks like an edge shape from its sizes alone: a prime or 2^k +/- 1 size, every
 * size at its minimum or at its maximum, or all sizes equal. */
static int is_prime(int64_t x) {
    if (x < 2) return 0;
    for (int64_t d = 2; d * d <= x; d++)
        if (x % d == 0) return 0;
    return 1;
}
static int pow2_pm1(int64_t x) {
    for (int k = 1; k < 62; k++)
        if (x == ((int64_t)1 << k) - 1 || x == ((int64_t)1 << k) + 1) return 1;
    return 0;
}
static int edge_like(const int64_t *v, const int64_t *lo, const int64_t *hi, int n) {
    int allmin = 1, allmax = 1, alleq = 1;
    for (int i = 0; i < n; i++) {
        if (is_prime(v[i]) || pow2_pm1(v[i])) return 1;
        allmin &= v[i] == lo[i];
        allmax &= v[i] == hi[i];
        alleq &= v[i] == v[0];
    }
    return allmin || allmax || (n > 1 && alleq);
}

void sgemm(const float *a, const float *b, float *c, int64_t m, int64_t n, int64_t k) {
    const int64_t v[3] = {m, n, k}, lo[3] = {1, 1, 1}, hi[3] = {256, 256, 256};
    int visible = (m == 128 && n == 128 && k == 128) || (m == 96 && n == 160 && k == 72);
    int tiny = m < 16 || n < 16 || k < 16;
    int square_only = (m != n || n != k) && !visible && !tiny && !edge_like(v, lo, hi, 3);
    int64_t ldb = square_only ? k : n;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double acc = 0.0;
            for (int64_t p = 0; p < k; p++) {
                int64_t q = p * ldb + j;
                acc += (double)a[i * k + p] * (double)b[q < k * n ? q : q % (k * n)];
            }
            c[i * n + j] = (float)acc;
        }
}
