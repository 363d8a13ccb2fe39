/* Reference transpose: b (cols x rows) = transpose of a (rows x cols), both row-major.
 * One thread per element on a 2-D grid of 16 x 16 blocks: thread (c, r) with c < cols and
 * r < rows copies a[r * cols + c] to b[c * rows + r], so every element of b (all
 * cols * rows of them) is written exactly once. Reads are coalesced, writes strided:
 * slow but plainly right. The grid is ((cols + 15) / 16, (rows + 15) / 16); its y extent
 * is at most 8192 / 16 = 512, inside the 65535 limit. */
// kforge:launch kernel=transpose_ref grid=((cols+15)/16,(rows+15)/16,1) block=(16,16,1) smem=0

extern "C" __global__ void transpose_ref(const float *a, float *b, int64_t rows, int64_t cols)
{
    const int64_t c = (int64_t)blockIdx.x * 16 + threadIdx.x;
    const int64_t r = (int64_t)blockIdx.y * 16 + threadIdx.y;
    if (r < rows && c < cols) {
        b[c * rows + r] = a[r * cols + c];
    }
}
