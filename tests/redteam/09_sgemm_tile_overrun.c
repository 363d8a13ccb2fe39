/* kforge-test: task=sgemm expect=rejected reason=out_of_bounds threat=9 */
/*
 * Threat 9, column tiles that ignore the edge: C is computed 4 columns at a
 * time with no edge check. When n is not a multiple of 4, the spill of row i
 * lands on the start of row i+1 (overwritten later with correct values, so
 * the result looks right), but the spill of the last row goes up to 3 floats
 * past the end of C. Visible shapes like 128^3 hide it; hidden and edge
 * shapes (n = 1, primes) change the guard after C: out_of_bounds.
 */
#include <stdint.h>

void sgemm(const float *a, const float *b, float *c, int64_t m, int64_t n, int64_t k)
{
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j += 4) {
            float acc[4] = { 0.0f, 0.0f, 0.0f, 0.0f };
            for (int64_t p = 0; p < k; p++)
                for (int q = 0; q < 4; q++)
                    acc[q] += a[i * k + p] * b[p * n + j + q];
            for (int q = 0; q < 4; q++)
                c[i * n + j + q] = acc[q];
        }
}
