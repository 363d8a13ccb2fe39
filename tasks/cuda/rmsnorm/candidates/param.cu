/* Template rmsnorm: the fast kernel (one block per row, the whole row in registers, one
 * read of x and one write of y, float4 when cols % 4 == 0, warp-shuffle sum of squares,
 * rsqrtf) with the block size as a parameter. Each thread holds PER = 8192 / BLOCK floats,
 * so BLOCK * PER = 8192 >= cols (the task's largest) for every BLOCK, and PER is a multiple
 * of 4 (two to sixteen float4 a thread). Thread t holds float4 j = k * BLOCK + t (vector
 * path) or column c = k * BLOCK + t (scalar path); slots past the row end hold 0 (nothing
 * added to the sum of squares) and are never stored. Smaller blocks give each thread more
 * of the row (more loads in flight, more registers); larger ones spread it over more warps. */
// kforge:param BLOCK = 256, 128, 512, 1024
// kforge:require BLOCK == 128 || BLOCK == 256 || BLOCK == 512 || BLOCK == 1024
// kforge:launch kernel=rmsnorm_param grid=(rows,1,1) block=(BLOCK,1,1) smem=0

#ifndef BLOCK
#define BLOCK 256
#endif

#define PER (8192 / BLOCK) /* floats a thread holds; BLOCK * PER = 8192, the task's largest cols */
#define NWARPS (BLOCK / 32)

static __device__ __forceinline__ float warp_sum(float v)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        v += __shfl_xor_sync(0xffffffffu, v, o);
    }
    return v;
}

extern "C" __global__ void __launch_bounds__(BLOCK)
rmsnorm_param(const float *__restrict__ x, const float *__restrict__ w, float *__restrict__ y,
             int64_t rows, int64_t cols, float eps)
{
    __shared__ float red[NWARPS];
    const int t = threadIdx.x;
    const int lane = t & 31;
    const int warp = t >> 5;
    const int n = (int)cols; /* cols <= 8192 */
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
            float4 q = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
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
            v[k] = c < n ? xr[c] : 0.0f;
        }
    }

    float ss = 0.0f;
#pragma unroll
    for (int k = 0; k < PER; k++) {
        ss = fmaf(v[k], v[k], ss);
    }
    ss = warp_sum(ss);
    if (lane == 0) {
        red[warp] = ss;
    }
    __syncthreads();
    float total = red[0];
#pragma unroll
    for (int i = 1; i < NWARPS; i++) {
        total += red[i];
    }
    const float scale = rsqrtf(total / (float)n + eps);

    if (vec) {
        const float4 *w4 = reinterpret_cast<const float4 *>(w);
        float4 *y4 = reinterpret_cast<float4 *>(yr);
        const int n4 = n >> 2;
#pragma unroll
        for (int k = 0; k < PER / 4; k++) {
            const int j = k * BLOCK + t;
            if (j < n4) {
                const float4 g = w4[j];
                y4[j] = make_float4(v[4 * k + 0] * scale * g.x, v[4 * k + 1] * scale * g.y,
                                    v[4 * k + 2] * scale * g.z, v[4 * k + 3] * scale * g.w);
            }
        }
    } else {
#pragma unroll
        for (int k = 0; k < PER; k++) {
            const int c = k * BLOCK + t;
            if (c < n) {
                yr[c] = v[k] * scale * w[c];
            }
        }
    }
}
