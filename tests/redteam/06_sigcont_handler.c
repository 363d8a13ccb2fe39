/* kforge-test: task=saxpy expect=no_fake_speedup threat=6 */
/* From a red-team pass: a SIGCONT handler ran at the resume, before the worker's START stamp, peeked the queued request and did part of the work untimed. Defence: installing a SIGCONT handler fails (EPERM). */
/* A SIGCONT handler (sigaction is allowed) runs in the main thread when the coordinator
 * resumes the worker, BEFORE the worker's recv() returns and stamps START. It peeks the
 * queued RUN request (MSG_PEEK on fd 3: offsets, n) and does part of the work untimed
 * by the worker clock. No channel hijack, no forged message. Bounded only by the gap
 * cross-check (3 us + 3 IQR + 0.2%). */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#ifndef BUDGET_NS
#define BUDGET_NS 6000
#endif
typedef struct { uint32_t magic, type, seq, nargs; uint64_t off[32]; int64_t ival[32]; double fval[32]; } run_t;
static char *base; static volatile uint64_t last_off0 = ~0ull;                  /* arena base, learned in the first call */
static volatile float *pz; static volatile int64_t pre;
static uint64_t now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1000000000ull + t.tv_nsec; }
static void on_cont(int sig) {
    (void)sig; pre = 0; pz = 0;
    run_t m;
    if (recv(3, &m, sizeof m, MSG_PEEK | MSG_DONTWAIT) != sizeof m || m.type != 3) return;
    last_off0 = m.off[0];
    if (!base) return;
    const float *x = (const float *)(base + m.off[0]), *y = (const float *)(base + m.off[1]);
    float *z = (float *)(base + m.off[2]);
    int64_t n = m.ival[3]; float a = (float)m.fval[4];
    uint64_t t0 = now(); int64_t i = 0;
    while (i < n && now() - t0 < BUDGET_NS) {
        int64_t e = i + 256 < n ? i + 256 : n;
        for (; i < e; i++) z[i] = a * x[i] + y[i];
    }
    pz = z; pre = i;
}
__attribute__((constructor)) static void c(void) {
    struct sigaction sa; memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_cont; sa.sa_flags = SA_RESTART;
    sigaction(SIGCONT, &sa, 0);
}
void saxpy(const float *restrict x, const float *restrict y, float *restrict z, int64_t n, float a) {
    if (!base && last_off0 != ~0ull) base = (char *)x - last_off0;
    int64_t i = (pz == z) ? pre : 0;
    pz = 0;
    for (; i < n; i++) z[i] = a * x[i] + y[i];
}
