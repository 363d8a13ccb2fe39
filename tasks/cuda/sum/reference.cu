/* Reference sum: out[0] = sum of x[0..n), accumulated in double and rounded once to float.
 * One block of 1024 threads: thread t adds x[t], x[t + 1024], ... into its own double, in
 * batches of 8 independent loads (so a warp has 8 loads in flight, which keeps the single
 * block at a few ms for n = 2^25 instead of tens); out-of-range slots add 0.0, which is
 * exact. A shared-memory tree in double combines the 1024 partial sums; thread 0 writes
 * out[0]. Every element is read exactly once; the order is fixed, so it is deterministic. */
// kforge:launch kernel=sum_ref grid=(1,1,1) block=(1024,1,1) smem=0

#define REF_THREADS 1024
#define REF_BATCH 8

extern "C" __global__ void sum_ref(const float *x, float *out, int64_t n)
{
    __shared__ double part[REF_THREADS];
    const int t = threadIdx.x;

    double acc = 0.0;
    for (int64_t base = 0; base < n; base += (int64_t)REF_THREADS * REF_BATCH) {
        float v[REF_BATCH];
#pragma unroll
        for (int k = 0; k < REF_BATCH; k++) {
            const int64_t i = base + (int64_t)k * REF_THREADS + t;
            v[k] = i < n ? x[i] : 0.0f;
        }
#pragma unroll
        for (int k = 0; k < REF_BATCH; k++) {
            acc += (double)v[k];
        }
    }
    part[t] = acc;
    __syncthreads();
    for (int s = REF_THREADS / 2; s > 0; s /= 2) {
        if (t < s) {
            part[t] += part[t + s];
        }
        __syncthreads();
    }
    if (t == 0) {
        out[0] = (float)part[0];
    }
}
