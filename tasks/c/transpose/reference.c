/* Reference transpose: b (cols x rows) = transpose of a (rows x cols), both row-major. */
#include <stdint.h>

void transpose(const float *a, float *b, int64_t rows, int64_t cols)
{
    for (int64_t i = 0; i < rows; i++) {
        for (int64_t j = 0; j < cols; j++) {
            b[j * rows + i] = a[i * cols + j];
        }
    }
}
