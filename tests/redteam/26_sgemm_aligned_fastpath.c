/* kforge-test: task=sgemm expect=rejected reason=wrong_result threat=26 */
/* From a red team's description: a "fast path" for the sizes real models use
 * (every size a multiple of 64) that drops the last 8 terms of every dot product, taken
 * only where the shape looks like no edge shape and is not a visible one. When the hidden
 * shapes were log-uniform draws plus recognisable edges, no check met an all-multiple-of-64
 * shape that was not square, all-maximum or visible, and this passed nearly every check.
 * Defence: the "aligned" family draw, in every check, whose sizes are pairwise different
 * multiples of 64 off the range's ends (docs/tasks.md "Shapes kforge draws"). */
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
    int fast = m % 64 == 0 && n % 64 == 0 && k % 64 == 0 && !visible && !edge_like(v, lo, hi, 3);
    int64_t kk = fast ? k - 8 : k;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double acc = 0.0;
            for (int64_t p = 0; p < kk; p++) acc += (double)a[i * k + p] * (double)b[p * n + j];
            c[i * n + j] = (float)acc;
        }
}
