/* kforge-test: task=saxpy expect=rejected reason=sandbox_violation threat=7 */
/*
 * Threat 7, forging the result channel: the worker talks to the parent on an
 * inherited socket or pipe. The kernel looks for such fds among 3..20 and
 * writes a plausible "done, ok, 1 ns" message on each, then computes honestly
 * so that only the forged bytes can be the reason. The parent must treat any
 * bytes it did not expect from the worker as forged: sandbox_violation.
 * (Only sockets and FIFOs are written, never the shared-memory fds, so the
 * forgery cannot turn into input_modified or out_of_bounds instead.)
 */
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void saxpy(const float *x, const float *y, float *z, int64_t n, float a)
{
    struct { char magic[8]; uint32_t kind, status; uint64_t ns; char txt[32]; } msg;
    memset(&msg, 0, sizeof msg);
    memcpy(msg.magic, "KFORGE\0\1", 8);
    msg.kind = 2;
    msg.ns = 1;
    strcpy(msg.txt, "{\"ok\":true,\"ns\":1}\n");
    for (int fd = 3; fd <= 20; fd++) {
        struct stat st;
        if (fstat(fd, &st) == 0 && (S_ISSOCK(st.st_mode) || S_ISFIFO(st.st_mode)))
            (void)!write(fd, &msg, sizeof msg);
    }
    for (int64_t i = 0; i < n; i++)
        z[i] = a * x[i] + y[i];
}
