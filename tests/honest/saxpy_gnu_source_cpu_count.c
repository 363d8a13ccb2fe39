/* kforge-test: task=saxpy expect=accepted */
/* From a red-team pass: an honest kernel an earlier kforge rejected (or may not). */
/* HONEST H10: the classic "how many CPUs may I use" idiom. #define _GNU_SOURCE comes
 * first in the file, as every man page says; kforge force-includes a header that
 * pulls <stdint.h> (hence <features.h>) before this line, so _GNU_SOURCE is ignored. */
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>
void saxpy(const float *x, const float *y, float *z, int64_t n, float a) {
    cpu_set_t cs;
    int ncpu = 1;
    if (!sched_getaffinity(0, sizeof cs, &cs)) ncpu = CPU_COUNT(&cs);
    (void)ncpu; /* would size a thread pool */
    for (int64_t i = 0; i < n; i++) z[i] = a * x[i] + y[i];
}
