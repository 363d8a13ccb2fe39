/* kforge-test: task=tasks/cuda/transpose expect=no_fake_speedup threat=5 */
/*
 * Threat 5, work after return: kforge_launch hands the launch to a detached host
 * thread and returns at once; the thread launches the kernel (on its own
 * non-blocking stream) whenever it gets to run.
 *
 * Why a naive harness is fooled: the call returns in microseconds; the kernel runs
 * after the stop event, and a harness that reads the outputs later finds them done.
 *
 * What catches it: a launch the thread makes before the worker's device-wide
 * synchronise is inside the timed span; one it makes after finds the outputs already
 * copied back (still holding their sentinels: unwritten_output), and the worker is
 * frozen (SIGSTOP) with all its threads at DONE. Either way no fake speedup: rejected,
 * or timed in full.
 */
// kforge:host
#include <thread>

__global__ void naive_t(const float *a, float *b, int64_t rows, int64_t cols)
{
    int64_t c = (int64_t)blockIdx.x * 16 + threadIdx.x, r = (int64_t)blockIdx.y * 16 + threadIdx.y;
    if (r < rows && c < cols) b[c * rows + r] = a[r * cols + c];
}

extern "C" int kforge_launch(const float *a, float *b, int64_t rows, int64_t cols, cudaStream_t stream)
{
    (void)stream;
    std::thread([=] {
        cudaStream_t s;
        cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
        dim3 grid((unsigned)((cols + 15) / 16), (unsigned)((rows + 15) / 16));
        naive_t<<<grid, dim3(16, 16), 0, s>>>(a, b, rows, cols);
        cudaStreamSynchronize(s);
        cudaStreamDestroy(s);
    }).detach();
    return 0;
}
