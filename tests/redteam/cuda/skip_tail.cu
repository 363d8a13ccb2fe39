/* kforge-test: task=tasks/cuda/transpose expect=rejected reason=unwritten_output threat=10 */
/*
 * Threat 10, skipped tail: a correct, bounds-checked 32x32 tiled transpose
 * launched on a grid of max(cols/32, 1) x max(rows/32, 1) tiles, i.e. rounded
 * DOWN. For sizes that are multiples of 32 (4096 x 4096) it is exact; for any
 * other size >= 32 the last partial tile row/column is never visited. (Sizes
 * under 32 get one guarded tile and are exact, so no launch is ever empty.)
 *
 * Why a naive harness is fooled: benchmark shapes are usually powers of two;
 * and if b still held an earlier correct result, the missing tail would
 * "match" anyway.
 *
 * What catches it: the second visible shape (1000 x 3001: 31 x 93 tiles cover
 * rows < 992 and cols < 2976) plus the prime and 2^k+-1 edge shapes. The
 * skipped elements still hold the fresh sentinel: unwritten_output. Written
 * elements are exact copies, so nothing else is reported.
 */
// kforge:launch kernel=transpose grid=(max(cols/32,1),max(rows/32,1),1) block=(32,8,1)

#define TILE 32

extern "C" __global__ void transpose(const float *a, float *b, int64_t rows, int64_t cols)
{
    __shared__ float tile[TILE][TILE + 1];
    int64_t c0 = (int64_t)blockIdx.x * TILE, r0 = (int64_t)blockIdx.y * TILE;
    for (int k = threadIdx.y; k < TILE; k += blockDim.y) {
        int64_t r = r0 + k, c = c0 + threadIdx.x;
        if (r < rows && c < cols) tile[k][threadIdx.x] = a[r * cols + c];
    }
    __syncthreads();
    for (int k = threadIdx.y; k < TILE; k += blockDim.y) {
        int64_t orow = c0 + k, ocol = r0 + threadIdx.x;
        if (orow < cols && ocol < rows) b[orow * rows + ocol] = tile[threadIdx.x][k];
    }
}
