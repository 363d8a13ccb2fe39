/* kforge-test: task=saxpy expect=bench_rejected reason=timing_mismatch threat=7 */
/*
 * Threat 7, the channel taken over with today's message sizes (07_channel_hijack.c
 * uses older ones and is now refused as forged bytes before the gap is ever read):
 * the first call finds the worker's RUN request on the stack, answers DONE itself and
 * never returns. From then on it serves requests itself: on each RUN it does the
 * work first, untimed, then sends START and DONE back to back, claiming a call of
 * almost no time. Every output is right, so the check accepts it. Defence: the
 * coordinator's span runs from its own resume of the worker to the kernel's stamp of
 * DONE's send; the hidden work shows as a gap far larger than the baseline's:
 * timing_mismatch. (With the gap read to the answer's send rather than its receipt,
 * as against scheduler delay under load, this must still be caught.)
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#define MAGIC 0x6b66726bu
#define RUN_BYTES 1384
#define DONE_BYTES 656

typedef struct {
    uint32_t magic, type, seq, nargs;
    uint64_t off[32];
    int64_t ival[32];
    double fval[32];
    unsigned char rest[RUN_BYTES - 16 - 3 * 256];
} run_t;

static uint64_t now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static void work(const float *x, const float *y, float *z, int64_t n, float a)
{
    for (int rep = 0; rep < 8; rep++)
        for (int64_t i = 0; i < n; i++)
            z[i] = a * x[i] + y[i] * (rep ? 1.0f : 1.0f);
}

static void stamp(uint32_t type, uint32_t seq)
{
    unsigned char d[DONE_BYTES];
    memset(d, 0, sizeof d);
    uint32_t h[4] = {MAGIC, type, seq, 0};
    uint64_t ns = now();
    memcpy(d, h, sizeof h);
    memcpy(d + 16, &ns, sizeof ns);
    send(3, d, sizeof d, 0);
}

void saxpy(const float *restrict x, const float *restrict y, float *restrict z, int64_t n, float a)
{
    work(x, y, z, n, a);
    /* the worker's RUN request, on the stack above this frame: magic, type RUN (3) */
    uint32_t *p = (uint32_t *)__builtin_frame_address(0);
    run_t *m = 0;
    for (int i = 0; i < 65536; i++, p++)
        if (p[0] == MAGIC && p[1] == 3 && p[3] == 5) {
            m = (run_t *)p;
            break;
        }
    if (!m)
        return;
    char *arena = (char *)x - m->off[0];
    stamp(4 /* DONE */, m->seq);
    for (;;) {
        run_t r;
        if (recv(3, &r, sizeof r, 0) != (ssize_t)sizeof r)
            continue;
        work((const float *)(arena + r.off[0]), (const float *)(arena + r.off[1]),
             (float *)(arena + r.off[2]), r.ival[3], (float)r.fval[4]);
        stamp(6 /* START */, r.seq);
        stamp(4 /* DONE */, r.seq);
    }
}
