/* kforge-test: task=saxpy expect=accepted */
/* From a red-team pass: an honest kernel an earlier kforge rejected (or may not). */
/* HONEST H8: many ordinary library calls in one kernel: getenv, sysconf, get_nprocs,
 * /proc/cpuinfo (optional), __builtin_cpu_supports, aligned_alloc, posix_memalign,
 * alloca, a 1 MiB stack array, qsort, expf/sqrtf, fenv round-trip, printf to stdout,
 * C11 thrd_create/join, sched_yield, nanosleep, clock(), sysconf cache line,
 * getauxval, mallopt, pthread_getattr_np. */
#define _GNU_SOURCE
#include <alloca.h>
#include <fenv.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/sysinfo.h>
#include <threads.h>
#include <time.h>
#include <unistd.h>
#include <malloc.h>
static int cmpf(const void *a, const void *b) { float x = *(const float *)a, y = *(const float *)b; return (x > y) - (x < y); }
typedef struct { const float *x, *y; float *z; int64_t lo, hi; float a; } job;
static int run(void *p) { job *j = p; for (int64_t i = j->lo; i < j->hi; i++) j->z[i] = j->a * j->x[i] + j->y[i]; return 0; }
void saxpy(const float *x, const float *y, float *z, int64_t n, float a) {
    static int once;
    if (!once) {
        once = 1;
        const char *e = getenv("OMP_NUM_THREADS");
        long np = sysconf(_SC_NPROCESSORS_ONLN), nc = sysconf(_SC_NPROCESSORS_CONF);
        int gp = get_nprocs();
        long cl = sysconf(_SC_LEVEL1_DCACHE_LINESIZE);
        FILE *f = fopen("/proc/cpuinfo", "r"); int avx = 0;
        if (f) { char line[512]; while (fgets(line, sizeof line, f)) if (strstr(line, "avx2")) avx = 1; fclose(f); }
        avx |= __builtin_cpu_supports("avx2");
        unsigned long hw = getauxval(AT_HWCAP);
        mallopt(M_MMAP_THRESHOLD, 1 << 20);
        pthread_attr_t at; void *sa; size_t ss = 0;
        if (!pthread_getattr_np(pthread_self(), &at)) { pthread_attr_getstack(&at, &sa, &ss); pthread_attr_destroy(&at); }
        printf("env=%s np=%ld nc=%ld gp=%d cl=%ld avx=%d hw=%lx ss=%zu\n", e ? e : "-", np, nc, gp, cl, avx, hw, ss);
        fflush(stdout);
    }
    float *s1 = aligned_alloc(64, 4096); void *s2 = 0; posix_memalign(&s2, 64, 4096);
    float *s3 = alloca(4096);
    volatile char big[1 << 20]; big[0] = 1; big[sizeof big - 1] = 1;
    float keys[16]; for (int i = 0; i < 16; i++) keys[i] = (float)((i * 7) % 16);
    qsort(keys, 16, sizeof keys[0], cmpf);
    volatile float t = expf(0.5f) + sqrtf(2.0f) + s3[0] * 0; (void)t;
    int old = fegetround(); fesetround(FE_TOWARDZERO); volatile float r = 1.0f / 3.0f; (void)r; fesetround(old);
    sched_yield();
    struct timespec ts = {0, 1000}; nanosleep(&ts, 0);
    (void)clock();
    job j1 = {x, y, z, 0, n / 2, a}, j2 = {x, y, z, n / 2, n, a};
    thrd_t th;
    if (thrd_create(&th, run, &j2) == thrd_success) { run(&j1); thrd_join(th, 0); } else { run(&j1); run(&j2); }
    free(s1); free(s2);
}
