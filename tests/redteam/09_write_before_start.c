/* kforge-test: task=transpose expect=rejected reason=out_of_bounds threat=9 */
/*
 * Threat 9, write before the start of the output: the kernel stashes a flag
 * in b[-1] ("nobody looks there"). The guard bytes in front of b change:
 * out_of_bounds.
 */
#include <stdint.h>

void transpose(const float *a, float *b, int64_t rows, int64_t cols)
{
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++)
            b[j * rows + i] = a[i * cols + j];
    b[-1] = 1.0f;
}
