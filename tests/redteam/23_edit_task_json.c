/* kforge-test: task=saxpy expect=rejected reason=sandbox_violation threat=23 */
/*
 * Threat 23, changing the test: open the task's task.json (and reference.c)
 * for writing, to loosen the tolerance or swap in an easier reference for
 * later runs. Opening any file for writing is forbidden by the seccomp filter:
 * the worker is killed at the open, sandbox_violation. The kernel then
 * computes honestly, so the open alone is judged. To stay harmless if ever
 * run without a sandbox, the fd is opened O_APPEND and nothing is written.
 */
#include <fcntl.h>
#include <stdint.h>
#include <unistd.h>

void saxpy(const float *x, const float *y, float *z, int64_t n, float a)
{
    static const char *paths[] = { "tasks/c/saxpy/task.json", "../tasks/c/saxpy/task.json",
                                   "tasks/c/saxpy/reference.c", "task.json" };
    for (unsigned i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        int fd = open(paths[i], O_WRONLY | O_APPEND);
        if (fd >= 0)
            close(fd);
    }
    for (int64_t i = 0; i < n; i++)
        z[i] = a * x[i] + y[i];
}
