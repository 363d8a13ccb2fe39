/*
 * check.c - the checker: is this candidate correct on every shape it claims?
 *
 * For each shape (visible, then hidden, then edge) the candidate makes four calls and
 * the reference three, each in its own sandboxed worker:
 *   T0  fresh inputs (declared distributions), buffers in arena half A
 *   T1  fresh inputs with spikes, half B                  (stale vs T0)
 *   T2  fresh rescaled inputs in the SAME buffers as T1   (pointer memo vs T1)
 *   T3  T2's inputs again, other poison, T2's buffers     (determinism vs T2; half A
 *       for "determinism": "bits" or "tolerance")
 * The maximum-sizes edge shape ("light": its cost would dominate) makes two calls in half
 * A alone: T1's spiked inputs, then extreme ones (variant 3) in the same buffers.
 * Checking workers run on the timing workers' CPUs; where that is one CPU (a 2-CPU
 * machine), every call but T1 and the worker's first runs on every CPU, boosted and
 * with a short slice, so an unsynchronised reduction's threads overlap (races, #32); on
 * any machine those calls are interleaved (the running thread yields every 30 us), and a
 * candidate seen running threads makes race rounds at the maximum shape.
 * Every call is staged the same way: fresh values written by the coordinator, every
 * output filled with a new finite sentinel, random guard zones, caches flushed. After
 * it the coordinator (never the worker) checks guards, inputs, and outputs against the
 * reference's outputs, which live only in the coordinator's memory.
 * The checker knows nothing of stores, searches or agents: it judges one candidate.
 */
#define _GNU_SOURCE
#include "check.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#define JITTER_MAX 4096
/* The parallel call's priority (as root): its threads must run at once although other
 * work (other checks of kforge run --jobs N, anything else) contends for the CPUs */
#define PARALLEL_NICE -10
/* and its slice: threads that still share a CPU take turns every 0.1 ms, not every few */
#define PARALLEL_SLICE_NS 100000
/* the least deadline of a PyTorch reference's start (torch.c) */
#define TORCH_START_S 120

static void sweep_workdirs(void) { kf__sweep_dead_dirs("kforge-"); }

kf_status kf_sess_open(kf_sess *s, kf_ctx *ctx, const kf_task *t, const char *cand_path, const kf_opts *o,
                       const char *kind) {
    memset(s, 0, sizeof *s);
    s->ctx = ctx;
    s->t = t;
    s->o = o;
    s->t0 = kf__now_ns();
    s->json_failures = kf__json_failures();
    if (!(o->mem_limit >= (16u << 20) && o->mem_limit <= (1ull << 44)) ||
        !(o->buffer_cap >= 1 && o->buffer_cap <= (1ull << 40)) ||
        !(o->call_timeout_s > 0 && o->call_timeout_s <= 86400) ||
        !(o->cpu_limit_s > 0 && o->cpu_limit_s <= 86400) ||
        !(o->compile_timeout_s > 0 && o->compile_timeout_s <= 86400) || o->bench_min_runs < 0 ||
        o->bench_max_runs < 0 || o->hidden_count > 1000 ||
        !(o->bench_min_time_s >= 0 && o->bench_min_time_s <= 3600) || !(o->win_floor >= 0) ||
        !(o->bench_precision >= 0 && o->bench_precision <= 1))
        return kf__err(ctx, KF_EUSAGE,
                       "kf_opts out of range (mem_limit 16 MiB..16 TiB, "
                       "timeouts in (0, 86400] s, hidden_count <= 1000)");
    if (!(s->be = kf_backend_get(t->backend)))
        return kf__err(ctx, KF_EBACKEND, "%s: the %s backend is not available in this build", t->dir,
                       t->backend);
    /* the input seed: secret and fresh unless the user asks to reproduce one */
    if ((o->has_seed ? kf_rng_seed(&s->rng, o->seed) : kf_rng_seed_secret(&s->rng)) != 0 ||
        (o->has_seed ? kf_rng_seed(&s->crng, ~o->seed) : kf_rng_seed_secret(&s->crng)) != 0)
        return kf__err(ctx, KF_EINTERNAL, "cannot key the ChaCha20 input stream (OpenSSL)");
    if (cand_path) {
        kf_status st = kf_candidate_load(ctx, t, cand_path, o->params, o->nparams, &s->cand);
        if (st) return st;
    } else if (o->nparams) {
        return kf__err(ctx, KF_EUSAGE, "--param needs a candidate");
    }
    const char *tmp = getenv("TMPDIR");
    /* named after this process, so a kforge killed mid-check leaves nothing for good:
     * the next one removes the directories of processes that no longer exist */
    static pthread_once_t swept = PTHREAD_ONCE_INIT;
    pthread_once(&swept, sweep_workdirs);
    snprintf(s->workdir, sizeof s->workdir, "%s/kforge-%d-XXXXXX", tmp && *tmp ? tmp : "/tmp", (int)getpid());
    if (!mkdtemp(s->workdir)) {
        s->workdir[0] = 0;
        return kf__err(ctx, KF_EIO, "mkdtemp: %s", strerror(errno));
    }
    if (!(s->res = kf_result_new(kind))) return kf__err(ctx, KF_ENOMEM, "out of memory");
    struct kf_verdict *v = &s->res->v;
    v->task = kf_verdict_str(v, t->name);
    v->fingerprint = kf_verdict_str(v, t->fingerprint);
    if (s->cand) {
        v->candidate = kf_verdict_str(v, cand_path);
        v->has_params = 1;
        for (int i = 0; i < s->cand->nparams; i++) {
            const kf_param *p = &s->cand->params[i];
            kf_verdict_add_param(v, 0, p->name, p->is_int ? NULL : p->selected, p->is_int ? p->ival : 0);
        }
        v->has_when = 1;
        v->when = s->cand->when ? kf_verdict_str(v, kf_expr_src(s->cand->when)) : NULL;
    }
    if (o->has_seed) v->has_seed = 1, v->seed = (int64_t)o->seed;
    /* a checking worker's CPUs, fixed here before any thread exists (the reference's
     * thread and this one spawn workers at once: sess_spawn only reads it) */
    cpu_set_t all;
    int me = sched_getcpu();
    s->have_check_cpus =
        !sched_getaffinity(0, sizeof all, &all) && CPU_COUNT(&all) >= 2 && me >= 0 && CPU_ISSET(me, &all);
    errno = 0;
    s->base_nice = getpriority(PRIO_PROCESS, 0);
    if (errno) s->base_nice = 0;
    if (s->have_check_cpus) {
        s->check_cpus = all;
        CPU_CLR(me, &s->check_cpus);
        /* one CPU left (a 2-CPU machine): threads of a checking worker take turns and a
         * race never shows, so one call per shape runs on every CPU (check_shape) */
        s->all_cpus = all;
        s->parallel_call = CPU_COUNT(&s->check_cpus) == 1;
        CPU_ZERO(&s->one_cpu);
        for (int c = 0; c < CPU_SETSIZE; c++)
            if (CPU_ISSET(c, &s->check_cpus)) {
                CPU_SET(c, &s->one_cpu);
                break;
            }
    }
    return KF_OK;
}

void kf_sess_close(kf_sess *s) {
    kf_rng_free(&s->rng);
    kf_rng_free(&s->crng);
    kf_candidate_free(s->cand);
    kf_build_free(&s->cbuild);
    kf_build_free(&s->rbuild);
    if (s->workdir[0]) kf__rmtree(s->workdir);
    s->cand = NULL;
}

kf_status kf_sess_build_ref(kf_sess *s) {
    if (s->t->ref_torch) { /* nothing to build: python3 with torch runs it (torch.c) */
        kf_status st = kf_torch_python(s->ctx, s->python, sizeof s->python);
        if (st) return st;
        kf_build_free(&s->rbuild);
        s->rbuild.ok = 1;
        if (!(s->rbuild.so_path = kf__strdup(s->t->ref_path)))
            return kf__err(s->ctx, KF_ENOMEM, "out of memory");
        return KF_OK;
    }
    char *ref = NULL;
    size_t rlen = 0;
    if (kf__read_file(s->t->ref_path, 4u << 20, &ref, &rlen))
        return kf__err(s->ctx, kf__io_status(errno), "%s: %s", s->t->ref_path, strerror(errno));
    kf_status st = kf_backend_compile(s->be, s->ctx, s->t, s->t->ref_path, ref, rlen, NULL, 0, s->workdir,
                                      s->o->compile_timeout_s, &s->rbuild);
    free(ref);
    if (st) return st;
    if (!s->rbuild.ok)
        return kf__err(s->ctx, KF_ETASK, "%s: the reference does not build: %s%s%s", s->t->ref_path,
                       s->rbuild.message ? s->rbuild.message : "", s->rbuild.log ? "\n" : "",
                       s->rbuild.log ? s->rbuild.log : "");
    return KF_OK;
}

kf_status kf_sess_build_cand(kf_sess *s, kf_ctx *ctx) {
    return kf_backend_compile(s->be, ctx, s->t, s->cand->path, s->cand->text, s->cand->len, s->cand->params,
                              s->cand->nparams, s->workdir, s->o->compile_timeout_s, &s->cbuild);
}

/* Record the candidate's build on the result; 1 when it built. */
static int record_build(kf_sess *s) {
    struct kf_verdict *v = &s->res->v;
    const kf_build *b = &s->cbuild;
    v->has_compile = 1;
    v->compile_ok = b->ok, v->compile_cached = b->cached, v->compile_seconds = b->seconds;
    if (b->log && *b->log) v->compile_log = kf_verdict_str(v, b->log);
    kf_build_out rep; /* the backend's (a GPU build's launch mode, libraries) */
    kf_backend_report_build(s->be, &s->cbuild, &rep);
    kf_verdict_set_build(v, &rep);
    if (s->cbuild.ok) return 1;
    kf_result_reject(s->res, s->cbuild.reason, NULL, "%s", s->cbuild.message);
    return 0;
}

kf_status kf_sess_build(kf_sess *s, int *cand_ok) {
    kf_status st = kf_sess_build_ref(s);
    *cand_ok = 1;
    if (st || !s->cand) return st;
    if ((st = kf_sess_build_cand(s, s->ctx))) return st;
    *cand_ok = record_build(s);
    return KF_OK;
}

/* The CPUs a checking worker may use: as a timing worker's, every CPU this process may use
 * but one (kf_sess_open fixes which). A red team's candidate told timing from checking by
 * sched_getaffinity (timing workers saw one CPU fewer) and ran a shortcut only when timed.
 * NULL (inherit) when there is one CPU, as timing then does not pin either. */
static const void *check_cpus(const kf_sess *s) { return s->have_check_cpus ? &s->check_cpus : NULL; }

/* b NULL: a worker started before the candidate's build (the backend's early start),
 * which kf_worker_attach gives its artifact. */
static kf_status sess_spawn(kf_sess *s, kf_ctx *ctx, const kf_build *b, size_t bytes, kf_side *side,
                            kf_call_result *fail) {
    kf_worker_opts wo = {s->o->cpu_limit_s,
                         s->o->mem_limit,
                         s->o->call_timeout_s,
                         s->pinned,
                         s->pinned ? (const void *)&s->worker_cpus : s->timing ? NULL : check_cpus(s),
                         0,
                         NULL,
                         0,
                         NULL,
                         NULL,
                         NULL,
                         NULL,
                         NULL,
                         NULL,
                         NULL,
                         NULL,
                         NULL};
    if (b) kf_backend_worker_opts(s->be, b, &wo);
    else if (!kf_backend_starts_early(s->be, &wo)) return kf__err(ctx, KF_EUSAGE, "no early worker");
    /* a worker's copy of the object is named as the documented build names it: x.so
     * for x.c or x.cu, the backend's extension (the reference's reference.so), in checking and timing workers
     * alike, an early worker started before its artifact exists (no build yet) too */
    const char *src = !b || b == &s->cbuild ? (s->cand ? s->cand->path : NULL)
                      : b == &s->rbuild     ? s->t->ref_path
                                            : NULL;
    char so_name[NAME_MAX + 1] = "";
    if (src) {
        const char *base = strrchr(src, '/');
        base = base ? base + 1 : src;
        size_t k = strlen(base);
        size_t el = s->be->iface.ext ? strlen(s->be->iface.ext) : 0; /* "x.<ext>" -> "x" */
        if (el && k > el + 1 && base[k - el - 1] == '.' && !strcmp(base + k - el, s->be->iface.ext))
            k -= el + 1;
        if (k && k < sizeof so_name - 3) snprintf(so_name, sizeof so_name, "%.*s.so", (int)k, base);
    }
    wo.entry = s->t->entry;
    /* the reference's worker also loads the task's magnitude function, if it has one */
    if (b && b == &s->rbuild && !s->t->ref_torch) wo.mag_entry = s->t->mag_fn;
    wo.so_name = so_name[0] ? so_name : NULL;
    /* a PyTorch reference: its runner, in place of kforge-worker (torch.c) */
    const char *argv[] = {s->python, "-c", kf_torch_runner(), NULL};
    char cfg[sizeof((kf_msg_config *)0)->text];
    if (b && b == &s->rbuild && s->t->ref_torch) {
        if (kf_torch_config(s->t, wo.cpus, cfg, sizeof cfg))
            return kf__err(ctx, KF_ETASK, "%s: too many arguments for the PyTorch reference's runner",
                           s->t->ref_path);
        wo.exec = argv;
        wo.exec_config = cfg;
        wo.exec_warm = kf_torch_warm_spawn;
        wo.exec_warm_arg = s->python;
        /* its start is python3's and `import torch`'s: seconds on a loaded machine, where a
         * call's deadline would make a busy moment a broken task */
        if (wo.start_timeout_s < TORCH_START_S) wo.start_timeout_s = TORCH_START_S;
    }
    side->b = b;
    kf_status st = kf_worker_spawn(ctx, b ? b->so_path : NULL, bytes, &wo, &side->w, fail);
    /* kf_sess_place lays the inputs out in the worker's read-only region, if it has one */
    side->lay.ro_base = side->w ? kf_worker_ro_base(side->w) : 0;
    /* a CPU candidate's (or --vs baseline's) writes through pointers kept from earlier
     * calls: the trusted reference needs no such check while checking, but when timing
     * every side gets it, so both run under the same protocol (the staging work around
     * a call must not differ between the sides); a GPU worker copies one span to the
     * device: kept device pointers are outside what comes back */
    side->spent.on = 0;
    if (!st && side->w && kf_backend_has(s->be, KF_BACKEND_CPU) && (b != &s->rbuild || s->timing) &&
        kf_data_spent_init(&side->spent))
        st = kf__err(ctx, KF_EINTERNAL, "getrandom: %s", strerror(errno));
    /* and the bytes no call has used yet: a write far past a guard zone lands there */
    if (!st && side->spent.on)
        kf_data_spent_unused(&side->spent, kf_worker_arena(side->w), side->lay.ro_base);
    return st;
}

kf_status kf_sess_spawn(kf_sess *s, const kf_build *b, size_t bytes, kf_side *side, kf_call_result *fail) {
    return sess_spawn(s, s->ctx, b, bytes, side, fail);
}

kf_status kf_sess_spawn_in(kf_sess *s, kf_ctx *ctx, const kf_build *b, size_t bytes, kf_side *side,
                           kf_call_result *fail) {
    return sess_spawn(s, ctx, b, bytes, side, fail);
}

size_t kf_sess_arena_bytes(const kf_task *t, const kf_extents *ex) {
    return 2 * (kf_data_layout_size(t, ex) + JITTER_MAX);
}

void kf_sess_place(kf_sess *s, kf_rng *rng, const kf_extents *ex, int half, kf_layout *lay) {
    size_t halfsz = kf_data_layout_size(s->t, ex) + JITTER_MAX;
    size_t jitter = (size_t)kf_rng_range(rng, 0, JITTER_MAX / KF_ALIGN - 1) * KF_ALIGN;
    kf_data_layout_split(s->t, ex, (size_t)half * halfsz + jitter, lay->ro_base, lay);
}

void kf_sess_call(kf_sess *s, kf_side *side, const kf_extents *ex, const kf_inputs *in, const kf_poison *p,
                  kf_call_result *cr) {
    unsigned char *arena = kf_worker_arena(side->w);
    uint64_t t0 = kf__now_ns();
    kf_data_spent_retire(&side->spent, &side->lay, arena);
    uint64_t ta = kf__now_ns();
    kf_data_stage(s->t, ex, &side->lay, in, p, arena);
    uint64_t tb = kf__now_ns();
    kf_msg_run m;
    memset(&m, 0, sizeof m);
    m.nargs = (uint32_t)s->t->nargs;
    for (int i = 0; i < s->t->nargs; i++) {
        const kf_arg *a = &s->t->args[i];
        m.off[i] = side->lay.off[i];
        m.ival[i] = ex->ival[i];
        m.fval[i] = ex->fval[i];
        /* the parameter kinds: a CPU worker places the arguments by them (the C calling
         * convention), a GPU worker builds kernel parameters */
        m.kind[i] = a->is_buffer          ? KF_ARG_BUF
                    : a->type == KF_T_I32 ? KF_ARG_I32
                    : a->type == KF_T_I64 ? KF_ARG_I64
                    : a->type == KF_T_F32 ? KF_ARG_F32
                    : a->type == KF_T_F64 ? KF_ARG_F64
                                          : KF_ARG_U8;
    }
    if (side->b == &s->rbuild && s->t->ref_torch) kf_torch_extents(s->t, ex, &m);
    /* the backend's part: caches flushed as a cold call finds them, and what its worker
     * needs to know of the call */
    kf_stage stg = {s->t, ex, arena, &side->lay, 0};
    if (s->timing) stg.flags |= KF_RUN_FLUSH_L2;
    if (s->host_timing) stg.flags |= KF_RUN_HOST_TIMING;
    if (side->graph) stg.flags |= KF_RUN_GRAPH;
    if (s->timing && side->wait_idle) stg.flags |= KF_RUN_WAIT_IDLE;
    if (s->precise) stg.flags |= KF_RUN_PRECISE;
    char err[300];
    /* a device task's PyTorch reference copies its buffers to the GPU and flushes and
     * times there as a GPU worker does, by the same flags (torch_ref.py): no flush of
     * the CPU's caches, which only a call on the CPU reads through */
    int torch_gpu = side->b == &s->rbuild && s->t->ref_torch && kf_backend_has(s->be, KF_BACKEND_DEVICE);
    int staged = torch_gpu ? 0 : kf_backend_stage(s->be, side->b, &stg, &m, err, sizeof err);
    if (s->timing && s->o->verbose) { /* the timed phase is one thread's */
        uint64_t tc = kf__now_ns();
        s->stprof[0] += ta - t0, s->stprof[1] += tb - ta, s->stprof[2] += tc - tb, s->stprof[3]++;
    }
    if (torch_gpu) m.flags |= stg.flags & (KF_RUN_FLUSH_L2 | KF_RUN_WAIT_IDLE | KF_RUN_HOST_TIMING);
    if (side == s->cand_side && s->interleave) m.flags |= KF_RUN_INTERLEAVE, s->interleaved = 1;
    if (side->magnitude) m.flags |= KF_RUN_MAGNITUDE;
    if (side == s->cand_side) s->prof[KF_PROF_CAND_STAGE] += kf__now_ns() - t0;
    if (staged) {
        memset(cr, 0, sizeof *cr);
        cr->st = KF_CALL_FAILED;
        cr->reason = KF_REASON_CRASH;
        snprintf(cr->msg, sizeof cr->msg, "%s", err);
        return;
    }
    uint64_t t1 = kf__now_ns();
    kf_worker_call(side->w, &m, s->call_timeout_s > 0 ? s->call_timeout_s : s->o->call_timeout_s, cr);
    if (cr->st != KF_CALL_OK && cr->reason == KF_REASON_INPUT_MODIFIED && cr->ro_arg >= 0 &&
        cr->ro_arg < s->t->nargs && s->t->args[cr->ro_arg].is_buffer) {
        const kf_arg *a = &s->t->args[cr->ro_arg];
        char at[160];
        kf_data_format_index(s->t, ex, cr->ro_arg, (int64_t)(cr->ro_byte / kf_dtype_size(a->type)), at,
                             sizeof at);
        snprintf(cr->msg, sizeof cr->msg,
                 "wrote into its const input buffer %s (at %s) during the call: in "
                 "buffers are mapped read-only while the kernel runs, even if it restores them",
                 a->name, at);
    }
    if (side == s->cand_side) s->prof[KF_PROF_CAND_CALL] += kf__now_ns() - t1;
}

int kf_sess_take_outputs(const kf_sess *s, kf_side *side, const kf_extents *ex, void **outs) {
    for (int i = 0; i < s->t->nargs; i++) outs[i] = NULL;
    return kf_sess_retake_outputs(s, side, ex, outs);
}

int kf_sess_retake_outputs(const kf_sess *s, kf_side *side, const kf_extents *ex, void **outs) {
    const unsigned char *arena = kf_worker_arena(side->w);
    for (int i = 0; i < s->t->nargs; i++) {
        const kf_arg *a = &s->t->args[i];
        if (!a->is_buffer || a->io == KF_IO_IN) continue;
        if (!outs[i] && !(outs[i] = malloc(ex->bytes[i] ? ex->bytes[i] : 1))) return -1;
        kf_data_copy(outs[i], arena + side->lay.off[i], ex->bytes[i]);
    }
    return 0;
}

void kf_sess_free_outputs(const kf_task *t, void **outs) {
    for (int i = 0; outs && i < t->nargs; i++) {
        free(outs[i]);
        outs[i] = NULL;
    }
}

void kf_sess_sizes(kf_sess *s, const kf_shape *sh, kf_verdict_sizes *out) {
    kf_verdict_sizes_set(&s->res->v, out, s->t->nsizes, (const char *const *)s->t->size_names, sh->v);
}

int kf_outputs_same(const kf_task *t, const kf_extents *ex, void **a, void **b, void **mag) {
    for (int i = 0; i < t->nargs; i++) {
        const kf_arg *g = &t->args[i];
        if (!g->is_buffer || g->io == KF_IO_IN) continue;
        double rtol, atol;
        kf_task_tolerance(t, g, &rtol, &atol);
        /* within the tolerance: the same bound as against the reference, so a sum in
         * another order per call is as good as against the reference (the magnitude term
         * too) */
        const void *mg = mag ? mag[i] : NULL;
        if (!kf_data_same_mag(g->type, a[i], b[i], mg, ex->count[i], t->determinism_exact, rtol, atol,
                              mg ? kf_task_mtol(t, g) : 0))
            return 0;
    }
    return 1;
}

static const char *io_name(const kf_arg *a) { return a->io == KF_IO_INOUT ? "inout" : "output"; }

int kf_judge_mag(kf_sess *s, kf_side *side, const kf_extents *ex, const kf_inputs *in, const kf_poison *p,
                 void **ref, void **mag, void ***prev, void ***prevmag, int nprev,
                 const kf_verdict_sizes *shape, const char *when, double *max_abs, double *max_rel) {
    const kf_task *t = s->t;
    kf_result *r = s->res;
    const unsigned char *arena = kf_worker_arena(side->w);
    int bad = 0;
    int g = kf_data_check_guards(t, &side->lay, p, arena);
    if (g >= 0) {
        int last = -1; /* the guard after the last buffer of the writable region */
        for (int i = 0; i < t->nargs; i++)
            if (t->args[i].is_buffer && !(side->lay.ro_base && t->args[i].io == KF_IO_IN)) last = i;
        kf_result_reject(
            r, KF_REASON_OUT_OF_BOUNDS, shape, "wrote outside its buffers: the guard zone %s %s changed (%s)",
            g < t->nargs ? "just before" : "just after", t->args[g < t->nargs ? g : last].name, when);
        bad = 1;
    }
    if (kf_sess_spent_report(s, side, shape, when)) bad = 1;
    int m = kf_data_check_inputs(t, ex, &side->lay, in, arena);
    if (m >= 0) {
        kf_result_reject(r, KF_REASON_INPUT_MODIFIED, shape, "modified its input buffer %s (%s)",
                         t->args[m].name, when);
        bad = 1;
    }
    for (int i = 0; i < t->nargs; i++) {
        const kf_arg *a = &t->args[i];
        if (!a->is_buffer || a->io == KF_IO_IN) continue;
        double rtol, atol, mtol = kf_task_mtol(t, a);
        kf_task_tolerance(t, a, &rtol, &atol);
        const void *got = arena + side->lay.off[i], *mg = mag ? mag[i] : NULL;
        if (!mg) mtol = 0; /* no magnitude run (a non-float output): |ref| alone */
        kf_cmp c;
        kf_data_compare_mag(a->type, got, ref[i], mg, ex->count[i], rtol, atol, mtol,
                            a->io == KF_IO_OUT ? &p->sentinel[i] : NULL, &c);
        if (c.max_abs > *max_abs) *max_abs = c.max_abs;
        if (c.max_rel > *max_rel) *max_rel = c.max_rel;
        if (c.first_bad < 0) continue;
        bad = 1;
        /* memoisation: does it equal an earlier call's reference result? */
        int stale = 0;
        for (int k = 0; k < nprev && !stale; k++)
            if (prev[k] && prev[k][i]) {
                const void *pm = prevmag && prevmag[k] ? prevmag[k][i] : NULL;
                stale = kf_data_same_mag(a->type, got, prev[k][i], pm, ex->count[i], 0, rtol, atol,
                                         pm ? mtol : 0);
            }
        if (stale) {
            kf_result_reject(r, KF_REASON_STALE_RESULT, shape,
                             "%s %s holds the result of an earlier call's inputs, not this "
                             "call's (memoised or stale output; %s)",
                             io_name(a), a->name, when);
            continue;
        }
        char at[128];
        if (c.unwritten) {
            kf_data_format_index(t, ex, i, c.first[KF_CMP_UNWRITTEN], at, sizeof at);
            kf_result_reject(r, KF_REASON_UNWRITTEN_OUTPUT, shape,
                             "%lld of %lld elements of %s %s were never written, or were computed from its "
                             "initial contents: they hold the sentinel kforge filled it with (first %s; %s)",
                             (long long)c.unwritten, (long long)c.n, io_name(a), a->name, at, when);
        }
        if (c.nonfinite) {
            kf_data_format_index(t, ex, i, c.first[KF_CMP_NONFINITE], at, sizeof at);
            kf_result_reject(r, KF_REASON_NONFINITE, shape,
                             "%lld of %lld elements of %s are NaN or Inf where the reference is "
                             "finite (first %s = %g, expected %.9g; %s)",
                             (long long)c.nonfinite, (long long)c.n, a->name, at, c.got[KF_CMP_NONFINITE],
                             c.want[KF_CMP_NONFINITE], when);
        }
        if (c.wrong) {
            kf_data_format_index(t, ex, i, c.first[KF_CMP_WRONG], at, sizeof at);
            int hex = (int)kf_dtype_size(a->type) * 2;
            double gv = c.got[KF_CMP_WRONG], wv = c.want[KF_CMP_WRONG];
            if (c.bitwise)
                kf_result_reject(r, KF_REASON_WRONG_RESULT, shape,
                                 "%lld of %lld elements of %s differ from the reference bit for bit "
                                 "(first %s = %.9g, bits 0x%0*llx; expected %.9g, bits 0x%0*llx%s; "
                                 "the tolerance is exact, so the sign of zero and NaN payloads "
                                 "must match too; %s)",
                                 (long long)c.wrong, (long long)c.n, a->name, at, gv, hex,
                                 (unsigned long long)c.gbits, wv, hex, (unsigned long long)c.wbits,
                                 gv == wv                 ? ": a zero of the wrong sign"
                                 : isnan(gv) && isnan(wv) ? ": another NaN payload"
                                                          : "",
                                 when);
            else if (kf_dtype_is_float(a->type) && mtol > 0)
                kf_result_reject(r, KF_REASON_WRONG_RESULT, shape,
                                 "%lld of %lld elements of %s outside tolerance (first %s = "
                                 "%.9g, expected %.9g, magnitude of the terms %.9g; allowed |diff| <= "
                                 "%g + %g*|ref| + %g*magnitude; %s)",
                                 (long long)c.wrong, (long long)c.n, a->name, at, gv, wv,
                                 fabs(kf_data_get(a->type, mg, c.first[KF_CMP_WRONG])), atol, rtol, mtol,
                                 when);
            else if (kf_dtype_is_float(a->type))
                kf_result_reject(r, KF_REASON_WRONG_RESULT, shape,
                                 "%lld of %lld elements of %s outside tolerance (first %s = "
                                 "%.9g, expected %.9g; allowed |diff| <= %g + %g*|ref|; %s)",
                                 (long long)c.wrong, (long long)c.n, a->name, at, c.got[KF_CMP_WRONG],
                                 c.want[KF_CMP_WRONG], atol, rtol, when);
            else
                kf_result_reject(r, KF_REASON_WRONG_RESULT, shape,
                                 "%lld of %lld elements of %s differ (first %s = %lld, expected "
                                 "%lld; allowed |diff| <= %g + %g*|ref|; %s)",
                                 (long long)c.wrong, (long long)c.n, a->name, at, (long long)c.igot,
                                 (long long)c.iwant, atol, rtol, when);
        }
    }
    return bad;
}

int kf_sess_spent_report(kf_sess *s, kf_side *side, const kf_verdict_sizes *shape, const char *when) {
    kf_spent *sp = &side->spent;
    if (!sp->on || !sp->bad || sp->bad == 2) return 0;
    const kf_spent_range *sr = &sp->bad_range;
    const kf_task *t = s->t;
    char what[200];
    if (sr->arg >= 0)
        snprintf(what, sizeof what, "where %s %s sat in the worker's call %u (byte %zu of it)",
                 t->args[sr->arg].io == KF_IO_IN ? "input" : "buffer", t->args[sr->arg].name, sr->call,
                 sp->bad_at - sr->base);
    else if (sr->arg == -3 || sr->call == 0)
        snprintf(what, sizeof what, "in memory no call had used yet (arena byte %zu)", sp->bad_at);
    else
        snprintf(what, sizeof what, "in %s the worker's call %u used (arena byte %zu)",
                 sr->arg == -1 ? "a guard zone" : "memory", sr->call, sp->bad_at);
    if (sr->arg == -3 || sr->call == 0)
        kf_result_reject(s->res, KF_REASON_OUT_OF_BOUNDS, shape,
                         "wrote outside its buffers, past their guard zones: %s changed in one of the "
                         "worker's calls 1 to %u (found %s)",
                         what, sp->bad_seen, when);
    else
        kf_result_reject(s->res, KF_REASON_OUT_OF_BOUNDS, shape,
                         "wrote outside its buffers, into memory an earlier call used: %s changed in one "
                         "of the worker's calls %u to %u (a pointer kept from an earlier call; found %s)",
                         what, sr->call + 1, sp->bad_seen, when);
    sp->bad = 2; /* reported once */
    return 1;
}

/* One input set: clears *all_zero / *all_copy / *all_other when that trivial strategy
 * fails on some output. -1 when memory ran out (the question is then open). */
static int degen_set(const kf_task *t, const kf_extents *ex, const kf_inputs *in, void **ref, void **mag,
                     void **ref_other, int *all_zero, int *all_copy, int *all_other, char *copied,
                     size_t ncopied) {
    for (int i = 0; i < t->nargs; i++) {
        const kf_arg *a = &t->args[i];
        if (!a->is_buffer || a->io == KF_IO_IN) continue;
        double rtol, atol;
        kf_task_tolerance(t, a, &rtol, &atol);
        /* under the judge's own bound, magnitude term included: zeros or a copy passing
         * the looser bound would pass the check */
        const void *mg = mag ? mag[i] : NULL;
        double mtol = mg ? kf_task_mtol(t, a) : 0;
        size_t bytes = ex->bytes[i] ? ex->bytes[i] : 1;
        void *zero = *all_zero ? calloc(1, bytes) : NULL;
        if (*all_zero && !zero) return -1;
        if (*all_zero && (ex->count[i] == 0 ||
                          !kf_data_same_mag(a->type, zero, ref[i], mg, ex->count[i], 0, rtol, atol, mtol)))
            *all_zero = 0;
        if (*all_other && (!ref_other || !kf_data_same_mag(a->type, ref_other[i], ref[i], mg, ex->count[i], 0,
                                                           rtol, atol, mtol)))
            *all_other = 0;
        /* a copy of any input with as many elements, converted to this type */
        int copy_ok = 0;
        for (int j = 0; j < t->nargs && !copy_ok && *all_copy; j++) {
            const kf_arg *b = &t->args[j];
            if (!b->is_buffer || b->io == KF_IO_OUT || ex->count[j] != ex->count[i] || !in->buf[j]) continue;
            if (b->type == a->type) { /* no conversion needed */
                if (ex->count[i] > 0 &&
                    kf_data_same_mag(a->type, in->buf[j], ref[i], mg, ex->count[i], 0, rtol, atol, mtol)) {
                    copy_ok = 1;
                    snprintf(copied, ncopied, "%s copied into %s", b->name, a->name);
                }
                continue;
            }
            void *conv = malloc(bytes);
            if (!conv) {
                free(zero);
                return -1;
            }
            for (int64_t k = 0; k < ex->count[i]; k++) {
                double v = kf_data_get(b->type, in->buf[j], k);
                switch (a->type) {
                case KF_T_F32: ((float *)conv)[k] = (float)v; break;
                case KF_T_F64: ((double *)conv)[k] = v; break;
                case KF_T_I32: ((int32_t *)conv)[k] = (int32_t)v; break;
                case KF_T_I64: ((int64_t *)conv)[k] = (int64_t)v; break;
                default: ((uint8_t *)conv)[k] = (uint8_t)v; break;
                }
            }
            if (ex->count[i] > 0 &&
                kf_data_same_mag(a->type, conv, ref[i], mg, ex->count[i], 0, rtol, atol, mtol)) {
                copy_ok = 1;
                snprintf(copied, ncopied, "%s copied into %s", b->name, a->name);
            }
            free(conv);
        }
        if (!copy_ok) *all_copy = 0;
        free(zero);
    }
    return 0;
}

int kf_degenerate(const kf_task *t, const kf_extents *ex, const kf_inputs *in, void ***ref, void ***mag,
                  int nsets, char **why) {
    int all_zero = 1, all_other = 1, all_copy = 1;
    char copied[256] = "";
    int64_t out_elems = 0;
    *why = NULL;
    for (int i = 0; i < t->nargs; i++)
        if (t->args[i].is_buffer && t->args[i].io != KF_IO_IN) out_elems += ex->count[i];
    if (!out_elems)
        return (*why = kf__strdup("every output is empty at this shape: there is nothing to check")) ? 0 : -1;
    for (int k = 0; k < nsets; k++)
        if (degen_set(t, ex, &in[k], ref[k], mag ? mag[k] : NULL, k + 1 < nsets ? ref[k + 1] : ref[0],
                      &all_zero, &all_copy, &all_other, copied, sizeof copied))
            return -1;
    if (nsets < 2) all_other = 0;
    if (all_zero) *why = kf__strdup("an all-zero output passes the tolerance");
    else if (all_copy) *why = kf__asprintf("copying the inputs passes the tolerance (%s)", copied);
    else if (all_other)
        *why = kf__strdup("the output for other inputs passes the tolerance (the output "
                          "does not depend on the inputs)");
    else return 0;
    return *why ? 0 : -1;
}

/* ---- the check itself -------------------------------------------------------- */

typedef struct {
    kf_shape *all;
    int n;
    int owned_from; /* shapes from this index on are owned (drawn) */
    int rejected;   /* the candidate's kforge:when failed to evaluate: rejected, no shapes */
} shape_list;

static const char *kind_name(kf_shape_kind k) {
    return k == KF_SHAPE_VISIBLE ? "visible" : k == KF_SHAPE_HIDDEN ? "hidden" : "edge";
}

static kf_vshape_kind vshape_kind(kf_shape_kind k) {
    return k == KF_SHAPE_VISIBLE  ? KF_VSHAPE_VISIBLE
           : k == KF_SHAPE_HIDDEN ? KF_VSHAPE_HIDDEN
                                  : KF_VSHAPE_EDGE;
}

/* A `when` that cannot be evaluated at a shape inside the task's ranges and constraints
 * (overflow, division by zero) was once read as "outside the domain" where the maximum
 * edge was searched for: an expression that overflows on large sizes excluded them
 * silently. It is the candidate's claim, so it is the candidate's fault: domain_error. */
static void reject_domain(kf_sess *s, shape_list *L, const char *err) {
    kf_result_reject(s->res, KF_REASON_DOMAIN_ERROR, NULL, "%s:%d: %s", s->cand->path, s->cand->when_line,
                     err);
    L->rejected = 1;
}

/* Visible shapes in the candidate's domain, then freshly drawn hidden and edge shapes.
 * KF_OK with L->rejected set when the candidate's domain cannot be evaluated. */
static kf_status gather_shapes(kf_sess *s, shape_list *L) {
    const kf_task *t = s->t;
    const kf_expr *when = s->cand ? s->cand->when : NULL;
    const kf_vars *pv = s->cand ? &s->cand->pvars : NULL;
    char err[512];
    int hidden = s->o->hidden_count >= 0 ? s->o->hidden_count : t->hidden_count;
    kf_shape *drawn = NULL;
    int ndrawn = 0;
    /* the visible shapes first: a domain error there is named at a shape the user knows */
    if (!(L->all = calloc((size_t)t->nshapes + 1, sizeof *L->all)))
        return kf__err(s->ctx, KF_ENOMEM, "out of memory");
    for (int i = 0; i < t->nshapes; i++) {
        int ok = kf_task_shape_ok(t, &t->shapes[i], when, pv, err, sizeof err);
        if (ok == -2) {
            reject_domain(s, L, err);
            return KF_OK;
        }
        if (ok < 0) return kf__err(s->ctx, KF_ETASK, "%s: %s", t->dir, err);
        if (!ok) {
            kf_verdict_shape *o = kf_verdict_add_shape(&s->res->v);
            if (!o) continue; /* the verdict says it is not whole */
            kf_sess_sizes(s, &t->shapes[i], &o->sizes);
            o->kind = KF_VSHAPE_VISIBLE;
            o->status = KF_VSHAPE_SKIPPED;
            o->note = kf_verdict_str(&s->res->v, "outside the candidate's kforge:when domain");
            continue;
        }
        L->all[L->n++] = t->shapes[i];
        L->owned_from = L->n; /* borrowed from the task: never freed here */
    }
    int rc =
        kf_task_draw_hidden(t, &s->rng, hidden, when, pv, s->o->buffer_cap, &drawn, &ndrawn, err, sizeof err);
    if (rc == -2) {
        reject_domain(s, L, err);
        return KF_OK;
    }
    /* with a `when`, the candidate's claim is what leaves no shape: name its line */
    if (rc && rc != -3 && when)
        return kf__err(s->ctx, KF_EUSAGE, "%s:%d: kforge:when \"%s\": %s", s->cand->path, s->cand->when_line,
                       kf_expr_src(when), err);
    if (rc) return kf__err(s->ctx, rc == -3 ? KF_ENOMEM : KF_ETASK, "%s: %s", t->dir, err);
    kf_shape *all = realloc(L->all, (size_t)(L->n + ndrawn + 1) * sizeof *L->all);
    if (!all) {
        kf_shapes_free(drawn, ndrawn);
        return kf__err(s->ctx, KF_ENOMEM, "out of memory");
    }
    L->all = all;
    for (int i = 0; i < ndrawn; i++) {
        /* a drawn shape equal to one already listed (the maximum sizes are often a
         * visible shape) adds fresh inputs but no coverage: at 4096x4096 on a GPU it
         * cost a quarter of the verdict's time */
        int dup = 0;
        for (int k = 0; k < L->n && !dup; k++)
            dup = !memcmp(L->all[k].v, drawn[i].v, (size_t)t->nsizes * sizeof *drawn[i].v);
        if (dup) free(drawn[i].v);
        else L->all[L->n++] = drawn[i];
    }
    free(drawn); /* the value arrays moved into L->all */
    return KF_OK;
}

static void free_shapes(shape_list *L) {
    for (int i = L->owned_from; i < L->n; i++) free(L->all[i].v);
    free(L->all);
}

static kf_status ref_call(kf_sess *s, kf_ctx *ctx, kf_side *ref, const kf_extents *ex, const kf_inputs *in,
                          kf_rng *rng, void **outs, const char *shape_txt) {
    kf_poison p;
    kf_call_result cr;
    kf_data_make_poison(s->t, rng, &p);
    uint64_t t0 = kf__now_ns();
    kf_sess_call(s, ref, ex, in, &p, &cr);
    uint64_t t1 = kf__now_ns();
    s->prof[KF_PROF_REF_CALL] += t1 - t0;
    if (cr.st != KF_CALL_OK)
        return kf__err(ctx, KF_ETASK, "%s: the reference failed at %s: %s: %s", s->t->ref_path, shape_txt,
                       kf_reason_name(cr.reason), cr.msg);
    if (kf_sess_take_outputs(s, ref, ex, outs)) return kf__err(ctx, KF_ENOMEM, "out of memory");
    /* the reference is trusted, but not blindly: an output it left at this call's
     * sentinel would make every candidate "wrong" (or right by writing nothing). A
     * right answer can equal the sentinel (INT32_MIN from a saturating add), so a
     * sentinel seen is confirmed by a second call under another sentinel (little-endian
     * element bytes, as staged). */
    for (int i = 0; i < s->t->nargs; i++) {
        const kf_arg *a = &s->t->args[i];
        if (!a->is_buffer || a->io != KF_IO_OUT || a->type == KF_T_U8) continue;
        size_t es = kf_dtype_size(a->type);
        if (!kf_data_count_pattern(outs[i], ex->count[i], p.sentinel[i], es)) continue;
        kf_poison p2;
        do kf_data_make_poison(s->t, rng, &p2);
        while (p2.sentinel[i] == p.sentinel[i]);
        void *again[KF_MAX_ARGS];
        kf_sess_call(s, ref, ex, in, &p2, &cr);
        if (cr.st != KF_CALL_OK)
            return kf__err(ctx, KF_ETASK, "%s: the reference failed at %s: %s: %s", s->t->ref_path, shape_txt,
                           kf_reason_name(cr.reason), cr.msg);
        if (kf_sess_take_outputs(s, ref, ex, again)) return kf__err(ctx, KF_ENOMEM, "out of memory");
        /* unwritten: this call's sentinel both times (a right answer is the same both
         * times, and the two sentinels differ) */
        int64_t left = 0;
        for (int64_t k = 0; k < ex->count[i]; k++)
            left += !memcmp((char *)outs[i] + k * (int64_t)es, &p.sentinel[i], es) &&
                    !memcmp((char *)again[i] + k * (int64_t)es, &p2.sentinel[i], es);
        kf_sess_free_outputs(s->t, again);
        if (left)
            return kf__err(ctx, KF_ETASK,
                           "%s: the reference left %lld of %lld elements of %s "
                           "unwritten at %s",
                           s->t->ref_path, (long long)left, (long long)ex->count[i], a->name, shape_txt);
    }
    s->prof[KF_PROF_REF_CHECK] += kf__now_ns() - t1;
    return KF_OK;
}

kf_status kf_sess_magnitude(kf_sess *s, kf_ctx *ctx, kf_side *ref, const kf_extents *ex, const kf_inputs *in,
                            kf_rng *rng, void **mag, const char *shape_txt) {
    kf_inputs ab;
    memset(mag, 0, KF_MAX_ARGS * sizeof *mag);
    if (!kf_task_has_mtol(s->t)) return KF_OK;
    char txt[600];
    kf_status st;
    if (s->t->mag_fn) { /* the task's own function, on the inputs as they are */
        snprintf(txt, sizeof txt, "%s (the magnitude run, %s)", shape_txt, s->t->mag_fn);
        ref->magnitude = 1;
        st = ref_call(s, ctx, ref, ex, in, rng, mag, txt);
        ref->magnitude = 0;
    } else {
        if (kf_data_abs_inputs(s->t, ex, in, &ab)) return kf__err(ctx, KF_ENOMEM, "out of memory");
        snprintf(txt, sizeof txt, "%s (the magnitude run, on the absolute values of the inputs)", shape_txt);
        st = ref_call(s, ctx, ref, ex, &ab, rng, mag, txt);
        kf_data_free_inputs(s->t, &ab);
    }
    /* only the float outputs with an mtol are read */
    for (int i = 0; !st && i < s->t->nargs; i++) {
        const kf_arg *a = &s->t->args[i];
        if (mag[i] && !(kf_dtype_is_float(a->type) && kf_task_mtol(s->t, a) > 0)) {
            free(mag[i]);
            mag[i] = NULL;
        }
    }
    if (st) kf_sess_free_outputs(s->t, mag);
    return st;
}

/* The reference's half of one shape: extents, three fresh input sets, the reference's
 * outputs for them and, for a task with an mtol, its outputs on their absolute values
 * (the magnitudes). Prepared while the candidate compiles. */
typedef struct {
    int ready;
    int calls; /* 4, or 2 for a light shape */
    kf_extents ex;
    kf_inputs in[3];
    void *refo[3][KF_MAX_ARGS];
    void *mag[3][KF_MAX_ARGS]; /* NULL where there is no magnitude term */
    int mag_done[3];           /* mag[k] computed (or not needed: no mtol) */
    size_t bytes;
} shape_prep;

static void prep_free(const kf_task *t, shape_prep *pp) {
    for (int k = 0; k < 3; k++) {
        kf_data_free_inputs(t, &pp->in[k]);
        kf_sess_free_outputs(t, pp->refo[k]);
        kf_sess_free_outputs(t, pp->mag[k]);
        pp->mag_done[k] = 0;
    }
    pp->ready = 0;
}

/* The flags (KF_DATA_OFFSET, KF_DATA_MIXED, an offset class) over the second and third
 * input sets of shape i of a check (the maximum shape's two sets): the flavours none,
 * offset, mixed cycle over the shapes, T1 one step ahead of T2, from a rotation drawn per
 * check, so that three consecutive shapes hold every flavour in both calls and all but
 * every third shape an offset and mixed scales. The offset's class (its magnitude) is the
 * largest, 64 to 128 standard deviations, at every other shape with an offset, and the
 * three smaller ones in turn between them, the first included: a check of two shapes or
 * more meets the largest, where a one-pass float variance fails whatever was drawn (at
 * 64 std it loses 4096 times float's rounding), and one with seven offset shapes or
 * more every class. */
static void shape_flags(int rot, int i, int *f1, int *f2) {
    static const int fl[3] = {0, KF_DATA_OFFSET, KF_DATA_MIXED};
    int a = (i + rot) % 3, b = (a + 1) % 3, k = 0;
    for (int j = 0; j < i; j++) k += (j + rot) % 3 != 2; /* shapes with an offset call */
    int cls = KF_DATA_CLASS(k % 2 == 0 ? 3 : (k / 2 + rot) % 3);
    *f1 = fl[a] | (a == 1 ? cls : 0);
    *f2 = fl[b] | (b == 1 ? cls : 0);
}

static kf_status prep_shape(kf_sess *s, kf_ctx *ctx, kf_side *ref, const kf_shape *sh, int rot, int idx,
                            shape_prep *pp) {
    int flags[3] = {0, 0, 0};
    shape_flags(rot, idx, &flags[1], &flags[2]);
    const kf_task *t = s->t;
    char err[512], txt[512];
    kf_shape_format(t, sh, txt, sizeof txt);
    memset(pp, 0, sizeof *pp);
    if (kf_data_extents(t, sh, &pp->ex, err, sizeof err))
        return kf__err(ctx, KF_ETASK, "%s: at %s: %s", t->dir, txt, err);
    pp->calls = sh->light ? 2 : 4;
    const int mags = kf_task_has_mtol(t);
    for (int k = 0; k < (sh->light ? 2 : 3); k++) {
        uint64_t g0 = kf__now_ns();
        /* the light shape's two calls draw T1's spiked inputs, then the extreme kind
         * (variant 3: normal inputs scaled by 2^-16..2^-6, bounded ones in two levels):
         * at the largest sizes, kernels wrong only above some size AND for some values
         * (one clamping large values; a float accumulator losing the small values after
         * large ones) passed a single call on the plain distribution */
        int variant = (sh->light ? (k ? 3 : 1) : k) | flags[sh->light ? k + 1 : k];
        if (kf_data_gen_inputs(t, &pp->ex, &s->rng, variant, &pp->in[k]))
            return kf__err(ctx, KF_ENOMEM, "out of memory generating inputs");
        s->prof[KF_PROF_REF_GEN] += kf__now_ns() - g0;
        kf_sess_place(s, &s->rng, &pp->ex, k == 0 || sh->light ? 0 : 1, &ref->lay);
        kf_status st = ref_call(s, ctx, ref, &pp->ex, &pp->in[k], &s->rng, pp->refo[k], txt);
        /* magnitudes at once only where the degenerate-task test below needs them (the
         * first set's at a visible shape); the rest on demand (ensure_mag), for a call
         * that fails without them */
        if (!st && ((k == 0 && sh->kind == KF_SHAPE_VISIBLE) || !mags)) {
            st = kf_sess_magnitude(s, ctx, ref, &pp->ex, &pp->in[k], &s->rng, pp->mag[k], txt);
            pp->mag_done[k] = 1;
        }
        if (st) return st;
    }
    /* The degenerate test needs every set's magnitudes unless the first set alone clears
     * it: zeros, a copy and the second set's outputs all fail its bound (they do on any
     * sound task, at the cost of one magnitude run) */
    int settled = 0;
    if (sh->kind == KF_SHAPE_VISIBLE && mags) {
        void **one[1] = {pp->refo[0]}, **mone[1] = {pp->mag[0]};
        char *w1;
        if (kf_degenerate(t, &pp->ex, pp->in, one, mone, 1, &w1))
            return kf__err(ctx, KF_ENOMEM, "out of memory");
        int other = 1; /* the second set's outputs pass the first set's bound */
        for (int i = 0; i < t->nargs && other; i++) {
            const kf_arg *a = &t->args[i];
            if (!a->is_buffer || a->io == KF_IO_IN) continue;
            double rtol, atol, mtol = pp->mag[0][i] ? kf_task_mtol(t, a) : 0;
            kf_task_tolerance(t, a, &rtol, &atol);
            other = kf_data_same_mag(a->type, pp->refo[1][i], pp->refo[0][i], pp->mag[0][i], pp->ex.count[i],
                                     0, rtol, atol, mtol);
        }
        for (int k = 1; k < 3 && (w1 || other); k++) {
            kf_sess_place(s, &s->rng, &pp->ex, 1, &ref->lay);
            kf_status st = kf_sess_magnitude(s, ctx, ref, &pp->ex, &pp->in[k], &s->rng, pp->mag[k], txt);
            if (st) {
                free(w1);
                return st;
            }
            pp->mag_done[k] = 1;
        }
        settled = !w1 && !other;
        free(w1);
    }
    for (int i = 0; i < t->nargs; i++)
        if (t->args[i].is_buffer) /* inputs and outputs of three sets, and the magnitudes */
            pp->bytes += pp->ex.bytes[i] * ((t->args[i].io == KF_IO_INOUT ? 6 : 3) +
                                            (t->args[i].io != KF_IO_IN && mags ? 3 : 0));
    /* a degenerate task is refused, whatever the candidate does */
    if (sh->kind == KF_SHAPE_VISIBLE && !settled) {
        void **sets[3] = {pp->refo[0], pp->refo[1], pp->refo[2]};
        void **msets[3] = {pp->mag[0], pp->mag[1], pp->mag[2]};
        char *why;
        if (kf_degenerate(t, &pp->ex, pp->in, sets, msets, 3, &why))
            return kf__err(ctx, KF_ENOMEM, "out of memory");
        if (why) {
            kf_status st = kf__err(ctx, KF_ETASK,
                                   "%s: degenerate task at %s: %s; it cannot tell a correct "
                                   "kernel from a trivial one (run kforge validate)",
                                   t->dir, txt, why);
            free(why);
            return st;
        }
    }
    pp->ready = 1;
    return KF_OK;
}

typedef struct ref_job ref_job;
/* The reference's half of every shape is prepared in a thread while the candidate
 * compiles (the compiler is a separate process) and then while the candidate is checked
 * on the shapes already prepared: on two CPUs the reference's worker and the
 * candidate's run side by side. The candidate's text was read and fixed before any
 * input was drawn, and the compiler cannot see them. The thread owns s->rng and the
 * reference's side; the main thread owns s->crng, the candidate's side and the result. */
struct ref_job {
    kf_sess *s;
    kf_side *ref;
    const shape_list *L;
    shape_prep *prep;
    size_t arena;  /* the reference worker's arena */
    size_t budget; /* bytes of reference data prepared ahead at most */
    int threaded;  /* ref_main runs in its own thread */
    int vrot;      /* the input flavours' rotation (shape_flags) */
    kf_ctx ctx;    /* the thread's errors */
    kf_status st;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_mutex_t wmu; /* the reference's worker: its thread's prep_shape, or ensure_mag */
    int next;            /* shapes [0, next) are prepared */
    int done, stop;
};

/* The magnitudes of input set k at a shape, computed now if they were not (a task with an
 * mtol, off the visible shapes: only a call that fails without them needs them, so an
 * honest kernel within atol + rtol*|ref| costs no magnitude run). On the main thread, with
 * the reference's worker taken from its thread between two shapes; the reference's poison
 * and places from the candidate's stream (s->rng is the thread's). */
static kf_status ensure_mag(kf_sess *s, ref_job *j, shape_prep *pp, int k) {
    if (pp->mag_done[k]) return KF_OK;
    char txt[512];
    kf_shape_format(s->t, &j->L->all[pp - j->prep], txt, sizeof txt);
    pthread_mutex_lock(&j->wmu);
    kf_sess_place(s, &s->crng, &pp->ex, 0, &j->ref->lay);
    kf_status st = kf_sess_magnitude(s, s->ctx, j->ref, &pp->ex, &pp->in[k], &s->crng, pp->mag[k], txt);
    pthread_mutex_unlock(&j->wmu);
    if (!st) pp->mag_done[k] = 1;
    if (s->o->verbose) /* shape by index: hidden sizes stay out of the log */
        fprintf(stderr,
                "kforge: [%.1f ms] magnitude run for shape %d, input set %d (a call outside atol + "
                "rtol*|ref|)\n",
                (double)(kf__now_ns() - s->t0) / 1e6, (int)(pp - j->prep) + 1, k + 1);
    return st;
}

int kf_sess_mtol_fails(const kf_sess *s, const kf_side *side, const kf_extents *ex, void **ref, void **mag) {
    const unsigned char *arena = kf_worker_arena(side->w);
    for (int i = 0; i < s->t->nargs; i++) {
        const kf_arg *a = &s->t->args[i];
        if (!a->is_buffer || a->io == KF_IO_IN || !kf_dtype_is_float(a->type) || kf_task_mtol(s->t, a) <= 0)
            continue;
        double rtol, atol;
        kf_task_tolerance(s->t, a, &rtol, &atol);
        kf_cmp c;
        kf_data_compare_mag(a->type, arena + side->lay.off[i], ref[i], mag ? mag[i] : NULL, ex->count[i],
                            rtol, atol, mag ? kf_task_mtol(s->t, a) : 0, NULL, &c);
        if (c.first_bad >= 0) return 1;
    }
    return 0;
}

/* A candidate call that can show a race: when wide (the checking set is one CPU of
 * several), on every CPU, boosted with a short slice, and back on the checking set after;
 * interleaved when inter. Returns whether it ran on every CPU. */
static int race_call(kf_sess *s, kf_side *cand, const kf_extents *ex, const kf_inputs *in, const kf_poison *p,
                     int wide, int inter, kf_call_result *cr) {
    int par = wide && !kf_worker_set_cpus(cand->w, &s->all_cpus);
    int boosted = par && !kf_worker_set_nice(cand->w, PARALLEL_NICE, PARALLEL_SLICE_NS);
    s->interleave = inter;
    kf_sess_call(s, cand, ex, in, p, cr);
    s->interleave = 0;
    if (par && cr->st == KF_CALL_OK) {
        kf_worker_set_cpus(cand->w, &s->check_cpus);
        if (boosted) kf_worker_set_nice(cand->w, s->base_nice, 0);
    }
    return par;
}

/* The race rounds (docs/checker.md "Races"): a candidate whose calls ran threads makes up
 * to RACE_CALLS more calls at the maximum shape, where its threads live longest, within
 * RACE_BUDGET_NS of its own time: each on every CPU (where the checking set is one CPU),
 * boosted, and interleaved, on the plain set's inputs (its reference outputs are known)
 * under fresh poison. A race loses an update in about half of such calls on a 2-CPU
 * machine, loaded or not, and on one CPU; a single-threaded candidate makes none. */
#define RACE_CALLS 12
#define RACE_BUDGET_NS 100000000ull

static kf_status race_rounds(kf_sess *s, ref_job *job, kf_side *cand, shape_prep *pp,
                             const kf_verdict_sizes *sizes, int *dead, int *failed) {
    const kf_extents *ex = &pp->ex;
    uint64_t spent = 0;
    kf_status st = KF_OK;
    for (int k = 0; k < RACE_CALLS && spent < RACE_BUDGET_NS && !*failed && !st; k++) {
        kf_sess_place(s, &s->crng, ex, 0, &cand->lay);
        kf_poison p;
        kf_data_make_poison(s->t, &s->crng, &p);
        kf_call_result cr;
        race_call(s, cand, ex, &pp->in[0], &p, s->parallel_call, 1, &cr);
        s->race_calls++;
        char when[64];
        snprintf(when, sizeof when, "race round %d of up to %d, interleaved", k + 1, RACE_CALLS);
        if (cr.st != KF_CALL_OK) {
            kf_result_reject(s->res, cr.reason, sizes, "%s (%s)", cr.msg, when);
            *dead = *failed = 1;
            break;
        }
        spent += cr.worker_ns;
        if (!pp->mag_done[0] && kf_sess_mtol_fails(s, cand, ex, pp->refo[0], NULL) &&
            (st = ensure_mag(s, job, pp, 0)))
            break;
        double a, r;
        *failed |= kf_judge_mag(s, cand, ex, &pp->in[0], &p, pp->refo[0], pp->mag[0], NULL, NULL, 0, sizes,
                                when, &a, &r);
    }
    return st;
}

/* The candidate's four calls at one shape. A fatal failure sets *dead. */
static kf_status check_shape(kf_sess *s, ref_job *job, kf_side *cand, shape_prep *pp, kf_verdict_shape *rec,
                             int *dead) {
    const kf_task *t = s->t;
    const kf_extents *ex = &pp->ex;
    const kf_verdict_sizes *sizes = &rec->sizes;
    void *cando[2][KF_MAX_ARGS];
    memset(cando, 0, sizeof cando);
    kf_status st = KF_OK;
    int failed = 0, calls = 0;
    double max_abs = 0, max_rel = 0, plain_abs = -1;
    uint64_t best_ns = UINT64_MAX;
    static const int half[4] = {0, 1, 1, 0};
    int bad_late[2] = {0, 0};
    char when[64];
    kf_poison pair_poison;
    memset(&pair_poison, 0, sizeof pair_poison);
    const int same_addr = t->determinism_exact && !t->determinism_bits;
    for (int trial = 0; trial < pp->calls && !*dead; trial++) {
        int set = trial < 3 ? trial : 2;
        /* T2 reuses T1's exact buffer addresses: a memo keyed on pointers returns T1. A
         * light shape has one half of the arena: its second call reuses the first's
         * addresses (the same test against its first call). T3 reuses T2's under the
         * default determinism ("exact"): with the inputs and the addresses the same,
         * only the poison differs, so any difference in the bits is the poison (or
         * memory never written, or a race) showing through, while a summation split on
         * the input's page boundaries (NUMA-aware code, MKL) gives the same bits; each
         * call is judged against the reference on its own. "bits" and "tolerance" move
         * T3 to half A as before. */
        if (pp->calls == 2 ? trial == 0 : trial != 2 && !(trial == 3 && same_addr))
            kf_sess_place(s, &s->crng, ex, half[trial], &cand->lay);
        kf_poison p;
        /* T2 and T3, the determinism pair: T3's poison is T2's with every bit that can
         * differ flipped (kf_data_flip_poison) */
        if (trial == 3) kf_data_flip_poison(t, &pair_poison, &p);
        else kf_data_make_poison(t, &s->crng, &p);
        if (trial == 2) pair_poison = p;
        kf_call_result cr;
        /* the parallel calls (one CPU per checking worker: a 2-CPU machine): every call
         * but T1 and the worker's first, on every CPU, so threads run at once and an
         * unsynchronised reduction loses updates (tests/redteam/32_*). Not the worker's
         * first call: a candidate that decides once whether it is timed (by its CPU
         * count, 04_timing_detect_affinity) decides on the timing-like set; nor T1:
         * the spiked inputs, where such a candidate's shortcut fails, are checked at
         * every shape on that set */
        /* the solo call: at every shape after the first, the plain call (T0; the light
         * shape's second) runs on ONE CPU half the time, drawn in secret. Without it the
         * one-CPU calls of a 2-CPU machine were the worker's first and T1, recognisable by
         * T1's subnormal salt, and a kernel wrong only on one CPU (as a process pinned to
         * one core runs it) and only away from those calls was never seen wrong; on 3 or
         * more CPUs no checking call had one CPU at all (tests/redteam/32_one_cpu_gate.c) */
        const int cpu = kf_backend_has(s->be, KF_BACKEND_CPU); /* its threads run on our CPUs */
        int solo = s->have_check_cpus && s->cand_called && trial == (pp->calls == 4 ? 0 : 1) && cand->b &&
                   cpu && (kf_rng_next(&s->crng) & 1);
        if (solo && !s->parallel_call && kf_worker_set_cpus(cand->w, &s->one_cpu)) solo = 0;
        /* boosted with a short slice: where other work (the reference's thread, other
         * checks) holds a CPU, the candidate's threads still get both, or take turns
         * every 0.1 ms on one, and an unsynchronised update is lost either way; and
         * interleaved, on any machine, at the same calls: whichever of its threads runs
         * yields every 30 us (KF_RUN_INTERLEAVE), so threads that share a CPU (one CPU
         * left, or every CPU busy with other work) take turns inside each other's updates.
         * Scheduling alone left a racy sum right at every shape in 1 of about 120 checks
         * on a 2-CPU machine; a one-CPU machine never showed the race at all */
        const int racy = s->cand_called && (pp->calls == 4 ? trial != 1 : 1) && cand->b && cpu;
        int par = race_call(s, cand, ex, &pp->in[set], &p, !solo && s->parallel_call && racy, racy, &cr);
        s->cand_called = 1;
        if (solo && !s->parallel_call && cr.st == KF_CALL_OK) kf_worker_set_cpus(cand->w, &s->check_cpus);
        calls++;
        snprintf(when, sizeof when, "call %d of %d at this shape%s", trial + 1, pp->calls,
                 par    ? ", threads on every CPU"
                 : solo ? ", on one CPU"
                        : "");
        if (cr.st != KF_CALL_OK) {
            kf_result_reject(s->res, cr.reason, sizes, "%s (%s)", cr.msg, when);
            *dead = 1;
            failed = 1;
            break;
        }
        if (cr.worker_ns < best_ns) best_ns = cr.worker_ns;
        if (cr.gpu_flags & KF_DONE_THREADS) s->cand_threads = 1;
        if (trial == 0 && cand->b) { /* the backend's report of the call (a GPU's launches) */
            kf_call_out rep;
            kf_backend_report_call(s->be, cand->b, &cr, &rep);
            kf_verdict_set_call(&s->res->v, rec, &rep);
        }
        if (cr.cupti && cr.ngraph > 0) s->cand_graph = 1;
        if (!s->have_occ && cand->b) { /* the first call's (the resource report's) */
            memcpy(s->occ, cr.occ, sizeof s->occ);
            s->have_occ = 1;
        }
        void **prev[2] = {NULL, NULL}, **prevmag[2] = {NULL, NULL};
        int nprev = 0;
        if (trial >= 1 && trial <= 2)
            for (int k = 0; k < trial; k++) prevmag[nprev] = pp->mag[k], prev[nprev++] = pp->refo[k];
        uint64_t j0 = kf__now_ns();
        if (!pp->mag_done[set] && kf_sess_mtol_fails(s, cand, ex, pp->refo[set], NULL)) {
            /* this set's magnitudes decide; a call that fails with them too is tested
             * against the earlier calls' results (stale_result) under their own */
            st = ensure_mag(s, job, pp, set);
            for (int k = 0; k < nprev && !st; k++)
                if (!pp->mag_done[k] && kf_sess_mtol_fails(s, cand, ex, pp->refo[set], pp->mag[set]))
                    st = ensure_mag(s, job, pp, k);
            if (st) break;
        }
        double call_abs = 0, call_rel = 0; /* this call's, so the plain call's is known */
        int bad = kf_judge_mag(s, cand, ex, &pp->in[set], &p, pp->refo[set], pp->mag[set], prev, prevmag,
                               nprev, sizes, when, &call_abs, &call_rel);
        if (call_abs > max_abs) max_abs = call_abs;
        if (call_rel > max_rel) max_rel = call_rel;
        if (trial == 0) plain_abs = call_abs;
        s->prof[KF_PROF_CAND_JUDGE] += kf__now_ns() - j0;
        if (trial >= 2) {
            bad_late[trial - 2] = bad;
            /* T2 and T3 saw the same inputs under different poison and buffers */
            if (kf_sess_take_outputs(s, cand, ex, cando[trial - 2])) {
                st = kf__err(s->ctx, KF_ENOMEM, "out of memory");
                break;
            }
        }
        if (trial == 3) {
            int same = kf_outputs_same(t, ex, cando[0], cando[1], pp->mag[set]);
            /* within the tolerance, the magnitudes decide a difference beyond
             * atol + rtol*|ref| (computed now if they were not) */
            if (!same && !t->determinism_exact && kf_task_has_mtol(t) && !pp->mag_done[set]) {
                if ((st = ensure_mag(s, job, pp, set))) break;
                same = kf_outputs_same(t, ex, cando[0], cando[1], pp->mag[set]);
            }
            /* when both calls already failed, their difference is only the poison
             * showing through: the failures say more than "nondeterministic" */
            if (!same && !(bad_late[0] && bad_late[1])) {
                char at[160] = "";
                for (int i = 0; i < t->nargs && !at[0]; i++) {
                    const kf_arg *a = &t->args[i];
                    if (!a->is_buffer || a->io == KF_IO_IN) continue;
                    size_t es = kf_dtype_size(a->type);
                    for (int64_t k = 0; k < ex->count[i]; k++)
                        if (memcmp((char *)cando[0][i] + k * (int64_t)es,
                                   (char *)cando[1][i] + k * (int64_t)es, es)) {
                            char idx[128];
                            kf_data_format_index(t, ex, i, k, idx, sizeof idx);
                            snprintf(at, sizeof at, "first at %s: %.9g then %.9g", idx,
                                     kf_data_get(a->type, cando[0][i], k),
                                     kf_data_get(a->type, cando[1][i], k));
                            break;
                        }
                }
                kf_result_reject(s->res, KF_REASON_NONDETERMINISTIC, sizes,
                                 "the same inputs gave different outputs under different "
                                 "poison %s (%s; reads uninitialised or output memory, or "
                                 "races)",
                                 same_addr ? "at the same buffer addresses" : "and buffer addresses", at);
            }
            failed |= !same;
        }
        failed |= bad;
    }
    if (!failed && !*dead && !st && pp->calls == 2 && s->cand_threads && cand->b &&
        kf_backend_has(s->be, KF_BACKEND_CPU))
        st = race_rounds(s, job, cand, pp, sizes, dead, &failed);
    rec->status = failed ? KF_VSHAPE_FAILED : KF_VSHAPE_PASSED;
    rec->has |= KF_VS_CALLS | KF_VS_MAX_ABS_ERR | KF_VS_MAX_REL_ERR;
    rec->calls = calls;
    rec->max_abs_err = max_abs;
    /* the first call's alone, on the declared distributions (not the maximum shape's, whose
     * first call is spiked): how an error grows with size, without the spikes' own growth */
    if (plain_abs >= 0 && pp->calls == 4) rec->has |= KF_VS_PLAIN_ABS_ERR, rec->plain_abs_err = plain_abs;
    rec->max_rel_err = max_rel;
    if (best_ns != UINT64_MAX) rec->has |= KF_VS_BEST_NS, rec->best_ns = (int64_t)best_ns;
    kf_sess_free_outputs(t, cando[0]);
    kf_sess_free_outputs(t, cando[1]);
    return st;
}

#define PREP_BUDGET (512ull << 20) /* reference data kept ahead of the candidate */

static void *ref_main(void *arg) {
    ref_job *j = arg;
    kf_sess *s = j->s;
    size_t kept = 0;
    kf_call_result fail;
    /* the reference's worker starts here, while the main thread builds the candidate
     * (a GPU worker's driver and context set-up takes a few hundred milliseconds) */
    kf_status st = sess_spawn(s, &j->ctx, &s->rbuild, j->arena, j->ref, &fail);
    if (!st && !j->ref->w)
        st = kf__err(&j->ctx, KF_ETASK, "%s: the reference does not load: %s: %s", s->t->ref_path,
                     kf_reason_name(fail.reason), fail.msg);
    if (!st && s->o->verbose)
        fprintf(stderr, "kforge: [%.1f ms] reference worker ready\n", (double)(kf__now_ns() - s->t0) / 1e6);
    for (int i = 0; i < j->L->n && kept < j->budget && !st; i++) {
        pthread_mutex_lock(&j->mu);
        int stop = j->stop;
        pthread_mutex_unlock(&j->mu);
        if (stop) break;
        uint64_t p0 = kf__now_ns();
        pthread_mutex_lock(&j->wmu);
        st = prep_shape(s, &j->ctx, j->ref, &j->L->all[i], j->vrot, i, &j->prep[i]);
        pthread_mutex_unlock(&j->wmu);
        kept += j->prep[i].bytes;
        if (s->o->verbose) { /* a hidden shape is named by its kind and index: its sizes
                              * are not printed before the verdict (docs/checker.md) */
            char txt[256];
            const kf_shape *shp = &j->L->all[i];
            if (shp->kind == KF_SHAPE_VISIBLE) kf_shape_format(s->t, shp, txt, sizeof txt);
            else
                snprintf(txt, sizeof txt, "%s shape %d", shp->kind == KF_SHAPE_HIDDEN ? "hidden" : "edge",
                         i + 1);
            fprintf(stderr, "kforge: [%.1f ms] reference for %s took %.1f ms%s\n",
                    (double)(kf__now_ns() - s->t0) / 1e6, txt, (double)(kf__now_ns() - p0) / 1e6,
                    st ? " (failed)" : "");
        }
        pthread_mutex_lock(&j->mu);
        if (!st) j->next = i + 1;
        pthread_cond_broadcast(&j->cv);
        pthread_mutex_unlock(&j->mu);
        if (st) break;
    }
    pthread_mutex_lock(&j->mu);
    j->st = st;
    j->done = 1;
    pthread_cond_broadcast(&j->cv);
    /* the reference's worker was started by this thread, and its parent-death signal
     * fires when this THREAD ends: stay until the main thread is done with it */
    while (j->threaded && !j->stop) pthread_cond_wait(&j->cv, &j->mu);
    pthread_mutex_unlock(&j->mu);
    return NULL;
}

/* Wait until shape i is prepared (1) or the thread has stopped short of it (0). */
static int ref_wait(ref_job *j, int i) {
    pthread_mutex_lock(&j->mu);
    while (!j->done && j->next <= i) pthread_cond_wait(&j->cv, &j->mu);
    int ready = j->next > i;
    pthread_mutex_unlock(&j->mu);
    return ready;
}

int kf_check_libraries(kf_sess *s, kf_side *side, const char *when) {
    char loaded[4096], bad[1024];
    struct kf_verdict *v = &s->res->v;
    if (kf_worker_libraries(side->w, loaded, sizeof loaded)) {
        kf_verdict_libraries_unknown(v);
        return 0;
    }
    /* merged: every worker's libraries, each once */
    char *dup = kf__strdup(loaded), *save = NULL;
    if (!dup) v->oom = 1;
    kf_verdict_libraries_known(v);
    for (char *l = dup ? strtok_r(dup, ",", &save) : NULL; l; l = strtok_r(NULL, ",", &save))
        kf_verdict_add_library(v, l);
    free(dup);
    if (!kf_backend_undeclared(s->be, &s->cbuild, loaded, bad, sizeof bad)) return 0;
    kf_result_reject(s->res, KF_REASON_SANDBOX_VIOLATION, NULL,
                     "loaded %s at run time without declaring it (%s; kforge:link allows cublas and "
                     "cublasLt, declared in the file)",
                     bad, when);
    return 1;
}

/* Check the session's candidate on every shape. KF_OK with the verdict on s->res. */
kf_status kf_sess_check(kf_sess *s) {
    kf_status st = kf_sess_build_ref(s);
    if (st) return st;
    if (s->o->verbose)
        fprintf(stderr, "kforge: [%.1f ms] reference built\n", (double)(kf__now_ns() - s->t0) / 1e6);
    struct kf_verdict *v = &s->res->v;
    v->has_shapes = 1;
    shape_list L = {0};
    shape_prep *prep = NULL;
    kf_side ref = {0}, cand = {0};
    kf_worker *pre = NULL; /* the candidate's GPU worker, started before its build */
    kf_call_result fail;
    size_t arena = 0;
    ref_job job;
    memset(&job, 0, sizeof job);
    pthread_mutex_init(&job.mu, NULL);
    pthread_mutex_init(&job.wmu, NULL);
    pthread_cond_init(&job.cv, NULL);
    pthread_t th;
    int threaded = 0;
    if ((st = gather_shapes(s, &L)) || L.rejected) goto out;
    if (!(prep = calloc((size_t)L.n + 1, sizeof *prep))) {
        st = kf__err(s->ctx, KF_ENOMEM, "out of memory");
        goto out;
    }
    for (int i = 0; i < L.n; i++) {
        kf_extents ex;
        char err[512];
        if (kf_data_extents(s->t, &L.all[i], &ex, err, sizeof err)) {
            st = kf__err(s->ctx, KF_ETASK, "%s: %s", s->t->dir, err);
            goto out;
        }
        /* a light shape's calls all use half A: one half is enough (its layout starts at 0) */
        size_t b = L.all[i].light ? kf_sess_arena_bytes(s->t, &ex) / 2 : kf_sess_arena_bytes(s->t, &ex);
        if (b > arena) arena = b;
    }
    job.arena = arena;
    const char *pb = getenv("KFORGE_PREP_BUDGET"); /* tests: bytes */
    job.budget = pb && *pb ? (size_t)strtoull(pb, NULL, 10) : PREP_BUDGET;
    job.s = s;
    job.vrot = (int)kf_rng_range(&s->rng, 0, 2); /* before the thread owns s->rng */
    job.ref = &ref;
    job.L = &L;
    job.prep = prep;
    job.threaded = 1;
    /* set before the reference's thread starts: it reads it (kf_sess_call) */
    s->cand_side = &cand;
    threaded = pthread_create(&th, NULL, ref_main, &job) == 0;
    if (!threaded) { /* no thread: prepare everything first */
        job.threaded = 0;
        ref_main(&job);
    }

    /* where the backend can start a worker early (a GPU worker), it starts while the
     * candidate compiles: the driver and context set-up overlaps the compile; it gets its
     * artifact once built */
    kf_worker_opts early = {0};
    if (kf_backend_starts_early(s->be, &early)) {
        kf_ctx *quiet = kf_ctx_new();
        if (quiet && sess_spawn(s, quiet, NULL, arena, &cand, &fail) == KF_OK) pre = cand.w;
        cand.w = NULL;
        cand.b = NULL;
        kf_ctx_free(quiet); /* no early worker: the normal start below says why */
    }
    st = kf_sess_build_cand(s, s->ctx);
    if (s->o->verbose)
        fprintf(stderr, "kforge: [%.1f ms] candidate built\n", (double)(kf__now_ns() - s->t0) / 1e6);
    if (st || !record_build(s)) goto out;
    if (pre) { /* every build of a backend that starts early runs in that worker */
        cand.b = &s->cbuild;
        cand.w = pre;
        pre = NULL;
        st = kf_worker_attach(s->ctx, &cand.w, s->cbuild.so_path, &fail);
    } else {
        st = kf_sess_spawn(s, &s->cbuild, arena, &cand, &fail);
    }
    if (st) goto out;
    if (s->o->verbose)
        fprintf(stderr, "kforge: [%.1f ms] candidate worker ready\n", (double)(kf__now_ns() - s->t0) / 1e6);
    if (!cand.w) {
        kf_result_reject(s->res, fail.reason, NULL, "%s", fail.msg);
        goto out;
    }
    kf_sandbox_out sandbox; /* seccomp, and the backend's */
    kf_backend_report_sandbox(s->be, &s->cbuild, cand.w, &sandbox);
    kf_verdict_set_sandbox(v, &sandbox);
    v->landlock_abi = kf_worker_landlock_abi(cand.w);
    v->mseal = kf_worker_sealed(cand.w);
    v->frozen = 1;
    /* the CPUs a checking worker runs on (as a timing worker's), and those of the one
     * call per shape that runs on every CPU when that is a single CPU (0: none) */
    v->check_cpus = s->have_check_cpus ? CPU_COUNT(&s->check_cpus) : 0;
    v->parallel_call_cpus =
        s->parallel_call && kf_backend_has(s->be, KF_BACKEND_CPU) ? CPU_COUNT(&s->all_cpus) : 0;
    int dead = 0;
    const int watched = kf_backend_watches_libraries(s->be, &s->cbuild);
    for (int i = 0; i < L.n && !st; i++) {
        kf_verdict_shape *o = kf_verdict_add_shape(v);
        if (!o) {
            st = kf__err(s->ctx, KF_ENOMEM, "out of memory");
            break;
        }
        kf_sess_sizes(s, &L.all[i], &o->sizes);
        o->kind = vshape_kind(L.all[i].kind);
        /* the maximum-sizes shape: two calls on spiked and extreme inputs, not four */
        o->maximum = L.all[i].light;
        if (dead) {
            o->status = KF_VSHAPE_OTHER; /* not_run */
            continue;
        }
        if (!ref_wait(&job, i)) {
            if (job.st) break; /* the reference failed: reported below, after the join */
            /* past the budget: the thread has stopped, this thread prepares the rest */
            pthread_mutex_lock(&job.wmu);
            st = prep_shape(s, s->ctx, &ref, &L.all[i], job.vrot, i, &prep[i]);
            pthread_mutex_unlock(&job.wmu);
            if (st) break;
        }
        if (s->o->verbose) { /* hidden and edge sizes only in the verdict */
            char txt[256];
            if (L.all[i].kind == KF_SHAPE_VISIBLE) kf_shape_format(s->t, &L.all[i], txt, sizeof txt);
            else snprintf(txt, sizeof txt, "shape %d", i + 1);
            fprintf(stderr, "kforge: [%.1f ms] checking %s (%s)\n", (double)(kf__now_ns() - s->t0) / 1e6, txt,
                    kind_name(L.all[i].kind));
        }
        st = check_shape(s, &job, &cand, &prep[i], o, &dead);
        prep_free(s->t, &prep[i]);
        /* a watched worker (GPU host mode): what it has mapped, after every shape (the
         * last one's below) */
        if (!st && !dead && watched && cand.w && !kf_worker_dead(cand.w) && i + 1 < L.n &&
            kf_check_libraries(s, &cand, "seen while checking"))
            dead = 1;
    }
    v->interleave_ns = s->interleaved ? KF_INTERLEAVE_NS : 0; /* the period of the interleaved calls */
    v->race_calls = s->race_calls;
    /* what earlier calls used and no later call reused: verified once, here */
    if (!st && cand.w && kf_data_spent_check(&cand.spent, kf_worker_arena(cand.w)))
        kf_sess_spent_report(s, &cand, NULL, "after the last call");
    if (!st && cand.w && L.n > 0) { /* the resource report, at the first shape */
        kf_extents ex;
        char err[256];
        int sized = !kf_data_extents(s->t, &L.all[0], &ex, err, sizeof err);
        kf_resources_out r;
        kf_backend_resources(s->be, &s->cbuild, s->t, sized ? ex.size : NULL, kf_worker_info(cand.w),
                             s->have_occ ? s->occ : NULL, &r);
        if (r.reported) {
            kf_verdict_sizes at;
            kf_sess_sizes(s, &L.all[0], &at);
            kf_verdict_set_resources(v, &r, &at);
        }
    }
    if (!st && !dead && watched && cand.w) kf_check_libraries(s, &cand, "seen while checking");
out:
    if (threaded) {
        pthread_mutex_lock(&job.mu);
        job.stop = 1; /* a verdict is in: no more reference work is needed */
        pthread_cond_broadcast(&job.cv);
        pthread_mutex_unlock(&job.mu);
        pthread_join(th, NULL);
    }
    /* a reference that failed on a shape makes the task broken, whatever the candidate did
     * on the shapes before it; the thread's error outranks the verdict */
    if (job.st && !st) st = kf__err(s->ctx, job.st, "%s", job.ctx.err);
    if (s->o->verbose) {
        fprintf(stderr, "kforge: [%.1f ms] reference phase done\n", (double)(kf__now_ns() - s->t0) / 1e6);
        static const char *const pn[KF_PROF_N] = {"reference inputs",        "reference calls",
                                                  "reference output checks", "candidate staging",
                                                  "candidate calls",         "candidate judging"};
        for (int i = 0; i < KF_PROF_N; i++)
            fprintf(stderr, "kforge:   %-24s %8.1f ms\n", pn[i], (double)s->prof[i] / 1e6);
    }
    if (cand.w && *kf_worker_output(cand.w)) /* what the candidate printed (capped) */
        v->candidate_output = kf_verdict_str(v, kf_worker_output(cand.w));
    for (int i = 0; prep && i < L.n; i++) prep_free(s->t, &prep[i]);
    free(prep);
    pthread_mutex_destroy(&job.mu);
    pthread_mutex_destroy(&job.wmu);
    pthread_cond_destroy(&job.cv);
    kf_worker_close(pre); /* a started worker whose candidate never built */
    kf_worker_kill(ref.w);
    kf_worker_kill(cand.w);
    kf_worker_close(ref.w);
    kf_worker_close(cand.w);
    s->cand_side = NULL;
    if (s->o->verbose)
        fprintf(stderr, "kforge: [%.1f ms] workers closed\n", (double)(kf__now_ns() - s->t0) / 1e6);
    free_shapes(&L);
    return st;
}

kf_status kf_sess_finish(kf_sess *s, kf_status st, kf_result **out) {
    if (st == KF_OK) {
        s->res->v.has_seconds = 1;
        s->res->v.seconds = (double)(kf__now_ns() - s->t0) / 1e9;
    }
    /* a field that could not be added is missing from the verdict: no verdict then */
    if (st == KF_OK && (kf_result_seal(s->res) || kf__json_failures() != s->json_failures))
        st = kf__err(s->ctx, KF_ENOMEM, "out of memory (writing the result)");
    if (st == KF_OK) {
        *out = s->res;
        s->res = NULL;
    }
    kf_result_free(s->res);
    s->res = NULL;
    kf_sess_close(s);
    return st;
}

kf_status kf_check(kf_ctx *ctx, const kf_task *task, const char *candidate, const kf_opts *opts,
                   kf_result **out) {
    if (!task || !candidate || !out) return kf__err(ctx, KF_EUSAGE, "kf_check: NULL argument");
    *out = NULL;
    kf_opts dflt;
    if (!opts) kf_opts_init(&dflt), opts = &dflt;
    char san[PATH_MAX];
    kf_status st = kf_sanitize_prepare(ctx, task, opts, san, sizeof san);
    if (st) return st;
    kf_sess s;
    st = kf_sess_open(&s, ctx, task, candidate, opts, "check");
    if (!st) st = kf_sess_check(&s);
    /* a rejected candidate needs no sanitizer */
    if (!st && opts->sanitize && s.res->v.verdict == KF_VERDICT_ACCEPTED) st = kf_sanitize_run(&s, san);
    return kf_sess_finish(&s, st, out);
}
