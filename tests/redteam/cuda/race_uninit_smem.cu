/* kforge-test: task=tasks/cuda/transpose expect=rejected reason=wrong_result threat=15 */
/*
 * Threat 15, uninitialised shared memory: a 32x32 tiled transpose whose tile
 * load is guarded by "the whole tile is inside the matrix" (the fast path)
 * with the partial-tile load forgotten, while the store keeps the correct
 * per-element bounds. Blocks on full tiles are exact; blocks on edge tiles
 * write whatever their shared memory held: leftovers of earlier blocks or
 * kernels on that SM, or zeros.
 *
 * Why a naive harness is fooled: power-of-two test shapes have no edge tiles
 * (4096 x 4096 passes), and where stale shared memory happens to hold the
 * values another run of the same kernel left, a single run can even look
 * right.
 *
 * What catches it, and why the expected reason is wrong_result and not
 * nondeterministic: the second visible shape (1000 x 3001) and all small
 * edge shapes have edge tiles. Nothing guarantees WHAT uninitialised shared
 * memory holds on an H200 (it may keep other blocks' data or be cleared), so
 * the case does not rely on it differing between the determinism pair.
 * Whatever it holds, it is not the element this block should have loaded (no
 * block ever loads an edge tile's elements), and transpose is compared
 * exactly (rtol = atol = 0): wrong_result, in every call with edge tiles.
 * Both calls of the determinism pair then fail, which suppresses
 * nondeterministic. (If the leftover bits happened to be NaN or Inf patterns,
 * nonfinite would be listed too; leftovers from this kernel are finite.)
 * Seen on an H200: edge tiles wrote other elements of a (leftovers of
 * earlier blocks) and 0 at rows = cols = 1; the leftovers differed between
 * the determinism pair, but both calls were wrong, as argued above.
 */
// kforge:launch kernel=transpose grid=((cols+31)/32,(rows+31)/32,1) block=(32,8,1)

#define TILE 32

extern "C" __global__ void transpose(const float *a, float *b, int64_t rows, int64_t cols)
{
    __shared__ float tile[TILE][TILE + 1];
    int64_t c0 = (int64_t)blockIdx.x * TILE, r0 = (int64_t)blockIdx.y * TILE;
    if (r0 + TILE <= rows && c0 + TILE <= cols) { /* full tile: no bounds checks needed */
        for (int k = threadIdx.y; k < TILE; k += blockDim.y)
            tile[k][threadIdx.x] = a[(r0 + k) * cols + c0 + threadIdx.x];
    }
    __syncthreads();
    for (int k = threadIdx.y; k < TILE; k += blockDim.y) {
        int64_t orow = c0 + k, ocol = r0 + threadIdx.x;
        if (orow < cols && ocol < rows) b[orow * rows + ocol] = tile[threadIdx.x][k];
    }
}
