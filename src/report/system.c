/*
 * system.c - the report of a system run (`kforge system run`, docs/report.md "A system
 * run"): what the pipeline gate did, read from the run's record (system.json, with its
 * seal: kf_sysrun_load) and from the loop run of each slot it worked on (DIR/slot-NAME,
 * read as `kforge report` reads a run, its lessons not distilled). One reader, three
 * renderers: the HTML page, Markdown (`--format md`, and `kforge system report`), and
 * JSON (`kforge system report --json`: the record with its counts and integrity).
 *
 * The sections: the pipeline and its stages; each stage's share of the step before (the
 * reference pipeline) and after (the configuration kept), measured side by side in the
 * run's last bench, as an SVG bar chart (bars as long as the step) and a table; the
 * end-to-end speedup and its interval; the local-win/global-loss cases (a slot's export
 * that won alone on its task and did not win in the step) with the local figures and
 * intervals, the step's, and why the gate refused it; every slot iteration; the knobs
 * (the workload, the tuning knobs kept, every knob trial and why); the seals of
 * the record and of each slot run; the sections of each slot run's winners (source,
 * verdict, diff). A record from before a figure was kept renders without it, saying so.
 *
 * The record (system.json, the pipeline gate's own document: its iterations, stages,
 * local and step figures) is read by its keys here; it is no verdict. The slot runs'
 * stored verdicts are read as report.c reads a run's, through the typed verdict.
 *
 * Every text of the record and the slot runs (names, paths, reasons' messages, sources)
 * goes through kf_report_esc; numbers are printed by format. Read-only.
 */
#define _GNU_SOURCE
#include "report.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

/* The stages' colours in the bar chart (the :root variables --stage-K of the page; the
 * thirteenth and later stages take them again). */
static const char *const stage_colour[] = {"#3949ab", "#00acc1", "#7cb342", "#fb8c00", "#8d6e63", "#5e35b1",
                                           "#f06292", "#26a69a", "#c0ca33", "#546e7a", "#ab47bc", "#ffca28"};
#define NCOL (sizeof stage_colour / sizeof stage_colour[0])

#define ESC(b, s) kf_report_esc((b), (s), strlen(s), 0)
#define JS(o, k) json_string_value(json_object_get((o), (k)))
#define JN(o, k) json_number_value(json_object_get((o), (k)))

/* ---- reading ----------------------------------------------------------------------------- */

void kf_report_sys_free(kf_sysrep *s) {
    for (int i = 0; i < s->nit; i++) {
        if (s->slot) kf_report_free(&s->slot[i]);
        if (s->slot_dir) free(s->slot_dir[i]);
    }
    free(s->slot);
    free(s->slot_ok);
    free(s->slot_dir);
    json_decref(s->rec);
    json_decref(s->integrity);
    free(s->warnings);
    memset(s, 0, sizeof *s);
}

static int outcome_is(const json_t *it, const char *oc) {
    const char *o = JS(it, "outcome");
    return o && !strcmp(o, oc);
}

kf_status kf_report_sys_read(kf_ctx *ctx, const char *dir, kf_sysrep *s) {
    memset(s, 0, sizeof *s);
    s->dir = dir;
    kf_buf w;
    kf_buf_init(&w, 1u << 20);
    kf_status st = kf_sysrun_load(ctx, dir, &s->rec, &s->integrity, &w);
    if (st) {
        kf_buf_free(&w);
        return st;
    }
    json_t *its = json_object_get(s->rec, "iterations");
    int n = (int)json_array_size(its);
    s->slot = calloc((size_t)(n ? n : 1), sizeof *s->slot);
    s->slot_ok = calloc((size_t)(n ? n : 1), sizeof *s->slot_ok);
    s->slot_dir = calloc((size_t)(n ? n : 1), sizeof *s->slot_dir);
    if (!s->slot || !s->slot_ok || !s->slot_dir) {
        kf_buf_free(&w);
        return KF_ENOMEM;
    }
    s->nit = n;
    for (int i = 0; i < n; i++) {
        json_t *it = json_array_get(its, (size_t)i);
        s->keeps += outcome_is(it, "system_keep");
        s->lwgl += outcome_is(it, "local_win_global_loss");
        /* the slot run: DIR/slot-NAME, where system run puts it (the recorded path may be
         * relative to where the run was started) */
        const char *slot = JS(it, "slot"), *rec_run = JS(it, "run");
        if (!slot || !rec_run) continue;
        char sd[4200], db[4300];
        snprintf(sd, sizeof sd, "%s/slot-%s", dir, slot);
        snprintf(db, sizeof db, "%s/run.db", sd);
        if (access(db, F_OK)) snprintf(sd, sizeof sd, "%s", rec_run);
        s->slot_dir[i] = strdup(sd);
        kf_ctx *c = kf_ctx_new();
        kf_status rs = c && s->slot_dir[i] ? kf_report_read(c, sd, 1, &s->slot[i]) : KF_ENOMEM;
        if (!rs) {
            s->slot_ok[i] = 1;
            snprintf(s->slot[i].anchor, sizeof s->slot[i].anchor, "i%d-", i);
            for (const char *p = s->slot[i].warnings; p && *p;) {
                const char *e = strchr(p, '\n');
                size_t k = e ? (size_t)(e - p) : strlen(p);
                /* the line's own word first (WARNING, warning, note), so that it reads as one */
                static const char *const words[] = {"WARNING: ", "warning: ", "note: "};
                size_t skip = 0;
                for (int q = 0; q < 3 && !skip; q++)
                    if (!strncmp(p, words[q], strlen(words[q]))) skip = strlen(words[q]);
                kf_buf_printf(&w, "%.*sslot %s (%s): %.*s\n", (int)skip, p, slot, sd, (int)(k - skip),
                              p + skip);
                p += k + (e ? 1 : 0);
            }
        } else {
            kf_buf_printf(&w, "note: slot %s: its run %s cannot be read (%s): its nodes are not shown\n",
                          slot, sd, c ? kf_errmsg(c) : "out of memory");
        }
        kf_ctx_free(c);
    }
    s->wins = s->keeps + s->lwgl;
    s->warnings = w.p;
    struct utsname u;
    if (!uname(&u))
        snprintf(s->made_on, sizeof s->made_on, "%s (%s %s, %s)", u.nodename, u.sysname, u.release,
                 u.machine);
    s->written = (double)time(NULL);
    return KF_OK;
}

/* ---- what the sections compute ------------------------------------------------------------ */

/* The stages before and after: the last bench's pairs (the reference measured beside the
 * configuration kept), else the first profile alone. *paired: 1 when both sides are there. */
static json_t *stage_rows(const kf_sysrep *s, int *paired) {
    json_t *after = json_object_get(s->rec, "profile_after");
    *paired = json_array_size(after) > 0;
    return *paired ? after : json_object_get(s->rec, "profile_before");
}

static double before_ns(const json_t *st, int paired) {
    return JN(st, paired ? "baseline_ns" : "candidate_ns");
}

static double before_share(const json_t *st, int paired) {
    return JN(st, paired ? "baseline_share" : "candidate_share");
}

/* The shares of slot's stages in an iteration's own bench: 0, or -1 when not recorded. */
static int slot_shares(const json_t *it, const char *slot, double *base, double *cand) {
    json_t *stages = json_object_get(it, "stages");
    *base = *cand = 0;
    if (!json_array_size(stages) || !slot) return -1;
    size_t k;
    json_t *v;
    json_array_foreach(stages, k, v) {
        const char *sl = JS(v, "slot");
        if (!sl || strcmp(sl, slot)) continue;
        *base += JN(v, "baseline_share"), *cand += JN(v, "candidate_share");
    }
    return 0;
}

/* Why the gate decided as it did for iteration it, as text into b (escaped for md or not). */
static void why(kf_buf *b, const json_t *it, int md) {
    const char *oc = JS(it, "outcome"), *verdict = JS(it, "verdict"), *err = JS(it, "error");
    json_t *ci = json_object_get(it, "system_gain_ci95");
    double lo = json_number_value(json_array_get(ci, 0)), hi = json_number_value(json_array_get(ci, 1));
    if (!oc) {
        kf_buf_printf(b, "not recorded");
        return;
    }
    if (err) {
        kf_report_escf(b, md, "%s", err);
        return;
    }
    if (!strcmp(oc, "system_keep")) {
        kf_buf_printf(b, "kept: the step's gain interval [%+.1f%%, %+.1f%%] is above zero", 100 * lo,
                      100 * hi);
    } else if (verdict && strcmp(verdict, "accepted")) {
        kf_buf_printf(b, "rejected in the step");
        size_t k;
        json_t *r;
        json_array_foreach(json_object_get(it, "reasons"), k, r) {
            if (k >= 3) break;
            const char *m = JS(r, "message");
            kf_report_escf(b, md, "%s %s: %.300s", k ? ";" : ":", JS(r, "code") ? JS(r, "code") : "?",
                           m ? m : "");
        }
    } else if (json_array_size(ci) == 2 && lo <= 0) {
        kf_buf_printf(b, "the step's gain interval [%+.1f%%, %+.1f%%] is not above zero", 100 * lo, 100 * hi);
    } else if (json_array_size(ci) == 2) {
        kf_buf_printf(b, "the step's gain is within the noise floor");
    } else {
        kf_buf_printf(b, "the step's figures are not recorded");
    }
    double sb, sc;
    if (strcmp(oc, "system_keep") && !slot_shares(it, JS(it, "slot"), &sb, &sc))
        kf_buf_printf(b, "; its stages took %.1f%% of the step, against %.1f%% before", 100 * sc, 100 * sb);
}

/* The local figures of an iteration: the geomean, then each shape's speedup and interval. */
static void local_text(kf_buf *b, const json_t *it, int md) {
    json_t *ls = json_object_get(it, "local_speedup");
    if (!json_is_number(ls)) {
        kf_buf_printf(b, "-");
        return;
    }
    kf_buf_printf(b, "%.3fx", json_number_value(ls));
    json_t *loc = json_object_get(it, "local");
    if (!loc) {
        kf_buf_printf(b, " (its interval not recorded)");
        return;
    }
    kf_buf_printf(b, "%s", json_is_true(json_object_get(loc, "win")) ? " (a win)" : " (no win)");
    size_t k;
    json_t *sh;
    json_array_foreach(json_object_get(loc, "shapes"), k, sh) {
        kf_buf_printf(b, "%s", k ? "; " : ": ");
        const char *key;
        json_t *v;
        int first = 1;
        json_object_foreach(json_object_get(sh, "sizes"), key, v) {
            kf_report_escf(b, md, "%s%s=%lld", first ? "" : ",", key, (long long)json_integer_value(v));
            first = 0;
        }
        json_t *ci = json_object_get(sh, "ci95");
        kf_buf_printf(b, " %.3fx", JN(sh, "speedup"));
        if (json_array_size(ci) == 2)
            kf_buf_printf(b, " [%.3f, %.3f]", json_number_value(json_array_get(ci, 0)),
                          json_number_value(json_array_get(ci, 1)));
    }
}

static void step_text(kf_buf *b, const json_t *it) {
    json_t *g = json_object_get(it, "system_gain"), *ci = json_object_get(it, "system_gain_ci95");
    if (!json_is_number(g)) {
        kf_buf_printf(b, "-");
        return;
    }
    kf_buf_printf(b, "%+.1f%%", 100 * json_number_value(g));
    if (json_array_size(ci) == 2)
        kf_buf_printf(b, " [%+.1f%%, %+.1f%%]", 100 * json_number_value(json_array_get(ci, 0)),
                      100 * json_number_value(json_array_get(ci, 1)));
    json_t *sn = json_object_get(it, "step_ns");
    if (json_is_object(sn))
        kf_buf_printf(b, ", %.0f ns against %.0f ns a step", JN(sn, "candidate"), JN(sn, "baseline"));
}

static int has_warning(const kf_sysrep *s) { return s->warnings && strstr(s->warnings, "WARNING"); }

/* The end-to-end speedup and its interval (from the gain's), as text. */
static void e2e_text(kf_buf *b, const kf_sysrep *s) {
    json_t *sp = json_object_get(s->rec, "end_to_end_speedup"),
           *ci = json_object_get(s->rec, "end_to_end_gain_ci95");
    const char *state = JS(s->rec, "state");
    if (!json_is_number(sp) && state && !strcmp(state, "running")) {
        kf_buf_printf(b, "not recorded yet (the run has not finished: it is running, or it was stopped and "
                         "kforge system run --resume continues it)");
        return;
    }
    if (!json_is_number(sp)) {
        kf_buf_printf(b, "not recorded (the run's last bench did not complete)");
        return;
    }
    kf_buf_printf(b, "%.3fx", json_number_value(sp));
    if (json_array_size(ci) == 2)
        kf_buf_printf(b, " [%.3fx, %.3fx]", 1 + json_number_value(json_array_get(ci, 0)),
                      1 + json_number_value(json_array_get(ci, 1)));
}

static void rate_text(kf_buf *b, const kf_sysrep *s) {
    if (s->wins)
        kf_buf_printf(b, "%d of %d local win%s lost in the step (%.0f%%; Arbor reports %.0f%%)", s->lwgl,
                      s->wins, s->wins == 1 ? "" : "s", 100.0 * s->lwgl / s->wins,
                      100 * KF_REPORT_ARBOR_LWGL);
    else
        kf_buf_printf(b, "no local win yet (Arbor reports %.0f%% of local wins lost in the step)",
                      100 * KF_REPORT_ARBOR_LWGL);
}

/* The knobs of a record: the workload (knobs named after a dim, never searched) or the
 * tuning knobs kept, "NAME=VALUE, ..." ("none" when empty). */
static void knobs_text(kf_buf *b, const json_t *o, int md) {
    const char *key;
    json_t *v;
    int first = 1;
    json_object_foreach((json_t *)o, key, v) {
        kf_report_escf(b, md, "%s%s=%s", first ? "" : ", ", key,
                       json_string_value(v) ? json_string_value(v) : "?");
        first = 0;
    }
    if (first) kf_buf_printf(b, "none");
}

/* Why a knob trial ended as it did, as text into b. */
static void knob_why(kf_buf *b, const json_t *t, int md) {
    const char *oc = JS(t, "outcome");
    json_t *ci = json_object_get(t, "system_gain_ci95");
    double lo = json_number_value(json_array_get(ci, 0)), hi = json_number_value(json_array_get(ci, 1));
    if (!oc) kf_buf_printf(b, "not judged yet (the run was stopped in this trial: --resume finishes it)");
    else if (!strcmp(oc, "refused"))
        kf_report_escf(b, md, "refused, not a loss: %.400s", JS(t, "reason") ?: "?");
    else if (!strcmp(oc, "knob_keep"))
        kf_buf_printf(b, "kept: the step's gain interval [%+.1f%%, %+.1f%%] is above zero", 100 * lo,
                      100 * hi);
    else if (!strcmp(oc, "rejected")) {
        json_t *r = json_array_get(json_object_get(t, "reasons"), 0);
        kf_report_escf(b, md, "rejected in the step: %s: %.300s", JS(r, "code") ?: "?",
                       JS(r, "message") ?: "");
    } else if (json_array_size(ci) == 2 && lo <= 0)
        kf_buf_printf(b, "the step's gain interval [%+.1f%%, %+.1f%%] is not above zero", 100 * lo, 100 * hi);
    else kf_buf_printf(b, "the step's gain is within the noise floor");
}

/* ---- HTML --------------------------------------------------------------------------------- */

static void node_links(kf_buf *b, const kf_sysrep *s, int i) {
    if (!s->slot_ok[i]) return;
    const kf_rep *r = &s->slot[i];
    int any = 0;
    for (size_t q = 0; q < r->d.a.n; q++) {
        if (!r->n[q].winner) continue;
        kf_buf_printf(b, "%s<a href=\"#%sn-%lld\">#%lld</a>", any ? ", " : " node ", r->anchor,
                      (long long)r->d.a.v[q].id, (long long)r->d.a.v[q].id);
        any = 1;
    }
}

static void outcome_badge(kf_buf *b, const char *oc) {
    const char *cls = !oc                                    ? "o-none"
                      : !strcmp(oc, "system_keep")           ? "o-keep"
                      : !strcmp(oc, "knob_keep")             ? "o-keep"
                      : !strcmp(oc, "local_win_global_loss") ? "o-lwgl"
                                                             : "o-none";
    kf_buf_printf(b, "<span class=\"badge %s\">", cls);
    ESC(b, oc ? oc : "?");
    kf_buf_printf(b, "</span>");
}

static void shares_html(kf_buf *b, const kf_sysrep *s) {
    int paired;
    json_t *rows = stage_rows(s, &paired);
    size_t n = json_array_size(rows), k;
    json_t *v;
    kf_buf_printf(b, "<section id=\"shares\"><h2>Stage shares before and after</h2>\n");
    if (!n) {
        kf_buf_printf(b,
                      "<p class=\"muted\">Not recorded: the run did not profile the step.</p></section>\n");
        return;
    }
    double tb = 0, ta = 0;
    json_array_foreach(rows, k, v) tb += before_ns(v, paired), ta += JN(v, "candidate_ns");
    if (paired)
        kf_buf_printf(b,
                      "<p>Each stage's share of the step time: before (the reference pipeline) and after "
                      "(the configuration kept), measured side by side in the run's last bench. Each bar is "
                      "as long as its step: %.0f ns before, %.0f ns after. Hover for the figures.</p>\n",
                      tb, ta);
    else
        kf_buf_printf(
            b,
            "<p class=\"muted\">After: not recorded (the run's last bench did not complete); before: "
            "the first profile of the step, %.0f ns.</p>\n",
            tb);
    const double W = 1000, L = 70, BW = 860, H = 40, Y0 = 10, GAP = 24;
    double top = fmax(tb, paired ? ta : 0);
    int bars = paired ? 2 : 1;
    kf_buf_printf(
        b,
        "<svg id=\"shares-chart\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" role=\"img\" "
        "aria-label=\"stage shares\">\n",
        W, Y0 + bars * (H + GAP), W, Y0 + bars * (H + GAP));
    for (int bar = 0; bar < bars; bar++) {
        double y = Y0 + bar * (H + GAP), x = L, tot = bar ? ta : tb;
        kf_buf_printf(b, "<text x=\"4\" y=\"%.0f\">%s</text>\n", y + H / 2 + 4, bar ? "after" : "before");
        json_array_foreach(rows, k, v) {
            double ns = bar ? JN(v, "candidate_ns") : before_ns(v, paired);
            double w = top > 0 ? ns / top * BW : 0;
            double share = bar ? JN(v, "candidate_share") : before_share(v, paired);
            kf_buf_printf(b, "<rect class=\"bar st-%zu\" data-stage=\"", k % NCOL);
            ESC(b, JS(v, "stage") ? JS(v, "stage") : "?");
            kf_buf_printf(b, "\" x=\"%.2f\" y=\"%.0f\" width=\"%.2f\" height=\"%.0f\"><title>", x, y, w, H);
            kf_report_escf(b, 0, "%s (%s): %.1f%%, %.0f ns", JS(v, "stage") ? JS(v, "stage") : "?",
                           bar ? (JS(v, "implementation") ? JS(v, "implementation") : "?") : "reference",
                           100 * share, ns);
            kf_buf_printf(b, "</title></rect>\n");
            x += w;
        }
        kf_buf_printf(b, "<text x=\"%.1f\" y=\"%.0f\">%.0f ns</text>\n", fmin(x + 4, W - 60), y + H + 14,
                      tot);
    }
    kf_buf_printf(b, "</svg>\n<p class=\"legend\">");
    json_array_foreach(rows, k, v) {
        kf_buf_printf(b, "<span><i class=\"sw st-%zu\"></i>", k % NCOL);
        ESC(b, JS(v, "stage") ? JS(v, "stage") : "?");
        kf_buf_printf(b, "</span>");
    }
    kf_buf_printf(
        b, "</p>\n<table id=\"shares-table\"><tr><th>stage</th><th>slot</th><th>before ns</th><th>before "
           "share</th><th>after (implementation)</th><th>after ns</th><th>after share</th></tr>\n");
    json_array_foreach(rows, k, v) {
        kf_buf_printf(b, "<tr class=\"stage\"><td>");
        ESC(b, JS(v, "stage") ? JS(v, "stage") : "?");
        kf_buf_printf(b, "</td><td>");
        ESC(b, JS(v, "slot") ? JS(v, "slot") : "?");
        kf_buf_printf(b, "</td><td>%.0f</td><td>%.1f%%</td><td>", before_ns(v, paired),
                      100 * before_share(v, paired));
        if (paired) {
            ESC(b, JS(v, "implementation") ? JS(v, "implementation") : "?");
            kf_buf_printf(b, "</td><td>%.0f</td><td>%.1f%%</td></tr>\n", JN(v, "candidate_ns"),
                          100 * JN(v, "candidate_share"));
        } else {
            kf_buf_printf(b, "not recorded</td><td></td><td></td></tr>\n");
        }
    }
    kf_buf_printf(
        b, "</table>\n<p id=\"e2e\">End-to-end step speedup of the configuration kept over the reference "
           "pipeline: <strong>");
    e2e_text(b, s);
    kf_buf_printf(b, "</strong> (95%% interval).</p>\n</section>\n");
}

static void lwgl_html(kf_buf *b, const kf_sysrep *s) {
    json_t *its = json_object_get(s->rec, "iterations");
    kf_buf_printf(
        b,
        "<section id=\"lwgl\"><h2>Local wins, global losses</h2>\n<p id=\"lwgl-count\" data-count=\"%d\" "
        "data-wins=\"%d\">",
        s->lwgl, s->wins);
    rate_text(b, s);
    kf_buf_printf(b, ". A slot's export that won alone on its task and did not win in the step: the gate "
                     "refused it.</p>\n");
    if (!s->lwgl) {
        kf_buf_printf(b, "<p class=\"muted\">No case in this run.</p></section>\n");
        return;
    }
    kf_buf_printf(b,
                  "<table id=\"lwgl-table\"><tr><th>slot</th><th>candidate</th><th>alone on its task (95%% "
                  "interval per shape)</th><th>in the step (gain, 95%% interval)</th><th>why it was "
                  "refused</th></tr>\n");
    size_t k;
    json_t *it;
    json_array_foreach(its, k, it) {
        if (!outcome_is(it, "local_win_global_loss")) continue;
        kf_buf_printf(b, "<tr class=\"lwgl-case\"><td>");
        ESC(b, JS(it, "slot") ? JS(it, "slot") : "?");
        kf_buf_printf(b, " ");
        outcome_badge(b, JS(it, "outcome"));
        kf_buf_printf(b, "</td><td><code>");
        ESC(b, JS(it, "candidate") ? JS(it, "candidate") : "?");
        kf_buf_printf(b, "</code>");
        node_links(b, s, (int)k);
        kf_buf_printf(b, "</td><td>");
        local_text(b, it, 0);
        kf_buf_printf(b, "</td><td>");
        step_text(b, it);
        kf_buf_printf(b, "</td><td>");
        why(b, it, 0);
        kf_buf_printf(b, "</td></tr>\n");
    }
    kf_buf_printf(b, "</table>\n</section>\n");
}

static void iterations_html(kf_buf *b, const kf_sysrep *s) {
    json_t *its = json_object_get(s->rec, "iterations");
    kf_buf_printf(b,
                  "<section id=\"iterations\"><h2>Slot iterations</h2>\n<p>The slot with the largest share "
                  "x headroom first; its kernel loop's export judged in the step against the configuration "
                  "kept so far.</p>\n<table id=\"iterations-table\"><tr><th>#</th><th>slot</th><th>score</th>"
                  "<th>outcome</th><th>alone</th><th>in the step</th><th>why</th></tr>\n");
    size_t k;
    json_t *it;
    json_array_foreach(its, k, it) {
        kf_buf_printf(b, "<tr class=\"iteration\"><td>%zu</td><td>", k + 1);
        ESC(b, JS(it, "slot") ? JS(it, "slot") : "?");
        node_links(b, s, (int)k);
        kf_buf_printf(b, "</td><td>%.3f</td><td>", JN(it, "score"));
        outcome_badge(b, JS(it, "outcome"));
        kf_buf_printf(b, "</td><td>");
        local_text(b, it, 0);
        kf_buf_printf(b, "</td><td>");
        step_text(b, it);
        kf_buf_printf(b, "</td><td>");
        why(b, it, 0);
        kf_buf_printf(b, "</td></tr>\n");
    }
    if (!json_array_size(its)) kf_buf_printf(b, "<tr><td colspan=\"7\">none</td></tr>\n");
    kf_buf_printf(b, "</table>\n</section>\n");
}

static void knobs_html(kf_buf *b, const kf_sysrep *s) {
    json_t *trials = json_object_get(s->rec, "knob_trials"), *t;
    kf_buf_printf(b, "<section id=\"knobs\"><h2>Knobs</h2>\n");
    if (!json_is_object(json_object_get(s->rec, "knobs"))) {
        kf_buf_printf(b, "<p class=\"muted\">Not recorded: the run is from before the knob search.</p>\n"
                         "</section>\n");
        return;
    }
    kf_buf_printf(b, "<p>The workload (knobs named after a dim: the run is for this one workload, never "
                     "searched): <code id=\"workload\">");
    knobs_text(b, json_object_get(s->rec, "workload"), 0);
    kf_buf_printf(b, "</code>. The tuning knobs kept: <code id=\"knobs-kept\">");
    knobs_text(b, json_object_get(s->rec, "knobs"), 0);
    kf_buf_printf(b, "</code>. After the slot iterations, each other value of each tuning knob is judged in "
                     "the step against the configuration kept.</p>\n<table id=\"knob-trials\"><tr><th>#</th>"
                     "<th>knob</th><th>value</th><th>against</th><th>outcome</th><th>in the step</th>"
                     "<th>why</th></tr>\n");
    size_t k;
    json_array_foreach(trials, k, t) {
        kf_buf_printf(b, "<tr class=\"knob-trial\"><td>%zu</td><td>", k + 1);
        ESC(b, JS(t, "knob") ? JS(t, "knob") : "?");
        kf_buf_printf(b, "</td><td>");
        ESC(b, JS(t, "value") ? JS(t, "value") : "?");
        kf_buf_printf(b, "</td><td>");
        ESC(b, JS(t, "against") ? JS(t, "against") : "?");
        kf_buf_printf(b, "</td><td>");
        outcome_badge(b, JS(t, "outcome"));
        kf_buf_printf(b, "</td><td>");
        step_text(b, t);
        kf_buf_printf(b, "</td><td>");
        knob_why(b, t, 0);
        kf_buf_printf(b, "</td></tr>\n");
    }
    if (!json_array_size(trials)) kf_buf_printf(b, "<tr><td colspan=\"7\">none</td></tr>\n");
    kf_buf_printf(b, "</table>\n</section>\n");
}

static void pipeline_html(kf_buf *b, const kf_sysrep *s) {
    int paired;
    json_t *rows = stage_rows(s, &paired), *v;
    size_t k;
    kf_buf_printf(b, "<section id=\"pipeline\"><h2>Pipeline</h2>\n<p><code>");
    const char *pl = JS(s->rec, "pipeline");
    ESC(b, pl ? pl : "?");
    kf_buf_printf(b, "</code>: %zu stages, %lld evaluations per slot's loop.</p>\n<ol id=\"stages\">",
                  json_array_size(rows), (long long)json_integer_value(json_object_get(s->rec, "budget")));
    json_array_foreach(rows, k, v) {
        kf_buf_printf(b, "<li><i class=\"sw st-%zu\"></i>", k % NCOL);
        ESC(b, JS(v, "stage") ? JS(v, "stage") : "?");
        kf_buf_printf(b, " <span class=\"muted\">slot ");
        ESC(b, JS(v, "slot") ? JS(v, "slot") : "?");
        kf_buf_printf(b, "</span></li>");
    }
    kf_buf_printf(b, "</ol>\n<table id=\"kept\"><tr><th>slot kept</th><th>file</th></tr>\n");
    const char *key;
    json_object_foreach(json_object_get(s->rec, "kept"), key, v) {
        kf_buf_printf(b, "<tr><td>");
        ESC(b, key);
        kf_buf_printf(b, "</td><td><code>");
        ESC(b, json_string_value(v) ? json_string_value(v) : "?");
        kf_buf_printf(b, "</code></td></tr>\n");
    }
    if (!json_object_size(json_object_get(s->rec, "kept")))
        kf_buf_printf(b, "<tr><td colspan=\"2\">none: the reference pipeline stays</td></tr>\n");
    kf_buf_printf(b, "</table>\n</section>\n");
}

static void integrity_html(kf_buf *b, const kf_sysrep *s) {
    const json_t *in = s->integrity;
    kf_buf_printf(b, "<section id=\"integrity\"><h2>Integrity</h2>\n");
    kf_report_lines(b, s->warnings, "<p class=\"warn\">", "</p>\n", 0);
    kf_buf_printf(
        b, "<table id=\"integrity-table\"><tr><th>the record's seal (system.json)</th><td id=\"seals\">");
    ESC(b, JS(in, "seals") ? JS(in, "seals") : "?");
    kf_buf_printf(b, "</td></tr><tr><th>seal key</th><td><code>");
    if (JS(in, "key")) ESC(b, JS(in, "key"));
    kf_buf_printf(b, "</code></td></tr><tr><th>pipeline</th><td><code>");
    const char *pf = JS(s->rec, "pipeline_file"), *ps = JS(s->rec, "pipeline_sha256");
    ESC(b, pf ? pf : JS(s->rec, "pipeline") ? JS(s->rec, "pipeline") : "?");
    kf_buf_printf(b, "</code>, sha256 <code>");
    ESC(b, ps ? ps : "not recorded");
    json_t *pm = json_object_get(in, "pipeline_matches");
    kf_buf_printf(b, "</code>%s</td></tr>\n",
                  !pm                ? ""
                  : json_is_true(pm) ? " (the pipeline on disk matches)"
                                     : " (the pipeline on disk is not this one)");
    kf_buf_printf(b, "<tr><th>kforge</th><td>%s</td></tr><tr><th>report written on</th><td>", KF_VERSION);
    ESC(b, s->made_on);
    char when[64] = "";
    time_t t = (time_t)s->written;
    struct tm tm;
    if (gmtime_r(&t, &tm)) strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &tm);
    kf_buf_printf(b, ", %s</td></tr></table>\n", when);
    kf_buf_printf(b,
                  "<table id=\"slot-runs\"><tr><th>slot</th><th>run</th><th>seals</th><th>nodes that do not "
                  "match their seal</th><th>task</th><th>fingerprint</th></tr>\n");
    json_t *its = json_object_get(s->rec, "iterations");
    for (int i = 0; i < s->nit; i++) {
        if (!s->slot_dir[i]) continue;
        const json_t *it = json_array_get(its, (size_t)i);
        kf_buf_printf(b, "<tr class=\"slot-run\"><td>");
        ESC(b, JS(it, "slot"));
        kf_buf_printf(b, "</td><td><code>");
        ESC(b, s->slot_dir[i]);
        kf_buf_printf(b, "</code></td>");
        if (!s->slot_ok[i]) {
            kf_buf_printf(b, "<td colspan=\"4\">not readable</td></tr>\n");
            continue;
        }
        const kf_rep *r = &s->slot[i];
        kf_buf_printf(b, "<td class=\"slot-seals\">");
        ESC(b, JS(r->integrity, "seals") ? JS(r->integrity, "seals") : "?");
        kf_buf_printf(b, "</td><td>");
        size_t k;
        json_t *e;
        json_array_foreach(json_object_get(r->integrity, "tampered"), k, e)
            kf_buf_printf(b, "%s#%lld", k ? ", " : "", (long long)json_integer_value(e));
        if (!json_array_size(json_object_get(r->integrity, "tampered"))) kf_buf_printf(b, "none");
        kf_buf_printf(b, "</td><td><code>");
        ESC(b, kf_store_task_dir(r->d.st));
        kf_buf_printf(b, "</code></td><td><code>");
        ESC(b, kf_store_task_fingerprint(r->d.st));
        kf_buf_printf(b, "</code> (%s)</td></tr>\n",
                      json_is_true(json_object_get(r->integrity, "task_matches"))
                          ? "the task on disk matches"
                          : "the task on disk is not this one");
    }
    kf_buf_printf(b, "</table>\n</section>\n");
}

static const char sys_css[] =
    ":root{--o-keep:#2e7d32;--o-lwgl:#d81b60;--o-none:#9e9e9e"
    ";--stage-0:#3949ab;--stage-1:#00acc1;--stage-2:#7cb342;--stage-3:#fb8c00;--stage-4:#8d6e63;--stage-5:#"
    "5e35b1"
    ";--stage-6:#f06292;--stage-7:#26a69a;--stage-8:#c0ca33;--stage-9:#546e7a;--stage-10:#ab47bc;--stage-11:#"
    "ffca28}\n"
    ".o-keep{background:var(--o-keep)}.o-lwgl{background:var(--o-lwgl)}.o-none{background:var(--o-none)}\n"
    ".st-0{fill:var(--stage-0);background:var(--stage-0)}.st-1{fill:var(--stage-1);background:var(--stage-1)}"
    ".st-2{fill:var(--stage-2);background:var(--stage-2)}.st-3{fill:var(--stage-3);background:var(--stage-3)}"
    ".st-4{fill:var(--stage-4);background:var(--stage-4)}.st-5{fill:var(--stage-5);background:var(--stage-5)}"
    ".st-6{fill:var(--stage-6);background:var(--stage-6)}.st-7{fill:var(--stage-7);background:var(--stage-7)}"
    ".st-8{fill:var(--stage-8);background:var(--stage-8)}.st-9{fill:var(--stage-9);background:var(--stage-9)}"
    ".st-10{fill:var(--stage-10);background:var(--stage-10)}.st-11{fill:var(--stage-11);background:var(--"
    "stage-11)}"
    "\nrect.bar{stroke:#fff;stroke-width:1}h3.slot{margin-top:20px}\n";

void kf_report_sys_html(kf_buf *b, const kf_sysrep *s) {
    char title[4300];
    snprintf(title, sizeof title, "system run %s", s->dir);
    kf_report_page_head(b, title, sys_css);
    int bad = has_warning(s);
    kf_buf_printf(b, "<div id=\"verdict\" class=\"%s\">", bad ? "bad" : "ok");
    if (bad) kf_buf_printf(b, "WARNING: this run's records do not match their seals: see Integrity. ");
    kf_buf_printf(b, "%d of %d slot iteration%s kept; end to end ", s->keeps, s->nit, s->nit == 1 ? "" : "s");
    e2e_text(b, s);
    kf_buf_printf(b, "; %d local-win/global-loss case%s", s->lwgl, s->lwgl == 1 ? "" : "s");
    kf_buf_printf(
        b,
        "</div>\n<nav><a href=\"#shares\">Shares</a><a href=\"#lwgl\">Local wins, global losses</a><a "
        "href=\"#iterations\">Iterations</a><a href=\"#knobs\">Knobs</a><a href=\"#pipeline\">Pipeline</a><a "
        "href=\"#integrity\">Integrity</a><a href=\"#nodes\">Nodes</a></nav>\n<main data-kind=\"system\" "
        "data-iterations=\"%d\" data-lwgl=\"%d\">\n<p>A system run of <code>",
        s->nit, s->lwgl);
    const char *pl = JS(s->rec, "pipeline");
    ESC(b, pl ? pl : "?");
    kf_buf_printf(b,
                  "</code>: the kernel loop on one slot at a time, each export judged in the whole step. ");
    rate_text(b, s);
    kf_buf_printf(b, ".</p>\n");
    shares_html(b, s);
    lwgl_html(b, s);
    iterations_html(b, s);
    knobs_html(b, s);
    pipeline_html(b, s);
    integrity_html(b, s);
    kf_buf_printf(b, "<section id=\"nodes\"><h2>Nodes</h2>\n<p class=\"muted\">Each slot run's winners: the "
                     "exported kernels, with their source, verdict and diff against their parent "
                     "(<code>kforge report DIR/slot-NAME</code> shows a slot run whole).</p>\n");
    json_t *its = json_object_get(s->rec, "iterations");
    for (int i = 0; i < s->nit; i++) {
        if (!s->slot_ok[i]) continue;
        const kf_rep *r = &s->slot[i];
        kf_buf_printf(b, "<h3 class=\"slot\" id=\"i%d\">Slot ", i);
        ESC(b, JS(json_array_get(its, (size_t)i), "slot"));
        kf_buf_printf(b, ": <code>");
        ESC(b, s->slot_dir[i]);
        kf_buf_printf(b, "</code>, %zu nodes</h3>\n", r->d.a.n);
        int any = 0;
        for (size_t q = 0; q < r->d.a.n; q++)
            if (r->n[q].winner && r->n[q].detail) kf_report_node_html(b, r, (int)q), any = 1;
        if (!any) kf_buf_printf(b, "<p class=\"muted\">No kept node.</p>\n");
    }
    kf_buf_printf(b, "</section>\n</main>\n");
    kf_report_page_tail(b);
}

/* ---- Markdown ----------------------------------------------------------------------------- */

static void md_cell(kf_buf *b, const char *t) { kf_report_esc(b, t ? t : "?", strlen(t ? t : "?"), 1); }

void kf_report_sys_md(kf_buf *b, const kf_sysrep *s) {
    json_t *its = json_object_get(s->rec, "iterations"), *v, *it;
    size_t k;
    kf_buf_printf(b, "# kforge report: system run ");
    kf_report_esc(b, s->dir, strlen(s->dir), 1);
    kf_buf_printf(b, "\n\n## Verdict\n\nPipeline ");
    const char *pl = JS(s->rec, "pipeline");
    kf_report_esc(b, pl ? pl : "?", strlen(pl ? pl : "?"), 1);
    kf_buf_printf(b, ": %d of %d slot iteration%s kept; end to end ", s->keeps, s->nit,
                  s->nit == 1 ? "" : "s");
    e2e_text(b, s);
    kf_buf_printf(b, "; ");
    rate_text(b, s);
    kf_buf_printf(b, ".\n\n## Stage shares\n\n");
    int paired;
    json_t *rows = stage_rows(s, &paired);
    if (!json_array_size(rows)) {
        kf_buf_printf(b, "Not recorded: the run did not profile the step.\n\n");
    } else {
        if (!paired) kf_buf_printf(b, "After: not recorded (the run's last bench did not complete).\n\n");
        kf_buf_printf(
            b,
            "| stage | slot | before ns | before share | after (implementation) | after ns | after share |\n"
            "|---|---|---|---|---|---|---|\n");
        json_array_foreach(rows, k, v) {
            kf_buf_printf(b, "| ");
            md_cell(b, JS(v, "stage"));
            kf_buf_printf(b, " | ");
            md_cell(b, JS(v, "slot"));
            kf_buf_printf(b, " | %.0f | %.1f%% | ", before_ns(v, paired), 100 * before_share(v, paired));
            if (paired) {
                kf_report_escf(b, 1, "%s", JS(v, "implementation") ? JS(v, "implementation") : "?");
                kf_buf_printf(b, " | %.0f | %.1f%% |\n", JN(v, "candidate_ns"),
                              100 * JN(v, "candidate_share"));
            } else {
                kf_buf_printf(b, "not recorded | | |\n");
            }
        }
        kf_buf_printf(b, "\nEnd-to-end step speedup (95%% interval): ");
        e2e_text(b, s);
        kf_buf_printf(b, ".\n\n");
    }
    kf_buf_printf(b, "## Local wins, global losses\n\n");
    rate_text(b, s);
    kf_buf_printf(b, ".\n\n| slot | candidate | alone on its task | in the step | why it was refused |\n"
                     "|---|---|---|---|---|\n");
    json_array_foreach(its, k, it) {
        if (!outcome_is(it, "local_win_global_loss")) continue;
        kf_buf_printf(b, "| ");
        md_cell(b, JS(it, "slot"));
        kf_buf_printf(b, " | ");
        md_cell(b, JS(it, "candidate"));
        kf_buf_printf(b, " | ");
        local_text(b, it, 1);
        kf_buf_printf(b, " | ");
        step_text(b, it);
        kf_buf_printf(b, " | ");
        why(b, it, 1);
        kf_buf_printf(b, " |\n");
    }
    if (!s->lwgl) kf_buf_printf(b, "| (none) | | | | |\n");
    kf_buf_printf(b, "\n## Slot iterations\n\n| # | slot | score | outcome | alone | in the step | why |\n"
                     "|---|---|---|---|---|---|---|\n");
    json_array_foreach(its, k, it) {
        kf_buf_printf(b, "| %zu | ", k + 1);
        kf_report_escf(b, 1, "%s", JS(it, "slot") ? JS(it, "slot") : "?");
        kf_buf_printf(b, " | %.3f | ", JN(it, "score"));
        kf_report_escf(b, 1, "%s", JS(it, "outcome") ? JS(it, "outcome") : "?");
        kf_buf_printf(b, " | ");
        local_text(b, it, 1);
        kf_buf_printf(b, " | ");
        step_text(b, it);
        kf_buf_printf(b, " | ");
        why(b, it, 1);
        kf_buf_printf(b, " |\n");
    }
    if (json_is_object(json_object_get(s->rec, "knobs"))) {
        kf_buf_printf(b, "\n## Knobs\n\nWorkload (knobs named after a dim, never searched): ");
        knobs_text(b, json_object_get(s->rec, "workload"), 1);
        kf_buf_printf(b, ". Tuning knobs kept: ");
        knobs_text(b, json_object_get(s->rec, "knobs"), 1);
        kf_buf_printf(b, ".\n\n| # | knob | value | against | outcome | in the step | why |\n"
                         "|---|---|---|---|---|---|---|\n");
        json_array_foreach(json_object_get(s->rec, "knob_trials"), k, it) {
            kf_buf_printf(b, "| %zu | ", k + 1);
            md_cell(b, JS(it, "knob"));
            kf_buf_printf(b, " | ");
            md_cell(b, JS(it, "value"));
            kf_buf_printf(b, " | ");
            md_cell(b, JS(it, "against"));
            kf_buf_printf(b, " | ");
            md_cell(b, JS(it, "outcome") ? JS(it, "outcome") : "not judged yet");
            kf_buf_printf(b, " | ");
            step_text(b, it);
            kf_buf_printf(b, " | ");
            knob_why(b, it, 1);
            kf_buf_printf(b, " |\n");
        }
        if (!json_array_size(json_object_get(s->rec, "knob_trials")))
            kf_buf_printf(b, "| (none) | | | | | | |\n");
    }
    kf_buf_printf(b, "\n## Integrity\n");
    kf_report_lines(b, s->warnings, "> **", "**\n>\n", 1);
    kf_buf_printf(
        b, "\n| record | seals | pipeline sha256 | kforge | report written on |\n|---|---|---|---|---|\n"
           "| system.json | ");
    kf_report_escf(b, 1, "%s", JS(s->integrity, "seals") ? JS(s->integrity, "seals") : "?");
    kf_buf_printf(b, " | ");
    const char *ps = JS(s->rec, "pipeline_sha256");
    kf_report_escf(b, 1, "%.16s", ps ? ps : "not recorded");
    json_t *pm = json_object_get(s->integrity, "pipeline_matches");
    if (pm) kf_buf_printf(b, "%s", json_is_true(pm) ? " (matches)" : " (the pipeline on disk differs)");
    kf_buf_printf(b, " | %s | ", KF_VERSION);
    kf_report_esc(b, s->made_on, strlen(s->made_on), 1);
    kf_buf_printf(b, " |\n\n| slot run | seals | tampered nodes | task fingerprint |\n|---|---|---|---|\n");
    for (int i = 0; i < s->nit; i++) {
        if (!s->slot_dir[i]) continue;
        kf_buf_printf(b, "| ");
        kf_report_esc(b, s->slot_dir[i], strlen(s->slot_dir[i]), 1);
        if (!s->slot_ok[i]) {
            kf_buf_printf(b, " | not readable | | |\n");
            continue;
        }
        const kf_rep *r = &s->slot[i];
        kf_buf_printf(b, " | ");
        kf_report_escf(b, 1, "%s", JS(r->integrity, "seals") ? JS(r->integrity, "seals") : "?");
        kf_buf_printf(b, " | ");
        json_t *e;
        size_t q;
        json_array_foreach(json_object_get(r->integrity, "tampered"), q, e)
            kf_buf_printf(b, "%s#%lld", q ? ", " : "", (long long)json_integer_value(e));
        if (!json_array_size(json_object_get(r->integrity, "tampered"))) kf_buf_printf(b, "none");
        kf_buf_printf(b, " | ");
        kf_report_escf(b, 1, "%.16s", kf_store_task_fingerprint(r->d.st));
        kf_buf_printf(
            b, "%s |\n",
            json_is_true(json_object_get(r->integrity, "task_matches")) ? "" : " (the task on disk differs)");
    }
    kf_buf_printf(b, "\n## Nodes\n\nEach slot run's winners (the exported kernels).\n\n");
    for (int i = 0; i < s->nit; i++) {
        if (!s->slot_ok[i]) continue;
        const kf_rep *r = &s->slot[i];
        kf_buf_printf(b, "### Slot ");
        kf_report_escf(b, 1, "%s: %s", JS(json_array_get(its, (size_t)i), "slot"), s->slot_dir[i]);
        kf_buf_printf(b, "\n\n");
        for (size_t q = 0; q < r->d.a.n; q++)
            if (r->n[q].winner && r->n[q].detail) kf_report_node_md(b, r, (int)q);
    }
}

/* ---- JSON --------------------------------------------------------------------------------- */

char *kf_report_sys_json(const kf_sysrep *s) {
    json_t *r = json_deep_copy(s->rec), *runs = json_array();
    if (!r || !runs) {
        json_decref(r), json_decref(runs);
        return NULL;
    }
    json_t *its = json_object_get(s->rec, "iterations");
    for (int i = 0; i < s->nit; i++) {
        if (!s->slot_dir[i]) continue;
        const kf_rep *sr = &s->slot[i];
        json_t *o = json_pack("{s:s?, s:s}", "slot", JS(json_array_get(its, (size_t)i), "slot"), "run",
                              s->slot_dir[i]);
        if (!o) continue;
        if (s->slot_ok[i]) {
            json_object_update(o, sr->integrity);
            json_object_set_new(o, "task_fingerprint", json_string(kf_store_task_fingerprint(sr->d.st)));
        } else {
            json_object_set_new(o, "seals", json_string("not readable"));
        }
        json_array_append_new(runs, o);
    }
    json_t *in = json_deep_copy(s->integrity);
    if (in) json_object_set_new(in, "slot_runs", runs);
    else json_decref(runs);
    json_object_set_new(r, "local_wins", json_integer(s->wins));
    json_object_set_new(r, "local_win_global_loss", json_integer(s->lwgl));
    json_object_set_new(r, "local_win_global_loss_rate",
                        s->wins ? json_real((double)s->lwgl / s->wins) : json_null());
    json_object_set_new(r, "arbor_rate", json_real(KF_REPORT_ARBOR_LWGL));
    json_object_set_new(r, "integrity", in ? in : json_null());
    json_t *w = json_array();
    for (const char *p = s->warnings; w && p && *p;) {
        const char *e = strchr(p, '\n');
        size_t q = e ? (size_t)(e - p) : strlen(p);
        json_array_append_new(w, json_stringn(p, q));
        p += q + (e ? 1 : 0);
    }
    json_object_set_new(r, "warnings", w ? w : json_null());
    char *t = kf__json_dumps(r, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(6));
    json_decref(r);
    return t;
}
