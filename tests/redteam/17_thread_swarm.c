/* kforge-test: task=sum expect=rejected reason=timeout threat=17 */
/*
 * Threat 17, CPU exhaustion through threads: start 64 spinning threads (that
 * are allowed: clone with CLONE_THREAD) and spin in the calling thread too
 * (so a thread limit alone does not save the host). The CPU rlimit counts
 * all threads of the worker, and the wall deadline kills the whole process
 * group: timeout.
 */
#include <pthread.h>
#include <stdint.h>

static volatile int forever = 1;

static void *spin(void *arg)
{
    while (forever)
        ;
    return arg;
}

void reduce_sum(const float *x, float *out, int64_t n)
{
    pthread_t t[64];
    int started = 0;
    for (int i = 0; i < 64; i++)
        if (pthread_create(&t[started], NULL, spin, NULL) == 0)
            started++;
    spin(NULL);
    for (int i = 0; i < started; i++)
        pthread_join(t[i], NULL);
    double s = 0.0;
    for (int64_t i = 0; i < n; i++)
        s += x[i];
    out[0] = (float)s;
}
