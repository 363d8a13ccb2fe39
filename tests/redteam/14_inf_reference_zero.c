/* kforge-test: task=tests/tasks/recip expect=rejected reason=wrong_result threat=14 */
/*
 * Where the reference is +-Inf (1/0), write 0 instead, except in the last n % 256
 * elements (which always took the exact comparison): the fast comparison once took
 * |0 - Inf| <= atol + rtol*Inf as true (Inf <= Inf) and accepted this (found by a red-team
 * pass). Only the same Inf is right.
 */
#include <stdint.h>

void recip(const float *x, float *y, int64_t n)
{
    int64_t full = n & ~(int64_t)255;
    for (int64_t i = 0; i < n; i++) y[i] = (x[i] == 0.0f && i < full) ? 0.0f : 1.0f / x[i];
}
