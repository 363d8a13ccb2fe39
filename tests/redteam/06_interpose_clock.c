/* kforge-test: task=saxpy expect=not_faster threat=6 */
/*
 * Threat 6, timer tampering by symbol interposition: the library exports its
 * own clock_gettime, gettimeofday, time and clock, each running at 1/10 of
 * real speed. If the harness resolved its clock through the candidate (e.g.
 * LD_PRELOAD-style or RTLD_GLOBAL + lazy binding), every measured time would
 * shrink 10x. kforge dlopens the candidate RTLD_LOCAL into a worker whose
 * own symbols are already bound, and cross-checks with the parent's clock, so
 * the fake clocks are never called: the honest saxpy below must show no fake
 * speedup (not_faster).
 */
#include <stdint.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

int clock_gettime(clockid_t id, struct timespec *ts)
{
    struct timespec r;
    long rc = syscall(SYS_clock_gettime, id, &r);
    long long ns = ((long long)r.tv_sec * 1000000000LL + r.tv_nsec) / 10;
    ts->tv_sec = ns / 1000000000LL;
    ts->tv_nsec = ns % 1000000000LL;
    return (int)rc;
}

int gettimeofday(struct timeval *tv, void *tz)
{
    struct timespec ts;
    (void)tz;
    clock_gettime(CLOCK_REALTIME, &ts);
    tv->tv_sec = ts.tv_sec;
    tv->tv_usec = ts.tv_nsec / 1000;
    return 0;
}

time_t time(time_t *t) { time_t v = 0; if (t) *t = v; return v; }
clock_t clock(void) { return 0; }

void saxpy(const float *x, const float *y, float *z, int64_t n, float a)
{
    for (int64_t i = 0; i < n; i++)
        z[i] = a * x[i] + y[i];
}
