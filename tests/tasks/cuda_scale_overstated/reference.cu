/* y = 2 x. A red-team task for threat #25 on the GPU: its cost model claims 800 bytes
 * per element, 100x the 8 any kernel moves, so an honest candidate's time is below the
 * hard floor that model implies and `kforge bench` must refuse it as impossible
 * (tests/redteam/cuda/overstated_cost.cu). */
// kforge:launch kernel=scale2_ref grid=((n + 255) / 256) block=(256)

extern "C" __global__ void scale2_ref(const float *x, float *y, int64_t n)
{
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i];
}
