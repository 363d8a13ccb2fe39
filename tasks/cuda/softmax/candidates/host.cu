/* Host-mode softmax (docs/cuda.md "Host mode"): kforge_launch makes two launches on the
 * given stream. Kernel 1: one 256-thread block per row reduces the row's max and sum of
 * exp(x - max) into a scratch buffer (allocated once, rows <= 4096). Kernel 2: a grid over
 * all elements writes exp(x - max) / sum. Reads x twice (the kernel-mode fast.cu reads it
 * once): here to show, and test, host code with more than one kernel, not to win. */
// kforge:host

#define THREADS 256

static __device__ float block_reduce(float v, bool is_max, float *sh)
{
    for (int o = 16; o > 0; o >>= 1) {
        float w = __shfl_xor_sync(0xffffffffu, v, o);
        v = is_max ? fmaxf(v, w) : v + w;
    }
    if ((threadIdx.x & 31) == 0) sh[threadIdx.x >> 5] = v;
    __syncthreads();
    float r = sh[0];
    for (int i = 1; i < THREADS / 32; i++) r = is_max ? fmaxf(r, sh[i]) : r + sh[i];
    __syncthreads();
    return r;
}

__global__ void __launch_bounds__(THREADS) row_stats(const float *x, float2 *st, int64_t cols)
{
    __shared__ float sh[THREADS / 32];
    const float *xr = x + (int64_t)blockIdx.x * cols;
    float m = -INFINITY;
    for (int64_t c = threadIdx.x; c < cols; c += THREADS) m = fmaxf(m, xr[c]);
    m = block_reduce(m, true, sh);
    float s = 0.f;
    for (int64_t c = threadIdx.x; c < cols; c += THREADS) s += expf(xr[c] - m);
    s = block_reduce(s, false, sh);
    if (threadIdx.x == 0) st[blockIdx.x] = make_float2(m, s);
}

__global__ void normalize(const float *x, const float2 *st, float *y, int64_t rows, int64_t cols)
{
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= rows * cols) return;
    float2 s = st[i / cols];
    y[i] = expf(x[i] - s.x) / s.y;
}

extern "C" int kforge_launch(const float *x, float *y, int64_t rows, int64_t cols, cudaStream_t stream)
{
    static float2 *stats; /* device scratch, one (max, sum) per row */
    if (!stats && cudaMalloc(&stats, 4096 * sizeof(float2)) != cudaSuccess) return 1;
    if (rows > 4096) return 2;
    row_stats<<<(unsigned)rows, THREADS, 0, stream>>>(x, stats, cols);
    int64_t n = rows * cols;
    normalize<<<(unsigned)((n + 255) / 256), 256, 0, stream>>>(x, stats, y, rows, cols);
    return cudaGetLastError() == cudaSuccess ? 0 : 3;
}
