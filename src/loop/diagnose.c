/*
 * diagnose.c - why a node failed, in a fixed vocabulary of root-cause classes, and the
 * constraint a failure teaches when it generalises (docs/run.md "Failure classes and
 * constraints").
 *
 * Input is what the checker recorded on the node: its state, its reasons, the verdict
 * JSON (reason messages with the first wrong element's index, per-shape status and
 * errors with each shape's kind: visible, hidden or edge; the compiler's log) and the
 * note. The classes:
 *   compile/syntax | resource_limit | unknown_symbol | other   from the compiler's log;
 *   crash/signal (the signal's name) | crash/cuda_error (the CUDA error's name);
 *   (checked in this order)
 *   numeric/accumulation  the error grows with the problem size: rank correlation of
 *                     size and max_abs_err >= 0.8 over at least 3 failed shapes, errors
 *                     spanning 100x or more, the largest shape failing (wrong_result
 *                     only: a tail bug's error does not grow);
 *   numeric/boundary  only the tail of an output was wrong, or the failing shapes are
 *                     exactly those with a size not divisible by some 2^k the passing
 *                     ones all are divisible by (the sizes the smallest such 2^k
 *                     names, at the largest 2^k that still separates on them);
 *   numeric/stress_inputs  the first failing call was not the plain one: the shape passed
 *                     its inputs of the declared distributions and failed on the
 *                     checker's stress inputs (spikes, rescaled or offset values, the
 *                     maximum shape's extremes; "call K of N" in the message), so its
 *                     sizes are handled and its values are not (a one-pass variance
 *                     under a large mean, an exp without the max);
 *   numeric/overfit   every visible shape passed, hidden or edge ones failed on their
 *                     plain inputs;
 *   numeric/other, memory/out_of_bounds, timeout, sandbox_violation, integrity
 *   (stale, modified inputs, nondeterminism, forged timing), evaluation_failed (the
 *   evaluation itself died), agent/no_candidate, other.
 * A diagnosis is a "diagnosis" event of the node; a constraint goes to the store's
 * constraints table (scope: the run, or the children of the failed node's parent),
 * once per text. It is evidence read off one verdict, not a proof: the note says what
 * it was read from.
 */
#define _GNU_SOURCE
#include "diagnose.h"
#include "loop.h"

#include "../search/search.h"

#include <ctype.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const class_names[] = {
#define KF_X(id, name) name,
    KF_DIAG_CLASS_MAP(KF_X)
#undef KF_X
};

const char *kf_diag_class_name(kf_diag_class c) {
    return c >= 0 && c < KF_DIAG_COUNT ? class_names[c] : "unknown";
}

/* ---- reading a verdict ----------------------------------------------------------------- */

#define MAX_SHAPES 64

typedef struct {
    const kf_verdict_sizes *sizes; /* borrowed */
    int kind;                      /* 0 visible, 1 hidden, 2 edge */
    int failed;
    double volume; /* product of the sizes */
    double err;    /* max_abs_err */
} shape_r;

static int read_shapes(const struct kf_verdict *v, shape_r *out) {
    int n = 0, ns;
    const kf_verdict_shape *sv = kf_verdict_check_shapes(v, &ns);
    for (int i = 0; i < ns; i++) {
        const kf_verdict_shape *s = &sv[i];
        if ((s->status != KF_VSHAPE_PASSED && s->status != KF_VSHAPE_FAILED) || n == MAX_SHAPES) continue;
        /* the maximum-sizes shape ran on spiked or extreme inputs: its error's size says
         * what the inputs were, not how it grows with the problem (with it, a kernel wrong
         * by half of y everywhere read as an accumulation error) */
        if (s->maximum) continue;
        shape_r *r = &out[n++];
        r->sizes = &s->sizes;
        r->kind = s->kind == KF_VSHAPE_VISIBLE ? 0 : s->kind == KF_VSHAPE_HIDDEN ? 1 : 2;
        r->failed = s->status == KF_VSHAPE_FAILED;
        r->volume = 1;
        for (int k = 0; k < s->sizes.n; k++) r->volume *= (double)s->sizes.v[k];
        /* the plain call's error when recorded: spiked calls' errors grow with the number
         * of spikes, i.e. with the size, whatever the bug */
        r->err = s->has & KF_VS_PLAIN_ABS_ERR ? s->plain_abs_err : s->max_abs_err;
    }
    return n;
}

/* numeric/boundary by divisibility: the size names and d = 2^k (2..256) such that every
 * passing shape has those sizes divisible by d and every failing shape has one of them
 * not divisible. The smallest such d decides which sizes (a larger one can pin a size
 * that merely happens to be a large power of two in the passing shapes); then d grows
 * while those same sizes still separate the shapes, because the constraint it becomes
 * ("must handle n not divisible by d") is then the strictest the evidence allows: a kernel
 * that handles only multiples of 8 fails on a multiple of 4 too, but the shapes drawn may
 * not show it (the smallest d said 4 there). 0 with d and names set, -1 when none
 * separates. */
static int divisor_split(const shape_r *s, int n, int *d_out, char *names, size_t nn) {
    int npass = 0, nfail = 0;
    for (int i = 0; i < n; i++) s[i].failed ? nfail++ : npass++;
    if (!npass || nfail < 2) return -1;
    for (int d = 2; d <= 256; d *= 2) {
        char qual[16][64];
        int nq = 0;
        for (int q0 = 0; q0 < s[0].sizes->n; q0++) { /* every shape has the task's sizes */
            const char *key = s[0].sizes->name[q0];
            int ok = 1;
            for (int i = 0; i < n && ok; i++)
                if (!s[i].failed) ok = kf_verdict_size(s[i].sizes, key) % d == 0;
            if (ok && nq < 16) snprintf(qual[nq++], sizeof qual[0], "%s", key);
        }
        if (!nq) continue;
        int all = 1;
        for (int i = 0; i < n && all; i++) {
            if (!s[i].failed) continue;
            int off = 0;
            for (int q = 0; q < nq; q++) off |= kf_verdict_size(s[i].sizes, qual[q]) % d != 0;
            all = off;
        }
        if (!all) continue;
        size_t k = 0;
        names[0] = 0;
        for (int q = 0; q < nq && k < nn; q++) {
            /* name only the sizes some failing shape has off the multiple */
            int used = 0;
            for (int i = 0; i < n && !used; i++)
                used = s[i].failed && kf_verdict_size(s[i].sizes, qual[q]) % d != 0;
            if (used) k += (size_t)snprintf(names + k, nn - k, "%s%s", k ? " or " : "", qual[q]);
        }
        /* the same sizes, a larger multiple, while they still separate */
        int dd = d;
        for (int e = 2 * d; e <= 256; e *= 2) {
            int ok = 1;
            for (int i = 0; i < n && ok; i++) {
                int off = 0;
                for (int q = 0; q < nq; q++) {
                    int named = 0; /* only the sizes named above */
                    for (int i2 = 0; i2 < n && !named; i2++)
                        named = s[i2].failed && kf_verdict_size(s[i2].sizes, qual[q]) % d != 0;
                    if (!named) continue;
                    long long v = kf_verdict_size(s[i].sizes, qual[q]);
                    if (!s[i].failed && v % e) ok = 0;
                    off |= v % e != 0;
                }
                if (s[i].failed && !off) ok = 0;
            }
            if (!ok) break;
            dd = e;
        }
        *d_out = dd;
        return 0;
    }
    return -1;
}

/* "K of N elements ... (first X[i]; ...": 1 when only the last K elements of a 1-D
 * output were wrong (K < N, i >= N - K), with the numbers. */
static int tail_only(const char *msg, long long *k, long long *nn, long long *first) {
    if (!msg || sscanf(msg, "%lld of %lld elements", k, nn) != 2) return 0;
    const char *f = strstr(msg, "(first ");
    const char *br = f ? strchr(f, '[') : NULL;
    if (!br || sscanf(br, "[%lld]", first) != 1) return 0;
    const char *close = strchr(br, ']');
    if (!close || close[1] == '[') return 0; /* a multi-dimensional index */
    return *k < *nn && *first >= *nn - *k;
}

/* How surely the error grows with the size, over the failed shapes: of the pairs whose
 * volumes differ by at least 4x, the fraction where the larger shape has the larger
 * error (*pairs: how many such pairs). Pairs of nearby sizes are left out: there a
 * low-precision sum's error is a random walk (an fp16 sum at 2,432 elements was off by
 * 2.4, at 1,183 by 5.7), and a rank correlation over every pair read such draws as "no
 * growth" (0.83, once under 0.8). *span: the largest error over the smallest, 0 when any
 * failed shape's plain call was exact (that shape failed on other inputs: a wrong edge
 * tile, not an accumulation; an accumulation's error grows by orders of magnitude). */
static double growth(const shape_r *s, int n, int *pairs, double *span) {
    double lo = INFINITY, hi = 0;
    int m = 0, up = 0, t = 0;
    for (int i = 0; i < n; i++) /* shapes of under 16 elements: too short to accumulate anything */
        if (s[i].failed && s[i].volume >= 16) m++, lo = fmin(lo, s[i].err), hi = fmax(hi, s[i].err);
    *span = m && lo > 0 ? hi / lo : 0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            if (!s[i].failed || !s[j].failed || s[i].volume < 16 || s[j].volume < 4 * s[i].volume) continue;
            t++;
            up += s[j].err > s[i].err;
        }
    *pairs = t;
    return t ? (double)up / t : 0;
}

/* The first error line of the log holding pats[0] (case-insensitive), else pats[1], ...:
 * the patterns are in order of preference ("undefined reference" before an undeclared
 * name). Only error lines count (a warning that a write "exceeds" a buffer is not why a
 * build failed): lines with "error", "fatal" or the linker's "undefined reference". Into
 * out. */
static int find_line(const char *log, const char *const *pats, char *out, size_t n) {
    for (int i = 0; pats[i]; i++)
        for (const char *p = log; p && *p;) {
            const char *e = strchr(p, '\n');
            size_t len = e ? (size_t)(e - p) : strlen(p);
            char line[512];
            snprintf(line, sizeof line, "%.*s", (int)(len < 511 ? len : 511), p);
            int err = strcasestr(line, "error") || strcasestr(line, "fatal") ||
                      strcasestr(line, "undefined reference");
            if (err && strcasestr(line, pats[i])) {
                snprintf(out, n, "%s", line);
                return 1;
            }
            p = e ? e + 1 : NULL;
        }
    return 0;
}

/* The quoted name after needle in s ('x', `x', "x", 'x'), into out. */
static void quoted_after(const char *s, const char *needle, char *out, size_t n) {
    const char *p = s ? strcasestr(s, needle) : NULL;
    out[0] = 0;
    if (!p) return;
    p += strlen(needle);
    while (*p && !strchr("'`\"", *p) && strncmp(p, "\xe2\x80\x98", 3)) p++;
    if (!*p) return;
    p += !strncmp(p, "\xe2\x80\x98", 3) ? 3 : 1;
    size_t k = 0;
    while (p[k] && (isalnum((unsigned char)p[k]) || p[k] == '_') && k + 1 < n) k++;
    snprintf(out, n, "%.*s", (int)k, p);
}

static void diag_compile(const kf_node *n, const struct kf_verdict *v, const char *msg, kf_diag *d) {
    const char *log = v->compile_log;
    if (!log) log = msg ? msg : "";
    static const char *const resource[] = {"too much shared",
                                           "shared memory",
                                           "too many resources",
                                           "registers",
                                           "exceeds maximum object size",
                                           "is too large",
                                           "out of memory",
                                           "exceeds",
                                           NULL};
    static const char *const symbol[] = {"undefined reference", "undeclared",           "is undefined",
                                         "unknown type name",   "implicit declaration", NULL};
    static const char *const syntax[] = {"expected",     "syntax error",        "stray",
                                         "unterminated", "missing terminating", NULL};
    static const char *const any[] = {"error", "fatal", NULL};
    char line[512];
    if (find_line(log, resource, line, sizeof line)) {
        d->cls = KF_DIAG_COMPILE_RESOURCE;
        snprintf(d->note, sizeof d->note, "the compiler refused a resource: %s", line);
        /* "(0x10400 bytes, 0xc000 max)": ptxas's figures for shared memory */
        const char *b = strstr(line, " bytes, ");
        unsigned long long used = 0, max = 0;
        const char *o = b ? strrchr(line, '(') : NULL;
        if (o && sscanf(o, "(%llx bytes, %llx max)", &used, &max) == 2 && max)
            snprintf(d->constraint, sizeof d->constraint,
                     "shared memory above %llu bytes per block fails to compile (node %lld asked for %llu)",
                     max, (long long)n->id, used);
        else snprintf(d->constraint, sizeof d->constraint, "stay within the compiler's limits: %.300s", line);
        snprintf(d->detail, sizeof d->detail, "%s",
                 strcasestr(line, "shared")     ? "shared_memory"
                 : strcasestr(line, "register") ? "registers"
                                                : "size");
    } else if (find_line(log, symbol, line, sizeof line)) {
        d->cls = KF_DIAG_COMPILE_SYMBOL;
        quoted_after(line, strcasestr(line, "undefined reference") ? "undefined reference to" : "", d->detail,
                     sizeof d->detail);
        if (!d->detail[0]) quoted_after(line, "identifier", d->detail, sizeof d->detail);
        snprintf(d->note, sizeof d->note, "an unknown symbol: %s", line);
        if (d->detail[0])
            snprintf(
                d->constraint, sizeof d->constraint,
                "'%s' is not defined in this environment: do not call it (define what you need in the file)",
                d->detail);
    } else if (find_line(log, syntax, line, sizeof line)) {
        d->cls = KF_DIAG_COMPILE_SYNTAX;
        snprintf(d->note, sizeof d->note, "a syntax error: %s", line);
    } else {
        d->cls = KF_DIAG_COMPILE_OTHER; /* conflicting types, a wrong signature, ... */
        if (!find_line(log, any, line, sizeof line)) snprintf(line, sizeof line, "%.500s", msg ? msg : "");
        snprintf(d->note, sizeof d->note, "it did not build: %s", line);
    }
}

static void diag_crash(const char *msg, kf_diag *d) {
    const char *c = msg ? strstr(msg, "CUDA_ERROR_") : NULL;
    if (c) {
        size_t k = 0;
        while (c[k] && (isupper((unsigned char)c[k]) || c[k] == '_' || isdigit((unsigned char)c[k]))) k++;
        d->cls = KF_DIAG_CRASH_CUDA;
        snprintf(d->detail, sizeof d->detail, "%.*s", (int)(k < 95 ? k : 95), c);
        if (strstr(d->detail, "OUT_OF_RESOURCES"))
            snprintf(d->constraint, sizeof d->constraint,
                     "launches that need more registers or threads per block than the device has fail "
                     "(%s): use fewer threads per block or fewer registers",
                     d->detail);
    } else {
        d->cls = KF_DIAG_CRASH_SIGNAL;
        const char *k = msg ? strstr(msg, "killed by ") : NULL;
        if (k) {
            k += 10;
            size_t n = strcspn(k, "(;");
            const char *dur = strstr(k, " during");
            if (dur && (size_t)(dur - k) < n) n = (size_t)(dur - k);
            snprintf(d->detail, sizeof d->detail, "%.*s", (int)(n < 95 ? n : 95), k);
            for (int sig = 1; sig < 65; sig++) /* "Segmentation fault" -> SIGSEGV */
                if (sigabbrev_np(sig) && strsignal(sig) && !strcmp(strsignal(sig), d->detail)) {
                    snprintf(d->detail, sizeof d->detail, "SIG%s", sigabbrev_np(sig));
                    break;
                }
        }
    }
    snprintf(d->note, sizeof d->note, "it crashed%s%s: %.500s", d->detail[0] ? " with " : "", d->detail,
             msg ? msg : "");
}

/* Which inputs the call in a reason's message ("...; call 2 of 4 at this shape") had,
 * when it was not the plain call on the declared distributions (check.c: of four calls,
 * 1 plain, 2 spiked, 3 and 4 rescaled, some with an offset mean or mixed scales; of the
 * maximum shape's two, 1 spiked, 2 extreme), with *call and *kind ("spikes", "rescaled",
 * "extremes"); NULL for the plain call, a call with threads on every CPU (where a race
 * shows) or no call named. */
static const char *stress_call(const char *msg, int *call, const char **kind) {
    const char *p = msg ? strstr(msg, "call ") : NULL;
    int k = 0, n = 0;
    while (p && sscanf(p, "call %d of %d at this shape", &k, &n) != 2) p = strstr(p + 5, "call ");
    if (!p || !((n == 4 && k >= 2 && k <= 4) || (n == 2 && (k == 1 || k == 2)))) return NULL;
    /* a call with threads on every CPU differs by more than its values: a race shows there */
    if (strstr(p, "threads on every CPU")) return NULL;
    *call = k;
    *kind = k == 2 && n == 4 ? "spikes" : n == 4 ? "rescaled" : k == 1 ? "spikes" : "extremes";
    if (n == 2)
        return k == 1
                   ? "spiked inputs at the maximum sizes"
                   : "extreme inputs at the maximum sizes (tiny magnitudes, two levels or nearly constant)";
    return k == 2 ? "spiked inputs (a few elements x32 or at the range's ends, subnormals, -0.0)"
                  : "rescaled inputs (by a power of two, some with a mean offset by 8-128 standard "
                    "deviations or "
                    "per-row and per-column scales, zeros, narrow ranges)";
}

/* wrong_result, unwritten_output, nonfinite: which shapes failed and how. */
static void diag_numeric(const kf_node *n, const struct kf_verdict *v, const char *code, const char *msg,
                         kf_diag *d) {
    const kf_verdict_reason *r0 = v->nreasons ? &v->reasons[0] : NULL;
    const char *stress = NULL, *skind = "";
    int call = 0;
    shape_r s[MAX_SHAPES];
    int ns = read_shapes(v, s), vis = 0, vis_fail = 0, other_fail = 0, nfail = 0;
    for (int i = 0; i < ns; i++) {
        nfail += s[i].failed;
        if (s[i].kind == 0) vis++, vis_fail += s[i].failed;
        else other_fail += s[i].failed;
    }
    long long k = 0, nn = 0, first = 0;
    int d_div = 0;
    char names[128] = "", ex[160] = "";
    for (int i = 0; i < ns && !ex[0]; i++)
        if (s[i].failed) kf_verdict_sizes_text(s[i].sizes, ",", ex, sizeof ex);
    int largest = -1;
    for (int i = 0; i < ns; i++)
        if (largest < 0 || s[i].volume > s[largest].volume) largest = i;
    int pairs = 0;
    double span = 0, up = growth(s, ns, &pairs, &span);
    if (!strcmp(code, "wrong_result") && nfail >= 3 && pairs >= 3 && up >= 0.9 && span >= 100 && largest >= 0 &&
        s[largest].failed) {
        d->cls = KF_DIAG_NUMERIC_ACCUMULATION;
        snprintf(d->detail, sizeof d->detail, "grows=%.2f", up);
        snprintf(d->note, sizeof d->note,
                 "accumulation precision: the error grows with the problem size (larger in %.0f%% of %d pairs "
                 "of failing shapes 4x or more apart in size, %.3g times larger at the largest; the largest "
                 "failed)",
                 100 * up, pairs, span);
        snprintf(
            d->constraint, sizeof d->constraint,
            "accumulate in at least the output's precision (or pairwise / in blocks): errors grew with the "
            "size at node %lld",
            (long long)n->id);
    } else if ((stress = stress_call(msg, &call, &skind))) {
        /* its first failing shape passed the plain call: the sizes are not what broke it,
         * so "not only the visible shapes" would teach the wrong thing */
        const char *at = ex;
        char fs[160] = "";
        if (r0 && r0->has_shape) kf_verdict_sizes_text(&r0->shape, ",", fs, sizeof fs), at = fs;
        d->cls = KF_DIAG_NUMERIC_STRESS;
        snprintf(d->detail, sizeof d->detail, "%s", skind);
        snprintf(d->subject, sizeof d->subject, "%s", skind);
        snprintf(d->note, sizeof d->note,
                 "stress inputs: at %s it passed the declared distribution and failed on call %d, %s (%s; %d "
                 "of %d "
                 "shapes failed)",
                 at, call, stress, code, nfail, ns);
        snprintf(
            d->constraint, sizeof d->constraint,
            "children of node %lld must stay correct on the checker's stress inputs, not only the declared "
            "distribution: node %lld failed on %s at %s",
            (long long)n->parent, (long long)n->id, stress, at);
        d->scope = n->parent;
    } else if (!divisor_split(s, ns, &d_div, names, sizeof names)) {
        d->cls = KF_DIAG_NUMERIC_BOUNDARY;
        snprintf(d->detail, sizeof d->detail, "%d", d_div);
        snprintf(d->subject, sizeof d->subject, "%s", names);
        snprintf(
            d->note, sizeof d->note,
            "boundary handling: the %d failing shape%s (e.g. %s) have %s not divisible by %d; every passing "
            "shape's are (%s)",
            nfail, nfail == 1 ? "" : "s", ex, names, d_div, code);
        snprintf(d->constraint, sizeof d->constraint,
                 "children of node %lld must handle %s not divisible by %d (node %lld failed at %s)",
                 (long long)n->parent, names, d_div, (long long)n->id, ex);
        d->scope = n->parent;
    } else if (tail_only(msg, &k, &nn, &first)) {
        d->cls = KF_DIAG_NUMERIC_BOUNDARY;
        snprintf(d->detail, sizeof d->detail, "tail");
        snprintf(d->subject, sizeof d->subject, "tail");
        snprintf(
            d->note, sizeof d->note,
            "boundary handling: only the last %lld of %lld elements were wrong (first at index %lld; %s)", k,
            nn, first, code);
        snprintf(
            d->constraint, sizeof d->constraint,
            "children of node %lld must handle the tail: sizes that are not a multiple of the step or tile "
            "(node %lld left the last %lld of %lld elements wrong)",
            (long long)n->parent, (long long)n->id, k, nn);
        d->scope = n->parent;
    } else if (vis > 0 && vis_fail == 0 && other_fail > 0) {
        d->cls = KF_DIAG_NUMERIC_OVERFIT;
        snprintf(d->note, sizeof d->note,
                 "overfitting: every visible shape passed, %d hidden or edge shape%s failed (e.g. %s; %s)",
                 other_fail, other_fail == 1 ? "" : "s", ex, code);
        snprintf(d->constraint, sizeof d->constraint,
                 "children of node %lld must be correct for every size the task allows, not only the visible "
                 "shapes (node %lld failed at %s)",
                 (long long)n->parent, (long long)n->id, ex);
        d->scope = n->parent;
    } else {
        d->cls = KF_DIAG_NUMERIC_OTHER;
        snprintf(d->detail, sizeof d->detail, "%s", code);
        snprintf(d->note, sizeof d->note, "%s on %d of %d shapes: %.400s", code, nfail, ns, msg ? msg : "");
    }
}

int kf_diag_node(const kf_node *n, kf_diag *d) {
    memset(d, 0, sizeof *d);
    if (n->state == KF_NODE_NO_CANDIDATE) {
        d->cls = KF_DIAG_NO_CANDIDATE;
        snprintf(d->note, sizeof d->note, "the agent gave no candidate: %.500s", n->note ? n->note : "");
        return 0;
    }
    if (n->state == KF_NODE_CRASHED) {
        d->cls = KF_DIAG_EVALUATION;
        snprintf(d->note, sizeof d->note, "the evaluation itself failed: %.500s", n->note ? n->note : "");
        return 0;
    }
    if (n->state != KF_NODE_REJECTED && n->state != KF_NODE_COMPILE_FAILED) return -1;
    struct kf_verdict vd, *v = &vd;
    kf_verdict_from_text(n->verdict_json, v);
    const kf_verdict_reason *r0 = v->nreasons ? &v->reasons[0] : NULL;
    const char *code = r0 ? kf_reason_name(r0->code) : NULL;
    const char *msg = r0 ? r0->message : NULL;
    if (!code) code = n->reasons ? n->reasons : "";
    if (n->state == KF_NODE_COMPILE_FAILED || !strncmp(code, "compile_error", 13)) {
        diag_compile(n, v, msg, d);
    } else if (!strcmp(code, "crash")) {
        diag_crash(msg, d);
    } else if (!strcmp(code, "wrong_result") || !strcmp(code, "unwritten_output") ||
               !strcmp(code, "nonfinite")) {
        diag_numeric(n, v, code, msg, d);
    } else if (!strcmp(code, "out_of_bounds")) {
        d->cls = KF_DIAG_MEMORY_BOUNDS;
        snprintf(d->note, sizeof d->note, "it wrote outside an output: %.500s", msg ? msg : "");
        snprintf(d->constraint, sizeof d->constraint,
                 "children of node %lld must not write past the end of an output (node %lld did)",
                 (long long)n->parent, (long long)n->id);
        d->scope = n->parent;
    } else if (!strcmp(code, "timeout")) {
        d->cls = KF_DIAG_TIMEOUT;
        snprintf(d->note, sizeof d->note, "it ran out of time: %.500s", msg ? msg : "");
    } else if (!strcmp(code, "sandbox_violation")) {
        d->cls = KF_DIAG_SANDBOX;
        snprintf(d->note, sizeof d->note, "the sandbox stopped it: %.500s", msg ? msg : "");
        snprintf(
            d->constraint, sizeof d->constraint,
            "a kernel makes no system calls: no threads, processes, files, sockets or signals (node %lld "
            "was stopped)",
            (long long)n->id);
    } else if (!strcmp(code, "stale_result") || !strcmp(code, "input_modified") ||
               !strcmp(code, "nondeterministic") || !strcmp(code, "timing_mismatch")) {
        d->cls = KF_DIAG_INTEGRITY;
        snprintf(d->note, sizeof d->note, "%s: %.500s", code, msg ? msg : "");
    } else {
        d->cls = KF_DIAG_OTHER;
        snprintf(d->note, sizeof d->note, "%s: %.500s", code, msg ? msg : "");
    }
    if (!d->detail[0] && (d->cls == KF_DIAG_INTEGRITY || d->cls == KF_DIAG_OTHER))
        snprintf(d->detail, sizeof d->detail, "%s", code);
    kf_verdict_free(v);
    return 0;
}

/* ---- recording ------------------------------------------------------------------------- */

typedef struct {
    const char *key;
    int found;
} seen_ctx;

/* A constraint of the same kind is there already: same class, scope and subject (the
 * sizes of a boundary rule, the symbol), whatever the figures of its evidence. */
static int seen(void *arg, const kf_constraint *c) {
    seen_ctx *s = arg;
    json_t *p = c->predicate_json ? json_loads(c->predicate_json, 0, NULL) : NULL;
    const char *k = json_string_value(json_object_get(p, "key"));
    if (k && !strcmp(k, s->key)) s->found = 1;
    json_decref(p);
    return s->found;
}

kf_status kf_diag_record(kf_store *st, const kf_node *n) {
    kf_diag d;
    if (kf_diag_node(n, &d)) return KF_OK;
    json_t *ev =
        json_pack("{s:s, s:s, s:s}", "class", kf_diag_class_name(d.cls), "detail", d.detail, "note", d.note);
    if (ev && d.constraint[0]) {
        json_object_set_new(ev, "constraint", json_string(d.constraint));
        json_object_set_new(ev, "scope", json_integer(d.scope));
    }
    char *js = ev ? kf__json_dumps(ev, JSON_COMPACT) : NULL;
    json_decref(ev);
    kf_status rc = js ? kf_store_event(st, n->id, "diagnosis", js) : KF_ENOMEM;
    free(js);
    if (rc || !d.constraint[0]) return rc;
    char key[256];
    snprintf(key, sizeof key, "%s|%lld|%s", kf_diag_class_name(d.cls), (long long)d.scope,
             d.cls == KF_DIAG_NUMERIC_BOUNDARY ? d.subject : d.detail);
    seen_ctx s = {key, 0};
    if ((rc = kf_store_each_constraint(st, seen, &s)) || s.found) return rc;
    json_t *pj =
        json_pack("{s:s, s:s, s:s}", "key", key, "class", kf_diag_class_name(d.cls), "detail", d.detail);
    char *ps = pj ? kf__json_dumps(pj, JSON_COMPACT) : NULL;
    json_decref(pj);
    rc = kf_store_add_constraint(st, n->id, d.scope, n->category[0] ? n->category : NULL, d.constraint, ps);
    free(ps);
    return rc;
}

/* ---- reading back, for tree ------------------------------------------------------------ */

struct kf_diag_map {
    int64_t *ids;
    json_t **ev; /* owned */
    char **text; /* "class: note" */
    size_t n, cap;
    json_t *breakers;
};

static int load_diag(void *arg, int64_t id, int64_t node, const char *js, double created) {
    (void)id, (void)created;
    kf_diag_map *m = arg;
    json_t *e = js ? json_loads(js, 0, NULL) : NULL;
    if (!e) return 0;
    if (m->n == m->cap) {
        size_t c = m->cap ? m->cap * 2 : 32;
        int64_t *ids = realloc(m->ids, c * sizeof *ids);
        if (ids) m->ids = ids;
        json_t **ev = realloc(m->ev, c * sizeof *ev);
        if (ev) m->ev = ev;
        char **tx = realloc(m->text, c * sizeof *tx);
        if (tx) m->text = tx;
        if (!ids || !ev || !tx) {
            json_decref(e);
            return -1;
        }
        m->cap = c;
    }
    m->ids[m->n] = node;
    m->ev[m->n] = e;
    m->text[m->n] = kf__asprintf("%s: %s", json_string_value(json_object_get(e, "class")),
                                 json_string_value(json_object_get(e, "note")));
    m->n++;
    return 0;
}

static int load_breaker(void *arg, int64_t id, int64_t node, const char *js, double created) {
    (void)id, (void)created;
    kf_diag_map *m = arg;
    json_t *e = js ? json_loads(js, 0, NULL) : NULL;
    if (!e) return 0;
    json_object_set_new(e, "node", json_integer(node));
    json_array_append_new(m->breakers, e);
    return 0;
}

kf_status kf_diag_load(kf_store *st, kf_diag_map **out) {
    *out = NULL;
    kf_diag_map *m = calloc(1, sizeof *m);
    if (!m || !(m->breakers = json_array())) {
        free(m);
        return KF_ENOMEM;
    }
    kf_status rc = kf_store_each_event(st, "diagnosis", load_diag, m);
    if (!rc) rc = kf_store_each_event(st, "breaker", load_breaker, m);
    if (rc) {
        kf_diag_map_free(m);
        return rc;
    }
    *out = m;
    return KF_OK;
}

void kf_diag_map_free(kf_diag_map *m) {
    if (!m) return;
    for (size_t i = 0; i < m->n; i++) {
        json_decref(m->ev[i]);
        free(m->text[i]);
    }
    free(m->ids);
    free(m->ev);
    free(m->text);
    json_decref(m->breakers);
    free(m);
}

/* the latest diagnosis of node (a node evaluated again after a resume has two) */
static long find_node(const kf_diag_map *m, int64_t node) {
    for (size_t i = m ? m->n : 0; i > 0; i--)
        if (m->ids[i - 1] == node) return (long)(i - 1);
    return -1;
}

const char *kf_diag_note(const kf_diag_map *m, int64_t node) {
    long i = find_node(m, node);
    return i < 0 ? NULL : m->text[i];
}

json_t *kf_diag_json(const kf_diag_map *m, int64_t node) {
    long i = find_node(m, node);
    return i < 0 ? NULL : json_deep_copy(m->ev[i]);
}

json_t *kf_diag_breakers(const kf_diag_map *m) { return m ? m->breakers : NULL; }

void kf_diag_breakers_text(const kf_diag_map *m, kf_buf *b) {
    size_t i;
    json_t *e;
    json_array_foreach(kf_diag_breakers(m), i, e) {
        kf_buf_printf(
            b,
            "circuit breaker: %s/%s paused after %lld failures in a row (at node %lld), for %lld outcomes or "
            "until another action succeeds\n",
            json_string_value(json_object_get(e, "proposer")),
            json_string_value(json_object_get(e, "category")),
            (long long)json_integer_value(json_object_get(e, "failures")),
            (long long)json_integer_value(json_object_get(e, "node")),
            (long long)json_integer_value(json_object_get(e, "pause")));
    }
}

void kf_diag_breaker(kf_store *st, const kf_search *se, int *seen, int64_t node, const char *const *names,
                     int nnames) {
    int trips = kf_search_trips(se);
    if (trips == *seen) return;
    *seen = trips; /* one outcome trips at most one (proposer, category) */
    int p, c, k;
    kf_search_last_trip(se, &p, &c, &k);
    const char *pn = p >= 0 && p < nnames ? names[p] : "?";
    const char *cn = kf_search_category_name(c) ? kf_search_category_name(c) : "?";
    int pause = kf_search_paused(se, p, c);
    json_t *ev =
        json_pack("{s:s, s:s, s:i, s:i}", "proposer", pn, "category", cn, "failures", k, "pause", pause);
    char *js = ev ? kf__json_dumps(ev, JSON_COMPACT) : NULL;
    json_decref(ev);
    if (js) kf_store_event(st, node, "breaker", js);
    free(js);
    fprintf(stderr,
            "kforge run: circuit breaker: %s/%s paused after %d failures in a row (node %lld), for %d "
            "outcomes or until another action succeeds\n",
            pn, cn, k, (long long)node, pause);
}

typedef struct {
    const kf_node *n;
    int passed_too;
    int64_t id;
    kf_node_state state;
    kf_diag d;
} dup_ctx;

static int find_dup(void *arg, const kf_node *m) {
    dup_ctx *c = arg;
    if (m->id == c->n->id || strcmp(m->src_hash, c->n->src_hash) || m->state == KF_NODE_NO_CANDIDATE ||
        m->tampered)
        return 0;
    int passed = m->state == KF_NODE_MEASURED || m->state == KF_NODE_KEPT || m->state == KF_NODE_REVERTED;
    if (passed ? !c->passed_too : kf_diag_node(m, &c->d) != 0) return 0;
    c->id = m->id;
    c->state = m->state;
    return 1;
}

char *kf_diag_prune_note(kf_store *st, const kf_node *n, int passed_too, int64_t *same) {
    dup_ctx c = {n, passed_too, 0, KF_NODE_PROPOSED, {0}};
    if (same) *same = 0;
    if (kf_store_each_node(st, find_dup, &c) || !c.id) return NULL;
    if (same) *same = c.id;
    if (c.state == KF_NODE_MEASURED || c.state == KF_NODE_KEPT || c.state == KF_NODE_REVERTED)
        return kf__asprintf(
            "pruned: the same source as node %lld (%s), already checked and timed; its figures stand",
            (long long)c.id, kf_node_state_name(c.state));
    return kf__asprintf("pruned: the same source as node %lld, which failed (%s)", (long long)c.id,
                        kf_diag_class_name(c.d.cls));
}
