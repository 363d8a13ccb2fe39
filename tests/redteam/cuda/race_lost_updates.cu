/* kforge-test: task=tasks/cuda/sum expect=rejected reason=wrong_result threat=15 */
/*
 * Threat 15, cross-block race: each block reduces 4096 elements correctly,
 * then adds its partial into out[0] with a plain (volatile) read-modify-write
 * instead of atomicAdd, to skip the atomic. The running total is read when the
 * block starts and written back when it ends, so the window spans the whole
 * block.
 *
 * Why a naive harness is fooled: with a single block (small n), or on a tiny
 * test, it is exact; a harness that checks only small sizes, or one lucky
 * run, passes it.
 *
 * Why the loss is certain on an H200: at n = 16777216 there are 4096 blocks;
 * the first wave (132 SMs x up to 8 blocks of 256 threads) starts together,
 * and every one of those blocks reads out[0] (= 0 after the zeroing launch)
 * before any of them has loaded its 16 elements per thread and reduced them.
 * Each lost partial is ~2048, i.e. 2.4e-4 of the total (> rtol 1e-4); in
 * practice almost all of them are lost. At n = 100003 the 25 blocks all run
 * at once and the result is about one block's partial. The output is finite
 * and written: wrong_result. (Both determinism calls fail, so the varying
 * amount lost is not reported as nondeterministic.)
 * Seen on an H200 (a stand-in for the checker, same call protocol): 22449
 * instead of 8388440 at n = 2^24, 2057 instead of 49968 at n = 100003.
 */
// kforge:launch kernel=zero_out grid=(1,1,1) block=(1,1,1)
// kforge:launch kernel=sum_racy grid=((n+4095)/4096,1,1) block=(256,1,1)

extern "C" __global__ void zero_out(const float *x, float *out, int64_t n)
{
    out[0] = 0.0f;
}

extern "C" __global__ void sum_racy(const float *x, float *out, int64_t n)
{
    __shared__ float red[256];
    __shared__ float base;
    volatile float *total = out;
    int t = threadIdx.x;
    if (t == 0) base = *total; /* read the running total now ... */
    int64_t b0 = (int64_t)blockIdx.x * 4096;
    float s = 0.0f;
    for (int k = 0; k < 16; k++) {
        int64_t i = b0 + k * 256 + t;
        if (i < n) s += x[i];
    }
    red[t] = s;
    __syncthreads();
    for (int st = 128; st > 0; st >>= 1) {
        if (t < st) red[t] += red[t + st];
        __syncthreads();
    }
    if (t == 0) *total = base + red[0]; /* ... and write it back: no atomic */
}
