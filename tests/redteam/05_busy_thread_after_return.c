/* kforge-test: task=sgemm expect=rejected reason=sandbox_violation threat=5 */
/*
 * Threat 5, work after return, the busy kind: the call starts a detached thread
 * that computes C and returns at once. The thread is running when the worker
 * answers; kforge freezes the whole process (SIGSTOP) the moment it answers, judges C
 * as it is then, and refuses any thread that outlives the call: sandbox_violation.
 * (Found by a red-team pass: an earlier design gave such a thread a 2 ms grace to exit,
 * during which it finished C unmeasured.)
 */
#include <pthread.h>
#include <stdint.h>

typedef struct { const float *a, *b; float *c; int64_t m, n, k; } job;
static job J;

static void *work(void *arg) {
    (void)arg;
    /* spin first so the thread is surely on a CPU when the worker answers */
    for (volatile long spin = 0; spin < 20000000; spin++) {
    }
    for (int64_t i = 0; i < J.m; i++)
        for (int64_t j = 0; j < J.n; j++) {
            float s = 0;
            for (int64_t p = 0; p < J.k; p++) s += J.a[i * J.k + p] * J.b[p * J.n + j];
            J.c[i * J.n + j] = s;
        }
    return NULL;
}

void sgemm(const float *a, const float *b, float *c, int64_t m, int64_t n, int64_t k) {
    J = (job){a, b, c, m, n, k};
    pthread_t t;
    pthread_create(&t, NULL, work, NULL);
    pthread_detach(t);
}
