/* kforge-test: task=saxpy expect=accepted */
/* From a red-team pass: an honest kernel an earlier kforge rejected (or may not). */
/* HONEST H4: queries and tries to raise its stack limit for a deep recursion
 * (ignores failure), then computes. */
#include <stdint.h>
#include <sys/resource.h>
void saxpy(const float *x, const float *y, float *z, int64_t n, float a) {
    static int once;
    if (!once) { struct rlimit r; once = 1; if (!getrlimit(RLIMIT_STACK, &r)) { r.rlim_cur = r.rlim_max; setrlimit(RLIMIT_STACK, &r); } }
    for (int64_t i = 0; i < n; i++) z[i] = a * x[i] + y[i];
}
