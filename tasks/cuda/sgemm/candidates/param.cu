/* Template sgemm: C (m x n) = A (m x k) * B (k x n), f32 row-major, for any m, n, k >= 0.
 *
 * A block computes a BM x BN tile of C with (BM/TM)*(BN/TN) threads; thread (tx, ty)
 * (tx = tid % (BN/TN)) keeps a TM x TN register tile: rows ty + i*(BM/TM), columns
 * tx + j*(BN/TN), so neighbouring threads touch neighbouring columns (coalesced stores,
 * conflict-free shared reads of B, broadcast reads of A). k is stepped by BK: the whole
 * block copies the BM x BK slice of A (transposed, rows padded by 4) and the BK x BN slice
 * of B into shared memory with strided loops, loading 0 for every element outside the
 * matrices, so partial tiles add exact zeros; a barrier before and after the compute
 * separates the copy of one slice from the reads of the previous one. Each C element is the
 * float sum of its k products in k order. Every parameter combination below satisfies the
 * require line (threads <= 1024, exact divisions); shared memory is at most 17 KB. */

// kforge:param BM = 128, 64
// kforge:param BN = 128, 64
// kforge:param BK = 8, 16
// kforge:param TM = 8, 4
// kforge:param TN = 8, 4
// kforge:require BM % TM == 0 && BN % TN == 0 && (BM / TM) * (BN / TN) <= 1024
// kforge:launch kernel=sgemm_param grid=((n+BN-1)/BN,(m+BM-1)/BM,1) block=((BM/TM)*(BN/TN),1,1) smem=0

#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 128
#endif
#ifndef BK
#define BK 8
#endif
#ifndef TM
#define TM 8
#endif
#ifndef TN
#define TN 8
#endif

#define NTX (BN / TN)
#define NTY (BM / TM)
#define NT (NTX * NTY)
#define AS_LD (BM + 4)

extern "C" __global__ void __launch_bounds__(NT)
sgemm_param(const float *__restrict__ a, const float *__restrict__ b, float *__restrict__ c,
            int64_t m, int64_t n, int64_t k)
{
    __shared__ float As[BK][AS_LD];
    __shared__ float Bs[BK][BN];

    const int tid = threadIdx.x;
    const int tx = tid % NTX;
    const int ty = tid / NTX;
    const int64_t m0 = (int64_t)blockIdx.y * BM;
    const int64_t n0 = (int64_t)blockIdx.x * BN;

    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; i++) {
#pragma unroll
        for (int j = 0; j < TN; j++) {
            acc[i][j] = 0.0f;
        }
    }

    for (int64_t k0 = 0; k0 < k; k0 += BK) {
        for (int e = tid; e < BM * BK; e += NT) {
            const int r = e / BK;
            const int kc = e % BK;
            const int64_t gr = m0 + r;
            const int64_t gk = k0 + kc;
            As[kc][r] = (gr < m && gk < k) ? a[gr * k + gk] : 0.0f;
        }
        for (int e = tid; e < BK * BN; e += NT) {
            const int r = e / BN;
            const int cc = e % BN;
            const int64_t gk = k0 + r;
            const int64_t gc = n0 + cc;
            Bs[r][cc] = (gk < k && gc < n) ? b[gk * n + gc] : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < BK; kk++) {
            float ar[TM], br[TN];
#pragma unroll
            for (int i = 0; i < TM; i++) {
                ar[i] = As[kk][ty + i * NTY];
            }
#pragma unroll
            for (int j = 0; j < TN; j++) {
                br[j] = Bs[kk][tx + j * NTX];
            }
#pragma unroll
            for (int i = 0; i < TM; i++) {
#pragma unroll
                for (int j = 0; j < TN; j++) {
                    acc[i][j] = fmaf(ar[i], br[j], acc[i][j]);
                }
            }
        }
        __syncthreads();
    }

#pragma unroll
    for (int i = 0; i < TM; i++) {
        const int64_t row = m0 + ty + i * NTY;
        if (row >= m) {
            continue;
        }
#pragma unroll
        for (int j = 0; j < TN; j++) {
            const int64_t col = n0 + tx + j * NTX;
            if (col < n) {
                c[row * n + col] = acc[i][j];
            }
        }
    }
}
