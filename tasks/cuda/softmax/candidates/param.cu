/* Template softmax: the fast kernel (one block per row, the whole row in registers, one
 * read and one write an element, float4 when cols % 4 == 0, warp-shuffle max and sum,
 * __expf) with the block size as a parameter. Each thread holds PER = 4096 / BLOCK
 * floats, so BLOCK * PER = 4096 >= cols (the task's largest) for every BLOCK, and PER is a
 * multiple of 4 (one to eight float4 a thread). Thread t holds float4 j = k * BLOCK + t
 * (vector path) or column c = k * BLOCK + t (scalar path); slots past the row end hold
 * -inf (max unchanged, exp 0) and are never stored. Smaller blocks hold more of the row a
 * thread (more loads in flight, more registers); larger ones spread it over more warps. */
// kforge:param BLOCK = 256, 128, 512, 1024
// kforge:require BLOCK == 128 || BLOCK == 256 || BLOCK == 512 || BLOCK == 1024
// kforge:launch kernel=softmax_param grid=(rows,1,1) block=(BLOCK,1,1) smem=0

#ifndef BLOCK
#define BLOCK 256
#endif

#define PER (4096 / BLOCK) /* floats a thread holds; BLOCK * PER = 4096, the task's largest cols */
#define NWARPS (BLOCK / 32)
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

extern "C" __global__ void __launch_bounds__(BLOCK)
softmax_param(const float *__restrict__ x, float *__restrict__ y, int64_t rows, int64_t cols)
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
            const int j = k * BLOCK + t;
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
            const int c = k * BLOCK + t;
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
            const int j = k * BLOCK + t;
            if (j < n4) {
                y4[j] = make_float4(v[4 * k + 0] * inv, v[4 * k + 1] * inv,
                                    v[4 * k + 2] * inv, v[4 * k + 3] * inv);
            }
        }
    } else {
#pragma unroll
        for (int k = 0; k < PER; k++) {
            const int c = k * BLOCK + t;
            if (c < n) {
                yr[c] = v[k] * inv;
            }
        }
    }
}
