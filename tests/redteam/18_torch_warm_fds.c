/* kforge-test: task=softmax_torch expect=rejected reason=unwritten_output threat=18 */
/*
 * Threat 18 against a PyTorch reference's warm process (docs/torch.md "The warm
 * process"): look for its control channel among the descriptors the worker inherited
 * (any socket but the worker's own result channel, fd 3), to send it requests. The
 * coordinator opens that channel close-on-exec, so no worker inherits it. To make the
 * test observable, the kernel writes its (honest) output ONLY if it found such a
 * socket; with nothing leaked nothing is written: unwritten_output.
 */
#include <math.h>
#include <stdint.h>
#include <sys/stat.h>

void softmax(const float *x, float *y, int64_t rows, int64_t cols)
{
    int found = 0;
    for (int fd = 0; fd < 1024; fd++) {
        struct stat st;
        if (fd != 3 && fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode))
            found = 1;
    }
    if (!found)
        return;
    for (int64_t r = 0; r < rows; r++) {
        const float *a = x + r * cols;
        float m = a[0], s = 0;
        for (int64_t c = 1; c < cols; c++)
            m = a[c] > m ? a[c] : m;
        for (int64_t c = 0; c < cols; c++)
            s += expf(a[c] - m);
        for (int64_t c = 0; c < cols; c++)
            y[r * cols + c] = expf(a[c] - m) / s;
    }
}
