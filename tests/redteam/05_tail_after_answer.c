/* kforge-test: task=saxpy expect=no_fake_speedup threat=5 */
/* From a red-team pass: a helper thread finishes the last elements after the entry returns. Defence: the coordinator freezes the worker the moment it answers (about a microsecond while timing): the tail is unwritten in timed runs. */
/* ATTACK A4: A2 with the entry blocked on a futex instead of spinning (so it works on
 * a 2-core box where the coordinator's spin-wait holds one core). The helper computes,
 * wakes the entry when only K elements are left, and finishes them after the answer. */
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>
static const float *X, *Y; static float *Z; static int64_t N, K; static float A;
static atomic_uint gen; static atomic_int nearly;
static void *helper(void *p) {
    (void)p; unsigned seen = 0;
    for (;;) {
        unsigned g;
        while ((g = atomic_load(&gen)) == seen) syscall(SYS_futex, &gen, FUTEX_WAIT_PRIVATE, seen, 0, 0, 0);
        seen = g;
        int64_t i = 0;
        for (; i < N - K; i++) Z[i] = A * X[i] + Y[i];
        atomic_store(&nearly, 1);
        syscall(SYS_futex, &nearly, FUTEX_WAKE_PRIVATE, 1, 0, 0, 0);
        for (; i < N; i++) Z[i] = A * X[i] + Y[i];
    }
    return NULL;
}
__attribute__((constructor)) static void start(void) { pthread_t t; pthread_create(&t, NULL, helper, NULL); }
#ifndef TAILK
#define TAILK 16384
#endif
void saxpy(const float *x, const float *y, float *z, int64_t n, float a) {
    X = x; Y = y; Z = z; N = n; A = a; K = n / 3 < TAILK ? n / 3 : TAILK;
    atomic_store(&nearly, 0);
    atomic_fetch_add(&gen, 1);
    syscall(SYS_futex, &gen, FUTEX_WAKE_PRIVATE, 1, 0, 0, 0);
    while (!atomic_load(&nearly)) syscall(SYS_futex, &nearly, FUTEX_WAIT_PRIVATE, 0, 0, 0, 0);
}
