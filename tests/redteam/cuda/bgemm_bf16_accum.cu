/* kforge-test: task=tasks/cuda/bgemm expect=rejected reason=wrong_result threat=11 */
/*
 * Threat 11, precision downgrade on a bf16 task: inputs and outputs are bf16,
 * as the task says, but the dot products are also ACCUMULATED in bf16
 * (__hfma on __nv_bfloat16, one rounding to 8 significant bits per step)
 * instead of f32. 16x16 shared-memory tiles, one output per thread.
 *
 * Why a naive harness is fooled: "the output is bf16 anyway", a tolerance
 * scaled to the output type, or small-k tests (k = 1 is exact) accept it.
 *
 * What catches it: the task's tolerance (rtol = 1e-2, atol = 5e-2) is set against an
 * f32-accumulated reference. With N(0, 1) inputs the sums have magnitude
 * ~sqrt(k): at k = 777 (visible) the accumulator sits around 16..64 where the
 * bf16 step is 0.125..0.5, so ~777 roundings of that size leave errors of
 * order 1, far above the 0.05 + 0.01*|c| allowed; at k = 4096 far worse:
 * wrong_result on most elements. bf16 has f32's range, so nothing overflows;
 * every element is written; the computation is deterministic: wrong_result is
 * the only reason.
 */
// kforge:launch kernel=bgemm grid=((n+15)/16,(m+15)/16,1) block=(16,16,1)

extern "C" __global__ void bgemm(const __nv_bfloat16 *a, const __nv_bfloat16 *b, __nv_bfloat16 *c,
                                 int64_t m, int64_t n, int64_t k)
{
    __shared__ __nv_bfloat16 ta[16][16], tb[16][16];
    int tx = threadIdx.x, ty = threadIdx.y;
    int64_t row = (int64_t)blockIdx.y * 16 + ty, col = (int64_t)blockIdx.x * 16 + tx;
    const __nv_bfloat16 zero = __float2bfloat16(0.0f);
    __nv_bfloat16 acc = zero; /* the downgrade: a bf16 accumulator */
    for (int64_t k0 = 0; k0 < k; k0 += 16) {
        ta[ty][tx] = (row < m && k0 + tx < k) ? a[row * k + k0 + tx] : zero;
        tb[ty][tx] = (k0 + ty < k && col < n) ? b[(k0 + ty) * n + col] : zero;
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < 16; kk++) acc = __hfma(ta[ty][kk], tb[kk][tx], acc);
        __syncthreads();
    }
    if (row < m && col < n) c[row * n + col] = acc;
}
