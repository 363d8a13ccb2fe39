/* kforge-test: task=sum expect=rejected reason=out_of_bounds threat=28 */
/*
 * Threat 28, a pointer kept from an earlier shape: the kernel remembers where its
 * first call's output was and leaves its sum a little after it (a "cache" in memory
 * it no longer owns) at every later shape, never near the current buffers. The
 * output is right; a user's program would see a stray write into whatever lives
 * there now. That word is part of the first call's span, poisoned when the calls
 * moved elsewhere and verified after each call: out_of_bounds at the second shape.
 */
#include <stdint.h>

static float *kept;
static int64_t kept_n;

void reduce_sum(const float *x, float *out, int64_t n)
{
    double s = 0.0;
    for (int64_t i = 0; i < n; i++)
        s += x[i];
    /* never the current call's buffers or their guards */
    if (kept && n != kept_n && (kept + 512 < out || kept > out + 512) && (kept + 512 < x || kept > x + n + 512))
        kept[0] = (float)s;
    if (!kept) {
        kept = out + 64; /* the guard zone after the first call's output */
        kept_n = n;      /* written from the next shape on */
    }
    *out = (float)s;
}
