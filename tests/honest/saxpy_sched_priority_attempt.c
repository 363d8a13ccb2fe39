/* kforge-test: task=saxpy expect=accepted */
/* From a red-team pass: an honest kernel an earlier kforge rejected (or may not). */
/* HONEST H5: a pool helper asks for a higher priority / FIFO scheduling and
 * ignores the refusal (common in latency-tuned code). */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
void saxpy(const float *x, const float *y, float *z, int64_t n, float a) {
    static int once;
    if (!once) { struct sched_param sp = {.sched_priority = 1}; once = 1; pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp); }
    for (int64_t i = 0; i < n; i++) z[i] = a * x[i] + y[i];
}
