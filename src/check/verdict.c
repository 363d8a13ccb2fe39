/*
 * verdict.c - the verdict's one pair of conversions (verdict.h): a document or a store
 * column into a struct kf_verdict, and the struct into the documents kforge writes from
 * it (the verdict's own fields, a node's shapes column, EXPORT.json's verification, the
 * Critic's re-timings). This is the only file that knows the verdict's key names; a
 * renamed key is a change here and in docs/cli.md, nowhere else.
 *
 * Reading is lenient, as the readers it replaced were: a missing field is absent (its
 * has bit clear, its pointer NULL, its number 0), a field of the wrong type too. The
 * strings a verdict holds are copies in its pool, freed with it.
 */
#include "verdict.h"

#include <math.h>
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
        if (!p) return NULL;
        v->pool = p, v->cappool = cap;
    }
    char *c = strdup(s);
    if (c) v->pool[v->npool++] = c;
    return c;
}

static const char *pool_json(struct kf_verdict *v, const json_t *j) {
    return json_is_string(j) ? pool_str(v, json_string_value(j)) : NULL;
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

/* A number field: its bit in *has and its value, when it is a number. */
static void num(const json_t *o, const char *key, unsigned bit, unsigned *has, double *out) {
    json_t *x = json_object_get(o, key);
    if (json_is_number(x)) *has |= bit, *out = json_number_value(x);
}

static void pair(const json_t *o, const char *key, unsigned bit, unsigned *has, double out[2]) {
    json_t *x = json_object_get(o, key);
    if (!json_is_array(x)) return;
    *has |= bit;
    out[0] = json_number_value(json_array_get(x, 0));
    out[1] = json_number_value(json_array_get(x, 1));
}

static int read_shape(struct kf_verdict *v, const json_t *o, kf_verdict_shape *s) {
    memset(s, 0, sizeof *s);
    if (read_sizes(v, json_object_get(o, "sizes"), &s->sizes)) return -1;
    const char *k = json_string_value(json_object_get(o, "kind"));
    s->kind = !k                      ? KF_VSHAPE_NO_KIND
              : !strcmp(k, "visible") ? KF_VSHAPE_VISIBLE
              : !strcmp(k, "hidden")  ? KF_VSHAPE_HIDDEN
                                      : KF_VSHAPE_EDGE;
    const char *st = json_string_value(json_object_get(o, "status"));
    s->status = !st                      ? KF_VSHAPE_NO_STATUS
                : !strcmp(st, "passed")  ? KF_VSHAPE_PASSED
                : !strcmp(st, "failed")  ? KF_VSHAPE_FAILED
                : !strcmp(st, "skipped") ? KF_VSHAPE_SKIPPED
                                         : KF_VSHAPE_OTHER;
    s->maximum = json_is_true(json_object_get(o, "maximum"));
    num(o, "max_abs_err", KF_VS_MAX_ABS_ERR, &s->has, &s->max_abs_err);
    num(o, "plain_abs_err", KF_VS_PLAIN_ABS_ERR, &s->has, &s->plain_abs_err);
    num(o, "speedup", KF_VS_SPEEDUP, &s->has, &s->speedup);
    pair(o, "ci95", KF_VS_CI95, &s->has, s->ci95);
    num(o, "candidate_ns", KF_VS_CANDIDATE_NS, &s->has, &s->candidate_ns);
    num(o, "baseline_ns", KF_VS_BASELINE_NS, &s->has, &s->baseline_ns);
    num(o, "roofline_fraction", KF_VS_ROOFLINE, &s->has, &s->roofline_fraction);
    num(o, "speedup_first", KF_VS_SPEEDUP_FIRST, &s->has, &s->speedup_first);
    pair(o, "ci95_first", KF_VS_CI95_FIRST, &s->has, s->ci95_first);
    json_t *w = json_object_get(o, "win"), *f = json_object_get(o, "fair");
    if (json_is_boolean(w)) s->has |= KF_VS_WIN, s->win = json_is_true(w);
    if (json_is_boolean(f)) s->has |= KF_VS_FAIR, s->fair = json_is_true(f);
    json_t *fr = json_object_get(o, "fair_reason");
    if (json_is_string(fr) && !(s->fair_reason = pool_json(v, fr))) return -1;
    return 0;
}

static int read_shapes(struct kf_verdict *v, const json_t *a, kf_verdict_shape **out, int *n) {
    if (!json_array_size(a)) return 0;
    if (!(*out = calloc(json_array_size(a), sizeof **out))) return -1;
    size_t i;
    json_t *o;
    json_array_foreach((json_t *)a, i, o) {
        if (read_shape(v, o, &(*out)[(*n)++])) return -1;
    }
    return 0;
}

static int read_reasons(struct kf_verdict *v, const json_t *a) {
    if (!json_array_size(a)) return 0;
    if (!(v->reasons = calloc(json_array_size(a), sizeof *v->reasons))) return -1;
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

static int read_doc(const json_t *doc, struct kf_verdict *v) {
    if (json_is_array(doc)) return read_shapes(v, doc, &v->shapes, &v->nshapes);
    if (!json_is_object(doc)) return -1;
    const char *w = json_string_value(json_object_get(doc, "verdict"));
    v->verdict = w && !strcmp(w, "accepted") ? KF_VERDICT_ACCEPTED : KF_VERDICT_REJECTED;
    if (read_reasons(v, json_object_get(doc, "reasons"))) return -1;
    json_t *chk = json_object_get(doc, "check");
    if (json_is_object(chk)) {
        v->has_check = 1;
        if (read_shapes(v, json_object_get(chk, "shapes"), &v->checked, &v->nchecked)) return -1;
    }
    if (read_shapes(v, json_object_get(doc, "shapes"), &v->shapes, &v->nshapes)) return -1;
    if (read_untimed(v, json_object_get(doc, "untimed_shapes"))) return -1;
    json_t *sp = json_object_get(doc, "speedup");
    if (json_is_number(sp)) v->has_speedup = 1, v->speedup = json_number_value(sp);
    json_t *t = json_object_get(doc, "task"), *fp = json_object_get(doc, "fingerprint");
    json_t *wh = json_object_get(doc, "when"), *log = json_object_get(json_object_get(doc, "compile"), "log");
    if ((json_is_string(t) && !(v->task = pool_json(v, t))) ||
        (json_is_string(fp) && !(v->fingerprint = pool_json(v, fp))) ||
        (json_is_string(wh) && !(v->when = pool_json(v, wh))) ||
        (json_is_string(log) && !(v->compile_log = pool_json(v, log))))
        return -1;
    return 0;
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

void kf_verdict_free(struct kf_verdict *v) {
    if (!v) return;
    for (int i = 0; i < v->npool; i++) free(v->pool[i]);
    free(v->pool);
    free(v->reasons);
    free(v->shapes);
    free(v->checked);
    free(v->untimed);
    kf_verdict_init(v);
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
        double *f[] = {&s[i].max_abs_err,   &s[i].plain_abs_err, &s[i].speedup,      &s[i].ci95[0],
                       &s[i].ci95[1],       &s[i].candidate_ns,  &s[i].baseline_ns,  &s[i].roofline_fraction,
                       &s[i].speedup_first, &s[i].ci95_first[0], &s[i].ci95_first[1]};
        for (size_t k = 0; k < sizeof f / sizeof *f; k++) *f[k] = kf_verdict_real(*f[k], d);
    }
}

void kf_verdict_round(struct kf_verdict *v, int digits) {
    round_shapes(v->shapes, v->nshapes, digits);
    round_shapes(v->checked, v->nchecked, digits);
    v->speedup = kf_verdict_real(v->speedup, digits);
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

static json_t *shape_json(const kf_verdict_shape *s) {
    json_t *o = json_object();
    if (!o) return NULL;
    json_object_set_new(o, "sizes", kf_verdict_sizes_json(&s->sizes));
    if (kind_names[s->kind]) json_object_set_new(o, "kind", json_string(kind_names[s->kind]));
    if (s->maximum) json_object_set_new(o, "maximum", json_true());
    if (status_names[s->status]) json_object_set_new(o, "status", json_string(status_names[s->status]));
    if (s->has & KF_VS_MAX_ABS_ERR) json_object_set_new(o, "max_abs_err", json_real(s->max_abs_err));
    if (s->has & KF_VS_PLAIN_ABS_ERR) json_object_set_new(o, "plain_abs_err", json_real(s->plain_abs_err));
    timing_json(o, s);
    if (s->fair_reason) json_object_set_new(o, "fair_reason", json_string(s->fair_reason));
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

static const char *verdict_name(kf_verdict v) { return v == KF_VERDICT_ACCEPTED ? "accepted" : "rejected"; }

json_t *kf_verdict_to_json(const struct kf_verdict *v) {
    json_t *o = json_pack("{s:s, s:o}", "verdict", verdict_name(v->verdict), "reasons", reasons_json(v, 1));
    if (!o) return NULL;
    if (v->task) json_object_set_new(o, "task", json_string(v->task));
    if (v->fingerprint) json_object_set_new(o, "fingerprint", json_string(v->fingerprint));
    if (v->when) json_object_set_new(o, "when", json_string(v->when));
    if (v->compile_log) json_object_set_new(o, "compile", json_pack("{s:s}", "log", v->compile_log));
    if (v->has_check)
        json_object_set_new(o, "check",
                            json_pack("{s:s, s:o}", "verdict", verdict_name(v->verdict), "shapes",
                                      shapes_json(v->checked, v->nchecked)));
    json_object_set_new(o, "shapes", shapes_json(v->shapes, v->nshapes));
    if (v->nuntimed) {
        json_t *u = json_array();
        for (int i = 0; u && i < v->nuntimed; i++)
            json_array_append_new(u, kf_verdict_sizes_json(&v->untimed[i]));
        json_object_set_new(o, "untimed_shapes", u);
    }
    if (v->has_speedup) json_object_set_new(o, "speedup", json_real(v->speedup));
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
    char *t = a ? json_dumps(a, JSON_COMPACT) : NULL;
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
