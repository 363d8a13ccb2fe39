/* Template sum: the fast kernel (a one-thread launch sets out[0] = 0, then a grid-stride
 * reduction with four independent float4 loads per iteration, warp shuffles, and ONE
 * atomicAdd per block) with the block size BLOCK and the resident threads per SM RES as
 * parameters. The grid is min(blocks for one float4 a thread, 132 * RES / BLOCK): at most
 * RES / BLOCK blocks per SM of the H200's 132, and __launch_bounds__(BLOCK, RES / BLOCK)
 * makes that many fit at once (RES = 2048 caps the registers at 32), so the grid-stride
 * loop has no tail wave. More blocks mean more float atomic adds: at most 132 * 2048 / 256
 * = 1056 (BLOCK >= 256 for that reason), a relative rounding error of at most ~6e-5 for
 * these positive inputs, ~1e-6 in practice, inside rtol 1e-4. */
// kforge:param BLOCK = 256, 512, 1024
// kforge:param RES = 1024, 2048
// kforge:require BLOCK == 256 || BLOCK == 512 || BLOCK == 1024
// kforge:require RES == 1024 || RES == 2048
// kforge:launch kernel=sum_zero grid=(1,1,1) block=(1,1,1) smem=0
// kforge:launch kernel=sum_param grid=(min((n+4*BLOCK-1)/(4*BLOCK),132*RES/BLOCK),1,1) block=(BLOCK,1,1) smem=0

#ifndef BLOCK
#define BLOCK 256
#endif
#ifndef RES
#define RES 1024
#endif
#define NWARPS (BLOCK / 32)

extern "C" __global__ void sum_zero(const float *__restrict__ x, float *__restrict__ out, int64_t n)
{
    out[0] = 0.0f;
}

static __device__ __forceinline__ float hsum4(float4 q)
{
    return (q.x + q.y) + (q.z + q.w);
}

extern "C" __global__ void __launch_bounds__(BLOCK, RES / BLOCK)
sum_param(const float *__restrict__ x, float *__restrict__ out, int64_t n)
{
    __shared__ float red[NWARPS];
    const int t = threadIdx.x;
    const int64_t g = (int64_t)blockIdx.x * BLOCK + t;
    const int64_t stride = (int64_t)gridDim.x * BLOCK;
    const int64_t n4 = n >> 2;
    const float4 *x4 = reinterpret_cast<const float4 *>(x);

    float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
    int64_t i = g;
    for (; i + 3 * stride < n4; i += 4 * stride) {
        const float4 q0 = x4[i];
        const float4 q1 = x4[i + stride];
        const float4 q2 = x4[i + 2 * stride];
        const float4 q3 = x4[i + 3 * stride];
        a0 += hsum4(q0);
        a1 += hsum4(q1);
        a2 += hsum4(q2);
        a3 += hsum4(q3);
    }
    for (; i < n4; i += stride) {
        a0 += hsum4(x4[i]);
    }
    if (g < n - 4 * n4) {
        a1 += x[4 * n4 + g];
    }
    float s = (a0 + a1) + (a2 + a3);

#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        s += __shfl_xor_sync(0xffffffffu, s, o);
    }
    if ((t & 31) == 0) {
        red[t >> 5] = s;
    }
    __syncthreads();
    if (t == 0) {
        float b = red[0];
#pragma unroll
        for (int w = 1; w < NWARPS; w++) {
            b += red[w];
        }
        atomicAdd(out, b);
    }
}
