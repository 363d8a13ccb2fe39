/* Fast transpose: 32 x 32 tiles through shared memory, a block of 32 x 8 threads per
 * tile, each thread moving 4 elements. Block (bx, by) owns input rows r0 = by * 32 ..
 * r0 + 31 and columns c0 = bx * 32 .. c0 + 31. Load: thread (tx, ty) reads
 * a[(r0 + ty + k) * cols + c0 + tx] for k = 0, 8, 16, 24 into tile[ty + k][tx] (a warp
 * reads 32 consecutive floats of one row: 128 bytes, coalesced). After the barrier,
 * store: it writes tile[tx][ty + k] to b[(c0 + ty + k) * rows + r0 + tx], i.e. output row
 * c0 + ty + k (an input column), 32 consecutive floats again. Both phases skip elements
 * outside the matrix (edge tiles), and each in-range (r, c) is loaded into tile[r - r0][c -
 * c0] and stored from there to b[c * rows + r]: every element of b is written once. The
 * +1 padding makes a warp's column read tile[tx][j] hit 32 different banks.
 * Grid ((cols + 31) / 32, (rows + 31) / 32): y is at most 256, inside the 65535 limit.
 * Bandwidth: one read and one write per element, full 128-byte lines both ways, 4 loads in
 * flight per thread and up to 8 blocks per SM: expect ~80-90% of copy bandwidth. */
// kforge:launch kernel=transpose_fast grid=((cols+31)/32,(rows+31)/32,1) block=(32,8,1) smem=0

#define TILE 32
#define BROWS 8

extern "C" __global__ void __launch_bounds__(TILE * BROWS)
transpose_fast(const float *__restrict__ a, float *__restrict__ b, int64_t rows, int64_t cols)
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
