/* Template lcg. ALGO 0 runs each element's 32 rounds; ALGO 1 first tabulates all 4096
 * inputs (a fixed cost of 4096 elements' rounds), then looks each element up. ALGO 0 wins
 * short arrays (n = 64: by about 3x), ALGO 1 long ones (n = 65536: by about 50x): a
 * specialisation, not a compromise. */
/* kforge:param ALGO = 0, 1 # algorithm */
#include <stdint.h>

#ifndef ALGO
#define ALGO 0
#endif

static uint32_t rounds(uint32_t v)
{
    for (int k = 0; k < 32; k++) {
        v = v * 1103515245u + 12345u;
        v = v ^ (v >> 13);
    }
    return v;
}

void lcg(const int32_t *x, int32_t *y, int64_t n)
{
#if ALGO == 0
    for (int64_t i = 0; i < n; i++)
        y[i] = (int32_t)(rounds((uint32_t)x[i] & 4095u) >> 16);
#else
    int32_t table[4096];
    for (uint32_t v = 0; v < 4096; v++)
        table[v] = (int32_t)(rounds(v) >> 16);
    for (int64_t i = 0; i < n; i++)
        y[i] = table[x[i] & 4095];
#endif
}
