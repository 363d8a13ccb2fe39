/*
 * result.c - results: verdict, reasons, the JSON contract and the human summary.
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

static void sizes_text(json_t *sizes, kf_buf *b) {
    const char *k;
    json_t *v;
    int first = 1;
    json_object_foreach(sizes, k, v) {
        kf_buf_printf(b, "%s%s=%lld", first ? "" : " ", k, (long long)json_integer_value(v));
        first = 0;
    }
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

static char *result_text_raw(const kf_result *r) {
    kf_buf b;
    kf_buf_init(&b, 1u << 20);
    json_t *root = result_doc(r);
    if (!root) return b.p;
    const char *task = json_string_value(json_object_get(root, "task"));
    const char *cand = json_string_value(json_object_get(root, "candidate"));
    kf_buf_printf(
        &b, "%s %s%s%s: %s (%.2f s)\n", r->kind, task ? task : "", cand ? " " : "", cand ? cand : "",
        r->v.verdict == KF_VERDICT_ACCEPTED ? (!strcmp(r->kind, "validate") ? "VALID" : "ACCEPTED")
                                            : (!strcmp(r->kind, "validate") ? "REFUSED" : "REJECTED"),
        json_real_value(json_object_get(root, "seconds")));
    const char *when = json_string_value(json_object_get(root, "when"));
    if (when) kf_buf_printf(&b, "  claims only the shapes where: %s (kforge:when)\n", when);
    size_t i;
    json_t *o;
    json_array_foreach(json_object_get(root, "reasons"), i, o) {
        kf_buf_printf(&b, "  %s: %s", json_string_value(json_object_get(o, "code")),
                      json_string_value(json_object_get(o, "message")));
        json_t *sh = json_object_get(o, "shape");
        if (json_is_object(sh)) {
            kf_buf_printf(&b, " [at ");
            sizes_text(sh, &b);
            kf_buf_printf(&b, "]");
        }
        json_int_t c = json_integer_value(json_object_get(o, "count"));
        if (c > 1) kf_buf_printf(&b, " (%lld times in all)", (long long)c);
        kf_buf_printf(&b, "\n");
    }
    json_t *check = json_object_get(root, "check");
    json_t *shapes = json_object_get(check ? check : root, "shapes");
    if (json_is_array(shapes)) {
        int n[3] = {0, 0, 0}, passed = 0, total = 0;
        json_array_foreach(shapes, i, o) {
            const char *k = json_string_value(json_object_get(o, "kind"));
            const char *s = json_string_value(json_object_get(o, "status"));
            if (s && !strcmp(s, "skipped")) continue;
            total++;
            passed += s && !strcmp(s, "passed");
            n[k && !strcmp(k, "visible") ? 0 : k && !strcmp(k, "hidden") ? 1 : 2]++;
        }
        if (total)
            kf_buf_printf(&b, "  shapes: %d of %d passed (%d visible, %d hidden, %d edge)\n", passed, total,
                          n[0], n[1], n[2]);
        /* a visible shape outside the candidate's kforge:when domain is not checked: say so */
        json_array_foreach(shapes, i, o) {
            const char *k = json_string_value(json_object_get(o, "kind"));
            const char *s = json_string_value(json_object_get(o, "status"));
            if (!s || strcmp(s, "skipped") || !k || strcmp(k, "visible")) continue;
            kf_buf_printf(&b, "  skipped visible shape ");
            sizes_text(json_object_get(o, "sizes"), &b);
            kf_buf_printf(&b, ": outside the candidate's kforge:when domain (not checked, not timed)\n");
        }
        /* CUDA host mode: what the candidate's own host code used */
        const char *lm = json_string_value(json_object_get(root, "launch_mode"));
        if (lm && !strcmp(lm, "host")) {
            kf_buf_printf(&b, "  host mode: libraries [");
            json_t *l;
            size_t k;
            json_array_foreach(json_object_get(root, "libraries"), k, l)
                kf_buf_printf(&b, "%s%s", k ? ", " : "", json_string_value(l));
            json_t *s0 = json_array_get(shapes, 0);
            json_t *lp = json_object_get(s0, "launches_per_call");
            if (json_is_integer(lp))
                kf_buf_printf(
                    &b,
                    "], %lld launches and %lld graph launches per call (first shape), %zu library kernels\n",
                    (long long)json_integer_value(lp),
                    (long long)json_integer_value(json_object_get(s0, "graph_launches")),
                    json_array_size(json_object_get(s0, "library_kernels")));
            else kf_buf_printf(&b, "], launches not counted (no CUPTI)\n");
        }
        /* validate: the reference's time, at the visible shapes and its slowest */
        json_t *rt = json_object_get(root, "reference_time");
        if (json_is_object(rt)) {
            kf_buf_printf(&b, "  reference per call:");
            json_array_foreach(shapes, i, o) {
                const char *k = json_string_value(json_object_get(o, "kind"));
                if (!k || strcmp(k, "visible") || !json_object_get(o, "reference_ms")) continue;
                kf_buf_printf(&b, " ");
                sizes_text(json_object_get(o, "sizes"), &b);
                kf_buf_printf(&b, " %.2f ms,", json_number_value(json_object_get(o, "reference_ms")));
            }
            kf_buf_printf(&b, " slowest %.2f ms at ", json_number_value(json_object_get(rt, "slowest_ms")));
            sizes_text(json_object_get(rt, "at"), &b);
            kf_buf_printf(&b, " (%s)\n", json_string_value(json_object_get(rt, "kind")));
            const char *rw = json_string_value(json_object_get(rt, "warning"));
            if (rw) kf_buf_printf(&b, "  warning: %s\n", rw);
        }
        json_array_foreach(shapes, i, o) {
            const char *w = json_string_value(json_object_get(o, "warning"));
            if (!w) continue;
            kf_buf_printf(&b, "  warning at ");
            sizes_text(json_object_get(o, "sizes"), &b);
            kf_buf_printf(&b, ": %s\n", w);
        }
    }
    const char *tool;
    json_object_foreach(json_object_get(root, "sanitizer"), tool, o) {
        json_int_t errs = json_integer_value(json_object_get(o, "errors"));
        const char *note = json_string_value(json_object_get(o, "note"));
        if (json_is_true(json_object_get(o, "ran")) || errs > 0)
            kf_buf_printf(&b, "  sanitizer %s: %lld error%s (%lld calls, %.1f s)\n", tool, (long long)errs,
                          errs == 1 ? "" : "s", (long long)json_integer_value(json_object_get(o, "calls")),
                          json_number_value(json_object_get(o, "seconds")));
        else kf_buf_printf(&b, "  sanitizer %s: NOT RUN (%s)\n", tool, note ? note : "?");
    }
    shapes = json_object_get(root, "shapes");
    const char *baseline = json_string_value(json_object_get(root, "baseline"));
    if (check && json_is_array(shapes) && baseline) /* which file the speedups are against */
        kf_buf_printf(&b, "  baseline: %s\n",
                      strcmp(baseline, "reference") ? baseline : "the task's reference");
    if (check && json_is_array(shapes)) {
        json_array_foreach(shapes, i, o) {
            char c[32], bl[32];
            fmt_ns(json_number_value(json_object_get(o, "candidate_ns")), c, sizeof c);
            fmt_ns(json_number_value(json_object_get(o, "baseline_ns")), bl, sizeof bl);
            kf_buf_printf(&b, "  ");
            sizes_text(json_object_get(o, "sizes"), &b);
            kf_buf_printf(&b, ": candidate %s, baseline %s, speedup %.3fx +/- %.3f%s", c, bl,
                          json_number_value(json_object_get(o, "speedup")),
                          json_number_value(json_object_get(o, "noise")),
                          json_is_false(json_object_get(o, "fair"))    ? " (NOT a fair comparison)"
                          : json_is_true(json_object_get(o, "win"))    ? " (win)"
                          : json_is_true(json_object_get(o, "slower")) ? " (slower)"
                                                                       : " (within noise)");
            json_t *lm = json_object_get(o, "launch_mode");
            if (json_is_object(lm))
                kf_buf_printf(&b, ", launched %s vs %s", json_string_value(json_object_get(lm, "candidate")),
                              json_string_value(json_object_get(lm, "baseline")));
            json_t *fr = json_object_get(o, "fair_reason"), *fn = json_object_get(o, "fair_note");
            if (json_is_string(fr)) kf_buf_printf(&b, "\n    unfair: %s", json_string_value(fr));
            if (json_is_string(fn)) kf_buf_printf(&b, "\n    note: %s", json_string_value(fn));
            json_t *rf = json_object_get(o, "roofline_fraction");
            if (json_is_number(rf)) kf_buf_printf(&b, ", %.0f%% of roofline", 100 * json_number_value(rf));
            kf_buf_printf(&b, "\n");
        }
        if (kf_result_speedup(r) > 0) kf_buf_printf(&b, "  geomean speedup %.3fx\n", kf_result_speedup(r));
        json_t *un = json_object_get(root, "untimed_shapes");
        json_array_foreach(un, i, o) {
            kf_buf_printf(&b, "  not timed (outside a kforge:when domain): ");
            sizes_text(o, &b);
            kf_buf_printf(&b, "\n");
        }
    }
    json_decref(root);
    return b.p;
}

void kf_result_free(kf_result *r) {
    if (!r) return;
    kf_verdict_free(&r->v);
    json_decref(r->root);
    free(r);
}
