/*
 * verdict.c - the verdict's one pair of conversions (verdict.h): a document or a store
 * column into a struct kf_verdict, and the struct into the documents kforge writes from
 * it (the CLI's whole document, a node's shapes column, EXPORT.json's verification, the
 * Critic's re-timings), and the setters the checker and bench fill it with. This is the
 * only file that knows the verdict's key names; a renamed key is a change here and in
 * docs/cli.md, nowhere else.
 *
 * The order of the document is by construction: each typed field has a slot (the
 * top-level document's, a shape record's, the sandbox report's), written in slot order,
 * and every key it does not type (a backend's report, a key of a newer build) is an
 * extra that remembers the slot it followed. The slot orders are the orders the checker,
 * bench and validate write in; a bench moves "shapes" behind "check", a backend's late
 * ceilings come after the geomean. So kf_verdict_to_json(kf_verdict_from_json(doc)) is
 * doc for every document kforge writes (tests/test_check.c, check/verdict_roundtrip).
 *
 * Reading is lenient, as the readers it replaced were: a missing field is absent (its
 * has bit clear, its pointer NULL, its number 0); a field of the wrong type is kept as an
 * extra. The strings a verdict holds are copies in its pool, freed with it.
 */
#include "verdict.h"

#include "../util/util.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the pool --------------------------------------------------------------------------- */

/* A copy of s in v's pool (one copy per distinct string: size names repeat on every
 * shape), or NULL when s is NULL or out of memory. */
static const char *pool_str(struct kf_verdict *v, const char *s) {
    if (!s) return NULL;
    for (int i = v->npool - 1; i >= 0 && i >= v->npool - 32; i--)
        if (!strcmp(v->pool[i], s)) return v->pool[i];
    if (v->npool == v->cappool) {
        int cap = v->cappool ? v->cappool * 2 : 16;
        char **p = realloc(v->pool, (size_t)cap * sizeof *p);
        if (!p) return v->oom = 1, NULL;
        v->pool = p, v->cappool = cap;
    }
    char *c = strdup(s);
    if (c) v->pool[v->npool++] = c;
    else v->oom = 1;
    return c;
}

static const char *pool_json(struct kf_verdict *v, const json_t *j) {
    return json_is_string(j) ? pool_str(v, json_string_value(j)) : NULL;
}

/* ---- extras ------------------------------------------------------------------------------- */

static int extra_add(struct kf_verdict *v, kf_verdict_extras *x, int at, const char *key, const json_t *val) {
    if (x->n == x->cap) {
        int cap = x->cap ? x->cap * 2 : 4;
        kf_verdict_extra *e = realloc(x->e, (size_t)cap * sizeof *e);
        if (!e) return v->oom = 1, -1;
        x->e = e, x->cap = cap;
    }
    const char *k = pool_str(v, key);
    json_t *c = json_deep_copy(val);
    if (!k || !c) {
        json_decref(c);
        return v->oom = 1, -1;
    }
    x->e[x->n++] = (kf_verdict_extra){at, k, c};
    return 0;
}

static void extras_free(kf_verdict_extras *x) {
    for (int i = 0; i < x->n; i++) json_decref(x->e[i].val);
    free(x->e);
    memset(x, 0, sizeof *x);
}

/* the extras of x that follow slot `at`, onto o */
static void extras_json(json_t *o, const kf_verdict_extras *x, int at) {
    for (int i = 0; i < x->n; i++)
        if (x->e[i].at == at) json_object_set(o, x->e[i].key, x->e[i].val);
}

/* ---- reading ------------------------------------------------------------------------------ */

static kf_reason reason_code(const char *name) {
    for (int r = 0; name && r < KF_REASON_COUNT; r++)
        if (!strcmp(kf_reason_name((kf_reason)r), name)) return (kf_reason)r;
    return KF_REASON_COUNT;
}

static int read_sizes(struct kf_verdict *v, const json_t *o, kf_verdict_sizes *s) {
    memset(s, 0, sizeof *s);
    const char *k;
    json_t *x;
    json_object_foreach((json_t *)o, k, x) {
        if (s->n == KF_VERDICT_MAX_SIZES) break;
        if (!(s->name[s->n] = pool_str(v, k))) return -1;
        s->v[s->n++] = (int64_t)json_integer_value(x);
    }
    return 0;
}

static int is_pair(const json_t *x) { return json_is_array(x) && json_array_size(x) == 2; }

/* Where a key sits in a record, and the type of value the verdict keeps for it: 'r' a
 * number (written as a real), 'i' an integer, 'b' a boolean, 't' true (a flag), 's' a string, 'p' a pair of
 * reals, 'o' an object; a shape record's sizes, kind and status are 'z', 'k', 'u'. A
 * shape record's field is at `off`, present when `bit` is in its has (0: a string or flag
 * present when set). */
typedef struct {
    const char *key;
    int slot;
    char type;
    unsigned bit;
    size_t off;
} slot_def;

static int type_ok(char type, const json_t *x) {
    switch (type) {
    case 'r': return json_is_number(x); /* as the readers it replaced took them */
    case 'i': return json_is_integer(x);
    case 'b': return json_is_boolean(x);
    case 't': return json_is_true(x);
    case 's':
    case 'k':
    case 'u': return json_is_string(x);
    case 'p':
        return is_pair(x) && json_is_number(json_array_get(x, 0)) && json_is_number(json_array_get(x, 1));
    case 'o':
    case 'z': return json_is_object(x);
    }
    return 0;
}

/* the shape record's slots, in the order the checker, validate and bench write them */
// clang-format off
enum {
    S_SIZES = 1, S_KIND, S_MAXIMUM, S_WARNING, S_REFERENCE_MS, S_STATUS, S_NOTE, S_CALLS, S_MAX_ABS, S_PLAIN_ABS, S_MAX_REL,
    S_BEST_NS, S_WAITED, S_UNCLEAN, S_GPU_SHARED, S_CAND_GAP, S_BASE_GAP, S_CAND_NS, S_BASE_NS, S_SPEEDUP,
    S_NOISE, S_CI95, S_FAIR, S_FAIR_NOTE, S_FAIR_REASON, S_WIN, S_SLOWER, S_RUNS, S_CAND_SPREAD,
    S_BASE_SPREAD, S_CAND_WALL, S_BASE_WALL, S_ROOFLINE, S_SPEEDUP_FIRST, S_CI95_FIRST, S_END
};
// clang-format on
_Static_assert((int)S_MAXIMUM == (int)KF_VAT_CALL && (int)S_CI95 == (int)KF_VAT_FAIR &&
                   (int)S_BASE_WALL == (int)KF_VAT_ROOF,
               "verdict.h's anchors are shape slots");

#define F(m) offsetof(kf_verdict_shape, m)
static const slot_def shape_slots[S_END - 1] = {
    {"sizes", S_SIZES, 'z', 0, 0},
    {"kind", S_KIND, 'k', 0, 0},
    {"maximum", S_MAXIMUM, 't', 0, F(maximum)},
    {"warning", S_WARNING, 's', 0, F(warning)},
    {"reference_ms", S_REFERENCE_MS, 'r', KF_VS_REFERENCE_MS, F(reference_ms)},
    {"status", S_STATUS, 'u', 0, 0},
    {"note", S_NOTE, 's', 0, F(note)},
    {"calls", S_CALLS, 'i', KF_VS_CALLS, F(calls)},
    {"max_abs_err", S_MAX_ABS, 'r', KF_VS_MAX_ABS_ERR, F(max_abs_err)},
    {"plain_abs_err", S_PLAIN_ABS, 'r', KF_VS_PLAIN_ABS_ERR, F(plain_abs_err)},
    {"max_rel_err", S_MAX_REL, 'r', KF_VS_MAX_REL_ERR, F(max_rel_err)},
    {"best_ns", S_BEST_NS, 'i', KF_VS_BEST_NS, F(best_ns)},
    {"baseline_waited_rounds", S_WAITED, 'i', KF_VS_WAITED, F(waited_rounds)},
    {"unclean_rounds", S_UNCLEAN, 'i', KF_VS_WAITED, F(unclean_rounds)},
    {"gpu_shared", S_GPU_SHARED, 't', KF_VS_GPU_SHARED, 0},
    {"candidate_gap_ns", S_CAND_GAP, 'r', KF_VS_GAPS, F(candidate_gap_ns)},
    {"baseline_gap_ns", S_BASE_GAP, 'r', KF_VS_GAPS, F(baseline_gap_ns)},
    {"candidate_ns", S_CAND_NS, 'r', KF_VS_CANDIDATE_NS, F(candidate_ns)},
    {"baseline_ns", S_BASE_NS, 'r', KF_VS_BASELINE_NS, F(baseline_ns)},
    {"speedup", S_SPEEDUP, 'r', KF_VS_SPEEDUP, F(speedup)},
    {"noise", S_NOISE, 'r', KF_VS_NOISE, F(noise)},
    {"ci95", S_CI95, 'p', KF_VS_CI95, F(ci95)},
    {"fair", S_FAIR, 'b', KF_VS_FAIR, F(fair)},
    {"fair_note", S_FAIR_NOTE, 's', 0, F(fair_note)},
    {"fair_reason", S_FAIR_REASON, 's', 0, F(fair_reason)},
    {"win", S_WIN, 'b', KF_VS_WIN, F(win)},
    {"slower", S_SLOWER, 'b', KF_VS_SLOWER, F(slower)},
    {"runs", S_RUNS, 'i', KF_VS_RUNS, F(runs)},
    {"candidate_spread", S_CAND_SPREAD, 'r', KF_VS_SPREADS, F(candidate_spread)},
    {"baseline_spread", S_BASE_SPREAD, 'r', KF_VS_SPREADS, F(baseline_spread)},
    {"candidate_wall_ns", S_CAND_WALL, 'r', KF_VS_WALLS, F(candidate_wall_ns)},
    {"baseline_wall_ns", S_BASE_WALL, 'r', KF_VS_WALLS, F(baseline_wall_ns)},
    {"roofline_fraction", S_ROOFLINE, 'r', KF_VS_ROOFLINE, F(roofline_fraction)},
    {"speedup_first", S_SPEEDUP_FIRST, 'r', KF_VS_SPEEDUP_FIRST, F(speedup_first)},
    {"ci95_first", S_CI95_FIRST, 'p', KF_VS_CI95_FIRST, F(ci95_first)},
};
#undef F

static const slot_def *find_slot(const slot_def *d, size_t n, const char *key, const json_t *x) {
    for (size_t i = 0; i < n; i++)
        if (!strcmp(d[i].key, key)) return type_ok(d[i].type, x) ? &d[i] : NULL;
    return NULL;
}

/* Set one typed field of s; the field's slot, or 0 when key is not typed (or -1 when out
 * of memory). */
static int shape_key(struct kf_verdict *v, kf_verdict_shape *s, const char *key, const json_t *x) {
    const slot_def *d = find_slot(shape_slots, sizeof shape_slots / sizeof *shape_slots, key, x);
    if (!d) return 0;
    char *f = (char *)s + d->off;
    const char *str = json_string_value(x);
    s->has |= d->bit;
    switch (d->type) {
    case 'z':
        if (read_sizes(v, x, &s->sizes)) return -1;
        break;
    case 'k':
        s->kind = !strcmp(str, "visible")  ? KF_VSHAPE_VISIBLE
                  : !strcmp(str, "hidden") ? KF_VSHAPE_HIDDEN
                                           : KF_VSHAPE_EDGE;
        break;
    case 'u':
        s->status = !strcmp(str, "passed")    ? KF_VSHAPE_PASSED
                    : !strcmp(str, "failed")  ? KF_VSHAPE_FAILED
                    : !strcmp(str, "skipped") ? KF_VSHAPE_SKIPPED
                                              : KF_VSHAPE_OTHER;
        break;
    case 't':
        if (!d->bit) *(int *)f = 1;
        break;
    case 'b': *(int *)f = json_is_true(x); break;
    case 'i': *(int64_t *)f = (int64_t)json_integer_value(x); break;
    case 'r': *(double *)f = json_number_value(x); break;
    case 'p':
        ((double *)f)[0] = json_number_value(json_array_get(x, 0));
        ((double *)f)[1] = json_number_value(json_array_get(x, 1));
        break;
    case 's':
        if (!(*(const char **)f = pool_str(v, str))) return -1;
        break;
    }
    return d->slot;
}

int kf_verdict_merge_shape(struct kf_verdict *v, kf_verdict_shape *s, const json_t *frag, int at) {
    const char *k;
    json_t *x;
    json_object_foreach((json_t *)frag, k, x) {
        int slot = shape_key(v, s, k, x);
        if (slot < 0 || (!slot && extra_add(v, &s->extra, at, k, x))) return v->oom = 1, -1;
        if (slot) at = slot;
    }
    return 0;
}

static int read_shapes(struct kf_verdict *v, const json_t *a, kf_verdict_shape **out, int *n) {
    if (!json_array_size(a)) return 0;
    if (!(*out = calloc(json_array_size(a), sizeof **out))) return -1;
    size_t i;
    json_t *o;
    json_array_foreach((json_t *)a, i, o) {
        if (kf_verdict_merge_shape(v, &(*out)[(*n)++], o, 0)) return -1;
    }
    return 0;
}

static int read_reasons(struct kf_verdict *v, const json_t *a) {
    if (!json_array_size(a)) return 0;
    if (!(v->reasons = calloc(json_array_size(a), sizeof *v->reasons))) return -1;
    v->capreasons = (int)json_array_size(a);
    size_t i;
    json_t *o;
    json_array_foreach((json_t *)a, i, o) {
        kf_verdict_reason *r = &v->reasons[v->nreasons++];
        r->code = reason_code(json_string_value(json_object_get(o, "code")));
        json_t *m = json_object_get(o, "message"), *sh = json_object_get(o, "shape");
        if (json_is_string(m) && !(r->message = pool_json(v, m))) return -1;
        if (json_is_object(sh)) {
            r->has_shape = 1;
            if (read_sizes(v, sh, &r->shape)) return -1;
        }
        r->count = (int)json_integer_value(json_object_get(o, "count"));
    }
    return 0;
}

/* untimed_shapes: sizes objects ({"n": 5003}), or records that hold them ({"sizes": ...}) */
static int read_untimed(struct kf_verdict *v, const json_t *a) {
    v->has_untimed = 1;
    if (!json_array_size(a)) return 0;
    if (!(v->untimed = calloc(json_array_size(a), sizeof *v->untimed))) return -1;
    size_t i;
    json_t *o;
    json_array_foreach((json_t *)a, i, o) {
        json_t *s = json_object_get(o, "sizes");
        if (read_sizes(v, s ? s : o, &v->untimed[v->nuntimed++])) return -1;
    }
    return 0;
}

static int read_params(struct kf_verdict *v, const json_t *o, kf_verdict_param **out, int *n) {
    if (!json_object_size(o)) return 0;
    if (!(*out = calloc(json_object_size(o), sizeof **out))) return -1;
    const char *k;
    json_t *x;
    json_object_foreach((json_t *)o, k, x) {
        kf_verdict_param *p = &(*out)[(*n)++];
        if (!(p->name = pool_str(v, k))) return -1;
        if (json_is_string(x) && !(p->str = pool_json(v, x))) return -1;
        p->ival = (int64_t)json_integer_value(x);
    }
    return 0;
}

/* the sandbox report's typed slots (fields of the verdict); the backend's keys come first */
#define F(m) offsetof(struct kf_verdict, m)
static const slot_def sandbox_slots[] = {
    {"landlock_abi", 1, 'i', 0, F(landlock_abi)},
    {"mseal", 2, 'b', 0, F(mseal)},
    {"frozen_between_calls", 3, 'b', 0, F(frozen)},
    {"check_cpus", 4, 'i', 0, F(check_cpus)},
    {"parallel_call_cpus", 5, 'i', 0, F(parallel_call_cpus)},
    {"interleave_ns", 6, 'i', 0, F(interleave_ns)},
    {"race_calls", 7, 'i', 0, F(race_calls)},
};
#undef F
#define NSANDBOX (sizeof sandbox_slots / sizeof *sandbox_slots)

int kf_verdict_merge_sandbox(struct kf_verdict *v, const json_t *frag) {
    const char *k;
    json_t *x;
    int at = 0;
    v->has_sandbox = 1;
    json_object_foreach((json_t *)frag, k, x) {
        const slot_def *d = find_slot(sandbox_slots, NSANDBOX, k, x);
        if (!d) {
            if (extra_add(v, &v->sandbox_extra, at, k, x)) return -1;
            continue;
        }
        char *f = (char *)v + d->off;
        if (d->type == 'i') *(int64_t *)f = (int64_t)json_integer_value(x);
        else *(int *)f = json_is_true(x);
        at = d->slot;
    }
    return 0;
}

static int read_tools(struct kf_verdict *v, const json_t *o) {
    v->has_sanitizer = 1;
    if (!json_object_size(o)) return 0;
    if (!(v->tools = calloc(json_object_size(o), sizeof *v->tools))) return -1;
    const char *k;
    json_t *x;
    json_object_foreach((json_t *)o, k, x) {
        kf_verdict_tool *t = &v->tools[v->ntools++];
        json_t *w = json_object_get(x, "warnings"), *note = json_object_get(x, "note"),
               *rep = json_object_get(x, "report");
        if (!(t->tool = pool_str(v, k))) return -1;
        t->ran = json_is_true(json_object_get(x, "ran"));
        t->errors = (int64_t)json_integer_value(json_object_get(x, "errors"));
        t->has_warnings = w != NULL;
        t->warnings = (int64_t)json_integer_value(w);
        t->exit = (int64_t)json_integer_value(json_object_get(x, "exit"));
        t->calls = (int64_t)json_integer_value(json_object_get(x, "calls"));
        t->seconds = json_number_value(json_object_get(x, "seconds"));
        if ((json_is_string(note) && !(t->note = pool_json(v, note))) ||
            (json_is_string(rep) && !(t->report = pool_json(v, rep))))
            return -1;
    }
    return 0;
}

static int read_libraries(struct kf_verdict *v, const json_t *a) {
    v->has_libraries = 1;
    v->libraries_null = json_is_null(a);
    v->libraries_late = v->resources != NULL;
    size_t i;
    json_t *x;
    json_array_foreach((json_t *)a, i, x) {
        if (json_is_string(x) && kf_verdict_add_library(v, json_string_value(x))) return -1;
    }
    return 0;
}

/* the document's slots, in the order check, bench and validate write them */
// clang-format off
enum {
    T_VERDICT = 1, T_REASONS, T_TASK, T_FINGERPRINT, T_CANDIDATE, T_PARAMS, T_WHEN, T_SEED, T_SHAPES,
    T_COMPILE, T_SANDBOX, T_LIBRARIES, T_RESOURCES, T_LIBRARIES_LATE, T_CANDIDATE_OUTPUT, T_SANITIZER,
    T_CHECK, T_BENCH_SHAPES, T_BASELINE, T_BASELINE_PARAMS, T_UNTIMED, T_CEILINGS, T_TIMING_CPUS,
    T_SPEEDUP, T_WINS, T_CEILINGS_LATE, T_REFERENCE_TIME, T_SECONDS, T_END
};
// clang-format on
_Static_assert((int)T_COMPILE == (int)KF_VAT_BUILD, "verdict.h's anchor is a document slot");

/* One key of the document; its slot, 0 when it is not typed, -1 when out of memory. */
static int doc_key(struct kf_verdict *v, const char *k, const json_t *x) {
    if (!strcmp(k, "verdict") && json_is_string(x)) {
        const char *w = json_string_value(x);
        v->verdict = !strcmp(w, "accepted") ? KF_VERDICT_ACCEPTED : KF_VERDICT_REJECTED;
        if (strcmp(w, "accepted") && strcmp(w, "rejected") && !(v->verdict_word = pool_str(v, w))) return -1;
        return T_VERDICT;
    }
    if (!strcmp(k, "reasons") && json_is_array(x)) {
        v->has_reasons = 1;
        return read_reasons(v, x) ? -1 : T_REASONS;
    }
    if (!strcmp(k, "task") && json_is_string(x)) return (v->task = pool_json(v, x)) ? T_TASK : -1;
    if (!strcmp(k, "fingerprint") && json_is_string(x))
        return (v->fingerprint = pool_json(v, x)) ? T_FINGERPRINT : -1;
    if (!strcmp(k, "candidate") && json_is_string(x))
        return (v->candidate = pool_json(v, x)) ? T_CANDIDATE : -1;
    if (!strcmp(k, "params") && json_is_object(x)) {
        v->has_params = 1;
        return read_params(v, x, &v->params, &v->nparams) ? -1 : T_PARAMS;
    }
    if (!strcmp(k, "when") && (json_is_string(x) || json_is_null(x))) {
        v->has_when = 1;
        return json_is_null(x) || (v->when = pool_json(v, x)) ? T_WHEN : -1;
    }
    if (!strcmp(k, "seed") && json_is_integer(x)) {
        v->has_seed = 1, v->seed = (int64_t)json_integer_value(x);
        return T_SEED;
    }
    if (!strcmp(k, "shapes") && json_is_array(x)) {
        v->has_shapes = 1;
        if (read_shapes(v, x, &v->shapes, &v->nshapes)) return -1;
        v->capshapes = v->nshapes;
        return v->has_check ? T_BENCH_SHAPES : T_SHAPES;
    }
    if (!strcmp(k, "compile") && json_is_object(x)) {
        json_t *log = json_object_get(x, "log");
        v->has_compile = 1;
        v->compile_ok = json_is_true(json_object_get(x, "ok"));
        v->compile_cached = json_is_true(json_object_get(x, "cached"));
        v->compile_seconds = json_number_value(json_object_get(x, "seconds"));
        return json_is_string(log) && !(v->compile_log = pool_json(v, log)) ? -1 : T_COMPILE;
    }
    if (!strcmp(k, "sandbox") && json_is_object(x)) return kf_verdict_merge_sandbox(v, x) ? -1 : T_SANDBOX;
    if (!strcmp(k, "libraries_loaded") && (json_is_array(x) || json_is_null(x)))
        return read_libraries(v, x) ? -1 : v->libraries_late ? T_LIBRARIES_LATE : T_LIBRARIES;
    if (!strcmp(k, "resources") && json_is_object(x))
        return (v->resources = json_deep_copy(x)) ? T_RESOURCES : -1;
    if (!strcmp(k, "candidate_output") && json_is_string(x))
        return (v->candidate_output = pool_json(v, x)) ? T_CANDIDATE_OUTPUT : -1;
    if (!strcmp(k, "sanitizer") && json_is_object(x)) return read_tools(v, x) ? -1 : T_SANITIZER;
    if (!strcmp(k, "check") && json_is_object(x)) {
        json_t *cv = json_object_get(x, "verdict"), *cs = json_object_get(x, "seconds");
        v->has_check = 1;
        v->check_verdict = json_is_string(cv) && !strcmp(json_string_value(cv), "accepted")
                               ? KF_VERDICT_ACCEPTED
                               : KF_VERDICT_REJECTED;
        if (json_is_number(cs)) v->has_check_seconds = 1, v->check_seconds = json_number_value(cs);
        return read_shapes(v, json_object_get(x, "shapes"), &v->checked, &v->nchecked) ? -1 : T_CHECK;
    }
    if (!strcmp(k, "baseline") && json_is_string(x)) return (v->baseline = pool_json(v, x)) ? T_BASELINE : -1;
    if (!strcmp(k, "baseline_params") && json_is_object(x)) {
        v->has_baseline_params = 1;
        return read_params(v, x, &v->baseline_params, &v->nbaseline_params) ? -1 : T_BASELINE_PARAMS;
    }
    if (!strcmp(k, "untimed_shapes") && json_is_array(x)) return read_untimed(v, x) ? -1 : T_UNTIMED;
    if (!strcmp(k, "ceilings") && json_is_object(x)) {
        v->ceilings_late = v->has_timing_cpus;
        if (!(v->ceilings = json_deep_copy(x))) return -1;
        return v->ceilings_late ? T_CEILINGS_LATE : T_CEILINGS;
    }
    if (!strcmp(k, "timing_cpus") && json_is_object(x)) {
        v->has_timing_cpus = 1;
        v->coordinator_pinned = json_is_true(json_object_get(x, "coordinator_pinned"));
        v->worker_cpus = (int64_t)json_integer_value(json_object_get(x, "worker_cpus"));
        return T_TIMING_CPUS;
    }
    if (!strcmp(k, "speedup") && json_is_number(x)) {
        v->has_speedup = 1, v->speedup = json_number_value(x);
        return T_SPEEDUP;
    }
    if (!strcmp(k, "wins") && json_is_integer(x)) {
        v->has_wins = 1, v->wins = (int64_t)json_integer_value(x);
        return T_WINS;
    }
    if (!strcmp(k, "reference_time") && json_is_object(x)) {
        json_decref(v->reference_time);
        return (v->reference_time = json_deep_copy(x)) ? T_REFERENCE_TIME : -1;
    }
    if (!strcmp(k, "seconds") && json_is_number(x)) {
        v->has_seconds = 1, v->seconds = json_number_value(x);
        return T_SECONDS;
    }
    return 0;
}

int kf_verdict_merge(struct kf_verdict *v, const json_t *frag, int at) {
    const char *k;
    json_t *x;
    json_object_foreach((json_t *)frag, k, x) {
        int slot = doc_key(v, k, x);
        if (slot < 0 || (!slot && extra_add(v, &v->extra, at, k, x))) return v->oom = 1, -1;
        if (slot) at = slot;
    }
    return 0;
}

static int read_doc(const json_t *doc, struct kf_verdict *v) {
    if (json_is_array(doc)) {
        v->has_shapes = 1;
        if (read_shapes(v, doc, &v->shapes, &v->nshapes)) return -1;
        v->capshapes = v->nshapes;
        return 0;
    }
    if (!json_is_object(doc)) return -1;
    return kf_verdict_merge(v, doc, 0);
}

void kf_verdict_init(struct kf_verdict *v) {
    memset(v, 0, sizeof *v);
    v->verdict = KF_VERDICT_REJECTED;
}

int kf_verdict_from_json(const json_t *doc, struct kf_verdict *v) {
    kf_verdict_init(v);
    return doc ? read_doc(doc, v) : -1;
}

int kf_verdict_from_text(const char *text, struct kf_verdict *v) {
    json_t *j = text ? json_loads(text, 0, NULL) : NULL;
    int rc = kf_verdict_from_json(j, v);
    json_decref(j);
    return rc;
}

static void shapes_free(kf_verdict_shape *s, int n) {
    for (int i = 0; s && i < n; i++) extras_free(&s[i].extra);
    free(s);
}

void kf_verdict_free(struct kf_verdict *v) {
    if (!v) return;
    for (int i = 0; i < v->npool; i++) free(v->pool[i]);
    free(v->pool);
    free(v->reasons);
    shapes_free(v->shapes, v->nshapes);
    shapes_free(v->checked, v->nchecked);
    free(v->untimed);
    free(v->params);
    free(v->baseline_params);
    free(v->libraries);
    free(v->tools);
    extras_free(&v->sandbox_extra);
    extras_free(&v->extra);
    json_decref(v->resources);
    json_decref(v->ceilings);
    json_decref(v->reference_time);
    kf_verdict_init(v);
}

/* ---- filling ------------------------------------------------------------------------------ */

const char *kf_verdict_str(struct kf_verdict *v, const char *s) {
    json_t *j = kf_text_json(s);
    const char *c = j ? pool_str(v, json_string_value(j)) : NULL;
    json_decref(j);
    if (!c) v->oom = 1;
    return c;
}

void kf_verdict_sizes_set(struct kf_verdict *v, kf_verdict_sizes *s, int n, const char *const *names,
                          const int64_t *vals) {
    memset(s, 0, sizeof *s);
    for (int i = 0; i < n && i < KF_VERDICT_MAX_SIZES; i++) {
        if (!(s->name[s->n] = pool_str(v, names[i]))) {
            v->oom = 1;
            return;
        }
        s->v[s->n++] = vals[i];
    }
}

kf_verdict_shape *kf_verdict_add_shape(struct kf_verdict *v) {
    v->has_shapes = 1;
    if (v->nshapes == v->capshapes) {
        int cap = v->capshapes ? v->capshapes * 2 : 8;
        kf_verdict_shape *p = realloc(v->shapes, (size_t)cap * sizeof *p);
        if (!p) return v->oom = 1, NULL;
        v->shapes = p, v->capshapes = cap;
    }
    kf_verdict_shape *s = &v->shapes[v->nshapes++];
    memset(s, 0, sizeof *s);
    return s;
}

kf_verdict_reason *kf_verdict_add_reason(struct kf_verdict *v, kf_reason code, const kf_verdict_sizes *shape,
                                         const char *message) {
    if (v->nreasons == v->capreasons) {
        int cap = v->capreasons ? v->capreasons * 2 : 4;
        kf_verdict_reason *p = realloc(v->reasons, (size_t)cap * sizeof *p);
        if (!p) return v->oom = 1, NULL;
        v->reasons = p, v->capreasons = cap;
    }
    kf_verdict_reason *r = &v->reasons[v->nreasons++];
    memset(r, 0, sizeof *r);
    r->code = code;
    r->message = kf_verdict_str(v, message);
    if (shape) r->has_shape = 1, r->shape = *shape;
    r->count = 1;
    return r;
}

int kf_verdict_add_param(struct kf_verdict *v, int baseline, const char *name, const char *str,
                         int64_t ival) {
    kf_verdict_param **a = baseline ? &v->baseline_params : &v->params;
    int *n = baseline ? &v->nbaseline_params : &v->nparams;
    kf_verdict_param *p = realloc(*a, (size_t)(*n + 1) * sizeof *p);
    if (!p) return v->oom = 1, -1;
    *a = p;
    p[*n] = (kf_verdict_param){pool_str(v, name), str ? kf_verdict_str(v, str) : NULL, ival};
    if (!p[*n].name) return v->oom = 1, -1;
    (*n)++;
    return 0;
}

/* "libraries_loaded" is there from now on, where it first was */
static void libraries_here(struct kf_verdict *v) {
    if (!v->has_libraries) v->has_libraries = 1, v->libraries_late = v->resources != NULL;
}

void kf_verdict_libraries_unknown(struct kf_verdict *v) {
    if (!v->has_libraries) v->libraries_null = 1;
    libraries_here(v);
}

void kf_verdict_libraries_known(struct kf_verdict *v) {
    libraries_here(v);
    v->libraries_null = 0;
}

int kf_verdict_add_library(struct kf_verdict *v, const char *name) {
    kf_verdict_libraries_known(v);
    for (int i = 0; i < v->nlibraries; i++)
        if (!strcmp(v->libraries[i], name)) return 0;
    const char **p = realloc(v->libraries, (size_t)(v->nlibraries + 1) * sizeof *p);
    if (!p) return v->oom = 1, -1;
    v->libraries = p;
    if (!(p[v->nlibraries] = kf_verdict_str(v, name))) return -1;
    v->nlibraries++;
    return 0;
}

kf_verdict_tool *kf_verdict_add_tool(struct kf_verdict *v, const char *tool) {
    v->has_sanitizer = 1;
    kf_verdict_tool *p = realloc(v->tools, (size_t)(v->ntools + 1) * sizeof *p);
    if (!p) return v->oom = 1, NULL;
    v->tools = p;
    kf_verdict_tool *t = &p[v->ntools++];
    memset(t, 0, sizeof *t);
    if (!(t->tool = pool_str(v, tool))) v->oom = 1;
    return t;
}

int kf_verdict_set_resources(struct kf_verdict *v, json_t *r, const kf_verdict_sizes *at) {
    json_decref(v->resources);
    v->resources = r;
    json_t *a = kf_verdict_sizes_json(at);
    if (!a || json_object_set_new(r, "at", a)) return v->oom = 1, -1;
    return 0;
}

void kf_verdict_set_ceilings(struct kf_verdict *v, json_t *c, int late) {
    json_decref(v->ceilings);
    v->ceilings = c;
    v->ceilings_late = late;
}

void kf_verdict_to_bench(struct kf_verdict *v, double check_seconds) {
    v->has_check = 1;
    v->check_verdict = v->verdict;
    v->has_check_seconds = 1;
    v->check_seconds = check_seconds;
    v->checked = v->shapes, v->nchecked = v->nshapes;
    v->shapes = NULL, v->nshapes = v->capshapes = 0;
    v->has_shapes = 1;
}

/* ---- reals -------------------------------------------------------------------------------- */

/* jansson writes a real with "%.*g" and reads it back with strtod: the same here */
double kf_verdict_real(double x, int digits) {
    if (!isfinite(x)) return x;
    char b[64];
    snprintf(b, sizeof b, "%.*g", digits, x);
    return strtod(b, NULL);
}

static void round_shapes(kf_verdict_shape *s, int n, int d) {
    for (int i = 0; i < n; i++) {
        double *f[] = {&s[i].max_abs_err,
                       &s[i].plain_abs_err,
                       &s[i].max_rel_err,
                       &s[i].candidate_gap_ns,
                       &s[i].baseline_gap_ns,
                       &s[i].speedup,
                       &s[i].noise,
                       &s[i].ci95[0],
                       &s[i].ci95[1],
                       &s[i].candidate_ns,
                       &s[i].baseline_ns,
                       &s[i].candidate_spread,
                       &s[i].baseline_spread,
                       &s[i].candidate_wall_ns,
                       &s[i].baseline_wall_ns,
                       &s[i].roofline_fraction,
                       &s[i].speedup_first,
                       &s[i].ci95_first[0],
                       &s[i].ci95_first[1]};
        for (size_t k = 0; k < sizeof f / sizeof *f; k++) *f[k] = kf_verdict_real(*f[k], d);
    }
}

void kf_verdict_round(struct kf_verdict *v, int digits) {
    round_shapes(v->shapes, v->nshapes, digits);
    round_shapes(v->checked, v->nchecked, digits);
    v->speedup = kf_verdict_real(v->speedup, digits);
    v->seconds = kf_verdict_real(v->seconds, digits);
    v->check_seconds = kf_verdict_real(v->check_seconds, digits);
    v->compile_seconds = kf_verdict_real(v->compile_seconds, digits);
    for (int i = 0; i < v->ntools; i++) v->tools[i].seconds = kf_verdict_real(v->tools[i].seconds, digits);
}

/* ---- writing ------------------------------------------------------------------------------ */

json_t *kf_verdict_sizes_json(const kf_verdict_sizes *s) {
    json_t *o = json_object();
    for (int i = 0; o && i < s->n; i++) json_object_set_new(o, s->name[i], json_integer((json_int_t)s->v[i]));
    return o;
}

static json_t *pair_json(const double p[2]) { return json_pack("[f, f]", p[0], p[1]); }

/* The timing fields of a record, in the order a node's shapes column keeps them. */
static void timing_json(json_t *o, const kf_verdict_shape *s) {
    if (s->has & KF_VS_SPEEDUP) json_object_set_new(o, "speedup", json_real(s->speedup));
    if (s->has & KF_VS_CI95) json_object_set_new(o, "ci95", pair_json(s->ci95));
    if (s->has & KF_VS_WIN) json_object_set_new(o, "win", json_boolean(s->win));
    if (s->has & KF_VS_CANDIDATE_NS) json_object_set_new(o, "candidate_ns", json_real(s->candidate_ns));
    if (s->has & KF_VS_BASELINE_NS) json_object_set_new(o, "baseline_ns", json_real(s->baseline_ns));
    if (s->has & KF_VS_ROOFLINE) json_object_set_new(o, "roofline_fraction", json_real(s->roofline_fraction));
    if (s->has & KF_VS_FAIR) json_object_set_new(o, "fair", json_boolean(s->fair));
    if (s->has & KF_VS_SPEEDUP_FIRST) json_object_set_new(o, "speedup_first", json_real(s->speedup_first));
    if (s->has & KF_VS_CI95_FIRST) json_object_set_new(o, "ci95_first", pair_json(s->ci95_first));
}

static const char *const kind_names[] = {NULL, "visible", "hidden", "edge"};
static const char *const status_names[] = {NULL, "passed", "failed", "skipped", "not_run"};

static void set_real(json_t *o, const char *k, double x) { json_object_set_new(o, k, json_real(x)); }
static void set_int(json_t *o, const char *k, int64_t x) {
    json_object_set_new(o, k, json_integer((json_int_t)x));
}
static void set_str(json_t *o, const char *k, const char *x) {
    if (x) json_object_set_new(o, k, json_string(x));
}

/* One typed field of a shape record, by its slot's definition */
static void shape_slot_json(json_t *o, const kf_verdict_shape *s, const slot_def *d) {
    const char *f = (const char *)s + d->off;
    if (d->bit && !(s->has & d->bit)) return;
    switch (d->type) {
    case 'z': json_object_set_new(o, d->key, kf_verdict_sizes_json(&s->sizes)); break;
    case 'k': set_str(o, d->key, kind_names[s->kind]); break;
    case 'u': set_str(o, d->key, status_names[s->status]); break;
    case 't':
        if (d->bit || *(const int *)f) json_object_set_new(o, d->key, json_true());
        break;
    case 'b': json_object_set_new(o, d->key, json_boolean(*(const int *)f)); break;
    case 'i': set_int(o, d->key, *(const int64_t *)f); break;
    case 'r': set_real(o, d->key, *(const double *)f); break;
    case 'p': json_object_set_new(o, d->key, pair_json((const double *)f)); break;
    case 's': set_str(o, d->key, *(const char *const *)f); break;
    }
}

static json_t *shape_json(const kf_verdict_shape *s) {
    json_t *o = json_object();
    if (o) extras_json(o, &s->extra, 0);
    for (int i = 0; o && i < S_END - 1; i++) {
        shape_slot_json(o, s, &shape_slots[i]);
        extras_json(o, &s->extra, shape_slots[i].slot);
    }
    return o;
}

static json_t *shapes_json(const kf_verdict_shape *s, int n) {
    json_t *a = json_array();
    for (int i = 0; a && i < n; i++) json_array_append_new(a, shape_json(&s[i]));
    return a;
}

static json_t *reasons_json(const struct kf_verdict *v, int full) {
    json_t *a = json_array();
    for (int i = 0; a && i < v->nreasons; i++) {
        const kf_verdict_reason *r = &v->reasons[i];
        json_t *o = json_pack("{s:s, s:s?}", "code", kf_reason_name(r->code), "message", r->message);
        if (o && full) {
            json_object_set_new(o, "shape", r->has_shape ? kf_verdict_sizes_json(&r->shape) : json_null());
            json_object_set_new(o, "count", json_integer(r->count));
        }
        json_array_append_new(a, o);
    }
    return a;
}

static json_t *params_json(const kf_verdict_param *p, int n) {
    json_t *o = json_object();
    for (int i = 0; o && i < n; i++)
        json_object_set_new(o, p[i].name,
                            p[i].str ? json_string(p[i].str) : json_integer((json_int_t)p[i].ival));
    return o;
}

static json_t *sandbox_json(const struct kf_verdict *v) {
    json_t *o = json_object();
    if (o) extras_json(o, &v->sandbox_extra, 0);
    for (size_t i = 0; o && i < NSANDBOX; i++) {
        const char *f = (const char *)v + sandbox_slots[i].off;
        if (sandbox_slots[i].type == 'i') set_int(o, sandbox_slots[i].key, *(const int64_t *)f);
        else json_object_set_new(o, sandbox_slots[i].key, json_boolean(*(const int *)f));
        extras_json(o, &v->sandbox_extra, sandbox_slots[i].slot);
    }
    return o;
}

static json_t *tools_json(const struct kf_verdict *v) {
    json_t *o = json_object();
    for (int i = 0; o && i < v->ntools; i++) {
        const kf_verdict_tool *t = &v->tools[i];
        json_t *x = json_pack("{s:b, s:I}", "ran", t->ran, "errors", (json_int_t)t->errors);
        if (x && t->has_warnings) set_int(x, "warnings", t->warnings);
        if (x) {
            set_int(x, "exit", t->exit);
            set_int(x, "calls", t->calls);
            set_real(x, "seconds", t->seconds);
            set_str(x, "note", t->note);
            set_str(x, "report", t->report);
        }
        json_object_set_new(o, t->tool, x);
    }
    return o;
}

static json_t *libraries_json(const struct kf_verdict *v) {
    if (v->libraries_null) return json_null();
    json_t *a = json_array();
    for (int i = 0; a && i < v->nlibraries; i++) json_array_append_new(a, json_string(v->libraries[i]));
    return a;
}

static const char *verdict_name(kf_verdict v) { return v == KF_VERDICT_ACCEPTED ? "accepted" : "rejected"; }

/* One typed field of the document, by its slot */
static void doc_slot_json(json_t *o, const struct kf_verdict *v, int slot) {
    switch (slot) {
    case T_VERDICT:
        set_str(o, "verdict", v->verdict_word ? v->verdict_word : verdict_name(v->verdict));
        break;
    case T_REASONS:
        if (v->has_reasons) json_object_set_new(o, "reasons", reasons_json(v, 1));
        break;
    case T_TASK: set_str(o, "task", v->task); break;
    case T_FINGERPRINT: set_str(o, "fingerprint", v->fingerprint); break;
    case T_CANDIDATE: set_str(o, "candidate", v->candidate); break;
    case T_PARAMS:
        if (v->has_params) json_object_set_new(o, "params", params_json(v->params, v->nparams));
        break;
    case T_WHEN:
        if (v->has_when) json_object_set_new(o, "when", v->when ? json_string(v->when) : json_null());
        break;
    case T_SEED:
        if (v->has_seed) set_int(o, "seed", v->seed);
        break;
    case T_SHAPES:
    case T_BENCH_SHAPES:
        if (v->has_shapes && v->has_check == (slot == T_BENCH_SHAPES))
            json_object_set_new(o, "shapes", shapes_json(v->shapes, v->nshapes));
        break;
    case T_COMPILE:
        if (v->has_compile) {
            json_t *c = json_pack("{s:b, s:b, s:f}", "ok", v->compile_ok, "cached", v->compile_cached,
                                  "seconds", v->compile_seconds);
            if (c) set_str(c, "log", v->compile_log);
            json_object_set_new(o, "compile", c);
        }
        break;
    case T_SANDBOX:
        if (v->has_sandbox) json_object_set_new(o, "sandbox", sandbox_json(v));
        break;
    case T_LIBRARIES:
    case T_LIBRARIES_LATE:
        if (v->has_libraries && v->libraries_late == (slot == T_LIBRARIES_LATE))
            json_object_set_new(o, "libraries_loaded", libraries_json(v));
        break;
    case T_RESOURCES:
        if (v->resources) json_object_set(o, "resources", v->resources);
        break;
    case T_CANDIDATE_OUTPUT: set_str(o, "candidate_output", v->candidate_output); break;
    case T_SANITIZER:
        if (v->has_sanitizer) json_object_set_new(o, "sanitizer", tools_json(v));
        break;
    case T_CHECK:
        if (v->has_check) {
            json_t *c = json_pack("{s:s, s:o}", "verdict", verdict_name(v->check_verdict), "shapes",
                                  shapes_json(v->checked, v->nchecked));
            if (c && v->has_check_seconds) set_real(c, "seconds", v->check_seconds);
            json_object_set_new(o, "check", c);
        }
        break;
    case T_BASELINE: set_str(o, "baseline", v->baseline); break;
    case T_BASELINE_PARAMS:
        if (v->has_baseline_params)
            json_object_set_new(o, "baseline_params", params_json(v->baseline_params, v->nbaseline_params));
        break;
    case T_UNTIMED:
        if (v->has_untimed) {
            json_t *u = json_array();
            for (int i = 0; u && i < v->nuntimed; i++)
                json_array_append_new(u, kf_verdict_sizes_json(&v->untimed[i]));
            json_object_set_new(o, "untimed_shapes", u);
        }
        break;
    case T_CEILINGS:
    case T_CEILINGS_LATE:
        if (v->ceilings && v->ceilings_late == (slot == T_CEILINGS_LATE))
            json_object_set(o, "ceilings", v->ceilings);
        break;
    case T_TIMING_CPUS:
        if (v->has_timing_cpus)
            json_object_set_new(o, "timing_cpus",
                                json_pack("{s:b, s:I}", "coordinator_pinned", v->coordinator_pinned,
                                          "worker_cpus", (json_int_t)v->worker_cpus));
        break;
    case T_SPEEDUP:
        if (v->has_speedup) set_real(o, "speedup", v->speedup);
        break;
    case T_WINS:
        if (v->has_wins) set_int(o, "wins", v->wins);
        break;
    case T_REFERENCE_TIME:
        if (v->reference_time) json_object_set(o, "reference_time", v->reference_time);
        break;
    case T_SECONDS:
        if (v->has_seconds) set_real(o, "seconds", v->seconds);
        break;
    }
}

json_t *kf_verdict_to_json(const struct kf_verdict *v) {
    json_t *o = json_object();
    for (int slot = 0; o && slot < T_END; slot++) {
        doc_slot_json(o, v, slot);
        extras_json(o, &v->extra, slot);
    }
    return o;
}

json_t *kf_verdict_shapes_json(const struct kf_verdict *v) {
    json_t *a = json_array();
    for (int i = 0; a && i < v->nshapes; i++) {
        const kf_verdict_shape *s = &v->shapes[i];
        if (!(s->has & KF_VS_SPEEDUP)) continue;
        json_t *o = json_object();
        if (o) json_object_set_new(o, "sizes", kf_verdict_sizes_json(&s->sizes));
        if (o) timing_json(o, s);
        json_array_append_new(a, o);
    }
    return a;
}

char *kf_verdict_shapes_text(const struct kf_verdict *v) {
    json_t *a = kf_verdict_shapes_json(v);
    char *t = a ? kf__json_dumps(a, JSON_COMPACT) : NULL;
    json_decref(a);
    return t;
}

json_t *kf_verdict_summary_json(const struct kf_verdict *v) {
    json_t *sh = json_array();
    for (int i = 0; sh && i < v->nshapes; i++) {
        const kf_verdict_shape *s = &v->shapes[i];
        if (!(s->has & KF_VS_SPEEDUP)) continue;
        json_array_append_new(sh,
                              json_pack("{s:o, s:f, s:o, s:b}", "sizes", kf_verdict_sizes_json(&s->sizes),
                                        "speedup", s->speedup, "ci95", pair_json(s->ci95), "win", s->win));
    }
    json_t *o = json_pack("{s:s, s:o, s:o}", "verdict", verdict_name(v->verdict), "reasons",
                          reasons_json(v, 0), "shapes", sh);
    if (o) json_object_set_new(o, "speedup", v->has_speedup ? json_real(v->speedup) : json_null());
    return o;
}

json_t *kf_verdict_retimed_json(const kf_verdict_shape *s) {
    return json_pack("{s:o, s:f}", "sizes", kf_verdict_sizes_json(&s->sizes), "speedup", s->speedup);
}

/* ---- questions ---------------------------------------------------------------------------- */

const json_t *kf_verdict_extra_get(const kf_verdict_extras *x, const char *key) {
    for (int i = x->n - 1; i >= 0; i--)
        if (!strcmp(x->e[i].key, key)) return x->e[i].val;
    return NULL;
}

int kf_verdict_reference_time(const struct kf_verdict *v, kf_verdict_reftime *t) {
    memset(t, 0, sizeof *t);
    const json_t *rt = v->reference_time, *at;
    if (!json_is_object(rt)) return 0;
    t->slowest_ms = json_number_value(json_object_get(rt, "slowest_ms"));
    at = json_object_get(rt, "at");
    const char *k;
    json_t *x;
    json_object_foreach((json_t *)at, k, x) {
        if (t->at.n == KF_VERDICT_MAX_SIZES) break;
        t->at.name[t->at.n] = k;
        t->at.v[t->at.n++] = (int64_t)json_integer_value(x);
    }
    t->kind = json_string_value(json_object_get(rt, "kind"));
    t->warning = json_string_value(json_object_get(rt, "warning"));
    return 1;
}

const kf_verdict_shape *kf_verdict_check_shapes(const struct kf_verdict *v, int *n) {
    *n = v->has_check ? v->nchecked : v->nshapes;
    return v->has_check ? v->checked : v->shapes;
}

int kf_verdict_sizes_equal(const kf_verdict_sizes *a, const kf_verdict_sizes *b) {
    if (a->n != b->n) return 0;
    for (int i = 0; i < a->n; i++) {
        int j = 0;
        while (j < b->n && strcmp(a->name[i], b->name[j])) j++;
        if (j == b->n || a->v[i] != b->v[j]) return 0;
    }
    return 1;
}

const kf_verdict_shape *kf_verdict_find(const struct kf_verdict *v, const kf_verdict_sizes *sizes) {
    for (int i = 0; i < v->nshapes; i++)
        if (kf_verdict_sizes_equal(&v->shapes[i].sizes, sizes)) return &v->shapes[i];
    return NULL;
}

int64_t kf_verdict_size(const kf_verdict_sizes *s, const char *name) {
    for (int i = 0; i < s->n; i++)
        if (!strcmp(s->name[i], name)) return s->v[i];
    return 0;
}

void kf_verdict_sizes_text(const kf_verdict_sizes *s, const char *sep, char *out, size_t n) {
    size_t at = 0;
    if (n) out[0] = 0;
    for (int i = 0; i < s->n; i++) {
        int w = snprintf(out + at, n - at, "%s%s=%lld", at ? sep : "", s->name[i], (long long)s->v[i]);
        if (w < 0 || (size_t)w >= n - at) {
            out[at] = 0; /* a whole item or none */
            break;
        }
        at += (size_t)w;
    }
}
