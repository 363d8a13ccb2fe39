/* Fast softmax: one 256-thread block per row with the whole row held in registers
 * (16 floats a thread; 256 * 16 = 4096 >= cols, the task's largest), so x is read once
 * and y written once: 8 bytes an element, the minimum traffic.
 * Loads and stores are float4 when cols % 4 == 0: every row then starts 16-byte aligned
 * (the buffers are 64-byte aligned and a row is cols * 4 bytes); otherwise they are
 * scalar but still coalesced. Thread t holds float4 j = k * 256 + t (vector path) or
 * column c = k * 256 + t (scalar path), k = 0..; slots past the row end hold -inf, which
 * leaves the max unchanged and gives exp 0 (ex2.approx(-inf) = +0), and are never stored.
 * Max and sum: warp shuffles, then one shared-memory exchange of the 8 warp values, which
 * every thread combines in the same fixed order (deterministic, no second barrier).
 * __expf is off the critical path; its relative error (< ~1e-5 wherever y exceeds atol)
 * is far inside rtol 1e-4.
 * Bandwidth: one read and one write per element, 64 bytes in flight per thread, 32
 * registers so 8 blocks (rows) resident per SM; measured ~90% of copy bandwidth at
 * 4096 x 4096 on an H200 (cold L2), ~55% at 1000 x 3001 (launch latency dominates). */
// kforge:launch kernel=softmax_fast grid=(rows,1,1) block=(256,1,1) smem=0

#define THREADS 256
#define PER 16 /* floats a thread holds; THREADS * PER >= 4096, the task's largest cols */
#define NWARPS (THREADS / 32)
#define NEG_INF (-__int_as_float(0x7f800000))

static __device__ __forceinline__ float warp_max(float v)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    }
    return v;
}

static __device__ __forceinline__ float warp_sum(float v)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        v += __shfl_xor_sync(0xffffffffu, v, o);
    }
    return v;
}

extern "C" __global__ void __launch_bounds__(THREADS)
softmax_fast(const float *__restrict__ x, float *__restrict__ y, int64_t rows, int64_t cols)
{
    __shared__ float red_max[NWARPS];
    __shared__ float red_sum[NWARPS];
    const int t = threadIdx.x;
    const int lane = t & 31;
    const int warp = t >> 5;
    const int n = (int)cols; /* cols <= 4096 */
    const float *xr = x + (int64_t)blockIdx.x * cols;
    float *yr = y + (int64_t)blockIdx.x * cols;
    const bool vec = (n & 3) == 0;

    float v[PER];
    if (vec) {
        const float4 *x4 = reinterpret_cast<const float4 *>(xr);
        const int n4 = n >> 2;
#pragma unroll
        for (int k = 0; k < PER / 4; k++) {
            const int j = k * THREADS + t;
            float4 q = make_float4(NEG_INF, NEG_INF, NEG_INF, NEG_INF);
            if (j < n4) {
                q = x4[j];
            }
            v[4 * k + 0] = q.x;
            v[4 * k + 1] = q.y;
            v[4 * k + 2] = q.z;
            v[4 * k + 3] = q.w;
        }
    } else {
#pragma unroll
        for (int k = 0; k < PER; k++) {
            const int c = k * THREADS + t;
            v[k] = c < n ? xr[c] : NEG_INF;
        }
    }

    float m = v[0];
#pragma unroll
    for (int k = 1; k < PER; k++) {
        m = fmaxf(m, v[k]);
    }
    m = warp_max(m);
    if (lane == 0) {
        red_max[warp] = m;
    }
    __syncthreads();
    float mx = red_max[0];
#pragma unroll
    for (int w = 1; w < NWARPS; w++) {
        mx = fmaxf(mx, red_max[w]);
    }

    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < PER; k++) {
        v[k] = __expf(v[k] - mx);
        s += v[k];
    }
    s = warp_sum(s);
    if (lane == 0) {
        red_sum[warp] = s;
    }
    __syncthreads();
    float total = red_sum[0];
#pragma unroll
    for (int w = 1; w < NWARPS; w++) {
        total += red_sum[w];
    }
    const float inv = 1.0f / total;

    if (vec) {
        float4 *y4 = reinterpret_cast<float4 *>(yr);
        const int n4 = n >> 2;
#pragma unroll
        for (int k = 0; k < PER / 4; k++) {
            const int j = k * THREADS + t;
            if (j < n4) {
                y4[j] = make_float4(v[4 * k + 0] * inv, v[4 * k + 1] * inv,
                                    v[4 * k + 2] * inv, v[4 * k + 3] * inv);
            }
        }
    } else {
#pragma unroll
        for (int k = 0; k < PER; k++) {
            const int c = k * THREADS + t;
            if (c < n) {
                yr[c] = v[k] * inv;
            }
        }
    }
}
