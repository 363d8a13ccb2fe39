/* kforge-test: task=tasks/cuda/transpose expect=accepted threat=10 */
/*
 * Honest: the classic shared-memory transpose (32 x 33 tile: padded against
 * bank conflicts), 32 x 8 threads per tile, __launch_bounds__(256) and
 * #pragma unroll on the fixed four-step loops, grid rounded UP in both
 * dimensions with per-element guards on the load and on the store. Exact
 * (a pure copy), deterministic, correct for every shape from 1 x 1 to
 * 8192 x 2048 and 2048 x 8192 (grid.y <= 256).
 */
// kforge:launch kernel=transpose grid=((cols+31)/32,(rows+31)/32,1) block=(32,8,1)

#define TILE 32
#define ROWS_PER_PASS 8

extern "C" __global__ void __launch_bounds__(256) transpose(const float *a, float *b, int64_t rows,
                                                             int64_t cols)
{
    __shared__ float tile[TILE][TILE + 1];
    int64_t c0 = (int64_t)blockIdx.x * TILE, r0 = (int64_t)blockIdx.y * TILE;
    int tx = threadIdx.x, ty = threadIdx.y;
#pragma unroll
    for (int k = 0; k < TILE; k += ROWS_PER_PASS) {
        int64_t r = r0 + ty + k, c = c0 + tx;
        if (r < rows && c < cols) tile[ty + k][tx] = a[r * cols + c];
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < TILE; k += ROWS_PER_PASS) {
        int64_t orow = c0 + ty + k, ocol = r0 + tx; /* b[orow][ocol] = a[ocol][orow] */
        if (orow < cols && ocol < rows) b[orow * rows + ocol] = tile[tx][ty + k];
    }
}
