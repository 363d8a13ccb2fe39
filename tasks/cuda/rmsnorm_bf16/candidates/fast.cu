/* Fast rmsnorm on bf16: one 256-thread block per row with the whole row in registers (32
 * values a thread, 256 * 32 = 8192 >= cols, the task's largest), so x is read once and y
 * written once (w, at most 16 KiB, stays in L2). Loads and stores are 16 bytes (8 bf16)
 * when cols % 8 == 0 (every row then starts 16-byte aligned), scalar but coalesced
 * otherwise; slots past the row's end hold 0, add nothing and are never stored. The sum of
 * squares (float, non-negative terms, a tree: ~1e-6 relative) is a warp-shuffle reduction
 * and one shared-memory exchange that every thread combines in the same order
 * (deterministic, one barrier); scale = rsqrtf(ss / cols + eps); y = x * scale * w in
 * float, in the reference's order, rounded once to bf16. */
// kforge:launch kernel=rmsnorm_bf16_fast grid=(rows,1,1) block=(256,1,1) smem=0

#define THREADS 256
#define PER 32
#define NWARPS (THREADS / 32)

extern "C" __global__ void __launch_bounds__(THREADS)
rmsnorm_bf16_fast(const __nv_bfloat16 *__restrict__ x, const __nv_bfloat16 *__restrict__ w,
                  __nv_bfloat16 *__restrict__ y, int64_t rows, int64_t cols, float eps)
{
    __shared__ float red[NWARPS];
    const int t = threadIdx.x;
    const int n = (int)cols;
    const __nv_bfloat16 *xr = x + (int64_t)blockIdx.x * cols;
    __nv_bfloat16 *yr = y + (int64_t)blockIdx.x * cols;
    const bool vec = (n & 7) == 0;

    float v[PER];
    if (vec) {
        const int n8 = n >> 3;
#pragma unroll
        for (int k = 0; k < PER / 8; k++) {
            const int j = k * THREADS + t;
            uint4 q = make_uint4(0u, 0u, 0u, 0u);
            if (j < n8) {
                q = reinterpret_cast<const uint4 *>(xr)[j];
            }
            const unsigned int u[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
            for (int e = 0; e < 4; e++) {
                v[8 * k + 2 * e] = __uint_as_float(u[e] << 16);
                v[8 * k + 2 * e + 1] = __uint_as_float(u[e] & 0xffff0000u);
            }
        }
    } else {
#pragma unroll
        for (int k = 0; k < PER; k++) {
            const int c = k * THREADS + t;
            v[k] = c < n ? __bfloat162float(xr[c]) : 0.0f;
        }
    }
    float ss = 0.0f;
#pragma unroll
    for (int k = 0; k < PER; k++) {
        ss = fmaf(v[k], v[k], ss);
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        ss += __shfl_xor_sync(0xffffffffu, ss, o);
    }
    if ((t & 31) == 0) {
        red[t >> 5] = ss;
    }
    __syncthreads();
    float total = red[0];
#pragma unroll
    for (int i = 1; i < NWARPS; i++) {
        total += red[i];
    }
    const float scale = rsqrtf(total / (float)n + eps);

    if (vec) {
        const int n8 = n >> 3;
#pragma unroll
        for (int k = 0; k < PER / 8; k++) {
            const int j = k * THREADS + t;
            if (j < n8) {
                const uint4 wq = reinterpret_cast<const uint4 *>(w)[j];
                const unsigned int wu[4] = {wq.x, wq.y, wq.z, wq.w};
                unsigned int o[4];
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    const float w0 = __uint_as_float(wu[e] << 16), w1 = __uint_as_float(wu[e] & 0xffff0000u);
                    const __nv_bfloat162 b =
                        __floats2bfloat162_rn(v[8 * k + 2 * e] * scale * w0, v[8 * k + 2 * e + 1] * scale * w1);
                    o[e] = *reinterpret_cast<const unsigned int *>(&b);
                }
                reinterpret_cast<uint4 *>(yr)[j] = make_uint4(o[0], o[1], o[2], o[3]);
            }
        }
    } else {
#pragma unroll
        for (int k = 0; k < PER; k++) {
            const int c = k * THREADS + t;
            if (c < n) {
                yr[c] = __float2bfloat16(v[k] * scale * __bfloat162float(w[c]));
            }
        }
    }
}
