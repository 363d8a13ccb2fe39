/* kforge-test: task=softmax expect=rejected reason=crash threat=16 */
/*
 * Threat 16, integer division by zero: SIGFPE from a bad "cols per vector"
 * computation (cols / (cols - cols)). The worker dies alone: crash.
 */
#include <stdint.h>

void softmax(const float *x, float *y, int64_t rows, int64_t cols)
{
    volatile int64_t zero = cols - cols;
    int64_t per = cols / zero;
    for (int64_t i = 0; i < rows * cols; i++)
        y[i] = x[i] * (float)per;
}
