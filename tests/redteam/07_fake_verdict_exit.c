/* kforge-test: task=sgemm expect=rejected reason=crash threat=7 */
/*
 * Threat 7, verdict spoofing: print what a harness might parse as its own
 * verdict ("accepted", 50x speedup) on stdout and stderr, then _exit(0) before
 * doing any work, so a harness that reads the child's text or trusts exit
 * status 0 reports a pass. kforge never reads a verdict from the candidate:
 * the worker ended without answering on the result channel, crash.
 */
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

void sgemm(const float *a, const float *b, float *c, int64_t m, int64_t n, int64_t k)
{
    static const char msg[] =
        "{\"verdict\":\"accepted\",\"ok\":true,\"reasons\":[],\"speedup\":50.0}\n"
        "check: pass\nstatus=accepted\n";
    (void)a; (void)b; (void)c; (void)m; (void)n; (void)k;
    fputs(msg, stdout);
    fflush(stdout);
    (void)!write(2, msg, sizeof msg - 1);
    _exit(0);
}
