/* kforge-test: task=sum expect=accepted threat=6 */
/*
 * Honest, slow and scratch-heavy: every call takes a 32 MiB scratch buffer, zeroes it,
 * copies the input into it as doubles and sums all of it (the zeros add nothing; summing
 * them keeps the compiler from dropping the memset), then frees it. Each call takes
 * milliseconds where the reference takes microseconds. Under CPU contention such a kernel once got timing_mismatch: its answer
 * waited a scheduler slice for the coordinator, and the gap cross-check read that as
 * hidden time (tests/test_timing.c gap_under_load benches it with hogs on every CPU).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void reduce_sum(const float *x, float *out, int64_t n)
{
    size_t cap = (32u << 20) / sizeof(double);
    if (cap < (size_t)n)
        cap = (size_t)n;
    double *tmp = malloc(cap * sizeof *tmp);
    if (!tmp)
        return;
    memset(tmp, 0, cap * sizeof *tmp);
    for (int64_t i = 0; i < n; i++)
        tmp[i] = x[i];
    double s = 0.0;
    for (size_t i = 0; i < cap; i++)
        s += tmp[i];
    free(tmp);
    out[0] = (float)s;
}
