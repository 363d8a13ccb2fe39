/* kforge-test: task=tasks/cuda/transpose expect=no_fake_speedup threat=5 */
/*
 * Threat 5/24, GPU work left running after the call: the kernel is the reference's
 * (1.0x), but after every call that the ABBA order follows with the baseline's (the
 * even-numbered ones of a shape) the host code launches a kernel that spins in a CUDA
 * context of its own, and returns without waiting for it: 1.4 ns per element, long
 * enough to outlast the coordinator's staging of the baseline's next call and its timed
 * span (23 ms at 4096 x 4096), short enough to be over before the candidate's own next
 * call. The worker synchronises its
 * primary context, not this one; the candidate's worker is frozen (SIGSTOP) after its
 * answer, but the GPU keeps running the spinner, and the baseline's timed span shares
 * the device with it (time slices between contexts): the baseline is slower, and the
 * candidate reads as faster (a red team reported 3.6x and 2.2x for kernels really 1.0x).
 *
 * What stops it: with CUPTI, the creation of a context of the candidate's own is
 * refused at the check (sandbox_violation: the worker synchronises only its primary
 * context). Without CUPTI, every worker waits before its timed span until the device
 * is idle (probe kernels, which a busy device delays by a time slice), and a round in
 * which it waited is not timed: no fake speedup. A spinner that keeps the device busy
 * for the whole 20 ms wait in ten rounds in a row, and is gone once the candidate's
 * worker is ended, twice, is the candidate's: sandbox_violation (scripts/gpu-steps.sh
 * hostcheat runs it without CUPTI, also as a spinner of 20 ns per element).
 *
 * On the H200 an earlier version, which asked the runtime for cuCtxCreate
 * (cudaGetDriverEntryPoint: CUDA 13's cuCtxCreate takes a parameter block), measured
 * 0.71-0.73x on the build before these defences and was not refused by the CUPTI rule
 * either: its side context was most likely never made. This version takes
 * cuCtxCreate_v2 from the loaded driver itself; it has not run on a GPU yet.
 */
// kforge:host
#include <cuda.h>
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <string.h>

__global__ void naive_t(const float *a, float *b, int64_t rows, int64_t cols)
{
    int64_t c = (int64_t)blockIdx.x * 16 + threadIdx.x, r = (int64_t)blockIdx.y * 16 + threadIdx.y;
    if (r < rows && c < cols) b[c * rows + r] = a[r * cols + c];
}

__global__ void spin(unsigned long long ns)
{
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); while (t - t0 < ns);
}

typedef CUresult (*ctx_create_fn)(CUcontext *, unsigned, CUdevice);
typedef CUresult (*ctx_push_fn)(CUcontext);
typedef CUresult (*ctx_pop_fn)(CUcontext *);
static CUcontext side;
static ctx_push_fn push;
static ctx_pop_fn pop;
static long calls;
static int64_t last_rows = -1, last_cols = -1;
static const double ns_per_elem = 1.4;

static int find_cuda(struct dl_phdr_info *i, size_t n, void *out)
{
    (void)n;
    if (!strstr(i->dlpi_name, "libcuda.so")) return 0;
    snprintf((char *)out, 512, "%s", i->dlpi_name);
    return 1;
}

/* The driver's own entry points, from the libcuda the worker loaded (dlopen with
 * RTLD_NOLOAD): cuCtxCreate_v2 takes (ctx, flags, device) in every CUDA version. */
static int side_context(void)
{
    if (side) return 1;
    char name[512] = "";
    dl_iterate_phdr(find_cuda, name);
    void *h = name[0] ? dlopen(name, RTLD_NOW | RTLD_NOLOAD) : NULL;
    ctx_create_fn create = h ? (ctx_create_fn)dlsym(h, "cuCtxCreate_v2") : NULL;
    push = h ? (ctx_push_fn)dlsym(h, "cuCtxPushCurrent_v2") : NULL;
    pop = h ? (ctx_pop_fn)dlsym(h, "cuCtxPopCurrent_v2") : NULL;
    if (!create || !push || !pop) return 0;
    CUcontext prev;
    if (create(&side, 0, 0)) return 0; /* cuCtxCreate makes it current: give it back */
    return pop(&prev) == CUDA_SUCCESS;
}

extern "C" int kforge_launch(const float *a, float *b, int64_t rows, int64_t cols, cudaStream_t stream)
{
    dim3 grid((unsigned)((cols + 15) / 16), (unsigned)((rows + 15) / 16));
    naive_t<<<grid, dim3(16, 16), 0, stream>>>(a, b, rows, cols);
    if (cudaStreamSynchronize(stream) != cudaSuccess) return 1;
    if (rows != last_rows || cols != last_cols) { /* a new shape: bench's rounds start again */
        last_rows = rows, last_cols = cols;
        calls = 0;
    }
    if ((calls++ & 1) == 0 && side_context()) {
        CUcontext prev;
        push(side);
        /* the runtime launches into the current context */
        spin<<<1, 32>>>((unsigned long long)(ns_per_elem * (double)rows * (double)cols));
        pop(&prev);
    }
    return 0;
}
