/* kforge-test: task=sum expect=rejected reason=sandbox_violation threat=23 */
/*
 * Threat 23, swapping the task: rename the task's reference or task.json
 * (e.g. to put an easier task in its place), or delete it so a later run
 * rebuilds from something else. rename and unlink are forbidden by the
 * seccomp filter whatever the path: sandbox_violation. To stay harmless if
 * ever run without a sandbox, each file is renamed onto itself (a no-op)
 * and the unlink targets a name that does not exist.
 */
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

void reduce_sum(const float *x, float *out, int64_t n)
{
    rename("tasks/c/sum/task.json", "tasks/c/sum/task.json");
    rename("tasks/c/sum/reference.c", "tasks/c/sum/reference.c");
    unlink("tasks/c/sum/.kforge_no_such_file");
    double s = 0.0;
    for (int64_t i = 0; i < n; i++)
        s += x[i];
    out[0] = (float)s;
}
