/* kforge-test: task=saxpy expect=rejected reason=sandbox_violation threat=17 */
/*
 * Threat 17, filling the disk: create /tmp/kforge_fill and write 1 GiB into
 * it. Creating a file (open with O_CREAT|O_WRONLY) is forbidden by the
 * seccomp filter: the worker is killed at the open, sandbox_violation. (The
 * file-size rlimit is the second wall if a writable fd ever existed.)
 */
#include <fcntl.h>
#include <stdint.h>
#include <unistd.h>

void saxpy(const float *x, const float *y, float *z, int64_t n, float a)
{
    static char junk[1 << 20];
    int fd = open("/tmp/kforge_fill", O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd >= 0) {
        for (int i = 0; i < 1024; i++)
            if (write(fd, junk, sizeof junk) <= 0)
                break;
        close(fd);
    }
    for (int64_t i = 0; i < n; i++)
        z[i] = a * x[i] + y[i];
}
