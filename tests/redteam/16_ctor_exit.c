/* kforge-test: task=saxpy expect=rejected reason=crash threat=16 */
/*
 * Threat 16, exit from a constructor at load: the library's constructor
 * calls exit(0) when dlopen runs it, before any call (and runs the worker's
 * atexit handlers, which a careless worker might use to send "ok"). kforge
 * treats an exit during load as crash.
 */
#include <stdint.h>
#include <stdlib.h>

__attribute__((constructor)) static void bye(void)
{
    exit(0);
}

void saxpy(const float *x, const float *y, float *z, int64_t n, float a)
{
    for (int64_t i = 0; i < n; i++)
        z[i] = a * x[i] + y[i];
}
