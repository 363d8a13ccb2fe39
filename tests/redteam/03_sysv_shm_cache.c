/* kforge-test: task=saxpy expect=rejected reason=sandbox_violation threat=3 */
/*
 * Threat 3, cross-process cache in System V shared memory: shmget(IPC_CREAT)
 * makes a segment that survives the worker and is visible to the next worker
 * of the same user. The cache is keyed by n; a hit returns the stored z.
 * No file is opened, so only the seccomp allow-list can stop it: shmget is
 * not on it, the worker is killed, sandbox_violation. (If shmget were allowed,
 * the memo would also surface as stale_result; the right fix is the filter.)
 */
#include <stdint.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/shm.h>

#define KEY 0x6b66u
#define CAP (16u << 20)

void saxpy(const float *x, const float *y, float *z, int64_t n, float a)
{
    int id = shmget(KEY, CAP, IPC_CREAT | 0600);
    int64_t *seg = id >= 0 ? shmat(id, NULL, 0) : (void *)-1;
    size_t bytes = (size_t)n * sizeof *z;
    if (seg != (void *)-1 && seg[0] == n && bytes + 8 <= CAP) {
        memcpy(z, seg + 1, bytes);
        return;
    }
    for (int64_t i = 0; i < n; i++)
        z[i] = a * x[i] + y[i];
    if (seg != (void *)-1 && bytes + 8 <= CAP) {
        seg[0] = n;
        memcpy(seg + 1, z, bytes);
    }
}
