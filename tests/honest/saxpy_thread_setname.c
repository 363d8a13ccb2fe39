/* kforge-test: task=saxpy expect=accepted */
/* From a red-team pass: an honest kernel an earlier kforge rejected (or may not). */
/* HONEST H1: a joined 2-thread split whose helper thread is named for profilers
 * (pthread_setname_np from the creating thread, a very common idiom). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
typedef struct { const float *x, *y; float *z; int64_t lo, hi; float a; } job;
static void *run(void *p) { job *j = p; for (int64_t i = j->lo; i < j->hi; i++) j->z[i] = j->a * j->x[i] + j->y[i]; return 0; }
void saxpy(const float *x, const float *y, float *z, int64_t n, float a) {
    job j1 = {x, y, z, 0, n / 2, a}, j2 = {x, y, z, n / 2, n, a};
    pthread_t t;
    if (pthread_create(&t, 0, run, &j2)) { run(&j2); run(&j1); return; }
    pthread_setname_np(t, "saxpy-worker");   /* return value ignored: cosmetic */
    run(&j1);
    pthread_join(t, 0);
}
