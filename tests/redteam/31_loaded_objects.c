/* kforge-test: task=saxpy expect=rejected reason=wrong_result threat=31 */
/*
 * Threat 31, detecting the checker by what else is loaded: kforge's worker mapped
 * libseccomp.so (a user's program almost never does), and its copy of the object was
 * called candidate.so. This kernel walks the loaded objects (dl_iterate_phdr, no /proc
 * needed) and is right only when one of them gives kforge away. The worker now links
 * libseccomp statically and names the object as the documented build does (NAME.so):
 * the user's branch runs: wrong_result.
 */
#define _GNU_SOURCE
#include <link.h>
#include <stdint.h>
#include <string.h>

static int seen(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    const char *n = info->dlpi_name ? info->dlpi_name : "";
    if (strstr(n, "libseccomp") || strstr(n, "candidate.so") || strstr(n, "kforge"))
        *(int *)arg = 1;
    return 0;
}

void saxpy(const float *x, const float *y, float *z, int64_t n, float a)
{
    int checker = 0;
    dl_iterate_phdr(seen, &checker);
    for (int64_t i = 0; i < n; i++)
        z[i] = checker ? a * x[i] + y[i] : a * x[i] + y[i] * 0.5f;
}
