/* kforge-test: task=saxpy expect=rejected reason=wrong_result threat=31 */
/*
 * Threat 31, detecting the checker at run time: the process name (comm), argv[0],
 * the executable's path, the path of the loaded object, or an empty environment
 * gave kforge's worker away ("kforge-worker", ".../candidate.so", no variables at
 * all). This kernel is right only when one of them says so; in a user's program it
 * is wrong. kforge now runs the object under a random executable name, with no
 * arguments, from a mktemp-style directory under the candidate's own file name, and
 * with an ordinary environment: the user's branch runs: wrong_result.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/prctl.h>

extern char **environ;

static int under_checker(void)
{
    char comm[17] = "";
    prctl(PR_GET_NAME, comm);
    const char *exe = (const char *)getauxval(AT_EXECFN);
    Dl_info di;
    const char *so = dladdr((void *)under_checker, &di) && di.dli_fname ? di.dli_fname : "";
    return strstr(comm, "kforge") || strstr(program_invocation_name, "kforge") ||
           (exe && strstr(exe, "kforge")) || strstr(so, "kforge") || strstr(so, "candidate.so") ||
           !environ || !environ[0];
}

void saxpy(const float *x, const float *y, float *z, int64_t n, float a)
{
    float b = under_checker() ? a : a + 1.0f;
    for (int64_t i = 0; i < n; i++)
        z[i] = b * x[i] + y[i];
}
