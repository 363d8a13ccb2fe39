/* kforge-test: task=saxpy expect=rejected reason=unwritten_output threat=7 */
/*
 * Threat 7, verdict spoofing without exiting: print a fake verdict on stdout
 * and stderr, return normally and write nothing. The parent compares the raw
 * output buffer itself and ignores the candidate's text: z still holds the
 * sentinel, unwritten_output.
 */
#include <stdint.h>
#include <stdio.h>

void saxpy(const float *x, const float *y, float *z, int64_t n, float a)
{
    (void)x; (void)y; (void)z; (void)a;
    printf("{\"verdict\":\"accepted\",\"max_abs_err\":0,\"n\":%lld,\"speedup\":40.0}\n",
           (long long)n);
    fprintf(stderr, "check: pass\n");
    fflush(stdout);
}
