/* kforge-test: task=saxpy expect=rejected reason=timeout threat=17 */
/*
 * Threat 17, a loop that ignores polite stops: SIGTERM, SIGINT, SIGHUP,
 * SIGXCPU and SIGALRM are ignored (sigaction is allowed) and the rest are
 * blocked, then the kernel spins. Only SIGKILL (at the wall deadline, or the
 * hard CPU rlimit after SIGXCPU) can end it; the verdict is timeout.
 */
#include <signal.h>
#include <stdint.h>
#include <string.h>

static volatile int forever = 1;

void saxpy(const float *x, const float *y, float *z, int64_t n, float a)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_IGN;
    int sigs[] = { SIGTERM, SIGINT, SIGHUP, SIGXCPU, SIGALRM, SIGUSR1, SIGUSR2 };
    for (unsigned i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        sigaction(sigs[i], &sa, NULL);
    sigset_t all;
    sigfillset(&all);
    sigprocmask(SIG_BLOCK, &all, NULL);
    while (forever)
        ;
    for (int64_t i = 0; i < n; i++)
        z[i] = a * x[i] + y[i];
}
