/* Template bgemm: C (m x n) = A (m x k) * B (k x n), bf16 row-major, f32 accumulation on the
 * tensor cores (WMMA 16x16x16 bf16 -> f32), one rounding to bf16 (__float2bfloat16, round
 * to nearest even) at the end. Correct for any m, n, k >= 0.
 *
 * A block computes a BM x BN tile of C with (BM/WM)*(BN/WN) warps, each a WM x WN tile of
 * (WM/16) x (WN/16) accumulator fragments. k is stepped by BK (a multiple of 16). The block
 * copies the BM x BK slice of A and the BK x BN slice of B into shared memory in runs of 8
 * bf16 (strided loops over the runs); a run is one 16-byte load only when it lies wholly
 * inside its row, the row length is a multiple of 8 and the pointer is 16-byte aligned,
 * otherwise element by element, with 0 for every element outside the matrix (zero fill:
 * partial tiles add exact zeros). Rows are padded by 8 bf16, which keeps every row start
 * 16-byte aligned and every fragment pointer 32-byte aligned for all values below. A
 * barrier before and after the multiply separates the copy of one slice from the reads of
 * the previous one. Epilogue: after the last barrier the same shared array serves as a
 * 16x16 f32 scratch per warp; each lane rounds and writes 8 elements of one fragment row,
 * skipping those outside C. Shared memory is at most 19 KB for every combination. */

// kforge:param BM = 128, 64
// kforge:param BN = 128, 64
// kforge:param BK = 32, 16
// kforge:param WM = 64, 32
// kforge:param WN = 32, 64
// kforge:require BM % WM == 0 && BN % WN == 0 && WM % 16 == 0 && WN % 16 == 0 && BK % 16 == 0
// kforge:launch kernel=bgemm_param grid=((n+BN-1)/BN,(m+BM-1)/BM,1) block=(32*(BM/WM)*(BN/WN),1,1) smem=0

#include <mma.h>

#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 128
#endif
#ifndef BK
#define BK 32
#endif
#ifndef WM
#define WM 64
#endif
#ifndef WN
#define WN 32
#endif

#define NWN (BN / WN)
#define NWARPS ((BM / WM) * NWN)
#define NT (32 * NWARPS)
#define FM (WM / 16)
#define FN (WN / 16)
#define AS_LD (BK + 8)
#define BS_LD (BN + 8)
#define AB_BYTES ((BM * AS_LD + BK * BS_LD) * 2)
#define SCR_BYTES (NWARPS * 256 * 4)
#define SMEM_BYTES (AB_BYTES > SCR_BYTES ? AB_BYTES : SCR_BYTES)

/* The 8 bf16 p[row*cols + col .. +7] as raw bits in memory order, 0 outside rows x cols. */
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

extern "C" __global__ void __launch_bounds__(NT)
bgemm_param(const __nv_bfloat16 *__restrict__ a, const __nv_bfloat16 *__restrict__ b,
            __nv_bfloat16 *__restrict__ c, int64_t m, int64_t n, int64_t k)
{
    using namespace nvcuda;
    __shared__ __align__(128) unsigned char smem[SMEM_BYTES];
    __nv_bfloat16 *const As = reinterpret_cast<__nv_bfloat16 *>(smem);   /* [BM][AS_LD] */
    __nv_bfloat16 *const Bs = As + BM * AS_LD;                            /* [BK][BS_LD] */

    const int tid = threadIdx.x;
    const int warp = tid / 32;
    const int lane = tid % 32;
    const int wm = warp / NWN;
    const int wn = warp % NWN;
    const int64_t m0 = (int64_t)blockIdx.y * BM;
    const int64_t n0 = (int64_t)blockIdx.x * BN;
    const bool a_vec = (k % 8 == 0) && ((reinterpret_cast<uint64_t>(a) & 15) == 0);
    const bool b_vec = (n % 8 == 0) && ((reinterpret_cast<uint64_t>(b) & 15) == 0);

    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[FM][FN];
#pragma unroll
    for (int i = 0; i < FM; i++) {
#pragma unroll
        for (int j = 0; j < FN; j++) {
            wmma::fill_fragment(acc[i][j], 0.0f);
        }
    }

    for (int64_t k0 = 0; k0 < k; k0 += BK) {
        for (int r = tid; r < BM * BK / 8; r += NT) {
            const int row = r / (BK / 8);
            const int col = (r % (BK / 8)) * 8;
            *reinterpret_cast<uint4 *>(As + row * AS_LD + col) =
                load_run8(a, m0 + row, k0 + col, m, k, a_vec);
        }
        for (int r = tid; r < BK * BN / 8; r += NT) {
            const int row = r / (BN / 8);
            const int col = (r % (BN / 8)) * 8;
            *reinterpret_cast<uint4 *>(Bs + row * BS_LD + col) =
                load_run8(b, k0 + row, n0 + col, k, n, b_vec);
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < BK; kk += 16) {
            wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::row_major> fb[FN];
#pragma unroll
            for (int j = 0; j < FN; j++) {
                wmma::load_matrix_sync(fb[j], Bs + kk * BS_LD + wn * WN + j * 16, BS_LD);
            }
#pragma unroll
            for (int i = 0; i < FM; i++) {
                wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> fa;
                wmma::load_matrix_sync(fa, As + (wm * WM + i * 16) * AS_LD + kk, AS_LD);
#pragma unroll
                for (int j = 0; j < FN; j++) {
                    wmma::mma_sync(acc[i][j], fa, fb[j], acc[i][j]);
                }
            }
        }
        __syncthreads();
    }

    /* epilogue: every thread has passed the last barrier (or none read smem: k == 0) */
    float *scratch = reinterpret_cast<float *>(smem) + warp * 256;
    const int er = lane / 2;
    const int ec = (lane % 2) * 8;
#pragma unroll
    for (int i = 0; i < FM; i++) {
#pragma unroll
        for (int j = 0; j < FN; j++) {
            wmma::store_matrix_sync(scratch, acc[i][j], 16, wmma::mem_row_major);
            __syncwarp();
            const int64_t row = m0 + wm * WM + i * 16 + er;
            const int64_t col = n0 + wn * WN + j * 16 + ec;
            if (row < m) {
#pragma unroll
                for (int e = 0; e < 8; e++) {
                    if (col + e < n) c[row * n + col + e] = __float2bfloat16(scratch[er * 16 + ec + e]);
                }
            }
            __syncwarp();
        }
    }
}
