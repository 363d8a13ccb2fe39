/* kforge-test: task=tasks/cuda/rmsnorm expect=accepted threat=10 */
/*
 * Honest, more than 48 KiB of dynamic shared memory: one 256-thread block per row
 * stages the whole row of x and all of w (up to 8192 floats each: 64 KiB) in dynamic
 * shared memory, sums x^2 from the staged copy in double (the reference's order within
 * a thread, a warp-shuffle tree across threads), then writes y = x * scale * w from
 * shared memory. A launch above 48 KiB needs the kernel's opt-in
 * (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) before it: without it the launch
 * fails with CUDA_ERROR_INVALID_VALUE, a false crash (tests/test_cuda.c cuda/big_smem
 * checks the opt-in without a GPU).
 */
// kforge:launch kernel=rmsnorm_smem grid=(rows,1,1) block=(256,1,1) smem=65536

extern "C" __global__ void rmsnorm_smem(const float *x, const float *w, float *y, int64_t rows,
                                        int64_t cols, float eps)
{
    extern __shared__ float stage[]; /* [0, 8192): the row of x; [8192, 16384): w */
    __shared__ double warp_sum[8];
    const int t = threadIdx.x;
    const int64_t r = blockIdx.x;
    const float *xr = x + r * cols;
    float *yr = y + r * cols;
    float *sx = stage, *sw = stage + 8192;

    double acc = 0.0;
    for (int64_t c = t; c < cols; c += 256) {
        float v = xr[c];
        sx[c] = v;
        sw[c] = w[c];
        acc += (double)v * (double)v;
    }
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
    if ((t & 31) == 0) warp_sum[t >> 5] = acc;
    __syncthreads();
    double ss = 0.0;
    for (int i = 0; i < 8; i++) ss += warp_sum[i];
    const float scale = (float)(1.0 / sqrt(ss / (double)cols + (double)eps));
    for (int64_t c = t; c < cols; c += 256) yr[c] = sx[c] * scale * sw[c];
}
