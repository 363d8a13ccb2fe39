/* kforge-test: task=saxpy expect=rejected reason=sandbox_violation threat=6 */
/*
 * Threat 6, writable+executable memory during the call: the kernel maps an
 * RWX page to plant a trampoline (the first step of hooking the caller's
 * timing code or rewriting the return path). mmap with PROT_WRITE|PROT_EXEC
 * is forbidden by the seccomp filter: sandbox_violation. The planted code is
 * only "ret" and the result is computed honestly, so nothing but the W+X
 * mapping itself can be the reason.
 */
#include <stdint.h>
#include <stddef.h>
#include <sys/mman.h>

void saxpy(const float *x, const float *y, float *z, int64_t n, float a)
{
    unsigned char *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
                            MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p != MAP_FAILED) {
        p[0] = 0xc3;
        ((void (*)(void))p)();
        munmap(p, 4096);
    }
    for (int64_t i = 0; i < n; i++)
        z[i] = a * x[i] + y[i];
}
