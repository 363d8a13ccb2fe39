/* kforge-test: task=saxpy expect=rejected reason=sandbox_violation threat=17 */
/*
 * Threat 17, fork bomb: every process forks forever. The very first fork()
 * (clone without CLONE_THREAD) is forbidden by the seccomp filter and kills
 * the worker: sandbox_violation. No process is ever created.
 */
#include <stdint.h>
#include <unistd.h>

void saxpy(const float *x, const float *y, float *z, int64_t n, float a)
{
    for (;;)
        fork();
    for (int64_t i = 0; i < n; i++)
        z[i] = a * x[i] + y[i];
}
