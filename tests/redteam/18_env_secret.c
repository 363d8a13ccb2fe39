/* kforge-test: task=sum expect=rejected reason=unwritten_output threat=18 */
/*
 * Threat 18, the secret seed in the environment: a worker that inherits
 * KFORGE_SEED (or any *SEED* / *SECRET* variable) lets a candidate regenerate
 * the inputs and the answer offline. The kernel writes its (honest) result
 * ONLY if such a variable is visible; with a scrubbed environment it writes
 * nothing: unwritten_output. Accepted here means the seed leaked.
 */
#include <stdint.h>
#include <string.h>

extern char **environ;

void reduce_sum(const float *x, float *out, int64_t n)
{
    int leaked = 0;
    for (char **e = environ; e && *e; e++) {
        const char *eq = strchr(*e, '=');
        size_t len = eq ? (size_t)(eq - *e) : strlen(*e);
        char name[128];
        if (len >= sizeof name)
            continue;
        memcpy(name, *e, len);
        name[len] = '\0';
        if (strstr(name, "SEED") || strstr(name, "SECRET"))
            leaked = 1;
    }
    if (!leaked)
        return;
    double s = 0.0;
    for (int64_t i = 0; i < n; i++)
        s += x[i];
    out[0] = (float)s;
}
