/*
 * validate.c - is the task itself sound? The reference must build, load, write every
 * output element, be deterministic, and its answers must not be reachable by a
 * trivial kernel: all-zero outputs, a copied input, or the outputs of other inputs
 * must FAIL the tolerance on every visible shape. A degenerate task is refused.
 * It also reports the reference's time per shape (its fastest call there) and warns
 * when the slowest is slow (KF_REF_SLOW_MS a call: every check pays it).
 */
#define _GNU_SOURCE
#include "check.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* A reference call slower than this at its slowest shape (in practice the maximum-sizes
 * edge shape, which every check draws) is reported as slow: a check calls the reference
 * there at least twice, against a check's usual 0.05-0.25 s for a small kernel. */
#define KF_REF_SLOW_MS 100.0

static kf_status validate_shape(kf_sess *s, kf_side *ref, const kf_shape *sh, kf_verdict_shape *o) {
    const kf_task *t = s->t;
    kf_extents ex;
    char err[512], txt[512];
    kf_shape_format(t, sh, txt, sizeof txt);
    const kf_verdict_sizes *sizes = &o->sizes;
    if (kf_data_extents(t, sh, &ex, err, sizeof err))
        return kf__err(s->ctx, KF_ETASK, "%s: at %s: %s", t->dir, txt, err);
    kf_inputs in[3];
    void *outs[4][KF_MAX_ARGS], *mag[3][KF_MAX_ARGS];
    kf_poison poison[4];
    memset(in, 0, sizeof in);
    memset(outs, 0, sizeof outs);
    memset(mag, 0, sizeof mag);
    kf_status st = KF_OK;
    int problems = 0;
    uint64_t fastest = UINT64_MAX; /* the reference's fastest call here */
    /* three input sets, then the third again under new poison (determinism) */
    for (int trial = 0; trial < 4 && !st; trial++) {
        int set = trial < 3 ? trial : 2;
        /* the check's kinds: plain, spiked with offsets (the largest class), rescaled with
         * mixed scales: a reference that fails on any of them fails here */
        static const int flags[3] = {0, KF_DATA_OFFSET | KF_DATA_CLASS(3), KF_DATA_MIXED};
        if (trial < 3 && kf_data_gen_inputs(t, &ex, &s->rng, trial | flags[trial], &in[set])) {
            st = kf__err(s->ctx, KF_ENOMEM, "out of memory");
            break;
        }
        /* the determinism pair's second call: at the first's addresses, unless the
         * task asks for the same bits at other addresses ("bits") or allows tolerance
         * (as the candidate's pair, check.c check_shape) */
        if (trial < 3 || t->determinism_bits || !t->determinism_exact)
            kf_sess_place(s, &s->rng, &ex, trial & 1, &ref->lay);
        kf_poison p;
        kf_call_result cr;
        kf_data_make_poison(t, &s->rng, &p);
        kf_sess_call(s, ref, &ex, &in[set], &p, &cr);
        if (cr.st != KF_CALL_OK) {
            kf_result_reject(s->res, cr.reason, sizes, "the reference failed: %s", cr.msg);
            problems = 1;
            break;
        }
        if (cr.worker_ns < fastest) fastest = cr.worker_ns;
        const unsigned char *arena = kf_worker_arena(ref->w);
        if (kf_data_check_guards(t, &ref->lay, &p, arena) >= 0) {
            kf_result_reject(s->res, KF_REASON_OUT_OF_BOUNDS, sizes,
                             "the reference writes outside its buffers");
            problems = 1;
        }
        int m = kf_data_check_inputs(t, &ex, &ref->lay, &in[set], arena);
        if (m >= 0) {
            kf_result_reject(s->res, KF_REASON_INPUT_MODIFIED, sizes, "the reference modifies its input %s",
                             t->args[m].name);
            problems = 1;
        }
        poison[trial] = p;
        if (kf_sess_take_outputs(s, ref, &ex, outs[trial])) st = kf__err(s->ctx, KF_ENOMEM, "out of memory");
        /* the degeneracy test below judges under the check's own bound, magnitudes included */
        if (!st && trial < 3 &&
            (st = kf_sess_magnitude(s, s->ctx, ref, &ex, &in[set], &s->rng, mag[set], txt))) {
            kf_result_reject(s->res, KF_REASON_CRASH, sizes, "the reference failed: %s", kf_errmsg(s->ctx));
            st = KF_OK;
            problems = 1;
            break;
        }
    }
    /* unwritten: the sentinel in both runs on the same inputs, each with its own (a
     * right answer can equal one sentinel, not two different ones) */
    for (int i = 0; !st && !problems && i < t->nargs; i++) {
        const kf_arg *a = &t->args[i];
        if (!a->is_buffer || a->io != KF_IO_OUT || a->type == KF_T_U8) continue;
        size_t es = kf_dtype_size(a->type);
        int64_t nun = 0;
        for (int64_t k = 0; k < ex.count[i]; k++)
            nun += !memcmp((char *)outs[2][i] + k * (int64_t)es, &poison[2].sentinel[i], es) &&
                   !memcmp((char *)outs[3][i] + k * (int64_t)es, &poison[3].sentinel[i], es);
        if (nun) {
            kf_result_reject(s->res, KF_REASON_UNWRITTEN_OUTPUT, sizes,
                             "the reference leaves %lld element%s of %s unwritten", (long long)nun,
                             nun == 1 ? "" : "s", a->name);
            problems = 1;
        }
    }
    if (!st && !problems) {
        if (!kf_outputs_same(t, &ex, outs[2], outs[3], mag[2])) {
            kf_result_reject(s->res, KF_REASON_NONDETERMINISTIC, sizes,
                             "the reference gives different outputs for the same inputs");
            problems = 1;
        }
        void **sets[3] = {outs[0], outs[1], outs[2]}, **msets[3] = {mag[0], mag[1], mag[2]};
        char *why = NULL;
        if (kf_degenerate(t, &ex, in, sets, msets, 3, &why)) st = kf__err(s->ctx, KF_ENOMEM, "out of memory");
        if (why) {
            if (sh->kind == KF_SHAPE_VISIBLE) {
                kf_result_reject(s->res, KF_REASON_DEGENERATE_TASK, sizes, "degenerate task: %s", why);
                problems = 1;
            } else {
                o->warning = kf_verdict_str(&s->res->v, why);
            }
            free(why);
        }
    }
    if (fastest != UINT64_MAX) o->has |= KF_VS_REFERENCE_MS, o->reference_ms = (double)fastest / 1e6;
    o->status = problems ? KF_VSHAPE_FAILED : KF_VSHAPE_PASSED;
    for (int k = 0; k < 4; k++) kf_sess_free_outputs(t, outs[k]);
    for (int k = 0; k < 3; k++) kf_sess_free_outputs(t, mag[k]);
    for (int k = 0; k < 3; k++) kf_data_free_inputs(t, &in[k]);
    return st;
}

/* The reference's slowest shape, as "reference_time" of the verdict: {slowest_ms, at,
 * kind, slow_ms, slow} and, when slow, a warning saying what it costs. */
static void reference_times(struct kf_verdict *v) {
    const kf_verdict_shape *worst = NULL;
    for (int i = 0; i < v->nshapes; i++)
        if ((v->shapes[i].has & KF_VS_REFERENCE_MS) &&
            (!worst || v->shapes[i].reference_ms > worst->reference_ms))
            worst = &v->shapes[i];
    if (!worst) return;
    double w = worst->reference_ms;
    int slow = w > KF_REF_SLOW_MS;
    const char *kind = worst->kind == KF_VSHAPE_VISIBLE  ? "visible"
                       : worst->kind == KF_VSHAPE_HIDDEN ? "hidden"
                                                         : "edge";
    json_t *r =
        json_pack("{s:f, s:o, s:s, s:f, s:b}", "slowest_ms", w, "at", kf_verdict_sizes_json(&worst->sizes),
                  "kind", kind, "slow_ms", KF_REF_SLOW_MS, "slow", slow);
    if (r && slow)
        json_object_set_new(
            r, "warning",
            json_sprintf("the reference takes %.0f ms a call at its slowest shape (over %.0f ms): "
                         "every check calls it there at least twice; make the reference faster "
                         "or the largest sizes smaller",
                         w, KF_REF_SLOW_MS));
    if (!r) v->oom = 1;
    json_decref(v->reference_time);
    v->reference_time = r;
}

kf_status kf_validate(kf_ctx *ctx, const kf_task *task, const kf_opts *opts, kf_result **out) {
    if (!task || !out) return kf__err(ctx, KF_EUSAGE, "kf_validate: NULL argument");
    *out = NULL;
    kf_opts dflt;
    if (!opts) kf_opts_init(&dflt), opts = &dflt;
    kf_sess s;
    kf_status st = kf_sess_open(&s, ctx, task, NULL, opts, "validate");
    int ok;
    kf_shape *drawn = NULL;
    int ndrawn = 0;
    kf_side ref = {0};
    if (st || (st = kf_sess_build(&s, &ok))) goto out;
    char err[512];
    int hidden = opts->hidden_count >= 0 ? opts->hidden_count : task->hidden_count;
    int drew = kf_task_draw_hidden(task, &s.rng, hidden, NULL, NULL, opts->buffer_cap, &drawn, &ndrawn, err,
                                   sizeof err);
    if (drew) {
        st = kf__err(ctx, drew == -3 ? KF_ENOMEM : KF_ETASK, "%s: %s", task->dir, err);
        goto out;
    }
    size_t arena = 0;
    for (int i = 0; i < task->nshapes + ndrawn; i++) {
        const kf_shape *sh = i < task->nshapes ? &task->shapes[i] : &drawn[i - task->nshapes];
        kf_extents ex;
        if (kf_data_extents(task, sh, &ex, err, sizeof err)) {
            st = kf__err(ctx, KF_ETASK, "%s: %s", task->dir, err);
            goto out;
        }
        size_t b = kf_sess_arena_bytes(task, &ex);
        if (b > arena) arena = b;
    }
    kf_call_result fail;
    if ((st = kf_sess_spawn(&s, &s.rbuild, arena, &ref, &fail))) goto out;
    if (!ref.w) {
        kf_result_reject(s.res, fail.reason, NULL, "the reference does not load: %s", fail.msg);
        goto out;
    }
    s.res->v.has_shapes = 1;
    for (int i = 0; i < task->nshapes + ndrawn && !st && ref.w; i++) {
        const kf_shape *sh = i < task->nshapes ? &task->shapes[i] : &drawn[i - task->nshapes];
        kf_verdict_shape *o = kf_verdict_add_shape(&s.res->v);
        if (!o) {
            st = kf__err(ctx, KF_ENOMEM, "out of memory");
            break;
        }
        kf_sess_sizes(&s, sh, &o->sizes);
        o->kind = sh->kind == KF_SHAPE_VISIBLE  ? KF_VSHAPE_VISIBLE
                  : sh->kind == KF_SHAPE_HIDDEN ? KF_VSHAPE_HIDDEN
                                                : KF_VSHAPE_EDGE;
        st = validate_shape(&s, &ref, sh, o);
        if (kf_worker_dead(ref.w)) break; /* the rest cannot run */
    }
    if (!st) reference_times(&s.res->v);
out:
    kf_worker_close(ref.w);
    kf_shapes_free(drawn, ndrawn);
    if (st == KF_OK) {
        s.res->v.has_seconds = 1;
        s.res->v.seconds = (double)(kf__now_ns() - s.t0) / 1e9;
        if (kf_result_seal(s.res)) st = kf__err(ctx, KF_ENOMEM, "out of memory (writing the result)");
    }
    if (st == KF_OK) {
        *out = s.res;
        s.res = NULL;
    }
    kf_result_free(s.res);
    kf_sess_close(&s);
    return st;
}
