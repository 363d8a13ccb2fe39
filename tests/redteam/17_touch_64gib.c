/* kforge-test: task=saxpy expect=rejected reason=resource_limit threat=17 timeout=20 */
/*
 * Threat 17, memory exhaustion: grab 64 GiB in 64 MiB chunks and touch every
 * page, to push the host into swap or the OOM killer (taking the coordinator
 * with it). The result is never computed. Like much careless code it does not
 * check malloc for NULL. The worker's memory limit (address space rlimit or
 * cgroup) must stop it, and the verdict must name the limit: resource_limit,
 * whether the worker is OOM-killed or faults on the NULL that the exhausted
 * malloc returns.
 */
#include <stdint.h>
#include <stdlib.h>

#define CHUNK ((size_t)64 << 20)

void saxpy(const float *x, const float *y, float *z, int64_t n, float a)
{
    for (int c = 0; c < 64 * 16; c++) {
        volatile char *p = malloc(CHUNK);
        for (size_t off = 0; off < CHUNK; off += 4096)
            p[off] = (char)off;
    }
    for (int64_t i = 0; i < n; i++)
        z[i] = a * x[i] + y[i];
}
