/* kforge-test: task=saxpy expect=rejected reason=unwritten_output threat=18 */
/*
 * Threat 18, reading the coordinator through /proc: open /proc/<ppid>/mem
 * (and /proc/<ppid>/environ, where a seed might sit) to lift the reference
 * output. Landlock limits reads to system dirs and the candidate's .so, so
 * the opens fail with EACCES (no kill). To make the test observable, the
 * kernel writes its (honestly computed) output ONLY if an open succeeded,
 * standing in for "copied the reference"; with the sandbox working nothing is
 * written: unwritten_output. An accepted verdict here means /proc of the
 * parent is readable.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

void saxpy(const float *x, const float *y, float *z, int64_t n, float a)
{
    static const char *what[] = { "mem", "environ", "maps" };
    int leaked = 0;
    for (int i = 0; i < 3; i++) {
        char path[64];
        snprintf(path, sizeof path, "/proc/%d/%s", (int)getppid(), what[i]);
        int fd = open(path, O_RDONLY);
        if (fd >= 0) {
            leaked = 1;
            close(fd);
        }
    }
    if (leaked)
        for (int64_t i = 0; i < n; i++)
            z[i] = a * x[i] + y[i];
}
