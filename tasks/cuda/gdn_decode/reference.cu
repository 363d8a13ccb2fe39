/* Reference gdn_decode: one Gated DeltaNet decode step (Qwen3-Next style, K = V = 128).
 * For batch row bb and value head h (key head kh = h / (hv / hk)):
 *   q = l2norm(qkv[bb, kh*128 + i]) / sqrt(128), k = l2norm(qkv[bb, hk*128 + kh*128 + i]),
 *   v = qkv[bb, 2*hk*128 + h*128 + j], with l2norm(x) = x / sqrt(sum x^2 + 1e-6);
 *   S = exp(g[bb,h]) * state[bb,h];  kv[j] = sum_i S[i][j] k[i];
 *   delta[j] = (v[j] - kv[j]) * beta[bb,h];  S[i][j] += k[i] delta[j] (written back to state);
 *   o[bb,h,j] = bf16(sum_i S[i][j] q[i])  (round to nearest even).
 * One block of 128 threads per (h, bb) (grid x = h, y = bb); thread j owns column j of the
 * state. q and k are staged in shared memory as float; after the barrier every thread sums
 * the squares itself in i order (identical results in all threads, no reduction tree).
 * Pass 1 computes kv[j] in i order; pass 2 recomputes S[i][j] = alpha * state[i][j] (the
 * same float product as in pass 1), updates it, writes it back and accumulates o in i
 * order. Only thread j touches column j, so the in-place update has no hazard. */

// kforge:launch kernel=gdn_decode_ref grid=(hv,b,1) block=(128,1,1) smem=0

#define DK 128
#define DV 128

extern "C" __global__ void gdn_decode_ref(const __nv_bfloat16 *qkv, const float *g,
                                          const float *beta, float *state, __nv_bfloat16 *o,
                                          int64_t b, int64_t hk, int64_t hv)
{
    __shared__ float qs[DK];
    __shared__ float ks[DK];

    const int64_t h = blockIdx.x;
    const int64_t bb = blockIdx.y;
    const int j = threadIdx.x;
    if (h >= hv || bb >= b) {
        return;   /* never taken: the grid is exactly (hv, b) */
    }
    const int64_t kh = h / (hv / hk);
    const __nv_bfloat16 *row = qkv + bb * (2 * hk + hv) * DK;

    qs[j] = __bfloat162float(row[kh * DK + j]);
    ks[j] = __bfloat162float(row[hk * DK + kh * DK + j]);
    const float vj = __bfloat162float(row[2 * hk * DK + h * DV + j]);
    __syncthreads();

    float ssq = 0.0f, ssk = 0.0f;
    for (int i = 0; i < DK; i++) {
        ssq += qs[i] * qs[i];
        ssk += ks[i] * ks[i];
    }
    const float rq = 1.0f / sqrtf(ssq + 1e-6f);
    const float rk = 1.0f / sqrtf(ssk + 1e-6f);
    const float scale = 0.08838834764831845f;   /* 1 / sqrt(128) */

    const int64_t bh = bb * hv + h;
    const float alpha = expf(g[bh]);
    const float bt = beta[bh];
    float *st = state + bh * (int64_t)(DK * DV);

    float kv = 0.0f;
    for (int i = 0; i < DK; i++) {
        const float s = alpha * st[i * DV + j];
        kv += s * (ks[i] * rk);
    }
    const float delta = (vj - kv) * bt;

    float acc = 0.0f;
    for (int i = 0; i < DK; i++) {
        float s = alpha * st[i * DV + j];
        s += (ks[i] * rk) * delta;
        st[i * DV + j] = s;
        acc += s * ((qs[i] * rq) * scale);
    }
    o[bh * DV + j] = __float2bfloat16(acc);
}
