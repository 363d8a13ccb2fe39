/* kforge-test: task=tasks/cuda/transpose expect=no_fake_speedup threat=20 */
/*
 * Threat 20, other streams: kforge_launch ignores its stream and launches on the
 * per-thread default stream (cudaStreamPerThread, which does not order with other
 * streams), then copies nothing and returns.
 *
 * Why a naive harness is fooled: its stop event on the given stream does not wait for
 * the per-thread stream's work.
 *
 * What catches it: the device-wide synchronise before the stop event (host mode's
 * timing protocol) waits for every stream of the context; the kernel is the
 * reference's, so there is nothing to gain.
 */
// kforge:host

__global__ void naive_t(const float *a, float *b, int64_t rows, int64_t cols)
{
    int64_t c = (int64_t)blockIdx.x * 16 + threadIdx.x, r = (int64_t)blockIdx.y * 16 + threadIdx.y;
    if (r < rows && c < cols) b[c * rows + r] = a[r * cols + c];
}

extern "C" int kforge_launch(const float *a, float *b, int64_t rows, int64_t cols, cudaStream_t stream)
{
    (void)stream;
    dim3 grid((unsigned)((cols + 15) / 16), (unsigned)((rows + 15) / 16));
    naive_t<<<grid, dim3(16, 16), 0, cudaStreamPerThread>>>(a, b, rows, cols);
    return 0;
}
