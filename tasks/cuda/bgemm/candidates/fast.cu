/* Fast bgemm: C (m x n) = A (m x k) * B (k x n), bf16 row-major, f32 accumulation on the
 * tensor cores (WMMA 16x16x16 bf16 -> f32), one rounding to bf16 (__float2bfloat16, round
 * to nearest even) at the end. Correct for any m, n, k >= 0.
 *
 * Block tile 128x128 of C, 256 threads = 8 warps in a 2 x 4 grid, each warp a 64x32 tile
 * (4 x 2 accumulator fragments). k is stepped by BK = 32 (two 16-deep WMMA steps).
 * Loading: the A slice (128 x 32) and the B slice (32 x 128) are each 512 runs of 8
 * consecutive bf16; thread tid loads runs tid and tid + 256. A run is one 16-byte load only
 * when it lies wholly inside its row, the row length is a multiple of 8 and the pointer is
 * 16-byte aligned (then every run start is 16-byte aligned); otherwise it is loaded element
 * by element, and every element outside the matrix is 0 (zero fill), so partial tiles add
 * exact zeros. Shared rows are padded by 8 bf16 (A: 40, B: 136 elements: 16-byte aligned
 * rows, 32-byte aligned fragment pointers, conflict-free 8-row accesses). Shared memory is
 * double buffered: slice t+1 is fetched into registers while slice t is multiplied, then
 * stored into the other buffer; one __syncthreads per slice orders both (the buffer written
 * at step t was last read at step t-1, before that step's barrier).
 * Epilogue: after the last barrier the shared buffers are free; each warp stores one
 * fragment at a time into its own 16x16 f32 scratch (1 KB of the same array), and every
 * lane rounds and writes 8 elements of one row, skipping those outside C. */

// kforge:launch kernel=bgemm_wmma grid=((n+127)/128,(m+127)/128,1) block=(256,1,1) smem=0

#include <mma.h>

#define BM 128
#define BN 128
#define BK 32
#define AS_LD (BK + 8)
#define BS_LD (BN + 8)
#define A_TILE (BM * AS_LD)          /* elements per A buffer: 5120 (10240 bytes) */
#define B_TILE (BK * BS_LD)          /* elements per B buffer: 4352 (8704 bytes) */
#define SMEM_BYTES (2 * (A_TILE + B_TILE) * 2)

/* The 8 bf16 p[row*cols + col .. +7] as raw bits (element e in bits 16*(e%2) of word e/2,
 * i.e. memory order), with 0 for every element outside rows x cols. */
__device__ __forceinline__ uint4 load_run8(const __nv_bfloat16 *__restrict__ p, int64_t row,
                                           int64_t col, int64_t rows, int64_t cols, bool vec)
{
    uint4 v = make_uint4(0u, 0u, 0u, 0u);
    if (row < rows) {
        const __nv_bfloat16 *src = p + row * cols;
        if (vec && col + 8 <= cols) {
            v = *reinterpret_cast<const uint4 *>(src + col);
        } else {
            unsigned int h[8];
#pragma unroll
            for (int e = 0; e < 8; e++) {
                h[e] = col + e < cols ? (unsigned int)__bfloat16_as_ushort(src[col + e]) : 0u;
            }
            v.x = h[0] | (h[1] << 16);
            v.y = h[2] | (h[3] << 16);
            v.z = h[4] | (h[5] << 16);
            v.w = h[6] | (h[7] << 16);
        }
    }
    return v;
}

extern "C" __global__ void __launch_bounds__(256)
bgemm_wmma(const __nv_bfloat16 *__restrict__ a, const __nv_bfloat16 *__restrict__ b,
           __nv_bfloat16 *__restrict__ c, int64_t m, int64_t n, int64_t k)
{
    using namespace nvcuda;
    __shared__ __align__(128) unsigned char smem[SMEM_BYTES];
    __nv_bfloat16 *const As = reinterpret_cast<__nv_bfloat16 *>(smem);   /* [2][BM][AS_LD] */
    __nv_bfloat16 *const Bs = As + 2 * A_TILE;                            /* [2][BK][BS_LD] */

    const int tid = threadIdx.x;
    const int warp = tid / 32;
    const int lane = tid % 32;
    const int wm = warp / 4;   /* warp rows wm*64 .. +63 of the block tile */
    const int wn = warp % 4;   /* warp cols wn*32 .. +31 */
    const int64_t m0 = (int64_t)blockIdx.y * BM;
    const int64_t n0 = (int64_t)blockIdx.x * BN;

    /* run r in 0..511: A row r/4, k col (r%4)*8; B k row r/16, col (r%16)*8 */
    const int ar0 = tid / 4, ac0 = (tid % 4) * 8;
    const int ar1 = (tid + 256) / 4, ac1 = ((tid + 256) % 4) * 8;
    const int br0 = tid / 16, bc0 = (tid % 16) * 8;
    const int br1 = (tid + 256) / 16, bc1 = ((tid + 256) % 16) * 8;
    const bool a_vec = (k % 8 == 0) && ((reinterpret_cast<uint64_t>(a) & 15) == 0);
    const bool b_vec = (n % 8 == 0) && ((reinterpret_cast<uint64_t>(b) & 15) == 0);
    const bool c_vec = (n % 8 == 0) && ((reinterpret_cast<uint64_t>(c) & 15) == 0);

    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[4][2];
#pragma unroll
    for (int i = 0; i < 4; i++) {
#pragma unroll
        for (int j = 0; j < 2; j++) {
            wmma::fill_fragment(acc[i][j], 0.0f);
        }
    }

    const int64_t ktiles = (k + BK - 1) / BK;

    /* slice 0 into buffer 0 */
    uint4 ra0 = load_run8(a, m0 + ar0, ac0, m, k, a_vec);
    uint4 ra1 = load_run8(a, m0 + ar1, ac1, m, k, a_vec);
    uint4 rb0 = load_run8(b, br0, n0 + bc0, k, n, b_vec);
    uint4 rb1 = load_run8(b, br1, n0 + bc1, k, n, b_vec);
    *reinterpret_cast<uint4 *>(As + ar0 * AS_LD + ac0) = ra0;
    *reinterpret_cast<uint4 *>(As + ar1 * AS_LD + ac1) = ra1;
    *reinterpret_cast<uint4 *>(Bs + br0 * BS_LD + bc0) = rb0;
    *reinterpret_cast<uint4 *>(Bs + br1 * BS_LD + bc1) = rb1;
    __syncthreads();

    for (int64_t t = 0; t < ktiles; t++) {
        const int cur = (int)(t & 1);
        const bool more = t + 1 < ktiles;
        if (more) {
            const int64_t k0 = (t + 1) * BK;
            ra0 = load_run8(a, m0 + ar0, k0 + ac0, m, k, a_vec);
            ra1 = load_run8(a, m0 + ar1, k0 + ac1, m, k, a_vec);
            rb0 = load_run8(b, k0 + br0, n0 + bc0, k, n, b_vec);
            rb1 = load_run8(b, k0 + br1, n0 + bc1, k, n, b_vec);
        }
        const __nv_bfloat16 *Ac = As + cur * A_TILE;
        const __nv_bfloat16 *Bc = Bs + cur * B_TILE;
#pragma unroll
        for (int kk = 0; kk < BK; kk += 16) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> fa[4];
            wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::row_major> fb[2];
#pragma unroll
            for (int i = 0; i < 4; i++) {
                wmma::load_matrix_sync(fa[i], Ac + (wm * 64 + i * 16) * AS_LD + kk, AS_LD);
            }
#pragma unroll
            for (int j = 0; j < 2; j++) {
                wmma::load_matrix_sync(fb[j], Bc + kk * BS_LD + wn * 32 + j * 16, BS_LD);
            }
#pragma unroll
            for (int i = 0; i < 4; i++) {
#pragma unroll
                for (int j = 0; j < 2; j++) {
                    wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
                }
            }
        }
        if (more) {
            __nv_bfloat16 *An = As + (cur ^ 1) * A_TILE;
            __nv_bfloat16 *Bn = Bs + (cur ^ 1) * B_TILE;
            *reinterpret_cast<uint4 *>(An + ar0 * AS_LD + ac0) = ra0;
            *reinterpret_cast<uint4 *>(An + ar1 * AS_LD + ac1) = ra1;
            *reinterpret_cast<uint4 *>(Bn + br0 * BS_LD + bc0) = rb0;
            *reinterpret_cast<uint4 *>(Bn + br1 * BS_LD + bc1) = rb1;
        }
        __syncthreads();
    }

    /* epilogue: every thread has passed the last barrier, so smem is free */
    float *scratch = reinterpret_cast<float *>(smem) + warp * 256;
    const int er = lane / 2;          /* row of the fragment this lane writes */
    const int ec = (lane % 2) * 8;    /* first of its 8 columns */
#pragma unroll
    for (int i = 0; i < 4; i++) {
#pragma unroll
        for (int j = 0; j < 2; j++) {
            wmma::store_matrix_sync(scratch, acc[i][j], 16, wmma::mem_row_major);
            __syncwarp();
            const int64_t row = m0 + wm * 64 + i * 16 + er;
            const int64_t col = n0 + wn * 32 + j * 16 + ec;
            const float *v = scratch + er * 16 + ec;
            if (row < m) {
                __nv_bfloat16 *dst = c + row * n + col;
                if (c_vec && col + 8 <= n) {
                    uint4 w;
                    w.x = (unsigned int)__bfloat16_as_ushort(__float2bfloat16(v[0])) |
                          ((unsigned int)__bfloat16_as_ushort(__float2bfloat16(v[1])) << 16);
                    w.y = (unsigned int)__bfloat16_as_ushort(__float2bfloat16(v[2])) |
                          ((unsigned int)__bfloat16_as_ushort(__float2bfloat16(v[3])) << 16);
                    w.z = (unsigned int)__bfloat16_as_ushort(__float2bfloat16(v[4])) |
                          ((unsigned int)__bfloat16_as_ushort(__float2bfloat16(v[5])) << 16);
                    w.w = (unsigned int)__bfloat16_as_ushort(__float2bfloat16(v[6])) |
                          ((unsigned int)__bfloat16_as_ushort(__float2bfloat16(v[7])) << 16);
                    *reinterpret_cast<uint4 *>(dst) = w;
                } else {
#pragma unroll
                    for (int e = 0; e < 8; e++) {
                        if (col + e < n) dst[e] = __float2bfloat16(v[e]);
                    }
                }
            }
            __syncwarp();
        }
    }
}
