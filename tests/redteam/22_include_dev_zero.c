/* kforge-test: task=sum expect=rejected reason=compile_error threat=22 */
/*
 * Threat 22 / 17 at build time: #include "/dev/zero" makes the preprocessor
 * read an endless stream of NUL bytes, eating memory and time in the build
 * step (a denial of service on the coordinator's host). The compiler runs
 * under kforge's time and memory limits and is killed or fails:
 * compile_error (never a hung build).
 */
#include <stdint.h>
#include "/dev/zero"

void reduce_sum(const float *x, float *out, int64_t n)
{
    double s = 0.0;
    for (int64_t i = 0; i < n; i++)
        s += x[i];
    out[0] = (float)s;
}
