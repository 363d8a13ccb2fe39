/*
 * html.c - the lineage report as one self-contained HTML page (docs/report.md): inline
 * CSS and SVG, no network, no framework. The page reads whole without JavaScript (the
 * timeline's and roofline's details are SVG titles, the tree is nested lists, every
 * node's section an anchor); the few lines of script only add a state filter to the tree
 * and mark the page as scripted (data-js="ok", which the browser tests read).
 *
 * A node's figures come from the typed verdicts report.c read (kf_rep_node's sh and
 * verdict); the keys read here belong to the tree's node document, the record's best
 * shapes and seals, and the lessons (report.c's note says which).
 *
 * Safety: every text of the run goes through kf_report_esc, in element text and in
 * attribute values alike; the script is a constant of this file and reads no data, so
 * nothing of a run is ever inside a <script> element. The colours are one table
 * (states[] and the :root variables), so the browser tests compare a screenshot with
 * the page's own values.
 */
#define _GNU_SOURCE
#include "report.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Each state's colour: the CSS classes s-NAME, the timeline's marks, the tree's badges. */
static const struct {
    const char *name, *colour;
} states[] = {
    {"kept", "#2e7d32"},         {"reverted", "#f9a825"},       {"vetoed", "#d81b60"},
    {"rejected", "#c62828"},     {"compile_failed", "#8e24aa"}, {"crashed", "#4e342e"},
    {"pruned", "#9e9e9e"},       {"screened", "#1e88e5"},       {"measured", "#00897b"},
    {"no_candidate", "#bdbdbd"}, {"proposed", "#cfd8dc"},       {"built", "#cfd8dc"},
    {"tampered", "#ff6f00"},
};
#define NSTATES (sizeof states / sizeof states[0])

/* The shapes' colours in the plots (the ninth and later share the last). */
static const char *const shape_colour[KF_REPORT_SHAPES_MAX] = {"#1565c0", "#ef6c00", "#6a1b9a", "#00838f",
                                                               "#ad1457", "#558b2f", "#4527a0", "#5d4037"};

#define ESC(b, s) kf_report_esc((b), (s), strlen(s), 0)

static const char script[] =
    "(function(){var f=document.getElementById('filter'),t=document.getElementById('lineage');"
    "if(f&&t){f.hidden=false;f.addEventListener('change',function(){"
    "if(f.value)t.setAttribute('data-only',f.value);else t.removeAttribute('data-only');});}"
    "document.documentElement.setAttribute('data-js','ok');})();";

static void css(kf_buf *b, const char *extra) {
    kf_buf_printf(b, "<style>\n:root{--bg:#ffffff;--fg:#1b1f24;--hdr:#1f3a5f;--ok:#2e7d32;--bad:#c62828;"
                     "--muted:#6b7280;--path:#fff4c2;--grid:#e5e7eb");
    for (size_t i = 0; i < NSTATES; i++) kf_buf_printf(b, ";--s-%s:%s", states[i].name, states[i].colour);
    kf_buf_printf(
        b,
        "}\n"
        "*{box-sizing:border-box}body{margin:0;background:var(--bg);color:var(--fg);"
        "font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif}\n"
        "header{height:56px;background:var(--hdr);color:#fff;padding:0 24px;display:flex;align-items:center;"
        "gap:16px;overflow:hidden;white-space:nowrap}header h1{font-size:18px;margin:0}\n"
        "#verdict{height:48px;padding:0 24px;display:flex;align-items:center;color:#fff;font-weight:600;"
        "overflow:hidden;white-space:nowrap}#verdict.ok{background:var(--ok)}#verdict.bad{background:var(--"
        "bad)}\n"
        "nav{padding:8px 24px;border-bottom:1px solid var(--grid)}nav a{margin-right:14px}\n"
        "main{padding:0 24px 48px;max-width:1200px}section{margin-top:28px}h2{font-size:18px;"
        "border-bottom:2px solid var(--hdr);padding-bottom:4px}\n"
        "table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid var(--grid);padding:3px 8px;"
        "text-align:left;vertical-align:top}th{background:#f3f4f6}\n"
        ".warn{background:#fdecea;border-left:6px solid var(--bad);padding:8px 12px;margin:6px "
        "0;font-weight:600}\n"
        ".muted{color:var(--muted)}.badge{display:inline-block;color:#fff;border-radius:3px;padding:0 6px;"
        "font-size:12px}.when{background:#e3f2fd;border:1px solid #90caf9;border-radius:3px;padding:0 4px;"
        "font-family:monospace;font-size:12px}\n"
        "ul.tree,ul.tree ul{list-style:none;padding-left:18px;margin:0}ul.tree{padding-left:0}"
        "ul.tree li{margin:1px 0}.line{padding:1px "
        "4px;border-radius:3px}li.path>.line{background:var(--path);"
        "font-weight:600}li.more>.line{color:var(--muted);font-style:italic}\n"
        "pre{background:#f8f9fb;border:1px solid var(--grid);padding:8px;overflow:auto;font-size:12px;"
        "max-height:480px}.diff .add{background:#e6ffed;display:block}.diff .del{background:#ffeef0;"
        "display:block}.diff .skip{color:var(--muted);display:block}\n"
        "article.node{border:1px solid var(--grid);border-radius:4px;padding:4px 12px;margin:12px 0}"
        "article.node:target{outline:3px solid var(--hdr)}svg text{font-size:11px;fill:var(--fg)}\n"
        ".legend span{margin-right:12px;white-space:nowrap}.sw{display:inline-block;width:12px;height:12px;"
        "vertical-align:middle;margin-right:4px}\n");
    for (size_t i = 0; i < NSTATES; i++) {
        kf_buf_printf(b, ".s-%s{fill:var(--s-%s);background:var(--s-%s)}", states[i].name, states[i].name,
                      states[i].name);
        kf_buf_printf(b, "#lineage[data-only=\"%s\"] li.node:not([data-state=\"%s\"])>.line{opacity:.3}\n",
                      states[i].name, states[i].name);
    }
    if (extra) kf_buf_append(b, extra, strlen(extra));
    kf_buf_printf(b, "</style>\n");
}

static void sizes_text(kf_buf *b, const json_t *sizes) {
    const char *k;
    json_t *v;
    int first = 1;
    json_object_foreach((json_t *)sizes, k, v) {
        kf_report_escf(b, 0, "%s%s=%lld", first ? "" : ",", k, (long long)json_integer_value(v));
        first = 0;
    }
}

static int shape_index(const kf_rep *r, const kf_verdict_sizes *sizes) {
    for (int k = 0; k < r->nshapes; k++)
        if (kf_verdict_sizes_equal(r->shapes[k], sizes)) return k;
    return 0;
}

/* The shapes a node was timed at, as the timeline and the winners read them: a screened
 * node's one short timing is no measurement (NULL). */
static const struct kf_verdict *measured(const kf_rep *r, int i) {
    return r->d.a.v[i].state == KF_NODE_SCREENED ? NULL : &r->n[i].sh;
}

static void node_link(kf_buf *b, const kf_rep *r, int64_t id) {
    const kf_node *p = kf_tree_find(&r->d.a, id);
    if (p && r->n[p - r->d.a.v].detail)
        kf_buf_printf(b, "<a href=\"#%sn-%lld\">#%lld</a>", r->anchor, (long long)id, (long long)id);
    else kf_buf_printf(b, "#%lld", (long long)id);
}

void kf_report_badge(kf_buf *b, const char *state) {
    kf_buf_printf(b, "<span class=\"badge s-");
    ESC(b, state);
    kf_buf_printf(b, "\">");
    ESC(b, state);
    kf_buf_printf(b, "</span>");
}

static void params_text(kf_buf *b, const json_t *p) {
    const char *k;
    json_t *v;
    int first = 1;
    json_object_foreach((json_t *)p, k, v) {
        if (json_is_string(v)) kf_report_escf(b, 0, "%s%s=%s", first ? "" : " ", k, json_string_value(v));
        else kf_report_escf(b, 0, "%s%s=%lld", first ? "" : " ", k, (long long)json_integer_value(v));
        first = 0;
    }
}

/* ---- the timeline ---------------------------------------------------------------------- */

static double ylog(double s, double lo, double hi, double top, double h) {
    if (s < lo) s = lo;
    if (s > hi) s = hi;
    return top + h - (log(s) - log(lo)) / (log(hi) - log(lo)) * h;
}

static void timeline(kf_buf *b, const kf_rep *r) {
    size_t n = r->d.a.n;
    const kf_node *v = r->d.a.v;
    kf_buf_printf(b, "<section id=\"timeline\"><h2>Timeline</h2>\n");
    if (!n) {
        kf_buf_printf(b, "<p class=\"muted\">No evaluations yet.</p></section>\n");
        return;
    }
    size_t marks = n > KF_REPORT_BINS ? KF_REPORT_BINS : n;
    if (marks < n)
        kf_buf_printf(b,
                      "<p class=\"muted\">%zu evaluations in %zu bins of about %zu: each mark is its bin's "
                      "most telling state (kept first), each point its best speedup at that shape.</p>\n",
                      n, marks, (n + marks - 1) / marks);
    else
        kf_buf_printf(b,
                      "<p class=\"muted\">Every evaluation in order: its state as a mark, its speedup over "
                      "the reference per shape as a point, the best kept so far as a line, the wall time "
                      "(and tokens) so far against the right axis. Hover for details.</p>\n");
    const double W = 1000, H = 300, L = 60, R = 64, T = 16, B = 56, ph = H - T - B, pw = W - L - R;
    double lo = 1, hi = 1, wall = 0, totw = 0;
    long long tok = 0, tott = 0;
    for (size_t i = 0; i < n; i++) {
        totw += v[i].cost_s, tott += v[i].tokens_in + v[i].tokens_out;
        const struct kf_verdict *sh = measured(r, (int)i);
        for (int k = 0; sh && k < sh->nshapes; k++) {
            double s = sh->shapes[k].speedup;
            if (s > 0 && s < lo) lo = s;
            if (s > hi) hi = s;
        }
    }
    lo = fmax(lo / 1.25, 1e-3), hi = fmin(hi * 1.25, 1e4);
    kf_buf_printf(b,
                  "<svg id=\"timeline-plot\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
                  "role=\"img\" aria-label=\"timeline\">\n",
                  W, H, W, H);
    /* grid: 1x and the powers of two in range */
    for (double g = pow(2, floor(log2(lo))); g <= hi; g *= 2) {
        if (g < lo) continue;
        double y = ylog(g, lo, hi, T, ph);
        kf_buf_printf(b,
                      "<line x1=\"%.0f\" x2=\"%.0f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"%s\"%s/>"
                      "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">%gx</text>\n",
                      L, W - R, y, y, g == 1 ? "#9ca3af" : "#e5e7eb",
                      g == 1 ? " stroke-dasharray=\"4 3\"" : "", L - 4, y + 4, g);
    }
    kf_buf_printf(
        b,
        "<text x=\"12\" y=\"%.0f\" transform=\"rotate(-90 12 %.0f)\" text-anchor=\"middle\">speedup "
        "over the reference</text>\n",
        T + ph / 2, T + ph / 2);
    double step = pw / (double)marks;
    kf_buf best_line, wall_line, tok_line;
    kf_buf_init(&best_line, 1u << 20), kf_buf_init(&wall_line, 1u << 20), kf_buf_init(&tok_line, 1u << 20);
    double best = 0;
    size_t i0 = 0;
    for (size_t m = 0; m < marks; m++) {
        size_t i1 = marks == n ? m + 1 : (size_t)((double)(m + 1) * (double)n / (double)marks);
        double x = L + (m + 0.5) * step;
        /* the bin's mark: kept if any, else its most frequent state */
        int cnt[NSTATES] = {0}, top = -1;
        double sbest[KF_REPORT_SHAPES_MAX] = {0};
        for (size_t i = i0; i < i1; i++) {
            const char *st = kf_report_state(r, (int)i);
            for (size_t q = 0; q < NSTATES; q++)
                if (!strcmp(st, states[q].name)) cnt[q]++;
            const struct kf_verdict *sh = measured(r, (int)i);
            for (int k = 0; sh && k < sh->nshapes; k++) {
                int si = shape_index(r, &sh->shapes[k].sizes);
                if (si >= KF_REPORT_SHAPES_MAX) si = KF_REPORT_SHAPES_MAX - 1;
                double s = sh->shapes[k].speedup;
                if (s > sbest[si]) sbest[si] = s;
            }
            if (v[i].state == KF_NODE_KEPT && v[i].speedup > best) best = v[i].speedup;
            wall += v[i].cost_s, tok += v[i].tokens_in + v[i].tokens_out;
        }
        for (size_t q = 0; q < NSTATES; q++)
            if (cnt[q] && (top < 0 || cnt[q] > cnt[top])) top = (int)q;
        if (cnt[0]) top = 0;
        kf_buf_printf(b,
                      "<rect class=\"mark s-%s\" x=\"%.2f\" y=\"%.0f\" width=\"%.2f\" height=\"12\"><title>",
                      states[top < 0 ? 0 : top].name, x - step / 2 + (step > 3 ? 0.5 : 0), T + ph + 8,
                      step > 3 ? step - 1 : step);
        if (i1 - i0 == 1) {
            kf_buf_printf(b, "#%lld %s", (long long)v[i0].id, kf_report_state(r, (int)i0));
            if (v[i0].speedup > 0) kf_buf_printf(b, " %.3fx", v[i0].speedup);
            if (v[i0].reasons) kf_report_escf(b, 0, " (%s)", v[i0].reasons);
        } else {
            kf_buf_printf(b, "#%lld-#%lld:", (long long)v[i0].id, (long long)v[i1 - 1].id);
            for (size_t q = 0; q < NSTATES; q++)
                if (cnt[q]) kf_buf_printf(b, " %d %s", cnt[q], states[q].name);
        }
        kf_buf_printf(b, "</title></rect>\n");
        for (int si = 0; si < KF_REPORT_SHAPES_MAX; si++) {
            if (!(sbest[si] > 0)) continue;
            kf_buf_printf(b, "<circle cx=\"%.2f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"><title>", x,
                          ylog(sbest[si], lo, hi, T, ph), shape_colour[si]);
            if (i1 - i0 == 1) kf_buf_printf(b, "#%lld ", (long long)v[i0].id);
            else kf_buf_printf(b, "#%lld-#%lld best ", (long long)v[i0].id, (long long)v[i1 - 1].id);
            if (si < r->nshapes) kf_report_sizes(b, r->shapes[si], 0);
            kf_buf_printf(b, ": %.3fx</title></circle>\n", sbest[si]);
        }
        if (best > 0) kf_buf_printf(&best_line, "%.1f,%.1f ", x, ylog(best, lo, hi, T, ph));
        if (totw > 0) kf_buf_printf(&wall_line, "%.1f,%.1f ", x, T + ph - wall / totw * ph);
        if (tott > 0) kf_buf_printf(&tok_line, "%.1f,%.1f ", x, T + ph - (double)tok / (double)tott * ph);
        i0 = i1;
    }
    if (best_line.p)
        kf_buf_printf(b,
                      "<polyline id=\"best-so-far\" points=\"%s\" fill=\"none\" stroke=\"#111827\" "
                      "stroke-width=\"2\"/>\n",
                      best_line.p);
    if (wall_line.p)
        kf_buf_printf(b,
                      "<polyline points=\"%s\" fill=\"none\" stroke=\"#6b7280\" stroke-dasharray=\"5 3\"/>\n",
                      wall_line.p);
    if (tok_line.p)
        kf_buf_printf(b,
                      "<polyline points=\"%s\" fill=\"none\" stroke=\"#0ea5e9\" stroke-dasharray=\"2 2\"/>\n",
                      tok_line.p);
    kf_buf_free(&best_line), kf_buf_free(&wall_line), kf_buf_free(&tok_line);
    kf_buf_printf(b,
                  "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"start\">%.0f s</text>"
                  "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"start\">0</text>\n",
                  W - R + 4, T + 4, totw, W - R + 4, T + ph);
    kf_buf_printf(b, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">evaluations #%lld to #%lld</text>\n",
                  L + pw / 2, H - 8, (long long)v[0].id, (long long)v[n - 1].id);
    kf_buf_printf(b, "</svg>\n<p class=\"legend\">");
    for (size_t q = 0; q < NSTATES; q++)
        kf_buf_printf(b, "<span><i class=\"sw s-%s\"></i>%s</span>", states[q].name, states[q].name);
    kf_buf_printf(b, "<br>");
    for (int k = 0; k < r->nshapes && k < KF_REPORT_SHAPES_MAX; k++) {
        kf_buf_printf(b, "<span><i class=\"sw\" style=\"background:%s\"></i>", shape_colour[k]);
        kf_report_sizes(b, r->shapes[k], 0);
        kf_buf_printf(b, "</span>");
    }
    kf_buf_printf(b,
                  "<span>&#8212; best kept so far</span><span>- - wall time so far (right axis, %.0f s in "
                  "all)</span>",
                  totw);
    if (tott) kf_buf_printf(b, "<span>&#183;&#183; tokens so far (%lld in all)</span>", tott);
    kf_buf_printf(b, "</p></section>\n");
}

/* ---- the tree -------------------------------------------------------------------------- */

static void tree_node(kf_buf *b, const kf_rep *r, int i, int *lines) {
    const kf_node *nd = &r->d.a.v[i];
    const kf_rep_node *rn = &r->n[i];
    const char *st = kf_report_state(r, i);
    kf_buf_printf(b, "<li class=\"node%s\" data-state=\"", rn->path ? " path" : "");
    ESC(b, st);
    kf_buf_printf(b, "\" data-id=\"%lld\"><span class=\"line\">", (long long)nd->id);
    kf_report_badge(b, st);
    kf_buf_printf(b, " ");
    node_link(b, r, nd->id);
    kf_report_escf(b, 0, " %s/%s", nd->proposer, nd->category);
    if (nd->params_json) {
        kf_buf_printf(b, " <code>");
        params_text(b, json_object_get(rn->j, "params"));
        kf_buf_printf(b, "</code>");
    }
    if (nd->speedup > 0)
        kf_buf_printf(b, " %s%.3fx", nd->state == KF_NODE_SCREENED ? "screened " : "", nd->speedup);
    double vp = json_number_value(json_object_get(rn->j, "speedup_vs_parent"));
    if (vp > 0) kf_buf_printf(b, " <span class=\"muted\">(%.3fx vs parent)</span>", vp);
    const char *when = r->d.whens ? r->d.whens[i] : NULL;
    if (when) {
        kf_buf_printf(b, " <span class=\"when\">when ");
        ESC(b, when);
        kf_buf_printf(b, "</span>");
    }
    if (rn->winner) kf_buf_printf(b, " <strong>winner</strong>");
    if (nd->reasons) kf_report_escf(b, 0, " (%s)", nd->reasons);
    kf_buf_printf(b, "</span>");
    (*lines)++;
    if (rn->first >= 0) {
        kf_buf_printf(b, "\n<ul>");
        for (int c = rn->first; c >= 0; c = r->n[c].next) {
            if (*lines >= KF_REPORT_TREE_MAX && !r->n[c].has_path) {
                kf_buf_printf(b,
                              "<li class=\"more\"><span class=\"line\">&#8230; %d node%s from #%lld down, "
                              "none on the way to a winner: not shown</span></li>\n",
                              r->n[c].size, r->n[c].size == 1 ? "" : "s", (long long)r->d.a.v[c].id);
                continue;
            }
            tree_node(b, r, c, lines);
        }
        kf_buf_printf(b, "</ul>");
    }
    kf_buf_printf(b, "</li>\n");
}

static void tree(kf_buf *b, const kf_rep *r) {
    kf_buf_printf(b,
                  "<section id=\"tree\"><h2>Tree</h2>\n<p class=\"muted\">Every node under its parent: "
                  "state, proposer/category, parameters, speedup over the reference (and over its "
                  "parent). Highlighted: the way to each winner; <span class=\"when\">when ...</span>: the "
                  "domain a specialisation is safe for.</p>\n<select id=\"filter\" hidden><option "
                  "value=\"\">every state</option>");
    for (size_t q = 0; q < NSTATES; q++) kf_buf_printf(b, "<option>%s</option>", states[q].name);
    kf_buf_printf(b,
                  "</select>\n<ul class=\"tree\" id=\"lineage\"><li class=\"root\"><span class=\"line\">#0 "
                  "root: the reference</span>\n<ul>");
    int lines = 0;
    for (int k = 0; k < r->nroots; k++) {
        int c = r->roots[k];
        if (lines >= KF_REPORT_TREE_MAX && !r->n[c].has_path) {
            kf_buf_printf(
                b,
                "<li class=\"more\"><span class=\"line\">&#8230; %d node%s from #%lld down, none on "
                "the way to a winner: not shown</span></li>\n",
                r->n[c].size, r->n[c].size == 1 ? "" : "s", (long long)r->d.a.v[c].id);
            continue;
        }
        tree_node(b, r, c, &lines);
    }
    kf_buf_printf(b, "</ul></li></ul></section>\n");
}

/* ---- winners and the roofline ---------------------------------------------------------- */

static const kf_verdict_shape *shape_of(const kf_rep *r, int w, const json_t *sizes) {
    const struct kf_verdict *sh = measured(r, w);
    for (int q = 0; sh && q < sh->nshapes; q++)
        if (kf_report_sizes_is(sizes, &sh->shapes[q].sizes)) return &sh->shapes[q];
    return NULL;
}

static void winners(kf_buf *b, const kf_rep *r) {
    kf_buf_printf(b, "<section id=\"shapes\"><h2>Winners per shape</h2>\n");
    if (!json_array_size(r->best)) {
        kf_buf_printf(b,
                      "<p>No node kept yet: none beat its parent, confirmed by re-timing.</p></section>\n");
        return;
    }
    kf_buf_printf(b,
                  "<table><tr><th>shape</th><th>winner</th><th>speedup</th><th>95%% interval</th><th>of the "
                  "roofline</th><th>safe for</th></tr>\n");
    size_t k;
    json_t *e;
    json_array_foreach(r->best, k, e) {
        int64_t id = json_integer_value(json_object_get(e, "node"));
        const kf_node *p = kf_tree_find(&r->d.a, id);
        int w = p ? (int)(p - r->d.a.v) : -1;
        const kf_verdict_shape *sh = w >= 0 ? shape_of(r, w, json_object_get(e, "sizes")) : NULL;
        kf_buf_printf(b, "<tr><td>");
        sizes_text(b, json_object_get(e, "sizes"));
        kf_buf_printf(b, "</td><td>");
        node_link(b, r, id);
        kf_buf_printf(b, "</td><td>%.3fx%s</td><td>", json_number_value(json_object_get(e, "speedup")),
                      json_is_true(json_object_get(e, "win")) ? " (a win)" : "");
        if (sh && (sh->has & KF_VS_CI95)) kf_buf_printf(b, "%.3f to %.3f", sh->ci95[0], sh->ci95[1]);
        else kf_buf_printf(b, "-");
        double rf = sh ? sh->roofline_fraction : 0;
        kf_buf_printf(b, "</td><td>");
        if (rf > 0) kf_buf_printf(b, "%.0f%%", rf * 100);
        else kf_buf_printf(b, "-");
        kf_buf_printf(b, "</td><td>");
        const char *sf = json_string_value(json_object_get(w >= 0 ? r->n[w].j : NULL, "safe_for"));
        if (sf) ESC(b, sf);
        kf_buf_printf(b, "</td></tr>\n");
    }
    kf_buf_printf(b, "</table></section>\n");
}

static double xlog(double v, double lo, double hi, double left, double w) {
    return left + (log(v) - log(lo)) / (log(hi) - log(lo)) * w;
}

static void roofline(kf_buf *b, const kf_rep *r) {
    kf_buf_printf(b, "<section id=\"roofline\"><h2>Roofline</h2>\n");
    double bw = r->ceilings ? r->ceilings->bytes_per_s / 1e9 : 0;
    double fl = r->ceilings ? r->ceilings->flops_per_s / 1e9 : 0;
    if (!r->nroof) {
        kf_buf_printf(b, "<p class=\"muted\">No measured kernel with a rate (the task has no cost model, or "
                         "nothing passed the check among the nodes shown).</p></section>\n");
        return;
    }
    if (bw > 0 && fl > 0) {
        kf_buf_printf(b, "<p class=\"muted\">Each measured kernel of the nodes shown, per shape: arithmetic "
                         "intensity (flop per byte) against its rate, under the ceilings kforge measured (");
        kf_report_ceilings(b, r->ceilings, 0);
        kf_buf_printf(b, ").</p>\n");
    }
    double xlo = 1e30, xhi = 0, ylo = 1e30, yhi = 0;
    for (int k = 0; k < r->nroof; k++) {
        double x = r->roof[k].ai, y = r->roof[k].gflops;
        xlo = fmin(xlo, x), xhi = fmax(xhi, x), ylo = fmin(ylo, y), yhi = fmax(yhi, y);
    }
    if (bw > 0 && fl > 0) xlo = fmin(xlo, fl / bw / 4), xhi = fmax(xhi, fl / bw * 4), yhi = fmax(yhi, fl);
    xlo /= 2, xhi *= 2, ylo /= 2, yhi *= 2;
    const double W = 640, H = 360, L = 64, R = 16, T = 12, B = 44, pw = W - L - R, ph = H - T - B;
    kf_buf_printf(b,
                  "<svg id=\"roofline-plot\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
                  "role=\"img\" aria-label=\"roofline\">\n<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" "
                  "height=\"%.0f\" fill=\"none\" stroke=\"#e5e7eb\"/>\n",
                  W, H, W, H, L, T, pw, ph);
    if (bw > 0 && fl > 0) {
        kf_buf_printf(
            b, "<polyline id=\"ceiling\" fill=\"none\" stroke=\"#111827\" stroke-width=\"2\" points=\"");
        for (int s = 0; s <= 64; s++) {
            double x = xlo * pow(xhi / xlo, s / 64.0), y = fmin(fl, x * bw);
            if (y < ylo) continue;
            kf_buf_printf(b, "%.1f,%.1f ", xlog(x, xlo, xhi, L, pw), T + ph - xlog(y, ylo, yhi, 0, ph));
        }
        kf_buf_printf(b, "\"/>\n");
    }
    for (int k = 0; k < r->nroof; k++) {
        const kf_rep_roof *e = &r->roof[k];
        int64_t id = e->node;
        const kf_node *p = kf_tree_find(&r->d.a, id);
        const char *st = p ? kf_report_state(r, (int)(p - r->d.a.v)) : "measured";
        double x = e->ai, y = e->gflops;
        kf_buf_printf(b, "<circle class=\"s-");
        ESC(b, st);
        kf_buf_printf(b, "\" cx=\"%.1f\" cy=\"%.1f\" r=\"4\" stroke=\"#fff\"><title>#%lld ",
                      xlog(x, xlo, xhi, L, pw), T + ph - xlog(y, ylo, yhi, 0, ph), (long long)id);
        kf_report_sizes(b, e->sizes, 0);
        kf_buf_printf(b, ": %.3f flop/byte, %.3f GFLOP/s, %.0f%% of the roofline</title></circle>\n", x, y,
                      e->fraction * 100);
    }
    kf_buf_printf(
        b,
        "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">flop per byte (%.3g to %.3g, log)</text>"
        "<text x=\"12\" y=\"%.0f\" transform=\"rotate(-90 12 %.0f)\" text-anchor=\"middle\">GFLOP/s "
        "(%.3g to %.3g, log)</text>\n</svg></section>\n",
        L + pw / 2, H - 10, xlo, xhi, T + ph / 2, T + ph / 2, ylo, yhi);
}

/* ---- failures, lessons, cost ----------------------------------------------------------- */

static void failures(kf_buf *b, const kf_rep *r) {
    size_t n = r->d.a.n;
    const kf_node *v = r->d.a.v;
    kf_buf_printf(b, "<section id=\"failures\"><h2>Failures</h2>\n");
    json_t *rc = json_object(), *dc = json_object();
    for (size_t i = 0; i < n; i++) {
        const char *cls =
            json_string_value(json_object_get(json_object_get(r->n[i].j, "diagnosis"), "class"));
        if (cls) json_object_set_new(dc, cls, json_integer(json_integer_value(json_object_get(dc, cls)) + 1));
        if (!v[i].reasons) continue;
        char tmp[512];
        snprintf(tmp, sizeof tmp, "%s", v[i].reasons);
        for (char *save = NULL, *t = strtok_r(tmp, ",", &save); t; t = strtok_r(NULL, ",", &save))
            json_object_set_new(rc, t, json_integer(json_integer_value(json_object_get(rc, t)) + 1));
    }
    kf_buf_printf(b, "<h3>Reason codes</h3>\n");
    if (!json_object_size(rc)) kf_buf_printf(b, "<p>No node was rejected.</p>\n");
    else kf_buf_printf(b, "<table id=\"reasons\"><tr><th>reason</th><th>nodes</th></tr>\n");
    const char *key;
    json_t *val;
    json_object_foreach(rc, key, val) {
        kf_buf_printf(b, "<tr><td><code>");
        ESC(b, key);
        kf_buf_printf(b, "</code></td><td>%lld</td></tr>\n", (long long)json_integer_value(val));
    }
    if (json_object_size(rc)) kf_buf_printf(b, "</table>\n");
    if (json_object_size(dc)) {
        kf_buf_printf(b, "<h3>Diagnoses</h3><table><tr><th>class</th><th>nodes</th></tr>\n");
        json_object_foreach(dc, key, val) {
            kf_buf_printf(b, "<tr><td>");
            ESC(b, key);
            kf_buf_printf(b, "</td><td>%lld</td></tr>\n", (long long)json_integer_value(val));
        }
        kf_buf_printf(b, "</table>\n");
    }
    json_decref(rc), json_decref(dc);
    kf_buf_printf(b, "<h3>Constraints learnt</h3>\n");
    size_t k;
    json_t *e;
    if (!json_array_size(r->constraints)) kf_buf_printf(b, "<p>None.</p>\n");
    else kf_buf_printf(b, "<ul>");
    json_array_foreach(r->constraints, k, e) {
        kf_buf_printf(b, "<li><code>");
        ESC(b, json_string_value(json_object_get(e, "text")));
        kf_buf_printf(b, "</code> (from ");
        node_link(b, r, json_integer_value(json_object_get(e, "node")));
        kf_buf_printf(b, ")</li>\n");
    }
    if (json_array_size(r->constraints)) kf_buf_printf(b, "</ul>\n");
    kf_buf_printf(b, "<h3>The Critic's refusals</h3>\n");
    int nv = 0;
    for (size_t i = 0; i < n; i++) {
        json_t *cr = json_object_get(r->n[i].j, "critic");
        const char *d = json_string_value(json_object_get(cr, "decision"));
        if (!d || !strcmp(d, "approve")) continue;
        if (!nv)
            kf_buf_printf(b, "<table id=\"vetoes\"><tr><th>node</th><th>decision</th><th>why</th><th>"
                             "re-timings against the parent</th></tr>\n");
        if (++nv > 200) continue;
        kf_buf_printf(b, "<tr><td>");
        node_link(b, r, v[i].id);
        kf_buf_printf(b, "</td><td>");
        ESC(b, d);
        if (r->n[i].vetoed) kf_buf_printf(b, " (veto)");
        kf_buf_printf(b, "</td><td>");
        const char *why = json_string_value(json_object_get(cr, "why"));
        if (why) ESC(b, why);
        kf_buf_printf(b, "</td><td>");
        json_t *f;
        size_t q;
        json_array_foreach(json_object_get(cr, "retimings"), q, f) kf_buf_printf(
            b, "%s#%zu %.3fx (best shape %.3fx, 95%% from %.3f)", q ? "<br>" : "", q + 1,
            json_number_value(json_object_get(f, "geomean")), json_number_value(json_object_get(f, "best")),
            json_number_value(json_object_get(f, "best_lo")));
        kf_buf_printf(b, "</td></tr>\n");
    }
    if (nv > 200) kf_buf_printf(b, "<tr><td colspan=\"4\">&#8230; %d more</td></tr>\n", nv - 200);
    if (nv) kf_buf_printf(b, "</table>\n");
    else kf_buf_printf(b, "<p>None.</p>\n");
    kf_buf_printf(b, "<h3>Circuit breaker</h3>\n");
    if (!r->breakers || !*r->breakers) kf_buf_printf(b, "<p>No trips.</p>\n");
    else {
        kf_buf_printf(b, "<pre>");
        ESC(b, r->breakers);
        kf_buf_printf(b, "</pre>\n");
    }
    kf_buf_printf(b, "</section>\n");
}

static void lessons(kf_buf *b, const kf_rep *r) {
    kf_buf_printf(b, "<section id=\"lessons\"><h2>Lessons</h2>\n<h3>Used by the run</h3>\n");
    if (!r->lessons_used)
        kf_buf_printf(b, "<p>None recorded (the builtin's walk started from no lessons).</p>\n");
    else {
        kf_buf_printf(b, "<p>From <code>");
        const char *db = json_string_value(json_object_get(r->lessons_used, "db"));
        if (db) ESC(b, db);
        kf_buf_printf(b, "</code>: %zu applied of %lld retrieved.</p><ul>\n",
                      json_array_size(json_object_get(r->lessons_used, "applied")),
                      (long long)json_integer_value(json_object_get(r->lessons_used, "retrieved")));
        size_t k;
        json_t *a;
        json_array_foreach(json_object_get(r->lessons_used, "applied"), k, a) {
            kf_buf_printf(b, "<li>");
            kf_report_escf(b, 0, "%s: %s (weight %+.2f)", json_string_value(json_object_get(a, "id")),
                           json_string_value(json_object_get(a, "setting")),
                           json_number_value(json_object_get(a, "weight")));
            kf_buf_printf(b, "</li>\n");
        }
        kf_buf_printf(b, "</ul>\n");
    }
    kf_buf_printf(b, "<h3>Distilled from the run</h3>\n");
    if (!r->lessons_made) {
        kf_buf_printf(b, "<p>");
        ESC(b, r->distill_note);
        kf_buf_printf(b, "</p>\n");
    } else if (!json_array_size(r->lessons_made)) {
        kf_buf_printf(b, "<p>None: no change won or lost often enough to teach something.</p>\n");
    } else {
        kf_buf_printf(b, "<table><tr><th>situation</th><th>action</th><th>scope</th></tr>\n");
        size_t k;
        json_t *l;
        json_array_foreach(r->lessons_made, k, l) {
            const char *s = json_string_value(json_object_get(l, "situation"));
            const char *a = json_string_value(json_object_get(l, "action"));
            json_t *sc = json_object_get(l, "scope");
            char *scs = sc ? kf__json_dumps(sc, JSON_COMPACT) : NULL;
            kf_buf_printf(b, "<tr><td>");
            if (s) ESC(b, s);
            kf_buf_printf(b, "</td><td>");
            if (a) ESC(b, a);
            kf_buf_printf(b, "</td><td><code>");
            if (scs) ESC(b, scs);
            kf_buf_printf(b, "</code></td></tr>\n");
            free(scs);
        }
        kf_buf_printf(b, "</table>\n");
    }
    kf_buf_printf(b, "</section>\n");
}

static void cost(kf_buf *b, const kf_rep *r) {
    size_t n = r->d.a.n;
    const kf_node *v = r->d.a.v;
    kf_buf_printf(b,
                  "<section id=\"cost\"><h2>Cost</h2>\n<table><tr><th>proposer</th><th>nodes</th><th>tokens "
                  "in</th><th>tokens out</th><th>seconds (proposing and evaluating)</th></tr>\n");
    json_t *pc = json_object();
    for (size_t i = 0; i < n; i++) {
        json_t *p = json_object_get(pc, v[i].proposer);
        if (!p) json_object_set_new(pc, v[i].proposer, p = json_pack("[i, I, I, f]", 0, 0, 0, 0.0));
        json_array_set_new(p, 0, json_integer(json_integer_value(json_array_get(p, 0)) + 1));
        json_array_set_new(p, 1, json_integer(json_integer_value(json_array_get(p, 1)) + v[i].tokens_in));
        json_array_set_new(p, 2, json_integer(json_integer_value(json_array_get(p, 2)) + v[i].tokens_out));
        json_array_set_new(p, 3, json_real(json_number_value(json_array_get(p, 3)) + v[i].cost_s));
    }
    const char *key;
    json_t *val;
    json_object_foreach(pc, key, val) {
        kf_buf_printf(b, "<tr><td>");
        ESC(b, key);
        kf_buf_printf(b, "</td><td>%lld</td><td>%lld</td><td>%lld</td><td>%.1f</td></tr>\n",
                      (long long)json_integer_value(json_array_get(val, 0)),
                      (long long)json_integer_value(json_array_get(val, 1)),
                      (long long)json_integer_value(json_array_get(val, 2)),
                      json_number_value(json_array_get(val, 3)));
    }
    json_decref(pc);
    kf_buf_printf(b, "</table>\n");
    if (r->t1 > r->t0)
        kf_buf_printf(b, "<p>Wall clock from the first proposal to the last outcome: %.1f s.</p>\n",
                      r->t1 - r->t0);
    kf_buf_printf(b, "</section>\n");
}

/* ---- integrity and the node sections ----------------------------------------------------- */

static void integrity(kf_buf *b, const kf_rep *r) {
    const json_t *in = r->integrity;
    kf_buf_printf(b, "<section id=\"integrity\"><h2>Integrity</h2>\n");
    kf_report_lines(b, r->warnings, "<p class=\"warn\">", "</p>\n", 0);
    kf_buf_printf(b, "<table id=\"integrity-table\"><tr><th>seals</th><td id=\"seals\">");
    const char *seals = json_string_value(json_object_get(in, "seals"));
    ESC(b, seals ? seals : "?");
    kf_buf_printf(b, "</td></tr><tr><th>seal key</th><td><code>");
    const char *key = json_string_value(json_object_get(in, "key"));
    if (key) ESC(b, key);
    kf_buf_printf(b, "</code></td></tr><tr><th>nodes that do not match their seal</th><td>");
    size_t k;
    json_t *e;
    json_array_foreach(json_object_get(in, "tampered"), k, e) {
        kf_buf_printf(b, "%s", k ? ", " : "");
        node_link(b, r, json_integer_value(e));
    }
    if (!json_array_size(json_object_get(in, "tampered"))) kf_buf_printf(b, "none");
    kf_buf_printf(b,
                  "</td></tr><tr><th>events that do not match, rows deleted</th><td>%lld; %lld nodes, %lld "
                  "events</td></tr>\n",
                  (long long)json_integer_value(json_object_get(in, "events_tampered")),
                  (long long)json_integer_value(json_object_get(in, "nodes_deleted")),
                  (long long)json_integer_value(json_object_get(in, "events_deleted")));
    kf_buf_printf(b, "<tr><th>task</th><td><code>");
    ESC(b, kf_store_task_dir(r->d.st));
    kf_buf_printf(b, "</code>, fingerprint <code>");
    ESC(b, kf_store_task_fingerprint(r->d.st));
    kf_buf_printf(b, "</code> (%s)</td></tr>\n",
                  json_is_true(json_object_get(in, "task_matches")) ? "the task on disk matches"
                                                                    : "the task on disk is not this one");
    kf_buf_printf(b, "<tr><th>kforge</th><td>%s</td></tr><tr><th>machine and device</th><td>", KF_VERSION);
    if (r->ceilings) {
        json_t *cj = kf_verdict_ceilings_json(r->ceilings);
        char *cs = cj ? kf__json_dumps(cj, JSON_COMPACT) : NULL;
        json_decref(cj);
        kf_buf_printf(b, "the backend's measured ceilings: <code>");
        if (cs) ESC(b, cs);
        kf_buf_printf(b, "</code>; ");
        free(cs);
    }
    kf_buf_printf(b, "report written on ");
    ESC(b, r->made_on);
    char when[64] = "";
    time_t t = (time_t)r->written;
    struct tm tm;
    if (gmtime_r(&t, &tm)) strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &tm);
    kf_buf_printf(b, ", %s</td></tr></table></section>\n", when);
}

static void diff_html(kf_buf *b, const char *d) {
    kf_buf_printf(b, "<pre class=\"diff\">");
    for (const char *p = d; *p;) {
        const char *e = strchr(p, '\n');
        size_t k = e ? (size_t)(e - p) : strlen(p);
        const char *cls = *p == '+' ? "add" : *p == '-' ? "del" : *p == '@' ? "skip" : NULL;
        if (cls) kf_buf_printf(b, "<span class=\"%s\">", cls);
        kf_report_esc(b, p, k, 0);
        kf_buf_printf(b, cls ? "</span>" : "\n");
        p += k + (e ? 1 : 0);
    }
    kf_buf_printf(b, "</pre>\n");
}

void kf_report_node_html(kf_buf *b, const kf_rep *r, int i) {
    const kf_node *nd = &r->d.a.v[i];
    const kf_rep_node *rn = &r->n[i];
    const char *st = kf_report_state(r, i);
    kf_buf_printf(b, "<article class=\"node\" id=\"%sn-%lld\"><h3>#%lld ", r->anchor, (long long)nd->id,
                  (long long)nd->id);
    kf_report_badge(b, st);
    if (rn->winner) kf_buf_printf(b, " winner");
    kf_buf_printf(b, "</h3>\n<p>Parent ");
    if (nd->parent) node_link(b, r, nd->parent);
    else kf_buf_printf(b, "#0 (the reference)");
    kf_report_escf(b, 0, "; %s/%s", nd->proposer, nd->category);
    if (nd->params_json) {
        kf_buf_printf(b, "; <code>");
        params_text(b, json_object_get(rn->j, "params"));
        kf_buf_printf(b, "</code>");
    }
    const char *sf = json_string_value(json_object_get(rn->j, "safe_for"));
    if (sf) kf_report_escf(b, 0, "; safe for %s", sf);
    kf_buf_printf(b, "</p>\n");
    const char *desc = json_string_value(json_object_get(rn->j, "description"));
    if (desc) {
        kf_buf_printf(b, "<p>Description: <q>");
        ESC(b, desc);
        kf_buf_printf(b, "</q></p>\n");
    }
    if (nd->note) {
        kf_buf_printf(b, "<p class=\"note\">Note: ");
        ESC(b, nd->note);
        kf_buf_printf(b, "</p>\n");
    }
    /* the verdict: its word, reasons with messages, build and check times */
    const struct kf_verdict *vd = rn->has_verdict ? &rn->verdict : NULL;
    kf_buf_printf(b, "<p>Verdict: <strong>");
    const char *vw = !vd                                  ? NULL
                     : vd->verdict_word                   ? vd->verdict_word
                     : vd->verdict == KF_VERDICT_ACCEPTED ? "accepted"
                                                          : "rejected";
    ESC(b, nd->tampered ? "not trusted (its row does not match its seal)" : vw ? vw : st);
    kf_buf_printf(b, "</strong>");
    if (vd && vd->has_compile)
        kf_buf_printf(b, "; compiled in %.2f s%s", vd->compile_seconds,
                      vd->compile_cached ? " (cached)" : "");
    /* a bench's verdict: the check's own time */
    double cs = !vd ? 0 : vd->has_check ? vd->check_seconds : vd->seconds;
    if (cs > 0) kf_buf_printf(b, "; checked in %.2f s", cs);
    if (nd->cost_s > 0) kf_buf_printf(b, "; %.1f s in all", nd->cost_s);
    kf_buf_printf(b, "</p>\n");
    if (vd && vd->nreasons) {
        kf_buf_printf(b, "<ul class=\"reasons\">");
        for (int k = 0; k < vd->nreasons; k++) {
            if (k >= 20) break;
            kf_buf_printf(b, "<li><code>");
            const char *code = kf_verdict_reason_code(&vd->reasons[k]);
            if (code) ESC(b, code);
            kf_buf_printf(b, "</code> ");
            const char *msg = vd->reasons[k].message;
            if (msg) kf_report_esc(b, msg, strnlen(msg, 2000), 0);
            kf_buf_printf(b, "</li>");
        }
        kf_buf_printf(b, "</ul>\n");
    } else if (nd->reasons) {
        kf_buf_printf(b, "<p>Reasons: <code>");
        ESC(b, nd->reasons);
        kf_buf_printf(b, "</code></p>\n");
    }
    if (rn->sh.nshapes) {
        kf_buf_printf(
            b, "<table class=\"timings\"><tr><th>shape</th><th>speedup</th><th>95%% interval</th><th>"
               "candidate ns</th><th>baseline ns</th><th>vs parent</th><th>of the roofline</th></tr>\n");
        /* the tree's own record of the speedups against the parent (kf_tree_node_json) */
        json_t *vp = json_object_get(rn->j, "vs_parent");
        for (int k = 0; k < rn->sh.nshapes; k++) {
            const kf_verdict_shape *e = &rn->sh.shapes[k];
            kf_buf_printf(b, "<tr><td>");
            kf_report_sizes(b, &e->sizes, 0);
            kf_buf_printf(b, "</td><td>%.3fx%s</td><td>", e->speedup,
                          (e->has & KF_VS_WIN) && e->win ? " (a win)" : "");
            if (e->has & KF_VS_CI95) kf_buf_printf(b, "%.3f to %.3f", e->ci95[0], e->ci95[1]);
            kf_buf_printf(b, "</td><td>%.0f</td><td>%.0f</td><td>", e->candidate_ns, e->baseline_ns);
            size_t q;
            json_t *pe;
            json_array_foreach(vp, q, pe) if (kf_report_sizes_is(json_object_get(pe, "sizes"), &e->sizes))
                kf_buf_printf(b, "%.3fx", json_number_value(json_object_get(pe, "speedup")));
            double rf = e->roofline_fraction;
            kf_buf_printf(b, "</td><td>");
            if (rf > 0) kf_buf_printf(b, "%.0f%%", rf * 100);
            kf_buf_printf(b, "</td></tr>\n");
        }
        kf_buf_printf(b, "</table>\n");
    }
    json_t *cr = json_object_get(rn->j, "critic");
    const char *cd = json_string_value(json_object_get(cr, "decision"));
    if (cd) {
        kf_buf_printf(b, "<p>The Critic: <strong>");
        ESC(b, cd);
        kf_buf_printf(b, "</strong>: ");
        const char *why = json_string_value(json_object_get(cr, "why"));
        if (why) ESC(b, why);
        kf_buf_printf(b, "</p>\n");
    }
    const char *dn = json_string_value(json_object_get(json_object_get(rn->j, "diagnosis"), "note"));
    if (dn) {
        kf_buf_printf(b, "<p>Why it failed: ");
        ESC(b, dn);
        kf_buf_printf(b, "</p>\n");
    }
    if (rn->diff) {
        kf_buf_printf(b, "<p>Against its parent:</p>\n");
        diff_html(b, rn->diff);
    }
    if (rn->src) {
        size_t nl = 0;
        for (const char *p = rn->src; *p; p++) nl += *p == '\n';
        kf_buf_printf(
            b, "<details%s><summary>source (%zu lines, <code>src/%s.%s</code>)</summary><pre class=\"src\">",
            rn->diff ? "" : " open", nl, nd->src_hash, nd->ext);
        ESC(b, rn->src);
        kf_buf_printf(b, "</pre></details>\n");
    } else {
        kf_buf_printf(b, "<p class=\"muted\">Source not readable (missing or damaged).</p>\n");
    }
    kf_buf_printf(b, "</article>\n");
}

/* The script's hash for the page's Content-Security-Policy: the one script that may run. */
static void script_hash(char out[48]) {
    const void *parts[1] = {script};
    size_t lens[1] = {sizeof script - 1};
    char hex[65];
    unsigned char d[33] = {0};
    out[0] = 0;
    if (kf__sha256_hex(parts, lens, 1, hex)) return;
    for (int i = 0; i < 32; i++) {
        unsigned hi = (unsigned)(hex[2 * i] <= '9' ? hex[2 * i] - '0' : hex[2 * i] - 'a' + 10);
        unsigned lo = (unsigned)(hex[2 * i + 1] <= '9' ? hex[2 * i + 1] - '0' : hex[2 * i + 1] - 'a' + 10);
        d[i] = (unsigned char)(hi << 4 | lo);
    }
    static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    int o = 0;
    for (int i = 0; i < 32; i += 3) {
        unsigned v = (unsigned)d[i] << 16 | (unsigned)d[i + 1] << 8 | (i + 2 < 32 ? d[i + 2] : 0);
        out[o++] = b64[v >> 18 & 63], out[o++] = b64[v >> 12 & 63];
        out[o++] = b64[v >> 6 & 63], out[o++] = i + 2 < 32 ? b64[v & 63] : '=';
    }
    out[o] = 0;
}

void kf_report_page_head(kf_buf *b, const char *title, const char *extra_css) {
    char hash[48];
    script_hash(hash);
    /* nothing from the network, and no script but this file's own (by its hash) */
    kf_buf_printf(
        b,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<meta name=\"viewport\" "
        "content=\"width=device-width\">\n<meta http-equiv=\"Content-Security-Policy\" "
        "content=\"default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-%s'; "
        "img-src data:\">\n<title>kforge report: ",
        hash);
    ESC(b, title);
    kf_buf_printf(b, "</title>\n");
    css(b, extra_css);
    kf_buf_printf(b, "</head>\n<body>\n<header><h1>kforge report</h1><span>");
    ESC(b, title);
    kf_buf_printf(b, "</span></header>\n");
}

void kf_report_page_tail(kf_buf *b) { kf_buf_printf(b, "<script>%s</script>\n</body></html>\n", script); }

void kf_report_html(kf_buf *b, const kf_rep *r) {
    size_t n = r->d.a.n;
    const kf_node *v = r->d.a.v;
    int bad = r->warnings && strstr(r->warnings, "WARNING");
    kf_report_page_head(b, r->dir, NULL);
    kf_buf_printf(b, "<div id=\"verdict\" class=\"%s\">", bad ? "bad" : "ok");
    int kept = 0;
    for (size_t i = 0; i < n; i++) kept += v[i].state == KF_NODE_KEPT;
    if (bad) kf_buf_printf(b, "WARNING: this run's records do not match their seals: see Integrity. ");
    kf_buf_printf(b, "%zu node%s, %d kept; %zu shape%s with a verified winner", n, n == 1 ? "" : "s", kept,
                  json_array_size(r->best), json_array_size(r->best) == 1 ? "" : "s");
    double best = 0;
    for (size_t i = 0; i < n; i++)
        if (v[i].state == KF_NODE_KEPT && v[i].speedup > best) best = v[i].speedup;
    if (best > 0) kf_buf_printf(b, "; best kept %.3fx geomean", best);
    kf_buf_printf(
        b,
        "</div>\n<nav><a href=\"#integrity\">Integrity</a><a href=\"#timeline\">Timeline</a><a "
        "href=\"#tree\">Tree</a><a href=\"#shapes\">Winners</a><a href=\"#roofline\">Roofline</a><a "
        "href=\"#failures\">Failures</a><a href=\"#lessons\">Lessons</a><a href=\"#cost\">Cost</a><a "
        "href=\"#nodes\">Nodes</a></nav>\n<main data-nodes=\"%zu\">\n",
        n);
    kf_buf_printf(b, "<p>Task <code>");
    ESC(b, kf_store_task_dir(r->d.st));
    kf_buf_printf(
        b,
        "</code>: %zu nodes. Speedups are against the reference; a kept node's figures are the lower of "
        "its timing and the Critic's re-timings.</p>\n",
        n);
    integrity(b, r);
    timeline(b, r);
    tree(b, r);
    winners(b, r);
    roofline(b, r);
    failures(b, r);
    lessons(b, r);
    cost(b, r);
    kf_buf_printf(b, "<section id=\"nodes\"><h2>Nodes</h2>\n");
    if ((size_t)r->ndetail < n)
        kf_buf_printf(
            b,
            "<p class=\"muted\">%d of %zu nodes have a section: the winners and the way to them, one "
            "of each state and reason, then the earliest.</p>\n",
            r->ndetail, n);
    for (size_t i = 0; i < n; i++)
        if (r->n[i].detail) kf_report_node_html(b, r, (int)i);
    kf_buf_printf(b, "</section>\n</main>\n");
    kf_report_page_tail(b);
}
