/* Fast sgemm: C (m x n) = A (m x k) * B (k x n), f32 row-major, for any m, n, k >= 0.
 *
 * Block tile 128x128 of C, 256 threads, k stepped by BK = 8. Each thread keeps an 8x8
 * register tile: rows {ty*4 + 0..3} and {64 + ty*4 + 0..3}, columns {tx*4 + 0..3} and
 * {64 + tx*4 + 0..3} of the block tile (tx = tid % 16, ty = tid / 16), so its shared-memory
 * reads are float4s that are conflict-free (B) or broadcast (A).
 *
 * Per k-step each thread loads 4 consecutive elements of A (row tid/2, k cols (tid%2)*4..+3)
 * and 4 of B (k row tid/32, cols (tid%32)*4..+3). Anything outside the matrices is loaded
 * as 0, so a partial tile adds exact zeros; a float4 load is used only when the whole
 * 4-element run is inside the row, the row length is a multiple of 4 and the pointer is
 * 16-byte aligned (then every run starts 16-byte aligned). A is stored transposed
 * (As[k][m], rows padded to 132 floats: conflict-free stores). Shared memory is double
 * buffered: tile t+1 is fetched into registers while tile t is used, then stored into the
 * other buffer; one __syncthreads per tile orders both (the buffer written at step t was
 * last read at step t-1, before that step's barrier). Each C element is the float sum of its
 * k products in k order (fmaf), as in the reference. Stores are bounds-checked per element
 * (float4 when the run is inside C and aligned). */

// kforge:launch kernel=sgemm_tiled grid=((n+127)/128,(m+127)/128,1) block=(256,1,1) smem=0

#define BM 128
#define BN 128
#define BK 8
#define AS_LD (BM + 4)

/* p[row*cols + col .. +3], with 0 for every element outside rows x cols. */
__device__ __forceinline__ float4 load_run4(const float *__restrict__ p, int64_t row, int64_t col,
                                            int64_t rows, int64_t cols, bool vec)
{
    float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (row < rows) {
        const float *src = p + row * cols;
        if (vec && col + 4 <= cols) {
            v = *reinterpret_cast<const float4 *>(src + col);
        } else {
            if (col + 0 < cols) v.x = src[col + 0];
            if (col + 1 < cols) v.y = src[col + 1];
            if (col + 2 < cols) v.z = src[col + 2];
            if (col + 3 < cols) v.w = src[col + 3];
        }
    }
    return v;
}

extern "C" __global__ void __launch_bounds__(256)
sgemm_tiled(const float *__restrict__ a, const float *__restrict__ b, float *__restrict__ c,
            int64_t m, int64_t n, int64_t k)
{
    __shared__ __align__(16) float As[2][BK][AS_LD];
    __shared__ __align__(16) float Bs[2][BK][BN];

    const int tid = threadIdx.x;
    const int tx = tid % 16;
    const int ty = tid / 16;
    const int64_t m0 = (int64_t)blockIdx.y * BM;
    const int64_t n0 = (int64_t)blockIdx.x * BN;

    const int a_row = tid / 2;          /* 0..127 */
    const int a_col = (tid % 2) * 4;    /* 0 or 4 */
    const int b_row = tid / 32;         /* 0..7 */
    const int b_col = (tid % 32) * 4;   /* 0..124 */
    const bool a_vec = (k % 4 == 0) && ((reinterpret_cast<uint64_t>(a) & 15) == 0);
    const bool b_vec = (n % 4 == 0) && ((reinterpret_cast<uint64_t>(b) & 15) == 0);
    const bool c_vec = (n % 4 == 0) && ((reinterpret_cast<uint64_t>(c) & 15) == 0);

    float acc[8][8];
#pragma unroll
    for (int i = 0; i < 8; i++) {
#pragma unroll
        for (int j = 0; j < 8; j++) {
            acc[i][j] = 0.0f;
        }
    }

    const int64_t ktiles = (k + BK - 1) / BK;

    /* tile 0 into buffer 0 */
    float4 ra = load_run4(a, m0 + a_row, a_col, m, k, a_vec);
    float4 rb = load_run4(b, b_row, n0 + b_col, k, n, b_vec);
    As[0][a_col + 0][a_row] = ra.x;
    As[0][a_col + 1][a_row] = ra.y;
    As[0][a_col + 2][a_row] = ra.z;
    As[0][a_col + 3][a_row] = ra.w;
    *reinterpret_cast<float4 *>(&Bs[0][b_row][b_col]) = rb;
    __syncthreads();

    for (int64_t t = 0; t < ktiles; t++) {
        const int cur = (int)(t & 1);
        const bool more = t + 1 < ktiles;
        if (more) {
            const int64_t k0 = (t + 1) * BK;
            ra = load_run4(a, m0 + a_row, k0 + a_col, m, k, a_vec);
            rb = load_run4(b, k0 + b_row, n0 + b_col, k, n, b_vec);
        }
#pragma unroll
        for (int kk = 0; kk < BK; kk++) {
            const float4 a0 = *reinterpret_cast<const float4 *>(&As[cur][kk][ty * 4]);
            const float4 a1 = *reinterpret_cast<const float4 *>(&As[cur][kk][64 + ty * 4]);
            const float4 b0 = *reinterpret_cast<const float4 *>(&Bs[cur][kk][tx * 4]);
            const float4 b1 = *reinterpret_cast<const float4 *>(&Bs[cur][kk][64 + tx * 4]);
            const float ar[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
            const float br[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
            for (int i = 0; i < 8; i++) {
#pragma unroll
                for (int j = 0; j < 8; j++) {
                    acc[i][j] = fmaf(ar[i], br[j], acc[i][j]);
                }
            }
        }
        if (more) {
            const int nxt = cur ^ 1;
            As[nxt][a_col + 0][a_row] = ra.x;
            As[nxt][a_col + 1][a_row] = ra.y;
            As[nxt][a_col + 2][a_row] = ra.z;
            As[nxt][a_col + 3][a_row] = ra.w;
            *reinterpret_cast<float4 *>(&Bs[nxt][b_row][b_col]) = rb;
        }
        __syncthreads();
    }

#pragma unroll
    for (int i = 0; i < 8; i++) {
        const int64_t row = m0 + (i < 4 ? ty * 4 + i : 64 + ty * 4 + (i - 4));
        if (row >= m) {
            continue;
        }
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const int64_t col = n0 + h * 64 + tx * 4;
            float *dst = c + row * n + col;
            const float *v = &acc[i][h * 4];
            if (c_vec && col + 4 <= n) {
                *reinterpret_cast<float4 *>(dst) = make_float4(v[0], v[1], v[2], v[3]);
            } else {
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    if (col + e < n) dst[e] = v[e];
                }
            }
        }
    }
}
