/* Fast RoPE: one thread per 4 pairs (8 bf16, one 16-byte load and store) when hd % 8 == 0
 * (every row of hd bf16 then starts 16-byte aligned), else one thread per pair with
 * 4-byte accesses (hd is even, so a pair is 4-byte aligned). The angles are the
 * reference's, in double (sincos of pos * theta^(-2i/hd)), then rounded to float; the
 * rotation is in float, x0*c - x1*s with FMA, a few float roundings of |x0 c| + |x1 s|
 * (far under the bf16 rounding of y), and each output rounded once to bf16. The double
 * pow and sincos cost a few hundred cycles per thread, hidden behind the loads at these
 * sizes (at most 64 x 64 x 256 elements, 2 MiB). Threads past the end return. */
// kforge:launch kernel=rope_fast grid=((rows*heads*hd/2+1023)/1024,1,1) block=(256,1,1) smem=0

static __device__ __forceinline__ void rot(float x0, float x1, int64_t i, int64_t hd, int64_t pos,
                                           float theta, float *y0, float *y1)
{
    double s, c;
    sincos((double)pos * pow((double)theta, -2.0 * (double)i / (double)hd), &s, &c);
    const float cf = (float)c, sf = (float)s;
    *y0 = fmaf(x0, cf, -x1 * sf);
    *y1 = fmaf(x0, sf, x1 * cf);
}

extern "C" __global__ void __launch_bounds__(256)
rope_fast(const __nv_bfloat16 *__restrict__ x, __nv_bfloat16 *__restrict__ y, int64_t rows,
          int64_t heads, int64_t hd, int64_t pos, float theta)
{
    const int64_t half = hd / 2;
    const int64_t npairs = rows * heads * half;
    const int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if ((hd & 7) == 0) {
        const int64_t p0 = t * 4; /* 4 pairs, never across a row: half % 4 == 0 */
        if (p0 >= npairs) {
            return;
        }
        const int64_t i0 = p0 % half;
        const uint4 v = reinterpret_cast<const uint4 *>(x)[t];
        const unsigned int u[4] = {v.x, v.y, v.z, v.w};
        unsigned int o[4];
#pragma unroll
        for (int q = 0; q < 4; q++) {
            float y0, y1;
            rot(__uint_as_float(u[q] << 16), __uint_as_float(u[q] & 0xffff0000u), i0 + q, hd, pos, theta,
                &y0, &y1);
            const __nv_bfloat162 b = __floats2bfloat162_rn(y0, y1);
            o[q] = *reinterpret_cast<const unsigned int *>(&b);
        }
        reinterpret_cast<uint4 *>(y)[t] = make_uint4(o[0], o[1], o[2], o[3]);
    } else {
        /* one pair a thread: the grid has a quarter of the threads, so loop 4 times */
        for (int q = 0; q < 4; q++) {
            const int64_t p = t + (int64_t)q * gridDim.x * blockDim.x;
            if (p >= npairs) {
                return;
            }
            const __nv_bfloat162 b = reinterpret_cast<const __nv_bfloat162 *>(x)[p];
            float y0, y1;
            rot(__low2float(b), __high2float(b), p % half, hd, pos, theta, &y0, &y1);
            reinterpret_cast<__nv_bfloat162 *>(y)[p] = __floats2bfloat162_rn(y0, y1);
        }
    }
}
