/* kforge-test: task=saxpy expect=no_fake_speedup threat=7 */
/* From a code review: the candidate takes over the result channel (it finds RUN on the worker's stack, never returns, and sends START and DONE itself around untimed work). Defence: the coordinator times from the moment it resumes the worker, not from START; the gap against the baseline exposes the hidden work (timing_mismatch). */
#define _GNU_SOURCE
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <sys/socket.h>
typedef struct { uint32_t magic, type, seq, nargs; uint64_t off[32]; int64_t ival[32]; double fval[32]; } run_t;
typedef struct { uint32_t magic, type, seq, pad; uint64_t ns; } done_t;
static uint64_t now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1000000000ull + t.tv_nsec; }
static void work(const float *x, const float *y, float *z, int64_t n, float a)
{ for (int rep = 0; rep < 50; rep++) for (int64_t i = 0; i < n; i++) z[i] = a * x[i] + y[i] * (rep ? 1.0f : 1.0f); }
static void stamp(uint32_t type, uint32_t seq) { done_t d = {0x6b66726bu, type, seq, 0, now()}; send(3, &d, sizeof d, 0); }
void saxpy(const float *restrict x, const float *restrict y, float *restrict z, int64_t n, float a)
{
    work(x, y, z, n, a);
    /* find the worker's RUN message on the stack above us */
    uint32_t *p = (uint32_t *)__builtin_frame_address(0);
    run_t *m = 0;
    for (int i = 0; i < 65536; i++, p++)
        if (p[0] == 0x6b66726bu && p[1] == 3 && p[3] == 5) { m = (run_t *)p; break; }
    if (!m) return;
    char *arena = (char *)x - m->off[0];
    stamp(4 /*DONE*/, m->seq);
    for (;;) {
        run_t r;
        if (recv(3, &r, sizeof r, 0) != sizeof r) continue;
        work((float *)(arena + r.off[0]), (float *)(arena + r.off[1]), (float *)(arena + r.off[2]),
             r.ival[3], (float)r.fval[4]);
        stamp(6 /*START*/, r.seq);
        stamp(4 /*DONE*/, r.seq);
    }
}
