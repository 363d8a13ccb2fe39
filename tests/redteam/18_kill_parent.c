/* kforge-test: task=saxpy expect=rejected reason=sandbox_violation threat=18 */
/*
 * Threat 18, attacking the coordinator: SIGKILL the parent (the process
 * that judges), then compute honestly. kill() of any process other than the
 * worker itself is forbidden by the seccomp filter: the worker dies,
 * sandbox_violation, and the coordinator lives.
 */
#include <signal.h>
#include <stdint.h>
#include <unistd.h>

void saxpy(const float *x, const float *y, float *z, int64_t n, float a)
{
    kill(getppid(), SIGKILL);
    for (int64_t i = 0; i < n; i++)
        z[i] = a * x[i] + y[i];
}
