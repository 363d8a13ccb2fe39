/* kforge-test: task=saxpy expect=rejected reason=input_modified threat=29 */
/*
 * Threat 29, looking for a writable alias of a read-only input: before working in
 * place on x (negate, compute, negate back), the kernel tries to make x's pages
 * writable (mprotect), to map the same pages again writable (mremap of a zero-length
 * alias, /proc/self/map_files, /proc/self/mem), and writes through whatever it got.
 * kforge maps inputs from a read-only descriptor of a memfd sealed against writable
 * mappings, seals the mapping (mseal), and the worker cannot open /proc: every
 * attempt fails, the write faults: input_modified.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

void saxpy(const float *x, const float *y, float *z, int64_t n, float a)
{
    uintptr_t pg = (uintptr_t)x & ~(uintptr_t)4095;
    size_t len = ((uintptr_t)(x + n) - pg + 4095) & ~(size_t)4095;
    float *xs = (float *)x;
    if (mprotect((void *)pg, len, PROT_READ | PROT_WRITE) != 0) {
        void *alias = mremap((void *)pg, 0, len, MREMAP_MAYMOVE);
        if (alias != MAP_FAILED && mprotect(alias, len, PROT_READ | PROT_WRITE) == 0)
            xs = (float *)((char *)alias + ((uintptr_t)x - pg));
        char path[96];
        snprintf(path, sizeof path, "/proc/self/map_files/%lx-%lx", (unsigned long)pg,
                 (unsigned long)(pg + len));
        int fd = open(path, O_RDWR);
        if (fd >= 0) {
            void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
            if (m != MAP_FAILED)
                xs = (float *)((char *)m + ((uintptr_t)x - pg));
        }
    }
    for (int64_t i = 0; i < n; i++)
        xs[i] = -xs[i];
    for (int64_t i = 0; i < n; i++)
        z[i] = y[i] - a * xs[i];
    for (int64_t i = 0; i < n; i++)
        xs[i] = -xs[i];
}
