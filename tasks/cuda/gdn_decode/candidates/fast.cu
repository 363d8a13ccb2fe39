/* Fast gdn_decode: one Gated DeltaNet decode step (K = V = 128), the math of the
 * reference (q, k l2-normalised with eps 1e-6, q scaled by 1/sqrt(128), S = exp(g) * state,
 * kv = S^T k, delta = (v - kv) * beta, S += k delta^T written back, o = bf16(S^T q)).
 *
 * Columns j of the state are independent once q and k are normalised, so a block handles
 * JB = 32 columns of one (bb, h): grid (4, hv, b), i.e. 4x the blocks of the reference.
 * Its 256 threads form RG = 32 row groups of 8 threads; thread (rg, cg) owns the 4
 * consecutive columns jb*32 + cg*4 .. +3 of rows rg, rg + 32, rg + 64, rg + 96: 4 float4s of
 * the state, read once (all loads issued first) and written once; 8 consecutive threads
 * cover 128 contiguous bytes of a row. (float4 only when the state pointer is 16-byte
 * aligned, which makes every float4 aligned: row length 128 and column offsets are
 * multiples of 4; scalar otherwise.)
 * Norms: q and k go to shared memory as float; after a barrier warp 0 sums the squares
 * (strided by 32, then an xor butterfly) and publishes them; a second barrier.
 * kv and o: each thread sums its 4 rows for its 4 columns; an xor butterfly over the lanes
 * holding the same columns (offsets 8, 16) combines the 4 row groups of a warp; lanes 0..7
 * (row group 0 of the warp, cg = lane) store the warp sums to shared memory; after a
 * barrier the 8 warp sums are added in warp order. kv and o use separate shared arrays, so
 * no barrier is needed between reading one and writing the other. Every reduction has a
 * fixed order: results are deterministic. (candidates/param.cu is the same kernel with JB
 * and RG as parameters.) */

// kforge:launch kernel=gdn_decode_fast grid=(4,hv,b) block=(256,1,1) smem=0

#define JB 32                /* columns per block; 128 / JB = 4 blocks per (bb, h) */
#define RG 32                /* row groups */
#define DK 128
#define DV 128
#define CW (JB / 4)          /* threads per row group; divides 32 */
#define NT (CW * RG)         /* threads per block; a multiple of 32 */
#define NWARP (NT / 32)
#define RPT (DK / RG)        /* rows per thread */

extern "C" __global__ void __launch_bounds__(NT)
gdn_decode_fast(const __nv_bfloat16 *__restrict__ qkv, const float *__restrict__ g,
                 const float *__restrict__ beta, float *__restrict__ state,
                 __nv_bfloat16 *__restrict__ o, int64_t b, int64_t hk, int64_t hv)
{
    __shared__ float qs[DK];
    __shared__ float ks[DK];
    __shared__ float ss[2];
    __shared__ float red_kv[NWARP][JB];
    __shared__ float red_o[NWARP][JB];

    const int tid = threadIdx.x;
    const int lane = tid % 32;
    const int warp = tid / 32;
    const int cg = tid % CW;
    const int rg = tid / CW;
    const int jl = cg * 4;                                 /* first local column */
    const int64_t h = blockIdx.y;
    const int64_t bb = blockIdx.z;
    const int64_t j = (int64_t)blockIdx.x * JB + jl;      /* first global column */
    const int64_t bh = bb * hv + h;
    float *st = state + bh * (int64_t)(DK * DV);
    const bool vec = (reinterpret_cast<uint64_t>(state) & 15) == 0;

    /* 1. the state: RPT float4s per thread, all loads first */
    float4 s[RPT];
#pragma unroll
    for (int p = 0; p < RPT; p++) {
        const float *src = st + (int64_t)(rg + RG * p) * DV + j;
        if (vec) {
            s[p] = *reinterpret_cast<const float4 *>(src);
        } else {
            s[p] = make_float4(src[0], src[1], src[2], src[3]);
        }
    }

    /* 2. q, k (key head kh) to shared memory; v for my 4 columns */
    const int64_t kh = h / (hv / hk);
    const __nv_bfloat16 *row = qkv + bb * (2 * hk + hv) * DK;
    for (int i = tid; i < DK; i += NT) {
        qs[i] = __bfloat162float(row[kh * DK + i]);
        ks[i] = __bfloat162float(row[hk * DK + kh * DK + i]);
    }
    const __nv_bfloat16 *vrow = row + 2 * hk * DK + h * DV + j;
    const float v[4] = {__bfloat162float(vrow[0]), __bfloat162float(vrow[1]),
                        __bfloat162float(vrow[2]), __bfloat162float(vrow[3])};
    const float alpha = expf(g[bh]);
    const float bt = beta[bh];
    __syncthreads();

    /* 3. sums of squares */
    if (warp == 0) {
        float a = 0.0f, c = 0.0f;
        for (int i = lane; i < DK; i += 32) {
            a += qs[i] * qs[i];
            c += ks[i] * ks[i];
        }
#pragma unroll
        for (int off = 16; off > 0; off >>= 1) {
            a += __shfl_xor_sync(0xffffffffu, a, off);
            c += __shfl_xor_sync(0xffffffffu, c, off);
        }
        if (lane == 0) {
            ss[0] = a;
            ss[1] = c;
        }
    }
    __syncthreads();
    const float rq = 1.0f / sqrtf(ss[0] + 1e-6f);
    const float rk = 1.0f / sqrtf(ss[1] + 1e-6f);
    const float scale = 0.08838834764831845f;   /* 1 / sqrt(128) */

    /* 4. S = alpha * state; kv = S^T k over my rows, then over the block */
    float kn[RPT], qn[RPT];
    float kv[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
    for (int p = 0; p < RPT; p++) {
        const int i = rg + RG * p;
        kn[p] = ks[i] * rk;
        qn[p] = (qs[i] * rq) * scale;
        s[p].x *= alpha;
        s[p].y *= alpha;
        s[p].z *= alpha;
        s[p].w *= alpha;
        kv[0] += s[p].x * kn[p];
        kv[1] += s[p].y * kn[p];
        kv[2] += s[p].z * kn[p];
        kv[3] += s[p].w * kn[p];
    }
#pragma unroll
    for (int off = CW; off < 32; off <<= 1) {
#pragma unroll
        for (int e = 0; e < 4; e++) {
            kv[e] += __shfl_xor_sync(0xffffffffu, kv[e], off);
        }
    }
    if (lane < CW) {
#pragma unroll
        for (int e = 0; e < 4; e++) {
            red_kv[warp][jl + e] = kv[e];
        }
    }
    __syncthreads();
    float delta[4];
#pragma unroll
    for (int e = 0; e < 4; e++) {
        float t = 0.0f;
#pragma unroll
        for (int w = 0; w < NWARP; w++) {
            t += red_kv[w][jl + e];
        }
        delta[e] = (v[e] - t) * bt;
    }

    /* 5. S += k delta^T, written back; o = S^T q */
    float ov[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
    for (int p = 0; p < RPT; p++) {
        s[p].x += kn[p] * delta[0];
        s[p].y += kn[p] * delta[1];
        s[p].z += kn[p] * delta[2];
        s[p].w += kn[p] * delta[3];
        float *dst = st + (int64_t)(rg + RG * p) * DV + j;
        if (vec) {
            *reinterpret_cast<float4 *>(dst) = s[p];
        } else {
            dst[0] = s[p].x;
            dst[1] = s[p].y;
            dst[2] = s[p].z;
            dst[3] = s[p].w;
        }
        ov[0] += s[p].x * qn[p];
        ov[1] += s[p].y * qn[p];
        ov[2] += s[p].z * qn[p];
        ov[3] += s[p].w * qn[p];
    }
#pragma unroll
    for (int off = CW; off < 32; off <<= 1) {
#pragma unroll
        for (int e = 0; e < 4; e++) {
            ov[e] += __shfl_xor_sync(0xffffffffu, ov[e], off);
        }
    }
    if (lane < CW) {
#pragma unroll
        for (int e = 0; e < 4; e++) {
            red_o[warp][jl + e] = ov[e];
        }
    }
    __syncthreads();
    if (tid < JB) {
        float t = 0.0f;
#pragma unroll
        for (int w = 0; w < NWARP; w++) {
            t += red_o[w][tid];
        }
        o[bh * DV + (int64_t)blockIdx.x * JB + tid] = __float2bfloat16(t);
    }
}
