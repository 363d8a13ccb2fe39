/* kforge-test: task=tasks/cuda/softmax expect=accepted threat=10 */
/*
 * Honest, libcu++'s <cuda/barrier>: one 256-thread block per row synchronises through a
 * block-scoped cuda::barrier (arrive_and_wait) instead of __syncthreads. The header is
 * inside the toolkit's include tree (include/cccl/cuda/barrier), which kernel mode
 * allows by name; a short allow-list refused it (a false compile_error; tests/test_cuda.c
 * cuda/toolkit_headers builds it without a GPU).
 */
// kforge:launch kernel=softmax_bar grid=(rows,1,1) block=(256,1,1)
#include <cuda/barrier>

extern "C" __global__ void softmax_bar(const float *x, float *y, int64_t rows, int64_t cols)
{
    __shared__ cuda::barrier<cuda::thread_scope_block> bar;
    __shared__ float red[256];
    const int t = threadIdx.x;
    const float *xr = x + (int64_t)blockIdx.x * cols;
    float *yr = y + (int64_t)blockIdx.x * cols;
    if (t == 0) init(&bar, 256);
    __syncthreads(); /* the barrier is initialised before anyone arrives */

    float m = __int_as_float(0xff800000u);
    for (int64_t c = t; c < cols; c += 256) m = fmaxf(m, xr[c]);
    red[t] = m;
    bar.arrive_and_wait();
    for (int h = 128; h > 0; h >>= 1) {
        if (t < h) red[t] = fmaxf(red[t], red[t + h]);
        bar.arrive_and_wait();
    }
    const float M = red[0];
    bar.arrive_and_wait(); /* red[0] read by all before it is overwritten */

    float s = 0.0f;
    for (int64_t c = t; c < cols; c += 256) s += expf(xr[c] - M);
    red[t] = s;
    bar.arrive_and_wait();
    for (int h = 128; h > 0; h >>= 1) {
        if (t < h) red[t] += red[t + h];
        bar.arrive_and_wait();
    }
    const float inv = 1.0f / red[0];
    for (int64_t c = t; c < cols; c += 256) yr[c] = expf(xr[c] - M) * inv;
}
