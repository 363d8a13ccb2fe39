/*
 * loop.c - kforge run: the optimisation loop (docs/run.md). It adds memory and choice
 * around the checker and never judges a kernel itself:
 *
 *   search picks an action -> a proposer writes a candidate -> the store records it
 *   -> kf_bench checks and times it against its parent -> the Critic decides `kept`
 *   -> the store records the outcome in one transaction -> search observes it.
 *
 * A node's source is self-contained: a builtin point is the template with each
 * kforge:param list cut to the chosen value, so it can be re-checked, used as a parent
 * baseline and exported without remembering any --param.
 */
#include "loop.h"

#include "../search/builtin.h"
#include "../search/search.h"
#include "../store/store.h"
#include "../task/candidate.h"
#include "../util/util.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- materialising a parameter point ------------------------------------------- */

/* The template with every "kforge:param NAME = v1, v2" list replaced by the value the
 * point gives NAME (a JSON object {"NAME": "value"}). Lines are kept, so compile errors
 * keep the template's line numbers. */
char *kf_loop_materialize(const char *text, size_t len, json_t *point, size_t *outlen) {
    kf_buf b;
    kf_buf_init(&b, 64u << 20);
    const char *p = text, *end = text + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        const char *d = NULL;
        for (const char *q = p; q + 12 <= le; q++)
            if (!memcmp(q, "kforge:param", 12)) {
                d = q;
                break;
            }
        const char *eq = d ? memchr(d, '=', (size_t)(le - d)) : NULL;
        if (!eq) {
            kf_buf_append(&b, p, (size_t)(le - p) + (nl ? 1 : 0));
            p = le + (nl ? 1 : 0);
            continue;
        }
        /* the name between "kforge:param" and '=' */
        const char *n0 = d + 12;
        while (n0 < eq && (*n0 == ' ' || *n0 == '\t')) n0++;
        const char *n1 = eq;
        while (n1 > n0 && (n1[-1] == ' ' || n1[-1] == '\t')) n1--;
        char name[128];
        snprintf(name, sizeof name, "%.*s", (int)(n1 - n0), n0);
        const char *v = json_string_value(json_object_get(point, name));
        /* the list runs to the comment's end or the line's */
        const char *ce = NULL;
        for (const char *q = eq; q + 1 < le; q++)
            if (q[0] == '*' && q[1] == '/') {
                ce = q;
                break;
            }
        if (!ce) ce = le;
        kf_buf_append(&b, p, (size_t)(eq + 1 - p));
        if (v) {
            kf_buf_printf(&b, " %s ", v);
            kf_buf_append(&b, ce, (size_t)(le - ce) + (nl ? 1 : 0));
        } else {
            kf_buf_append(&b, eq + 1, (size_t)(le - eq - 1) + (nl ? 1 : 0));
        }
        p = le + (nl ? 1 : 0);
    }
    *outlen = b.len;
    return b.p;
}

/* ---- one evaluation ---------------------------------------------------------------- */

typedef struct {
    kf_ctx *ctx;
    const kf_run_opts *o;
    kf_task *t;
    kf_store *st;
    char run_dir[4096];
    int evals, kept, since_improve;
    double best;       /* best geometric-mean speedup over the reference so far */
    int64_t best_id;
    uint64_t t0;
    int tty;
    char last[160];    /* the last verdict, for the progress line */
} run_state;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void bench_opts(const run_state *r, kf_opts *o, const char *vs) {
    kf_opts_init(o);
    o->vs_path = vs;
    if (r->o->min_runs > 0) o->bench_min_runs = r->o->min_runs;
    if (r->o->max_runs > 0) o->bench_max_runs = r->o->max_runs;
    if (r->o->min_time_s > 0) o->bench_min_time_s = r->o->min_time_s;
    if (r->o->hidden >= 0) o->hidden_count = r->o->hidden;
    if (r->o->has_seed) {
        o->has_seed = 1;
        o->seed = r->o->seed + (uint64_t)r->evals * 7919u;
    }
}

/* The per-shape part of a bench result kept on the node: sizes, speedup, ci95, win,
 * the two times. */
static json_t *shapes_of(json_t *res) {
    json_t *out = json_array(), *sh = json_object_get(res, "shapes");
    size_t i;
    json_t *s;
    json_array_foreach(sh, i, s) {
        if (!json_object_get(s, "speedup")) continue;
        json_t *o = json_object();
        json_object_set(o, "sizes", json_object_get(s, "sizes"));
        static const char *const keys[] = {"speedup", "ci95", "win", "candidate_ns", "baseline_ns",
                                           "roofline_fraction", "fair"};
        for (size_t k = 0; k < sizeof keys / sizeof *keys; k++)
            if (json_object_get(s, keys[k])) json_object_set(o, keys[k], json_object_get(s, keys[k]));
        json_array_append_new(out, o);
    }
    return out;
}

/* The speedup this shapes array gives for the shape with these sizes, or 0. */
static double speedup_at(json_t *shapes, json_t *sizes) {
    size_t i;
    json_t *s;
    json_array_foreach(shapes, i, s)
        if (json_equal(json_object_get(s, "sizes"), sizes)) return json_number_value(json_object_get(s, "speedup"));
    return 0;
}

static int any_win(json_t *shapes) {
    size_t i;
    json_t *s;
    json_array_foreach(shapes, i, s)
        if (json_is_true(json_object_get(s, "win"))) return 1;
    return 0;
}

/* kf_bench of the node's source against vs (NULL: the reference): the result JSON, or
 * NULL with *err set when no verdict was reached (the evaluation itself failed). */
static json_t *bench_json(run_state *r, const char *path, const char *vs, char *err, size_t n) {
    kf_opts o;
    bench_opts(r, &o, vs);
    kf_result *res = NULL;
    kf_status s = kf_bench(r->ctx, r->t, path, &o, &res);
    if (s) {
        snprintf(err, n, "%s: %s", kf_strstatus(s), kf_errmsg(r->ctx));
        return NULL;
    }
    char *txt = kf_result_json(res);
    kf_result_free(res);
    json_t *j = txt ? json_loads(txt, 0, NULL) : NULL;
    free(txt);
    if (!j) snprintf(err, n, "out of memory");
    return j;
}

static void src_path(const run_state *r, const kf_node *n, char *out, size_t len) {
    snprintf(out, len, "%s/src/%s.%s", r->run_dir, n->src_hash, n->ext);
}

/* Evaluate node n (recorded as proposed): check and time it against the reference,
 * let the Critic decide whether it is kept, record the outcome in one transaction. */
static kf_status evaluate(run_state *r, kf_node *n, const kf_node *parent) {
    char path[4400], ppath[4400], err[1200] = "";
    src_path(r, n, path, sizeof path);
    double t0 = now_s();
    json_t *res = bench_json(r, path, NULL, err, sizeof err);
    json_t *shapes = NULL;
    if (!res) {
        n->state = KF_NODE_CRASHED;
        n->note = strdup(err);
    } else {
        const char *v = json_string_value(json_object_get(res, "verdict"));
        n->verdict_json = json_dumps(res, JSON_COMPACT);
        if (v && !strcmp(v, "accepted")) {
            shapes = shapes_of(res);
            n->shapes_json = json_dumps(shapes, JSON_COMPACT);
            n->speedup = json_number_value(json_object_get(res, "speedup"));
            n->state = KF_NODE_MEASURED;
        } else {
            kf_buf rb;
            kf_buf_init(&rb, 4096);
            size_t i;
            json_t *x;
            int compile = 0;
            json_array_foreach(json_object_get(res, "reasons"), i, x) {
                const char *c = json_string_value(json_object_get(x, "code"));
                if (!c) continue;
                if (!strstr(rb.p ? rb.p : "", c)) kf_buf_printf(&rb, "%s%s", rb.len ? "," : "", c);
                compile |= !strcmp(c, "compile_error");
            }
            n->reasons = rb.p;
            n->state = compile ? KF_NODE_COMPILE_FAILED : KF_NODE_REJECTED;
        }
    }
    /* The Critic: a measured node is kept only when it beats its parent on some shape
     * (against the reference: its own win; against a node: a higher speedup there) and a
     * second, direct timing in fresh workers against the parent confirms it. */
    if (n->state == KF_NODE_MEASURED) {
        json_t *pshapes = parent && parent->shapes_json ? json_loads(parent->shapes_json, 0, NULL) : NULL;
        int better = 0;
        size_t i;
        json_t *s;
        json_array_foreach(shapes, i, s) {
            double mine = json_number_value(json_object_get(s, "speedup"));
            double theirs = pshapes ? speedup_at(pshapes, json_object_get(s, "sizes")) : 1.0;
            if (json_is_true(json_object_get(s, "win")) && mine > theirs * (1 + r->o->keep_margin)) better = 1;
        }
        json_decref(pshapes);
        const char *why = "no shape beats the parent by more than the noise";
        if (better) {
            if (parent) src_path(r, parent, ppath, sizeof ppath);
            json_t *again = bench_json(r, path, parent ? ppath : NULL, err, sizeof err);
            json_t *ash = again ? shapes_of(again) : NULL;
            const char *av = again ? json_string_value(json_object_get(again, "verdict")) : NULL;
            if (again && av && !strcmp(av, "accepted") && any_win(ash)) {
                n->state = KF_NODE_KEPT;
                why = "re-timed against its parent in fresh workers: a win confirmed";
            } else {
                why = again ? "the re-timing against its parent did not confirm the win"
                            : "the re-timing failed";
            }
            json_decref(ash);
            json_decref(again);
        }
        if (n->state != KF_NODE_KEPT) n->state = KF_NODE_REVERTED;
        json_t *ev = json_pack("{s:s, s:s}", "decision", n->state == KF_NODE_KEPT ? "approve" : "reject",
                               "why", why);
        char *evs = json_dumps(ev, JSON_COMPACT);
        kf_store_event(r->st, n->id, "critic", evs);
        free(evs);
        json_decref(ev);
    }
    json_decref(shapes);
    json_decref(res);
    n->cost_s += now_s() - t0;
    n->finished = now_s();
    return kf_store_finish_node(r->st, n);
}

/* ---- the progress line --------------------------------------------------------------- */

static void progress(run_state *r, const kf_node *n) {
    double el = (double)(kf__now_ns() - r->t0) / 1e9;
    int budget = r->o->budget;
    double eta = r->evals > 0 && budget > r->evals ? el / r->evals * (budget - r->evals) : 0;
    snprintf(r->last, sizeof r->last, "#%lld %s%s%s", (long long)n->id, kf_node_state_name(n->state),
             n->reasons ? " " : "", n->reasons ? n->reasons : "");
    if (r->tty)
        fprintf(stderr, "\r\033[K[%d/%d] best %.3fx (#%lld)  last %s  %02d:%02d  ETA %02d:%02d",
                r->evals, budget, r->best, (long long)r->best_id, r->last, (int)el / 60, (int)el % 60,
                (int)eta / 60, (int)eta % 60);
    else
        fprintf(stderr, "kforge run: %d/%d evaluations, best %.3fx (node %lld), last %s, %.0f s\n",
                r->evals, budget, r->best, (long long)r->best_id, r->last, el);
    fflush(stderr);
}

/* ---- tree and best ------------------------------------------------------------------- */

typedef struct {
    kf_node *v;
    size_t n, cap;
} node_vec;

static int collect(void *arg, const kf_node *n) {
    node_vec *a = arg;
    if (a->n == a->cap) {
        size_t c = a->cap ? a->cap * 2 : 64;
        kf_node *p = realloc(a->v, c * sizeof *p);
        if (!p) return -1;
        a->v = p, a->cap = c;
    }
    kf_node *d = &a->v[a->n++];
    *d = *n;
    d->params_json = n->params_json ? strdup(n->params_json) : NULL;
    d->reasons = n->reasons ? strdup(n->reasons) : NULL;
    d->verdict_json = NULL; /* not needed here, and large */
    d->shapes_json = n->shapes_json ? strdup(n->shapes_json) : NULL;
    d->note = n->note ? strdup(n->note) : NULL;
    return 0;
}

static void vec_free(node_vec *a) {
    for (size_t i = 0; i < a->n; i++) kf_node_free(&a->v[i]);
    free(a->v);
}

static json_t *node_json(const kf_node *n) {
    json_t *o = json_pack("{s:I, s:I, s:s, s:s, s:s, s:f}", "id", (json_int_t)n->id, "parent",
                          (json_int_t)n->parent, "state", kf_node_state_name(n->state), "proposer",
                          n->proposer, "category", n->category, "speedup", n->speedup);
    if (n->params_json) json_object_set_new(o, "params", json_loads(n->params_json, 0, NULL));
    if (n->reasons) json_object_set_new(o, "reasons", json_string(n->reasons));
    if (n->shapes_json) json_object_set_new(o, "shapes", json_loads(n->shapes_json, 0, NULL));
    if (n->note) json_object_set_new(o, "note", json_string(n->note));
    /* a node that passed the check is safe on every shape of the task's ranges in its
     * kforge:when domain (hidden and edge shapes included) */
    int ok = n->state == KF_NODE_MEASURED || n->state == KF_NODE_KEPT || n->state == KF_NODE_REVERTED;
    json_object_set_new(o, "safe_for", ok ? json_string("all shapes in its domain") : json_null());
    return o;
}

static void tree_text(kf_buf *b, const node_vec *a, int64_t parent, int depth) {
    for (size_t i = 0; i < a->n; i++) {
        const kf_node *n = &a->v[i];
        if (n->parent != parent) continue;
        kf_buf_printf(b, "%*s#%lld %s  %s/%s", depth * 2, "", (long long)n->id, kf_node_state_name(n->state),
                      n->proposer, n->category);
        if (n->params_json) kf_buf_printf(b, "  %s", n->params_json);
        json_t *sh = n->shapes_json ? json_loads(n->shapes_json, 0, NULL) : NULL;
        size_t k;
        json_t *s;
        json_array_foreach(sh, k, s) {
            const char *key;
            json_t *val;
            kf_buf_printf(b, "  [");
            int first = 1;
            json_object_foreach(json_object_get(s, "sizes"), key, val) {
                kf_buf_printf(b, "%s%s=%lld", first ? "" : ",", key, (long long)json_integer_value(val));
                first = 0;
            }
            kf_buf_printf(b, "] %.3fx%s", json_number_value(json_object_get(s, "speedup")),
                          json_is_true(json_object_get(s, "win")) ? "*" : "");
        }
        json_decref(sh);
        if (n->reasons) kf_buf_printf(b, "  (%s)", n->reasons);
        if (n->note) kf_buf_printf(b, "  note: %.120s", n->note);
        kf_buf_printf(b, "\n");
        tree_text(b, a, n->id, depth + 1);
    }
}

/* ---- the run -------------------------------------------------------------------------- */

typedef struct {
    kf_point *p;   /* the point of node id (builtin nodes), indexed by id */
    char *has;
    size_t cap;
} point_map;

static int pm_put(point_map *m, int64_t id, const kf_point *p) {
    if ((size_t)id >= m->cap) {
        size_t c = m->cap ? m->cap : 256;
        while (c <= (size_t)id) c *= 2;
        kf_point *np = realloc(m->p, c * sizeof *np);
        if (!np) return -1;
        m->p = np;
        char *nh = realloc(m->has, c);
        if (!nh) return -1;
        memset(nh + m->cap, 0, c - m->cap);
        m->has = nh;
        m->cap = c;
    }
    m->p[id] = *p;
    m->has[id] = 1;
    return 0;
}

static const kf_point *pm_get(const point_map *m, int64_t id) {
    return id > 0 && (size_t)id < m->cap && m->has[id] ? &m->p[id] : NULL;
}

/* The point a builtin node's params_json names, by value. -1 if it is not of this space. */
static int point_of(const kf_builtin *b, const char *params_json, kf_point *out) {
    json_t *j = params_json ? json_loads(params_json, 0, NULL) : NULL;
    if (!j) return -1;
    memset(out, 0, sizeof *out);
    int ok = 0;
    for (int i = 0; i < kf_builtin_nparams(b) && !ok; i++) {
        json_t *v = json_object_get(j, kf_builtin_param_name(b, i));
        char txt[64];
        if (json_is_string(v)) snprintf(txt, sizeof txt, "%s", json_string_value(v));
        else if (json_is_integer(v)) snprintf(txt, sizeof txt, "%lld", (long long)json_integer_value(v));
        else ok = -1;
        int found = -1;
        for (int k = 0; ok == 0 && k < kf_builtin_param_nvalues(b, i); k++)
            if (!strcmp(kf_builtin_param_value(b, i, k), txt)) found = k;
        if (found < 0) ok = -1;
        else out->v[i] = found;
    }
    json_decref(j);
    return ok;
}

static kf_search_state sobs_state(kf_node_state s) {
    switch (s) {
    case KF_NODE_KEPT: return KF_SOBS_KEPT;
    case KF_NODE_MEASURED:
    case KF_NODE_REVERTED: return KF_SOBS_MEASURED;
    case KF_NODE_COMPILE_FAILED: return KF_SOBS_COMPILE_FAILED;
    case KF_NODE_CRASHED: return KF_SOBS_CRASHED;
    case KF_NODE_PRUNED: return KF_SOBS_PRUNED;
    default: return KF_SOBS_REJECTED;
    }
}

/* Tell search and the builtin what a finished node gave. */
static void observe(kf_search *se, kf_builtin *bi, point_map *pm, const kf_node *n) {
    kf_search_obs o = {n->id, n->parent, kf_search_category_parse(n->category), 0, sobs_state(n->state),
                       n->speedup, n->cost_s};
    if (o.category < 0) o.category = KF_CAT_OTHER;
    kf_search_observe(se, &o);
    kf_point p;
    if (!bi || point_of(bi, n->params_json, &p)) return;
    pm_put(pm, n->id, &p);
    kf_builtin_outcome bo = n->state == KF_NODE_COMPILE_FAILED ? KF_BUILTIN_COMPILE_FAILED
                            : n->state == KF_NODE_CRASHED      ? KF_BUILTIN_CRASHED
                            : n->shapes_json                   ? KF_BUILTIN_OK
                                                               : KF_BUILTIN_REJECTED;
    kf_shape_time times[64];
    int ns = 0;
    json_t *sh = n->shapes_json ? json_loads(n->shapes_json, 0, NULL) : NULL;
    size_t i;
    json_t *s;
    json_array_foreach(sh, i, s) {
        if (ns == 64) break;
        json_t *ci = json_object_get(s, "ci95");
        double sp = json_number_value(json_object_get(s, "speedup"));
        double half = json_is_array(ci) && sp > 0
                          ? (json_number_value(json_array_get(ci, 1)) - json_number_value(json_array_get(ci, 0))) / 2 / sp
                          : 0;
        times[ns].ns = json_number_value(json_object_get(s, "candidate_ns"));
        times[ns++].rel_noise = half;
    }
    json_decref(sh);
    if (bo == KF_BUILTIN_OK && ns == 0) bo = KF_BUILTIN_REJECTED;
    kf_builtin_observe(bi, &p, bo, times, bo == KF_BUILTIN_OK ? ns : 0);
}

typedef struct {
    kf_search *se;
    kf_builtin *bi;
    point_map *pm;
    int64_t *unfinished;
    size_t nun, capun;
    run_state *r;
} replay_ctx;

static int replay_one(void *arg, const kf_node *n) {
    replay_ctx *c = arg;
    if (kf_node_state_unfinished(n->state)) {
        if (c->nun == c->capun) {
            size_t k = c->capun ? c->capun * 2 : 16;
            int64_t *p = realloc(c->unfinished, k * sizeof *p);
            if (!p) return -1;
            c->unfinished = p, c->capun = k;
        }
        c->unfinished[c->nun++] = n->id;
        return 0;
    }
    observe(c->se, c->bi, c->pm, n);
    c->r->evals++;
    if (n->speedup > c->r->best && (n->state == KF_NODE_KEPT || n->state == KF_NODE_MEASURED ||
                                    n->state == KF_NODE_REVERTED)) {
        c->r->best = n->speedup;
        c->r->best_id = n->id;
    }
    return 0;
}

void kf_run_opts_init(kf_run_opts *o) {
    memset(o, 0, sizeof *o);
    o->agent = "builtin";
    o->budget = 20;
    o->hidden = -1;
    o->keep_margin = 0.0;
    o->patience = 0;
}

static kf_status finish_one(run_state *r, kf_search *se, kf_builtin *bi, point_map *pm, int64_t id) {
    kf_node n, parent;
    memset(&parent, 0, sizeof parent);
    kf_status st = kf_store_get_node(r->st, id, &n);
    if (st) return st;
    int hasp = n.parent > 0 && kf_store_get_node(r->st, n.parent, &parent) == KF_OK;
    st = evaluate(r, &n, hasp ? &parent : NULL);
    if (!st) {
        observe(se, bi, pm, &n);
        r->evals++;
        int ok = n.state == KF_NODE_KEPT || n.state == KF_NODE_MEASURED || n.state == KF_NODE_REVERTED;
        if (ok && n.speedup > r->best * (1 + r->o->keep_margin)) {
            r->best = n.speedup;
            r->best_id = n.id;
            r->since_improve = 0;
        } else {
            r->since_improve++;
        }
        if (n.state == KF_NODE_KEPT) {
            r->kept++;
            kf_store_savepoint(r->st, n.id, "kept");
        }
        progress(r, &n);
    }
    kf_node_free(&n);
    if (hasp) kf_node_free(&parent);
    return st;
}

/* The template the builtin proposer walks: candidates/param.<c|cu>. */
static int template_path(const kf_task *t, char *out, size_t n) {
    static const char *const ext[] = {"c", "cu"};
    for (int i = 0; i < 2; i++) {
        snprintf(out, n, "%s/candidates/param.%s", t->dir, ext[i]);
        if (!access(out, R_OK)) return i;
    }
    return -1;
}

kf_status kf_run(kf_ctx *ctx, const kf_run_opts *o, char **summary) {
    if (summary) *summary = NULL;
    if (strcmp(o->agent ? o->agent : "builtin", "builtin"))
        return kf__err(ctx, KF_EUSAGE, "--agent %s: only the builtin proposer drives kforge run so far "
                                       "(cmd: and openai: are built as modules, not yet wired: docs/run.md)",
                       o->agent);
    run_state r;
    memset(&r, 0, sizeof r);
    r.ctx = ctx;
    r.o = o;
    r.t0 = kf__now_ns();
    r.tty = isatty(2);
    kf_status st = KF_OK;
    kf_search *se = NULL;
    kf_builtin *bi = NULL;
    point_map pm = {0};
    replay_ctx rc = {0};
    char *tmpl = NULL;
    size_t tlen = 0;
    const char *task_dir = o->task_dir;
    /* resume: the task comes from the run */
    if (o->resume) {
        kf_store *peek = NULL;
        if ((st = kf_store_open(ctx, o->run_dir, NULL, &peek))) return st;
        static char td[4096];
        snprintf(td, sizeof td, "%s", kf_store_task_dir(peek));
        kf_store_close(peek);
        if (!task_dir) task_dir = td;
    }
    if (!task_dir) return kf__err(ctx, KF_EUSAGE, "kforge run: no task (kforge run TASK, or --resume RUN)");
    if ((st = kf_task_load(ctx, task_dir, &r.t))) return st;
    if (o->run_dir) {
        snprintf(r.run_dir, sizeof r.run_dir, "%s", o->run_dir);
    } else {
        time_t now = time(NULL);
        struct tm tm;
        localtime_r(&now, &tm);
        char stamp[32];
        strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
        snprintf(r.run_dir, sizeof r.run_dir, "runs/%s-%s", kf_task_name(r.t), stamp);
        kf__mkdirs("runs");
    }
    if (o->resume) {
        st = kf_store_open(ctx, r.run_dir, r.t, &r.st);
    } else {
        json_t *cfg = json_pack("{s:s, s:i, s:I}", "agent", "builtin", "budget", o->budget, "seed",
                                (json_int_t)o->seed);
        char *cs = json_dumps(cfg, JSON_COMPACT);
        json_decref(cfg);
        st = kf_store_create(ctx, r.run_dir, r.t, cs, &r.st);
        free(cs);
    }
    if (st) goto out;
    char tpath[4200];
    int ti = template_path(r.t, tpath, sizeof tpath);
    if (ti < 0) {
        st = kf__err(ctx, KF_EUSAGE, "%s: no template candidate (candidates/param.c or param.cu) for the "
                                     "builtin proposer", r.t->dir);
        goto out;
    }
    if ((st = kf_builtin_new(ctx, r.t, tpath, o->has_seed ? o->seed : kf__secret_u64(), &bi))) goto out;
    if (kf__read_file(tpath, 4u << 20, &tmpl, &tlen)) {
        st = kf__err(ctx, KF_EIO, "%s: %s", tpath, strerror(errno));
        goto out;
    }
    kf_search_cfg cfg;
    kf_search_defaults(&cfg);
    /* with no --target the gap never closes: the run goes on to its budget (search's own
     * default target, 2x, would stop it once 2x is reached); --search target=X still sets it */
    cfg.target = 1e6;
    for (int i = 0; i < o->nsearch; i++) {
        char err[256];
        if (kf_search_cfg_set(&cfg, o->search[i], err, sizeof err)) {
            st = kf__err(ctx, KF_EUSAGE, "--search %s: %s", o->search[i], err);
            goto out;
        }
    }
    if (o->target > 0) cfg.target = o->target;
    if (!(se = kf_search_new(&cfg))) {
        st = kf__err(ctx, KF_ENOMEM, "out of memory");
        goto out;
    }
    kf_search_offer(se, 0, kf_builtin_categories(bi));
    /* what the run already knows, then whatever was left unfinished */
    rc = (replay_ctx){se, bi, &pm, NULL, 0, 0, &r};
    if ((st = kf_store_each_node(r.st, replay_one, &rc))) goto out;
    if (r.evals)
        fprintf(stderr, "kforge run: resuming %s: %d evaluations recorded, %zu to finish\n", r.run_dir, r.evals, rc.nun);
    for (size_t i = 0; i < rc.nun && !st; i++) st = finish_one(&r, se, bi, &pm, rc.unfinished[i]);
    const char *why = "budget spent";
    while (!st) {
        if (r.evals >= o->budget) break;
        if (o->wall_s > 0 && (double)(kf__now_ns() - r.t0) / 1e9 >= o->wall_s) {
            why = "wall time spent";
            break;
        }
        if (o->target > 0 && r.best >= o->target) {
            why = "target reached";
            break;
        }
        if (o->patience > 0 && r.since_improve >= o->patience) {
            why = "no improvement in the last --patience evaluations";
            break;
        }
        kf_action a;
        if (kf_search_pick(se, &a)) {
            why = "every action scores under the floor";
            break;
        }
        kf_point pt;
        kf_move mv;
        int mcat = a.category, got;
        const kf_point *from = pm_get(&pm, a.parent);
        if (a.parent == 0)
            got = r.evals == 0 ? kf_builtin_next(bi, NULL, -1, &pt, &mv, &mcat) : kf_builtin_restart(bi, &pt);
        else
            got = from ? kf_builtin_next(bi, from, a.category, &pt, &mv, &mcat) : -1;
        if (got) {
            /* nothing left along this action: search stops offering it */
            kf_search_exhaust(se, a.parent, a.category, 0);
            if (a.parent != 0) continue; /* choose again */
            if (kf_builtin_next(bi, NULL, -1, &pt, &mv, &mcat)) {
                why = "the parameter space is exhausted";
                break;
            }
        }
        char pj[1024];
        kf_builtin_json(bi, &pt, pj, sizeof pj);
        json_t *pjson = json_loads(pj, 0, NULL);
        /* the materialiser wants string values */
        json_t *ps = json_object();
        for (int i = 0; i < kf_builtin_nparams(bi); i++)
            json_object_set_new(ps, kf_builtin_param_name(bi, i), json_string(kf_builtin_param_value(bi, i, pt.v[i])));
        size_t slen = 0;
        char *src = kf_loop_materialize(tmpl, tlen, ps, &slen);
        json_decref(ps);
        kf_node n;
        memset(&n, 0, sizeof n);
        n.parent = a.parent;
        snprintf(n.ext, sizeof n.ext, "%s", ti ? "cu" : "c");
        snprintf(n.proposer, sizeof n.proposer, "builtin");
        snprintf(n.category, sizeof n.category, "%s",
                 kf_search_category_name(mcat >= 0 ? mcat : a.category) ? kf_search_category_name(mcat >= 0 ? mcat : a.category) : "other");
        n.params_json = pjson ? json_dumps(pjson, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
        json_decref(pjson);
        n.created = now_s();
        st = src ? kf_store_put_source(r.st, src, slen, n.ext, n.src_hash) : kf__err(ctx, KF_ENOMEM, "out of memory");
        free(src);
        if (!st) st = kf_store_add_node(r.st, &n);
        int64_t id = n.id;
        kf_node_free(&n);
        if (!st) st = finish_one(&r, se, bi, &pm, id);
    }
    if (r.tty) fputc('\n', stderr);
    if (!st) {
        kf_store_set_status(r.st, "done");
        fprintf(stderr, "kforge run: %s: %d evaluations, %d kept, best %.3fx (node %lld); %s\n", r.run_dir, r.evals,
                r.kept, r.best, (long long)r.best_id, why);
        if (summary) {
            json_t *j = json_pack("{s:s, s:i, s:i, s:f, s:I, s:s}", "run", r.run_dir, "evaluations", r.evals, "kept",
                                  r.kept, "best_speedup", r.best, "best_node", (json_int_t)r.best_id, "stopped", why);
            *summary = json_dumps(j, JSON_COMPACT);
            json_decref(j);
        }
    }
out:
    free(rc.unfinished);
    free(pm.p);
    free(pm.has);
    free(tmpl);
    kf_search_free(se);
    kf_builtin_free(bi);
    kf_store_close(r.st);
    kf_task_free(r.t);
    return st;
}

/* ---- tree and best, public ------------------------------------------------------------- */

static kf_status load_nodes(kf_ctx *ctx, const char *dir, node_vec *a, kf_store **stp) {
    kf_store *st = NULL;
    kf_status s = kf_store_open(ctx, dir, NULL, &st);
    if (s) return s;
    if ((s = kf_store_each_node(st, collect, a))) {
        kf_store_close(st);
        return s;
    }
    *stp = st;
    return KF_OK;
}

kf_status kf_run_tree(kf_ctx *ctx, const char *dir, int json, char **out) {
    node_vec a = {0};
    kf_store *st = NULL;
    kf_status s = load_nodes(ctx, dir, &a, &st);
    if (s) return s;
    if (json) {
        json_t *arr = json_array();
        for (size_t i = 0; i < a.n; i++) json_array_append_new(arr, node_json(&a.v[i]));
        json_t *o = json_pack("{s:s, s:s, s:o}", "run", dir, "task", kf_store_task_dir(st), "nodes", arr);
        *out = json_dumps(o, JSON_INDENT(1));
        json_decref(o);
    } else {
        kf_buf b;
        kf_buf_init(&b, 256u << 20);
        kf_buf_printf(&b, "run %s (task %s): %zu nodes; speedups against the reference, * = a win\n", dir,
                      kf_store_task_dir(st), a.n);
        kf_buf_printf(&b, "#0 root: the reference\n");
        tree_text(&b, &a, 0, 1);
        *out = b.p;
    }
    vec_free(&a);
    kf_store_close(st);
    return *out ? KF_OK : kf__err(ctx, KF_ENOMEM, "out of memory");
}

kf_status kf_run_best(kf_ctx *ctx, const char *dir, int json, char **out) {
    node_vec a = {0};
    kf_store *st = NULL;
    kf_status s = load_nodes(ctx, dir, &a, &st);
    if (s) return s;
    /* per visible shape: the verified node with the highest speedup there (export.c) */
    json_t *best = kf_loop_best_shapes(a.v, a.n);
    size_t bi;
    json_t *be;
    json_array_foreach(best, bi, be) {
        int64_t id = json_integer_value(json_object_get(be, "node"));
        for (size_t k = 0; k < a.n; k++)
            if (a.v[k].id == id)
                json_object_set_new(be, "source", json_sprintf("%s/src/%s.%s", dir, a.v[k].src_hash, a.v[k].ext));
    }
    if (json) {
        json_t *o = json_pack("{s:s, s:O}", "run", dir, "best", best);
        *out = json_dumps(o, JSON_INDENT(1));
        json_decref(o);
    } else {
        kf_buf b;
        kf_buf_init(&b, 1u << 20);
        size_t j;
        json_t *e;
        if (!json_array_size(best)) kf_buf_printf(&b, "no verified node yet\n");
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
    vec_free(&a);
    kf_store_close(st);
    return *out ? KF_OK : kf__err(ctx, KF_ENOMEM, "out of memory");
}
