/* kforge-test: task=tasks/cuda/attn_decode expect=rejected reason=wrong_result|nonfinite */
/* A planted wrong attention decode: the split kernel of
 * tasks/cuda/attn_decode/candidates/fast.cu attending over positions 0..pos-1 only (the
 * newest key and value are still written into the caches, so the caches match): the
 * newest key weighs about 1/n, which the tolerance (rtol 2e-2, atol 3e-3) must see. */
// kforge:launch kernel=attn_split grid=((pos+64)/64,h,b) block=(128,1,1) smem=0
// kforge:launch kernel=attn_merge grid=(h,b,1) block=(128,1,1) smem=0

#define CH 64   /* keys a block */
#define KPW 16  /* keys a warp */
#define MAXS 32 /* chunks at most: t <= 2048 */
#define PSTR 130 /* a partial: M, L, acc[128] */
#define NEG_INF (-__int_as_float(0x7f800000)) /* NVRTC has no INFINITY */

__device__ float g_part[8 * 64 * MAXS * PSTR];

extern "C" __global__ void __launch_bounds__(128)
attn_split(const __nv_bfloat16 *__restrict__ q, const __nv_bfloat16 *__restrict__ k,
           const __nv_bfloat16 *__restrict__ v, __nv_bfloat16 *kcache, __nv_bfloat16 *vcache,
           __nv_bfloat16 *out, int64_t b, int64_t h, int64_t kvh, int64_t d, int64_t t, int64_t pos)
{
    __shared__ float sm_m[4], sm_l[4], sm_acc[4][128];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int64_t split = blockIdx.x, hh = blockIdx.y, r = blockIdx.z;
    const int64_t group = h / kvh, kv = r * kvh + hh / group;
    const __nv_bfloat16 *kc = kcache + kv * t * d, *vc = vcache + kv * t * d;
    const __nv_bfloat16 *knew = k + kv * d, *vnew = v + kv * d;
    const float scale = rsqrtf((float)d);

    float qf[4];
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const int e = lane + 32 * i;
        qf[i] = e < d ? __bfloat162float(q[(r * h + hh) * d + e]) * scale : 0.0f;
    }
    const int64_t j0 = split * CH + warp * KPW;

    float kf[KPW][4];
#pragma unroll
    for (int jj = 0; jj < KPW; jj++) {
        const int64_t j = j0 + jj;
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const int e = lane + 32 * i;
            kf[jj][i] = 0.0f;
            if (e < d && j < pos) {
                kf[jj][i] = __bfloat162float(kc[j * d + e]);
            } else if (e < d && j == pos) {
                kf[jj][i] = __bfloat162float(knew[e]);
            }
        }
    }
    float s[KPW];
    float mw = NEG_INF;
#pragma unroll
    for (int jj = 0; jj < KPW; jj++) {
        float p = qf[0] * kf[jj][0];
#pragma unroll
        for (int i = 1; i < 4; i++) {
            p = fmaf(qf[i], kf[jj][i], p);
        }
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) {
            p += __shfl_xor_sync(0xffffffffu, p, o);
        }
        s[jj] = j0 + jj < pos ? p : NEG_INF;
        mw = fmaxf(mw, s[jj]);
    }
    float lw = 0.0f, acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    if (mw > NEG_INF) {
#pragma unroll
        for (int jj = 0; jj < KPW; jj++) {
            const int64_t j = j0 + jj;
            const float p = j < pos ? expf(s[jj] - mw) : 0.0f;
            lw += p;
#pragma unroll
            for (int i = 0; i < 4; i++) {
                const int e = lane + 32 * i;
                float vv = 0.0f;
                if (e < d && j < pos) {
                    vv = __bfloat162float(vc[j * d + e]);
                } else if (e < d && j == pos) {
                    vv = __bfloat162float(vnew[e]);
                }
                acc[i] = fmaf(p, vv, acc[i]);
            }
        }
    }
    if (lane == 0) {
        sm_m[warp] = mw;
        sm_l[warp] = lw;
    }
#pragma unroll
    for (int i = 0; i < 4; i++) {
        sm_acc[warp][lane + 32 * i] = acc[i];
    }
    __syncthreads();
    const float M = fmaxf(fmaxf(sm_m[0], sm_m[1]), fmaxf(sm_m[2], sm_m[3])); /* finite: key j0 of warp 0 */
    float c[4], L = 0.0f;
#pragma unroll
    for (int w = 0; w < 4; w++) {
        c[w] = sm_m[w] > NEG_INF ? expf(sm_m[w] - M) : 0.0f;
        L = fmaf(sm_l[w], c[w], L);
    }
    float *part = g_part + ((r * h + hh) * MAXS + split) * PSTR;
    for (int e = threadIdx.x; e < d; e += 128) {
        float a = 0.0f;
#pragma unroll
        for (int w = 0; w < 4; w++) {
            a = fmaf(sm_acc[w][e], c[w], a);
        }
        part[2 + e] = a;
    }
    if (threadIdx.x == 0) {
        part[0] = M;
        part[1] = L;
    }
    /* the new key and value into the caches: once per KV head, by the chunk holding pos */
    if (hh % group == 0 && split == pos / CH) {
        for (int e = threadIdx.x; e < d; e += 128) {
            kcache[(kv * t + pos) * d + e] = knew[e];
            vcache[(kv * t + pos) * d + e] = vnew[e];
        }
    }
}

extern "C" __global__ void __launch_bounds__(128)
attn_merge(const __nv_bfloat16 *__restrict__ q, const __nv_bfloat16 *__restrict__ k,
           const __nv_bfloat16 *__restrict__ v, __nv_bfloat16 *kcache, __nv_bfloat16 *vcache,
           __nv_bfloat16 *out, int64_t b, int64_t h, int64_t kvh, int64_t d, int64_t t, int64_t pos)
{
    const int64_t hh = blockIdx.x, r = blockIdx.y;
    const int nsplit = (int)((pos + CH) / CH);
    const float *part = g_part + (r * h + hh) * MAXS * PSTR;
    float M = NEG_INF;
    for (int c = 0; c < nsplit; c++) {
        M = fmaxf(M, part[c * PSTR]);
    }
    float L = 0.0f;
    for (int c = 0; c < nsplit; c++) {
        L = fmaf(part[c * PSTR + 1], expf(part[c * PSTR] - M), L);
    }
    const float inv = 1.0f / L;
    for (int e = threadIdx.x; e < d; e += 128) {
        float a = 0.0f;
        for (int c = 0; c < nsplit; c++) {
            a = fmaf(part[c * PSTR + 2 + e], expf(part[c * PSTR] - M), a);
        }
        out[(r * h + hh) * d + e] = __float2bfloat16(a * inv);
    }
}
