/* kforge-test: task=saxpy expect=rejected reason=sandbox_violation threat=5 */
/*
 * Threat 5, the same escape through the raw clone syscall instead of glibc's
 * fork(), in case a filter only hooks the library call: clone(SIGCHLD) makes a
 * new process (no CLONE_THREAD). The seccomp filter looks at the clone flags:
 * sandbox_violation. vfork is tried too if clone somehow fails.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

void saxpy(const float *x, const float *y, float *z, int64_t n, float a)
{
    long pid = syscall(SYS_clone, (long)SIGCHLD, 0L, 0L, 0L, 0L);
    if (pid < 0)
        pid = syscall(SYS_vfork);
    if (pid != 0)
        return;
    usleep(20000);
    for (int64_t i = 0; i < n; i++)
        z[i] = a * x[i] + y[i];
    syscall(SYS_exit, 0);
}
