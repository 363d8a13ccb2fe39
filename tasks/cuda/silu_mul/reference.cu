/* Reference silu_mul: y[i] = g[i] / (1 + exp(-g[i])) * u[i], in double from the bf16 inputs
 * (exact), rounded once to bf16. One thread per element. */
// kforge:launch kernel=silu_mul_ref grid=((n+255)/256,1,1) block=(256,1,1) smem=0

extern "C" __global__ void silu_mul_ref(const __nv_bfloat16 *g, const __nv_bfloat16 *u, __nv_bfloat16 *y,
                                        int64_t n)
{
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        const double gv = __bfloat162float(g[i]), uv = __bfloat162float(u[i]);
        y[i] = __float2bfloat16((float)(gv / (1.0 + exp(-gv)) * uv));
    }
}
