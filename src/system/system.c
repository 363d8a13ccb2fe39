/*
 * system.c - the system gate: a pipeline's step judged end to end (docs/system.md).
 *
 * A configuration gives each slot an implementation: the task's reference, a candidate
 * file, or a baseline's file. Each implementation is a checker session (check.h) with
 * its sandboxed worker; a stage call is the checker's one call path (kf_sess_call:
 * staged inputs, fresh sentinels, guard zones), its outputs read back by the
 * coordinator into the pipeline's buffers, which live only here.
 *
 * kf_system_check:
 *   1. every slot candidate's own kf_check on its task (o->task_checks);
 *   2. weights and state drawn once from the secret seed, then for every step fresh
 *      adversarial inputs (the declared distributions, then spiked, then rescaled, in
 *      turn; carried inputs take the buffer they name instead), the same for both
 *      pipelines;
 *   3. the reference pipeline and the candidate pipeline run the step side by side; in
 *      the reference one, after each stage whose slot has a candidate, the candidate is
 *      called on the very tensors that stage received (captured I/O) and judged by the
 *      checker's judge (kf_judge_mag) against the reference's outputs;
 *   4. after every step every output buffer of the candidate pipeline is compared with
 *      the reference pipeline's within the output's end-to-end tolerance;
 *   5. engagement: each candidate made exactly (its slot's stages x layers x steps)
 *      successful calls in the candidate pipeline, each of which wrote every output
 *      (guards intact); the count is in the report.
 * kf_system_bench: the check, then fresh timing workers, the coordinator pinned as
 * kf_bench pins it, and rounds of the whole run (every step from the same initial
 * state and inputs) for both configurations in alternating order; a round's time is
 * the sum of the backend's clock of each stage call (kf_backend_clock: the worker's own
 * clock on the CPU, the launches' event time on a GPU; staging and the copies
 * between stages are the harness's, not the step's), the per-stage times are those of
 * the same calls, in place. The final outputs of both are compared every round. The
 * gain is the paired median ratio (kf_stats_ratio) minus one, with its interval; the
 * roofline is the backend's (kf_backend_roofline) over the step's summed cost models.
 *
 * Tuning knobs: with o->cand_knobs the candidate configuration's stage sizes come from a
 * second load of the pipeline under those knobs (S->pc; the buffers are the dims', the
 * same on both sides), the reference pipeline's and the baseline's from S->p, so a bench
 * times one knob value against another and the check proves the outputs unchanged.
 *
 * A fusion (a stage after the pipeline's, its own slot) replaces its span's stages in a
 * configuration that gives its slot a file; in the reference pipeline its candidate is
 * called on the inputs the span's first stage found and judged against what the span's
 * last stage left, each wrong output named with the span's stage that writes it.
 *
 * It does not (yet): time a captured CUDA graph of the whole step (launch=graph is
 * refused on every backend: each slot is its own worker process), keep weights resident
 * on a GPU worker across calls (every call stages them, docs/system.md), or take the
 * timing lock of kf_bench_timed (a system bench is its own command, never run beside a
 * kforge run --jobs N).
 */
#define _GNU_SOURCE
#include "system.h"

#include "../bench/bench.h"
#include "../check/check.h"

#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SYS_SLICE_NS 1000000 /* the timing workers' scheduler slice, as kf_bench's */

enum { IMPL_REF, IMPL_CAND, IMPL_VS, IMPL_N };

typedef struct {
    int on;
    kf_sess sess;
    kf_side side;
    const char *path;
    int64_t calls;           /* successful calls in the pipeline */
    int64_t captured;        /* captured-I/O calls (candidates) */
    int named;               /* a fusion's wrong stage named already */
    double max_abs, max_rel; /* captured: the largest errors seen */
} sys_impl;

typedef struct {
    sys_impl im[IMPL_N];
    size_t arena;
    int nstages; /* stages of this slot in the block */
} sys_slot;

typedef struct {
    kf_pipeline *p;
    kf_pipeline *pc; /* the candidate configuration's tuning knobs (o->cand_knobs), or NULL: p's */
    kf_ctx *ctx;
    const kf_system_opts *o;
    kf_opts co; /* the check options of every session */
    sys_slot *sl;
    kf_rng rng;
    json_t *reasons;
    int rejected;
    int timing;
} sys;

/* A configuration's buffers: data[b * layers + l] (l 0 for buffers not per layer). */
typedef struct {
    void **data;
} sys_state;

static size_t buf_bytes(const kf_sys_buffer *b) { return (size_t)b->count * kf_dtype_size(b->type); }
static int nlay(const kf_pipeline *p, int b) { return p->bufs[b].per_layer ? p->layers : 1; }

static void reject(sys *S, kf_reason code, const char *slot, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void reject(sys *S, kf_reason code, const char *slot, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    S->rejected = 1;
    json_t *r = json_pack("{s:s,s:s}", "code", kf_reason_name(code), "message", msg);
    if (r && slot) json_object_set_new(r, "slot", json_string(slot));
    if (r) json_array_append_new(S->reasons, r);
}

static void state_free(const kf_pipeline *p, sys_state *s) {
    for (int i = 0; s->data && i < p->nbufs * p->layers; i++) free(s->data[i]);
    free(s->data);
    s->data = NULL;
}

static kf_status state_new(sys *S, sys_state *s) {
    const kf_pipeline *p = S->p;
    if (!(s->data = calloc((size_t)p->nbufs * p->layers, sizeof *s->data)))
        return kf__err(S->ctx, KF_ENOMEM, "out of memory");
    for (int b = 0; b < p->nbufs; b++)
        for (int l = 0; l < nlay(p, b); l++)
            if (!(s->data[b * p->layers + l] =
                      calloc(1, buf_bytes(&p->bufs[b]) ? buf_bytes(&p->bufs[b]) : 1)))
                return kf__err(S->ctx, KF_ENOMEM, "out of memory");
    return KF_OK;
}

static void state_copy(const kf_pipeline *p, sys_state *dst, const sys_state *src, int only_role, int role) {
    for (int b = 0; b < p->nbufs; b++) {
        if (only_role && (int)p->bufs[b].role != role) continue;
        for (int l = 0; l < nlay(p, b); l++)
            memcpy(dst->data[b * p->layers + l], src->data[b * p->layers + l], buf_bytes(&p->bufs[b]));
    }
}

/* Fresh values for one buffer: its distribution, then (variant 1) a few spikes x32, or
 * (variant 2) normal values rescaled by 2^k, k in [-2, 2], and uniform ones drawn from a
 * random sub-interval. f16 and bf16 buffers (a GPU pipeline's weights, hundreds of MiB)
 * take the bulk float streams in chunks, each value rounded once to nearest even; the
 * other types one value at a time. */
#define GEN_HALF_CHUNK ((int64_t)1 << 20)
static kf_status gen(sys *S, const kf_sys_buffer *b, int variant, void *data) {
    kf_rng *r = &S->rng;
    kf_init in = b->init;
    double scale = 1;
    if (variant == 2 && in.dist == KF_DIST_NORMAL) scale = ldexp(1.0, (int)kf_rng_range(r, -2, 2));
    if (variant == 2 && in.dist != KF_DIST_NORMAL) {
        double u = kf_rng_uniform(r), w = kf_rng_uniform(r);
        double lo = in.a + (in.b - in.a) * fmin(u, w), hi = in.a + (in.b - in.a) * fmax(u, w);
        in.a = lo, in.b = hi;
    }
    int half = b->type == KF_T_F16 || b->type == KF_T_BF16;
    if (half && in.dist != KF_DIST_INT) {
        float *tmp = malloc((size_t)(b->count < GEN_HALF_CHUNK ? b->count : GEN_HALF_CHUNK) * sizeof *tmp + 1);
        if (!tmp) return kf__err(S->ctx, KF_ENOMEM, "out of memory");
        for (int64_t lo = 0; lo < b->count; lo += GEN_HALF_CHUNK) {
            int64_t m = b->count - lo < GEN_HALF_CHUNK ? b->count - lo : GEN_HALF_CHUNK;
            if (in.dist == KF_DIST_NORMAL) kf_rng_fill_normal_f32(r, tmp, m, in.a * scale, in.b * scale);
            else kf_rng_fill_uniform_f32(r, tmp, m, in.a, in.b);
            for (int64_t k = 0; k < m; k++) kf_data_put(b->type, data, lo + k, tmp[k]);
        }
        free(tmp);
    } else {
        for (int64_t i = 0; i < b->count; i++) {
            double x;
            if (in.dist == KF_DIST_NORMAL) x = (in.a + in.b * kf_rng_normal(r)) * scale;
            else if (in.dist == KF_DIST_UNIFORM) x = in.a + (in.b - in.a) * kf_rng_uniform(r);
            else x = (double)kf_rng_range(r, (int64_t)ceil(in.a), (int64_t)floor(in.b));
            switch (b->type) {
            case KF_T_F32: ((float *)data)[i] = (float)x; break;
            case KF_T_F64: ((double *)data)[i] = x; break;
            case KF_T_I32: ((int32_t *)data)[i] = (int32_t)x; break;
            case KF_T_I64: ((int64_t *)data)[i] = (int64_t)x; break;
            case KF_T_F16:
            case KF_T_BF16: kf_data_put(b->type, data, i, x); break;
            default:
                return kf__err(S->ctx, KF_EUSAGE,
                               "%s: buffer %s: the system gate draws f32, f64, f16, bf16, i32 and i64 only",
                               S->p->path, b->name);
            }
        }
    }
    if (variant == 1 && in.dist == KF_DIST_NORMAL && kf_dtype_is_float(b->type))
        for (int64_t k = 0; k < b->count / 64 + 1; k++) {
            int64_t i = kf_rng_range(r, 0, b->count - 1);
            kf_data_put(b->type, data, i, kf_data_get(b->type, data, i) * 32);
        }
    return KF_OK;
}

/* The step's fresh inputs into s (carried ones from the buffer they name). */
static kf_status gen_inputs(sys *S, sys_state *s, int step) {
    const kf_pipeline *p = S->p;
    for (int b = 0; b < p->nbufs; b++) {
        if (p->bufs[b].role != KF_SYS_INPUT) continue;
        kf_status st;
        if (step > 0 && p->bufs[b].carry >= 0) continue;
        if ((st = gen(S, &p->bufs[b], step % 3, s->data[b * p->layers]))) return st;
    }
    return KF_OK;
}

static void carry_inputs(const kf_pipeline *p, sys_state *s) {
    for (int b = 0; b < p->nbufs; b++)
        if (p->bufs[b].role == KF_SYS_INPUT && p->bufs[b].carry >= 0)
            memcpy(s->data[b * p->layers], s->data[p->bufs[b].carry * p->layers], buf_bytes(&p->bufs[b]));
}

static const char *impl_name(int i) {
    return i == IMPL_REF ? "reference" : i == IMPL_CAND ? "candidate" : "baseline";
}

/* One call of stage st (layer, step) by impl im of its slot on the arguments' data; the
 * outputs into outs (caller frees with kf_sess_free_outputs). *ok 0 (and a rejection
 * for a candidate, a task error for the reference) when the call failed. */
static kf_status stage_call(sys *S, const kf_sys_stage *st, int impl, sys_impl *im, const kf_extents *ex,
                            void **arg, void **outs, kf_call_result *cr, int *ok, int step, int layer) {
    const kf_task *t = im->sess.t;
    kf_inputs in;
    memset(&in, 0, sizeof in);
    for (int a = 0; a < t->nargs; a++)
        if (t->args[a].is_buffer && t->args[a].io != KF_IO_OUT) in.buf[a] = arg[a];
    kf_poison po;
    kf_data_make_poison(t, &im->sess.rng, &po);
    kf_sess_place(&im->sess, &im->sess.rng, ex, 0, &im->side.lay);
    kf_sess_call(&im->sess, &im->side, ex, &in, &po, cr);
    *ok = 0;
    memset(outs, 0, KF_MAX_ARGS * sizeof *outs);
    const char *sl = S->p->slots[st->slot].name;
    if (cr->st != KF_CALL_OK) {
        if (impl == IMPL_REF)
            return kf__err(S->ctx, KF_ETASK, "stage %s (step %d, layer %d): the reference failed: %s",
                           st->name, step, layer, cr->msg);
        reject(S, cr->reason, sl, "stage %s (step %d, layer %d): the %s failed in the pipeline: %s", st->name,
               step, layer, impl_name(impl), cr->msg);
        return KF_OK;
    }
    int g = kf_data_check_guards(t, &im->side.lay, &po, kf_worker_arena(im->side.w));
    if (g >= 0) {
        if (impl == IMPL_REF)
            return kf__err(S->ctx, KF_ETASK, "stage %s: the reference wrote outside its buffers", st->name);
        reject(S, KF_REASON_OUT_OF_BOUNDS, sl,
               "stage %s (step %d, layer %d): the %s wrote outside its buffers (%s)", st->name, step, layer,
               impl_name(impl), g < t->nargs ? t->args[g].name : "after the last buffer");
        return KF_OK;
    }
    if (kf_sess_take_outputs(&im->sess, &im->side, ex, outs)) {
        kf_sess_free_outputs(t, outs);
        return kf__err(S->ctx, KF_ENOMEM, "out of memory");
    }
    /* engagement: every output written (no sentinel left), so the call did the work */
    for (int a = 0; a < t->nargs; a++) {
        const kf_arg *ar = &t->args[a];
        if (!ar->is_buffer || ar->io != KF_IO_OUT || impl == IMPL_REF) continue;
        size_t es = kf_dtype_size(ar->type);
        if (kf_data_count_pattern(outs[a], ex->count[a], po.sentinel[a], es) > 0 && ex->count[a] > 0) {
            reject(S, KF_REASON_UNWRITTEN_OUTPUT, sl,
                   "stage %s (step %d, layer %d): the %s left %s unwritten", st->name, step, layer,
                   impl_name(impl), ar->name);
            kf_sess_free_outputs(t, outs);
            return KF_OK;
        }
    }
    im->calls++;
    *ok = 1;
    return KF_OK;
}

/* A fusion's candidate just called on its span's captured inputs: the first of its
 * outputs outside its tolerance of the composed references' (refo) is named with the
 * stage of the span that writes that buffer, once per fusion. */
static void fused_blame(sys *S, const kf_sys_stage *f, sys_impl *c, const kf_extents *ex, void **refo,
                        int step, int layer) {
    const kf_pipeline *p = S->p;
    const kf_task *t = c->sess.t;
    void *outs[KF_MAX_ARGS];
    if (kf_sess_take_outputs(&c->sess, &c->side, ex, outs)) return;
    for (int a = 0; a < t->nargs && !c->named; a++) {
        const kf_arg *ar = &t->args[a];
        if (!ar->is_buffer || ar->io == KF_IO_IN || !outs[a] || !refo[a]) continue;
        double rtol, atol;
        kf_task_tolerance(t, ar, &rtol, &atol);
        kf_cmp cmp;
        kf_data_compare(ar->type, outs[a], refo[a], ex->count[a], rtol, atol, NULL, &cmp);
        if (cmp.first_bad < 0) continue;
        int b = f->bind[a], by = -1;
        for (int j = f->first; j <= f->last; j++) {
            const kf_task *tj = p->slots[p->stages[j].slot].task;
            for (int k = 0; k < tj->nargs; k++)
                if (p->stages[j].bind[k] == b && tj->args[k].io != KF_IO_IN) by = j;
        }
        c->named = 1;
        reject(
            S, cmp.nonfinite ? KF_REASON_NONFINITE : KF_REASON_WRONG_RESULT, p->slots[f->slot].name,
            "fusion %s: wrong on stage %s: its %s (stage %s's %s) differs from the composed references at "
            "element %lld (got %.9g, expected %.9g; %lld of %lld elements outside rtol %g, atol %g), on the "
            "inputs its stages receive in the pipeline (step %d, layer %d)",
            f->name, by >= 0 ? p->stages[by].name : "?", ar->name, by >= 0 ? p->stages[by].name : "?",
            p->bufs[b].name, (long long)cmp.first_bad, kf_data_get(ar->type, outs[a], cmp.first_bad),
            kf_data_get(ar->type, refo[a], cmp.first_bad), (long long)(cmp.wrong + cmp.nonfinite),
            (long long)ex->count[a], rtol, atol, step, layer);
    }
    kf_sess_free_outputs(t, outs);
}

/* The fusion (its stage index) that replaces the stages from j in configuration impl:
 * one whose span starts at j and whose slot is not the reference's; -1 when none. */
static int fusion_at(const kf_pipeline *p, const int *impl, int j) {
    for (int f = p->nplain; f < p->nstages; f++)
        if (p->stages[f].first == j && impl[p->stages[f].slot] != IMPL_REF) return f;
    return -1;
}

/* Whether stage j is replaced by a fusion in configuration impl. */
static int fused_away(const kf_pipeline *p, const int *impl, int j) {
    for (int f = p->nplain; f < p->nstages; f++)
        if (p->stages[f].first <= j && j <= p->stages[f].last && impl[p->stages[f].slot] != IMPL_REF)
            return 1;
    return 0;
}

/* The captured-I/O check: the slot's candidate on the inputs stage st received in the
 * reference pipeline, judged against the reference's outputs there. */
static kf_status captured(sys *S, const kf_sys_stage *st, sys_slot *k, const kf_extents *ex, void **arg,
                          void **refo, const kf_shape *sh, int step, int layer) {
    sys_impl *c = &k->im[IMPL_CAND];
    const kf_task *t = c->sess.t;
    kf_inputs in;
    memset(&in, 0, sizeof in);
    for (int a = 0; a < t->nargs; a++)
        if (t->args[a].is_buffer && t->args[a].io != KF_IO_OUT) in.buf[a] = arg[a];
    void *mag[KF_MAX_ARGS];
    memset(mag, 0, sizeof mag);
    char when[384];
    const kf_pipeline *p = S->p;
    if (st->first >= 0)
        snprintf(when, sizeof when,
                 "on the inputs stages %s to %s receive in the pipeline (step %d, layer %d)",
                 p->stages[st->first].name, p->stages[st->last].name, step, layer);
    else
        snprintf(when, sizeof when, "on the inputs stage %s receives in the pipeline (step %d, layer %d)",
                 st->name, step, layer);
    kf_status s = KF_OK;
    if (kf_task_has_mtol(t) &&
        (s = kf_sess_magnitude(&c->sess, S->ctx, &k->im[IMPL_REF].side, ex, &in, &c->sess.rng, mag, when)))
        return s;
    kf_poison po;
    kf_data_make_poison(t, &c->sess.rng, &po);
    kf_sess_place(&c->sess, &c->sess.crng, ex, 1, &c->side.lay);
    kf_call_result cr;
    kf_sess_call(&c->sess, &c->side, ex, &in, &po, &cr);
    kf_verdict_sizes vs;
    kf_sess_sizes(&c->sess, sh, &vs);
    c->captured++;
    if (cr.st != KF_CALL_OK) {
        kf_result_reject(c->sess.res, cr.reason, &vs, "%s: %s", when, cr.msg);
    } else {
        double ma = 0, mr = 0;
        kf_judge_mag(&c->sess, &c->side, ex, &in, &po, refo, mag, NULL, NULL, 0, &vs, when, &ma, &mr);
        if (ma > c->max_abs) c->max_abs = ma;
        if (mr > c->max_rel) c->max_rel = mr;
        if (st->first >= 0 && !c->named) fused_blame(S, st, c, ex, refo, step, layer);
    }
    kf_sess_free_outputs(t, mag);
    return KF_OK;
}

/* The sizes and extents of stage st at (step, layer) under kp's knobs (S->p or S->pc,
 * the same stages): 0, or a task error. */
static kf_status stage_shape(sys *S, const kf_pipeline *kp, const kf_sys_stage *st, const kf_task *t,
                             int step, int layer, int64_t *v, kf_extents *ex) {
    char err[512];
    if (kf_pipeline_stage_sizes(kp, &kp->stages[st - S->p->stages], step, layer, v, err, sizeof err))
        return kf__err(S->ctx, KF_ETASK, "%s: stage %s: %s", S->p->path, st->name, err);
    kf_shape sh = {v, KF_SHAPE_VISIBLE, 0};
    if (kf_data_extents(t, &sh, ex, err, sizeof err))
        return kf__err(S->ctx, KF_ETASK, "%s: stage %s: %s", S->p->path, st->name, err);
    return KF_OK;
}

/* The captured-I/O check of fusion f (a candidate, in the reference pipeline): open (at
 * its first stage) copies the inputs its span finds; close (after its last) calls the
 * candidate on them, judged against what the span's reference stages wrote. */
static kf_status fusion_capture(sys *S, int f, sys_state *s, int step, int layer, void **snap, int open) {
    const kf_pipeline *p = S->p;
    const kf_sys_stage *st = &p->stages[f];
    sys_slot *k = &S->sl[st->slot];
    const kf_task *t = k->im[IMPL_CAND].sess.t;
    int64_t v[KF_MAX_SIZES];
    kf_extents ex;
    kf_status e = stage_shape(S, p, st, t, step, layer, v, &ex);
    void *refo[KF_MAX_ARGS] = {0};
    for (int a = 0; !e && a < t->nargs; a++) {
        int b = st->bind[a];
        if (b < 0) continue;
        void *d = s->data[b * p->layers + (p->bufs[b].per_layer ? layer : 0)];
        if (t->args[a].io == KF_IO_IN && open) {
            if (!(snap[a] = malloc(ex.bytes[a] ? ex.bytes[a] : 1)))
                e = kf__err(S->ctx, KF_ENOMEM, "out of memory");
            else memcpy(snap[a], d, ex.bytes[a]);
        } else if (t->args[a].io != KF_IO_IN) {
            refo[a] = d;
        }
    }
    if (!e && !open) {
        kf_shape sh = {v, KF_SHAPE_VISIBLE, 0};
        e = captured(S, st, k, &ex, snap, refo, &sh, step, layer);
    }
    if (e || !open)
        for (int a = 0; a < KF_MAX_ARGS; a++) free(snap[a]), snap[a] = NULL;
    return e;
}

/* One step of a configuration (impl per slot) on state s, its stages' sizes under kp's
 * knobs. capture: run the captured-I/O check of every candidate slot (the reference
 * configuration). A fusion whose slot has an implementation other than the reference's
 * replaces its span's stages. stage_ns
 * (per stage, fusions included, added to) and *step_ns get the worker's clock of each
 * call; NULL: not kept. *ok 0 when a call of a candidate failed (recorded). */
static kf_status run_step(sys *S, const kf_pipeline *kp, const int *impl, sys_state *s, int step, int capture,
                          double *stage_ns, double *step_ns, int *ok) {
    const kf_pipeline *p = S->p;
    kf_backend *be = kf_backend_get(p->backend);
    *ok = 1;
    void *snap[KF_MAX_ARGS] = {0};
    kf_status e = KF_OK;
    for (int l = 0; l < p->layers; l++) {
        /* a layer's input is the layer before's output, where an input is carried */
        if (l) carry_inputs(p, s);
        for (int j = 0; j < p->nplain; j++) {
            int f = fusion_at(p, impl, j), sj = f >= 0 ? f : j;
            const kf_sys_stage *st = &p->stages[sj];
            sys_slot *k = &S->sl[st->slot];
            sys_impl *im = &k->im[impl[st->slot]];
            const kf_task *t = im->sess.t;
            /* a fusion's candidate, in the reference pipeline: the inputs its span finds */
            int fc = -1;
            for (int q = p->nplain; capture && q < p->nstages; q++)
                if (S->sl[p->stages[q].slot].im[IMPL_CAND].on && impl[p->stages[q].slot] == IMPL_REF &&
                    (p->stages[q].first == j || p->stages[q].last == j))
                    fc = q;
            if (fc >= 0 && p->stages[fc].first == j && (e = fusion_capture(S, fc, s, step, l, snap, 1)))
                return e;
            int64_t v[KF_MAX_SIZES];
            kf_extents ex;
            if ((e = stage_shape(S, kp, st, t, step, l, v, &ex))) goto out;
            kf_shape sh = {v, KF_SHAPE_VISIBLE, 0};
            void *arg[KF_MAX_ARGS] = {0}, *outs[KF_MAX_ARGS];
            for (int a = 0; a < t->nargs; a++) {
                int b = st->bind[a];
                if (b >= 0) arg[a] = s->data[b * p->layers + (p->bufs[b].per_layer ? l : 0)];
            }
            kf_call_result cr;
            int cok;
            if ((e = stage_call(S, st, impl[st->slot], im, &ex, arg, outs, &cr, &cok, step, l))) goto out;
            if (!cok) {
                *ok = 0;
                goto out;
            }
            /* the backend's clock of a call, as kforge bench times it: the worker's own
             * clock on the CPU, the launches' event time on a GPU (the worker's host span
             * there adds the launch and the synchronise, tens of us per stage) */
            double ns = (double)kf_backend_clock(be, &cr);
            if (stage_ns) stage_ns[sj] += ns;
            if (step_ns) *step_ns += ns;
            if (capture && k->im[IMPL_CAND].on && impl[st->slot] == IMPL_REF &&
                (e = captured(S, st, k, &ex, arg, outs, &sh, step, l))) {
                kf_sess_free_outputs(t, outs);
                goto out;
            }
            for (int a = 0; a < t->nargs; a++)
                if (outs[a]) memcpy(arg[a], outs[a], ex.bytes[a]);
            kf_sess_free_outputs(t, outs);
            if (fc >= 0 && p->stages[fc].last == j && (e = fusion_capture(S, fc, s, step, l, snap, 0)))
                goto out;
            if (f >= 0) j = p->stages[f].last;
        }
    }
out:
    for (int a = 0; a < KF_MAX_ARGS; a++) free(snap[a]);
    return e;
}

/* Compare the outputs of two states within the outputs' tolerances; 1 when they pass.
 * e2e (may be NULL) gets each output's largest errors raised. */
static int outputs_pass(sys *S, const sys_state *got, const sys_state *want, int step, const char *who,
                        double *e2e_abs, double *e2e_rel) {
    const kf_pipeline *p = S->p;
    int pass = 1;
    for (int b = 0; b < p->nbufs; b++) {
        const kf_sys_buffer *bf = &p->bufs[b];
        if (bf->role != KF_SYS_OUTPUT) continue;
        kf_cmp c;
        kf_data_compare(bf->type, got->data[b * p->layers], want->data[b * p->layers], bf->count, bf->rtol,
                        bf->atol, NULL, &c);
        if (e2e_abs && c.max_abs > e2e_abs[b]) e2e_abs[b] = c.max_abs;
        if (e2e_rel && c.max_rel > e2e_rel[b]) e2e_rel[b] = c.max_rel;
        if (c.first_bad >= 0) {
            pass = 0;
            if (who) {
                int64_t i = c.first_bad;
                reject(S, c.nonfinite ? KF_REASON_NONFINITE : KF_REASON_WRONG_RESULT, NULL,
                       "end to end, step %d: output %s differs from the reference pipeline's at element %lld "
                       "(got %.9g, expected %.9g; %lld of %lld elements outside rtol %g, atol %g)%s%s",
                       step, bf->name, (long long)i, kf_data_get(bf->type, got->data[b * p->layers], i),
                       kf_data_get(bf->type, want->data[b * p->layers], i),
                       (long long)(c.wrong + c.nonfinite), (long long)bf->count, bf->rtol, bf->atol,
                       *who ? " " : "", who);
            }
        }
    }
    return pass;
}

/* ---- sessions and workers ---- */

static kf_status parse_sel(sys *S, const char *const *sel, int n, int which, const char *opt) {
    for (int i = 0; i < n; i++) {
        const char *eq = strchr(sel[i], '=');
        char name[128];
        if (!eq || eq == sel[i] || (size_t)(eq - sel[i]) >= sizeof name || !eq[1])
            return kf__err(S->ctx, KF_EUSAGE, "%s %s: expected SLOT=FILE", opt, sel[i]);
        snprintf(name, sizeof name, "%.*s", (int)(eq - sel[i]), sel[i]);
        int k = kf_pipeline_slot(S->p, name);
        if (k < 0) {
            char list[512] = "";
            for (int j = 0; j < S->p->nslots; j++)
                snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", j ? ", " : "",
                         S->p->slots[j].name);
            return kf__err(S->ctx, KF_EUSAGE, "%s %s: the pipeline has no slot %s (its slots: %s)", opt,
                           sel[i], name, list);
        }
        if (S->sl[k].im[which].on) return kf__err(S->ctx, KF_EUSAGE, "%s: slot %s given twice", opt, name);
        if (access(eq + 1, R_OK)) return kf__err(S->ctx, KF_EIO, "%s %s: %s", opt, sel[i], strerror(errno));
        S->sl[k].im[which].on = 1;
        S->sl[k].im[which].path = eq + 1;
    }
    return KF_OK;
}

static void sys_close_workers(sys *S) {
    for (int k = 0; S->sl && k < S->p->nslots; k++)
        for (int i = 0; i < IMPL_N; i++) {
            kf_worker_close(S->sl[k].im[i].side.w);
            S->sl[k].im[i].side.w = NULL;
        }
}

static void sys_free(sys *S) {
    sys_close_workers(S);
    for (int k = 0; S->sl && k < S->p->nslots; k++)
        for (int i = 0; i < IMPL_N; i++)
            if (S->sl[k].im[i].sess.t) {
                kf_result_free(S->sl[k].im[i].sess.res);
                kf_sess_close(&S->sl[k].im[i].sess);
            }
    free(S->sl);
    kf_rng_free(&S->rng);
    json_decref(S->reasons);
    kf_pipeline_free(S->p);
    kf_pipeline_free(S->pc);
}

/* Open and build every implementation's session; size each slot's arena. */
static kf_status sys_open(sys *S, kf_ctx *ctx, const char *path, const kf_system_opts *o) {
    memset(S, 0, sizeof *S);
    S->ctx = ctx;
    S->o = o;
    S->co = o->check;
    S->co.params = NULL, S->co.nparams = 0, S->co.vs_path = NULL;
    kf_status st = kf_pipeline_load(ctx, path, o->knobs, o->nknobs, o->steps, o->layers, &S->p);
    if (st) return st;
    if (!(S->reasons = json_array())) return kf__err(ctx, KF_ENOMEM, "out of memory");
    kf_backend *be = kf_backend_get(S->p->backend);
    if (!be) return kf__err(ctx, KF_EBACKEND, "%s: the %s backend is not available", path, S->p->backend);
    if (o->ncand_knobs) {
        /* the candidate configuration's knobs: the shared selections, then its own */
        const char *sel[32];
        int n = 0;
        for (int i = 0; i < o->nknobs; i++) sel[n++] = o->knobs[i];
        for (int i = 0; i < o->ncand_knobs; i++) sel[n++] = o->cand_knobs[i];
        if ((st = kf_pipeline_load(ctx, path, sel, n, o->steps, o->layers, &S->pc))) return st;
        for (int i = 0; i < S->pc->nknobs; i++)
            if (S->pc->knobs[i].dim >= 0 && S->pc->knobs[i].chosen != S->p->knobs[i].chosen)
                return kf__err(ctx, KF_EUSAGE,
                               "--cand-knob %s=%s: %s is a dim: it sets the workload, the same for both "
                               "configurations (--knob)",
                               S->pc->knobs[i].name, S->pc->knobs[i].values[S->pc->knobs[i].chosen],
                               S->pc->knobs[i].name);
    }
    for (int i = 0; i < S->p->nknobs; i++)
        for (int c = 0; c < (S->pc ? 2 : 1); c++) {
            const kf_sys_knob *kn = c ? &S->pc->knobs[i] : &S->p->knobs[i];
            if (strcmp(kn->name, "launch") || strcmp(kn->values[kn->chosen], "graph")) continue;
            if (!kf_backend_has(be, KF_BACKEND_LAUNCH_MODE))
                return kf__err(ctx, KF_EUSAGE,
                               "knob launch=graph: the %s backend has no captured launch mode",
                               S->p->backend);
            /* each slot runs in a worker process of its own: a step is not one graph yet */
            return kf__err(ctx, KF_EUSAGE,
                           "knob launch=graph: not built: every slot runs in its own worker process, so the "
                           "step cannot be captured as one CUDA graph (docs/system.md \"launch=graph\"); "
                           "use launch=eager");
        }
    if ((S->co.has_seed ? kf_rng_seed(&S->rng, S->co.seed ^ 0x5eed5eedull) : kf_rng_seed_secret(&S->rng)))
        return kf__err(ctx, KF_EINTERNAL, "cannot key the ChaCha20 input stream (OpenSSL)");
    if (!(S->sl = calloc((size_t)S->p->nslots, sizeof *S->sl)))
        return kf__err(ctx, KF_ENOMEM, "out of memory");
    S->sl[0].im[0].on = 0;
    for (int k = 0; k < S->p->nslots; k++) S->sl[k].im[IMPL_REF].on = 1;
    if ((st = parse_sel(S, o->slots, o->nslots, IMPL_CAND, "--slot")) ||
        (st = parse_sel(S, o->vs, o->nvs, IMPL_VS, "--vs")))
        return st;
    for (int j = 0; j < S->p->nstages; j++) S->sl[S->p->stages[j].slot].nstages++;
    for (int k = 0; k < S->p->nslots; k++) {
        sys_slot *sl = &S->sl[k];
        const kf_task *t = S->p->slots[k].task;
        for (int i = 0; i < IMPL_N; i++) {
            sys_impl *im = &sl->im[i];
            if (!im->on) continue;
            if ((st = kf_sess_open(&im->sess, ctx, t, i == IMPL_REF ? NULL : im->path, &S->co, "check"))) {
                if (!im->sess.t) im->sess.t = t; /* closed by sys_free */
                return st;
            }
            int ok = 1;
            if ((st = kf_sess_build(&im->sess, &ok))) return st;
            if (!ok) {
                const kf_verdict_reason *r = im->sess.res->v.nreasons ? &im->sess.res->v.reasons[0] : NULL;
                reject(S, r ? r->code : KF_REASON_COMPILE_ERROR, S->p->slots[k].name, "%s: %s", im->path,
                       r && r->message ? r->message : "does not build");
            }
        }
        /* the arena: the largest of the slot's stages over the steps, under both knob sets */
        for (int j = 0; j < S->p->nstages * (S->pc ? 2 : 1); j++) {
            const kf_pipeline *kp = j < S->p->nstages ? S->p : S->pc;
            const kf_sys_stage *sj = &kp->stages[j % S->p->nstages];
            if (sj->slot != k) continue;
            for (int step = 0; step < S->p->steps; step++) {
                int64_t v[KF_MAX_SIZES];
                char err[256];
                if (kf_pipeline_stage_sizes(kp, sj, step, 0, v, err, sizeof err))
                    return kf__err(ctx, KF_ETASK, "%s: %s", path, err);
                kf_shape sh = {v, KF_SHAPE_VISIBLE, 0};
                kf_extents ex;
                if (kf_data_extents(t, &sh, &ex, err, sizeof err))
                    return kf__err(ctx, KF_ETASK, "%s: %s", path, err);
                size_t b = kf_sess_arena_bytes(t, &ex);
                if (b > sl->arena) sl->arena = b;
            }
        }
    }
    return KF_OK;
}

static kf_status sys_spawn(sys *S) {
    for (int k = 0; k < S->p->nslots; k++)
        for (int i = 0; i < IMPL_N; i++) {
            sys_impl *im = &S->sl[k].im[i];
            if (!im->on) continue;
            kf_call_result fail;
            const kf_build *b = i == IMPL_REF ? &im->sess.rbuild : &im->sess.cbuild;
            kf_status st = kf_sess_spawn(&im->sess, b, S->sl[k].arena, &im->side, &fail);
            if (st) return st;
            if (!im->side.w) {
                if (i == IMPL_REF)
                    return kf__err(S->ctx, KF_ETASK, "slot %s: the reference does not load: %s",
                                   S->p->slots[k].name, fail.msg);
                reject(S, fail.reason, S->p->slots[k].name, "%s: %s", im->path, fail.msg);
                continue;
            }
            if (S->timing) kf_worker_set_nice(im->side.w, im->sess.base_nice, SYS_SLICE_NS);
        }
    return KF_OK;
}

/* ---- the report ---- */

static json_t *reasons_json(const struct kf_verdict *v) {
    json_t *a = json_array();
    for (int i = 0; a && i < v->nreasons; i++) {
        json_t *r = json_pack(
            "{s:s,s:s,s:i}", "code",
            v->reasons[i].code < KF_REASON_COUNT ? kf_reason_name(v->reasons[i].code) : "other", "message",
            v->reasons[i].message ? v->reasons[i].message : "", "count", v->reasons[i].count);
        if (r) json_array_append_new(a, r);
    }
    return a;
}

static json_t *knobs_json(const kf_pipeline *p) {
    json_t *o = json_object();
    for (int i = 0; o && i < p->nknobs; i++)
        json_object_set_new(o, p->knobs[i].name, json_string(p->knobs[i].values[p->knobs[i].chosen]));
    return o;
}

/* The declared knobs: [{name, values, kind}], kind "workload" (named after a dim: it
 * sets the workload) or "tuning" (how the step runs: what a system run searches). */
static json_t *knobs_declared(const kf_pipeline *p) {
    json_t *a = json_array();
    for (int i = 0; a && i < p->nknobs; i++) {
        json_t *v = json_array();
        for (int j = 0; v && j < p->knobs[i].nvalues; j++)
            json_array_append_new(v, json_string(p->knobs[i].values[j]));
        json_array_append_new(a, json_pack("{s:s,s:o,s:s}", "name", p->knobs[i].name, "values", v, "kind",
                                           p->knobs[i].dim >= 0 ? "workload" : "tuning"));
    }
    return a;
}

/* ---- check ---- */

/* The check proper; fills slots (an array) and e2e. */
static kf_status sys_check(sys *S, json_t *report) {
    const kf_pipeline *p = S->p;
    kf_status st = KF_OK;
    json_t *slots = json_array(), *e2e = json_array();
    json_object_set_new(report, "slots", slots);
    json_object_set_new(report, "end_to_end", e2e);
    if (!slots || !e2e) return kf__err(S->ctx, KF_ENOMEM, "out of memory");
    /* 1. each candidate on its own task */
    json_t *tchecks[KF_SYSTEM_MAX_SLOTS * 4] = {0};
    for (int k = 0; k < p->nslots; k++) {
        for (int i = IMPL_CAND; i < IMPL_N && S->o->task_checks; i++) {
            sys_impl *im = &S->sl[k].im[i];
            if (!im->on || S->rejected) continue;
            kf_result *r = NULL;
            if ((st = kf_check(S->ctx, p->slots[k].task, im->path, &S->co, &r))) return st;
            char *j = kf_result_json(r);
            json_t *full = j ? json_loads(j, 0, NULL) : NULL, *doc = json_object();
            free(j);
            /* the verdict and its reasons: the shapes are `kforge check`'s to print */
            if (doc && full) {
                json_object_set(doc, "verdict", json_object_get(full, "verdict"));
                json_object_set(doc, "reasons", json_object_get(full, "reasons"));
                json_object_set(doc, "seconds", json_object_get(full, "seconds"));
            }
            json_decref(full);
            if (kf_result_verdict(r) != KF_VERDICT_ACCEPTED)
                reject(S, kf_result_nreasons(r) ? kf_result_reason(r, 0) : KF_REASON_WRONG_RESULT,
                       p->slots[k].name, "%s: rejected on its own task %s (task_check)", im->path,
                       p->slots[k].task->name);
            kf_result_free(r);
            if (k < KF_SYSTEM_MAX_SLOTS) tchecks[k * 4 + i] = doc;
            else json_decref(doc);
        }
    }
    int impl_ref[KF_SYSTEM_MAX_SLOTS * 4], impl_cand[KF_SYSTEM_MAX_SLOTS * 4];
    for (int k = 0; k < p->nslots; k++) {
        impl_ref[k] = IMPL_REF;
        impl_cand[k] = S->sl[k].im[IMPL_CAND].on ? IMPL_CAND : IMPL_REF;
    }
    sys_state ref = {0}, cand = {0};
    double *ea = calloc((size_t)p->nbufs, sizeof *ea), *er = calloc((size_t)p->nbufs, sizeof *er);
    int steps_passed = 0, ran = 0;
    if (!ea || !er) {
        st = kf__err(S->ctx, KF_ENOMEM, "out of memory");
        goto out;
    }
    if (S->rejected) goto report;
    if ((st = sys_spawn(S)) || S->rejected) goto report;
    if ((st = state_new(S, &ref)) || (st = state_new(S, &cand))) goto out;
    /* 2. weights and state once, from the secret seed */
    for (int b = 0; b < p->nbufs; b++) {
        if (p->bufs[b].role != KF_SYS_WEIGHT && p->bufs[b].role != KF_SYS_STATE) continue;
        for (int l = 0; l < nlay(p, b); l++)
            if ((st = gen(S, &p->bufs[b], 0, ref.data[b * p->layers + l]))) goto out;
    }
    state_copy(p, &cand, &ref, 0, 0);
    ran = 1;
    for (int step = 0; step < p->steps && !S->rejected; step++) {
        if (step) carry_inputs(p, &ref), carry_inputs(p, &cand);
        if ((st = gen_inputs(S, &ref, step))) goto out;
        for (int b = 0; b < p->nbufs; b++)
            if (p->bufs[b].role == KF_SYS_INPUT && (step == 0 || p->bufs[b].carry < 0))
                memcpy(cand.data[b * p->layers], ref.data[b * p->layers], buf_bytes(&p->bufs[b]));
        int ok;
        /* 3. both pipelines; the candidates on the reference's tensors on the way */
        if ((st = run_step(S, p, impl_ref, &ref, step, 1, NULL, NULL, &ok))) goto out;
        if ((st = run_step(S, S->pc ? S->pc : p, impl_cand, &cand, step, 0, NULL, NULL, &ok))) goto out;
        if (!ok) break;
        /* 4. end to end */
        if (outputs_pass(S, &cand, &ref, step, "", ea, er)) steps_passed++;
        else break;
    }
    for (int k = 0; k < p->nslots; k++) {
        sys_impl *c = &S->sl[k].im[IMPL_CAND];
        if (c->on && c->sess.res && c->sess.res->v.verdict != KF_VERDICT_ACCEPTED)
            reject(S, c->sess.res->v.reasons[0].code, p->slots[k].name,
                   "%s: wrong on the tensors its stages receive in the pipeline (captured): %s", c->path,
                   c->sess.res->v.reasons[0].message ? c->sess.res->v.reasons[0].message : "");
    }
report:
    for (int k = 0; k < p->nslots; k++) {
        sys_slot *sl = &S->sl[k];
        sys_impl *c = &sl->im[IMPL_CAND];
        json_t *o = json_pack("{s:s,s:s,s:s,s:i}", "name", p->slots[k].name, "task", p->slots[k].task->name,
                              "task_dir", p->slots[k].task_dir, "stages", sl->nstages);
        if (!o) continue;
        json_object_set_new(o, "candidate", c->on ? json_string(c->path) : json_null());
        for (int j = p->nplain; j < p->nstages; j++) {
            if (p->stages[j].slot != k) continue;
            json_t *fs = json_array();
            for (int q = p->stages[j].first; q <= p->stages[j].last; q++)
                json_array_append_new(fs, json_string(p->stages[q].name));
            json_object_set_new(o, "fuses", fs);
        }
        if (c->on) {
            json_object_set_new(o, "task_check",
                                tchecks[k * 4 + IMPL_CAND] ? tchecks[k * 4 + IMPL_CAND] : json_null());
            tchecks[k * 4 + IMPL_CAND] = NULL;
            json_t *cap = json_pack("{s:I,s:s,s:f,s:f}", "calls", (json_int_t)c->captured, "verdict",
                                    c->sess.res && c->sess.res->v.verdict == KF_VERDICT_ACCEPTED ? "accepted"
                                                                                                 : "rejected",
                                    "max_abs", c->max_abs, "max_rel", c->max_rel);
            if (cap && c->sess.res) json_object_set_new(cap, "reasons", reasons_json(&c->sess.res->v));
            json_object_set_new(o, "captured", cap);
            /* its stages' calls, but those a fusion of the configuration replaces */
            int64_t per = 0;
            for (int j = 0; j < p->nstages; j++)
                per += p->stages[j].slot == k && (j >= p->nplain || !fused_away(p, impl_cand, j));
            int64_t expect = ran ? per * p->layers * p->steps : 0;
            json_object_set_new(o, "engagement",
                                json_pack("{s:I,s:I,s:b}", "expected", (json_int_t)expect, "calls",
                                          (json_int_t)c->calls, "engaged", ran && c->calls == expect));
            if (ran && !S->rejected && c->calls != expect)
                reject(S, KF_REASON_UNWRITTEN_OUTPUT, p->slots[k].name,
                       "engagement: the candidate made %lld calls in the pipeline, %lld expected",
                       (long long)c->calls, (long long)expect);
        }
        json_array_append_new(slots, o);
    }
    for (int b = 0; b < p->nbufs; b++)
        if (p->bufs[b].role == KF_SYS_OUTPUT)
            json_array_append_new(e2e, json_pack("{s:s,s:f,s:f,s:f,s:f}", "output", p->bufs[b].name,
                                                 "max_abs", ea[b], "max_rel", er[b], "rtol", p->bufs[b].rtol,
                                                 "atol", p->bufs[b].atol));
    json_object_set_new(report, "steps_passed", json_integer(steps_passed));
out:
    for (size_t i = 0; i < sizeof tchecks / sizeof *tchecks; i++) json_decref(tchecks[i]);
    free(ea);
    free(er);
    state_free(p, &ref);
    state_free(p, &cand);
    sys_close_workers(S);
    return st;
}

static json_t *report_new(const sys *S, const char *kind) {
    const kf_pipeline *p = S->p;
    json_t *r = json_pack("{s:s,s:s,s:s,s:s,s:i,s:i}", "kind", kind, "pipeline", p->name, "file", p->path,
                          "backend", p->backend, "steps", p->steps, "layers", p->layers);
    if (r) json_object_set_new(r, "knobs", knobs_json(p));
    /* the candidate configuration's own knobs, where they are not the reference's */
    if (r && S->pc) json_object_set_new(r, "candidate_knobs", knobs_json(S->pc));
    if (r) json_object_set_new(r, "knobs_declared", knobs_declared(p));
    return r;
}

static kf_status finish(sys *S, json_t *report, kf_status st, double t0, char **json, int *accepted) {
    if (!st && report) {
        json_object_set_new(report, "verdict", json_string(S->rejected ? "rejected" : "accepted"));
        json_object_set(report, "reasons", S->reasons);
        json_object_set_new(report, "seconds", json_real((double)(kf__now_ns() - (uint64_t)t0) / 1e9));
        if (!(*json = kf__json_dumps(report, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(6))))
            st = kf__err(S->ctx, KF_ENOMEM, "out of memory");
        *accepted = !S->rejected;
    } else if (!st) {
        st = kf__err(S->ctx, KF_ENOMEM, "out of memory");
    }
    json_decref(report);
    sys_free(S);
    return st;
}

void kf_system_opts_init(kf_system_opts *o) {
    memset(o, 0, sizeof *o);
    kf_opts_init(&o->check);
    o->task_checks = 1;
}

static kf_status args_ok(kf_ctx *ctx, const char *pipeline, const kf_system_opts *o, char **json,
                         int *accepted) {
    if (!pipeline || !o || !json || !accepted) return kf__err(ctx, KF_EUSAGE, "kf_system: NULL argument");
    *json = NULL;
    *accepted = 0;
    if (o->nslots < 0 || o->nslots > KF_SYSTEM_MAX_SLOTS || o->nvs < 0 || o->nvs > KF_SYSTEM_MAX_SLOTS ||
        o->nknobs < 0 || o->nknobs > 16 || o->ncand_knobs < 0 || o->ncand_knobs > 16)
        return kf__err(ctx, KF_EUSAGE, "kf_system_opts: too many slots or knobs");
    return KF_OK;
}

kf_status kf_system_check(kf_ctx *ctx, const char *pipeline, const kf_system_opts *o, char **json,
                          int *accepted) {
    kf_status st = args_ok(ctx, pipeline, o, json, accepted);
    if (st) return st;
    double t0 = (double)kf__now_ns();
    sys S;
    if ((st = sys_open(&S, ctx, pipeline, o))) {
        sys_free(&S);
        return st;
    }
    json_t *report = report_new(&S, "system_check");
    if (report) st = sys_check(&S, report);
    return finish(&S, report, st, t0, json, accepted);
}

/* ---- bench ---- */

/* The whole run (every step) of one configuration from the initial state, timed. */
static kf_status timed_run(sys *S, const kf_pipeline *kp, const int *impl, sys_state *s,
                           const sys_state *init, sys_state *inputs, double *stage_ns, double *run_ns,
                           int *ok) {
    const kf_pipeline *p = S->p;
    state_copy(p, s, init, 0, 0);
    *run_ns = 0;
    for (int step = 0; step < p->steps; step++) {
        if (step) carry_inputs(p, s);
        for (int b = 0; b < p->nbufs; b++)
            if (p->bufs[b].role == KF_SYS_INPUT && (step == 0 || p->bufs[b].carry < 0))
                memcpy(s->data[b * p->layers], inputs[step].data[b * p->layers], buf_bytes(&p->bufs[b]));
        kf_status st = run_step(S, kp, impl, s, step, 0, stage_ns, run_ns, ok);
        if (st || !*ok) return st;
    }
    return KF_OK;
}

static double eval_cost(const kf_task *t, const int64_t *v, const kf_expr *e) {
    if (!e) return 0;
    kf_shape sh = {(int64_t *)v, KF_SHAPE_VISIBLE, 0};
    kf_vars vars = kf_task_vars(t, &sh);
    int64_t x;
    char err[128];
    return kf_expr_eval(e, &vars, &x, err, sizeof err) ? 0 : (double)x;
}

static kf_status sys_bench(sys *S, json_t *report) {
    const kf_pipeline *p = S->p;
    kf_status st = KF_OK;
    int ns = p->nstages;
    int impl_a[KF_SYSTEM_MAX_SLOTS * 4], impl_b[KF_SYSTEM_MAX_SLOTS * 4];
    int have_vs = 0;
    for (int k = 0; k < p->nslots; k++) {
        impl_a[k] = S->sl[k].im[IMPL_VS].on ? IMPL_VS : IMPL_REF;
        impl_b[k] = S->sl[k].im[IMPL_CAND].on ? IMPL_CAND : IMPL_REF;
        have_vs |= S->sl[k].im[IMPL_VS].on;
    }
    json_object_set_new(report, "baseline", json_string(have_vs ? "vs" : "reference"));
    /* the step's cost: every stage call's cost model, summed over layers and steps */
    double flops = 0, bytes = 0;
    for (int step = 0; step < p->steps; step++)
        for (int l = 0; l < p->layers; l++)
            for (int j = 0; j < p->nplain; j++) { /* the composed stages' costs, fused or not */
                int64_t v[KF_MAX_SIZES];
                char err[256];
                const kf_task *t = p->slots[p->stages[j].slot].task;
                if (kf_pipeline_stage_sizes(p, &p->stages[j], step, l, v, err, sizeof err)) continue;
                flops += eval_cost(t, v, t->cost_flops);
                bytes += eval_cost(t, v, t->cost_bytes);
            }
    sys_state init = {0}, A = {0}, B = {0};
    sys_state *inputs = calloc((size_t)p->steps, sizeof *inputs);
    double *ta = NULL, *tb = NULL, *sa = calloc((size_t)ns, sizeof *sa), *sb = calloc((size_t)ns, sizeof *sb);
    double *ra = NULL, *rb = NULL;
    int maxr = S->co.bench_max_runs > 0 ? S->co.bench_max_runs : 400;
    int minr = S->co.bench_min_runs > 0 ? S->co.bench_min_runs : 15;
    if (minr > maxr) minr = maxr;
    ta = calloc((size_t)maxr, sizeof *ta), tb = calloc((size_t)maxr, sizeof *tb);
    ra = calloc((size_t)maxr * ns, sizeof *ra), rb = calloc((size_t)maxr * ns, sizeof *rb);
    cpu_set_t saved;
    int pinned = 0;
    void *ceil = NULL;
    if (!inputs || !ta || !tb || !sa || !sb || !ra || !rb) {
        st = kf__err(S->ctx, KF_ENOMEM, "out of memory");
        goto out;
    }
    if ((st = state_new(S, &init)) || (st = state_new(S, &A)) || (st = state_new(S, &B))) goto out;
    for (int b = 0; b < p->nbufs; b++)
        if (p->bufs[b].role == KF_SYS_WEIGHT || p->bufs[b].role == KF_SYS_STATE)
            for (int l = 0; l < nlay(p, b); l++)
                if ((st = gen(S, &p->bufs[b], 0, init.data[b * p->layers + l]))) goto out;
    for (int step = 0; step < p->steps; step++) {
        if ((st = state_new(S, &inputs[step]))) goto out;
        if ((st = gen_inputs(S, &inputs[step], step))) goto out;
    }
    /* pinned as kf_bench pins: this thread on one CPU, the workers on the others */
    if (!sched_getaffinity(0, sizeof saved, &saved) && CPU_COUNT(&saved) >= 2) {
        int me = sched_getcpu();
        cpu_set_t one;
        CPU_ZERO(&one);
        if (me >= 0 && CPU_ISSET(me, &saved)) {
            CPU_SET(me, &one);
            for (int k = 0; k < p->nslots; k++)
                for (int i = 0; i < IMPL_N; i++) {
                    S->sl[k].im[i].sess.worker_cpus = saved;
                    CPU_CLR(me, &S->sl[k].im[i].sess.worker_cpus);
                }
            pinned = !sched_setaffinity(0, sizeof one, &one);
        }
    }
    S->timing = 1;
    for (int k = 0; k < p->nslots; k++)
        for (int i = 0; i < IMPL_N; i++) S->sl[k].im[i].sess.timing = 1, S->sl[k].im[i].sess.pinned = pinned;
    if ((st = sys_spawn(S)) || S->rejected) goto out;
    kf_backend *be = kf_backend_get(p->backend);
    kf_ceil_out ceil_rep;
    if (kf_backend_has_ceilings(be) && (flops > 0 || bytes > 0))
        ceil = kf_backend_ceilings(be, S->ctx, &ceil_rep);
    int n = 0, ok = 1;
    uint64_t start = kf__now_ns();
    double min_time = S->co.bench_min_time_s;
    for (int r = -1; r < maxr && ok; r++) { /* r -1: the warm-up round */
        double xa = 0, xb = 0;
        double *stage_a = r >= 0 ? ra + (size_t)r * ns : sa, *stage_b = r >= 0 ? rb + (size_t)r * ns : sb;
        for (int side = 0; side < 2 && ok; side++) {
            int first_b = r & 1;
            if ((side == 0) == !first_b) st = timed_run(S, p, impl_a, &A, &init, inputs, stage_a, &xa, &ok);
            else st = timed_run(S, S->pc ? S->pc : p, impl_b, &B, &init, inputs, stage_b, &xb, &ok);
            if (st) goto out;
        }
        if (!ok) break;
        /* every timed run's outputs checked against the other's */
        if (!outputs_pass(S, &B, &A, p->steps - 1, "(a timed round)", NULL, NULL)) {
            ok = 0;
            break;
        }
        if (r < 0) continue;
        ta[n] = xa / p->steps, tb[n] = xb / p->steps;
        n++;
        double spent = (double)(kf__now_ns() - start) / 1e9;
        if (n >= minr && spent >= 2 * min_time) break;
    }
    if (!ok) goto out;
    kf_ratio q;
    kf_stats_ratio(tb, ta, (size_t)n, S->co.win_floor, &q);
    double mb = kf_stats_median(tb, (size_t)n), ma = kf_stats_median(ta, (size_t)n);
    json_object_set_new(report, "rounds", json_integer(n));
    json_object_set_new(report, "step_ns", json_pack("{s:f,s:f}", "candidate", mb, "baseline", ma));
    json_object_set_new(report, "speedup", json_real(q.speedup));
    json_object_set_new(report, "gain", json_real(q.speedup - 1));
    json_object_set_new(report, "gain_ci95", json_pack("[f,f]", q.lo - 1, q.hi - 1));
    json_object_set_new(report, "noise", json_real(q.noise));
    json_object_set_new(report, "win", json_boolean(q.win));
    json_object_set_new(report, "slower", json_boolean(q.slower));
    /* per-stage shares in place: each stage's median over the rounds, per step */
    json_t *stages = json_array();
    double *col = calloc((size_t)(n ? n : 1), sizeof *col);
    double suma = 0, sumb = 0, *ma_s = calloc((size_t)ns, sizeof *ma_s),
           *mb_s = calloc((size_t)ns, sizeof *mb_s);
    if (!stages || !col || !ma_s || !mb_s) {
        json_decref(stages);
        free(col), free(ma_s), free(mb_s);
        st = kf__err(S->ctx, KF_ENOMEM, "out of memory");
        goto out;
    }
    for (int j = 0; j < ns; j++) {
        for (int r = 0; r < n; r++) col[r] = ra[(size_t)r * ns + j] / p->steps;
        ma_s[j] = kf_stats_median(col, (size_t)n), suma += ma_s[j];
        for (int r = 0; r < n; r++) col[r] = rb[(size_t)r * ns + j] / p->steps;
        mb_s[j] = kf_stats_median(col, (size_t)n), sumb += mb_s[j];
    }
    for (int j = 0; j < ns; j++) {
        /* a fusion's row only where one side uses it; a stage it replaces is "fused" there */
        if (j >= p->nplain && impl_a[p->stages[j].slot] == IMPL_REF && impl_b[p->stages[j].slot] == IMPL_REF)
            continue;
        json_t *o = json_pack(
            "{s:s,s:s,s:s,s:f,s:f,s:f,s:f}", "stage", p->stages[j].name, "slot",
            p->slots[p->stages[j].slot].name, "implementation",
            j < p->nplain && fused_away(p, impl_b, j) ? "fused" : impl_name(impl_b[p->stages[j].slot]),
            "candidate_ns", mb_s[j], "baseline_ns", ma_s[j], "candidate_share", sumb > 0 ? mb_s[j] / sumb : 0,
            "baseline_share", suma > 0 ? ma_s[j] / suma : 0);
        /* the stage's own roofline fraction (its cost model over the step, in place): the
         * headroom a system run weighs a slot's share by */
        double sf = 0, sby = 0;
        const kf_task *t = p->slots[p->stages[j].slot].task;
        for (int step = 0; step < p->steps; step++)
            for (int l = 0; l < p->layers; l++) {
                int64_t v[KF_MAX_SIZES];
                char err[256];
                if (kf_pipeline_stage_sizes(p, &p->stages[j], step, l, v, err, sizeof err)) continue;
                sf += eval_cost(t, v, t->cost_flops), sby += eval_cost(t, v, t->cost_bytes);
            }
        kf_roof_out roof = {0};
        char why[512];
        kf_roof_in rin = {t, sf / p->steps, sby / p->steps, mb_s[j], ma_s[j]};
        if (ceil && o && mb_s[j] > 0) kf_backend_roofline(be, ceil, &rin, &roof, why, sizeof why);
        if (o)
            json_object_set_new(o, "candidate_roofline_fraction",
                                roof.has & KF_ROOF_FRACTION ? json_real(roof.fraction) : json_null());
        if (o) json_array_append_new(stages, o);
    }
    json_object_set_new(report, "stages", stages);
    free(col), free(ma_s), free(mb_s);
    /* the gate: kept for the system only when the interval's low end is above no gain */
    int keep = q.win && q.lo > 1;
    json_object_set_new(report, "keep", json_boolean(keep));
    if (S->o->local_bench) {
        /* each slot candidate alone on its own task, timed as kforge bench times it */
        int local_win = 0;
        json_t *loc = json_array();
        json_object_set_new(report, "local", loc);
        sys_close_workers(S);
        if (pinned) sched_setaffinity(0, sizeof saved, &saved), pinned = 0;
        for (int k = 0; k < p->nslots; k++) {
            sys_impl *c = &S->sl[k].im[IMPL_CAND];
            if (!c->on) continue;
            kf_result *r = NULL;
            if ((st = kf_bench(S->ctx, p->slots[k].task, c->path, &S->co, &r))) goto out;
            char *j = kf_result_json(r);
            json_t *full = j ? json_loads(j, 0, NULL) : NULL;
            free(j);
            double sp = kf_result_speedup(r);
            int w = 0;
            size_t i;
            json_t *sh;
            json_array_foreach(json_object_get(full, "shapes"), i, sh) w |=
                json_is_true(json_object_get(sh, "win"));
            w = w && sp > 1 && kf_result_verdict(r) == KF_VERDICT_ACCEPTED;
            local_win |= w;
            /* per shape its speedup and interval, for the report's local figures */
            json_t *shapes = json_array();
            json_array_foreach(json_object_get(full, "shapes"), i, sh) {
                if (!json_object_get(sh, "speedup")) continue;
                json_array_append_new(
                    shapes, json_pack("{s:O?,s:O?,s:O?,s:O?}", "sizes", json_object_get(sh, "sizes"),
                                      "speedup", json_object_get(sh, "speedup"), "ci95",
                                      json_object_get(sh, "ci95"), "win", json_object_get(sh, "win")));
            }
            json_array_append_new(
                loc, json_pack("{s:s,s:s,s:f,s:b,s:o}", "slot", p->slots[k].name, "verdict",
                               kf_result_verdict(r) == KF_VERDICT_ACCEPTED ? "accepted" : "rejected",
                               "speedup", sp > 0 ? sp : 0, "win", w, "shapes", shapes));
            json_decref(full);
            kf_result_free(r);
        }
        json_object_set_new(report, "outcome",
                            json_string(keep        ? "system_win"
                                        : local_win ? "local_win_global_loss"
                                                    : "no_system_gain"));
    } else {
        json_object_set_new(report, "outcome", json_string(keep ? "system_win" : "no_system_gain"));
    }
    /* the roofline of the step: the stages' cost models against the backend's ceilings */
    if (ceil) {
        kf_roof_in rin = {p->slots[0].task, flops / p->steps, bytes / p->steps, mb, ma};
        kf_roof_out ro;
        char why[1024] = "";
        int bad = kf_backend_roofline(be, ceil, &rin, &ro, why, sizeof why);
        json_t *roof = json_object();
        if (roof) {
            kf_verdict_roof_keys(roof, &ro);
            json_object_set_new(roof, "flops", json_real(flops / p->steps));
            json_object_set_new(roof, "bytes", json_real(bytes / p->steps));
            json_object_set_new(report, "roofline", roof);
        }
        if (bad) reject(S, KF_REASON_TIMING_MISMATCH, NULL, "the step: %s", why);
    } else {
        json_object_set_new(report, "roofline", json_null());
    }
out:
    if (pinned) sched_setaffinity(0, sizeof saved, &saved);
    free(ceil);
    for (int step = 0; inputs && step < p->steps; step++) state_free(p, &inputs[step]);
    free(inputs);
    state_free(p, &init);
    state_free(p, &A);
    state_free(p, &B);
    free(ta), free(tb), free(sa), free(sb), free(ra), free(rb);
    sys_close_workers(S);
    S->timing = 0;
    return st;
}

kf_status kf_system_bench(kf_ctx *ctx, const char *pipeline, const kf_system_opts *o, char **json,
                          int *accepted) {
    kf_status st = args_ok(ctx, pipeline, o, json, accepted);
    if (st) return st;
    double t0 = (double)kf__now_ns();
    sys S;
    if ((st = sys_open(&S, ctx, pipeline, o))) {
        sys_free(&S);
        return st;
    }
    json_t *report = report_new(&S, "system_bench");
    if (report) st = sys_check(&S, report);
    if (!st && report && !S.rejected) {
        /* the check's counters are the check's: fresh ones for the timing */
        for (int k = 0; k < S.p->nslots; k++)
            for (int i = 0; i < IMPL_N; i++) S.sl[k].im[i].calls = 0;
        st = sys_bench(&S, report);
    }
    return finish(&S, report, st, t0, json, accepted);
}
