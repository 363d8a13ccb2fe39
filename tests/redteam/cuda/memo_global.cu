/* kforge-test: task=tasks/cuda/sum expect=rejected reason=stale_result threat=2 */
/*
 * Threat 2, memo across calls in __device__ globals, keyed by the input
 * pointer (the data_ptr trick): device globals live in the module, outside
 * every buffer kforge stages, and survive from call to call in the worker's
 * context. When x arrives at an address (and length) seen before, the kernel
 * returns the remembered sum without reading x.
 *
 * Why a naive harness is fooled: a harness that checks once and then times
 * repeated calls on the same input buffers (same pointer, same values) gets
 * the right answer at zero cost on every timed call.
 *
 * What catches it: T2 puts fresh inputs into exactly T1's buffer addresses.
 * The memo hits and returns T1's sum, which is T1's reference output and not
 * T2's (T2's values come from a sub-interval of [0, 1], so its sum differs by
 * far more than rtol): stale_result, the first reason reported. T0, T1 and T3
 * (new addresses) are computed honestly (one block, per-thread double sums,
 * tree in double). Because T3 is right and T2 was not, the determinism pair
 * (same inputs) differs while only one of its calls failed, so
 * nondeterministic is listed after stale_result at every shape (seen on an
 * H200: stale_result at call 3, nondeterministic at call 4).
 */
// kforge:launch kernel=reduce_sum grid=(1,1,1) block=(1024,1,1)

__device__ const float *g_x = 0;
__device__ int64_t g_n = -1;
__device__ float g_v;

extern "C" __global__ void reduce_sum(const float *x, float *out, int64_t n)
{
    __shared__ double red[1024];
    __shared__ int hit;
    int t = threadIdx.x;
    if (t == 0) hit = (g_x == x && g_n == n);
    __syncthreads();
    if (hit) {
        if (t == 0) out[0] = g_v; /* "seen this buffer: same answer" */
        return;
    }
    double s = 0.0;
    for (int64_t i = t; i < n; i += 1024) s += x[i];
    red[t] = s;
    __syncthreads();
    for (int st = 512; st > 0; st >>= 1) {
        if (t < st) red[t] += red[t + st];
        __syncthreads();
    }
    if (t == 0) {
        float v = (float)red[0];
        out[0] = v;
        g_x = x;
        g_n = n;
        g_v = v;
    }
}
