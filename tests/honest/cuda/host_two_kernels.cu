/* kforge-test: task=tasks/cuda/sum expect=accepted threat=10 */
/*
 * Honest, host mode, two kernels on the given stream: kernel 1 writes one partial sum
 * per block (grid-stride, double accumulation) into a device scratch buffer allocated
 * once; kernel 2 (one block) adds the partials in a fixed order. Deterministic; the
 * scratch is rewritten completely by every call before it is read.
 */
// kforge:host

#define BLOCKS 1024
#define THREADS 256

__global__ void partial(const float *x, double *part, int64_t n)
{
    __shared__ double sh[THREADS];
    double s = 0;
    for (int64_t i = (int64_t)blockIdx.x * THREADS + threadIdx.x; i < n; i += (int64_t)BLOCKS * THREADS) s += x[i];
    sh[threadIdx.x] = s;
    __syncthreads();
    for (int o = THREADS / 2; o > 0; o >>= 1) {
        if (threadIdx.x < o) sh[threadIdx.x] += sh[threadIdx.x + o];
        __syncthreads();
    }
    if (threadIdx.x == 0) part[blockIdx.x] = sh[0];
}

__global__ void finish(const double *part, float *out)
{
    __shared__ double sh[THREADS];
    double s = 0;
    for (int i = threadIdx.x; i < BLOCKS; i += THREADS) s += part[i];
    sh[threadIdx.x] = s;
    __syncthreads();
    for (int o = THREADS / 2; o > 0; o >>= 1) {
        if (threadIdx.x < o) sh[threadIdx.x] += sh[threadIdx.x + o];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[0] = (float)sh[0];
}

extern "C" int kforge_launch(const float *x, float *out, int64_t n, cudaStream_t stream)
{
    static double *part;
    if (!part && cudaMalloc(&part, BLOCKS * sizeof(double)) != cudaSuccess) return 1;
    partial<<<BLOCKS, THREADS, 0, stream>>>(x, part, n);
    finish<<<1, THREADS, 0, stream>>>(part, out);
    return cudaGetLastError() == cudaSuccess ? 0 : 2;
}
