/* kforge-test: task=transpose expect=rejected reason=crash threat=16 */
/*
 * Threat 16, SIGKILL on itself after writing the result: the output buffer is
 * correct, but the worker dies before it can answer; a harness that looks at
 * the shared output after the worker vanished would see a right answer.
 * kforge needs the worker's answer: crash. (raise() sends tgkill to the
 * worker's own thread, which the sandbox allows: the death, not the syscall,
 * is what is judged.)
 */
#include <signal.h>
#include <stdint.h>

void transpose(const float *a, float *b, int64_t rows, int64_t cols)
{
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++)
            b[j * rows + i] = a[i * cols + j];
    raise(SIGKILL);
}
