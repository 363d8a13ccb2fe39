/* kforge-test: task=saxpy expect=rejected reason=sandbox_violation threat=6 */
/*
 * Threat 6, timer tampering by patching code: at load time a constructor
 * makes the page holding libc's clock_gettime writable AND executable and
 * overwrites its entry with "xor eax,eax; ret", so the harness's clock never
 * moves (every measured time is 0). mprotect with PROT_WRITE|PROT_EXEC is
 * forbidden by the seccomp filter: the worker is killed while loading the
 * candidate, sandbox_violation.
 */
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

__attribute__((constructor)) static void patch_clock(void)
{
    long pg = sysconf(_SC_PAGESIZE);
    uintptr_t f = (uintptr_t)&clock_gettime;
    void *page = (void *)(f & ~(uintptr_t)(pg - 1));
    if (mprotect(page, (size_t)pg * 2, PROT_READ | PROT_WRITE | PROT_EXEC) == 0) {
        static const unsigned char stub[] = { 0x31, 0xc0, 0xc3 };
        memcpy((void *)f, stub, sizeof stub);
    }
}

void saxpy(const float *x, const float *y, float *z, int64_t n, float a)
{
    for (int64_t i = 0; i < n; i++)
        z[i] = a * x[i] + y[i];
}
