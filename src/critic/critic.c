/*
 * critic.c - the Critic: the one stage that may let a measured node become `kept`
 * (docs/run.md, "The Critic"). It never measures anything itself: it reads the check's
 * verdict and asks its caller (the loop), through callbacks, for more timings; it calls
 * nothing of the loop's. Its checks, in order, one stage function each:
 *
 *   integrity     the task's files are still the ones the run locked, the verdict names
 *                 the same fingerprint, and a node whose kforge:when skips visible shapes
 *                 its parent timed is a `specialisation` (else it dodged a shape);
 *   plausibility  no shape faster than max_speedup (100x) against the reference, none
 *                 above the roofline (fraction > 1.05): refused as impossible;
 *   gain          some shape beats the parent by more than the noise (and keep_margin);
 *   measurement   `retimes` fresh worker pairs against the parent, same launch mode
 *                 (an unfair pair: needs_review), each with a shape whose 95% interval's
 *                 low end clears 1 + the noise floor (win_floor); one is enough when it
 *                 and the loop's own timing both put a 95% interval's low end over the
 *                 parent at `decisive` (1.25) or more;
 *   suspicious    a gain of suspicious_gain (1.5x) or more over the parent from a change
 *                 of at most tiny_lines (3) lines is verified again with twice the
 *                 hidden shapes plus four and twice the rounds.
 *
 * Decisions: approve (kept), reject, needs_review (not kept: a comparison the mechanical
 * checks cannot settle, shown to a person by `kforge tree`). Each is stored with its
 * checks; the store refuses `kept` for a node without an approve (kf_store_finish_node).
 */
#include "critic.h"

#include "../util/util.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void kf_critic_opts_init(kf_critic_opts *o) {
    memset(o, 0, sizeof *o);
    o->max_speedup = 100.0;
    o->max_roofline = 1.05;
    o->retimes = 2;
    o->decisive = 1.25;
    o->suspicious_gain = 1.5;
    o->tiny_lines = 3;
}

int kf_critic_set(kf_critic_opts *o, const char *kv, char *err, size_t n) {
    const char *eq = strchr(kv, '=');
    if (!eq || eq == kv || !eq[1]) {
        snprintf(err, n, "--critic %s: expected KEY=VALUE", kv);
        return -1;
    }
    size_t kl = (size_t)(eq - kv);
    char *end;
    double v = strtod(eq + 1, &end);
    if (*end || !isfinite(v) || v < 0) {
        snprintf(err, n, "--critic %s: the value must be a number >= 0", kv);
        return -1;
    }
#define KEY(s) (kl == strlen(s) && !strncmp(kv, s, kl))
    if (KEY("max_speedup") && v > 1) o->max_speedup = v;
    else if (KEY("max_roofline") && v >= 1) o->max_roofline = v;
    else if (KEY("retimes") && v >= 1 && v <= 10 && v == floor(v)) o->retimes = (int)v;
    else if (KEY("decisive") && (v == 0 || v > 1)) o->decisive = v;
    else if (KEY("suspicious_gain") && v > 1) o->suspicious_gain = v;
    else if (KEY("tiny_lines") && v == floor(v) && v <= 1000) o->tiny_lines = (int)v;
    else {
        snprintf(err, n,
                 "--critic %s: unknown key or value out of range (max_speedup > 1, max_roofline >= 1, "
                 "retimes 1-10, decisive 0 or > 1, suspicious_gain > 1, tiny_lines 0-1000)",
                 kv);
        return -1;
    }
#undef KEY
    return 0;
}

/* ---- helpers ------------------------------------------------------------------------- */

int kf_critic_timing_only(const struct kf_verdict *res) {
    if (res->verdict != KF_VERDICT_REJECTED || !res->nreasons) return 0;
    for (int i = 0; i < res->nreasons; i++)
        if (res->reasons[i].code != KF_REASON_TIMING_MISMATCH) return 0;
    return 1;
}

static void check(json_t *checks, const char *name, const char *outcome, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void check(json_t *checks, const char *name, const char *outcome, const char *fmt, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    json_array_append_new(checks,
                          json_pack("{s:s, s:s, s:s}", "check", name, "outcome", outcome, "detail", buf));
}

/* visible shapes the verdict left untimed (outside its kforge:when) */
static int untimed_has(const struct kf_verdict *res, const kf_verdict_sizes *sizes) {
    for (int i = 0; i < res->nuntimed; i++)
        if (kf_verdict_sizes_equal(&res->untimed[i], sizes)) return 1;
    return 0;
}

static int cmp_u64(const void *x, const void *y) {
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return a < b ? -1 : a > b;
}

static uint64_t line_hash(const char *p, size_t n) { /* FNV-1a */
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)p[i]) * 1099511628211ull;
    return h;
}

/* The text's code: comments removed (a comment holding a kforge: directive is kept: it
 * is part of the candidate), each line trimmed, blank lines dropped. Padding with
 * comments or blank lines does not make a change larger. Caller frees. */
static char *code_of(const char *t) {
    size_t n = strlen(t);
    char *o = malloc(n + 2), *w = o;
    if (!o) return NULL;
    for (const char *p = t; *p;) {
        if (p[0] == '/' && (p[1] == '*' || p[1] == '/')) {
            const char *e = p[1] == '*' ? strstr(p + 2, "*/") : strchr(p, '\n');
            size_t l = e ? (size_t)(e - p) + (p[1] == '*' ? 2 : 0) : strlen(p);
            int directive = 0;
            for (const char *q = p; q + 7 <= p + l && !directive; q++) directive = !strncmp(q, "kforge:", 7);
            if (directive) memcpy(w, p, l), w += l;
            p += l;
            continue;
        }
        *w++ = *p++;
    }
    *w = 0;
    /* trim each line, drop the blank ones */
    char *r = o, *line = o;
    for (char *p = o;; p++) {
        if (*p == '\n' || !*p) {
            char *b = line, *e = p;
            while (b < e && (*b == ' ' || *b == '\t' || *b == '\r')) b++;
            while (e > b && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r')) e--;
            if (e > b) {
                memmove(r, b, (size_t)(e - b));
                r += e - b;
                *r++ = '\n';
            }
            if (!*p) break;
            line = p + 1;
        }
    }
    *r = 0;
    return o;
}

/* The hashes of t's lines, sorted, into *out (caller frees); their count, or -1. */
static long sorted_line_hashes(const char *t, uint64_t **out) {
    size_t n = 1;
    for (const char *p = t; *p; p++) n += *p == '\n';
    uint64_t *h = malloc(n * sizeof *h);
    if (!(*out = h)) return -1;
    size_t k = 0;
    for (const char *p = t; *p && k < n;) {
        const char *e = strchr(p, '\n');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        h[k++] = line_hash(p, l);
        p += l + (e != NULL);
    }
    qsort(h, k, sizeof *h, cmp_u64);
    return (long)k;
}

/* Lines of a not found in b, and of b not in a (as multisets), over their code (code_of):
 * the larger count. A template point against its parent point differs in its
 * kforge:param lines alone. */
static int changed_lines(const char *a, const char *b) {
    if (!a || !b) return -1;
    char *ca = code_of(a), *cb = code_of(b);
    uint64_t *ha = NULL, *hb = NULL;
    long na = ca ? sorted_line_hashes(ca, &ha) : -1, nb = cb ? sorted_line_hashes(cb, &hb) : -1;
    int out = -1;
    if (na >= 0 && nb >= 0) {
        long i = 0, j = 0, common = 0;
        while (i < na && j < nb) {
            if (ha[i] == hb[j]) common++, i++, j++;
            else if (ha[i] < hb[j]) i++;
            else j++;
        }
        out = (int)((na > nb ? na : nb) - common);
    }
    free(ha);
    free(hb);
    free(ca);
    free(cb);
    return out;
}

/* The best shape of a timing against the parent: whether it is fair everywhere, and the
 * highest low end of a 95% interval among fair shapes, with its speedup. */
typedef struct {
    int accepted, unfair;
    double best_lo, best_speedup, geomean;
    char unfair_why[300];
    char reasons[200]; /* the rejection's codes, when not accepted */
} timing_view;

static void view(const struct kf_verdict *res, timing_view *v) {
    memset(v, 0, sizeof *v);
    v->accepted = res->verdict == KF_VERDICT_ACCEPTED;
    for (int ri = 0; ri < res->nreasons; ri++) {
        const char *c = kf_reason_name(res->reasons[ri].code);
        size_t at = strlen(v->reasons);
        if (!strstr(v->reasons, c) && at + strlen(c) + 2 < sizeof v->reasons)
            snprintf(v->reasons + at, sizeof v->reasons - at, "%s%s", at ? "," : "", c);
    }
    if (!v->reasons[0]) snprintf(v->reasons, sizeof v->reasons, "%s", v->accepted ? "accepted" : "rejected");
    double lg = 0;
    int n = 0;
    for (int i = 0; i < res->nshapes; i++) {
        const kf_verdict_shape *s = &res->shapes[i];
        if (!(s->has & KF_VS_SPEEDUP)) continue;
        if ((s->has & KF_VS_FAIR) && !s->fair) {
            v->unfair = 1;
            snprintf(v->unfair_why, sizeof v->unfair_why, "%s",
                     s->fair_reason ? s->fair_reason : "launch modes differ");
            continue;
        }
        double x = s->speedup;
        if (x > 0) lg += log(x), n++;
        double lo = s->has & KF_VS_CI95 ? s->ci95[0] : 0;
        if (lo > v->best_lo) v->best_lo = lo, v->best_speedup = x;
    }
    v->geomean = n ? exp(lg / n) : 0;
}

/* A re-timing of the candidate against its parent in fresh workers (stricter: more
 * hidden shapes and rounds). As in the loop's own timing, one rejected for
 * timing_mismatch alone (the two clocks disagreed, as on a loaded machine) is timed once
 * more, and that one counts: a forged stamp is rejected again. */
static int retime(const kf_critic_env *env, const kf_critic_case *c, int stricter, struct kf_verdict *r,
                  char *err, size_t n) {
    if (env->bench(env->arg, c->path, c->parent_path, stricter, r, err, n)) {
        kf_verdict_free(r);
        return -1;
    }
    struct kf_verdict again;
    if (kf_critic_timing_only(r)) {
        if (!env->bench(env->arg, c->path, c->parent_path, stricter, &again, err, n)) {
            kf_verdict_free(r);
            *r = again;
        } else {
            kf_verdict_free(&again);
        }
    }
    return 0;
}

/* ---- the judgement ------------------------------------------------------------------------ */

/* The judgement in progress: the checks so far, the re-timings against the parent, and
 * why the decision is what it is. Each stage returns KF_CRITIC_APPROVE to go on, or the
 * decision that ends the judgement (decide). */
typedef struct {
    const kf_critic_env *env;
    const kf_critic_case *c;
    json_t *checks;
    json_t *retimed; /* per re-timing: [{sizes, speedup over the parent}] */
    json_t *figures; /* per re-timing: {geomean, best, best_lo, floor} over the parent */
    char why[1200];
    char err[600];
    char now[65]; /* the task's fingerprint as on disk now */
    double gain;  /* the lowest geomean over the parent among the re-timings */
    int retimed_n;            /* the re-timings done */
    double decisive_lo[2];    /* a decisive stop's: re-timing 1's interval start, the first timing's */
} judgement;

static kf_critic_decision decide(judgement *j, kf_critic_decision d, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static kf_critic_decision decide(judgement *j, kf_critic_decision d, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(j->why, sizeof j->why, fmt, ap);
    va_end(ap);
    return d;
}

/* integrity: the task on disk and the verdict's task are the run's */
static kf_critic_decision judge_task(judgement *j) {
    const kf_critic_env *env = j->env;
    json_t *checks = j->checks;
    if (env->fingerprint_now && env->fingerprint_now(env->arg, j->now)) {
        check(checks, "integrity", "fail", "the task's files could not be read again");
        return decide(j, KF_CRITIC_REJECT, "task integrity: the task's files could not be read again");
    }
    if (env->locked_fingerprint && j->now[0] && strcmp(j->now, env->locked_fingerprint)) {
        check(checks, "integrity", "fail",
              "the task's files changed during the run (locked %.12s, now %.12s)", env->locked_fingerprint,
              j->now);
        return decide(j, KF_CRITIC_REJECT, "task integrity: the task's files changed during the run");
    }
    const char *vfp = j->c->result->fingerprint;
    if (env->locked_fingerprint && vfp && strcmp(vfp, env->locked_fingerprint)) {
        check(checks, "integrity", "fail",
              "the verdict is for another task (fingerprint %.12s, the run's %.12s)", vfp,
              env->locked_fingerprint);
        return decide(j, KF_CRITIC_REJECT, "task integrity: the verdict is for another version of the task");
    }
    return KF_CRITIC_APPROVE;
}

/* integrity: a node whose kforge:when narrows the domain is a specialisation */
static kf_critic_decision judge_domain(judgement *j) {
    const kf_critic_env *env = j->env;
    const kf_critic_case *c = j->c;
    json_t *checks = j->checks;
    /* visible shapes this node leaves untimed that its parent timed */
    char skipped[400] = "";
    size_t so = 0;
    int nskip = 0;
    for (int i = 0; i < c->result->nuntimed; i++) {
        const kf_verdict_sizes *sz = &c->result->untimed[i];
        if (c->parent_result && untimed_has(c->parent_result, sz)) continue;
        char t[160];
        kf_verdict_sizes_text(sz, " ", t, sizeof t);
        if (so < sizeof skipped)
            so += (size_t)snprintf(skipped + so, sizeof skipped - so, "%s[%s]", nskip ? " " : "", t);
        nskip++;
    }
    const char *when = c->result->when;
    /* any kforge:when narrows the task's domain (hidden and edge shapes are drawn
     * inside it: one that pins the visible shapes gets none at all): only a node
     * proposed as a specialisation may have one */
    if (when && strcmp(c->category, "specialisation")) {
        check(checks, "integrity", "fail",
              "its kforge:when (%s) narrows the task's domain, and it was proposed as '%s', not as a "
              "specialisation",
              when, c->category);
        return decide(j, KF_CRITIC_REJECT,
                      "task integrity: its kforge:when (%s) narrows the domain and it is not a "
                      "specialisation",
                      when);
    }
    if (nskip && strcmp(c->category, "specialisation")) {
        check(checks, "integrity", "fail",
              "its kforge:when (%s) skips %d visible shape%s its parent timed (%s), and it was proposed as "
              "'%s', not as a specialisation",
              when ? when : "?", nskip, nskip == 1 ? "" : "s", skipped, c->category);
        return decide(j, KF_CRITIC_REJECT,
                      "task integrity: it narrowed its kforge:when to skip %s without being a specialisation",
                      skipped);
    }
    if (nskip)
        check(checks, "integrity", "pass", "a specialisation: its kforge:when (%s) leaves %s to other nodes",
              when ? when : "?", skipped);
    else
        check(checks, "integrity", "pass",
              "task unchanged (%.12s), every visible shape its parent timed is timed",
              j->now[0]                 ? j->now
              : env->locked_fingerprint ? env->locked_fingerprint
                                        : "?");
    return KF_CRITIC_APPROVE;
}

/* plausibility: no shape beyond max_speedup or the roofline */
static kf_critic_decision judge_plausibility(judgement *j) {
    const kf_critic_opts *o = j->env->o;
    json_t *checks = j->checks;
    for (int i = 0; i < j->c->result->nshapes; i++) {
        const kf_verdict_shape *s = &j->c->result->shapes[i];
        double sp = s->speedup, rf = s->roofline_fraction;
        char t[160];
        kf_verdict_sizes_text(&s->sizes, " ", t, sizeof t);
        if (sp > o->max_speedup) {
            check(checks, "plausibility", "fail", "%.1fx against the reference at %s: over the %.0fx limit",
                  sp, t, o->max_speedup);
            return decide(j, KF_CRITIC_REJECT,
                          "impossible: %.1fx against the reference at %s (limit %.0fx, --critic max_speedup)",
                          sp, t, o->max_speedup);
        }
        if (rf > o->max_roofline) {
            check(checks, "plausibility", "fail", "%.2f of the roofline at %s", rf, t);
            return decide(j, KF_CRITIC_REJECT, "impossible: %.2f of the roofline at %s", rf, t);
        }
    }
    check(checks, "plausibility", "pass", "every shape under %.0fx and under the roofline", o->max_speedup);
    return KF_CRITIC_APPROVE;
}

/* gain: beats the parent somewhere by more than the noise, and the parent can be re-timed */
static kf_critic_decision judge_gain(judgement *j) {
    if (!j->c->beats_parent) {
        check(j->checks, "gain", "fail", "no shape beats the parent by more than the noise");
        return decide(j, KF_CRITIC_REJECT, "no shape beats the parent by more than the noise");
    }
    if (j->c->parent_id > 0 && !j->c->parent_path) {
        check(j->checks, "gain", "fail", "the parent's source could not be read back for the re-timing");
        return decide(j, KF_CRITIC_REJECT, "the parent's source could not be read back for the re-timing");
    }
    return KF_CRITIC_APPROVE;
}

/* The loop's own timing against the parent: the highest low end of a shape's 95%
 * interval over it (the interval against the reference over the parent's speedup there;
 * the root's is 1), or 0 where there is no interval or no parent figure. */
static double first_lo_over_parent(const kf_critic_case *c) {
    double best = 0;
    for (int i = 0; i < c->result->nshapes; i++) {
        const kf_verdict_shape *s = &c->result->shapes[i];
        if (!(s->has & KF_VS_SPEEDUP) || !(s->has & KF_VS_CI95)) continue;
        if ((s->has & KF_VS_FAIR) && !s->fair) continue;
        double base = 1.0;
        if (c->parent_id > 0) {
            const kf_verdict_shape *p = c->parent_result ? kf_verdict_find(c->parent_result, &s->sizes) : NULL;
            if (!p || !(p->has & KF_VS_SPEEDUP) || !(p->speedup > 0)) continue;
            base = p->speedup;
        }
        if (s->ci95[0] / base > best) best = s->ci95[0] / base;
    }
    return best;
}

/* measurement: fresh pairs against the parent, each a win; j->gain the lowest geomean.
 * After the first, the rest are left out when the win is decisive: that re-timing and the
 * loop's own timing, two timings in different workers on different inputs, each put a
 * 95% interval's low end over the parent at o->decisive or more (1.25, five times the
 * noise floor's margin), where one more re-timing has no real chance of showing less than
 * the floor. A marginal win still gets every re-timing. */
static kf_critic_decision judge_measurement(judgement *j) {
    const kf_critic_env *env = j->env;
    json_t *checks = j->checks;
    char *err = j->err;
    for (int k = 0; k < env->o->retimes; k++) {
        struct kf_verdict again;
        int failed = retime(env, j->c, 0, &again, err, sizeof j->err);
        timing_view v;
        view(&again, &v);
        /* each re-timing's speedups over the parent, for the conservative figures */
        json_t *rt = json_array();
        for (int si = 0; si < again.nshapes; si++)
            if (again.shapes[si].has & KF_VS_SPEEDUP)
                json_array_append_new(rt, kf_verdict_retimed_json(&again.shapes[si]));
        json_array_append_new(j->retimed, rt);
        kf_verdict_free(&again);
        /* what the decision rests on, for tree and submit: each re-timing's geomean over
         * the parent, its best shape and where that shape's 95% interval starts */
        if (!failed && v.accepted)
            json_array_append_new(j->figures, json_pack("{s:f, s:f, s:f, s:f}", "geomean", v.geomean, "best",
                                                        v.best_speedup, "best_lo", v.best_lo, "floor",
                                                        1.0 + env->noise_floor));
        if (failed) {
            check(checks, "measurement", "fail", "re-timing %d failed: %s", k + 1, err);
            return decide(j, KF_CRITIC_REJECT, "the re-timing failed: %s", err);
        }
        if (!v.accepted) {
            check(checks, "measurement", "fail", "re-timing %d: not accepted (%s)", k + 1, v.reasons);
            return decide(j, KF_CRITIC_REJECT, "a re-timing in fresh workers was not accepted (%s)",
                          v.reasons);
        }
        if (v.unfair) {
            check(checks, "measurement", "review", "re-timing %d: not the same launch mode as the parent: %s",
                  k + 1, v.unfair_why);
            return decide(j, KF_CRITIC_REVIEW,
                          "the comparison with its parent is not in the same launch mode (%s)", v.unfair_why);
        }
        if (!(v.best_lo > 1.0 + env->noise_floor)) {
            check(checks, "measurement", "fail",
                  "re-timing %d: %.3fx over the parent (geomean %.3fx), the best 95%% interval starts at "
                  "%.3f, not "
                  "clear of 1 by the noise floor %.2f",
                  k + 1, v.best_speedup, v.geomean, v.best_lo, env->noise_floor);
            return decide(
                j, KF_CRITIC_REJECT,
                "a re-timing against its parent in fresh workers did not confirm the win (re-timing %d: "
                "geomean %.3fx over the parent, best 95%% interval from %.3f, needed above %.3f)",
                k + 1, v.geomean, v.best_lo, 1.0 + env->noise_floor);
        }
        check(checks, "measurement", "pass", "re-timing %d: %.3fx, 95%% interval from %.3f (geomean %.3fx)",
              k + 1, v.best_speedup, v.best_lo, v.geomean);
        if (k == 0 || v.geomean < j->gain) j->gain = v.geomean;
        j->retimed_n = k + 1;
        double first;
        if (k == 0 && env->o->retimes > 1 && env->o->decisive > 1 && v.best_lo >= env->o->decisive &&
            (first = first_lo_over_parent(j->c)) >= env->o->decisive) {
            check(checks, "measurement", "pass",
                  "decisive: re-timing 1 and the first timing put a 95%% interval over the parent from %.3f "
                  "and %.3f, both at least %.2f; the other %d re-timing%s left out",
                  v.best_lo, first, env->o->decisive, env->o->retimes - 1, env->o->retimes == 2 ? "" : "s");
            j->decisive_lo[0] = v.best_lo, j->decisive_lo[1] = first;
            break;
        }
    }
    return KF_CRITIC_APPROVE;
}

/* suspicious: a large gain from a tiny change is verified again, stricter */
static kf_critic_decision judge_suspicious(judgement *j) {
    const kf_critic_env *env = j->env;
    const kf_critic_opts *o = env->o;
    json_t *checks = j->checks;
    char *err = j->err;
    double gain = j->gain;
    int lines = changed_lines(j->c->source, j->c->parent_source);
    if (!(lines >= 0 && lines <= o->tiny_lines && gain >= o->suspicious_gain)) {
        check(checks, "suspicious", "pass", "%s",
              lines < 0 ? "no parent source to compare" : "not a large gain from a tiny change");
        return KF_CRITIC_APPROVE;
    }
    struct kf_verdict again;
    int failed = retime(env, j->c, 1, &again, err, sizeof j->err);
    timing_view v;
    view(&again, &v);
    int ok = !failed && v.accepted && !v.unfair && v.best_lo > 1.0 + env->noise_floor;
    char reasons[300] = "";
    if (!failed && !v.accepted) {
        size_t ro = 0;
        for (int i = 0; i < again.nreasons; i++) {
            const char *code = kf_reason_name(again.reasons[i].code);
            if (ro < sizeof reasons)
                ro += (size_t)snprintf(reasons + ro, sizeof reasons - ro, "%s%s", ro ? "," : "", code);
        }
    }
    kf_verdict_free(&again);
    if (!ok) {
        check(checks, "suspicious", "fail",
              "%.2fx over the parent from %d changed line%s; with more hidden shapes and rounds: %s", gain,
              lines, lines == 1 ? "" : "s",
              failed        ? err
              : !v.accepted ? reasons
                            : "the win did not hold");
        return decide(j, KF_CRITIC_REJECT,
                      "a %.2fx gain from a %d-line change did not survive verification with more "
                      "hidden shapes and rounds",
                      gain, lines);
    }
    check(checks, "suspicious", "pass",
          "%.2fx from %d changed line%s: verified again with more hidden shapes and rounds", gain, lines,
          lines == 1 ? "" : "s");
    return KF_CRITIC_APPROVE;
}

kf_critic_decision kf_critic_judge(const kf_critic_env *env, const kf_critic_case *c, json_t **report) {
    static kf_critic_decision (*const stages[])(judgement *) = {
        judge_task, judge_domain, judge_plausibility, judge_gain, judge_measurement, judge_suspicious};
    judgement j = {env, c, json_array(), json_array(), json_array(), "", "", "", 0, 0, {0, 0}};
    kf_critic_decision d = KF_CRITIC_APPROVE;
    for (size_t k = 0; k < sizeof stages / sizeof *stages && d == KF_CRITIC_APPROVE; k++) d = stages[k](&j);
    if (d == KF_CRITIC_APPROVE && j.decisive_lo[0] > 0)
        snprintf(j.why, sizeof j.why,
                 "re-timed against its parent in fresh workers, 1 time: a decisive win (95%% interval over the "
                 "parent from %.3f, and from %.3f in the first timing; geomean %.3fx over the parent)",
                 j.decisive_lo[0], j.decisive_lo[1], j.gain);
    else if (d == KF_CRITIC_APPROVE)
        snprintf(
            j.why, sizeof j.why,
            "re-timed against its parent in fresh workers, %d time%s: a win each time (lowest geomean %.3fx "
            "over the parent)",
            j.retimed_n, j.retimed_n == 1 ? "" : "s", j.gain);
    *report = json_pack("{s:s, s:s, s:o, s:o, s:o}", "decision", kf_critic_name(d), "why", j.why, "checks",
                        j.checks, "retimed", j.retimed, "figures", j.figures);
    return d;
}

const char *kf_critic_name(kf_critic_decision d) {
    return d == KF_CRITIC_APPROVE ? "approve" : d == KF_CRITIC_REVIEW ? "needs_review" : "reject";
}
