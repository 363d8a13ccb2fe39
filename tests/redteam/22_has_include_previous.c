/* kforge-test: task=saxpy expect=rejected reason=unwritten_output threat=22 */
/*
 * Threat 22, source-level reuse: if an earlier attempt's source (or a cached
 * object's source) is still where an older build left it, #include it and
 * forward to it; otherwise compile an empty kernel. kforge builds each
 * submission alone in a fresh private dir, so __has_include finds nothing,
 * the empty branch is compiled and nothing is written: unwritten_output.
 */
#include <stdint.h>

#if __has_include("/tmp/kforge_prev/candidate.c")
#define saxpy prev_saxpy
#include "/tmp/kforge_prev/candidate.c"
#undef saxpy
void saxpy(const float *x, const float *y, float *z, int64_t n, float a)
{
    prev_saxpy(x, y, z, n, a);
}
#else
void saxpy(const float *x, const float *y, float *z, int64_t n, float a)
{
    (void)x; (void)y; (void)z; (void)n; (void)a;
}
#endif
