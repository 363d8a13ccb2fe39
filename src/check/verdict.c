/*
 * verdict.c - the verdict's one pair of conversions (verdict.h): a document or a store
 * column into a struct kf_verdict, and the struct into the documents kforge writes from
 * it (the CLI's whole document, a node's shapes column, EXPORT.json's verification, the
 * Critic's re-timings), and the setters the checker and bench fill it with. This is the
 * only file that knows the verdict's key names; a renamed key is a change here and in
 * docs/cli.md, nowhere else.
 *
 * The order of the document is by construction: each typed field has a slot (the
 * top-level document's, a shape record's, the sandbox report's, the ceilings', the
 * resource report's and its records'), written in slot order, and every key it does not
 * type (a key of a newer build) is an extra that remembers the slot it followed. The slot orders are the orders the checker,
 * bench and validate write in; a bench moves "shapes" behind "check", a backend's late
 * ceilings come after the geomean. So kf_verdict_to_json(kf_verdict_from_json(doc)) is
 * doc for every document kforge writes (tests/test_check.c, check/verdict_roundtrip).
 *
 * Reading is lenient, as the readers it replaced were: a missing field is absent (its
 * has bit clear, its pointer NULL, its number 0); a field of the wrong type is kept as an
 * extra. The strings a verdict holds are copies in its pool, freed with it.
 */
#include "verdict.h"
#include "verdict_impl.h"

#include "../util/util.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the pool --------------------------------------------------------------------------- */

/* A copy of s in v's pool (one copy per distinct string: size names repeat on every
 * shape), or NULL when s is NULL or out of memory. */
const char *kf__verdict_pool(struct kf_verdict *v, const char *s) {
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
    return json_is_string(j) ? kf__verdict_pool(v, json_string_value(j)) : NULL;
}

/* ---- extras ------------------------------------------------------------------------------- */

static int extra_add(struct kf_verdict *v, kf_verdict_extras *x, int at, const char *key, const json_t *val) {
    if (x->n == x->cap) {
        int cap = x->cap ? x->cap * 2 : 4;
        kf_verdict_extra *e = realloc(x->e, (size_t)cap * sizeof *e);
        if (!e) return v->oom = 1, -1;
        x->e = e, x->cap = cap;
    }
    const char *k = kf__verdict_pool(v, key);
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

void kf__verdict_extras_free(kf_verdict_extras *x) { extras_free(x); }

void kf__verdict_resources_free(kf_verdict_resources *r) {
    for (int i = 0; i < r->nkernels; i++) extras_free(&r->kernels[i].extra);
    for (int i = 0; i < r->nlaunches; i++) extras_free(&r->launches[i].extra);
    free(r->kernels);
    free(r->launches);
    extras_free(&r->extra);
    memset(r, 0, sizeof *r);
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
        if (!(s->name[s->n] = kf__verdict_pool(v, k))) return -1;
        s->v[s->n++] = (int64_t)json_integer_value(x);
    }
    return 0;
}

static int is_pair(const json_t *x) { return json_is_array(x) && json_array_size(x) == 2; }

/* Where a key sits in a record, and the type of value the verdict keeps for it: 'r' a
 * number (written as a real), 'i' an integer, 'b' a boolean, 't' true (a flag), 's' a
 * string, 'p' a pair of reals, 'o' an object, 'N' null (a flag), 'a' a list of names
 * (kf_verdict_names), 'm' the launch modes ({"candidate": s, "baseline": s}: two string
 * fields in a row), '3' three integers, 'K' and 'L' the resource report's lists of
 * kernel and launch records; a shape record's sizes, kind and status are 'z', 'k', 'u'. A shape
 * record's field is at `off`, present when `bit` is in its has (0: a string or flag
 * present when set). */
typedef struct {
    const char *key;
    int slot;
    char type;
    unsigned bit;
    size_t off;
} slot_def;

static int names_ok(const json_t *x) {
    if (!json_is_array(x) || json_array_size(x) > KF_VERDICT_MAX_NAMES) return 0;
    for (size_t i = 0; i < json_array_size(x); i++)
        if (!json_is_string(json_array_get(x, i))) return 0;
    return 1;
}

static int type_ok(char type, const json_t *x) {
    switch (type) {
    case 'N': return json_is_null(x);
    case 'a': return names_ok(x);
    case 'm':
        return json_object_size(x) == 2 && json_is_string(json_object_get(x, "candidate")) &&
               json_is_string(json_object_get(x, "baseline"));
    case 'r': return json_is_number(x); /* as the readers it replaced took them */
    case 'i': return json_is_integer(x);
    case 'b': return json_is_boolean(x);
    case 't': return json_is_true(x);
    case 's':
    case 'k':
    case 'u': return json_is_string(x);
    case 'p':
        return is_pair(x) && json_is_number(json_array_get(x, 0)) && json_is_number(json_array_get(x, 1));
    case '3':
        return json_array_size(x) == 3 && json_is_integer(json_array_get(x, 0)) &&
               json_is_integer(json_array_get(x, 1)) && json_is_integer(json_array_get(x, 2));
    case 'K':
    case 'L':
        for (size_t i = 0; i < json_array_size(x); i++)
            if (!json_is_object(json_array_get(x, i))) return 0;
        return json_is_array(x);
    case 'o':
    case 'z': return json_is_object(x);
    }
    return 0;
}

/* the shape record's slots, in the order the checker, validate and bench write them */
// clang-format off
enum {
    S_SIZES = 1, S_KIND, S_MAXIMUM,
    S_LAUNCH_COUNT, S_LAUNCH_NOTE, S_CALL_LAUNCHES, S_GRAPH_LAUNCHES, S_MEMORY_OPS, S_KERNELS, S_LIB_COUNT, S_LIB_KERNELS,
    S_WARNING, S_REFERENCE_MS, S_STATUS, S_NOTE, S_CALLS, S_MAX_ABS, S_PLAIN_ABS, S_MAX_REL,
    S_BEST_NS, S_WAITED, S_UNCLEAN, S_GPU_SHARED, S_CAND_GAP, S_BASE_GAP, S_CAND_NS, S_BASE_NS, S_SPEEDUP,
    S_NOISE, S_CI95, S_LAUNCH_MODE, S_GRAPH_USE, S_TIMED_LAUNCHES, S_FAIR, S_FAIR_NOTE, S_FAIR_REASON, S_WIN,
    S_SLOWER, S_RUNS, S_CAND_SPREAD, S_BASE_SPREAD, S_CAND_WALL, S_BASE_WALL,
    S_GFLOPS, S_GBYTES, S_BASE_GBYTES, S_ROOFLINE, S_FLOPS_CEILING, S_FLOOR, S_SPEEDUP_FIRST, S_CI95_FIRST, S_END
};
// clang-format on

#define F(m) offsetof(kf_verdict_shape, m)
static const slot_def shape_slots[S_END - 1] = {
    {"sizes", S_SIZES, 'z', 0, 0},
    {"kind", S_KIND, 'k', 0, 0},
    {"maximum", S_MAXIMUM, 't', 0, F(maximum)},
    /* the backend's report of the first checking call (kf_call_out) */
    {"launch_count", S_LAUNCH_COUNT, 'N', KF_VS_UNCOUNTED, 0},
    {"launch_note", S_LAUNCH_NOTE, 's', 0, F(launch_note)},
    {"launches_per_call", S_CALL_LAUNCHES, 'i', KF_VS_LAUNCHES, F(launches_per_call)},
    {"graph_launches", S_GRAPH_LAUNCHES, 'i', KF_VS_COUNTED, F(graph_launches)},
    {"memory_ops", S_MEMORY_OPS, 'i', KF_VS_COUNTED, F(memory_ops)},
    {"kernels", S_KERNELS, 'a', KF_VS_COUNTED, F(kernels)},
    {"library_kernel_count", S_LIB_COUNT, 'i', KF_VS_LIBRARY_COUNT, F(library_kernel_count)},
    {"library_kernels", S_LIB_KERNELS, 'a', KF_VS_COUNTED, F(library_kernels)},
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
    /* the backend's report of how each side reached the device (kf_fair_out) */
    {"launch_mode", S_LAUNCH_MODE, 'm', KF_VS_LAUNCH_MODE, F(candidate_launch_mode)},
    {"graph_use", S_GRAPH_USE, 's', 0, F(graph_use)},
    {"launches_per_call", S_TIMED_LAUNCHES, 'i', KF_VS_LAUNCHES, F(launches_per_call)},
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
    /* the backend's rates and roofline (kf_roof_out) */
    {"gflops", S_GFLOPS, 'r', KF_VS_RATES, F(gflops)},
    {"gbytes_per_s", S_GBYTES, 'r', KF_VS_RATES, F(gbytes_per_s)},
    {"baseline_gbytes_per_s", S_BASE_GBYTES, 'r', KF_VS_BASE_RATE, F(baseline_gbytes_per_s)},
    {"roofline_fraction", S_ROOFLINE, 'r', KF_VS_ROOFLINE, F(roofline_fraction)},
    {"roofline_flops_ceiling", S_FLOPS_CEILING, 's', 0, F(roofline_flops_ceiling)},
    {"floor_ns", S_FLOOR, 'r', KF_VS_FLOOR, F(floor_ns)},
    {"speedup_first", S_SPEEDUP_FIRST, 'r', KF_VS_SPEEDUP_FIRST, F(speedup_first)},
    {"ci95_first", S_CI95_FIRST, 'p', KF_VS_CI95_FIRST, F(ci95_first)},
};
#undef F

/* launches_per_call has two places: the check's call report (before its kernels), and
 * the timing's (after the launch modes); a record holds one of them */
static int timed_launches(const kf_verdict_shape *s) { return (s->has & KF_VS_LAUNCH_MODE) != 0; }

static int read_names(struct kf_verdict *v, const json_t *x, kf_verdict_names *out) {
    out->n = 0;
    for (size_t i = 0; i < json_array_size(x); i++)
        if (!(out->s[out->n++] = pool_json(v, json_array_get(x, i)))) return -1;
    return 0;
}

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
    case 'N': break;
    case 'a':
        if (read_names(v, x, (kf_verdict_names *)f)) return -1;
        break;
    case 'm':
        if (!(((const char **)f)[0] = pool_json(v, json_object_get(x, "candidate"))) ||
            !(((const char **)f)[1] = pool_json(v, json_object_get(x, "baseline"))))
            return -1;
        break;
    case 'b': *(int *)f = json_is_true(x); break;
    case 'i': *(int64_t *)f = (int64_t)json_integer_value(x); break;
    case 'r': *(double *)f = json_number_value(x); break;
    case 'p':
        ((double *)f)[0] = json_number_value(json_array_get(x, 0));
        ((double *)f)[1] = json_number_value(json_array_get(x, 1));
        break;
    case 's':
        if (!(*(const char **)f = kf__verdict_pool(v, str))) return -1;
        break;
    }
    if (d->slot == S_CALL_LAUNCHES && timed_launches(s)) return S_TIMED_LAUNCHES;
    return d->slot;
}

/* A record's keys into s: each key s types sets its field, every other one is kept as an
 * extra after the last typed field before it (at: a slot, 0 for the first). */
static int merge_shape(struct kf_verdict *v, kf_verdict_shape *s, const json_t *frag, int at) {
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
    if (!(*out = calloc(json_array_size(a), sizeof **out))) return v->oom = 1, -1;
    size_t i;
    json_t *o;
    json_array_foreach((json_t *)a, i, o) {
        if (merge_shape(v, &(*out)[(*n)++], o, 0)) return -1;
    }
    return 0;
}

static int read_reasons(struct kf_verdict *v, const json_t *a) {
    if (!json_array_size(a)) return 0;
    if (!(v->reasons = calloc(json_array_size(a), sizeof *v->reasons))) return v->oom = 1, -1;
    v->capreasons = (int)json_array_size(a);
    size_t i;
    json_t *o;
    json_array_foreach((json_t *)a, i, o) {
        kf_verdict_reason *r = &v->reasons[v->nreasons++];
        const char *code = json_string_value(json_object_get(o, "code"));
        r->code = reason_code(code);
        if (code && r->code == KF_REASON_COUNT && !(r->code_word = kf__verdict_pool(v, code))) return -1;
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
    if (!(v->untimed = calloc(json_array_size(a), sizeof *v->untimed))) return v->oom = 1, -1;
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
    if (!(*out = calloc(json_object_size(o), sizeof **out))) return v->oom = 1, -1;
    const char *k;
    json_t *x;
    json_object_foreach((json_t *)o, k, x) {
        kf_verdict_param *p = &(*out)[(*n)++];
        if (!(p->name = kf__verdict_pool(v, k))) return -1;
        if (json_is_string(x) && !(p->str = pool_json(v, x))) return -1;
        p->ival = (int64_t)json_integer_value(x);
    }
    return 0;
}

/* the sandbox report's typed slots (fields of the verdict): the backend's first
 * (kf_sandbox_out: seccomp, present when has_seccomp, and the GPU modes, present when
 * true), then the sandbox's own */
#define F(m) offsetof(struct kf_verdict, m)
static const slot_def sandbox_slots[] = {
    {"seccomp", 1, 'b', 0, F(seccomp)},
    {"gpu_kernel_mode", 2, 't', 0, F(gpu_kernel_mode)},
    {"gpu_host_mode", 3, 't', 0, F(gpu_host_mode)},
    {"landlock_abi", 4, 'i', 0, F(landlock_abi)},
    {"mseal", 5, 'b', 0, F(mseal)},
    {"frozen_between_calls", 6, 'b', 0, F(frozen)},
    {"check_cpus", 7, 'i', 0, F(check_cpus)},
    {"parallel_call_cpus", 8, 'i', 0, F(parallel_call_cpus)},
    {"interleave_ns", 9, 'i', 0, F(interleave_ns)},
    {"race_calls", 10, 'i', 0, F(race_calls)},
};
#undef F
#define NSANDBOX (sizeof sandbox_slots / sizeof *sandbox_slots)

static int read_sandbox(struct kf_verdict *v, const json_t *frag) {
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
        if (d->off == offsetof(struct kf_verdict, seccomp)) v->has_seccomp = 1;
        at = d->slot;
    }
    return 0;
}

/* The backend's object reports (the ceilings, the resources and their records): each
 * typed field is present when its bit is in the report's has; a key the report does not
 * type, or of another type, is an extra after the field before it (at: the field's index
 * + 1, 0 for the first). */
#define F(m) offsetof(kf_verdict_ceilings, m)
static const slot_def ceil_fields[] = {
    {"bytes_per_s", 1, 'r', KF_VC_BYTES, F(bytes_per_s)},
    {"flops_per_s", 2, 'r', KF_VC_FLOPS, F(flops_per_s)},
    {"cores", 3, 'i', KF_VC_CORES, F(cores)},
    {"tensor_flops_per_s", 4, 'r', KF_VC_TENSOR, F(tensor_flops_per_s)},
    {"theoretical_bytes_per_s", 5, 'r', KF_VC_THEORY_BYTES, F(theoretical_bytes_per_s)},
    {"peak_flops_per_s", 6, 'r', KF_VC_PEAK, F(peak_flops_per_s)},
    {"l2_bytes", 7, 'i', KF_VC_L2, F(l2_bytes)},
    {"device", 8, 's', KF_VC_DEVICE, F(device)},
    {"uuid", 9, 's', KF_VC_UUID, F(uuid)},
    {"source", 10, 's', KF_VC_SOURCE, F(source)},
    {"error", 11, 's', KF_VC_ERROR, F(error)},
};
#undef F
#define F(m) offsetof(kf_verdict_resources, m)
static const slot_def res_fields[] = {
    {"arch", 1, 's', KF_VR_ARCH, F(arch)},
    {"kernels", 2, 'K', KF_VR_KERNELS, 0},
    {"launches", 3, 'L', KF_VR_LAUNCHES, 0},
    {"at", 4, 'z', KF_VR_AT, F(at)},
};
#undef F
#define F(m) offsetof(kf_verdict_kernel_res, m)
static const slot_def kernel_fields[] = {
    {"kernel", 1, 's', KF_VK_NAME, F(name)},
    {"registers", 2, 'i', KF_VK_REGISTERS, F(registers)},
    {"spill_store_bytes", 3, 'i', KF_VK_SPILL_STORE, F(spill_store_bytes)},
    {"spill_load_bytes", 4, 'i', KF_VK_SPILL_LOAD, F(spill_load_bytes)},
    {"static_smem_bytes", 5, 'i', KF_VK_STATIC_SMEM, F(static_smem_bytes)},
    {"local_bytes_per_thread", 6, 'i', KF_VK_LOCAL, F(local_bytes_per_thread)},
};
#undef F
#define F(m) offsetof(kf_verdict_launch_res, m)
static const slot_def launch_fields[] = {
    {"kernel", 1, 's', KF_VL_KERNEL, F(kernel)},
    {"grid", 2, '3', KF_VL_GRID, F(grid)},
    {"block", 3, '3', KF_VL_BLOCK, F(block)},
    {"dynamic_smem_bytes", 4, 'i', KF_VL_DYNAMIC_SMEM, F(dynamic_smem_bytes)},
    {"blocks_per_sm", 5, 'i', KF_VL_BLOCKS_PER_SM, F(blocks_per_sm)},
    {"occupancy", 6, 'r', KF_VL_OCCUPANCY, F(occupancy)},
};
#undef F
#define NFIELDS(d) (sizeof d / sizeof *d)

static int read_fields(struct kf_verdict *v, const slot_def *d, size_t n, void *base, unsigned *has,
                       kf_verdict_extras *x, const json_t *o);

/* a resource report's kernel ('K') or launch ('L') records */
static int read_records(struct kf_verdict *v, char type, const json_t *a, kf_verdict_resources *r) {
    size_t n = json_array_size(a);
    if (!n) return 0;
    int k = type == 'K';
    size_t sz = k ? sizeof *r->kernels : sizeof *r->launches;
    void *p = calloc(n, sz);
    if (!p) return v->oom = 1, -1;
    if (k) r->kernels = p;
    else r->launches = p;
    for (size_t i = 0; i < n; i++) {
        kf_verdict_kernel_res *kr = k ? &r->kernels[r->nkernels++] : NULL;
        kf_verdict_launch_res *lr = k ? NULL : &r->launches[r->nlaunches++];
        if (k ? read_fields(v, kernel_fields, NFIELDS(kernel_fields), kr, &kr->has, &kr->extra,
                            json_array_get(a, i))
              : read_fields(v, launch_fields, NFIELDS(launch_fields), lr, &lr->has, &lr->extra,
                            json_array_get(a, i)))
            return -1;
    }
    return 0;
}

static int read_fields(struct kf_verdict *v, const slot_def *d, size_t n, void *base, unsigned *has,
                       kf_verdict_extras *x, const json_t *o) {
    const char *k;
    json_t *val;
    int at = 0;
    json_object_foreach((json_t *)o, k, val) {
        const slot_def *f = find_slot(d, n, k, val);
        if (!f) {
            if (extra_add(v, x, at, k, val)) return -1;
            continue;
        }
        char *p = (char *)base + f->off;
        *has |= f->bit;
        switch (f->type) {
        case 'r': *(double *)p = json_number_value(val); break;
        case 'i': *(int64_t *)p = (int64_t)json_integer_value(val); break;
        case 's':
            if (!(*(const char **)p = pool_json(v, val))) return -1;
            break;
        case '3':
            for (size_t j = 0; j < 3; j++)
                ((int64_t *)p)[j] = (int64_t)json_integer_value(json_array_get(val, j));
            break;
        case 'z':
            if (read_sizes(v, val, (kf_verdict_sizes *)p)) return -1;
            break;
        case 'K':
        case 'L':
            if (read_records(v, f->type, val, base)) return -1;
            break;
        }
        at = f->slot;
    }
    return 0;
}

/* the build's declared libraries ("libraries": a list of names) */
static int read_build_libraries(struct kf_verdict *v, const json_t *a) {
    v->has_build_libraries = 1;
    if (!json_array_size(a)) return 0;
    if (!(v->build_libraries = calloc(json_array_size(a), sizeof *v->build_libraries))) return v->oom = 1, -1;
    for (size_t i = 0; i < json_array_size(a); i++) {
        const json_t *x = json_array_get(a, i);
        if (json_is_string(x) && !(v->build_libraries[v->nbuild_libraries++] = pool_json(v, x))) return -1;
    }
    return 0;
}

static int read_tools(struct kf_verdict *v, const json_t *o) {
    v->has_sanitizer = 1;
    if (!json_object_size(o)) return 0;
    if (!(v->tools = calloc(json_object_size(o), sizeof *v->tools))) return v->oom = 1, -1;
    const char *k;
    json_t *x;
    json_object_foreach((json_t *)o, k, x) {
        kf_verdict_tool *t = &v->tools[v->ntools++];
        json_t *w = json_object_get(x, "warnings"), *note = json_object_get(x, "note"),
               *rep = json_object_get(x, "report");
        if (!(t->tool = kf__verdict_pool(v, k))) return -1;
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
    v->libraries_late = v->has_resources;
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
    T_COMPILE, T_LAUNCH_MODE, T_BUILD_LIBRARIES, T_SANDBOX, T_LIBRARIES, T_RESOURCES, T_LIBRARIES_LATE, T_CANDIDATE_OUTPUT, T_SANITIZER,
    T_CHECK, T_BENCH_SHAPES, T_BASELINE, T_BASELINE_PARAMS, T_UNTIMED, T_CEILINGS, T_TIMING_CPUS,
    T_SPEEDUP, T_WINS, T_CEILINGS_LATE, T_REFERENCE_TIME, T_SECONDS, T_END
};
// clang-format on

/* One key of the document; its slot, 0 when it is not typed, -1 when out of memory. */
static int doc_key(struct kf_verdict *v, const char *k, const json_t *x) {
    if (!strcmp(k, "verdict") && json_is_string(x)) {
        const char *w = json_string_value(x);
        v->verdict = !strcmp(w, "accepted") ? KF_VERDICT_ACCEPTED : KF_VERDICT_REJECTED;
        if (strcmp(w, "accepted") && strcmp(w, "rejected") && !(v->verdict_word = kf__verdict_pool(v, w)))
            return -1;
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
    if (!strcmp(k, "launch_mode") && json_is_string(x))
        return (v->launch_mode = pool_json(v, x)) ? T_LAUNCH_MODE : -1;
    if (!strcmp(k, "libraries") && json_is_array(x))
        return read_build_libraries(v, x) ? -1 : T_BUILD_LIBRARIES;
    if (!strcmp(k, "sandbox") && json_is_object(x)) return read_sandbox(v, x) ? -1 : T_SANDBOX;
    if (!strcmp(k, "libraries_loaded") && (json_is_array(x) || json_is_null(x)))
        return read_libraries(v, x) ? -1 : v->libraries_late ? T_LIBRARIES_LATE : T_LIBRARIES;
    if (!strcmp(k, "resources") && json_is_object(x) && !v->has_resources) {
        kf_verdict_resources *r = &v->resources;
        v->has_resources = 1;
        return read_fields(v, res_fields, NFIELDS(res_fields), r, &r->has, &r->extra, x) ? -1 : T_RESOURCES;
    }
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
    if (!strcmp(k, "ceilings") && json_is_object(x) && !v->has_ceilings) {
        kf_verdict_ceilings *c = &v->ceilings;
        v->has_ceilings = 1;
        v->ceilings_late = v->has_timing_cpus;
        if (read_fields(v, ceil_fields, NFIELDS(ceil_fields), c, &c->has, &c->extra, x)) return -1;
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

/* A document's keys into v, as merge_shape does a record's */
static int merge_doc(struct kf_verdict *v, const json_t *frag, int at) {
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
    return merge_doc(v, doc, 0);
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
    free(v->build_libraries);
    kf__verdict_resources_free(&v->resources);
    extras_free(&v->ceilings.extra);
    json_decref(v->reference_time);
    kf_verdict_init(v);
}

/* ---- filling (the setters are in verdict_set.c) --------------------------------------- */

void kf_verdict_roof_keys(json_t *o, const kf_roof_out *r) {
    if (r->has & KF_ROOF_RATES) {
        json_object_set_new(o, "gflops", json_real(r->gflops));
        json_object_set_new(o, "gbytes_per_s", json_real(r->gbytes_per_s));
    }
    if (r->has & KF_ROOF_BASE_RATE)
        json_object_set_new(o, "baseline_gbytes_per_s", json_real(r->baseline_gbytes_per_s));
    if (r->has & KF_ROOF_FRACTION) json_object_set_new(o, "roofline_fraction", json_real(r->fraction));
    if (r->has & KF_ROOF_FLOOR) {
        if (r->flops_ceiling) json_object_set_new(o, "roofline_flops_ceiling", json_string(r->flops_ceiling));
        json_object_set_new(o, "floor_ns", json_real(r->floor_ns));
    }
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

static json_t *fields_json(const slot_def *d, size_t n, const void *base, unsigned has,
                           const kf_verdict_extras *x);

/* a resource report's kernel ('K') or launch ('L') records */
static json_t *records_json(char type, const kf_verdict_resources *r) {
    json_t *a = json_array();
    int k = type == 'K', n = k ? r->nkernels : r->nlaunches;
    for (int i = 0; a && i < n; i++) {
        const kf_verdict_kernel_res *kr = k ? &r->kernels[i] : NULL;
        const kf_verdict_launch_res *lr = k ? NULL : &r->launches[i];
        json_array_append_new(
            a, k ? fields_json(kernel_fields, NFIELDS(kernel_fields), kr, kr->has, &kr->extra)
                 : fields_json(launch_fields, NFIELDS(launch_fields), lr, lr->has, &lr->extra));
    }
    return a;
}

/* An object report's present fields, in its order, with its extras */
static json_t *fields_json(const slot_def *d, size_t n, const void *base, unsigned has,
                           const kf_verdict_extras *x) {
    json_t *o = json_object();
    if (o) extras_json(o, x, 0);
    for (size_t i = 0; o && i < n; i++) {
        const char *p = (const char *)base + d[i].off;
        if (has & d[i].bit) switch (d[i].type) {
            case 'r': json_object_set_new(o, d[i].key, json_real(*(const double *)p)); break;
            case 'i':
                json_object_set_new(o, d[i].key, json_integer((json_int_t) * (const int64_t *)p));
                break;
            case 's':
                if (*(const char *const *)p)
                    json_object_set_new(o, d[i].key, json_string(*(const char *const *)p));
                break;
            case '3': {
                const int64_t *t = (const int64_t *)p;
                json_object_set_new(
                    o, d[i].key, json_pack("[I,I,I]", (json_int_t)t[0], (json_int_t)t[1], (json_int_t)t[2]));
                break;
            }
            case 'z':
                json_object_set_new(o, d[i].key, kf_verdict_sizes_json((const kf_verdict_sizes *)p));
                break;
            case 'K':
            case 'L': json_object_set_new(o, d[i].key, records_json(d[i].type, base)); break;
            }
        extras_json(o, x, d[i].slot);
    }
    return o;
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
static json_t *names_json(const kf_verdict_names *n) {
    json_t *a = json_array();
    for (int i = 0; a && i < n->n; i++) json_array_append_new(a, json_string(n->s[i]));
    return a;
}

static void shape_slot_json(json_t *o, const kf_verdict_shape *s, const slot_def *d) {
    const char *f = (const char *)s + d->off;
    if (d->bit && !(s->has & d->bit)) return;
    if ((d->slot == S_CALL_LAUNCHES || d->slot == S_TIMED_LAUNCHES) &&
        timed_launches(s) != (d->slot == S_TIMED_LAUNCHES))
        return;
    switch (d->type) {
    case 'N': json_object_set_new(o, d->key, json_null()); break;
    case 'a': json_object_set_new(o, d->key, names_json((const kf_verdict_names *)f)); break;
    case 'm':
        json_object_set_new(o, d->key,
                            json_pack("{s:s, s:s}", "candidate", ((const char *const *)f)[0], "baseline",
                                      ((const char *const *)f)[1]));
        break;
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
        json_t *o = json_pack("{s:s, s:s?}", "code", r->code_word ? r->code_word : kf_reason_name(r->code),
                              "message", r->message);
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
        const slot_def *d = &sandbox_slots[i];
        const char *f = (const char *)v + d->off;
        if (d->type == 'i') set_int(o, d->key, *(const int64_t *)f);
        else if (d->type == 't') {
            if (*(const int *)f) json_object_set_new(o, d->key, json_true());
        } else if (d->off != offsetof(struct kf_verdict, seccomp) || v->has_seccomp)
            json_object_set_new(o, d->key, json_boolean(*(const int *)f));
        extras_json(o, &v->sandbox_extra, d->slot);
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
    case T_LAUNCH_MODE: set_str(o, "launch_mode", v->launch_mode); break;
    case T_BUILD_LIBRARIES:
        if (v->has_build_libraries) {
            json_t *a = json_array();
            for (int i = 0; a && i < v->nbuild_libraries; i++)
                json_array_append_new(a, json_string(v->build_libraries[i]));
            json_object_set_new(o, "libraries", a);
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
        if (v->has_resources)
            json_object_set_new(o, "resources",
                                fields_json(res_fields, NFIELDS(res_fields), &v->resources, v->resources.has,
                                            &v->resources.extra));
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
        if (v->has_ceilings && v->ceilings_late == (slot == T_CEILINGS_LATE))
            json_object_set_new(o, "ceilings",
                                fields_json(ceil_fields, NFIELDS(ceil_fields), &v->ceilings, v->ceilings.has,
                                            &v->ceilings.extra));
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

const char *kf_verdict_reason_code(const kf_verdict_reason *r) {
    if (r->code_word) return r->code_word;
    return (unsigned)r->code < KF_REASON_COUNT ? kf_reason_name(r->code) : NULL;
}

json_t *kf_verdict_ceilings_json(const kf_verdict_ceilings *c) {
    return fields_json(ceil_fields, NFIELDS(ceil_fields), c, c->has, &c->extra);
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
