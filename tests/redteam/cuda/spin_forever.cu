/* kforge-test: task=tasks/cuda/sum expect=rejected reason=timeout threat=17 */
/*
 * Threats 5 and 17, a kernel that never finishes: a "persistent" sum that
 * writes the correct result and then keeps thread 0 resident, polling a
 * __device__ flag for the next call's work. Nothing ever sets the flag (a
 * later launch could not even start while this one runs on the same stream).
 * The poll reads a volatile and sleeps, so the compiler cannot remove the
 * loop.
 *
 * Why a naive harness is fooled: a harness that reads the output once the
 * result is visible (or waits on an event recorded on another stream, or
 * polls the output in mapped memory) sees the right answer and a short time,
 * while the GPU stays busy forever.
 *
 * What catches it: the worker synchronises the whole context before DONE, so
 * no DONE arrives; at the call's wall deadline the coordinator kills the
 * worker's process group (the driver tears the context down, the next worker
 * gets a clean device): timeout, on the first call.
 * Seen on an H200 (5 s call deadline): timeout at call 1.
 */
// kforge:launch kernel=reduce_sum grid=(1,1,1) block=(1024,1,1)

__device__ volatile int g_go;

extern "C" __global__ void reduce_sum(const float *x, float *out, int64_t n)
{
    __shared__ double red[1024];
    int t = threadIdx.x;
    double s = 0.0;
    for (int64_t i = t; i < n; i += 1024) s += x[i];
    red[t] = s;
    __syncthreads();
    for (int st = 512; st > 0; st >>= 1) {
        if (t < st) red[t] += red[t + st];
        __syncthreads();
    }
    if (t == 0) {
        out[0] = (float)red[0];
        __threadfence_system();
        while (g_go == 0) /* wait for more work: it never comes */
            __nanosleep(1000);
    }
}
