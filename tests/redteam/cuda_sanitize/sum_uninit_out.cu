/* kforge-test: task=tasks/cuda/sum expect=rejected reason=sanitizer sanitize=initcheck */
/*
 * A read of uninitialised global memory whose value is masked: the first launch "zeroes"
 * out[0] by multiplying whatever it holds by 0 (out[0] = out[0] * 0.0f) instead of
 * storing 0. It reads memory the kernel never wrote.
 *
 * Why the normal check passes it: before every call kforge fills each output with a
 * finite sentinel, and a finite value times 0 is +-0, so the sum comes out right. (Were
 * the memory NaN or Inf, the sum would be NaN: a latent bug that depends on what the
 * allocation happened to hold.)
 *
 * What catches it: under --sanitize output buffers are fresh allocations that nothing
 * has written, and initcheck reports "Uninitialized __global__ memory read of size 4
 * bytes" in sum_zero: reason sanitizer.
 */
// kforge:launch kernel=sum_zero grid=(1,1,1) block=(1,1,1)
// kforge:launch kernel=sum_block grid=(min((n+255)/256,1024),1,1) block=(256,1,1)

extern "C" __global__ void sum_zero(const float *x, float *out, int64_t n)
{
    out[0] = out[0] * 0.0f; /* reads out[0] before anything wrote it */
}

extern "C" __global__ void sum_block(const float *x, float *out, int64_t n)
{
    __shared__ float red[8];
    const int t = threadIdx.x;
    float s = 0.0f;
    for (int64_t i = (int64_t)blockIdx.x * 256 + t; i < n; i += (int64_t)gridDim.x * 256)
        s += x[i];
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if ((t & 31) == 0) red[t >> 5] = s;
    __syncthreads();
    if (t == 0) {
        float b = 0.0f;
        for (int w = 0; w < 8; w++) b += red[w];
        atomicAdd(out, b);
    }
}
