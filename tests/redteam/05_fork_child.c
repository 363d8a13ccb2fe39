/* kforge-test: task=sgemm expect=rejected reason=sandbox_violation threat=5 */
/*
 * Threat 5, work after return in a child process: the output lives in shared
 * memory, so a forked child can finish it after the parent returned (zero
 * time measured). fork() is clone without CLONE_THREAD, which the seccomp
 * filter kills: sandbox_violation.
 */
#include <stdint.h>
#include <unistd.h>

void sgemm(const float *a, const float *b, float *c, int64_t m, int64_t n, int64_t k)
{
    if (fork() != 0)
        return;
    usleep(20000);
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            float acc = 0.0f;
            for (int64_t p = 0; p < k; p++)
                acc += a[i * k + p] * b[p * n + j];
            c[i * n + j] = acc;
        }
    _exit(0);
}
