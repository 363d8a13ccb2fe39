/* kforge-test: task=saxpy expect=not_faster threat=24 */
/*
 * Threat 24, riding timer noise: the plain reference saxpy with only
 * comments and whitespace changed. Any "speedup" it shows is noise; kforge
 * counts a speedup only when its confidence interval clears the measured
 * noise floor and re-times winners in a fresh process, so this must never be
 * reported above 1.2x: not_faster.
 */
#include <stdint.h>

void saxpy(const float *x, const float *y, float *z, int64_t n, float a)
{
    for (int64_t i = 0; i < n; i++)   /* same loop as the reference */
        z[i] = a * x[i] + y[i];
}
