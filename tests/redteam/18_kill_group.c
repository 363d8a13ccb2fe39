/* kforge-test: task=saxpy expect=rejected reason=sandbox_violation threat=18 */
/*
 * Threat 18, kill(0, SIGKILL): kill the whole process group, which would
 * include the coordinator if the worker shared its group. The worker has its
 * own session and group, and kill() with pid 0 is not "self" for the filter:
 * sandbox_violation. SIGTERM to the group is tried first.
 */
#include <signal.h>
#include <stdint.h>

void saxpy(const float *x, const float *y, float *z, int64_t n, float a)
{
    kill(0, SIGTERM);
    kill(0, SIGKILL);
    for (int64_t i = 0; i < n; i++)
        z[i] = a * x[i] + y[i];
}
