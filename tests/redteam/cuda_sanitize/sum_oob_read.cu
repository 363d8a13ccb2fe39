/* kforge-test: task=tasks/cuda/sum expect=rejected reason=sanitizer sanitize=memcheck */
/*
 * An out-of-bounds READ that does not change the result: a correct grid-stride sum whose
 * first thread also "prefetches" x[n], one element past the end of x, and uses it only
 * under a condition that never holds (n < 0). The load is volatile, so the compiler keeps
 * it.
 *
 * Why the normal check passes it: reads are harmless there. x[n] lies in the guard zone
 * after x inside the worker's device mirror (random bytes, mapped), nothing faults, the
 * value is never used, and the guard is unchanged (it is only read).
 *
 * What catches it: under --sanitize every buffer is a device allocation of its own,
 * exactly n * 4 bytes, so memcheck reports "Invalid __global__ read of size 4 bytes ...
 * 0 bytes after the nearest allocation": reason sanitizer, on every shape.
 */
// kforge:launch kernel=sum_zero grid=(1,1,1) block=(1,1,1)
// kforge:launch kernel=sum_oob grid=(min((n+255)/256,1024),1,1) block=(256,1,1)

extern "C" __global__ void sum_zero(const float *x, float *out, int64_t n)
{
    out[0] = 0.0f;
}

extern "C" __global__ void sum_oob(const float *x, float *out, int64_t n)
{
    __shared__ float red[8];
    const int t = threadIdx.x;
    float s = 0.0f;
    for (int64_t i = (int64_t)blockIdx.x * 256 + t; i < n; i += (int64_t)gridDim.x * 256)
        s += x[i];
    if (blockIdx.x == 0 && t == 0) {
        float past = ((const volatile float *)x)[n]; /* one past the end */
        if (n < 0 && __float_as_uint(past) == 0x7fbadbadu) s += past;
    }
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if ((t & 31) == 0) red[t >> 5] = s;
    __syncthreads();
    if (t == 0) {
        float b = 0.0f;
        for (int w = 0; w < 8; w++) b += red[w];
        atomicAdd(out, b);
    }
}
