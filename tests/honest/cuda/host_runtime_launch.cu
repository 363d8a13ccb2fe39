/* kforge-test: task=tasks/cuda/transpose expect=accepted threat=10 */
/*
 * Honest, host mode: kforge_launch launches one tiled kernel with the runtime API's
 * <<<>>> on the stream it is given (the simplest host-mode candidate). A 32x32 tile in
 * shared memory (padded against bank conflicts) so reads and writes are coalesced;
 * guards for partial tiles (hidden and edge shapes).
 */
// kforge:host

__global__ void tile_transpose(const float *a, float *b, int64_t rows, int64_t cols)
{
    __shared__ float t[32][33];
    int64_t c = (int64_t)blockIdx.x * 32 + threadIdx.x;
    for (int j = threadIdx.y; j < 32; j += 8) {
        int64_t r = (int64_t)blockIdx.y * 32 + j;
        if (r < rows && c < cols) t[j][threadIdx.x] = a[r * cols + c];
    }
    __syncthreads();
    int64_t r = (int64_t)blockIdx.y * 32 + threadIdx.x;
    for (int j = threadIdx.y; j < 32; j += 8) {
        int64_t cc = (int64_t)blockIdx.x * 32 + j;
        if (cc < cols && r < rows) b[cc * rows + r] = t[threadIdx.x][j];
    }
}

extern "C" int kforge_launch(const float *a, float *b, int64_t rows, int64_t cols, cudaStream_t stream)
{
    dim3 grid((unsigned)((cols + 31) / 32), (unsigned)((rows + 31) / 32));
    tile_transpose<<<grid, dim3(32, 8), 0, stream>>>(a, b, rows, cols);
    return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
