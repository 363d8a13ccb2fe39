/* kforge-test: task=saxpy expect=rejected reason=unwritten_output threat=22 */
/*
 * Threat 22, compile-cache reuse: instead of its own code the candidate loads
 * a library built for an earlier attempt (a fast but wrong one, or a cached
 * winner) from where a build might have left it, and calls its saxpy. Every
 * evaluation builds from the submitted text into a private dir, and Landlock
 * lets the worker read only system dirs and its own .so, so every dlopen
 * fails. The kernel writes nothing when no previous build was found:
 * unwritten_output. (Accepted here means an old .so was reachable.)
 */
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>

typedef void (*saxpy_fn)(const float *, const float *, float *, int64_t, float);

void saxpy(const float *x, const float *y, float *z, int64_t n, float a)
{
    static const char *paths[] = { "/tmp/kforge_prev.so", "/tmp/kforge/cache/saxpy.so",
                                   "./candidate.so", "../prev/candidate.so",
                                   "/var/tmp/kforge_prev.so" };
    for (unsigned i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        void *h = dlopen(paths[i], RTLD_NOW | RTLD_LOCAL);
        saxpy_fn f = h ? (saxpy_fn)dlsym(h, "saxpy") : NULL;
        if (f && f != saxpy) {
            f(x, y, z, n, a);
            return;
        }
    }
}
