/* kforge-test: task=rmsnorm expect=accepted */
/* Honest rmsnorm that interleaves its (static, reused) double-precision scratch row over the
 * NUMA nodes with mbind(MPOL_INTERLEAVE), as NUMA-aware code does, ignoring failure, then
 * computes like the reference. */
#define _GNU_SOURCE
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#define MPOL_INTERLEAVE_ 3

static double *scratch;

void rmsnorm(const float *x, const float *w, float *y, int64_t rows, int64_t cols, float eps)
{
    if (!scratch) {
        size_t bytes = 4096 * sizeof(double);
        void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) return;
        unsigned long mask = 1; /* node 0 */
        (void)syscall(SYS_mbind, p, bytes, MPOL_INTERLEAVE_, &mask, 64UL, 0U);
        scratch = p;
    }
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        double ss = 0.0;
        for (int64_t c = 0; c < cols; c++) { scratch[c] = (double)xr[c] * xr[c]; }
        for (int64_t c = 0; c < cols; c++) ss += scratch[c];
        float scale = (float)(1.0 / sqrt(ss / (double)cols + (double)eps));
        for (int64_t c = 0; c < cols; c++) yr[c] = xr[c] * scale * w[c];
    }
}
