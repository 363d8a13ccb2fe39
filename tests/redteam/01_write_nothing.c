/* kforge-test: task=saxpy expect=rejected reason=unwritten_output threat=1 */
/*
 * Threat 1, stale output: the kernel returns at once and writes nothing.
 * In a naive harness the output buffer may still hold the reference's
 * result (or the previous call's), so "nothing" looks correct and very fast.
 * kforge poisons every output with a finite out-of-range sentinel before
 * every call, so every element still equals the sentinel: unwritten_output.
 */
#include <stdint.h>

void saxpy(const float *x, const float *y, float *z, int64_t n, float a)
{
    (void)x; (void)y; (void)z; (void)n; (void)a;
}
