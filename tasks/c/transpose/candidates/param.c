/* Template transpose: square BLOCK x BLOCK cache tiles with clipped edge tiles. */
/* kforge:param BLOCK = 32, 8, 16, 64 */
/* kforge:require BLOCK >= 1 && BLOCK <= 256 */
#include <stdint.h>

#ifndef BLOCK
#define BLOCK 32
#endif

void transpose(const float *restrict a, float *restrict b, int64_t rows, int64_t cols)
{
    for (int64_t i0 = 0; i0 < rows; i0 += BLOCK) {
        int64_t i1 = i0 + BLOCK < rows ? i0 + BLOCK : rows;
        for (int64_t j0 = 0; j0 < cols; j0 += BLOCK) {
            int64_t j1 = j0 + BLOCK < cols ? j0 + BLOCK : cols;
            for (int64_t j = j0; j < j1; j++) {
                for (int64_t i = i0; i < i1; i++) {
                    b[j * rows + i] = a[i * cols + j];
                }
            }
        }
    }
}
