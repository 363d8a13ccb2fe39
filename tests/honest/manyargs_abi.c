/* kforge-test: task=tests/tasks/manyargs expect=accepted */
/*
 * The worker calls the entry itself, by the C calling convention (no shim compiled
 * into the object): nine integer-class arguments (three on the stack on x86-64), nine
 * float ones (one on the stack), every scalar type. The reference goes through the same
 * call, so this kernel also checks each scalar against the task's value and writes
 * NaN when one arrived wrong: accepted only when every argument lands where C puts it.
 */
#include <math.h>
#include <stdint.h>

void mix(const float *x, int32_t i, double p, uint8_t k, const double *w, float q, int64_t j, double r,
         float s, double t, float u, double v, int32_t m, double *z, float *y, float e, uint8_t g, double h)
{
    int ok = i == -3 && p == 0.5 && k == 200 && q == 1.25f && j >= 1 && j <= 4096 && r == -2 && s == 3 &&
             t == 0.125 && u == -0.5f && v == 4 && m == 7 && e == 0.75f && g == 3 && h == 1.5;
    for (int64_t a = 0; a < j; a++) {
        z[a] = ok ? w[a] * p + x[a] * q + i + k + r * s + t * u + v + m + e + g * h : NAN;
        y[a] = ok ? x[a] * s + (float)(k - g) + e : NAN;
    }
}
