/* Reference add: y[i] = a[i] + b[i], both converted to float (exact), added in float and
 * rounded once to bf16 (round to nearest even). One thread per element. */
// kforge:launch kernel=add_ref grid=((n+255)/256,1,1) block=(256,1,1) smem=0

extern "C" __global__ void add_ref(const __nv_bfloat16 *a, const __nv_bfloat16 *b, __nv_bfloat16 *y,
                                   int64_t n)
{
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = __float2bfloat16(__bfloat162float(a[i]) + __bfloat162float(b[i]));
    }
}
