/* Template sum: the one-launch deterministic reduction of fast.cu with its shape as
 * parameters. BLOCK threads per block; RES resident threads per SM (the grid is at most
 * 132 * RES / BLOCK blocks, all resident at once on the H200's 132 SMs by
 * __launch_bounds__(BLOCK, RES / BLOCK), so the grid-stride loop has no tail wave); ILP
 * independent 16-byte loads in flight per thread per iteration; LOAD the load flavour
 * (0 plain, 1 __ldcs: streaming, evict first, 2 __ldg: the read-only path); TAIL 1
 * issues the last, partial group of loads at once (predicated). Block b
 * stores its sum in partials[b]; the last block to finish (a counter bumped after a
 * fence) adds the partials in index order, writes out[0] and resets the counter, so the
 * result is deterministic and no zeroing launch is needed. */
// kforge:param ILP = 4, 8, 2
// kforge:param RES = 1024, 2048
// kforge:param BLOCK = 256, 512, 1024
// kforge:param LOAD = 0, 1, 2
// kforge:param TAIL = 0, 1
// kforge:require BLOCK == 256 || BLOCK == 512 || BLOCK == 1024
// kforge:require RES == 1024 || RES == 2048
// kforge:require BLOCK <= RES
// kforge:require ILP * RES <= 8192
// kforge:launch kernel=sum_param grid=(min((n+4*BLOCK-1)/(4*BLOCK),132*RES/BLOCK),1,1) block=(BLOCK,1,1) smem=0

#ifndef BLOCK
#define BLOCK 256
#endif
#ifndef RES
#define RES 1024
#endif
#ifndef ILP
#define ILP 4
#endif
#ifndef LOAD
#define LOAD 0
#endif
#ifndef TAIL
#define TAIL 0
#endif
#define NWARPS (BLOCK / 32)
#define MAXBLOCKS (132 * 2048 / 256)

__device__ float partials[MAXBLOCKS];
__device__ unsigned int finished;

static __device__ __forceinline__ float4 load4(const float4 *p)
{
#if LOAD == 1
    return __ldcs(p);
#elif LOAD == 2
    return __ldg(p);
#else
    return *p;
#endif
}

static __device__ __forceinline__ float hsum4(float4 q)
{
    return (q.x + q.y) + (q.z + q.w);
}

/* the block's sum of v, valid in thread 0 (red is reused: a barrier first) */
static __device__ __forceinline__ float block_sum(float v, float *red)
{
    const int t = threadIdx.x;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        v += __shfl_xor_sync(0xffffffffu, v, o);
    }
    __syncthreads();
    if ((t & 31) == 0) {
        red[t >> 5] = v;
    }
    __syncthreads();
    float b = 0.0f;
    if (t == 0) {
        b = red[0];
#pragma unroll
        for (int w = 1; w < NWARPS; w++) {
            b += red[w];
        }
    }
    return b;
}

extern "C" __global__ void __launch_bounds__(BLOCK, RES / BLOCK)
sum_param(const float *__restrict__ x, float *__restrict__ out, int64_t n)
{
    __shared__ float red[NWARPS];
    __shared__ bool last;
    const int t = threadIdx.x;
    const int64_t g = (int64_t)blockIdx.x * BLOCK + t;
    const int64_t stride = (int64_t)gridDim.x * BLOCK;
    const int64_t n4 = n >> 2;
    const float4 *x4 = reinterpret_cast<const float4 *>(x);

    float a[ILP];
#pragma unroll
    for (int k = 0; k < ILP; k++) {
        a[k] = 0.0f;
    }
#if TAIL
    /* every group of ILP loads issued together, the last group predicated: the tail
     * costs one memory round trip, not one per leftover float4 */
    for (int64_t i = g; i < n4; i += ILP * stride) {
        float4 q[ILP];
#pragma unroll
        for (int k = 0; k < ILP; k++) {
            const int64_t j = i + k * stride;
            q[k] = j < n4 ? load4(x4 + j) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        }
#pragma unroll
        for (int k = 0; k < ILP; k++) {
            a[k] += hsum4(q[k]);
        }
    }
#else
    int64_t i = g;
    for (; i + (ILP - 1) * stride < n4; i += ILP * stride) {
        float4 q[ILP];
#pragma unroll
        for (int k = 0; k < ILP; k++) {
            q[k] = load4(x4 + i + k * stride);
        }
#pragma unroll
        for (int k = 0; k < ILP; k++) {
            a[k] += hsum4(q[k]);
        }
    }
    for (; i < n4; i += stride) {
        a[0] += hsum4(load4(x4 + i));
    }
#endif
    if (g < n - 4 * n4) {
        a[ILP - 1] += x[4 * n4 + g];
    }
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < ILP; k++) {
        s += a[k];
    }
    const float b = block_sum(s, red);
    if (t == 0) {
        partials[blockIdx.x] = b;
        __threadfence(); /* the partial is visible before the count says so */
        last = atomicAdd(&finished, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (!last) {
        return;
    }
    __threadfence();
    float v = 0.0f;
    for (unsigned k = t; k < gridDim.x; k += BLOCK) {
        v += ((volatile float *)partials)[k];
    }
    const float total = block_sum(v, red);
    if (t == 0) {
        out[0] = total;
        finished = 0; /* every other block has counted: ready for the next launch */
    }
}
