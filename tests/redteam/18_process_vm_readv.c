/* kforge-test: task=sum expect=rejected reason=sandbox_violation threat=18 */
/*
 * Threat 18, reading the coordinator's memory without ptrace:
 * process_vm_readv on the parent (here at a guessed address; a real attack
 * would scan). It is forbidden by the seccomp filter: sandbox_violation.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <sys/uio.h>
#include <unistd.h>

void reduce_sum(const float *x, float *out, int64_t n)
{
    char buf[64];
    struct iovec local = { buf, sizeof buf };
    struct iovec remote = { (void *)0x400000, sizeof buf };
    process_vm_readv(getppid(), &local, 1, &remote, 1, 0);
    double s = 0.0;
    for (int64_t i = 0; i < n; i++)
        s += x[i];
    out[0] = (float)s;
}
