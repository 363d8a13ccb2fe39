/* kforge-test: task=saxpy expect=accepted */
/* From a red-team pass: an honest kernel an earlier kforge rejected (or may not). */
/* HONEST H7: pins its helper thread through pthread_attr_setaffinity_np; if the
 * pinned create fails it retries without pinning. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
typedef struct { const float *x, *y; float *z; int64_t lo, hi; float a; } job;
static void *run(void *p) { job *j = p; for (int64_t i = j->lo; i < j->hi; i++) j->z[i] = j->a * j->x[i] + j->y[i]; return 0; }
void saxpy(const float *x, const float *y, float *z, int64_t n, float a) {
    job j1 = {x, y, z, 0, n / 2, a}, j2 = {x, y, z, n / 2, n, a};
    pthread_attr_t at; pthread_attr_init(&at);
    cpu_set_t cs; CPU_ZERO(&cs); CPU_SET(1, &cs);
    pthread_attr_setaffinity_np(&at, sizeof cs, &cs);
    pthread_t t;
    int rc = pthread_create(&t, &at, run, &j2);
    if (rc) rc = pthread_create(&t, NULL, run, &j2);
    pthread_attr_destroy(&at);
    run(&j1);
    if (!rc) pthread_join(t, 0); else run(&j2);
}
