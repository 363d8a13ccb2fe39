/* kforge-test: task=sum expect=rejected reason=sandbox_violation threat=5 */
/* From a red-team pass: helper threads send SIGCONT to their own process so the coordinator's freeze after the answer is cancelled, and the rest of the work happens untimed after it. Defence: job-control signals (SIGCONT, SIGSTOP, SIGTSTP, SIGTTIN, SIGTTOU) are forbidden even to itself. */
#define NGUARD 8
#define INCALL_FRAC 1
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#ifndef NGUARD
#define NGUARD 2
#endif
#ifndef HANG
#define HANG 0      
#endif
#ifndef INCALL_FRAC
#define INCALL_FRAC 0 
#endif
static const float *X;
static float *OUT;
static int64_t N;
static _Atomic int gen, spam, spamming, acks, cgen;
static pid_t me;
static double partial;
static void fwait(_Atomic int *a, int v) { syscall(SYS_futex, a, FUTEX_WAIT_PRIVATE, v, 0, 0, 0); }
static void fwake(_Atomic int *a) { syscall(SYS_futex, a, FUTEX_WAKE_PRIVATE, 1 << 30, 0, 0, 0); }
static void *guard(void *arg) {
    int seen = 0;
    (void)arg;
    for (;;) {
        int g;
        while ((g = atomic_load(&gen)) == seen) fwait(&gen, seen);
        seen = g;
        atomic_fetch_add(&spamming, 1);
        while (atomic_load(&spam) == g) syscall(SYS_kill, me, SIGCONT);
        atomic_fetch_add(&acks, 1);
    }
    return 0;
}
static void *compute(void *arg) {
    int seen = 0;
    (void)arg;
    for (;;) {
        int g;
        while ((g = atomic_load(&cgen)) == seen) fwait(&cgen, seen);
        seen = g;
        double s = partial;
        int64_t lo = N * INCALL_FRAC / 8;
        for (int64_t i = lo; i < N; i++) s += X[i];
        OUT[0] = (float)s;
        if (HANG) {
            struct timespec ts = {0, 200000000};
            nanosleep(&ts, 0);          
            atomic_store(&spam, -1);
            for (;;) pause();
        }
        atomic_store(&spam, 0);        
        while (atomic_load(&acks) < NGUARD) ;
        atomic_store(&acks, 0);
        syscall(SYS_kill, me, SIGSTOP); 
    }
    return 0;
}
void reduce_sum(const float *x, float *out, int64_t n) {
    if (n < 65536) { double h = 0; for (int64_t i = 0; i < n; i++) h += x[i]; out[0] = (float)h; return; }
    static int started;
    if (!started) {
        me = getpid();
        pthread_t t;
        for (int i = 0; i < NGUARD; i++) pthread_create(&t, 0, guard, 0);
        pthread_create(&t, 0, compute, 0);
        started = 1;
    }
    X = x, OUT = out, N = n;
    double s = 0;
    for (int64_t i = 0; i < n * INCALL_FRAC / 8; i++) s += x[i];
    partial = s;
    int g = atomic_load(&gen) + 1;
    atomic_store(&spamming, 0);
    atomic_store(&spam, g);
    atomic_store(&gen, g);
    fwake(&gen);
    while (atomic_load(&spamming) < NGUARD) ; 
    atomic_store(&cgen, g);
    fwake(&cgen);
}
