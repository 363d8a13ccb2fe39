/* Template transpose: BLOCK x BJ cache tiles (rows x columns of A) with clipped edge tiles;
 * the inner loop walks down U columns of A at once (U contiguous reads, U output streams). */
/* kforge:param BLOCK = 32, 8, 16, 64, 128 */
/* kforge:param BJ = 32, 8, 16, 64, 128 # tiling */
/* kforge:param U = 1, 2, 4 # unrolling */
/* kforge:require BLOCK >= 1 && BLOCK <= 256 */
/* a tile of A and its tile of B together fit a 32 KiB L1 data cache */
/* kforge:require BLOCK * BJ <= 4096 */
#include <stdint.h>

#ifndef BLOCK
#define BLOCK 32
#endif
#ifndef BJ
#define BJ 32
#endif
#ifndef U
#define U 1
#endif

void transpose(const float *restrict a, float *restrict b, int64_t rows, int64_t cols)
{
    for (int64_t i0 = 0; i0 < rows; i0 += BLOCK) {
        int64_t i1 = i0 + BLOCK < rows ? i0 + BLOCK : rows;
        for (int64_t j0 = 0; j0 < cols; j0 += BJ) {
            int64_t j1 = j0 + BJ < cols ? j0 + BJ : cols;
            int64_t j = j0;
            for (; j + U <= j1; j += U) {
                for (int64_t i = i0; i < i1; i++) {
#pragma GCC unroll 4
                    for (int u = 0; u < U; u++) {
                        b[(j + u) * rows + i] = a[i * cols + j + u];
                    }
                }
            }
            for (; j < j1; j++) {
                for (int64_t i = i0; i < i1; i++) {
                    b[j * rows + i] = a[i * cols + j];
                }
            }
        }
    }
}
