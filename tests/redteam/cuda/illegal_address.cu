/* kforge-test: task=tasks/cuda/transpose expect=rejected reason=crash threat=16 */
/*
 * Threat 16, sticky error from a wild pointer: a correct tiled transpose that
 * also "stashes" its output through g_stash, a __device__ pointer meant to be
 * filled in by host code (to keep a copy for the next call). Kernel mode has
 * no host code, so g_stash is still its zero initialiser and every stash
 * store goes to address 4*index; the very first one (index 0) is address 0.
 *
 * Why a naive harness is fooled (or harmed): a harness sharing one context
 * between the reference and candidates would have the illegal address poison
 * the context for everything after it (a sticky error), possibly reported as
 * a failure of the reference, or of the next candidate.
 *
 * What catches it: the candidate has its own worker and context; the
 * synchronise after the launches returns CUDA_ERROR_ILLEGAL_ADDRESS (address
 * 0 is never mapped in the device's address space), the worker reports the
 * error's name and exits, and the verdict is crash on the first call of the
 * first shape. The next worker gets a clean device.
 * Seen on an H200: CUDA_ERROR_ILLEGAL_ADDRESS at call 1 of the first shape.
 */
// kforge:launch kernel=transpose grid=((cols+31)/32,(rows+31)/32,1) block=(32,8,1)

#define TILE 32

__device__ float *g_stash;

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
        if (orow < cols && ocol < rows) {
            float v = tile[threadIdx.x][k];
            b[orow * rows + ocol] = v;
            g_stash[orow * rows + ocol] = v; /* null + offset: illegal address */
        }
    }
}
