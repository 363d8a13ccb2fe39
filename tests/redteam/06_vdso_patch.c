/* kforge-test: task=saxpy expect=rejected reason=sandbox_violation threat=6 */
/*
 * Threat 6, patching the vDSO: clock_gettime normally never enters the kernel;
 * it runs code in the vDSO page mapped into every process. The kernel finds
 * the vDSO through the auxiliary vector and tries to make it writable and
 * executable, to freeze every clock the worker reads. The W+X mprotect is
 * forbidden by the seccomp filter: sandbox_violation.
 */
#include <stdint.h>
#include <sys/auxv.h>
#include <sys/mman.h>

void saxpy(const float *x, const float *y, float *z, int64_t n, float a)
{
    void *vdso = (void *)getauxval(AT_SYSINFO_EHDR);
    if (vdso)
        (void)mprotect(vdso, 4096, PROT_READ | PROT_WRITE | PROT_EXEC);
    for (int64_t i = 0; i < n; i++)
        z[i] = a * x[i] + y[i];
}
