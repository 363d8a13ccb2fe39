/* kforge-test: task=tasks/cuda/sum expect=rejected reason=sanitizer sanitize=racecheck */
/*
 * A shared-memory race that happens to give right answers: a correct block reduction
 * (each warp's lane 0 stores its partial in red[w], __syncthreads, thread 0 adds them)
 * in which thread 0 also peeks at red[7], the last warp's slot, BEFORE the barrier, and
 * uses the value only under a condition that never holds (n < 0). The read races with
 * warp 7's store (read-after-write between warps with no barrier between them).
 *
 * Why the normal check passes it: the racy value never reaches the output; every call
 * gives the right sum, and the determinism pair agrees within the task's tolerance.
 *
 * What catches it: racecheck reports "Error: Race reported between Write access ... and
 * Read access ..." for red[7]: reason sanitizer.
 */
// kforge:launch kernel=sum_zero grid=(1,1,1) block=(1,1,1)
// kforge:launch kernel=sum_race grid=(min((n+255)/256,1024),1,1) block=(256,1,1)

extern "C" __global__ void sum_zero(const float *x, float *out, int64_t n)
{
    out[0] = 0.0f;
}

extern "C" __global__ void sum_race(const float *x, float *out, int64_t n)
{
    __shared__ float red[8];
    const int t = threadIdx.x;
    float s = 0.0f;
    for (int64_t i = (int64_t)blockIdx.x * 256 + t; i < n; i += (int64_t)gridDim.x * 256)
        s += x[i];
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if ((t & 31) == 0) red[t >> 5] = s;
    float early = 0.0f;
    if (t == 0) early = ((volatile float *)red)[7]; /* no barrier yet: races with warp 7 */
    __syncthreads();
    if (t == 0) {
        float b = 0.0f;
        for (int w = 0; w < 8; w++) b += red[w];
        if (n < 0) b += early;
        atomicAdd(out, b);
    }
}
