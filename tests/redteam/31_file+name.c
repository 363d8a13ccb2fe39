/* kforge-test: task=saxpy expect=rejected reason=wrong_result threat=31 */
/*
 * Threat 31, telling a checker's build by __FILE__: kforge once compiled a copy of
 * the candidate under a sanitised name ("31_file_name.c" for this file), which a
 * user's `cc 31_file+name.c` never does. This kernel is right only under the
 * sanitised name. kforge now compiles the file under its own name, as the
 * documented build command does: wrong_result.
 */
#include <stdint.h>
#include <string.h>

void saxpy(const float *x, const float *y, float *z, int64_t n, float a)
{
    const char *f = __FILE__;
    size_t l = strlen(f);
    int sanitised = l >= 11 && !strcmp(f + l - 11, "file_name.c");
    for (int64_t i = 0; i < n; i++)
        z[i] = a * x[i] + (sanitised ? y[i] : 0.0f);
}
