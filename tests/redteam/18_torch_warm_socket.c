/* kforge-test: task=softmax_torch expect=rejected reason=sandbox_violation threat=18 */
/*
 * Threat 18 against a PyTorch reference's warm process (docs/torch.md "The warm
 * process"): connect to it through a Unix socket, named (in the runtime directory) or
 * abstract, to have it fork a runner on descriptors of the candidate's choosing or to
 * read what it serves. It has no socket anything could connect to (its channel is a
 * socketpair), and socket() is refused by the seccomp filter anyway: sandbox_violation.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

void softmax(const float *x, float *y, int64_t rows, int64_t cols)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    memcpy(sa.sun_path, "\0kforge-torch-warm", 18); /* abstract */
    int s = socket(AF_UNIX, SOCK_SEQPACKET, 0);
    if (s >= 0) {
        connect(s, (struct sockaddr *)&sa, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 18));
        close(s);
    }
    for (int64_t i = 0; i < rows * cols; i++)
        y[i] = x[i];
}
