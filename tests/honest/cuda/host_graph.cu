/* kforge-test: task=tasks/cuda/transpose expect=accepted threat=19 */
/*
 * Honest, host mode with a CUDA graph: the launch is captured on the given stream
 * (thread-local capture mode) into a graph, instantiated, and replayed with
 * cudaGraphLaunch. The graph is keyed by the buffers and the shape: when any of them
 * changes it is captured again, so a replay always reads the current inputs and writes
 * the current output. Accepted; with CUPTI, bench reports launch_mode "graph" and marks
 * the comparison with a kernel-mode baseline unfair (docs/cuda.md).
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
    static const float *ka;
    static float *kb;
    static int64_t kr = -1, kc = -1;
    if (!exec || ka != a || kb != b || kr != rows || kc != cols) {
        if (exec) cudaGraphExecDestroy(exec);
        exec = 0;
        cudaGraph_t g;
        if (cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal) != cudaSuccess) return 1;
        dim3 grid((unsigned)((cols + 15) / 16), (unsigned)((rows + 15) / 16));
        naive_t<<<grid, dim3(16, 16), 0, stream>>>(a, b, rows, cols);
        if (cudaStreamEndCapture(stream, &g) != cudaSuccess) return 2;
        if (cudaGraphInstantiate(&exec, g, 0) != cudaSuccess) return 3;
        cudaGraphDestroy(g);
        ka = a, kb = b, kr = rows, kc = cols;
    }
    return cudaGraphLaunch(exec, stream) == cudaSuccess ? 0 : 4;
}
