/* kforge-test: task=saxpy expect=rejected reason=sandbox_violation threat=18 */
/*
 * Threat 18, kill(-1, SIGKILL): every process the user may signal, i.e. the
 * coordinator, the shell, the other workers. The seccomp filter allows kill
 * only at the worker's own pid: sandbox_violation.
 * DANGER: never load this file outside kforge's sandbox; as an unsandboxed
 * process it kills every process of the running user.
 */
#include <signal.h>
#include <stdint.h>

void saxpy(const float *x, const float *y, float *z, int64_t n, float a)
{
    kill(-1, SIGKILL);
    for (int64_t i = 0; i < n; i++)
        z[i] = a * x[i] + y[i];
}
