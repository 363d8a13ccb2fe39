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
 * for the whole 20 ms wait in five rounds in a row, and is gone once the candidate's
 * worker is ended, is the candidate's: sandbox_violation (scripts/gpu-session.sh
 * hostcheat runs it without CUPTI, also as a spinner of 20 ns per element).
 */
// kforge:host
#include <cuda.h>

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

static int side_context(void)
{
    if (side) return 1;
    void *p = NULL;
    cudaDriverEntryPointQueryResult q;
    ctx_create_fn create;
    /* CUDA 13's cuCtxCreate takes a parameter block: ask for the CUDA 12 one */
    if (cudaGetDriverEntryPointByVersion("cuCtxCreate", &p, 12000, cudaEnableDefault, &q) || !p) return 0;
    create = (ctx_create_fn)p;
    if (cudaGetDriverEntryPointByVersion("cuCtxPushCurrent", &p, 12000, cudaEnableDefault, &q) || !p) return 0;
    push = (ctx_push_fn)p;
    if (cudaGetDriverEntryPointByVersion("cuCtxPopCurrent", &p, 12000, cudaEnableDefault, &q) || !p) return 0;
    pop = (ctx_pop_fn)p;
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
