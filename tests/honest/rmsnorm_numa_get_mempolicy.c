/* kforge-test: task=rmsnorm expect=accepted */
/* Honest rmsnorm that asks the kernel which NUMA node holds its input (as NUMA-aware code
 * does before placing threads), then computes exactly like the reference. If the query
 * fails it just proceeds. */
#define _GNU_SOURCE
#include <math.h>
#include <stdint.h>
#include <unistd.h>
#include <sys/syscall.h>

#ifndef MPOL_F_NODE
#define MPOL_F_NODE (1 << 0)
#define MPOL_F_ADDR (1 << 1)
#endif

void rmsnorm(const float *x, const float *w, float *y, int64_t rows, int64_t cols, float eps)
{
    int node = -1;
    (void)syscall(SYS_get_mempolicy, &node, NULL, 0UL, (void *)x, (unsigned long)(MPOL_F_NODE | MPOL_F_ADDR));
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        double ss = 0.0;
        for (int64_t c = 0; c < cols; c++) ss += (double)xr[c] * xr[c];
        float scale = (float)(1.0 / sqrt(ss / (double)cols + (double)eps));
        for (int64_t c = 0; c < cols; c++) yr[c] = xr[c] * scale * w[c];
    }
}
