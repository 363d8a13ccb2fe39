/* kforge-test: task=saxpy expect=rejected reason=sandbox_violation threat=17 */
/*
 * Threat 17, a thread bomb: threads with tiny stacks, each parked forever, until the
 * machine runs out of process ids (other users' programs then fail to start). The
 * address-space limit does not stop it (16 KiB stacks), and RLIMIT_NPROC is ignored for
 * root. kforge's worker, when started by root, runs as an unprivileged user of its own
 * with RLIMIT_NPROC 4096: thread creation fails long before the machine is hurt, and
 * no other worker is affected. The parked threads outlive the call: sandbox_violation
 * (reported with how many thread creation allowed: at most 4095).
 * (Run as a non-root user, the user's own process limit applies instead.)
 */
#include <pthread.h>
#include <stdint.h>
#include <unistd.h>

static void *park(void *arg) {
    (void)arg;
    for (;;) pause();
    return NULL;
}

void saxpy(const float *x, const float *y, float *z, int64_t n, float a)
{
    static int made;
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setstacksize(&at, 16384);
    while (made < 20000) {
        pthread_t t;
        if (pthread_create(&t, &at, park, NULL)) break;
        made++;
    }
    if (made < 20000) return;
    for (int64_t i = 0; i < n; i++) z[i] = a * x[i] + y[i];
}
