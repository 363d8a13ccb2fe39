/* Template transpose: the fast kernel's shared-memory tiles with the tile size TILE and
 * the block height BROWS as parameters. A block of TILE x BROWS threads owns input rows
 * r0 = by * TILE .. r0 + TILE - 1 and columns c0 = bx * TILE .. c0 + TILE - 1; thread
 * (tx, ty) loads a[(r0 + ty + k) * cols + c0 + tx] into tile[ty + k][tx] for k = 0, BROWS,
 * 2 * BROWS, .. < TILE (TILE % BROWS == 0, so the rows 0..TILE-1 are covered exactly
 * once), and after the barrier writes tile[tx][ty + k] to b[(c0 + ty + k) * rows + r0 + tx].
 * Edge elements outside the matrix are skipped in both phases; every element of b is
 * written once. Padding rows to TILE + 1 floats keeps a warp's column read (32 consecutive
 * tx, one j) on 32 different banks, since (tx * (TILE + 1) + j) % 32 = (tx + j) % 32 for
 * TILE a multiple of 32. Shared memory: TILE * (TILE + 1) * 4 bytes (16.6 KiB at 64). */
// kforge:param TILE = 64, 32
// kforge:param BROWS = 4, 8, 16, 32
// kforge:require TILE == 32 || TILE == 64
// kforge:require (BROWS == 4 || BROWS == 8 || BROWS == 16 || BROWS == 32) && TILE * BROWS <= 1024
// kforge:launch kernel=transpose_param grid=((cols+TILE-1)/TILE,(rows+TILE-1)/TILE,1) block=(TILE,BROWS,1) smem=0

#ifndef TILE
#define TILE 64
#endif
#ifndef BROWS
#define BROWS 4
#endif

extern "C" __global__ void __launch_bounds__(TILE * BROWS)
transpose_param(const float *__restrict__ a, float *__restrict__ b, int64_t rows, int64_t cols)
{
    __shared__ float tile[TILE][TILE + 1];
    const int tx = threadIdx.x;
    const int ty = threadIdx.y;
    const int64_t r0 = (int64_t)blockIdx.y * TILE;
    const int64_t c0 = (int64_t)blockIdx.x * TILE;

#pragma unroll
    for (int k = 0; k < TILE; k += BROWS) {
        const int64_t r = r0 + ty + k;
        const int64_t c = c0 + tx;
        if (r < rows && c < cols) {
            tile[ty + k][tx] = a[r * cols + c];
        }
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < TILE; k += BROWS) {
        const int64_t c = c0 + ty + k; /* output row */
        const int64_t r = r0 + tx;     /* output column */
        if (c < cols && r < rows) {
            b[c * rows + r] = tile[tx][ty + k];
        }
    }
}
