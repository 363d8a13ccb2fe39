/* kforge-test: task=tasks/cuda/transpose expect=rejected reason=unwritten_output threat=1 */
/*
 * Threat 1 with a graph: the first call captures its launch into a CUDA graph, with
 * that call's buffer addresses baked in, and every later call only replays the graph.
 *
 * Why a naive harness is fooled: a harness that calls the candidate on the same
 * buffers every time (and times the replays) sees correct outputs and the low
 * overhead of a graph launch.
 *
 * What catches it: the second call uses buffers at other addresses (the other half of
 * the arena) with fresh inputs; the replay writes the first call's buffers, so the
 * second call's output still holds its sentinel: unwritten_output.
 */
// kforge:host

__global__ void naive_t(const float *a, float *b, int64_t rows, int64_t cols)
{
    int64_t c = (int64_t)blockIdx.x * 16 + threadIdx.x, r = (int64_t)blockIdx.y * 16 + threadIdx.y;
    if (r < rows && c < cols) b[c * rows + r] = a[r * cols + c];
}

extern "C" int kforge_launch(const float *a, float *b, int64_t rows, int64_t cols, cudaStream_t stream)
{
    static cudaGraphExec_t exec;
    if (!exec) {
        cudaGraph_t g;
        if (cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal) != cudaSuccess) return 1;
        dim3 grid((unsigned)((cols + 15) / 16), (unsigned)((rows + 15) / 16));
        naive_t<<<grid, dim3(16, 16), 0, stream>>>(a, b, rows, cols);
        if (cudaStreamEndCapture(stream, &g) != cudaSuccess) return 2;
        if (cudaGraphInstantiate(&exec, g, 0) != cudaSuccess) return 3;
    }
    return cudaGraphLaunch(exec, stream) == cudaSuccess ? 0 : 4;
}
