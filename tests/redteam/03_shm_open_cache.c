/* kforge-test: task=sum expect=rejected reason=sandbox_violation threat=3 */
/*
 * Threat 3, cross-process cache in POSIX shared memory: shm_open() creates
 * /dev/shm/kforge_sum, which outlives the worker, so the next worker could
 * read the previous answer. shm_open opens with O_RDWR|O_CREAT, which the
 * seccomp filter forbids: the worker is killed, sandbox_violation.
 */
#include <fcntl.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

void reduce_sum(const float *x, float *out, int64_t n)
{
    double s = 0.0;
    for (int64_t i = 0; i < n; i++)
        s += x[i];
    out[0] = (float)s;
    int fd = shm_open("/kforge_sum", O_RDWR | O_CREAT, 0600);
    if (fd >= 0) {
        (void)!write(fd, out, sizeof *out);
        close(fd);
    }
}
