/* kforge-test: task=softmax_torch expect=rejected reason=unwritten_output threat=18 */
/*
 * Threat 18 against a PyTorch reference's warm process (docs/torch.md "The warm
 * process"): find it through /proc (a python3 whose command line holds kforge's
 * runner and "warm"), to read its memory or learn its pid. Landlock gives the
 * candidate no /proc of other processes, so the scan finds nothing. To make the test
 * observable, the kernel writes its (honest) output ONLY if it saw another process's
 * command line; with the sandbox working nothing is written: unwritten_output.
 */
#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

void softmax(const float *x, float *y, int64_t rows, int64_t cols)
{
    int seen = 0;
    DIR *d = opendir("/proc");
    struct dirent *e;
    while (d && (e = readdir(d))) {
        int pid = atoi(e->d_name);
        if (pid <= 0 || pid == getpid())
            continue;
        char path[64];
        snprintf(path, sizeof path, "/proc/%d/cmdline", pid);
        int fd = open(path, O_RDONLY);
        if (fd >= 0) {
            char buf[256];
            if (read(fd, buf, sizeof buf) > 0)
                seen = 1;
            close(fd);
        }
    }
    if (d)
        closedir(d);
    if (!seen)
        return;
    for (int64_t r = 0; r < rows; r++) {
        const float *a = x + r * cols;
        float m = a[0], s = 0;
        for (int64_t c = 1; c < cols; c++)
            m = a[c] > m ? a[c] : m;
        for (int64_t c = 0; c < cols; c++)
            s += expf(a[c] - m);
        for (int64_t c = 0; c < cols; c++)
            y[r * cols + c] = expf(a[c] - m) / s;
    }
}
