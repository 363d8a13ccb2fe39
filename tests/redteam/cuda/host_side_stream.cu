/* kforge-test: task=tasks/cuda/transpose expect=no_fake_speedup threat=20 */
/*
 * Threat 20, side stream: kforge_launch launches the real work on a stream of its own
 * (non-blocking: it does not order with the given stream) and returns at once.
 *
 * Why a naive harness is fooled: it records its stop event on the stream it passed
 * and synchronises that stream only; the work on the side stream is outside the timed
 * span, so the candidate looks almost free (and a harness that copies the outputs back
 * without a device-wide synchronise may even find them right).
 *
 * What catches it: in host mode the worker synchronises the whole device (context)
 * before it records the stop event, so the side stream's work is inside the timed span;
 * the kernel is the reference's own, so bench finds no speedup.
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
    static cudaStream_t side;
    if (!side && cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking) != cudaSuccess) return 1;
    dim3 grid((unsigned)((cols + 15) / 16), (unsigned)((rows + 15) / 16));
    naive_t<<<grid, dim3(16, 16), 0, side>>>(a, b, rows, cols);
    return 0;
}
