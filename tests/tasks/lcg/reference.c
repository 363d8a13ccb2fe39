/* lcg: y[i] = 32 rounds of a mixed LCG step on the low 12 bits of x[i]. A test task for
 * specialisation (tests/test_loop.c loop/specialise): the reference keeps its state in a
 * volatile, so any plain loop beats it, and candidates/param.c has an ALGO whose winner
 * depends on n. */
#include <stdint.h>

void lcg(const int32_t *x, int32_t *y, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        volatile uint32_t v = (uint32_t)x[i] & 4095u;
        for (int k = 0; k < 32; k++) {
            v = v * 1103515245u + 12345u;
            v = v ^ (v >> 13);
        }
        y[i] = (int32_t)(v >> 16);
    }
}
