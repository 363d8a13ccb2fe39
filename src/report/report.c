/*
 * report.c - `kforge report RUN` (docs/report.md): a run's whole path as one page. It
 * reads the run through the records that `kforge tree` reads (kf_tree_load: the nodes, the
 * Critic's decisions, the diagnoses, the domains), adds what a page needs besides (the
 * seals' report, the winners per shape and the way to them, the sources, verdicts and
 * diffs of the nodes that get a section, the ceilings and the roofline points, the
 * constraints, the breaker's trips, the lessons used and those the run teaches), and
 * hands that to one of two renderers: the HTML page (html.c) or Markdown (here).
 *
 * Large runs stay small and quick: at most KF_REPORT_DETAIL_MAX nodes get a section
 * (the winners and the way to them first, then one of each state and reason, then the
 * earliest), the tree collapses whole subtrees off the winners' paths past
 * KF_REPORT_TREE_MAX lines, and the timeline bins evaluations past KF_REPORT_BINS.
 * The verdicts stored per node (its shapes_json and, for a node with a section, its
 * verdict_json) are read once each into the typed verdict (check/verdict.h) and the
 * renderers read its fields: verdict.c alone knows their keys. Documents read by key
 * here and in html.c are those of other modules, which are not verdicts: the node as
 * `kforge tree --json` gives it (kf_tree_node_json: params, safe_for, description, the
 * Critic's record, the diagnosis, vs_parent), kf_record_best_shapes and
 * kf_record_integrity, the lessons event and the distilled lessons.
 * Every text read from the run (sources, notes, reasons, an agent's description) reaches
 * the output through kf_report_esc, the one escaper. Read-only: nothing here writes to the
 * run; the lessons it distils go to a scratch database that is removed.
 */
#define _GNU_SOURCE
#include "report.h"

#include "../lessons/lessons.h"
#include "../loop/loop.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

void kf_report_esc(kf_buf *b, const char *s, size_t n, int md) {
    size_t from = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        const char *rep = NULL;
        char one[2] = {0, 0};
        switch (c) {
        case '&': rep = "&amp;"; break;
        case '<': rep = "&lt;"; break;
        case '>': rep = "&gt;"; break;
        case '"': rep = "&quot;"; break;
        case '\'': rep = "&#39;"; break;
        case '|': rep = md ? "\\|" : NULL; break;
        case '\n': rep = md ? " " : NULL; break;
        case '\t': break;
        default:
            if (c < 0x20 || c == 0x7f) rep = ""; /* control bytes say nothing on a page */
        }
        if (c == '\r' && md) one[0] = ' ', rep = one;
        if (!rep) continue;
        kf_buf_append(b, s + from, i - from);
        kf_buf_append(b, rep, strlen(rep));
        from = i + 1;
    }
    kf_buf_append(b, s + from, n - from);
}

void kf_report_lines(kf_buf *b, const char *text, const char *pre, const char *post, int md) {
    for (const char *p = text; p && *p;) {
        const char *e = strchr(p, '\n');
        size_t k = e ? (size_t)(e - p) : strlen(p);
        kf_buf_printf(b, "%s", pre);
        kf_report_esc(b, p, k, md);
        kf_buf_printf(b, "%s", post);
        p += k + (e ? 1 : 0);
    }
}

void kf_report_escf(kf_buf *b, int md, const char *fmt, ...) {
    char small[512], *big = NULL;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (k < 0) return;
    const char *s = small;
    if ((size_t)k >= sizeof small) {
        if (!(big = malloc((size_t)k + 1))) return;
        va_start(ap, fmt);
        vsnprintf(big, (size_t)k + 1, fmt, ap);
        va_end(ap);
        s = big;
    }
    kf_report_esc(b, s, (size_t)k, md);
    free(big);
}

void kf_report_ceilings(kf_buf *b, const kf_verdict_ceilings *c, int md) {
    kf_buf_printf(b, "%.2f GB/s copy, %.2f GFLOP/s", c->bytes_per_s / 1e9, c->flops_per_s / 1e9);
    if (c->device) kf_report_escf(b, md, ", %s", c->device);
    else if (c->cores > 0) kf_buf_printf(b, ", %lld cores", (long long)c->cores);
}

void kf_report_sizes(kf_buf *b, const kf_verdict_sizes *s, int md) {
    for (int k = 0; k < s->n; k++)
        kf_report_escf(b, md, "%s%s=%lld", k ? "," : "", s->name[k], (long long)s->v[k]);
}

int kf_report_sizes_is(const json_t *sizes, const kf_verdict_sizes *s) {
    if (!sizes) return 0;
    json_t *j = kf_verdict_sizes_json(s);
    int eq = json_equal(j, (json_t *)sizes);
    json_decref(j);
    return eq;
}

const char *kf_report_state(const kf_rep *r, int i) {
    const kf_node *n = &r->d.a.v[i];
    if (n->tampered) return "tampered";
    if (r->n[i].vetoed && n->state == KF_NODE_REVERTED) return "vetoed";
    return kf_node_state_name(n->state);
}

/* ---- the diff against the parent ---------------------------------------------------- */

typedef struct {
    const char **p;
    size_t *len;
    size_t n;
} text_lines;

static int split_lines(const char *s, text_lines *l) {
    l->n = 0;
    size_t cap = 64;
    l->p = malloc(cap * sizeof *l->p), l->len = malloc(cap * sizeof *l->len);
    if (!l->p || !l->len) return -1;
    while (*s) {
        const char *e = strchr(s, '\n');
        size_t k = e ? (size_t)(e - s) : strlen(s);
        if (l->n == cap) {
            cap *= 2;
            const char **np = realloc(l->p, cap * sizeof *np);
            if (np) l->p = np;
            size_t *nl = realloc(l->len, cap * sizeof *nl);
            if (nl) l->len = nl;
            if (!np || !nl) return -1;
        }
        l->p[l->n] = s, l->len[l->n++] = k;
        s += k + (e ? 1 : 0);
    }
    return 0;
}

static int same_line(const text_lines *a, size_t i, const text_lines *b, size_t j) {
    return a->len[i] == b->len[j] && !memcmp(a->p[i], b->p[j], a->len[i]);
}

static void diff_line(kf_buf *o, char mark, const text_lines *l, size_t i) {
    kf_buf_append(o, &mark, 1);
    kf_buf_append(o, l->p[i], l->len[i]);
    kf_buf_append(o, "\n", 1);
}

/* The lines of the text b that differ from a, with 3 lines of context, as "+", "-", " "
 * and "@ N lines" (lines not shown) lines; a longest common subsequence over what lies
 * between the common head and tail (at most 1,000,000 cells: else "@ too long"). */
static char *diff_text(const char *a, const char *b) {
    text_lines x = {0}, y = {0};
    kf_buf o;
    kf_buf_init(&o, 8u << 20);
    if (split_lines(a, &x) || split_lines(b, &y)) goto out;
    size_t head = 0, tail = 0;
    while (head < x.n && head < y.n && same_line(&x, head, &y, head)) head++;
    while (tail < x.n - head && tail < y.n - head && same_line(&x, x.n - 1 - tail, &y, y.n - 1 - tail))
        tail++;
    size_t nx = x.n - head - tail, ny = y.n - head - tail;
    if (!nx && !ny) {
        kf_buf_printf(&o, "@ the same text as its parent\n");
        goto out;
    }
    if ((double)(nx + 1) * (double)(ny + 1) > 1e6) {
        kf_buf_printf(&o, "@ too long to compare line by line (%zu and %zu lines differ)\n", nx, ny);
        goto out;
    }
    /* ops: 0 same, 1 removed, 2 added, over the middle, then printed with context */
    unsigned *L = calloc((nx + 1) * (ny + 1), sizeof *L);
    char *ops = malloc(nx + ny + 1);
    size_t *oi = malloc((nx + ny + 1) * sizeof *oi), no = 0;
    if (!L || !ops || !oi) {
        free(L), free(ops), free(oi);
        goto out;
    }
#define LCS(i, j) L[(i) * (ny + 1) + (j)]
    for (size_t i = nx; i-- > 0;)
        for (size_t j = ny; j-- > 0;)
            LCS(i, j) = same_line(&x, head + i, &y, head + j) ? LCS(i + 1, j + 1) + 1
                        : LCS(i + 1, j) >= LCS(i, j + 1)      ? LCS(i + 1, j)
                                                              : LCS(i, j + 1);
    size_t i = 0, j = 0;
    while (i < nx || j < ny) {
        if (i < nx && j < ny && same_line(&x, head + i, &y, head + j))
            ops[no] = 0, oi[no++] = head + i, i++, j++;
        else if (j < ny && (i == nx || LCS(i, j + 1) >= LCS(i + 1, j))) ops[no] = 2, oi[no++] = head + j, j++;
        else ops[no] = 1, oi[no++] = head + i, i++;
    }
#undef LCS
    /* context: 3 lines of the common head and tail, and inside */
    size_t from = head > 3 ? head - 3 : 0;
    if (from) kf_buf_printf(&o, "@ %zu lines the same\n", from);
    for (size_t k = from; k < head; k++) diff_line(&o, ' ', &x, k);
    for (size_t k = 0; k < no; k++) {
        if (ops[k]) {
            diff_line(&o, ops[k] == 1 ? '-' : '+', ops[k] == 1 ? &x : &y, oi[k]);
            continue;
        }
        /* a run of common lines: its first and last 3 */
        size_t e = k;
        while (e < no && !ops[e]) e++;
        size_t run = e - k;
        if (run > 6) {
            for (size_t q = k; q < k + 3; q++) diff_line(&o, ' ', &x, oi[q]);
            kf_buf_printf(&o, "@ %zu lines the same\n", run - 6);
            for (size_t q = e - 3; q < e; q++) diff_line(&o, ' ', &x, oi[q]);
        } else {
            for (size_t q = k; q < e; q++) diff_line(&o, ' ', &x, oi[q]);
        }
        k = e - 1;
    }
    size_t show = tail > 3 ? 3 : tail;
    for (size_t k = x.n - tail; k < x.n - tail + show; k++) diff_line(&o, ' ', &x, k);
    if (tail > show) kf_buf_printf(&o, "@ %zu lines the same\n", tail - show);
    free(L), free(ops), free(oi);
out:
    free(x.p), free(x.len), free(y.p), free(y.len);
    return o.p;
}

/* ---- reading the run ----------------------------------------------------------------- */

static int idx_of(const kf_rep *r, int64_t id) {
    const kf_node *p = kf_tree_find(&r->d.a, id);
    return p ? (int)(p - r->d.a.v) : -1;
}

static int constraint_row(void *arg, const kf_constraint *c) {
    json_array_append_new(arg, json_pack("{s:I, s:s, s:s?}", "node", (json_int_t)c->node, "text", c->text,
                                         "category", c->category));
    return 0;
}

/* A shape's sizes among the shapes seen, unless they are there. 0, or -1 when out of memory. */
static int add_shape(kf_rep *r, const kf_verdict_sizes *sizes) {
    for (int k = 0; k < r->nshapes; k++)
        if (kf_verdict_sizes_equal(r->shapes[k], sizes)) return 0;
    if (r->nshapes == r->capshapes) {
        int cap = r->capshapes ? r->capshapes * 2 : 16;
        const kf_verdict_sizes **p = realloc(r->shapes, (size_t)cap * sizeof *p);
        if (!p) return -1;
        r->shapes = p, r->capshapes = cap;
    }
    r->shapes[r->nshapes++] = sizes;
    return 0;
}

/* The nodes that get a section: the winners and the way to them, then the first of each
 * state and reason, then the earliest, up to KF_REPORT_DETAIL_MAX. */
static void pick_details(kf_rep *r) {
    size_t n = r->d.a.n;
    for (int pass = 0; pass < 3; pass++) {
        json_t *seen = json_object();
        for (size_t i = 0; i < n && r->ndetail < KF_REPORT_DETAIL_MAX; i++) {
            if (r->n[i].detail) continue;
            int take = pass == 2 || (pass == 0 && r->n[i].path);
            if (pass == 1) {
                const kf_node *nd = &r->d.a.v[i];
                char key[300];
                snprintf(key, sizeof key, "%s|%s", kf_report_state(r, (int)i),
                         nd->reasons ? nd->reasons : "");
                if (!json_object_get(seen, key)) take = 1, json_object_set_new(seen, key, json_true());
            }
            if (take) r->n[i].detail = ++r->ndetail;
        }
        json_decref(seen);
    }
}

/* A detail node's source, verdict and diff; its roofline points and the ceilings. */
static void read_detail(kf_rep *r, int i) {
    const kf_node *nd = &r->d.a.v[i];
    kf_rep_node *rn = &r->n[i];
    kf_store_read_source(r->d.st, nd->src_hash, nd->ext, &rn->src, NULL);
    kf_node full;
    if (!nd->tampered && kf_store_get_node(r->d.st, nd->id, &full) == KF_OK) {
        if (full.verdict_json) rn->has_verdict = !kf_verdict_from_text(full.verdict_json, &rn->verdict);
        kf_node_free(&full);
    }
    const kf_node *pn = kf_tree_find(&r->d.a, nd->parent);
    char *ptxt = NULL;
    if (rn->src && pn && !kf_store_read_source(r->d.st, pn->src_hash, pn->ext, &ptxt, NULL))
        rn->diff = diff_text(ptxt, rn->src);
    free(ptxt);
    if (!rn->has_verdict) return;
    const struct kf_verdict *vd = &rn->verdict;
    if (!r->ceilings && vd->has_ceilings) r->ceilings = &vd->ceilings;
    for (int k = 0; k < vd->nshapes; k++) {
        const kf_verdict_shape *s = &vd->shapes[k];
        double gf = s->gflops, gb = s->gbytes_per_s;
        if (!(gf > 0) || !(gb > 0)) continue;
        if (r->nroof == r->caproof) {
            int cap = r->caproof ? r->caproof * 2 : 16;
            kf_rep_roof *p = realloc(r->roof, (size_t)cap * sizeof *p);
            if (!p) return; /* the points so far */
            r->roof = p, r->caproof = cap;
        }
        r->roof[r->nroof++] = (kf_rep_roof){nd->id, &s->sizes, gf / gb, gf, s->roofline_fraction};
    }
}

/* The lessons the run teaches, distilled into a scratch database (removed after). */
static void distill(kf_rep *r) {
    if (r->d.a.n > KF_REPORT_DISTILL_MAX) {
        snprintf(r->distill_note, sizeof r->distill_note,
                 "not distilled here: %zu nodes (over %d); `kforge lessons distill %s` does it", r->d.a.n,
                 KF_REPORT_DISTILL_MAX, r->dir);
        return;
    }
    const char *tmp = getenv("TMPDIR");
    char dir[4096], db[4200];
    snprintf(dir, sizeof dir, "%s/kforge-report-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        snprintf(r->distill_note, sizeof r->distill_note, "not distilled: no scratch directory");
        return;
    }
    snprintf(db, sizeof db, "%s/lessons.db", dir);
    kf_ctx *ctx = kf_ctx_new();
    kf_lessons *ls = NULL;
    char *js = NULL;
    if (ctx && kf_lessons_open(ctx, db, NULL, &ls) == KF_OK &&
        kf_lessons_distill(ls, r->dir, NULL) == KF_OK && kf_lessons_list_json(ls, NULL, 0, 0, &js) == KF_OK)
        r->lessons_made = json_loads(js, 0, NULL);
    if (!r->lessons_made)
        snprintf(r->distill_note, sizeof r->distill_note, "not distilled: %s",
                 ctx ? kf_errmsg(ctx) : "out of memory");
    free(js);
    kf_lessons_close(ls);
    kf_ctx_free(ctx);
    kf__rmtree(dir);
}

void kf_report_free(kf_rep *r) {
    for (size_t i = 0; r->n && i < r->d.a.n; i++) {
        json_decref(r->n[i].j);
        kf_verdict_free(&r->n[i].sh);
        kf_verdict_free(&r->n[i].verdict);
        free(r->n[i].src);
        free(r->n[i].diff);
    }
    free(r->n);
    free(r->roots);
    json_decref(r->integrity);
    free(r->warnings);
    json_decref(r->best);
    free(r->shapes);
    free(r->roof);
    json_decref(r->constraints);
    free(r->breakers);
    json_decref(r->lessons_used);
    json_decref(r->lessons_made);
    kf_tree_data_free(&r->d);
}

kf_status kf_report_read(kf_ctx *ctx, const char *dir, int light, kf_rep *r) {
    memset(r, 0, sizeof *r);
    r->dir = dir;
    kf_status s = kf_tree_load(ctx, dir, &r->d);
    if (s) return s;
    size_t n = r->d.a.n;
    const kf_node *v = r->d.a.v;
    r->n = calloc(n ? n : 1, sizeof *r->n);
    r->roots = calloc(n ? n : 1, sizeof *r->roots);
    r->constraints = json_array();
    if (!r->n || !r->roots || !r->constraints) return KF_ENOMEM;
    for (size_t i = 0; i < n; i++) r->n[i].first = r->n[i].next = -1, r->n[i].size = 1;
    /* children lists (parents come before children in id order) */
    for (size_t i = n; i-- > 0;) {
        int p = idx_of(r, v[i].parent);
        if (p >= 0 && p < (int)i) r->n[i].next = r->n[p].first, r->n[p].first = (int)i;
    }
    for (size_t i = 0; i < n; i++) {
        int p = idx_of(r, v[i].parent);
        if (p < 0 || p >= (int)i) r->roots[r->nroots++] = (int)i;
        json_t *j =
            kf_tree_node_json(&v[i], p >= 0 ? &v[p] : NULL, r->d.whens ? r->d.whens[i] : NULL, r->d.critics);
        json_t *dj = kf_diag_json(r->d.dm, v[i].id);
        if (j && dj) json_object_set_new(j, "diagnosis", dj);
        else json_decref(dj);
        r->n[i].j = j;
        r->n[i].vetoed = json_is_true(json_object_get(json_object_get(j, "critic"), "veto"));
        /* the node's shapes column, read once: the renderers read its fields */
        struct kf_verdict *sh = &r->n[i].sh;
        kf_verdict_from_text(v[i].shapes_json, sh);
        for (int k = 0; k < sh->nshapes; k++)
            if (add_shape(r, &sh->shapes[k].sizes)) return KF_ENOMEM;
        if (i == 0 || v[i].created < r->t0) r->t0 = v[i].created;
        if (v[i].finished > r->t1) r->t1 = v[i].finished;
    }
    kf_buf wb;
    kf_buf_init(&wb, 1u << 20);
    r->integrity = kf_record_integrity(r->d.st, v, n, &wb);
    r->warnings = wb.p;
    r->best = kf_record_best_shapes(v, n);
    size_t k;
    json_t *e;
    json_array_foreach(r->best, k, e) {
        int w = idx_of(r, json_integer_value(json_object_get(e, "node")));
        if (w < 0) continue;
        r->n[w].winner = 1;
        for (int q = w; q >= 0; q = idx_of(r, v[q].parent)) r->n[q].path = 1;
    }
    for (size_t i = n; i-- > 0;) {
        r->n[i].has_path |= r->n[i].path;
        int p = idx_of(r, v[i].parent);
        if (p >= 0 && p < (int)i) r->n[p].size += r->n[i].size, r->n[p].has_path |= r->n[i].has_path;
    }
    pick_details(r);
    for (size_t i = 0; i < n; i++)
        if (r->n[i].detail) read_detail(r, (int)i);
    kf_store_each_constraint(r->d.st, constraint_row, r->constraints);
    kf_buf bb;
    kf_buf_init(&bb, 1u << 20);
    kf_diag_breakers_text(r->d.dm, &bb);
    r->breakers = bb.p;
    char *lev = NULL;
    kf_loop_lessons_event(r->d.st, &lev);
    r->lessons_used = lev ? json_loads(lev, 0, NULL) : NULL;
    free(lev);
    if (!light) distill(r);
    else snprintf(r->distill_note, sizeof r->distill_note, "not distilled here");
    struct utsname u;
    if (!uname(&u))
        snprintf(r->made_on, sizeof r->made_on, "%s (%s %s, %s)", u.nodename, u.sysname, u.release,
                 u.machine);
    r->written = (double)time(NULL);
    return KF_OK;
}

/* ---- Markdown ------------------------------------------------------------------------ */

static void md_sizes(kf_buf *b, const json_t *sizes) {
    const char *k;
    json_t *v;
    int first = 1;
    json_object_foreach((json_t *)sizes, k, v) {
        kf_report_escf(b, 1, "%s%s=%lld", first ? "" : ",", k, (long long)json_integer_value(v));
        first = 0;
    }
}

static void md_params(kf_buf *b, const json_t *p) {
    const char *k;
    json_t *v;
    int first = 1;
    json_object_foreach((json_t *)p, k, v) {
        if (json_is_string(v)) kf_report_escf(b, 1, "%s%s=%s", first ? "" : " ", k, json_string_value(v));
        else kf_report_escf(b, 1, "%s%s=%lld", first ? "" : " ", k, (long long)json_integer_value(v));
        first = 0;
    }
}

/* A fence longer than any run of backticks in s. */
static void md_fence(kf_buf *b, const char *s) {
    int run = 0, most = 2;
    for (const char *p = s; p && *p; p++) {
        run = *p == '`' ? run + 1 : 0;
        if (run > most) most = run;
    }
    for (int i = 0; i <= most; i++) kf_buf_append(b, "`", 1);
}

static void md_tree(kf_buf *b, const kf_rep *r, int i, int depth, int *lines) {
    const kf_node *nd = &r->d.a.v[i];
    const kf_rep_node *rn = &r->n[i];
    kf_buf_printf(b, "%*s- %s#%lld %s %s/%s", depth * 2, "", rn->path ? "**" : "", (long long)nd->id,
                  kf_report_state(r, i), nd->proposer, nd->category);
    if (rn->path) kf_buf_printf(b, "**");
    if (nd->params_json) {
        kf_buf_printf(b, " `");
        md_params(b, json_object_get(rn->j, "params"));
        kf_buf_printf(b, "`");
    }
    if (nd->speedup > 0 && nd->state != KF_NODE_SCREENED) kf_buf_printf(b, " %.3fx", nd->speedup);
    const char *when = r->d.whens ? r->d.whens[i] : NULL;
    if (when) kf_report_escf(b, 1, " (when %s)", when);
    if (rn->winner) kf_buf_printf(b, " (a winner)");
    kf_buf_printf(b, "\n");
    (*lines)++;
    for (int c = rn->first; c >= 0; c = r->n[c].next) {
        if (*lines >= KF_REPORT_TREE_MAX && !r->n[c].has_path) {
            kf_buf_printf(b, "%*s- ... %d node%s below #%lld not shown\n", (depth + 1) * 2, "", r->n[c].size,
                          r->n[c].size == 1 ? "" : "s", (long long)r->d.a.v[c].id);
            continue;
        }
        md_tree(b, r, c, depth + 1, lines);
    }
}

static void md_head(kf_buf *b, const kf_rep *r) {
    size_t n = r->d.a.n;
    const kf_node *v = r->d.a.v;
    int counts[KF_NODE_STATE_COUNT + 2] = {0};
    for (size_t i = 0; i < n; i++) {
        const char *s = kf_report_state(r, (int)i);
        counts[!strcmp(s, "tampered") ? KF_NODE_STATE_COUNT + 1
               : !strcmp(s, "vetoed") ? KF_NODE_STATE_COUNT
                                      : (int)v[i].state]++;
    }
    kf_buf_printf(b, "# kforge report: ");
    kf_report_esc(b, r->dir, strlen(r->dir), 1);
    kf_buf_printf(b, "\n\n## Verdict\n\n");
    kf_report_escf(b, 1, "Task %s, %zu nodes: ", kf_store_task_dir(r->d.st), n);
    int first = 1;
    for (int s = 0; s < KF_NODE_STATE_COUNT + 2; s++)
        if (counts[s])
            kf_buf_printf(b, "%s%d %s", first ? "" : ", ", counts[s],
                          s == KF_NODE_STATE_COUNT       ? "vetoed"
                          : s == KF_NODE_STATE_COUNT + 1 ? "tampered"
                                                         : kf_node_state_name((kf_node_state)s)),
                first = 0;
    kf_buf_printf(b, "%s. %zu visible shape%s with a verified winner.\n\n", first ? "none" : "",
                  json_array_size(r->best), json_array_size(r->best) == 1 ? "" : "s");
    kf_buf_printf(b, "## Integrity\n\n");
    const char *seal = json_string_value(json_object_get(r->integrity, "seals"));
    if (r->warnings && *r->warnings) {
        kf_report_lines(b, r->warnings, "> **", "**\n>\n", 1);
        kf_buf_printf(b, "\n");
    }
    kf_buf_printf(b, "| seals | task fingerprint | kforge | report written on |\n|---|---|---|---|\n| ");
    kf_report_escf(b, 1, "%s", seal ? seal : "?");
    kf_buf_printf(b, " | ");
    kf_report_escf(b, 1, "%.16s", kf_store_task_fingerprint(r->d.st));
    kf_buf_printf(b, " | %s | ", KF_VERSION);
    kf_report_esc(b, r->made_on, strlen(r->made_on), 1);
    kf_buf_printf(b, " |\n\n");
}

static void md_timeline(kf_buf *b, const kf_rep *r) {
    size_t n = r->d.a.n;
    const kf_node *v = r->d.a.v;
    kf_buf_printf(b, "## Timeline\n\n| evaluations | states | best speedup there | best kept so far | "
                     "wall s so far | tokens so far |\n|---|---|---|---|---|---|\n");
    int bins = n > 40 ? 40 : (int)n;
    double best = 0, wall = 0;
    long long tok = 0;
    size_t i0 = 0;
    for (int bi = 0; bi < bins; bi++) {
        size_t i1 = (size_t)((double)(bi + 1) * (double)n / bins);
        int c[KF_NODE_STATE_COUNT] = {0};
        double top = 0;
        for (size_t i = i0; i < i1; i++) {
            c[v[i].state]++;
            if (v[i].state != KF_NODE_SCREENED && v[i].speedup > top) top = v[i].speedup;
            if (v[i].state == KF_NODE_KEPT && v[i].speedup > best) best = v[i].speedup;
            wall += v[i].cost_s, tok += v[i].tokens_in + v[i].tokens_out;
        }
        kf_buf_printf(b, "| #%lld", (long long)v[i0].id);
        if (i1 - i0 > 1) kf_buf_printf(b, "-#%lld", (long long)v[i1 - 1].id);
        kf_buf_printf(b, " |");
        for (int s = 0, f = 1; s < KF_NODE_STATE_COUNT; s++)
            if (c[s])
                kf_buf_printf(b, "%s%d %s", f ? " " : ", ", c[s], kf_node_state_name((kf_node_state)s)),
                    f = 0;
        kf_buf_printf(b, " | %.3fx | %.3fx | %.1f | %lld |\n", top, best, wall, tok);
        i0 = i1;
    }
}

static void md_tree_section(kf_buf *b, const kf_rep *r) {
    const kf_node *v = r->d.a.v;
    kf_buf_printf(b, "\n## Tree\n\nBold: the way to a winner. `when`: the domain a specialisation is safe "
                     "for.\n\n- #0 root: the reference\n");
    int lines = 0;
    for (int k = 0; k < r->nroots; k++) {
        int c = r->roots[k];
        if (lines >= KF_REPORT_TREE_MAX && !r->n[c].has_path) {
            kf_buf_printf(b, "  - ... %d nodes below #%lld not shown\n", r->n[c].size, (long long)v[c].id);
            continue;
        }
        md_tree(b, r, c, 1, &lines);
    }
}

static void md_winners(kf_buf *b, const kf_rep *r) {
    kf_buf_printf(b, "\n## Winners per shape\n\n| shape | node | speedup | 95%% interval | roofline | safe "
                     "for |\n|---|---|---|---|---|---|\n");
    size_t k;
    json_t *e;
    json_array_foreach(r->best, k, e) {
        int w = idx_of(r, json_integer_value(json_object_get(e, "node")));
        kf_buf_printf(b, "| ");
        md_sizes(b, json_object_get(e, "sizes"));
        kf_buf_printf(b, " | #%lld | %.3fx%s |", (long long)json_integer_value(json_object_get(e, "node")),
                      json_number_value(json_object_get(e, "speedup")),
                      json_is_true(json_object_get(e, "win")) ? " (a win)" : "");
        const kf_verdict_shape *shp = NULL;
        for (int q = 0; w >= 0 && q < r->n[w].sh.nshapes; q++)
            if (kf_report_sizes_is(json_object_get(e, "sizes"), &r->n[w].sh.shapes[q].sizes))
                shp = &r->n[w].sh.shapes[q];
        if (shp && (shp->has & KF_VS_CI95)) kf_buf_printf(b, " %.3f-%.3f |", shp->ci95[0], shp->ci95[1]);
        else kf_buf_printf(b, " - |");
        double rf = shp ? shp->roofline_fraction : 0;
        if (rf > 0) kf_buf_printf(b, " %.0f%% |", rf * 100);
        else kf_buf_printf(b, " - |");
        const char *sf = json_string_value(json_object_get(w >= 0 ? r->n[w].j : NULL, "safe_for"));
        kf_buf_printf(b, " ");
        if (sf) kf_report_esc(b, sf, strlen(sf), 1);
        kf_buf_printf(b, " |\n");
    }
    if (!json_array_size(r->best)) kf_buf_printf(b, "| (none kept yet) | | | | | |\n");

    kf_buf_printf(b, "\n## Roofline\n\n");
    const kf_verdict_ceilings *ce = r->ceilings;
    if (ce) {
        kf_buf_printf(b, "Ceilings: ");
        kf_report_ceilings(b, ce, 1);
        kf_buf_printf(b, ".\n\n");
    }
    kf_buf_printf(b, "| node | shape | flop/byte | GFLOP/s | of the roofline |\n|---|---|---|---|---|\n");
    for (int q = 0; q < r->nroof; q++) {
        const kf_rep_roof *p = &r->roof[q];
        if (q >= 60) {
            kf_buf_printf(b, "| ... %zu more | | | | |\n", (size_t)(r->nroof - q));
            break;
        }
        kf_buf_printf(b, "| #%lld | ", (long long)p->node);
        kf_report_sizes(b, p->sizes, 1);
        kf_buf_printf(b, " | %.3f | %.3f | %.0f%% |\n", p->ai, p->gflops, p->fraction * 100);
    }
}

static void md_failures(kf_buf *b, const kf_rep *r) {
    size_t n = r->d.a.n;
    const kf_node *v = r->d.a.v;
    size_t k;
    json_t *e;
    kf_buf_printf(b, "\n## Failures\n\n| reason | nodes |\n|---|---|\n");
    json_t *rc = json_object();
    for (size_t i = 0; i < n; i++) {
        if (!v[i].reasons) continue;
        char tmp[512];
        snprintf(tmp, sizeof tmp, "%s", v[i].reasons);
        for (char *save = NULL, *t = strtok_r(tmp, ",", &save); t; t = strtok_r(NULL, ",", &save))
            json_object_set_new(rc, t, json_integer(json_integer_value(json_object_get(rc, t)) + 1));
    }
    const char *rk;
    json_t *rv;
    json_object_foreach(rc, rk, rv) {
        kf_buf_printf(b, "| ");
        kf_report_esc(b, rk, strlen(rk), 1);
        kf_buf_printf(b, " | %lld |\n", (long long)json_integer_value(rv));
    }
    if (!json_object_size(rc)) kf_buf_printf(b, "| (none) | 0 |\n");
    json_decref(rc);
    kf_buf_printf(b, "\nConstraints learnt: %zu.\n\n", json_array_size(r->constraints));
    json_array_foreach(r->constraints, k, e) {
        kf_buf_printf(b, "- ");
        kf_report_escf(b, 1, "%s", json_string_value(json_object_get(e, "text")));
        kf_buf_printf(b, " (node #%lld)\n", (long long)json_integer_value(json_object_get(e, "node")));
    }
    kf_buf_printf(b, "\nThe Critic's vetoes:\n\n| node | decision | why |\n|---|---|---|\n");
    int nv = 0;
    for (size_t i = 0; i < n; i++) {
        json_t *cr = json_object_get(r->n[i].j, "critic");
        const char *d = json_string_value(json_object_get(cr, "decision"));
        if (!d || !strcmp(d, "approve")) continue;
        if (nv++ >= 100) continue;
        kf_buf_printf(b, "| #%lld | ", (long long)v[i].id);
        const char *why = json_string_value(json_object_get(cr, "why"));
        kf_report_escf(b, 1, "%s%s", d, r->n[i].vetoed ? " (veto)" : "");
        kf_buf_printf(b, " | ");
        kf_report_esc(b, why ? why : "", why ? strlen(why) : 0, 1);
        kf_buf_printf(b, " |\n");
    }
    if (nv > 100) kf_buf_printf(b, "| ... %d more | | |\n", nv - 100);
    kf_buf_printf(b, "\nCircuit breaker: %s\n", r->breakers && *r->breakers ? "" : "no trips.");
    for (const char *p = r->breakers; p && *p;) {
        const char *en = strchr(p, '\n');
        size_t q = en ? (size_t)(en - p) : strlen(p);
        kf_buf_printf(b, "- ");
        kf_report_esc(b, p, q, 1);
        kf_buf_printf(b, "\n");
        p += q + (en ? 1 : 0);
    }
}

static void md_lessons(kf_buf *b, const kf_rep *r) {
    size_t k;
    json_t *e;
    kf_buf_printf(b, "\n## Lessons\n\n");
    if (r->lessons_used) {
        kf_buf_printf(b, "Used: %zu applied of %lld retrieved.\n\n",
                      json_array_size(json_object_get(r->lessons_used, "applied")),
                      (long long)json_integer_value(json_object_get(r->lessons_used, "retrieved")));
    } else {
        kf_buf_printf(b, "Used: none recorded.\n\n");
    }
    if (r->lessons_made) {
        kf_buf_printf(b, "Distilled from this run: %zu.\n\n", json_array_size(r->lessons_made));
        json_array_foreach(r->lessons_made, k, e) {
            kf_buf_printf(b, "- ");
            kf_report_escf(b, 1, "%s: %s", json_string_value(json_object_get(e, "situation")),
                           json_string_value(json_object_get(e, "action")));
            kf_buf_printf(b, "\n");
        }
    } else {
        kf_buf_printf(b, "Distilled: ");
        kf_report_esc(b, r->distill_note, strlen(r->distill_note), 1);
        kf_buf_printf(b, "\n");
    }
}

static void md_cost(kf_buf *b, const kf_rep *r) {
    size_t n = r->d.a.n;
    const kf_node *v = r->d.a.v;
    const char *rk;
    json_t *rv;
    kf_buf_printf(
        b, "\n## Cost\n\n| proposer | nodes | tokens in | tokens out | seconds |\n|---|---|---|---|---|\n");
    json_t *pc = json_object();
    for (size_t i = 0; i < n; i++) {
        json_t *p = json_object_get(pc, v[i].proposer);
        if (!p) json_object_set_new(pc, v[i].proposer, p = json_pack("[i, I, I, f]", 0, 0, 0, 0.0));
        json_array_set_new(p, 0, json_integer(json_integer_value(json_array_get(p, 0)) + 1));
        json_array_set_new(p, 1, json_integer(json_integer_value(json_array_get(p, 1)) + v[i].tokens_in));
        json_array_set_new(p, 2, json_integer(json_integer_value(json_array_get(p, 2)) + v[i].tokens_out));
        json_array_set_new(p, 3, json_real(json_number_value(json_array_get(p, 3)) + v[i].cost_s));
    }
    json_object_foreach(pc, rk, rv) {
        kf_buf_printf(b, "| ");
        kf_report_esc(b, rk, strlen(rk), 1);
        kf_buf_printf(
            b, " | %lld | %lld | %lld | %.1f |\n", (long long)json_integer_value(json_array_get(rv, 0)),
            (long long)json_integer_value(json_array_get(rv, 1)),
            (long long)json_integer_value(json_array_get(rv, 2)), json_number_value(json_array_get(rv, 3)));
    }
    json_decref(pc);
}

static void md_nodes(kf_buf *b, const kf_rep *r) {
    size_t n = r->d.a.n;
    kf_buf_printf(b, "\n## Nodes\n\n");
    if ((size_t)r->ndetail < n)
        kf_buf_printf(b,
                      "%d of %zu nodes: the winners and the way to them, one of each state and reason, "
                      "then the earliest.\n\n",
                      r->ndetail, n);
    for (size_t i = 0; i < n; i++)
        if (r->n[i].detail) kf_report_node_md(b, r, (int)i);
}

void kf_report_node_md(kf_buf *b, const kf_rep *r, int i) {
    const kf_node *v = r->d.a.v;
    {
        const kf_rep_node *rn = &r->n[i];
        kf_buf_printf(b, "### #%lld %s (parent #%lld)\n\n", (long long)v[i].id, kf_report_state(r, (int)i),
                      (long long)v[i].parent);
        kf_report_escf(b, 1, "%s/%s", v[i].proposer, v[i].category);
        if (v[i].reasons) kf_report_escf(b, 1, "; reasons: %s", v[i].reasons);
        const char *desc = json_string_value(json_object_get(rn->j, "description"));
        if (desc) kf_report_escf(b, 1, "; \"%s\"", desc);
        if (v[i].note) kf_report_escf(b, 1, "; note: %.300s", v[i].note);
        kf_buf_printf(b, "\n\n");
        for (int q = 0; q < rn->sh.nshapes; q++) {
            const kf_verdict_shape *sh = &rn->sh.shapes[q];
            kf_buf_printf(b, "- ");
            kf_report_sizes(b, &sh->sizes, 1);
            kf_buf_printf(b, ": %.3fx, %.0f ns against %.0f ns\n", sh->speedup, sh->candidate_ns,
                          sh->baseline_ns);
        }
        const char *body = rn->diff ? rn->diff : rn->src;
        if (body) {
            kf_buf_printf(b, "\n");
            md_fence(b, body);
            kf_buf_printf(b, "%s\n", rn->diff ? "diff" : "c");
            kf_buf_append(b, body, strlen(body));
            if (*body && body[strlen(body) - 1] != '\n') kf_buf_printf(b, "\n");
            md_fence(b, body);
            kf_buf_printf(b, "\n");
        }
        kf_buf_printf(b, "\n");
    }
}

void kf_report_md(kf_buf *b, const kf_rep *r) {
    md_head(b, r);
    md_timeline(b, r);
    md_tree_section(b, r);
    md_winners(b, r);
    md_failures(b, r);
    md_lessons(b, r);
    md_cost(b, r);
    md_nodes(b, r);
}

/* A system run's report in format ("html", "md", "json"). */
static kf_status sys_report(kf_ctx *ctx, const char *dir, const char *format, char **out, size_t *len) {
    kf_sysrep s;
    kf_status st = kf_report_sys_read(ctx, dir, &s);
    if (st) {
        if (st == KF_ENOMEM) kf__err(ctx, st, "out of memory");
        kf_report_sys_free(&s);
        return st;
    }
    kf_buf b;
    kf_buf_init(&b, 256u << 20);
    if (!strcmp(format, "json")) {
        char *j = kf_report_sys_json(&s);
        if (j) kf_buf_append(&b, j, strlen(j));
        else b.oom = 1;
        free(j);
    } else if (!strcmp(format, "md")) {
        kf_report_sys_md(&b, &s);
    } else {
        kf_report_sys_html(&b, &s);
    }
    kf_report_sys_free(&s);
    if (!b.p || b.oom) {
        kf_buf_free(&b);
        return kf__err(ctx, KF_ENOMEM, "out of memory");
    }
    *out = b.p;
    if (len) *len = b.len;
    return KF_OK;
}

kf_status kf_report_run(kf_ctx *ctx, const char *run_dir, const char *format, char **out, size_t *len) {
    *out = NULL;
    if (len) *len = 0;
    int md = format && !strcmp(format, "md");
    if (format && !md && strcmp(format, "html") && strcmp(format, "json"))
        return kf__err(ctx, KF_EUSAGE, "report format %s: expected html or md", format);
    int js = format && !strcmp(format, "json");
    if (kf_sysrun_is(run_dir)) return sys_report(ctx, run_dir, md ? "md" : js ? "json" : "html", out, len);
    if (js)
        return kf__err(ctx, KF_EUSAGE,
                       "report format json: for a system run's directory only (kforge tree --json %s)",
                       run_dir);
    kf_rep r;
    kf_status s = kf_report_read(ctx, run_dir, 0, &r);
    if (s) {
        if (s == KF_ENOMEM) kf__err(ctx, s, "out of memory");
        kf_report_free(&r);
        return s;
    }
    kf_buf b;
    kf_buf_init(&b, 256u << 20);
    if (md) kf_report_md(&b, &r);
    else kf_report_html(&b, &r);
    kf_report_free(&r);
    if (!b.p || b.oom) {
        kf_buf_free(&b);
        return kf__err(ctx, KF_ENOMEM, "out of memory");
    }
    *out = b.p;
    if (len) *len = b.len;
    return KF_OK;
}
