/* kforge-test: task=tasks/cuda/linear expect=rejected reason=wrong_result */
/* A planted wrong linear: the fast GEMV of tasks/cuda/linear/candidates/fast.cu with the
 * bias dropped (y = x W^T). Every dot product is right, so only the bias term of the
 * tolerance argument (|bias| ~ 0.7 against 1e-2 |y| + 2e-5 M) can reject it. */
// kforge:launch kernel=linear_gemv grid=((n+7)/8,1,1) block=(256,1,1) smem=0

#define WARPS 8
#define MB 8 /* batch rows per pass over W */

static __device__ __forceinline__ void unpack8(uint4 v, float *f)
{
    const unsigned int u[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int q = 0; q < 4; q++) {
        f[2 * q] = __uint_as_float(u[q] << 16);
        f[2 * q + 1] = __uint_as_float(u[q] & 0xffff0000u);
    }
}

extern "C" __global__ void __launch_bounds__(WARPS * 32)
linear_gemv(const __nv_bfloat16 *__restrict__ x, const __nv_bfloat16 *__restrict__ w,
            const __nv_bfloat16 *__restrict__ bias, __nv_bfloat16 *__restrict__ y, int64_t m,
            int64_t n, int64_t k)
{
    const int lane = threadIdx.x & 31;
    const int64_t j = (int64_t)blockIdx.x * WARPS + (threadIdx.x >> 5);
    if (j >= n) {
        return; /* the whole warp: j is per warp */
    }
    const __nv_bfloat16 *wr = w + j * k;
    const bool vec = (k & 7) == 0;
    const float b = __bfloat162float(bias[j]);
    for (int64_t i0 = 0; i0 < m; i0 += MB) {
        const int mb = (int)(m - i0 < MB ? m - i0 : MB);
        float acc[MB];
#pragma unroll
        for (int r = 0; r < MB; r++) {
            acc[r] = 0.0f;
        }
        if (vec) {
            const int64_t k8 = k >> 3;
            const uint4 *w8 = reinterpret_cast<const uint4 *>(wr);
#pragma unroll 4
            for (int64_t c = lane; c < k8; c += 32) {
                float wf[8];
                unpack8(__ldg(w8 + c), wf);
#pragma unroll
                for (int r = 0; r < MB; r++) {
                    if (r < mb) {
                        float xf[8];
                        unpack8(__ldg(reinterpret_cast<const uint4 *>(x + (i0 + r) * k) + c), xf);
#pragma unroll
                        for (int q = 0; q < 8; q++) {
                            acc[r] = fmaf(xf[q], wf[q], acc[r]);
                        }
                    }
                }
            }
        } else {
            for (int64_t p = lane; p < k; p += 32) {
                const float wf = __bfloat162float(wr[p]);
#pragma unroll
                for (int r = 0; r < MB; r++) {
                    if (r < mb) {
                        acc[r] = fmaf(__bfloat162float(x[(i0 + r) * k + p]), wf, acc[r]);
                    }
                }
            }
        }
#pragma unroll
        for (int r = 0; r < MB; r++) {
            float v = acc[r];
#pragma unroll
            for (int o = 16; o > 0; o >>= 1) {
                v += __shfl_xor_sync(0xffffffffu, v, o);
            }
            if (lane == 0 && r < mb) {
                y[(i0 + r) * n + j] = __float2bfloat16(v);
            }
        }
    }
}
