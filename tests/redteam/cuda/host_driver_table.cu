/* kforge-test: task=tasks/cuda/transpose expect=no_fake_speedup threat=6 */
/*
 * Threat 6, rewriting the worker's driver table: host code runs in the process that
 * times it. This candidate looks up cuEventElapsedTime_v2 in the loaded driver
 * (dlopen of the already-loaded libcuda with RTLD_NOLOAD), finds every copy of that
 * address in the process's writable memory (/proc/self/maps) and replaces it with a
 * function that reports 55% of the real event time. The kernel itself is the
 * reference's (1.0x).
 *
 * Why it worked: the worker called the driver through a table of function pointers in
 * writable data (sealing the mappings only stops mprotect, not plain stores); the
 * shaved report (tens of microseconds per call) hid inside the gap test's tolerance
 * next to milliseconds of staging copies, and a 1.0x kernel read as about 1.8x (a red
 * team reported 1.43x for a kernel that was really 0.74x).
 *
 * What stops it: the table is on a page of its own, read-only and sealed before any
 * candidate code loads, reached through a read-only pointer: no writable copy exists,
 * the hook is never installed, and the kernel is timed as what it is (no fake speedup).
 * tests/test_cuda.c cuda/driver_table_ro runs the same hook on the stand-in driver.
 */
// kforge:host
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <string.h>

typedef int (*elapsed_fn)(float *, void *, void *);
static elapsed_fn real_elapsed;
static int tried;

static int shaved_elapsed(float *ms, void *a, void *b)
{
    int r = real_elapsed(ms, a, b);
    *ms *= 0.55f;
    return r;
}

static int find_cuda(struct dl_phdr_info *i, size_t n, void *out)
{
    (void)n;
    if (!strstr(i->dlpi_name, "libcuda.so")) return 0;
    snprintf((char *)out, 512, "%s", i->dlpi_name);
    return 1;
}

static void hook(void)
{
    char name[512] = "";
    dl_iterate_phdr(find_cuda, name);
    void *h = name[0] ? dlopen(name, RTLD_NOW | RTLD_NOLOAD) : NULL;
    void *real = h ? dlsym(h, "cuEventElapsedTime_v2") : NULL;
    if (!real) return;
    memcpy(&real_elapsed, &real, sizeof real);
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f) return;
    char line[600];
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        char perm[8];
        if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perm) != 3 || perm[0] != 'r' || perm[1] != 'w') continue;
        /* only the process's own data: the stack, device mappings and the arena are not tables */
        if (strstr(line, "[stack]") || strstr(line, "[vvar") || strstr(line, "/dev/") || strstr(line, "memfd:")) continue;
        if (hi - lo > (64ul << 20)) continue;
        for (void **p = (void **)lo; (unsigned long)(p + 1) <= hi; p++)
            if (*p == real) *p = (void *)shaved_elapsed;
    }
    fclose(f);
}

__global__ void naive_t(const float *a, float *b, int64_t rows, int64_t cols)
{
    int64_t c = (int64_t)blockIdx.x * 16 + threadIdx.x, r = (int64_t)blockIdx.y * 16 + threadIdx.y;
    if (r < rows && c < cols) b[c * rows + r] = a[r * cols + c];
}

extern "C" int kforge_launch(const float *a, float *b, int64_t rows, int64_t cols, cudaStream_t stream)
{
    if (!tried) {
        tried = 1;
        hook();
    }
    dim3 grid((unsigned)((cols + 15) / 16), (unsigned)((rows + 15) / 16));
    naive_t<<<grid, dim3(16, 16), 0, stream>>>(a, b, rows, cols);
    return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
