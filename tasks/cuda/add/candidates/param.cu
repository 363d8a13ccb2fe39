/* Template of the fast add (BLOCK threads a block): 8 bf16 per thread, one 16-byte load of a and of b and one store of y (the
 * buffers are 64-byte aligned, so element 8t starts 16-byte aligned), added in float and
 * rounded once, as the reference; the last thread of a length not a multiple of 8 does
 * its tail element by element. A memory-bound stream, 6 bytes per element. */
/* kforge:param BLOCK = 256, 128, 512 */
// kforge:launch kernel=add_fast grid=((n+8*BLOCK-1)/(8*BLOCK),1,1) block=(BLOCK,1,1) smem=0

static __device__ __forceinline__ unsigned int add2(unsigned int p, unsigned int q)
{
    const float lo = __uint_as_float(p << 16) + __uint_as_float(q << 16);
    const float hi = __uint_as_float(p & 0xffff0000u) + __uint_as_float(q & 0xffff0000u);
    const __nv_bfloat162 r = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<const unsigned int *>(&r);
}

extern "C" __global__ void __launch_bounds__(BLOCK)
add_fast(const __nv_bfloat16 *__restrict__ a, const __nv_bfloat16 *__restrict__ b,
         __nv_bfloat16 *__restrict__ y, int64_t n)
{
    const int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int64_t i0 = t * 8;
    if (i0 + 8 <= n) {
        const uint4 p = reinterpret_cast<const uint4 *>(a)[t];
        const uint4 q = reinterpret_cast<const uint4 *>(b)[t];
        reinterpret_cast<uint4 *>(y)[t] = make_uint4(add2(p.x, q.x), add2(p.y, q.y), add2(p.z, q.z), add2(p.w, q.w));
    } else {
        for (int64_t i = i0; i < n; i++) {
            y[i] = __float2bfloat16(__bfloat162float(a[i]) + __bfloat162float(b[i]));
        }
    }
}
