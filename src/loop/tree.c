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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The Critic's last decision per node: {"ID": {decision, why}} from the critic events. */
static int critic_event(void *arg, int64_t id, int64_t node, const char *js, double created) {
    (void)id;
    (void)created;
    json_t *j = json_loads(js, 0, NULL);
    char key[32];
    snprintf(key, sizeof key, "%lld", (long long)node);
    if (j) {
        json_t *c = json_pack("{s:O?, s:O?}", "decision", json_object_get(j, "decision"), "why", json_object_get(j, "why"));
        json_t *adv = json_object_get(j, "advisory");
        if (adv) json_object_set(c, "advisory", adv);
        json_object_set_new(arg, key, c);
    }
    json_decref(j);
    return 0;
}

json_t *kf_tree_critics(kf_store *st) {
    json_t *critics = json_object();
    kf_store_each_event(st, "critic", critic_event, critics);
    return critics;
}

static json_t *critic_of(json_t *critics, int64_t node) {
    char key[32];
    snprintf(key, sizeof key, "%lld", (long long)node);
    return json_object_get(critics, key);
}

json_t *kf_tree_node_json(const kf_node *n, const char *when, json_t *critics) {
    json_t *o = json_pack("{s:I, s:I, s:s, s:s, s:s, s:f}", "id", (json_int_t)n->id, "parent",
                          (json_int_t)n->parent, "state", kf_node_state_name(n->state), "proposer",
                          n->proposer, "category", n->category, "speedup", n->speedup);
    if (n->params_json) json_object_set_new(o, "params", json_loads(n->params_json, 0, NULL));
    if (n->reasons) json_object_set_new(o, "reasons", json_string(n->reasons));
    if (n->shapes_json) json_object_set_new(o, "shapes", json_loads(n->shapes_json, 0, NULL));
    if (n->note) json_object_set_new(o, "note", json_string(n->note));
    json_t *cr = critic_of(critics, n->id);
    if (cr) json_object_set(o, "critic", cr);
    /* a node that passed the check is safe on every shape of the task's ranges in its
     * kforge:when domain (hidden and edge shapes included) */
    int ok = n->state == KF_NODE_MEASURED || n->state == KF_NODE_KEPT || n->state == KF_NODE_REVERTED;
    if (when) json_object_set_new(o, "when", json_string(when));
    json_object_set_new(o, "safe_for", !ok   ? json_null()
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
                                         (json_int_t)c->node, "text", c->text, "category", c->category, "scope",
                                         (json_int_t)c->scope));
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
        struct kf_verdict sh;
        kf_verdict_from_text(n->shapes_json, &sh);
        for (int k = 0; k < sh.nshapes; k++) {
            const kf_verdict_shape *s = &sh.shapes[k];
            kf_buf_printf(b, "  [");
            for (int q = 0; q < s->sizes.n; q++)
                kf_buf_printf(b, "%s%s=%lld", q ? "," : "", s->sizes.name[q], (long long)s->sizes.v[q]);
            kf_buf_printf(b, "] %.3fx%s", s->speedup, (s->has & KF_VS_WIN) && s->win ? "*" : "");
        }
        kf_verdict_free(&sh);
        if (n->reasons) kf_buf_printf(b, "  (%s)", n->reasons);
        if (whens && whens[i]) kf_buf_printf(b, "  safe for: %s", whens[i]);
        if (n->note) kf_buf_printf(b, "  note: %.160s", n->note);
        /* a veto beyond "no better than its parent" is worth a look */
        json_t *cr = critic_of(critics, n->id);
        const char *cd = json_string_value(json_object_get(cr, "decision"));
        const char *cw = json_string_value(json_object_get(cr, "why"));
        if (cd && strcmp(cd, "approve") && cw && !strstr(cw, "beats the parent by more than the noise"))
            kf_buf_printf(b, "  critic: %s: %.200s", cd, cw);
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

kf_status kf_run_tree(kf_ctx *ctx, const char *dir, int json, char **out) {
    kf_node_vec a = {0};
    kf_store *st = NULL;
    kf_status s = load_nodes(ctx, dir, &a, &st);
    if (s) return s;
    kf_diag_map *dm = NULL;
    kf_diag_load(st, &dm); /* diagnoses and breaker events; none when it fails */
    json_t *critics = kf_tree_critics(st);
    /* the domains of the nodes that passed the check (any kforge:when narrows what a
     * node is safe for: its source is read) */
    char **whens = a.n ? calloc(a.n, sizeof *whens) : NULL;
    for (size_t i = 0; whens && i < a.n; i++) {
        char *txt = NULL;
        kf_node_state ns = a.v[i].state;
        int passed = ns == KF_NODE_MEASURED || ns == KF_NODE_KEPT || ns == KF_NODE_REVERTED;
        if (!passed || kf_store_read_source(st, a.v[i].src_hash, a.v[i].ext, &txt, NULL)) continue;
        whens[i] = kf_candidate_when_text(txt);
        free(txt);
    }
    if (json) {
        json_t *arr = json_array();
        for (size_t i = 0; i < a.n; i++) {
            json_t *nj = kf_tree_node_json(&a.v[i], whens ? whens[i] : NULL, critics), *dj = kf_diag_json(dm, a.v[i].id);
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
        *out = json_dumps(o, JSON_INDENT(1));
        json_decref(o);
    } else {
        kf_buf b;
        kf_buf_init(&b, 256u << 20);
        json_decref(kf_record_integrity(st, a.v, a.n, &b));
        kf_buf_printf(&b, "run %s (task %s): %zu nodes; speedups against the reference, * = a win\n", dir,
                      kf_store_task_dir(st), a.n);
        kf_buf_printf(&b, "#0 root: the reference\n");
        kf_tree_text(&b, &a, whens, 0, 1, critics, dm);
        ctext ct = {&b, 0};
        kf_store_each_constraint(st, constraint_text, &ct);
        kf_diag_breakers_text(dm, &b);
        kf_loop_lessons_text(&b, st);
        *out = b.p;
    }
    kf_diag_map_free(dm);
    json_decref(critics);
    for (size_t i = 0; whens && i < a.n; i++) free(whens[i]);
    free(whens);
    kf_record_vec_free(&a);
    kf_store_close(st);
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
                json_object_set_new(be, "source", json_sprintf("%s/src/%s.%s", dir, a.v[k].src_hash, a.v[k].ext));
            }
    }
    if (json) {
        json_t *o = json_pack("{s:s, s:O, s:o}", "run", dir, "best", best, "integrity",
                              kf_record_integrity(st, a.v, a.n, NULL));
        *out = json_dumps(o, JSON_INDENT(1));
        json_decref(o);
    } else {
        kf_buf b;
        kf_buf_init(&b, 1u << 20);
        size_t j;
        json_t *e;
        json_decref(kf_record_integrity(st, a.v, a.n, &b));
        if (!json_array_size(best)) kf_buf_printf(&b, "no node kept yet (none beat its parent, confirmed by re-timing)\n");
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
                          json_is_true(json_object_get(e, "win")) ? " (a win)" : "", dir, bn ? bn->src_hash : "?",
                          bn ? bn->ext : "?");
        }
        *out = b.p;
    }
    json_decref(best);
    kf_record_vec_free(&a);
    kf_store_close(st);
    return *out ? KF_OK : kf__err(ctx, KF_ENOMEM, "out of memory");
}
