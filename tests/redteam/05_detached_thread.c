/* kforge-test: task=saxpy expect=rejected reason=sandbox_violation threat=5 */
/*
 * Threat 5, work after return: the call starts a detached thread and returns
 * at once, so the timed region is empty; the thread sleeps 50 ms and then
 * fills z, hoping the harness reads the output later. kforge freezes the
 * whole worker (SIGSTOP) the moment it answers, judges the outputs as they are at
 * return, and refuses any thread that outlives the call: sandbox_violation.
 */
#include <pthread.h>
#include <stdint.h>
#include <time.h>

static struct { const float *x, *y; float *z; int64_t n; float a; } job;

static void *late(void *arg)
{
    (void)arg;
    struct timespec ts = { 0, 50 * 1000 * 1000 };
    nanosleep(&ts, NULL);
    for (int64_t i = 0; i < job.n; i++)
        job.z[i] = job.a * job.x[i] + job.y[i];
    return NULL;
}

void saxpy(const float *x, const float *y, float *z, int64_t n, float a)
{
    pthread_t t;
    job.x = x; job.y = y; job.z = z; job.n = n; job.a = a;
    if (pthread_create(&t, NULL, late, NULL) == 0)
        pthread_detach(t);
}
