/* kforge-test: task=tasks/cuda/bgemm expect=accepted threat=11 */
/*
 * Honest twin of tests/redteam/cuda/bgemm_bf16_accum.cu: the same 16 x 16
 * shared-memory tiling over bf16 inputs, but each product is widened to f32
 * and accumulated in f32, rounded to bf16 once at the end. Against an
 * f32-accumulated reference the two f32 sums differ by ~1e-6 relative, so the
 * rounded bf16 values agree or differ by one bf16 step (<= 2^-7 relative),
 * inside rtol = 1e-2; cancellation near zero leaves absolute errors ~1e-4,
 * inside atol = 5e-2. (atol was 1e-2 until the H200 showed the bundled
 * tensor-core template 0.0105 off on one near-zero element of 16.7M at
 * k = 4096: the tensor cores' f32 accumulation rounds differently, and
 * the partial sums reach a few hundred.) Zero-padded tails for every m, n, k from 1 up.
 * Deterministic.
 */
// kforge:launch kernel=bgemm grid=((n+15)/16,(m+15)/16,1) block=(16,16,1)

extern "C" __global__ void bgemm(const __nv_bfloat16 *a, const __nv_bfloat16 *b, __nv_bfloat16 *c,
                                 int64_t m, int64_t n, int64_t k)
{
    __shared__ float ta[16][17], tb[16][17];
    int tx = threadIdx.x, ty = threadIdx.y;
    int64_t row = (int64_t)blockIdx.y * 16 + ty, col = (int64_t)blockIdx.x * 16 + tx;
    float acc = 0.0f;
    for (int64_t k0 = 0; k0 < k; k0 += 16) {
        ta[ty][tx] = (row < m && k0 + tx < k) ? __bfloat162float(a[row * k + k0 + tx]) : 0.0f;
        tb[ty][tx] = (k0 + ty < k && col < n) ? __bfloat162float(b[(k0 + ty) * n + col]) : 0.0f;
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < 16; kk++) acc = fmaf(ta[ty][kk], tb[kk][tx], acc);
        __syncthreads();
    }
    if (row < m && col < n) c[row * n + col] = __float2bfloat16(acc);
}
