/* kforge-test: task=softmax_torch expect=rejected reason=sandbox_violation threat=18 */
/*
 * Threat 18 against a PyTorch reference's warm process (docs/torch.md "The warm
 * process"): SIGKILL the processes started just before this worker (the warm process,
 * its runner) by guessing their pids, hoping that the reference then fails and the
 * blame lands elsewhere. kill() of any process but the worker itself is refused by the
 * seccomp filter: the worker dies, sandbox_violation, and the warm process lives on
 * (torch/warm_redteam checks that it does).
 */
#include <signal.h>
#include <stdint.h>
#include <unistd.h>

void softmax(const float *x, float *y, int64_t rows, int64_t cols)
{
    for (int k = 1; k <= 64; k++)
        kill(getpid() - k, SIGKILL);
    for (int64_t i = 0; i < rows * cols; i++)
        y[i] = x[i];
}
