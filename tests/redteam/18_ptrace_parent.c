/* kforge-test: task=saxpy expect=rejected reason=sandbox_violation threat=18 */
/*
 * Threat 18, ptrace the coordinator: attach to the parent to read the
 * reference output or the secret seed, or to rewrite the verdict. ptrace is
 * forbidden by the seccomp filter: sandbox_violation. (PTRACE_TRACEME, the
 * other direction, is tried first.)
 */
#include <stdint.h>
#include <sys/ptrace.h>
#include <unistd.h>

void saxpy(const float *x, const float *y, float *z, int64_t n, float a)
{
    ptrace(PTRACE_TRACEME, 0, NULL, NULL);
    ptrace(PTRACE_ATTACH, getppid(), NULL, NULL);
    for (int64_t i = 0; i < n; i++)
        z[i] = a * x[i] + y[i];
}
