/* lcg: y[i] = 32 rounds of a mixed LCG step on the low 12 bits of x[i]. A test task for
 * specialisation (tests/test_loop.c loop/specialise): the reference calls each round
 * through a volatile function pointer, four times over, so any plain loop beats it, and
 * candidates/param.c has an ALGO whose winner depends on n. */
#include <stdint.h>

static uint32_t round1(uint32_t v)
{
    v = v * 1103515245u + 12345u;
    return v ^ (v >> 13);
}

static uint32_t (*volatile round_fn)(uint32_t) = round1;

void lcg(const int32_t *x, int32_t *y, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        uint32_t v = 0;
        for (int rep = 0; rep < 4; rep++) { /* the same value four times: a slow baseline */
            v = (uint32_t)x[i] & 4095u;
            for (int k = 0; k < 32; k++)
                v = round_fn(v);
        }
        y[i] = (int32_t)(v >> 16);
    }
}
