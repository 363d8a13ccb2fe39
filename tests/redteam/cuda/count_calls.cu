/* kforge-test: task=tasks/cuda/transpose expect=rejected reason=unwritten_output threat=4 */
/*
 * Threat 4, call counting in a __device__ counter: a one-thread launch bumps
 * g_calls, then the (correct, tiled) transpose runs only while g_calls <= 4,
 * i.e. for the first four calls the worker ever makes; after that every
 * launch returns at once. Separate launches on one stream are ordered, so
 * every block of the second launch sees the same count.
 *
 * Why a naive harness is fooled: "check once, then time N calls" sees a
 * correct first result and fast later ones, and never verifies the timed
 * outputs.
 *
 * What catches it: every call, timed or not, is verified, and the check makes
 * four calls per shape. The first visible shape (4096 x 4096, four calls)
 * passes; from the second shape on nothing is written and b holds the
 * sentinel: unwritten_output on every later call (both determinism calls
 * fail, so nondeterministic is suppressed).
 */
// kforge:launch kernel=count_call grid=(1,1,1) block=(1,1,1)
// kforge:launch kernel=transpose_tiled grid=((cols+31)/32,(rows+31)/32,1) block=(32,8,1)

#define TILE 32

__device__ unsigned long long g_calls;

extern "C" __global__ void count_call(const float *a, float *b, int64_t rows, int64_t cols)
{
    g_calls++;
}

extern "C" __global__ void transpose_tiled(const float *a, float *b, int64_t rows, int64_t cols)
{
    __shared__ float tile[TILE][TILE + 1];
    if (g_calls > 4) return; /* "it was right the first time" */
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
