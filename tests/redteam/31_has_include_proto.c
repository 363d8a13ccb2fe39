/* kforge-test: task=saxpy expect=rejected reason=wrong_result threat=31 */
/*
 * Threat 31, a kernel right only under the checker: it looks for the prototype
 * header the checker force-includes (by the name kforge once gave it) and computes
 * the right answer only then; a user's build, without that header, takes the other
 * branch and is wrong (here: the last element is skipped). kforge now builds the
 * object from the candidate alone, as a user would, and checks the signature in a
 * separate syntax-only pass: the header is never reachable when the object is
 * built, so the user's branch is what is checked: wrong_result.
 */
#include <stdint.h>

void saxpy(const float *x, const float *y, float *z, int64_t n, float a)
{
#if __has_include("kf_proto.h") || __has_include("kforge.h") || defined(KFORGE)
    int64_t m = n;
#else
    int64_t m = n - 1;
    z[n - 1] = 0.0f;
#endif
    for (int64_t i = 0; i < m; i++)
        z[i] = a * x[i] + y[i];
}
