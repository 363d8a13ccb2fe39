/* kforge-test: task=saxpy expect=rejected reason=compile_error threat=22 */
/*
 * Threat 22 (and 18 at build time), reaching outside the submitted text from
 * the compiler: #include a host file ("/etc/shadow") to leak it into compiler
 * error messages that an agent reads back, or to pull in code from elsewhere.
 * The file is either unreadable by the sandboxed compiler or not C: either
 * way the build fails, compile_error, and kforge must not echo the file's
 * contents in the stored compiler log.
 */
#include <stdint.h>
#include "/etc/shadow"

void saxpy(const float *x, const float *y, float *z, int64_t n, float a)
{
    for (int64_t i = 0; i < n; i++)
        z[i] = a * x[i] + y[i];
}
