/* kforge-test: task=tests/tasks/cuda_scale_overstated expect=bench_rejected reason=timing_mismatch threat=25 */
/*
 * Threat 25, impossible speedups, seen from the task side: an honest grid-stride
 * y = 2 x under a cost model that overstates the bytes 100x. At 33554432 elements
 * the model says 26.8 GB, which no device moves in the ~70 us this kernel takes on
 * an H200, so bench must refuse the time as impossible (timing_mismatch) rather
 * than report a roofline fraction of 100. The same refusal catches a candidate that
 * skips the work on a task whose cost model is right.
 */
// kforge:launch kernel=scale2 grid=(min((n + 255) / 256, 4096)) block=(256)

extern "C" __global__ void scale2(const float *__restrict__ x, float *__restrict__ y, int64_t n)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        y[i] = 2.0f * x[i];
}
