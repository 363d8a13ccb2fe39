/* kforge-test: task=transpose expect=rejected reason=wrong_result threat=30 */
/* A transpose that moves every value through "+ 0.0f" (as a fused scale-and-add kernel reused for a copy would): -0.0 + 0.0 is +0.0, so the sign of a zero input is lost. The task's tolerance is exact, but the comparison was "|out - ref| <= 0", and 0 == -0 passed it. Defence: a float output under an exact tolerance is compared bit for bit (T1 salts the inputs with a -0.0). */
#include <stdint.h>
void transpose(const float *a, float *b, int64_t rows, int64_t cols) {
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++) b[j * rows + i] = a[i * cols + j] + 0.0f;
}
