/* kforge-test: task=saxpy expect=rejected reason=sandbox_violation threat=18 */
/*
 * Threat 18, reaching out over the network: open a TCP socket and connect to
 * 127.0.0.1:8080 (a local dashboard, the run store's server, or an outside
 * helper that holds precomputed answers). Creating any socket besides the
 * existing result channel is forbidden by the seccomp filter:
 * sandbox_violation.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <sys/socket.h>
#include <unistd.h>

void saxpy(const float *x, const float *y, float *z, int64_t n, float a)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    if (s >= 0) {
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(8080) };
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        connect(s, (struct sockaddr *)&sa, sizeof sa);
        close(s);
    }
    for (int64_t i = 0; i < n; i++)
        z[i] = a * x[i] + y[i];
}
