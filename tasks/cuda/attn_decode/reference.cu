/* Reference attention decode over a bf16 KV cache (grouped-query), as the C task's
 * reference.c. Launch 1 (one thread per element of the new keys and values) writes k and v
 * into the caches at position pos. Launch 2 (one 128-thread block per batch row and query
 * head; launches run in order, so it sees the new key) computes, in double, the scores
 * s_j = q.k_j / sqrt(d) for j = 0..pos (thread j, j + 128, ...), into dynamic shared
 * memory (8 (t) bytes), their maximum m (thread 0, in j order), p_j = exp(s_j - m) and
 * their sum (thread 0, in j order), and then thread e the output o_e = sum_j p_j v_je /
 * sum_j p_j in j order, rounded once to bf16. Query head hh reads KV head hh / (h / kvh). */
// kforge:launch kernel=attn_cache_ref grid=((b*kvh*d+255)/256,1,1) block=(256,1,1) smem=0
// kforge:launch kernel=attn_decode_ref grid=(h,b,1) block=(128,1,1) smem=8*t+16

extern "C" __global__ void attn_cache_ref(const __nv_bfloat16 *q, const __nv_bfloat16 *k,
                                          const __nv_bfloat16 *v, __nv_bfloat16 *kcache,
                                          __nv_bfloat16 *vcache, __nv_bfloat16 *out, int64_t b,
                                          int64_t h, int64_t kvh, int64_t d, int64_t t, int64_t pos)
{
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= b * kvh * d) {
        return;
    }
    const int64_t row = i / d, e = i % d; /* row: batch * kvh + KV head */
    kcache[(row * t + pos) * d + e] = k[i];
    vcache[(row * t + pos) * d + e] = v[i];
}

extern "C" __global__ void attn_decode_ref(const __nv_bfloat16 *q, const __nv_bfloat16 *k,
                                           const __nv_bfloat16 *v, __nv_bfloat16 *kcache,
                                           __nv_bfloat16 *vcache, __nv_bfloat16 *out, int64_t b,
                                           int64_t h, int64_t kvh, int64_t d, int64_t t, int64_t pos)
{
    extern __shared__ double s[]; /* s[0..pos]: scores, then weights; s[t]: the sum */
    const int64_t hh = blockIdx.x, r = blockIdx.y;
    const int64_t kv = r * kvh + hh / (h / kvh);
    const __nv_bfloat16 *qh = q + (r * h + hh) * d;
    const __nv_bfloat16 *kc = kcache + kv * t * d, *vc = vcache + kv * t * d;
    const double scale = 1.0 / sqrt((double)d);
    for (int64_t j = threadIdx.x; j <= pos; j += blockDim.x) {
        double dot = 0.0;
        for (int64_t e = 0; e < d; e++) {
            dot += (double)__bfloat162float(qh[e]) * (double)__bfloat162float(kc[j * d + e]);
        }
        s[j] = dot * scale;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        double m = -__longlong_as_double(0x7ff0000000000000ll); /* -inf: NVRTC has no INFINITY */
        for (int64_t j = 0; j <= pos; j++) {
            m = s[j] > m ? s[j] : m;
        }
        double sum = 0.0;
        for (int64_t j = 0; j <= pos; j++) {
            s[j] = exp(s[j] - m);
            sum += s[j];
        }
        s[t] = sum;
    }
    __syncthreads();
    for (int64_t e = threadIdx.x; e < d; e += blockDim.x) {
        double acc = 0.0;
        for (int64_t j = 0; j <= pos; j++) {
            acc += s[j] * (double)__bfloat162float(vc[j * d + e]);
        }
        out[(r * h + hh) * d + e] = __float2bfloat16((float)(acc / s[t]));
    }
}
