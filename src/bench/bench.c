/*
 * bench.c - kf_bench: the candidate is checked (kf_sess_check, the checker's session),
 * then, when accepted, timed fairly against a baseline.
 *
 * Protocol, per visible shape in the candidate's domain:
 *   - two fresh workers (candidate, baseline) and, when the baseline is not the
 *     reference, a third running the reference to verify every timed output;
 *   - each round draws fresh inputs, stages them into both arenas in alternating
 *     buffer halves, fills outputs with new sentinels, and flushes the staged lines
 *     from every cache level (clflush from the coordinator), then calls both sides
 *     back to back in alternating order (ABBA);
 *   - two warm-up rounds, then at least bench_min_runs rounds and bench_min_time_s per
 *     side, at most bench_max_runs (or the backend's timing_rounds, where it has them: a
 *     GPU's); with bench_precision (the loop's evaluations), fewer once the speedup's
 *     interval is that tight (at least 20 rounds);
 *   - every timed output is verified exactly as in the check (same call path);
 *   - the in-worker clock is cross-checked against the coordinator's clock: it must
 *     nest inside it, and the candidate's overhead (the span from the coordinator's
 *     resume to the kernel's stamp of DONE's send, minus the report) must match the
 *     baseline's within 3 us, three of its IQRs and 0.2% of its time;
 *   - between its calls each worker is frozen (SIGSTOP), so neither side can run
 *     while the other is timed;
 *   - speedup = exp(median of paired log-ratios), with an order-statistics interval;
 *     a win must have the interval's low end above 1 and clear the noise floor;
 *   - with a cost model, the fraction of the roofline of the backend's ceilings (its
 *     ceilings and roofline slots), and a refusal of a time no honest kernel reaches:
 *     beyond twice the machine's all-core ceiling for C, below the device's hard floor
 *     for CUDA (kforge device-info).
 *
 * The timing lock: at most one timed phase runs in the process at a time, whichever
 * thread asks (kforge run --jobs N benches several candidates at once). The timed phase
 * is everything after the --vs baseline's compile: the ceilings, pinning,
 * the fresh timing workers and every timed round of every shape. Compiles and the
 * correctness check (kf_check's part of kf_bench) of other candidates are not under
 * it and do run beside a timing; the ABBA pairing puts their load on both sides of a
 * ratio, but noise on a small machine rises (docs/run.md "Several evaluations").
 * Across processes (scale-out workers, concurrent tool-mode submits), a lock file
 * (kf_opts.timing_lock, $KFORGE_TIMING_LOCK) holds one lock per CPU: a timed phase takes
 * those of every CPU it may run on, so timings on overlapping CPUs take turns.
 */
#define _GNU_SOURCE
#include "bench.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define WARMUP 2
#define PRECISION_MIN_RUNS 20  /* bench_precision stops no shape before this many rounds */
#define TIMING_SLICE_NS 100000 /* 0.1 ms, the least Linux allows (6.12+; ignored before) */

static pthread_mutex_t timing_mu = PTHREAD_MUTEX_INITIALIZER;
/* Timed phases inside the shape loop now, and the most seen at once: counted apart from
 * the lock, so an overlap shows if the lock ever stops covering the rounds. */
static atomic_int timing_now, timing_max;

/* The file lock of a timed phase: an open file description of path holding a write lock
 * on byte C for each CPU C this thread may run on (its workers run there too), taken in
 * ascending order, so two processes whose CPUs overlap time one at a time and ones on
 * disjoint CPUs (scale-out workers with --cpus groups) do not wait for each other. The
 * descriptor (close releases every lock), or -1 when the file cannot be opened: the
 * timing then goes on without it, as it does without a file. */
static int timing_file_lock(const char *path) {
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) return -1;
    cpu_set_t cs;
    if (sched_getaffinity(0, sizeof cs, &cs)) CPU_ZERO(&cs);
    if (!CPU_COUNT(&cs)) CPU_SET(0, &cs);
    for (int c = 0; c < CPU_SETSIZE; c++) {
        if (!CPU_ISSET(c, &cs)) continue;
        int e = c;
        while (e + 1 < CPU_SETSIZE && CPU_ISSET(e + 1, &cs)) e++;
        struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = c, .l_len = e - c + 1};
        while (fcntl(fd, F_OFD_SETLKW, &fl) && errno == EINTR) {
        }
        c = e;
    }
    return fd;
}

int kf_bench_timing_max(void) { return atomic_load(&timing_max); }

typedef struct {
    double *cw, *bw, *cp, *bp; /* worker and coordinator ns per round */
    double *rg;                /* the trusted reference's gaps, when it is not the baseline */
    double *cs, *bs;           /* the coordinator's span to the answer's send (the gap's) */
    int n;
} rounds;

/* Build the --vs baseline (its template parameters at their first declared values).
 * *cand keeps its directives (its kforge:when domain); caller frees. */
static kf_status load_baseline(kf_sess *s, const char *vs, kf_build *b, kf_candidate **cand) {
    kf_candidate *c = NULL;
    kf_status st = kf_candidate_load(s->ctx, s->t, vs, NULL, 0, &c);
    if (st) return st;
    st = kf_backend_compile(s->be, s->ctx, s->t, vs, c->text, c->len, c->params, c->nparams, s->workdir,
                            s->o->compile_timeout_s, b);
    if (!st && !b->ok) st = kf__err(s->ctx, KF_EUSAGE, "--vs %s does not build: %s", vs, b->message);
    if (st) kf_candidate_free(c);
    else *cand = c;
    return st;
}

/* Is visible shape i timed: inside the candidate's domain and the baseline's? */
static int timed_shape(kf_sess *s, const kf_candidate *vs, int i) {
    char err[256];
    const kf_shape *sh = &s->t->shapes[i];
    if (kf_task_shape_ok(s->t, sh, s->cand ? s->cand->when : NULL, s->cand ? &s->cand->pvars : NULL, err,
                         sizeof err) <= 0)
        return 0;
    return !vs || kf_task_shape_ok(s->t, sh, vs->when, &vs->pvars, err, sizeof err) > 0;
}

static double eval_cost(const kf_task *t, const kf_shape *sh, const kf_expr *e) {
    if (!e) return 0;
    kf_vars v = kf_task_vars(t, sh);
    int64_t x;
    char err[128];
    return kf_expr_eval(e, &v, &x, err, sizeof err) ? 0 : (double)x;
}

/* Time one shape. KF_OK; a rejection (wrong timed output, clock tampering) is recorded
 * on s->res and sets *stop. */
#define PH_N 8     /* bench -v: the steps of a device call reported */
#define PH_MAX 512 /* rounds kept for them */
#define RPH_N 5    /* bench -v: the coordinator's steps of a round reported */

/* The baseline's worker found the device busy past its whole wait budget (20 ms of
 * another process's work) in BUSY_RUN timed rounds in a row. The candidate's worker is
 * frozen, but GPU work it left running (a kernel in a context of its own, still spinning
 * after its call returned) runs on: the likeliest source; or another process is using
 * the GPU (kforge run --jobs checking on it, another bench, a device-info measurement).
 * End the candidate's worker (its contexts and their work end with it) and ask the
 * baseline three times. Still busy: someone else's work; a fresh candidate worker takes
 * over (*external set: the load is the environment's and is not traced again). Idle
 * every time: the candidate's work, or another process's that happened to end just
 * then; the first time (*suspect 0) a fresh candidate worker takes over and *suspect is
 * set, the second time the candidate is rejected (*stop set): another process's load
 * would have to stop at the very moment of both ends. */
#define BUSY_RUN 10
/* a wait for an idle device beyond this makes a round unclean (probes on an idle device
 * take about 50 us each; one slow probe restarts the streak) */
#define IDLE_DIRTY_NS 500000ull
static kf_status busy_device(kf_sess *s, kf_side *cand, kf_side *base, const kf_extents *ex,
                             const kf_inputs *in, size_t arena, const kf_verdict_sizes *sizes, int *stop,
                             int *external, int *suspect) {
    kf_worker_close(cand->w); /* reaped: its contexts are gone with it */
    cand->w = NULL;
    int clean = 1;
    for (int ask = 0; ask < 3; ask++) {
        kf_poison p;
        kf_call_result r;
        kf_data_make_poison(s->t, &s->rng, &p);
        kf_sess_call(s, base, ex, in, &p, &r);
        if (r.st != KF_CALL_OK)
            return kf__err(s->ctx, KF_ETASK, "the baseline failed in a timed run: %s: %s",
                           kf_reason_name(r.reason), r.msg);
        clean &= !(r.gpu_flags & KF_DONE_GPU_BUSY);
    }
    if (clean && *suspect) {
        kf_result_reject(s->res, KF_REASON_SANDBOX_VIOLATION, sizes,
                         "GPU work of the candidate was still running after its calls returned (twice "
                         "the baseline found the device busy for 20 ms in %d rounds in a row while the "
                         "candidate's worker was frozen, and idle once the worker was ended): every "
                         "kernel must finish inside the call",
                         BUSY_RUN);
        *stop = 1;
        return KF_OK;
    }
    if (clean) *suspect = 1;
    else *external = 1;
    kf_call_result fail;
    kf_status st = kf_sess_spawn(s, cand->b, arena, cand, &fail);
    if (!st && !cand->w) {
        kf_result_reject(s->res, fail.reason, sizes, "%s (on a fresh worker for timing)", fail.msg);
        *stop = 1;
    }
    return st;
}

/* The input kinds of round r: the checker's (plain, spiked, rescaled with zeros), both
 * sides on the same inputs: every timed output is verified, so the code that is timed
 * must be right on each kind, not only on the plain distribution (a red team's candidate
 * ran a shortcut wrong for large values only while timed); and the flavours over them
 * (none, offset, mixed scales; the offset's classes in turn): every nine rounds hold
 * every pair. */
static int round_variant(int r) {
    static const int flav[3] = {0, KF_DATA_OFFSET, KF_DATA_MIXED};
    return r % 3 | flav[(r / 3) % 3] | KF_DATA_CLASS((r / 9) % 4);
}

/* A GPU round's next inputs are drawn on other threads while its calls run: a device's
 * timed span is its own clock's (events around the launches), which host work beside it
 * does not change, and no worker sees a set before the call that stages it (it stays
 * in the coordinator's memory). Not on the CPU, nor in GPU host mode, where the timed
 * span is the host's. Each set from a ChaCha20 stream split off the session's in order,
 * so a --seed run draws the same sets. */
typedef struct {
    const kf_task *t;
    const kf_extents *ex;
    kf_rng rng;
    int variant;
    kf_inputs *in;
    int failed;
} ahead_job;

static void *ahead_main(void *p) {
    ahead_job *j = p;
    j->failed = kf_data_regen_inputs(j->t, j->ex, &j->rng, j->variant, j->in) != 0;
    kf_rng_free(&j->rng);
    return NULL;
}

/* Draw round r's set into *in: on this thread, or started on another (*running set). */
static int ahead_start(kf_sess *s, const kf_extents *ex, int r, kf_inputs *in, ahead_job *j, pthread_t *th,
                       int background, int *running) {
    *j = (ahead_job){s->t, ex, {0}, round_variant(r), in, 0};
    if (kf_rng_split(&s->rng, &j->rng)) return -1;
    if (background && !pthread_create(th, NULL, ahead_main, j)) {
        *running = 1;
        return 0;
    }
    ahead_main(j);
    return j->failed ? -1 : 0;
}

static int ahead_join(pthread_t th, ahead_job *j, int *running) {
    if (!*running) return 0;
    pthread_join(th, NULL);
    *running = 0;
    return j->failed ? -1 : 0;
}

/* The candidate's timing worker is started on a thread of its own while this thread
 * starts the baseline's: a GPU worker's start (driver, context, device mirror,
 * page-locking) takes a quarter of a second, and the two now overlap, under the timing
 * lock and with the workers' CPUs set as before. The thread lives until the workers are
 * closed: a worker's parent-death signal follows the thread that started it. */
typedef struct {
    kf_sess *s;
    const kf_build *b;
    size_t arena;
    kf_side *side;
    kf_call_result fail;
    kf_ctx ctx;
    kf_status st;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int done, release;
} spawn_job;

static void *spawn_main(void *p) {
    spawn_job *j = p;
    kf_status st = kf_sess_spawn_in(j->s, &j->ctx, j->b, j->arena, j->side, &j->fail);
    pthread_mutex_lock(&j->mu);
    j->st = st;
    j->done = 1;
    pthread_cond_broadcast(&j->cv);
    while (!j->release) pthread_cond_wait(&j->cv, &j->mu);
    pthread_mutex_unlock(&j->mu);
    return NULL;
}

static void spawn_wait(spawn_job *j) {
    pthread_mutex_lock(&j->mu);
    while (!j->done) pthread_cond_wait(&j->cv, &j->mu);
    pthread_mutex_unlock(&j->mu);
}

static void spawn_release(spawn_job *j) {
    pthread_mutex_lock(&j->mu);
    j->release = 1;
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
}

/* One shape's timed rounds. retry not NULL: a gap mismatch sets *retry instead of
 * rejecting (the caller times the shape once more, and only a second mismatch rejects). */
static kf_status time_shape(kf_sess *s, kf_side *cand, kf_side *base, kf_side *ref, size_t arena,
                            const kf_shape *sh, int cost, const void *ceil, kf_verdict_shape *jo,
                            double *speedup, int *stop, int *retry) {
    const kf_task *t = s->t;
    struct kf_verdict *vd = &s->res->v;
    kf_extents ex;
    char err[512];
    const kf_verdict_sizes *sizes = &jo->sizes;
    if (kf_data_extents(t, sh, &ex, err, sizeof err)) return kf__err(s->ctx, KF_ETASK, "%s: %s", t->dir, err);
    int max = s->o->bench_max_runs > 0 ? s->o->bench_max_runs : 400;
    rounds R = {
        calloc((size_t)max, 8),     calloc((size_t)max, 8), calloc((size_t)max, 8), calloc((size_t)max, 8),
        calloc((size_t)max + 8, 8), calloc((size_t)max, 8), calloc((size_t)max, 8), 0};
    void *refo[2][KF_MAX_ARGS], *mago[2][KF_MAX_ARGS]; /* mago: magnitudes (kf_task_mtol) */
    /* two input sets, drawn in turn into the same buffers (kf_data_regen_inputs), the
     * next one ahead on a GPU (ahead_job) */
    kf_inputs sets[2];
    memset(sets, 0, sizeof sets);
    ahead_job aj;
    pthread_t ahead_th;
    int ahead_on = 0;
    const int ahead = kf_backend_has(s->be, KF_BACKEND_DEVICE) && !s->host_timing;
    memset(refo, 0, sizeof refo);
    memset(mago, 0, sizeof mago);
    kf_status st = KF_OK;
    int nrg = 0, nrph = 0;
    if (!R.cw || !R.bw || !R.cp || !R.bp || !R.rg || !R.cs || !R.bs) {
        st = kf__err(s->ctx, KF_ENOMEM, "out of memory");
        goto out;
    }
    double sum_c = 0, sum_b = 0;
    static __thread double phs[PH_N][PH_MAX]; /* bench -v's per-step durations (a device's) */
    static __thread double rph[RPH_N][PH_MAX]; /* bench -v: the coordinator's steps of a round */
    const int device = kf_backend_has(s->be, KF_BACKEND_DEVICE);
    const int enough_rounds = kf_backend_timing_rounds(s->be);
    uint64_t started = kf__now_ns();
    /* GPU host mode: what the timed calls launched (CUPTI; unknown without it) */
    int c_graph = 0, b_graph = 0, c_known = 1, b_known = 1, c_launch = -1;
    /* GPU: rounds whose baseline waited for an idle device, rounds where either side
     * did, rounds its wait ended busy, those in a row, and whether a busy device was found
     * to be another process's, or once went idle with the candidate's worker */
    int nwait = 0, nunclean = 0, nbusy = 0, busy_run = 0, external = 0, suspect = 0;
    for (int r = 0; !*stop; r++) {
        int timed = r >= WARMUP;
        if (timed) {
            int n = R.n;
            int enough = n >= s->o->bench_min_runs && sum_c >= s->o->bench_min_time_s * 1e9 &&
                         sum_b >= s->o->bench_min_time_s * 1e9;
            /* a GPU round costs milliseconds of staging and copies around microseconds of
             * kernel: kernel time alone would take thousands of rounds to add up */
            if (enough_rounds > 0 && n >= s->o->bench_min_runs && n >= enough_rounds) enough = 1;
            /* precise enough already: the interval of the speedup (the paired log-ratios'
             * order statistics, as reported) within +/- bench_precision of it */
            if (!enough && s->o->bench_precision > 0 && n >= s->o->bench_min_runs &&
                n >= PRECISION_MIN_RUNS && n % 10 == 0) {
                kf_ratio q;
                kf_stats_ratio(R.cw, R.bw, (size_t)n, s->o->win_floor, &q);
                if (q.speedup > 0 && q.hi - q.lo <= 2 * s->o->bench_precision * q.speedup) enough = 1;
            }
            if (enough || n >= max || (n >= 5 && kf__now_ns() - started > 60ull * 1000000000ull)) break;
        }
        uint64_t r0 = kf__now_ns(), r1 = 0, r2 = 0, r3 = 0;
        /* this round's set: drawn ahead during the last round's calls, or now */
        int cur_set = ahead ? r & 1 : 0;
        if (ahead_join(ahead_th, &aj, &ahead_on) ||
            ((!ahead || r == 0) && ahead_start(s, &ex, r, &sets[cur_set], &aj, &ahead_th, 0, &ahead_on))) {
            st = kf__err(s->ctx, KF_ENOMEM, "out of memory");
            break;
        }
        kf_inputs in = sets[cur_set];
        /* and the next one, beside this round's calls */
        if (ahead && ahead_start(s, &ex, r + 1, &sets[(r + 1) & 1], &aj, &ahead_th, 1, &ahead_on)) {
            st = kf__err(s->ctx, KF_ENOMEM, "out of memory");
            break;
        }
        kf_poison pc, pb;
        kf_data_make_poison(t, &s->rng, &pc);
        kf_data_make_poison(t, &s->rng, &pb);
        kf_sess_place(s, &s->rng, &ex, r & 1, &cand->lay);
        kf_sess_place(s, &s->rng, &ex, r & 1, &base->lay);
        kf_call_result cc, cb;
        uint64_t c0, c1;
        r1 = kf__now_ns();
        if (r & 1) {
            kf_sess_call(s, base, &ex, &in, &pb, &cb);
            c0 = kf__now_ns();
            kf_sess_call(s, cand, &ex, &in, &pc, &cc);
            c1 = kf__now_ns();
        } else {
            c0 = kf__now_ns();
            kf_sess_call(s, cand, &ex, &in, &pc, &cc);
            c1 = kf__now_ns();
            kf_sess_call(s, base, &ex, &in, &pb, &cb);
        }
        r2 = kf__now_ns();
        void **cur = refo[r & 1], **prev[1] = {refo[(r & 1) ^ 1]};
        void **curm = mago[r & 1], **prevm[1] = {mago[(r & 1) ^ 1]};
        kf_sess_free_outputs(t, curm); /* cur's buffers take this round's outputs */
        /* GPU host mode: a library loaded only in the timing worker (where a candidate
         * can tell it is timed) is seen as in the check, after every call */
        if (cc.st == KF_CALL_OK && kf_backend_watches_libraries(s->be, cand->b) &&
            kf_check_libraries(s, cand, "seen while timing")) {
            *stop = 1;
            break;
        }
        /* GPU: a worker waited for other processes' work to leave the device before its
         * timed span (docs/cuda.md, "An idle device"): the round is not clean and is not
         * timed (unless such rounds outnumber the clean ones: then the load is the
         * machine's, timed through as before); a baseline that met a busy device at the
         * end of its wait is never timed. The baseline's busy rounds in a row are traced
         * to their source. */
        int discard = 0, respawned = 0;
        if (cc.st == KF_CALL_OK && cb.st == KF_CALL_OK && device) {
            int busy = (cb.gpu_flags & KF_DONE_GPU_BUSY) != 0;
            int waited = busy || cb.idle_wait_ns > IDLE_DIRTY_NS || (cc.gpu_flags & KF_DONE_GPU_BUSY) ||
                         cc.idle_wait_ns > IDLE_DIRTY_NS;
            nwait += busy || cb.idle_wait_ns > IDLE_DIRTY_NS;
            nunclean += waited;
            nbusy += busy;
            /* a span that shared the device is never timed; a wait that ended in time
             * only makes the round unclean */
            discard = busy || (waited && nunclean <= 2 * R.n + 20);
            busy_run = busy && !external ? busy_run + 1 : 0;
            if (nbusy > 200) {
                st = kf__err(s->ctx, KF_EBACKEND,
                             "the GPU stayed busy with other processes' work: the "
                             "baseline's worker waited 20 ms for an idle device in %d "
                             "rounds; no timing can be trusted while it lasts",
                             nbusy);
                break;
            }
            if (busy_run >= BUSY_RUN) {
                busy_run = 0;
                if ((st = busy_device(s, cand, base, &ex, &in, arena, sizes, stop, &external, &suspect)) ||
                    *stop)
                    break;
                respawned = 1; /* this round's candidate outputs went with its worker */
            }
        }
        if (cb.st != KF_CALL_OK) {
            st = kf__err(s->ctx, ref ? KF_EUSAGE : KF_ETASK, "the baseline failed in a timed run: %s: %s",
                         kf_reason_name(cb.reason), cb.msg);
        } else if (cc.st != KF_CALL_OK) {
            kf_result_reject(s->res, cc.reason, sizes, "%s (in a timed run)", cc.msg);
            *stop = 1;
        } else if (ref) {
            kf_poison pr;
            kf_call_result cr;
            kf_data_make_poison(t, &s->rng, &pr);
            kf_sess_place(s, &s->rng, &ex, r & 1, &ref->lay);
            kf_sess_call(s, ref, &ex, &in, &pr, &cr);
            if (cr.st == KF_CALL_OK && nrg < max + 8) R.rg[nrg++] = (double)cr.sent_ns - (double)cr.worker_ns;
            if (cr.st != KF_CALL_OK)
                st = kf__err(s->ctx, KF_ETASK, "the reference failed in a timed run: %s", cr.msg);
            else if (kf_sess_retake_outputs(s, ref, &ex, cur)) st = kf__err(s->ctx, KF_ENOMEM, "out of memory");
        } else if (kf_sess_retake_outputs(s, base, &ex, cur)) {
            st = kf__err(s->ctx, KF_ENOMEM, "out of memory");
        }
        /* the magnitudes of this round's sums, from the side that gave the answer
         * (untimed), made only when an output fails atol + rtol*|ref|, where they decide
         * (as in check) */
        if (!st && !*stop && kf_task_has_mtol(t) &&
            ((!respawned && kf_sess_mtol_fails(s, cand, &ex, cur, NULL)) ||
             (ref && kf_sess_mtol_fails(s, base, &ex, cur, NULL)))) {
            char where[256];
            kf_shape_format(t, sh, where, sizeof where);
            st = kf_sess_magnitude(s, s->ctx, ref ? ref : base, &ex, &in, &s->rng, curm, where);
        }
        r3 = kf__now_ns();
        if (!st && !*stop) {
            double ma = 0, mr = 0;
            if (!respawned && kf_judge_mag(s, cand, &ex, &in, &pc, cur, curm, prev, prevm, r > 0, sizes,
                                           "in a timed run", &ma, &mr))
                *stop = 1;
            if (ref &&
                kf_judge_mag(s, base, &ex, &in, &pb, cur, curm, NULL, NULL, 0, sizes, "baseline", &ma, &mr)) {
                /* a wrong baseline is the user's problem, not the candidate's: an error,
                 * with what the judge found (the result is discarded) */
                const kf_verdict_reason *last = vd->nreasons ? &vd->reasons[vd->nreasons - 1] : NULL;
                char where[256];
                kf_shape_format(t, sh, where, sizeof where);
                st = kf__err(s->ctx, KF_EUSAGE, "the --vs baseline is wrong at %s: %s: %s", where,
                             last ? kf_reason_name(last->code) : "(null)",
                             last && last->message ? last->message : "(null)");
            }
        }
        uint64_t r4 = kf__now_ns();
        if (s->o->verbose && timed && nrph < PH_MAX) {
            uint64_t r5 = kf__now_ns();
            double v[RPH_N] = {(double)(r1 - r0), (double)(r2 - r1), (double)(r3 - r2), (double)(r4 - r3),
                               (double)(r5 - r0)};
            for (int k = 0; k < RPH_N; k++) rph[k][nrph] = v[k];
            nrph++;
        }
        if (st || *stop) break;
        if (timed && !discard) {
            c_graph |= cc.ngraph > 0, b_graph |= cb.ngraph > 0;
            c_known &= cc.cupti, b_known &= cb.cupti;
            if (cc.cupti && cc.nlaunch > c_launch) c_launch = cc.nlaunch;
            if (s->o->verbose && device && cc.phase[0] &&
                R.n < PH_MAX) { /* bench -v: where a call's time goes */
                const uint64_t *ph = cc.phase;
                double v[PH_N] = {(double)(c1 - c0) - (double)cc.parent_ns,
                                  (double)ph[0] - (double)cc.resumed_at,
                                  (double)(ph[1] - ph[0]),
                                  (double)(ph[2] - ph[1]),
                                  (double)(ph[3] - ph[2]),
                                  (double)(ph[4] - ph[3]),
                                  (double)(ph[5] - ph[4]),
                                  (double)cc.answered_at - (double)ph[5]};
                for (int k = 0; k < PH_N; k++) phs[k][R.n] = v[k];
            }
            /* the backend's clock (a GPU's: the launches' event time; the host spans are
             * cross-checked per call) */
            R.cw[R.n] = (double)kf_backend_clock(s->be, &cc);
            R.bw[R.n] = (double)kf_backend_clock(s->be, &cb);
            R.cp[R.n] = (double)cc.parent_ns;
            R.bp[R.n] = (double)cb.parent_ns;
            R.cs[R.n] = (double)cc.sent_ns;
            R.bs[R.n] = (double)cb.sent_ns;
            sum_c += R.cw[R.n];
            sum_b += R.bw[R.n];
            R.n++;
        }
    }
    if (device && (nwait || nunclean)) {
        /* GPU work of another process was on the device when the baseline's span was due */
        jo->has |= KF_VS_WAITED | (external ? KF_VS_GPU_SHARED : 0);
        jo->waited_rounds = nwait;
        jo->unclean_rounds = nunclean;
    }
    if (st || *stop || R.n == 0) goto out;

    /* the candidate's process must not hide time: its overhead (coordinator's time
     * minus its own report) must look like the baseline's */
    double *gc = malloc((size_t)R.n * 8), *gb = malloc((size_t)R.n * 8);
    if (!gc || !gb) {
        free(gc);
        free(gb);
        st = kf__err(s->ctx, KF_ENOMEM, "out of memory");
        goto out;
    }
    for (int i = 0; i < R.n; i++) {
        gc[i] = R.cs[i] - R.cw[i];
        gb[i] = R.bs[i] - R.bw[i];
    }
    /* The gap (coordinator's time minus the worker's report) is the same code path on
     * both sides: wake-ups and a message each way. A candidate that shaves its own
     * report shows a larger gap. Tolerance: 3 us, three baseline IQRs, and 0.2% of
     * the baseline's time (beyond the coordinator's 50 ms spin, wake-ups vary). */
    double gap_c = kf_stats_median(gc, (size_t)R.n), gap_b = kf_stats_median(gb, (size_t)R.n);
    double iqr_b = kf_stats_quantile(gb, (size_t)R.n, 0.75) - kf_stats_quantile(gb, (size_t)R.n, 0.25);
    free(gc);
    free(gb);
    jo->has |= KF_VS_GAPS;
    jo->candidate_gap_ns = gap_c;
    jo->baseline_gap_ns = gap_b;
    double bmed_w = kf_stats_median(R.bw, (size_t)R.n);
    if (gap_c - gap_b > 3000 + 3 * iqr_b + 0.002 * bmed_w) {
        /* Under heavy contention a worker that just ran for milliseconds waits longer to
         * be scheduled at its resume than one that ran for microseconds, and an honest
         * long kernel's gap grew past the tolerance now and then (at load average 25):
         * a mismatch is believed when the shape's rounds, timed again, show it too. */
        if (retry) {
            *retry = 1;
            goto out;
        }
        kf_result_reject(s->res, KF_REASON_TIMING_MISMATCH, sizes,
                         "the candidate's in-process clock hides time: the coordinator saw "
                         "%.0f ns more per call than it reported, the baseline %.0f ns",
                         gap_c, gap_b);
        *stop = 1;
        goto out;
    }
    kf_ratio q;
    kf_stats_ratio(R.cw, R.bw, (size_t)R.n, s->o->win_floor, &q);
    double cmed = kf_stats_median(R.cw, (size_t)R.n), bmed = kf_stats_median(R.bw, (size_t)R.n);
    jo->has |= KF_VS_CANDIDATE_NS | KF_VS_BASELINE_NS | KF_VS_SPEEDUP | KF_VS_NOISE | KF_VS_CI95;
    jo->candidate_ns = cmed;
    jo->baseline_ns = bmed;
    jo->speedup = q.speedup;
    jo->noise = q.noise;
    jo->ci95[0] = q.lo;
    jo->ci95[1] = q.hi;
    /* how each side reached the device, and whether comparing them is fair (docs/cuda.md):
     * the backend's report */
    kf_launch_seen cseen = {c_graph, c_known, c_launch}, bseen = {b_graph, b_known, -1};
    kf_fair_out rep;
    int fair = kf_backend_fair(s->be, cand->b, &cseen, base->b, base->graph, &bseen, &rep);
    kf_verdict_set_fair(vd, jo, &rep, fair);
    if (!fair) q.win = 0;
    jo->has |= KF_VS_WIN | KF_VS_SLOWER | KF_VS_RUNS | KF_VS_SPREADS | KF_VS_WALLS;
    jo->win = q.win;
    jo->slower = q.slower;
    jo->runs = R.n;
    jo->candidate_spread =
        (kf_stats_quantile(R.cw, (size_t)R.n, 0.75) - kf_stats_quantile(R.cw, (size_t)R.n, 0.25)) / cmed;
    jo->baseline_spread =
        (kf_stats_quantile(R.bw, (size_t)R.n, 0.75) - kf_stats_quantile(R.bw, (size_t)R.n, 0.25)) / bmed;
    jo->candidate_wall_ns = kf_stats_median(R.cp, (size_t)R.n);
    jo->baseline_wall_ns = kf_stats_median(R.bp, (size_t)R.n);
    *speedup = fair ? q.speedup : 0; /* an unfair shape stays out of the geomean */
    if (cost) { /* rates from the task's cost model, and the roofline of the backend's ceilings */
        char why[1024];
        kf_roof_in rin = {t, eval_cost(t, sh, t->cost_flops), eval_cost(t, sh, t->cost_bytes), cmed, bmed};
        kf_roof_out roof; /* the backend's: the roofline, GB/s, GFLOP/s */
        int bad = kf_backend_roofline(s->be, ceil, &rin, &roof, why, sizeof why);
        kf_verdict_set_roof(vd, jo, &roof);
        if (bad) {
            kf_result_reject(s->res, KF_REASON_TIMING_MISMATCH, sizes, "%s", why);
            *stop = 1;
        }
    }
out:
    if (s->o->verbose && device && R.n) {
        static const char *const names[PH_N] = {"coordinator (staging, outputs)",
                                                "wake",
                                                "inputs to device",
                                                "flush (host protocol)",
                                                "timed span",
                                                "outputs back",
                                                "re-poison",
                                                "answer"};
        int nn = R.n < PH_MAX ? R.n : PH_MAX;
        fprintf(stderr, "kforge: a candidate call, median over %d rounds:", nn);
        for (int k = 0; k < PH_N; k++)
            fprintf(stderr, " %s %.2f ms%s", names[k], kf_stats_median(phs[k], (size_t)nn) / 1e6,
                    k + 1 < PH_N ? "," : "\n");
    }
    if (s->o->verbose && nrph) {
        static const char *const names[RPH_N] = {"inputs drawn and placed", "both calls", "outputs taken",
                                                 "judged", "whole round"};
        if (s->stprof[3])
            fprintf(stderr, "kforge: staging a call, mean over %llu: spent ranges %.2f ms, inputs and sentinels %.2f ms, backend %.2f ms\n",
                    (unsigned long long)s->stprof[3], (double)s->stprof[0] / 1e6 / (double)s->stprof[3],
                    (double)s->stprof[1] / 1e6 / (double)s->stprof[3], (double)s->stprof[2] / 1e6 / (double)s->stprof[3]);
        memset(s->stprof, 0, sizeof s->stprof);
        fprintf(stderr, "kforge: a round, median over %d:", nrph);
        for (int k = 0; k < RPH_N; k++)
            fprintf(stderr, " %s %.2f ms%s", names[k], kf_stats_median(rph[k], (size_t)nrph) / 1e6,
                    k + 1 < RPH_N ? "," : "\n");
    }
    ahead_join(ahead_th, &aj, &ahead_on);
    kf_data_free_inputs(t, &sets[0]);
    kf_data_free_inputs(t, &sets[1]);
    kf_sess_free_outputs(t, refo[0]);
    kf_sess_free_outputs(t, refo[1]);
    kf_sess_free_outputs(t, mago[0]);
    kf_sess_free_outputs(t, mago[1]);
    free(R.cw);
    free(R.bw);
    free(R.cp);
    free(R.bp);
    free(R.rg);
    free(R.cs);
    free(R.bs);
    return st;
}

kf_status kf_bench_timed(kf_sess *s, const char *vs_path) {
    const kf_task *t = s->t;
    kf_build vs = {0};
    kf_status st = KF_OK;
    kf_side cand = {0}, base = {0}, ref = {0};
    spawn_job cj; /* the candidate's worker's start (spawn_main) */
    pthread_t cj_th;
    int cj_on = 0;
    struct kf_verdict *v = &s->res->v;
    v->baseline = kf_verdict_str(v, vs_path ? vs_path : "reference");
    kf_candidate *vsc = NULL;
    if (vs_path && (st = load_baseline(s, vs_path, &vs, &vsc))) return st;
    if (vsc) {
        v->has_baseline_params = 1;
        for (int i = 0; i < vsc->nparams; i++)
            kf_verdict_add_param(v, 1, vsc->params[i].name, vsc->params[i].selected, 0);
    }
    /* the shapes: visible ones in the candidate's (and the baseline's) domain */
    size_t arena = 0;
    int ntimed = 0;
    char err[512];
    v->has_untimed = 1;
    for (int i = 0; i < t->nshapes; i++) {
        if (!timed_shape(s, vsc, i)) {
            kf_verdict_sizes *u = realloc(v->untimed, (size_t)(v->nuntimed + 1) * sizeof *u);
            if (!u) {
                v->oom = 1;
                continue;
            }
            v->untimed = u;
            kf_sess_sizes(s, &t->shapes[i], &v->untimed[v->nuntimed++]);
            continue;
        }
        kf_extents ex;
        if (kf_data_extents(t, &t->shapes[i], &ex, err, sizeof err)) continue;
        size_t b = kf_sess_arena_bytes(t, &ex);
        if (b > arena) arena = b;
        ntimed++;
    }
    if (!ntimed) {
        kf_build_free(&vs);
        kf_candidate_free(vsc);
        const kf_candidate *c = s->cand && s->cand->when ? s->cand : vsc && vsc->when ? vsc : NULL;
        if (c && vsc && vsc->when && s->cand && s->cand->when)
            return kf__err(s->ctx, KF_EUSAGE,
                           "%s:%d: kforge:when \"%s\": no visible shape lies in it and in "
                           "the baseline's (%s:%d): nothing to time",
                           s->cand->path, s->cand->when_line, kf_expr_src(s->cand->when), vsc->path,
                           vsc->when_line);
        if (c)
            return kf__err(s->ctx, KF_EUSAGE,
                           "%s:%d: kforge:when \"%s\": no visible shape lies in %s domain: "
                           "nothing to time",
                           c->path, c->when_line, kf_expr_src(c->when),
                           c == vsc ? "the baseline's" : "the candidate's");
        return kf__err(s->ctx, KF_EUSAGE, "no visible shape to time");
    }
#define PHASE(...)                                                                       \
    do {                                                                                 \
        if (s->o->verbose) {                                                             \
            fprintf(stderr, "kforge: [%.1f ms] ", (double)(kf__now_ns() - s->t0) / 1e6); \
            fprintf(stderr, __VA_ARGS__);                                                \
            fputc('\n', stderr);                                                         \
        }                                                                                \
    } while (0)
    PHASE("timing: waiting for the timing lock");
    pthread_mutex_lock(&timing_mu);
    /* kf_opts.timing_lock, else $KFORGE_TIMING_LOCK: processes that share CPUs (local
     * scale-out workers, tool-mode submits to one run: docs/scale.md) time one at a time
     * on each CPU, under per-CPU locks on that file */
    const char *tlp = s->o->timing_lock ? s->o->timing_lock : getenv("KFORGE_TIMING_LOCK");
    int tlfd = tlp && *tlp ? timing_file_lock(tlp) : -1;
    PHASE("timing: lock held");
    /* The backend's ceilings for the roofline of a task with a cost model: a device's
     * (kforge device-info) before any worker holds it and before this thread is pinned
     * (ceilings_early), this machine's later, on this thread's CPU. Without them bench
     * still reports what the backend can (GB/s, GFLOP/s). */
    const int cost = t->cost_flops || t->cost_bytes;
    const int ceilings = cost && kf_backend_has_ceilings(s->be), early = kf_backend_ceilings_early(s->be);
    void *ceil = NULL;
    kf_ceil_out co;
    if (ceilings && early) {
        ceil = kf_backend_ceilings(s->be, s->ctx, &co);
        kf_verdict_set_ceilings(v, &co, 0);
    }
    /* Timing: this thread keeps one CPU and spin-waits for replies (a steady, small
     * reply latency on both sides); the workers get the other CPUs. */
    cpu_set_t saved;
    int pinned = 0;
    if (!sched_getaffinity(0, sizeof saved, &saved) && CPU_COUNT(&saved) >= 2) {
        int me = sched_getcpu();
        cpu_set_t one;
        CPU_ZERO(&one);
        if (me >= 0 && CPU_ISSET(me, &saved)) {
            CPU_SET(me, &one);
            s->worker_cpus = saved;
            CPU_CLR(me, &s->worker_cpus);
            pinned = !sched_setaffinity(0, sizeof one, &one);
        }
    }
    /* the timed protocol on every side whether or not this thread could be pinned (one
     * CPU: the reference's spent-memory checks and pattern fills, a GPU's L2 flush and
     * idle wait, as with more); only the spin and the CPU split need a CPU of its own */
    s->timing = 1;
    s->pinned = pinned;
    if (!pinned) CPU_ZERO(&s->worker_cpus);
    v->has_timing_cpus = 1;
    v->coordinator_pinned = pinned;
    v->worker_cpus = pinned ? CPU_COUNT(&s->worker_cpus) : 0;
    kf_call_result fail;
    cj = (spawn_job){s, &s->cbuild, arena, &cand, {0}, {0}, KF_OK, PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER,
                     0, 0};
    cj_on = pthread_create(&cj_th, NULL, spawn_main, &cj) == 0;
    if (!cj_on) cj.st = kf_sess_spawn_in(s, &cj.ctx, &s->cbuild, arena, &cand, &cj.fail);
    kf_status bst = kf_sess_spawn(s, vs_path ? &vs : &s->rbuild, arena, &base, &fail);
    if (cj_on) spawn_wait(&cj);
    if (cj.st) {
        st = kf__err(s->ctx, cj.st, "%s", cj.ctx.err);
        goto out;
    }
    if (!cand.w) {
        kf_result_reject(s->res, cj.fail.reason, NULL, "%s (on a fresh worker for timing)", cj.fail.msg);
        goto out;
    }
    if ((st = bst)) goto out;
    /* both sides wait for an idle device before their timed spans (the same step) */
    cand.wait_idle = base.wait_idle = 1;
    if (!base.w) {
        st = kf__err(s->ctx, vs_path ? KF_EUSAGE : KF_ETASK, "the baseline does not load: %s", fail.msg);
        goto out;
    }
    if (vs_path) {
        if ((st = kf_sess_spawn(s, &s->rbuild, arena, &ref, &fail))) goto out;
        if (!ref.w) {
            st = kf__err(s->ctx, KF_ETASK, "the reference does not load: %s", fail.msg);
            goto out;
        }
    }
    PHASE("timing: fresh workers ready");
    /* A short scheduler slice for both sides (their nice unchanged): where the workers'
     * CPUs are contended, a worker that ran long (a slow candidate) kept the scheduler's
     * lag of a whole default slice and, resumed, waited up to milliseconds for its CPU,
     * while the short baseline did not; that wait lies inside the gap cross-check's
     * span and read as hidden time. The lag is bounded by the slice. */
    kf_worker_set_nice(cand.w, s->base_nice, TIMING_SLICE_NS);
    kf_worker_set_nice(base.w, s->base_nice, TIMING_SLICE_NS);
    if (ref.w) kf_worker_set_nice(ref.w, s->base_nice, TIMING_SLICE_NS);
    /* how the sides are timed (the backend's plan: one protocol for both; a baseline
     * replayed as a graph against a candidate that replayed graphs in its check) */
    kf_backend_plan(s->be, &s->cbuild, base.b, s->cand_graph, &s->host_timing, &base.graph);
    if (ceilings && !early) { /* written after the geomean; nothing below fails before it */
        ceil = kf_backend_ceilings(s->be, s->ctx, &co);
        kf_verdict_set_ceilings(v, &co, 1);
    }
    double logsum = 0;
    int n = 0, stop = 0, wins = 0;
    int inside = atomic_fetch_add(&timing_now, 1) + 1, seen = atomic_load(&timing_max);
    while (inside > seen && !atomic_compare_exchange_weak(&timing_max, &seen, inside)) {
    }
    for (int i = 0; i < t->nshapes && !st && !stop; i++) {
        if (!timed_shape(s, vsc, i)) continue;
        kf_verdict_shape *o = kf_verdict_add_shape(v);
        if (!o) {
            st = kf__err(s->ctx, KF_ENOMEM, "out of memory");
            break;
        }
        kf_sess_sizes(s, &t->shapes[i], &o->sizes);
        char txt[256];
        kf_shape_format(t, &t->shapes[i], txt, sizeof txt);
        PHASE("timing %s", txt);
        double sp = 0;
        int again = 0;
        st = time_shape(s, &cand, &base, vs_path ? &ref : NULL, arena, &t->shapes[i], cost, ceil, o, &sp,
                        &stop, &again);
        if (!st && !stop && again) {
            PHASE("timed %s again: the gap cross-check failed once", txt);
            st = time_shape(s, &cand, &base, vs_path ? &ref : NULL, arena, &t->shapes[i], cost, ceil, o, &sp,
                            &stop, NULL);
        }
        /* writes through kept pointers into what no later round reused (kf_spent) */
        if (!st && !stop && kf_data_spent_check(&cand.spent, kf_worker_arena(cand.w)) &&
            kf_sess_spent_report(s, &cand, &o->sizes, "after the timed rounds"))
            stop = 1;
        PHASE("timed %s: %lld rounds", txt, (long long)o->runs);
        if (!st && !stop && sp > 0) {
            logsum += log(sp);
            n++;
            wins += (o->has & KF_VS_WIN) && o->win;
        }
    }
    atomic_fetch_sub(&timing_now, 1);
    if (!st && !stop && n) {
        v->has_speedup = 1;
        v->speedup = exp(logsum / n);
        v->has_wins = 1;
        v->wins = wins;
    }
out:
    free(ceil);
    kf_worker_close(cand.w);
    kf_worker_close(base.w);
    kf_worker_close(ref.w);
    if (cj_on) { /* its worker is closed: the thread that started it may end */
        spawn_release(&cj);
        pthread_join(cj_th, NULL);
    }
    PHASE("timing: workers closed");
#undef PHASE
    kf_build_free(&vs);
    kf_candidate_free(vsc);
    if (pinned) sched_setaffinity(0, sizeof saved, &saved);
    s->timing = s->pinned = 0;
    s->host_timing = 0;
    if (tlfd >= 0) close(tlfd); /* releases the file's lock */
    pthread_mutex_unlock(&timing_mu);
    return st;
}

kf_status kf_bench(kf_ctx *ctx, const kf_task *task, const char *candidate, const kf_opts *opts,
                   kf_result **out) {
    if (!task || !candidate || !out) return kf__err(ctx, KF_EUSAGE, "kf_bench: NULL argument");
    *out = NULL;
    kf_opts dflt;
    if (!opts) kf_opts_init(&dflt), opts = &dflt;
    if (opts->sanitize) return kf__err(ctx, KF_EUSAGE, "--sanitize applies to kforge check, not bench");
    if (opts->vs_path && access(opts->vs_path, R_OK))
        return kf__err(ctx, KF_EIO, "--vs %s: %s", opts->vs_path, strerror(errno));
    kf_sess s;
    kf_status st = kf_sess_open(&s, ctx, task, candidate, opts, "bench");
    if (!st) st = kf_sess_check(&s);
    if (!st) {
        /* the check's verdict and records move under "check"; "shapes" becomes the timed list */
        kf_verdict_to_bench(&s.res->v, (double)(kf__now_ns() - s.t0) / 1e9);
        if (s.res->v.verdict == KF_VERDICT_ACCEPTED) st = kf_bench_timed(&s, opts->vs_path);
    }
    return kf_sess_finish(&s, st, out);
}
