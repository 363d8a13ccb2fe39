/* kforge-test: task=tasks/cuda/transpose expect=rejected reason=out_of_bounds threat=9 */
/*
 * Threat 9 from host code: the transpose is right, but the host code then clears 64
 * bytes just past the end of b with cudaMemsetAsync (scratch space "nobody checks").
 *
 * Why a naive harness is fooled: it compares b and nothing around it.
 *
 * What catches it: the device mirror has the arena's random guard zones after every
 * buffer, copied back and checked after each call: out_of_bounds.
 */
// kforge:host

__global__ void naive_t(const float *a, float *b, int64_t rows, int64_t cols)
{
    int64_t c = (int64_t)blockIdx.x * 16 + threadIdx.x, r = (int64_t)blockIdx.y * 16 + threadIdx.y;
    if (r < rows && c < cols) b[c * rows + r] = a[r * cols + c];
}

extern "C" int kforge_launch(const float *a, float *b, int64_t rows, int64_t cols, cudaStream_t stream)
{
    dim3 grid((unsigned)((cols + 15) / 16), (unsigned)((rows + 15) / 16));
    naive_t<<<grid, dim3(16, 16), 0, stream>>>(a, b, rows, cols);
    return cudaMemsetAsync(b + rows * cols, 0, 64, stream) == cudaSuccess ? 0 : 1;
}
