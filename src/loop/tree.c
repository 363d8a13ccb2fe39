/*
 * tree.c - a run's lineage and its winners (kforge tree, kforge best; docs/run.md): every
 * node under its parent with its state, proposer, category, parameters and per-shape
 * speedups, what it is safe for (its kforge:when), the Critic's vetoes and the advisory
 * reviewer's concerns, why a failure failed (diagnose.c), the constraints the run learnt,
 * the circuit breaker's trips and the lessons the walk started from; or, per visible
 * shape, the kept node with the highest speedup there. Both begin with what the run's
 * seals say (src/record/). Read-only: nothing here writes to the run.
 */
#include "tree.h"

#include "../task/candidate.h"
#include "diagnose.h"
#include "loop.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The Critic's last decision per node: {"ID": {decision, why}} from the critic events
 * of the node's current attempt. */
static int critic_event(void *arg, int64_t id, int64_t node, const char *js, double created) {
    (void)id;
    (void)created;
    json_t *j = json_loads(js, 0, NULL);
    char key[32];
    snprintf(key, sizeof key, "%lld", (long long)node);
    if (j) {
        json_t *c = json_pack("{s:O?, s:O?}", "decision", json_object_get(j, "decision"), "why",
                              json_object_get(j, "why"));
        json_t *adv = json_object_get(j, "advisory");
        if (adv) json_object_set(c, "advisory", adv);
        /* a veto for what the node is (integrity, plausibility, a suspicious gain, a
         * review), not for a gain the re-timings did not confirm */
        const char *d = json_string_value(json_object_get(j, "decision"));
        size_t k;
        json_t *ck;
        int veto = 0;
        json_array_foreach(json_object_get(j, "checks"), k, ck) {
            const char *nm = json_string_value(json_object_get(ck, "check"));
            const char *oc = json_string_value(json_object_get(ck, "outcome"));
            if (d && strcmp(d, "approve") && nm && oc && strcmp(oc, "pass") &&
                (!strcmp(nm, "integrity") || !strcmp(nm, "plausibility") || !strcmp(nm, "suspicious") ||
                 !strcmp(oc, "review")))
                veto = 1;
        }
        if (veto) json_object_set_new(c, "veto", json_true());
        /* the re-timings against the parent that the decision rests on */
        json_t *fig = json_object_get(j, "figures");
        if (json_array_size(fig)) json_object_set(c, "retimings", fig);
        json_object_set_new(arg, key, c);
    }
    json_decref(j);
    return 0;
}

/* A node's description (the last one recorded) into {"ID": text}. */
static int description_event(void *arg, int64_t id, int64_t node, const char *js, double created) {
    (void)id;
    (void)created;
    json_t *j = json_loads(js, 0, NULL), *t = json_object_get(j, "text");
    char key[32];
    snprintf(key, sizeof key, "%lld", (long long)node);
    if (json_is_string(t)) json_object_set(arg, key, t);
    json_decref(j);
    return 0;
}

static const char *description_of(json_t *critics, int64_t node) {
    char key[32];
    snprintf(key, sizeof key, "%lld", (long long)node);
    return json_string_value(json_object_get(json_object_get(critics, "descriptions"), key));
}

/* What a node's screening left: {"ID": {"promoted_from": N}} from a promotion's submit
 * event, {"ID": {"screen": {speedup, rounds, shapes}}} from screen-first's screen event;
 * kept under the "~screen" key of the critics' object. */
static int screen_event(void *arg, int64_t id, int64_t node, const char *js, double created) {
    (void)id;
    (void)created;
    json_t *j = json_loads(js, 0, NULL), *from = json_object_get(j, "promoted_from");
    char key[32];
    snprintf(key, sizeof key, "%lld", (long long)node);
    json_t *o = json_object_get(arg, key);
    if (j && !o) json_object_set_new(arg, key, o = json_object());
    if (json_is_integer(from)) json_object_set(o, "promoted_from", from);
    else if (j && json_object_get(j, "speedup")) json_object_set(o, "screen", j);
    json_decref(j);
    return 0;
}

const kf_node *kf_tree_find(const kf_node_vec *a, int64_t id) {
    size_t lo = 0, hi = a->n;
    while (id > 0 && lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (a->v[mid].id < id) lo = mid + 1;
        else hi = mid;
    }
    return id > 0 && lo < a->n && a->v[lo].id == id ? &a->v[lo] : NULL;
}

/* A new attempt at a node (a resume evaluating it again): its earlier decisions no
 * longer count. */
static int attempt_event(void *arg, int64_t id, int64_t node, const char *js, double created) {
    (void)js;
    (void)created;
    char key[32];
    snprintf(key, sizeof key, "%lld", (long long)node);
    json_object_set_new(arg, key, json_integer(id));
    return 0;
}

typedef struct {
    json_t *critics, *attempts;
} critics_ctx;

static int critic_current(void *arg, int64_t id, int64_t node, const char *js, double created) {
    critics_ctx *c = arg;
    char key[32];
    snprintf(key, sizeof key, "%lld", (long long)node);
    if (json_integer_value(json_object_get(c->attempts, key)) > id) return 0; /* an interrupted attempt's */
    return critic_event(c->critics, id, node, js, created);
}

json_t *kf_tree_critics(kf_store *st) {
    critics_ctx c = {json_object(), json_object()};
    json_t *scr = json_object();
    kf_store_each_event(st, "attempt", attempt_event, c.attempts);
    kf_store_each_event(st, "critic", critic_current, &c);
    kf_store_each_event(st, "submit", screen_event, scr);
    kf_store_each_event(st, "screen", screen_event, scr);
    json_object_set_new(c.critics, "~screen", scr);
    json_t *desc = json_object();
    kf_store_each_event(st, "description", description_event, desc);
    json_object_set_new(c.critics, "descriptions", desc);
    json_decref(c.attempts);
    return c.critics;
}

/* The node's decision, of its current attempt; none while it is unfinished (an
 * interrupted attempt's decision is no longer its). */
static json_t *critic_of(json_t *critics, const kf_node *n) {
    if (kf_node_state_unfinished(n->state)) return NULL;
    char key[32];
    snprintf(key, sizeof key, "%lld", (long long)n->id);
    return json_object_get(critics, key);
}

/* What the node's screening left (screen_event), under the critics' "~screen" key. */
static json_t *screen_of(json_t *critics, int64_t node) {
    char key[32];
    snprintf(key, sizeof key, "%lld", (long long)node);
    return json_object_get(json_object_get(critics, "~screen"), key);
}

/* The node's speedup over its parent at each of its shapes (its speedup over the reference
 * divided by the parent's there), as [{sizes, speedup}], and their geomean into *geo (0:
 * none); NULL for a child of the root (its parent is the reference) or a parent not
 * measured at its shapes. */
static json_t *vs_parent(const kf_node *n, const kf_node *parent, double *geo) {
    *geo = 0;
    if (!parent || !parent->shapes_json || !n->shapes_json) return NULL;
    struct kf_verdict sh, ps;
    kf_verdict_from_text(n->shapes_json, &sh);
    kf_verdict_from_text(parent->shapes_json, &ps);
    json_t *out = json_array();
    double lg = 0;
    int cnt = 0;
    for (int k = 0; k < sh.nshapes; k++) {
        const kf_verdict_shape *p = kf_verdict_find(&ps, &sh.shapes[k].sizes);
        if (!p || p->speedup <= 0 || sh.shapes[k].speedup <= 0) continue;
        double r = sh.shapes[k].speedup / p->speedup;
        json_array_append_new(
            out, json_pack("{s:o, s:f}", "sizes", kf_verdict_sizes_json(&sh.shapes[k].sizes), "speedup", r));
        lg += log(r), cnt++;
    }
    kf_verdict_free(&sh);
    kf_verdict_free(&ps);
    if (!cnt) {
        json_decref(out);
        return NULL;
    }
    *geo = exp(lg / cnt);
    return out;
}

json_t *kf_tree_node_json(const kf_node *n, const kf_node *parent, const char *when, json_t *critics) {
    json_t *o = json_pack("{s:I, s:I, s:s, s:s, s:s, s:f}", "id", (json_int_t)n->id, "parent",
                          (json_int_t)n->parent, "state", kf_node_state_name(n->state), "proposer",
                          n->proposer, "category", n->category, "speedup", n->speedup);
    if (n->params_json) json_object_set_new(o, "params", json_loads(n->params_json, 0, NULL));
    if (n->reasons) json_object_set_new(o, "reasons", json_string(n->reasons));
    /* a screened node's figures are one short timing: under their own names, never
     * "speedup" and "shapes" (what best, export and a reader take as measured) */
    int screened = n->state == KF_NODE_SCREENED;
    if (screened) {
        json_object_set_new(o, "speedup", json_real(0));
        json_object_set_new(o, "screened_speedup", json_real(n->speedup));
    }
    if (n->shapes_json)
        json_object_set_new(o, screened ? "screened_shapes" : "shapes", json_loads(n->shapes_json, 0, NULL));
    if (n->note) json_object_set_new(o, "note", json_string(n->note));
    double geo = 0;
    json_t *vp = screened ? NULL : vs_parent(n, parent, &geo); /* a screened figure is no measurement */
    if (vp) {
        json_object_set_new(o, "vs_parent", vp);
        json_object_set_new(o, "speedup_vs_parent", json_real(geo));
    }
    json_t *cr = critic_of(critics, n), *sc = screen_of(critics, n->id);
    if (cr) json_object_set(o, "critic", cr);
    if (json_object_get(sc, "promoted_from"))
        json_object_set(o, "promoted_from", json_object_get(sc, "promoted_from"));
    if (json_object_get(sc, "screen")) json_object_set(o, "screen", json_object_get(sc, "screen"));
    const char *desc = description_of(critics, n->id);
    if (desc) json_object_set_new(o, "description", json_string(desc));
    /* a node that passed the check is safe on every shape of the task's ranges in its
     * kforge:when domain (hidden and edge shapes included) */
    int ok = n->state == KF_NODE_MEASURED || n->state == KF_NODE_KEPT || n->state == KF_NODE_REVERTED ||
             n->state == KF_NODE_SCREENED;
    if (when) json_object_set_new(o, "when", json_string(when));
    json_object_set_new(o, "safe_for",
                        !ok    ? json_null()
                        : when ? json_sprintf("the shapes where %s", when)
                               : json_string("all shapes in its domain"));
    return o;
}

typedef struct {
    kf_buf *b;
    int n;
} ctext;

static int constraint_text(void *arg, const kf_constraint *c) {
    ctext *t = arg;
    kf_buf *b = t->b;
    if (!t->n++) kf_buf_printf(b, "constraints learnt from failures:\n");
    kf_buf_printf(b, "  %s  (from node %lld%s%s)\n", c->text, (long long)c->node, c->category ? ", " : "",
                  c->category ? c->category : "");
    return 0;
}

static int constraint_json(void *arg, const kf_constraint *c) {
    json_array_append_new(arg, json_pack("{s:I, s:I, s:s, s:s?, s:I}", "id", (json_int_t)c->id, "node",
                                         (json_int_t)c->node, "text", c->text, "category", c->category,
                                         "scope", (json_int_t)c->scope));
    return 0;
}

void kf_tree_text(kf_buf *b, const kf_node_vec *a, char **whens, int64_t parent, int depth, json_t *critics,
                  const kf_diag_map *dm) {
    for (size_t i = 0; i < a->n; i++) {
        const kf_node *n = &a->v[i];
        if (n->parent != parent) continue;
        kf_buf_printf(b, "%*s#%lld %s  %s/%s", depth * 2, "", (long long)n->id, kf_node_state_name(n->state),
                      n->proposer, n->category);
        if (n->params_json) kf_buf_printf(b, "  %s", n->params_json);
        const kf_node *pn = kf_tree_find(a, n->parent);
        struct kf_verdict sh, ps;
        const char *desc = description_of(critics, n->id);
        if (desc) kf_buf_printf(b, "  \"%s\"", desc);
        kf_verdict_from_text(n->shapes_json, &sh);
        /* a screened figure is labelled, and never starred as a win */
        int screened = n->state == KF_NODE_SCREENED;
        kf_verdict_from_text(pn ? pn->shapes_json : NULL, &ps);
        for (int k = 0; k < sh.nshapes; k++) {
            const kf_verdict_shape *s = &sh.shapes[k];
            kf_buf_printf(b, "  [");
            for (int q = 0; q < s->sizes.n; q++)
                kf_buf_printf(b, "%s%s=%lld", q ? "," : "", s->sizes.name[q], (long long)s->sizes.v[q]);
            if (screened) {
                kf_buf_printf(b, "] screened %.3fx", s->speedup);
                continue;
            }
            kf_buf_printf(b, "] %.3fx%s", s->speedup, (s->has & KF_VS_WIN) && s->win ? "*" : "");
            const kf_verdict_shape *p = pn ? kf_verdict_find(&ps, &s->sizes) : NULL;
            if (p && p->speedup > 0 && s->speedup > 0)
                kf_buf_printf(b, " (%.3fx vs parent)", s->speedup / p->speedup);
        }
        kf_verdict_free(&sh);
        kf_verdict_free(&ps);
        if (screened)
            kf_buf_printf(b, "  (one short timing, not confirmed: kforge submit --promote %lld)",
                          (long long)n->id);
        json_t *sc = screen_of(critics, n->id);
        if (json_is_integer(json_object_get(sc, "promoted_from")))
            kf_buf_printf(b, "  promoted from #%lld",
                          (long long)json_integer_value(json_object_get(sc, "promoted_from")));
        if (json_object_get(sc, "screen"))
            kf_buf_printf(b, "  screened first at %.3fx",
                          json_number_value(json_object_get(json_object_get(sc, "screen"), "speedup")));
        if (n->reasons) kf_buf_printf(b, "  (%s)", n->reasons);
        if (whens && whens[i]) kf_buf_printf(b, "  safe for: %s", whens[i]);
        if (n->note) kf_buf_printf(b, "  note: %.160s", n->note);
        /* every veto says why, with the re-timing figures behind it: a reverted node's
         * starred first timing must not read as better than a kept one */
        json_t *cr = critic_of(critics, n);
        const char *cd = json_string_value(json_object_get(cr, "decision"));
        const char *cw = json_string_value(json_object_get(cr, "why"));
        if (cd && cw) kf_buf_printf(b, "  critic: %s: %.300s", cd, cw);
        json_t *fig = json_object_get(cr, "retimings");
        for (size_t k = 0; k < json_array_size(fig); k++) {
            json_t *f = json_array_get(fig, k);
            kf_buf_printf(b, "%s#%zu %.3fx (best shape %.3fx, 95%% from %.3f)",
                          k ? ", " : "; re-timed vs parent: ", k + 1,
                          json_number_value(json_object_get(f, "geomean")),
                          json_number_value(json_object_get(f, "best")),
                          json_number_value(json_object_get(f, "best_lo")));
        }
        /* the advisory critic's concern (it never decides) */
        json_t *adv = json_object_get(cr, "advisory");
        const char *op = json_string_value(json_object_get(adv, "opinion"));
        if (op && strcmp(op, "approve")) {
            const char *at = json_string_value(json_object_get(adv, "text"));
            const char *ae = json_string_value(json_object_get(adv, "error"));
            char line[200] = "";
            const char *src = at ? at : ae ? ae : "";
            while (*src == '`' || *src == ' ' || *src == '\n') src++;
            snprintf(line, sizeof line, "%s", src);
            for (char *q = line; *q; q++)
                if (*q == '\n') *q = ' ';
            kf_buf_printf(b, "  advisory %s: %s", op, line);
        }
        kf_buf_printf(b, "\n");
        const char *why = kf_diag_note(dm, n->id); /* a failure's root-cause class */
        if (why) kf_buf_printf(b, "%*s  why: %.300s\n", depth * 2, "", why);
        kf_tree_text(b, a, whens, n->id, depth + 1, critics, dm);
    }
}

static kf_status load_nodes(kf_ctx *ctx, const char *dir, kf_node_vec *a, kf_store **stp) {
    kf_store *st = NULL;
    kf_status s = kf_store_open(ctx, dir, NULL, &st);
    if (s) return s;
    if ((s = kf_store_each_node(st, kf_record_collect, a))) {
        kf_store_close(st);
        return s;
    }
    *stp = st;
    return KF_OK;
}

kf_status kf_tree_load(kf_ctx *ctx, const char *dir, kf_tree_data *d) {
    memset(d, 0, sizeof *d);
    kf_status s = load_nodes(ctx, dir, &d->a, &d->st);
    if (s) {
        kf_record_vec_free(&d->a);
        memset(d, 0, sizeof *d);
        return s;
    }
    kf_diag_load(d->st, &d->dm); /* diagnoses and breaker events; none when it fails */
    d->critics = kf_tree_critics(d->st);
    /* the domains of the nodes that passed the check (any kforge:when narrows what a
     * node is safe for: its source is read) */
    d->whens = d->a.n ? calloc(d->a.n, sizeof *d->whens) : NULL;
    for (size_t i = 0; d->whens && i < d->a.n; i++) {
        char *txt = NULL;
        kf_node_state ns = d->a.v[i].state;
        int passed =
            ns == KF_NODE_MEASURED || ns == KF_NODE_KEPT || ns == KF_NODE_REVERTED || ns == KF_NODE_SCREENED;
        if (!passed || kf_store_read_source(d->st, d->a.v[i].src_hash, d->a.v[i].ext, &txt, NULL)) continue;
        d->whens[i] = kf_candidate_when_text(txt);
        free(txt);
    }
    return KF_OK;
}

void kf_tree_data_free(kf_tree_data *d) {
    kf_diag_map_free(d->dm);
    json_decref(d->critics);
    for (size_t i = 0; d->whens && i < d->a.n; i++) free(d->whens[i]);
    free(d->whens);
    kf_record_vec_free(&d->a);
    kf_store_close(d->st);
    memset(d, 0, sizeof *d);
}

kf_status kf_run_tree(kf_ctx *ctx, const char *dir, int json, char **out) {
    kf_tree_data d;
    kf_status s = kf_tree_load(ctx, dir, &d);
    if (s) return s;
    kf_node_vec a = d.a;
    kf_store *st = d.st;
    kf_diag_map *dm = d.dm;
    json_t *critics = d.critics;
    char **whens = d.whens;
    if (json) {
        json_t *arr = json_array();
        for (size_t i = 0; i < a.n; i++) {
            json_t *nj = kf_tree_node_json(&a.v[i], kf_tree_find(&a, a.v[i].parent), whens ? whens[i] : NULL,
                                           critics),
                   *dj = kf_diag_json(dm, a.v[i].id);
            if (dj) json_object_set_new(nj, "diagnosis", dj);
            json_array_append_new(arr, nj);
        }
        json_t *cs = json_array();
        kf_store_each_constraint(st, constraint_json, cs);
        json_t *o = json_pack("{s:s, s:s, s:o, s:o, s:o}", "run", dir, "task", kf_store_task_dir(st), "nodes",
                              arr, "constraints", cs, "integrity", kf_record_integrity(st, a.v, a.n, NULL));
        json_object_set_new(o, "breakers", dm ? json_deep_copy(kf_diag_breakers(dm)) : json_array());
        char *lev = NULL;
        kf_loop_lessons_event(st, &lev);
        json_t *lj = lev ? json_loads(lev, 0, NULL) : NULL;
        if (lj) json_object_set_new(o, "lessons", lj);
        free(lev);
        *out = kf__json_dumps(o, JSON_INDENT(1));
        json_decref(o);
    } else {
        kf_buf b;
        kf_buf_init(&b, 256u << 20);
        json_decref(kf_record_integrity(st, a.v, a.n, &b));
        kf_buf_printf(
            &b,
            "run %s (task %s): %zu nodes; speedups against the reference, * = a win against the reference "
            "in that node's own timing, (vs parent) = against its parent. A kept node's figures are the "
            "lower of its timing and the Critic's re-timings; a reverted node's are its first timing, "
            "which the Critic's re-timing against its parent did not confirm (critic: says why)\n",
            dir, kf_store_task_dir(st), a.n);
        kf_buf_printf(&b, "#0 root: the reference\n");
        kf_tree_text(&b, &a, whens, 0, 1, critics, dm);
        ctext ct = {&b, 0};
        kf_store_each_constraint(st, constraint_text, &ct);
        kf_diag_breakers_text(dm, &b);
        kf_loop_lessons_text(&b, st);
        *out = b.p;
    }
    kf_tree_data_free(&d);
    return *out ? KF_OK : kf__err(ctx, KF_ENOMEM, "out of memory");
}

kf_status kf_run_best(kf_ctx *ctx, const char *dir, int json, char **out) {
    kf_node_vec a = {0};
    kf_store *st = NULL;
    kf_status s = load_nodes(ctx, dir, &a, &st);
    if (s) return s;
    /* per visible shape: the kept node with the highest speedup there (export.c); a
     * source whose bytes are not what the node names is refused, never reported */
    json_t *best = kf_record_best_shapes(a.v, a.n);
    size_t bi;
    json_t *be;
    json_array_foreach(best, bi, be) {
        int64_t id = json_integer_value(json_object_get(be, "node"));
        for (size_t k = 0; k < a.n; k++)
            if (a.v[k].id == id) {
                char *txt = NULL;
                if (kf_store_read_source(st, a.v[k].src_hash, a.v[k].ext, &txt, NULL)) {
                    kf_record_vec_free(&a);
                    json_decref(best);
                    kf_store_close(st);
                    return KF_EIO; /* the detail is on ctx */
                }
                free(txt);
                json_object_set_new(be, "source",
                                    json_sprintf("%s/src/%s.%s", dir, a.v[k].src_hash, a.v[k].ext));
            }
    }
    if (json) {
        json_t *o = json_pack("{s:s, s:O, s:o}", "run", dir, "best", best, "integrity",
                              kf_record_integrity(st, a.v, a.n, NULL));
        *out = kf__json_dumps(o, JSON_INDENT(1));
        json_decref(o);
    } else {
        kf_buf b;
        kf_buf_init(&b, 1u << 20);
        size_t j;
        json_t *e;
        json_decref(kf_record_integrity(st, a.v, a.n, &b));
        if (!json_array_size(best))
            kf_buf_printf(&b, "no node kept yet (none beat its parent, confirmed by re-timing)\n");
        json_array_foreach(best, j, e) {
            const char *key;
            json_t *val;
            int first = 1;
            json_object_foreach(json_object_get(e, "sizes"), key, val) {
                kf_buf_printf(&b, "%s%s=%lld", first ? "" : ", ", key, (long long)json_integer_value(val));
                first = 0;
            }
            long long id = (long long)json_integer_value(json_object_get(e, "node"));
            const kf_node *bn = NULL;
            for (size_t k = 0; k < a.n; k++)
                if (a.v[k].id == id) bn = &a.v[k];
            kf_buf_printf(&b, ": node %lld, %.3fx%s, %s/src/%s.%s\n", id,
                          json_number_value(json_object_get(e, "speedup")),
                          json_is_true(json_object_get(e, "win")) ? " (a win)" : "", dir,
                          bn ? bn->src_hash : "?", bn ? bn->ext : "?");
        }
        *out = b.p;
    }
    json_decref(best);
    kf_record_vec_free(&a);
    kf_store_close(st);
    return *out ? KF_OK : kf__err(ctx, KF_ENOMEM, "out of memory");
}
