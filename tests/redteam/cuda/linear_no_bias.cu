/* kforge-test: task=tasks/cuda/linear expect=rejected reason=wrong_result */
/* A planted wrong linear: the fast GEMV of tasks/cuda/linear/candidates/fast.cu with the
 * bias dropped (y = x W^T). Every dot product is right, so only the bias term of the
 * tolerance argument (|bias| ~ 0.8 against 5e-2 + 1e-2 |y| + 3e-5 M) can reject it. */
// kforge:launch kernel=linear_gemv grid=((n+3)/4,1,1) block=(256,1,1) smem=0

#define NW 8 /* warps a block */
#define RW 4 /* columns of y (rows of W) a block */
#define MB 8 /* batch rows per pass over W; MB * RW == 32, one sum a lane */

static __device__ __forceinline__ void unpack8(uint4 v, float *f)
{
    const unsigned int u[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int q = 0; q < 4; q++) {
        f[2 * q] = __uint_as_float(u[q] << 16);
        f[2 * q + 1] = __uint_as_float(u[q] & 0xffff0000u);
    }
}

/* One step of reducing 32 values over a warp's lanes: lanes with bit o set keep the upper
 * half of their first 2o values, the others the lower half, each adding its partner's copy
 * of the half it keeps; after o = 16, 8, 4, 2, 1, lane l holds value l summed over lanes. */
static __device__ __forceinline__ void halve(float *acc, int lane, const int o)
{
    const bool up = (lane & o) != 0;
#pragma unroll
    for (int a = 0; a < o; a++) {
        const float send = up ? acc[a] : acc[a + o];
        const float keep = up ? acc[a + o] : acc[a];
        acc[a] = keep + __shfl_xor_sync(0xffffffffu, send, o);
    }
}

extern "C" __global__ void __launch_bounds__(NW * 32)
linear_gemv(const __nv_bfloat16 *__restrict__ x, const __nv_bfloat16 *__restrict__ w,
            const __nv_bfloat16 *__restrict__ bias, __nv_bfloat16 *__restrict__ y, int64_t m,
            int64_t n, int64_t k)
{
    __shared__ float red[NW][32];
    const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
    const int64_t j0 = (int64_t)blockIdx.x * RW;
    const int nr = (int)(n - j0 < RW ? n - j0 : RW);
    const bool vec = (k & 7) == 0;
    for (int64_t i0 = 0; i0 < m; i0 += MB) {
        const int mb = (int)(m - i0 < MB ? m - i0 : MB);
        float acc[MB * RW];
#pragma unroll
        for (int a = 0; a < MB * RW; a++) {
            acc[a] = 0.0f;
        }
        if (vec) {
            const int64_t k8 = k >> 3;
#pragma unroll 2
            for (int64_t c = t; c < k8; c += NW * 32) {
                float wf[RW][8];
#pragma unroll
                for (int q = 0; q < RW; q++) {
                    uint4 wv = make_uint4(0u, 0u, 0u, 0u);
                    if (q < nr) {
                        wv = __ldg(reinterpret_cast<const uint4 *>(w + (j0 + q) * k) + c);
                    }
                    unpack8(wv, wf[q]);
                }
#pragma unroll
                for (int r = 0; r < MB; r++) {
                    if (r < mb) {
                        float xf[8];
                        unpack8(__ldg(reinterpret_cast<const uint4 *>(x + (i0 + r) * k) + c), xf);
#pragma unroll
                        for (int q = 0; q < RW; q++) {
#pragma unroll
                            for (int e = 0; e < 8; e++) {
                                acc[r * RW + q] = fmaf(xf[e], wf[q][e], acc[r * RW + q]);
                            }
                        }
                    }
                }
            }
        } else {
            for (int64_t p = t; p < k; p += NW * 32) {
                float wf[RW];
#pragma unroll
                for (int q = 0; q < RW; q++) {
                    wf[q] = q < nr ? __bfloat162float(w[(j0 + q) * k + p]) : 0.0f;
                }
#pragma unroll
                for (int r = 0; r < MB; r++) {
                    if (r < mb) {
                        const float xv = __bfloat162float(x[(i0 + r) * k + p]);
#pragma unroll
                        for (int q = 0; q < RW; q++) {
                            acc[r * RW + q] = fmaf(xv, wf[q], acc[r * RW + q]);
                        }
                    }
                }
            }
        }
        /* the 32 sums over the warp's lanes in 31 shuffles */
        halve(acc, lane, 16);
        halve(acc, lane, 8);
        halve(acc, lane, 4);
        halve(acc, lane, 2);
        halve(acc, lane, 1);
        red[warp][lane] = acc[0]; /* lane l: the warp's sum for batch row l / RW, column l % RW */
        __syncthreads();
        if (t < 32) {
            const int r = t / RW, q = t % RW;
            float s = red[0][t];
#pragma unroll
            for (int v = 1; v < NW; v++) {
                s += red[v][t];
            }
            if (r < mb && q < nr) {
                y[(i0 + r) * n + j0 + q] = __float2bfloat16(s);
            }
        }
        __syncthreads(); /* red is reused by the next pass */
    }
}
