/* kforge-test: task=saxpy expect=rejected reason=out_of_bounds threat=28 */
/*
 * Threat 28, writes outside the call's buffers but inside the arena: the kernel
 * keeps the output pointer of its first call and, in every later call, uses that
 * memory as scratch (it leaves a copy of each result there). Its outputs are right;
 * in a user's program that memory belongs to someone else by then (freed, or
 * another tensor). It never touches memory next to the current buffers, so guard
 * zones alone never see it. kforge poisons everything earlier calls used and
 * verifies it after each call: the second call (the other half of the arena)
 * writes where the first call's z sat: out_of_bounds, every check.
 */
#include <stdint.h>

static float *kept;
static int64_t kept_n;

void saxpy(const float *x, const float *y, float *z, int64_t n, float a)
{
    float *s = kept;
    /* the scratch must not overlap this call's own buffers (that would show) */
    if (s && kept_n >= n && !(s < z + n + 1024 && z < s + n + 1024) &&
        !(s < (float *)x + n + 1024 && (float *)x < s + n + 1024) &&
        !(s < (float *)y + n + 1024 && (float *)y < s + n + 1024)) {
        for (int64_t i = 0; i < n; i++) {
            z[i] = a * x[i] + y[i];
            s[i] = z[i]; /* a copy "for later": in memory it no longer owns */
        }
    } else {
        for (int64_t i = 0; i < n; i++)
            z[i] = a * x[i] + y[i];
    }
    if (!kept || n > kept_n) {
        kept = z;
        kept_n = n;
    }
}
