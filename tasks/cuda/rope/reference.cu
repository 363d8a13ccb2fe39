/* Reference RoPE (interleaved pairs), as the C task's reference.c: for every row and head
 * of x (rows x heads x hd, bf16), pair i (x[2i], x[2i+1]) is rotated by the angle
 * a = pos * theta^(-2i/hd); the angle, its sine and cosine and the rotation in double,
 * each output rounded once to bf16. One thread per pair; the grid covers all pairs. */
// kforge:launch kernel=rope_ref grid=((rows*heads*hd/2+255)/256,1,1) block=(256,1,1) smem=0

extern "C" __global__ void rope_ref(const __nv_bfloat16 *x, __nv_bfloat16 *y, int64_t rows,
                                    int64_t heads, int64_t hd, int64_t pos, float theta)
{
    const int64_t p = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int64_t half = hd / 2;
    if (p >= rows * heads * half) {
        return;
    }
    const int64_t r = p / half, i = p % half;
    const double a = (double)pos * pow((double)theta, -2.0 * (double)i / (double)hd);
    const double c = cos(a), s = sin(a);
    const double x0 = __bfloat162float(x[r * hd + 2 * i]);
    const double x1 = __bfloat162float(x[r * hd + 2 * i + 1]);
    y[r * hd + 2 * i] = __float2bfloat16((float)(x0 * c - x1 * s));
    y[r * hd + 2 * i + 1] = __float2bfloat16((float)(x0 * s + x1 * c));
}
