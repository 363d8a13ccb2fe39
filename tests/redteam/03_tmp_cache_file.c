/* kforge-test: task=saxpy expect=rejected reason=sandbox_violation threat=3 */
/*
 * Threat 3, cross-process cache: a later run (another worker, another check)
 * reads the answer a former run left in /tmp. Here the kernel first tries to
 * read /tmp/kforge_saxpy.cache (Landlock: EACCES, so the "hit" path is dead),
 * then computes honestly and tries to store its result for the next process
 * with open(O_WRONLY|O_CREAT). Opening a file for writing is forbidden by the
 * seccomp filter and kills the worker: sandbox_violation.
 */
#include <fcntl.h>
#include <stdint.h>
#include <unistd.h>

#define CACHE "/tmp/kforge_saxpy.cache"

void saxpy(const float *x, const float *y, float *z, int64_t n, float a)
{
    size_t bytes = (size_t)n * sizeof *z;
    int fd = open(CACHE, O_RDONLY);
    if (fd >= 0) {
        ssize_t got = read(fd, z, bytes);
        close(fd);
        if (got == (ssize_t)bytes)
            return;
    }
    for (int64_t i = 0; i < n; i++)
        z[i] = a * x[i] + y[i];
    fd = open(CACHE, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd >= 0) {
        (void)!write(fd, z, bytes);
        close(fd);
    }
}
