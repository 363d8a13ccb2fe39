/* kforge-test: task=tasks/cuda/softmax expect=accepted threat=10 */
/*
 * Honest, cooperative groups: one 256-thread block per row; warp tiles
 * (cg::tiled_partition<32>) reduce with cg::reduce (<cooperative_groups/reduce.h>),
 * the block combines the eight warps' results through shared memory after
 * block.sync(). On CUDA 13 <cooperative_groups.h> includes <cuda/std/...> headers that
 * live in the toolkit's include/cccl, which must be on NVRTC's include path: without it
 * this file failed to compile (a false compile_error; tests/test_cuda.c
 * cuda/toolkit_headers builds it without a GPU).
 */
// kforge:launch kernel=softmax_cg grid=(rows,1,1) block=(256,1,1)
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>

namespace cg = cooperative_groups;

extern "C" __global__ void softmax_cg(const float *x, float *y, int64_t rows, int64_t cols)
{
    __shared__ float part[8];
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    const int t = threadIdx.x;
    const float *xr = x + (int64_t)blockIdx.x * cols;
    float *yr = y + (int64_t)blockIdx.x * cols;

    float m = __int_as_float(0xff800000u);
    for (int64_t c = t; c < cols; c += 256) m = fmaxf(m, xr[c]);
    m = cg::reduce(warp, m, cg::greater<float>());
    if (warp.thread_rank() == 0) part[warp.meta_group_rank()] = m;
    block.sync();
    float M = part[0];
    for (int i = 1; i < 8; i++) M = fmaxf(M, part[i]);
    block.sync(); /* everyone has read part[] before it is reused */

    float s = 0.0f;
    for (int64_t c = t; c < cols; c += 256) s += expf(xr[c] - M);
    s = cg::reduce(warp, s, cg::plus<float>());
    if (warp.thread_rank() == 0) part[warp.meta_group_rank()] = s;
    block.sync();
    float S = 0.0f;
    for (int i = 0; i < 8; i++) S += part[i];
    const float inv = 1.0f / S;
    for (int64_t c = t; c < cols; c += 256) yr[c] = expf(xr[c] - M) * inv;
}
