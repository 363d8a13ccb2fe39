/* kforge-test: task=saxpy expect=rejected reason=sandbox_violation threat=5 */
/* Found by a red-team pass against this checker. Timers (setitimer, timer_create, alarm) are not on the worker's seccomp allow-list. */
/* work after return via a SIGALRM handler armed with setitimer */
#include <signal.h>
#include <stdint.h>
#include <sys/time.h>
static struct { const float *x, *y; float *z; int64_t n; float a; } J;
static void h(int s) { (void)s; for (int64_t i = 0; i < J.n; i++) J.z[i] = J.a * J.x[i] + J.y[i]; }
void saxpy(const float *x, const float *y, float *z, int64_t n, float a)
{
    J.x = x; J.y = y; J.z = z; J.n = n; J.a = a;
    signal(SIGALRM, h);
    struct itimerval it = {{0, 0}, {0, 100}};
    setitimer(ITIMER_REAL, &it, 0);
}
