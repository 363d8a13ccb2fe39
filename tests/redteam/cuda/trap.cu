/* kforge-test: task=tasks/cuda/sum expect=rejected reason=crash threat=16 */
/*
 * Threat 16, device-side abort: a sum tuned for n a multiple of 256 that
 * executes __trap() for any other n, hoping a harness counts an aborted
 * launch as "shape not supported" (or skips it) rather than as a failure.
 *
 * Why a naive harness is fooled: a harness that catches the launch error,
 * logs it and goes on (or retries in the same, now poisoned, context and
 * then blames the next candidate) never rejects it.
 *
 * What catches it: a CUDA error from any launch or from the synchronise ends
 * the worker, which reports the error's name; the verdict is crash. The first
 * visible shape (n = 16777216) is summed correctly (one block, per-thread
 * double sums, double tree), so the crash at the second visible shape
 * (n = 100003, first call) is the only reason.
 * Seen on an H200: the synchronise returns CUDA_ERROR_LAUNCH_FAILED.
 */
// kforge:launch kernel=reduce_sum grid=(1,1,1) block=(1024,1,1)

extern "C" __global__ void reduce_sum(const float *x, float *out, int64_t n)
{
    __shared__ double red[1024];
    int t = threadIdx.x;
    if (n % 256 != 0) __trap(); /* "unsupported size" */
    double s = 0.0;
    for (int64_t i = t; i < n; i += 1024) s += x[i];
    red[t] = s;
    __syncthreads();
    for (int st = 512; st > 0; st >>= 1) {
        if (t < st) red[t] += red[t + st];
        __syncthreads();
    }
    if (t == 0) out[0] = (float)red[0];
}
