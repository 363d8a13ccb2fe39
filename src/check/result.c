/*
 * result.c - results: verdict, reasons, the JSON contract and the human summary.
 *
 * The human summary (kf_result_text) reads the typed verdict, r->v, field by field, as
 * every in-process reader does, the backend's reports included (a build's launch mode
 * and libraries, a shape's launch counts, library kernels and launch modes); it knows no
 * key of the document.
 */
#define _GNU_SOURCE
#include "result.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void defang_text(char *p, int keep_nl);

static const char *const reason_names[] = {
#define KF_X(n, s) s,
    KF_REASON_MAP(KF_X)
#undef KF_X
};

const char *kf_reason_name(kf_reason r) {
    return (unsigned)r < KF_REASON_COUNT ? reason_names[r] : "unknown";
}

void kf_opts_init(kf_opts *o) {
    memset(o, 0, sizeof *o);
    o->call_timeout_s = 10;
    o->cpu_limit_s = 60;
    o->compile_timeout_s = 60;
    o->mem_limit = 2ull << 30;
    o->buffer_cap = 1ull << 30;
    o->hidden_count = -1;
    o->bench_min_time_s = 0.3;
    o->bench_min_runs = 15;
    o->bench_max_runs = 400;
    o->win_floor = 0.05;
}

kf_result *kf_result_new(const char *kind) {
    kf_result *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    snprintf(r->kind, sizeof r->kind, "%s", kind);
    kf_verdict_init(&r->v);
    r->v.verdict = KF_VERDICT_ACCEPTED;
    r->v.has_reasons = 1;
    return r;
}

void kf_result_reject(kf_result *r, kf_reason code, const kf_verdict_sizes *shape, const char *fmt, ...) {
    r->v.verdict = KF_VERDICT_REJECTED;
    for (int i = 0; i < r->v.nreasons; i++)
        if (r->v.reasons[i].code == code) {
            r->v.reasons[i].count++;
            return;
        }
    if (r->v.nreasons == KF_MAX_REASONS) return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    defang_text(msg, 0); /* one line, no control bytes: it may quote the candidate */
    kf_verdict_add_reason(&r->v, code, shape, msg);
}

int kf_result_seal(kf_result *r) {
    json_decref(r->root);
    r->root = kf_verdict_to_json(&r->v);
    return r->root && !r->v.oom ? 0 : -1;
}

kf_verdict kf_result_verdict(const kf_result *r) { return r->v.verdict; }
int kf_result_nreasons(const kf_result *r) { return r->v.nreasons; }
kf_reason kf_result_reason(const kf_result *r, int i) {
    return i >= 0 && i < r->v.nreasons ? r->v.reasons[i].code : KF_REASON_COUNT;
}
double kf_result_speedup(const kf_result *r) { return r->v.has_speedup ? r->v.speedup : 0; }

/* The document: the sealed one, or (a result still being filled) one made now. A new
 * reference; NULL when out of memory. */
static json_t *result_doc(const kf_result *r) {
    return r->root ? json_incref(r->root) : kf_verdict_to_json(&r->v);
}

char *kf_result_json(const kf_result *r) {
    json_t *d = result_doc(r);
    char *t =
        d ? kf__json_dumps(d, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(KF_RESULT_DIGITS))
          : NULL;
    json_decref(d);
    return t;
}

int kf_result_verdict_typed(const kf_result *r, struct kf_verdict *v) {
    json_t *d = result_doc(r);
    int rc = kf_verdict_from_json(d, v);
    json_decref(d);
    kf_verdict_round(v, KF_RESULT_DIGITS);
    return rc;
}

/* A copy of j whose reals are what a reader of kf_result_json's text gets back. */
static json_t *rounded(const json_t *j) {
    if (json_is_real(j)) return json_real(kf_verdict_real(json_real_value(j), KF_RESULT_DIGITS));
    if (json_is_array(j)) {
        json_t *a = json_array();
        size_t i;
        json_t *x;
        json_array_foreach((json_t *)j, i, x) json_array_append_new(a, rounded(x));
        return a;
    }
    if (json_is_object(j)) {
        json_t *o = json_object();
        const char *k;
        json_t *x;
        json_object_foreach((json_t *)j, k, x) json_object_set_new(o, k, rounded(x));
        return o;
    }
    return json_incref((json_t *)j);
}

char *kf_result_json_stored(const kf_result *r) {
    json_t *d = result_doc(r), *c = d ? rounded(d) : NULL;
    char *t = c ? kf__json_dumps(c, JSON_COMPACT) : NULL;
    json_decref(c);
    json_decref(d);
    return t;
}

static void fmt_ns(double ns, char *buf, size_t n) {
    if (ns >= 1e9) snprintf(buf, n, "%.3f s", ns / 1e9);
    else if (ns >= 1e6) snprintf(buf, n, "%.3f ms", ns / 1e6);
    else if (ns >= 1e3) snprintf(buf, n, "%.2f us", ns / 1e3);
    else snprintf(buf, n, "%.0f ns", ns);
}

static void sizes_text(const kf_verdict_sizes *s, kf_buf *b) {
    for (int i = 0; i < s->n; i++)
        kf_buf_printf(b, "%s%s=%lld", i ? " " : "", s->name[i], (long long)s->v[i]);
}

/* Text from compilers and candidates reaches terminals: replace C0 controls (newlines
 * too unless keep_nl), DEL, C1 controls (U+0080-U+009F, "\xc2\x80".."\xc2\x9f") and the
 * bidirectional overrides (U+202A-U+202E, U+2066-U+2069) with '?', in place. */
static void defang_text(char *p, int keep_nl) {
    for (unsigned char *u = (unsigned char *)p; u && *u; u++) {
        if ((*u < 0x20 && !(keep_nl && *u == '\n')) || *u == 0x7f) {
            *u = '?';
        } else if (u[0] == 0xc2 && u[1] >= 0x80 && u[1] <= 0x9f) {
            u[0] = '?', u[1] = '?';
            u++;
        } else if (u[0] == 0xe2 && u[1] && u[2] &&
                   ((u[1] == 0x80 && u[2] >= 0xaa && u[2] <= 0xae) ||
                    (u[1] == 0x81 && u[2] >= 0xa6 && u[2] <= 0xa9))) {
            u[0] = u[1] = u[2] = '?';
            u += 2;
        }
    }
}

static void defang(char *p) { defang_text(p, 1); }

static char *result_text_raw(const kf_result *r);

char *kf_result_text(const kf_result *r) {
    char *t = result_text_raw(r);
    defang(t);
    return t;
}

/* A field of a shape record as its document has it: 0 when the record lacks it. */
#define SHAPE_REAL(s, bit, f) (((s)->has & (bit)) ? (s)->f : 0.0)
#define SHAPE_FLAG(s, bit, f) (((s)->has & (bit)) && (s)->f)

/* The CUDA host mode's line: what the candidate's own host code used (the backend's
 * keys: the document's launch_mode and libraries, the first shape's launch counts). */
static void host_mode_text(const struct kf_verdict *v, const kf_verdict_shape *s0, kf_buf *b) {
    if (!v->launch_mode || strcmp(v->launch_mode, "host")) return;
    kf_buf_printf(b, "  host mode: libraries [");
    for (int k = 0; k < v->nbuild_libraries; k++)
        kf_buf_printf(b, "%s%s", k ? ", " : "", v->build_libraries[k]);
    if (s0 && (s0->has & KF_VS_LAUNCHES))
        kf_buf_printf(b,
                      "], %lld launches and %lld graph launches per call (first shape), %d library kernels\n",
                      (long long)s0->launches_per_call, (long long)s0->graph_launches, s0->library_kernels.n);
    else kf_buf_printf(b, "], launches not counted (no CUPTI)\n");
}

static char *result_text_raw(const kf_result *r) {
    kf_buf b;
    kf_buf_init(&b, 1u << 20);
    const struct kf_verdict *v = &r->v;
    const char *task = v->task, *cand = v->candidate;
    kf_buf_printf(&b, "%s %s%s%s: %s (%.2f s)\n", r->kind, task ? task : "", cand ? " " : "",
                  cand ? cand : "",
                  v->verdict == KF_VERDICT_ACCEPTED ? (!strcmp(r->kind, "validate") ? "VALID" : "ACCEPTED")
                                                    : (!strcmp(r->kind, "validate") ? "REFUSED" : "REJECTED"),
                  v->has_seconds ? v->seconds : 0.0);
    if (v->has_when && v->when)
        kf_buf_printf(&b, "  claims only the shapes where: %s (kforge:when)\n", v->when);
    for (int i = 0; v->has_reasons && i < v->nreasons; i++) {
        const kf_verdict_reason *o = &v->reasons[i];
        kf_buf_printf(&b, "  %s: %s", kf_reason_name(o->code), o->message);
        if (o->has_shape) {
            kf_buf_printf(&b, " [at ");
            sizes_text(&o->shape, &b);
            kf_buf_printf(&b, "]");
        }
        if (o->count > 1) kf_buf_printf(&b, " (%lld times in all)", (long long)o->count);
        kf_buf_printf(&b, "\n");
    }
    int nshapes;
    const kf_verdict_shape *shapes = kf_verdict_check_shapes(v, &nshapes);
    if (v->has_check || v->has_shapes) {
        int n[3] = {0, 0, 0}, passed = 0, total = 0;
        for (int i = 0; i < nshapes; i++) {
            const kf_verdict_shape *o = &shapes[i];
            if (o->status == KF_VSHAPE_SKIPPED) continue;
            total++;
            passed += o->status == KF_VSHAPE_PASSED;
            n[o->kind == KF_VSHAPE_VISIBLE ? 0 : o->kind == KF_VSHAPE_HIDDEN ? 1 : 2]++;
        }
        if (total)
            kf_buf_printf(&b, "  shapes: %d of %d passed (%d visible, %d hidden, %d edge)\n", passed, total,
                          n[0], n[1], n[2]);
        /* a visible shape outside the candidate's kforge:when domain is not checked: say so */
        for (int i = 0; i < nshapes; i++) {
            const kf_verdict_shape *o = &shapes[i];
            if (o->status != KF_VSHAPE_SKIPPED || o->kind != KF_VSHAPE_VISIBLE) continue;
            kf_buf_printf(&b, "  skipped visible shape ");
            sizes_text(&o->sizes, &b);
            kf_buf_printf(&b, ": outside the candidate's kforge:when domain (not checked, not timed)\n");
        }
        host_mode_text(v, nshapes ? &shapes[0] : NULL, &b);
        /* validate: the reference's time, at the visible shapes and its slowest */
        kf_verdict_reftime rt;
        if (kf_verdict_reference_time(v, &rt)) {
            kf_buf_printf(&b, "  reference per call:");
            for (int i = 0; i < nshapes; i++) {
                const kf_verdict_shape *o = &shapes[i];
                if (o->kind != KF_VSHAPE_VISIBLE || !(o->has & KF_VS_REFERENCE_MS)) continue;
                kf_buf_printf(&b, " ");
                sizes_text(&o->sizes, &b);
                kf_buf_printf(&b, " %.2f ms,", o->reference_ms);
            }
            kf_buf_printf(&b, " slowest %.2f ms at ", rt.slowest_ms);
            sizes_text(&rt.at, &b);
            kf_buf_printf(&b, " (%s)\n", rt.kind);
            if (rt.warning) kf_buf_printf(&b, "  warning: %s\n", rt.warning);
        }
        for (int i = 0; i < nshapes; i++) {
            const kf_verdict_shape *o = &shapes[i];
            if (!o->warning) continue;
            kf_buf_printf(&b, "  warning at ");
            sizes_text(&o->sizes, &b);
            kf_buf_printf(&b, ": %s\n", o->warning);
        }
    }
    for (int i = 0; v->has_sanitizer && i < v->ntools; i++) {
        const kf_verdict_tool *o = &v->tools[i];
        if (o->ran || o->errors > 0)
            kf_buf_printf(&b, "  sanitizer %s: %lld error%s (%lld calls, %.1f s)\n", o->tool,
                          (long long)o->errors, o->errors == 1 ? "" : "s", (long long)o->calls, o->seconds);
        else kf_buf_printf(&b, "  sanitizer %s: NOT RUN (%s)\n", o->tool, o->note ? o->note : "?");
    }
    if (v->has_check && v->has_shapes && v->baseline) /* which file the speedups are against */
        kf_buf_printf(&b, "  baseline: %s\n",
                      strcmp(v->baseline, "reference") ? v->baseline : "the task's reference");
    if (v->has_check && v->has_shapes) {
        for (int i = 0; i < v->nshapes; i++) {
            const kf_verdict_shape *o = &v->shapes[i];
            char c[32], bl[32];
            fmt_ns(SHAPE_REAL(o, KF_VS_CANDIDATE_NS, candidate_ns), c, sizeof c);
            fmt_ns(SHAPE_REAL(o, KF_VS_BASELINE_NS, baseline_ns), bl, sizeof bl);
            kf_buf_printf(&b, "  ");
            sizes_text(&o->sizes, &b);
            kf_buf_printf(&b, ": candidate %s, baseline %s, speedup %.3fx +/- %.3f%s", c, bl,
                          SHAPE_REAL(o, KF_VS_SPEEDUP, speedup), SHAPE_REAL(o, KF_VS_NOISE, noise),
                          (o->has & KF_VS_FAIR) && !o->fair     ? " (NOT a fair comparison)"
                          : SHAPE_FLAG(o, KF_VS_WIN, win)       ? " (win)"
                          : SHAPE_FLAG(o, KF_VS_SLOWER, slower) ? " (slower)"
                                                                : " (within noise)");
            if (o->has & KF_VS_LAUNCH_MODE)
                kf_buf_printf(&b, ", launched %s vs %s", o->candidate_launch_mode, o->baseline_launch_mode);
            if (o->fair_reason) kf_buf_printf(&b, "\n    unfair: %s", o->fair_reason);
            if (o->fair_note) kf_buf_printf(&b, "\n    note: %s", o->fair_note);
            if (o->has & KF_VS_ROOFLINE)
                kf_buf_printf(&b, ", %.0f%% of roofline", 100 * o->roofline_fraction);
            kf_buf_printf(&b, "\n");
        }
        if (kf_result_speedup(r) > 0) kf_buf_printf(&b, "  geomean speedup %.3fx\n", kf_result_speedup(r));
        for (int i = 0; v->has_untimed && i < v->nuntimed; i++) {
            kf_buf_printf(&b, "  not timed (outside a kforge:when domain): ");
            sizes_text(&v->untimed[i], &b);
            kf_buf_printf(&b, "\n");
        }
    }
    return b.p;
}

void kf_result_free(kf_result *r) {
    if (!r) return;
    kf_verdict_free(&r->v);
    json_decref(r->root);
    free(r);
}
