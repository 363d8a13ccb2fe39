/* Fast silu_mul: 8 bf16 per thread, one 16-byte load of g and of u and one store of y
 * (64-byte aligned buffers: element 8t starts 16-byte aligned); silu in float with expf
 * and a true division (a few float roundings, far under the bf16 rounding of y), times u,
 * rounded once; the last thread of a length not a multiple of 8 does its tail element by
 * element. A memory-bound stream, 6 bytes per element. */
// kforge:launch kernel=silu_mul_fast grid=((n+2047)/2048,1,1) block=(256,1,1) smem=0

static __device__ __forceinline__ float silu_u(float g, float u) { return g / (1.0f + expf(-g)) * u; }

static __device__ __forceinline__ unsigned int sm2(unsigned int g, unsigned int u)
{
    const float lo = silu_u(__uint_as_float(g << 16), __uint_as_float(u << 16));
    const float hi = silu_u(__uint_as_float(g & 0xffff0000u), __uint_as_float(u & 0xffff0000u));
    const __nv_bfloat162 r = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<const unsigned int *>(&r);
}

extern "C" __global__ void __launch_bounds__(256)
silu_mul_fast(const __nv_bfloat16 *__restrict__ g, const __nv_bfloat16 *__restrict__ u,
              __nv_bfloat16 *__restrict__ y, int64_t n)
{
    const int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int64_t i0 = t * 8;
    if (i0 + 8 <= n) {
        const uint4 p = reinterpret_cast<const uint4 *>(g)[t];
        const uint4 q = reinterpret_cast<const uint4 *>(u)[t];
        reinterpret_cast<uint4 *>(y)[t] = make_uint4(sm2(p.x, q.x), sm2(p.y, q.y), sm2(p.z, q.z), sm2(p.w, q.w));
    } else {
        for (int64_t i = i0; i < n; i++) {
            y[i] = __float2bfloat16(silu_u(__bfloat162float(g[i]), __bfloat162float(u[i])));
        }
    }
}
