/* kforge-test: task=rmsnorm expect=rejected reason=crash threat=16 */
/*
 * Threat 16, abort(): SIGABRT raised on the worker itself (tgkill to self is
 * allowed), e.g. a failed assert inside a "fallback path" that the harness
 * might treat as "skipped" rather than failed. Verdict: crash.
 */
#include <stdint.h>
#include <stdlib.h>

void rmsnorm(const float *x, const float *w, float *y, int64_t rows, int64_t cols, float eps)
{
    (void)x; (void)w; (void)y; (void)rows; (void)cols; (void)eps;
    abort();
}
