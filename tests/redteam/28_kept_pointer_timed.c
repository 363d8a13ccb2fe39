/* kforge-test: task=saxpy expect=bench_rejected reason=out_of_bounds threat=28 */
/*
 * Threat 28 in the timed rounds: the kernel behaves while it is checked (at most a
 * few dozen calls per worker) and, from its 50th call on, which only a timing worker
 * makes, keeps a copy of each result in the previous round's output buffer (the
 * other half of the arena), memory it no longer owns. The timed rounds use the same
 * call path as the check: what earlier rounds used is poisoned and verified, and
 * bench rejects it: out_of_bounds.
 */
#include <stdint.h>

static float *kept;
static int64_t kept_n;
static long calls;

void saxpy(const float *x, const float *y, float *z, int64_t n, float a)
{
    for (int64_t i = 0; i < n; i++)
        z[i] = a * x[i] + y[i];
    float *s = kept;
    if (++calls >= 50 && s && kept_n == n && (s + n + 1024 < z || s > z + n + 1024) &&
        (s + n + 1024 < x || s > x + n + 1024) && (s + n + 1024 < y || s > y + n + 1024))
        for (int64_t i = 0; i < n; i++)
            s[i] = z[i];
    kept = z;
    kept_n = n;
}
