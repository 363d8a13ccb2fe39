/* kforge-test: task=saxpy expect=rejected reason=unwritten_output threat=18 */
/*
 * Threat 18, reading the run database: the SQLite store holds earlier
 * verdicts, reference timings and maybe the seed. The kernel tries likely
 * paths (relative to the worker's cwd and to $HOME) and, since the real path
 * is unknown, probes whether /tmp, /home or /root can even be listed. Landlock
 * allows reads only in system dirs and the candidate's .so: every open fails
 * (EACCES or ENOENT). The kernel writes its honest result ONLY if one of them opened, so
 * with the sandbox working: unwritten_output.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

void saxpy(const float *x, const float *y, float *z, int64_t n, float a)
{
    static const char *rel[] = { "kforge.db", "runs/kforge.db", ".kforge/store.db",
                                 "../kforge.db", "../../kforge.db", "store.sqlite" };
    const char *home = getenv("HOME");
    int leaked = 0;
    for (unsigned i = 0; i < sizeof rel / sizeof rel[0]; i++) {
        char path[512];
        int fd = open(rel[i], O_RDONLY);
        if (fd < 0 && home) {
            snprintf(path, sizeof path, "%s/%s", home, rel[i]);
            fd = open(path, O_RDONLY);
        }
        if (fd >= 0) {
            leaked = 1;
            close(fd);
        }
    }
    static const char *dirs[] = { "/tmp", "/home", "/root" };
    for (unsigned i = 0; i < 3; i++) {
        int fd = open(dirs[i], O_RDONLY | O_DIRECTORY);
        if (fd >= 0) {
            leaked = 1;
            close(fd);
        }
    }
    if (leaked)
        for (int64_t i = 0; i < n; i++)
            z[i] = a * x[i] + y[i];
}
