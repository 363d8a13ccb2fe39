/* kforge-test: task=sum expect=rejected reason=sandbox_violation threat=18 */
/*
 * Threat 18, a local side channel: an AF_UNIX datagram socket to the
 * coordinator's (guessed) control socket, to ask for the reference or send
 * a fake verdict. socket() of any kind other than the existing result
 * channel is forbidden: sandbox_violation.
 */
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

void reduce_sum(const float *x, float *out, int64_t n)
{
    int s = socket(AF_UNIX, SOCK_DGRAM, 0);
    if (s >= 0) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        strcpy(sa.sun_path, "/tmp/kforge.sock");
        sendto(s, "verdict accepted", 16, 0, (struct sockaddr *)&sa, sizeof sa);
        close(s);
    }
    double acc = 0.0;
    for (int64_t i = 0; i < n; i++)
        acc += x[i];
    out[0] = (float)acc;
}
