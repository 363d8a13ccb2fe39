/*
 * loop.c - kforge run: the optimisation loop (docs/run.md). It adds memory and choice
 * around the checker and never judges a kernel itself:
 *
 *   search picks an action -> a proposer writes a candidate -> the store records it
 *   -> kf_bench checks and times it against its parent -> the Critic decides `kept`
 *   -> the store records the outcome in one transaction -> search observes it.
 *
 * Proposers, numbered for search: the builtin (0), an agent (1: cmd or openai, given the
 * context pack of the picked parent), tool mode (2: kforge next/submit, a model outside
 * driving the loop). A proposal that gives no text is still a node (no_candidate), so
 * nothing an agent was asked is lost. Tool mode's pending actions are `pending` events.
 *
 * A node's source is self-contained: a builtin point is the template with each
 * kforge:param list cut to the chosen value, so it can be re-checked, used as a parent
 * baseline and exported without remembering any --param.
 */
#include "loop.h"

#include "../agent/agent.h"
#include "../critic/advisor.h"
#include "../bench/bench.h"
#include "diagnose.h"
#include "memory.h"
#include "../search/builtin.h"
#include "../search/search.h"
#include "../store/store.h"
#include "../task/candidate.h"
#include "../util/util.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
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
    int64_t tokens;    /* tokens recorded on the run's nodes, in + out */
    int agent_fails;   /* proposals in a row that gave no candidate */
    double best;       /* best geometric-mean speedup over the reference so far */
    int64_t best_id;
    uint64_t t0;
    int tty;
    uint64_t bench_ns; /* time inside kf_bench (compiles, checks, timing) */
    int nlearnt;       /* the builtin's learnt constraints already in the store */
    const char *display; /* submit: the file's own name, for the evaluated copy (messages) */
    int fresh;         /* evaluations made by this process (not replayed) */
    char last[160];    /* the last verdict, for the progress line */
    kf_critic_opts critic; /* the Critic's settings (--critic) */
    kf_advisor *advisor;   /* --critic-agent: a second opinion on approved nodes */
    kf_run_opts own;       /* tool mode: the options in effect (the run's recorded ones) */
    json_t *cfg;           /* tool mode: the run's recorded config (own's strings) */
    double noise_floor;    /* a kept win's 95% interval starts above 1 + this */
    struct sched *sched; /* kf_run: where proposals go to be evaluated (--jobs) */
    int running;         /* evaluations in flight (--jobs), for the progress line */
    kf_loop_memory *mem; /* lessons for packs (NULL: none) */
    int trips;         /* circuit-breaker trips already recorded */
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
    /* --seed makes the search's walk reproducible; checks keep their secret inputs (a
     * seed derived from it would let a proposer predict hidden shapes and inputs) */
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

/* kf_bench of the node's source against vs (NULL: the reference): the result JSON, or
 * NULL with *err set when no verdict was reached (the evaluation itself failed). */
static json_t *bench_json_ex(run_state *r, const char *path, const char *vs, int stricter, char *err, size_t n) {
    kf_opts o;
    bench_opts(r, &o, vs);
    if (stricter) {
        o.hidden_count = (o.hidden_count >= 0 ? o.hidden_count : r->t->hidden_count) * 2 + 4;
        o.bench_min_runs *= 2;
        if (o.bench_max_runs < o.bench_min_runs) o.bench_max_runs = o.bench_min_runs;
    }
    kf_result *res = NULL;
    uint64_t b0 = kf__now_ns();
    kf_status s = kf_bench(r->ctx, r->t, path, &o, &res);
    r->bench_ns += kf__now_ns() - b0;
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

static json_t *bench_json(run_state *r, const char *path, const char *vs, char *err, size_t n) {
    return bench_json_ex(r, path, vs, 0, err, n);
}

/* The node's text, verified against its SHA-256 (kf_store_read_source), copied to a
 * private file that only this evaluation uses: what is checked and timed is exactly the
 * text the node names, whatever is done to RUN/src meanwhile. 0, or -1 with err set. */
static void sweep_runs(void) { kf__sweep_dead_dirs("kforge-run-"); }

static int private_copy(run_state *r, const kf_node *n, char *out, size_t len, char *err, size_t en) {
    char *text = NULL;
    size_t tl = 0;
    if (kf_store_read_source(r->st, n->src_hash, n->ext, &text, &tl)) {
        snprintf(err, en, "node %lld's source: %s", (long long)n->id, kf_errmsg(r->ctx));
        return -1;
    }
    const char *tmp = getenv("TMPDIR");
    char dir[4096];
    static pthread_once_t swept = PTHREAD_ONCE_INIT;
    pthread_once(&swept, sweep_runs);
    snprintf(dir, sizeof dir, "%s/kforge-run-%d-XXXXXX", tmp && *tmp ? tmp : "/tmp", (int)getpid());
    int rc = -1;
    if (mkdtemp(dir)) {
        /* compiler messages name this file: a submitted file keeps its own name */
        const char *base = r->display ? strrchr(r->display, '/') : NULL;
        base = base ? base + 1 : r->display;
        if (base && *base && !strchr(base, '/')) snprintf(out, len, "%s/%s", dir, base);
        else snprintf(out, len, "%s/n%lld.%s", dir, (long long)n->id, n->ext);
        FILE *f = fopen(out, "wb");
        if (f && fwrite(text, 1, tl, f) == tl && !fclose(f)) rc = 0;
        else if (f) fclose(f);
    }
    if (rc) snprintf(err, en, "a private copy of node %lld's source: %s", (long long)n->id, strerror(errno));
    free(text);
    return rc;
}

static void private_drop(const char *path) {
    char dir[4400];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = 0;
    kf__rmtree(dir);
}

/* Evaluate node n (recorded as proposed): check and time it against the reference,
 * let the Critic decide whether it is kept, record the outcome in one transaction. */
/* A kept node's figures against the reference are the lowest of its first timing and
 * what each of the Critic's re-timings implies (the parent's speedup there times the
 * re-timed speedup over the parent): a lucky first timing does not become its record.
 * The first timing's figure stays as speedup_first, its interval as ci95_first; ci95
 * becomes the re-timing's interval scaled by the parent's speedup there. */
void kf_loop__conservative(kf_node *n, json_t *shapes, const kf_node *parent, json_t *retimed) {
    json_t *pshapes = parent && parent->shapes_json ? json_loads(parent->shapes_json, 0, NULL) : NULL;
    double lg = 0;
    int cnt = 0;
    size_t i;
    json_t *s;
    json_array_foreach(shapes, i, s) {
        json_t *sizes = json_object_get(s, "sizes");
        double first = json_number_value(json_object_get(s, "speedup")), low = first;
        double base = pshapes ? speedup_at(pshapes, sizes) : 1.0;
        json_t *low_ci = NULL; /* the interval that goes with low: the re-timing's, scaled */
        size_t k;
        json_t *rt;
        json_array_foreach(retimed, k, rt) {
            size_t j;
            json_t *x;
            json_array_foreach(rt, j, x) {
                if (!json_equal(json_object_get(x, "sizes"), sizes)) continue;
                double implied = base * json_number_value(json_object_get(x, "speedup"));
                if (base > 0 && implied > 0 && implied < low) {
                    low = implied;
                    json_t *ci = json_object_get(x, "ci95");
                    json_decref(low_ci);
                    low_ci = json_array_size(ci) == 2
                                 ? json_pack("[f, f]", base * json_number_value(json_array_get(ci, 0)),
                                             base * json_number_value(json_array_get(ci, 1)))
                                 : NULL;
                }
            }
        }
        if (low < first) {
            json_object_set_new(s, "speedup_first", json_real(first));
            json_object_set_new(s, "speedup", json_real(low));
            /* its interval with it: a record whose speedup lay outside its own 95%
             * interval (the first timing's) misled a docs-only user */
            json_t *ci0 = json_object_get(s, "ci95");
            if (ci0) json_object_set(s, "ci95_first", ci0);
            if (low_ci) json_object_set(s, "ci95", low_ci);
            else json_object_del(s, "ci95");
        }
        json_decref(low_ci);
        if (json_number_value(json_object_get(s, "speedup")) > 0) lg += log(json_number_value(json_object_get(s, "speedup"))), cnt++;
    }
    json_decref(pshapes);
    if (cnt) n->speedup = exp(lg / cnt);
    free(n->shapes_json);
    n->shapes_json = json_dumps(shapes, JSON_COMPACT);
}

/* The Critic's callbacks: the task's fingerprint as on disk now, and one more timing
 * (stricter: twice the hidden shapes plus four, twice the rounds, fresh inputs). */
static int critic_fingerprint(void *arg, char hex[65]) {
    run_state *r = arg;
    return kf_store_fingerprint(r->ctx, r->t, hex) ? -1 : 0;
}

static json_t *critic_bench(void *arg, const char *path, const char *vs, int stricter, char *err, size_t n) {
    run_state *r = arg;
    return bench_json_ex(r, path, vs, stricter, err, n);
}

static kf_status evaluate(run_state *r, kf_node *n, const kf_node *parent) {
    char path[4400] = "", ppath[4400] = "", err[1200] = "";
    double t0 = now_s();
    json_t *res = private_copy(r, n, path, sizeof path, err, sizeof err) ? NULL
                                                                          : bench_json(r, path, NULL, err, sizeof err);
    /* a rejection for timing_mismatch alone (the two clocks disagreed: a loaded machine
     * or a forged stamp) is timed once more in fresh workers; the second verdict counts,
     * so a forger is rejected again */
    if (res && kf_critic_timing_only(res)) {
        json_t *again = bench_json(r, path, NULL, err, sizeof err);
        if (again) {
            json_decref(res);
            res = again;
        }
    }
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
    /* The Critic (critic.c): a measured node is kept only when it beats its parent on
     * some shape (against the reference: its own win; against a node: a higher speedup
     * there) and the Critic approves: task integrity, plausibility, re-timings against
     * the parent in fresh workers, a second look at a large gain from a tiny change. */
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
        const char *disp = r->display;
        r->display = NULL; /* the parent's copy keeps its node name */
        int pfail = better && parent && private_copy(r, parent, ppath, sizeof ppath, err, sizeof err);
        r->display = disp;
        char *src = NULL, *psrc = NULL;
        size_t sl = 0;
        if (better) {
            if (kf__read_file(path, 16u << 20, &src, &sl)) src = NULL;
            if (!pfail && parent && kf__read_file(ppath, 16u << 20, &psrc, &sl)) psrc = NULL;
            /* a child of the root changes the reference: the suspicious-gain check
             * compares it with the reference's text */
            if (!parent) {
                char rp[4200];
                snprintf(rp, sizeof rp, "%s/reference.%s", r->t->dir, !strcmp(r->t->backend, "cuda") ? "cu" : "c");
                if (kf__read_file(rp, 16u << 20, &psrc, &sl)) psrc = NULL;
            }
        }
        json_t *pres = parent && parent->verdict_json ? json_loads(parent->verdict_json, 0, NULL) : NULL;
        kf_critic_env env = {&r->critic, r->noise_floor, kf_store_task_fingerprint(r->st), critic_fingerprint,
                             critic_bench, r};
        kf_critic_case cc = {n->category, res, pres, better, parent ? parent->id : 0, path,
                             parent && !pfail ? ppath : NULL, src, psrc};
        json_t *rep = NULL;
        kf_critic_decision d = kf_critic_judge(&env, &cc, &rep);
        if (d == KF_CRITIC_APPROVE && r->advisor) {
            kf_advisor_case ac = {n->id, parent ? parent->id : 0, r->t->dir, NULL, src, psrc, shapes, rep};
            char *tj = NULL;
            size_t tl = 0;
            char tp[4200];
            snprintf(tp, sizeof tp, "%s/task.json", r->t->dir);
            if (!kf__read_file(tp, 1u << 20, &tj, &tl)) ac.task_json = tj;
            int64_t used = 0;
            json_object_set_new(rep, "advisory", kf_advisor_review(r->advisor, &ac, &used));
            n->tokens_in += used; /* the run's token budget counts the reviews */
            n->review_tokens += used;
            free(tj);
        }
        free(src);
        free(psrc);
        json_decref(pres);
        n->state = d == KF_CRITIC_APPROVE ? KF_NODE_KEPT : KF_NODE_REVERTED;
        if (d == KF_CRITIC_APPROVE) kf_loop__conservative(n, shapes, parent, json_object_get(rep, "retimed"));
        char *evs = json_dumps(rep, JSON_COMPACT);
        kf_status est = kf_store_event(r->st, n->id, "critic", evs);
        if (est) n->state = KF_NODE_REVERTED; /* no recorded approval, no keep */
        free(evs);
        json_decref(rep);
    }
    json_decref(shapes);
    json_decref(res);
    if (path[0]) private_drop(path);
    if (ppath[0]) private_drop(ppath);
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
    char best[64] = "none kept yet", run[32] = "";
    if (r->best_id) snprintf(best, sizeof best, "%.3fx geomean (node %lld)", r->best, (long long)r->best_id);
    if (r->running) snprintf(run, sizeof run, r->tty ? "  %d running" : ", %d running", r->running);
    if (r->tty)
        fprintf(stderr, "\r\033[K[%d/%d] best %s  last %s%s  %02d:%02d  ETA %02d:%02d", r->evals, budget, best,
                r->last, run, (int)el / 60, (int)el % 60, (int)eta / 60, (int)eta % 60);
    else
        fprintf(stderr, "kforge run: %d/%d evaluations, best %s, last %s%s, %.0f s\n", r->evals, budget, best, r->last,
                run, el);
    fflush(stderr);
}

/* ---- tree and best ------------------------------------------------------------------- */

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

static json_t *critic_of(json_t *critics, int64_t node) {
    char key[32];
    snprintf(key, sizeof key, "%lld", (long long)node);
    return json_object_get(critics, key);
}

/* when: the node's kforge:when (NULL: none, or not read) */
static json_t *node_json(const kf_node *n, const char *when, json_t *critics) {
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

/* whens[i] (NULL, or an entry NULL): the domain of a->v[i], shown as what it is safe for;
 * dm: the failures' diagnoses (may be NULL) */
static void tree_text(kf_buf *b, const kf_node_vec *a, char **whens, int64_t parent, int depth, json_t *critics,
                      const kf_diag_map *dm) {
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
        tree_text(b, a, whens, n->id, depth + 1, critics, dm);
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
    /* the (proposer, category) action gave nothing to check: search.h counts that as a
     * failure to build for that proposer's statistics, never as a checker rejection */
    case KF_NODE_NO_CANDIDATE: return KF_SOBS_COMPILE_FAILED;
    default: return KF_SOBS_REJECTED;
    }
}

/* A specialisation proposal of the loop (specialise): its speedup is a geometric mean
 * over its kforge:when domain only, so it is not the run's best geomean. */
#define SPEC_NOTE "specialisation of node "
static int is_spec(const kf_node *n) {
    return !strcmp(n->category, "specialisation") && n->note && !strncmp(n->note, SPEC_NOTE, strlen(SPEC_NOTE));
}

/* Search's proposer numbers: fixed, so a run's statistics mean the same whoever reads
 * them (kforge run, kforge next). */
enum { P_BUILTIN = 0, P_AGENT = 1, P_TOOL = 2, P_COUNT = 3 };
static const char *const proposer_names[P_COUNT] = {"builtin", "agent", "tool"};

static int proposer_index(const char *name) {
    if (!strcmp(name, "builtin")) return P_BUILTIN;
    if (!strcmp(name, "tool")) return P_TOOL;
    return P_AGENT; /* cmd, openai */
}

/* Tell search and the builtin what a finished node gave. */
static void observe(kf_search *se, kf_builtin *bi, point_map *pm, const kf_node *n) {
    kf_search_obs o = {n->id, n->parent, kf_search_category_parse(n->category), proposer_index(n->proposer),
                       sobs_state(n->state),
                       n->speedup, n->cost_s};
    if (o.category < 0) o.category = KF_CAT_OTHER;
    kf_search_observe(se, &o);
    kf_point p;
    /* a specialisation is timed on its domain only: not a point of the builtin's walk,
     * and no parent of neighbour moves */
    if (!bi || is_spec(n) || point_of(bi, n->params_json, &p)) return;
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
    if (n->tampered) { /* an evaluation was spent, but what its row says is not evidence */
        fprintf(stderr, "kforge run: WARNING: %s\n", n->note ? n->note : "a node does not match its seal");
        /* in the search's tree (its children keep their parent), as a try that taught nothing */
        kf_search_obs o = {n->id, n->parent, KF_CAT_OTHER, proposer_index(n->proposer), KF_SOBS_PRUNED, 0, 0};
        kf_search_observe(c->se, &o);
        c->r->evals++;
        return 0;
    }
    observe(c->se, c->bi, c->pm, n);
    c->r->tokens += n->tokens_in + n->tokens_out;
    if (n->state == KF_NODE_NO_CANDIDATE || n->state == KF_NODE_PRUNED) return 0; /* not an evaluation */
    c->r->evals++;
    c->r->kept += n->state == KF_NODE_KEPT;
    if (n->speedup > c->r->best && n->state == KF_NODE_KEPT && !is_spec(n)) {
        c->r->best = n->speedup;
        c->r->best_id = n->id;
    }
    return 0;
}

void kf_run_opts_init(kf_run_opts *o) {
    memset(o, 0, sizeof *o);
    o->agent = NULL;
    o->budget = 20;
    o->hidden = -1;
    o->keep_margin = 0.0;
    o->patience = 0;
}

/* Evaluate node id, recorded as proposed, with r's store: its outcome into *n (caller
 * frees with kf_node_free, also on error). An evaluator thread's work (--jobs). */
static kf_status eval_node(run_state *r, int64_t id, kf_node *n) {
    kf_node parent;
    memset(&parent, 0, sizeof parent);
    memset(n, 0, sizeof *n);
    kf_status st = kf_store_get_node(r->st, id, n);
    if (st) return st;
    if (n->tampered) /* changed by hand while it waited: not evaluated, its outcome not sealed */
        return kf__err(r->ctx, KF_EUSAGE, "%s", n->note ? n->note : "a node does not match its seal");
    int hasp = n->parent > 0 && kf_store_get_node(r->st, n->parent, &parent) == KF_OK;
    st = evaluate(r, n, hasp ? &parent : NULL);
    if (hasp) kf_node_free(&parent);
    return st;
}

/* The main thread's bookkeeping of an evaluated node, in the order outcomes arrive:
 * search and the builtin observe it, learnt constraints, counters, the progress line. */
static void record_one(run_state *r, kf_search *se, kf_builtin *bi, point_map *pm, const kf_node *n) {
    observe(se, bi, pm, n);
    kf_diag_record(r->st, n); /* why it failed, and the constraint it teaches */
    kf_diag_breaker(r->st, se, &r->trips, n->id, proposer_names, P_COUNT);
    /* what the builtin learnt from this outcome ("BM != 64": a value that never
     * builds) becomes a constraint of the run, shown by tree */
    int nl = bi ? kf_builtin_nlearnt(bi) : 0;
    for (; r->nlearnt < nl; r->nlearnt++) {
        char txt[256];
        kf_builtin_learnt(bi, r->nlearnt, txt, sizeof txt);
        kf_store_add_constraint(r->st, n->id, 0, n->category, txt, NULL);
    }
    r->evals++;
    r->fresh++;
    r->tokens += n->review_tokens;
    if (n->state == KF_NODE_KEPT && n->speedup > r->best && !is_spec(n)) {
        r->best = n->speedup;
        r->best_id = n->id;
        r->since_improve = 0;
    } else {
        r->since_improve++;
    }
    if (n->state == KF_NODE_KEPT) {
        r->kept++;
        kf_store_savepoint(r->st, n->id, "kept");
    }
    progress(r, n);
}

static kf_status finish_one(run_state *r, kf_search *se, kf_builtin *bi, point_map *pm, int64_t id) {
    kf_node n;
    kf_status st = eval_node(r, id, &n);
    if (!st) record_one(r, se, bi, pm, &n);
    kf_node_free(&n);
    return st;
}

/* ---- several evaluations at once (--jobs N) -------------------------------------------
 *
 * The main thread selects, proposes and records every node, and does all the bookkeeping
 * (search's and the builtin's observations, learnt constraints, counters, progress, stop
 * rules) in the order outcomes arrive. N evaluator threads each own a kf_ctx, a loaded
 * task and a store connection (WAL: writers queue under the busy timeout, store.c) and
 * run eval_node: the private copy, kf_bench (compiles and checks overlap; timed phases
 * run one at a time under bench.c's timing lock), the Critic's re-timings and the
 * outcome's transaction. With --jobs 1 there is no thread: each node is evaluated where
 * it is proposed, exactly as before. */

typedef struct {
    int64_t id;
    int category, proposer; /* search's pending try, undone when the outcome arrives */
    kf_point pt;            /* a builtin node's point, while it is in flight */
    int haspt;
} flight;

typedef struct {
    int64_t id;
    kf_status st;
    kf_node n;      /* the outcome as recorded (st KF_OK) */
    char err[1024]; /* the evaluator's message (st not KF_OK) */
} eval_outcome;

typedef struct evaluator {
    struct sched *s;
    run_state r; /* the main thread's, with its own ctx, task and store */
    pthread_t th;
} evaluator;

typedef struct sched {
    run_state *r;
    kf_search *se;
    kf_builtin *bi;
    point_map *pm;
    int jobs;
    flight fl[KF_RUN_MAX_JOBS]; /* in flight: main thread only */
    int n;
    pthread_mutex_t mu;         /* guards todo, done, quit */
    pthread_cond_t cv;
    int64_t todo[KF_RUN_MAX_JOBS];
    int ntodo;
    eval_outcome done[KF_RUN_MAX_JOBS];
    int ndone, quit;
    evaluator *ev;
    int nev;                    /* evaluators started */
    uint64_t wait_ns;           /* the main thread's time waiting for outcomes */
} sched;

static void *evaluator_main(void *arg) {
    evaluator *e = arg;
    sched *s = e->s;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        while (!s->ntodo && !s->quit) pthread_cond_wait(&s->cv, &s->mu);
        if (!s->ntodo) break;
        int64_t id = s->todo[0];
        memmove(s->todo, s->todo + 1, (size_t)--s->ntodo * sizeof *s->todo);
        pthread_mutex_unlock(&s->mu);
        eval_outcome o;
        memset(&o, 0, sizeof o);
        o.id = id;
        if ((o.st = eval_node(&e->r, id, &o.n)))
            snprintf(o.err, sizeof o.err, "node %lld: %s", (long long)id, kf_errmsg(e->r.ctx));
        pthread_mutex_lock(&s->mu);
        s->done[s->ndone++] = o; /* room: never more than jobs ids are out */
        pthread_cond_broadcast(&s->cv);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

static void evaluator_close(evaluator *e) {
    kf_store_close(e->r.st);
    kf_task_free(e->r.t);
    kf_ctx_free(e->r.ctx);
}

/* Start the evaluators (none for jobs 1). KF_OK, or a status with the detail on r->ctx
 * (sched_stop then still frees what was made). */
static kf_status sched_start(sched *s, run_state *r, kf_search *se, kf_builtin *bi, point_map *pm, int jobs) {
    *s = (sched){.r = r, .se = se, .bi = bi, .pm = pm, .jobs = jobs < 1 ? 1 : jobs};
    r->sched = s;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    if (s->jobs == 1) return KF_OK;
    if (!(s->ev = calloc((size_t)s->jobs, sizeof *s->ev))) return kf__err(r->ctx, KF_ENOMEM, "out of memory");
    for (int i = 0; i < s->jobs; i++) {
        evaluator *e = &s->ev[i];
        e->s = s;
        e->r = *r;
        e->r.ctx = kf_ctx_new();
        e->r.t = NULL;
        e->r.st = NULL;
        e->r.sched = NULL;
        e->r.display = NULL;
        e->r.bench_ns = 0;
        kf_status st = e->r.ctx ? KF_OK : kf__err(r->ctx, KF_ENOMEM, "out of memory");
        if (!st && ((st = kf_task_load(e->r.ctx, r->t->dir, &e->r.t)) ||
                    (st = kf_store_open(e->r.ctx, r->run_dir, e->r.t, &e->r.st))))
            kf__err(r->ctx, st, "evaluator %d of --jobs %d: %s", i + 1, s->jobs, kf_errmsg(e->r.ctx));
        if (!st && pthread_create(&e->th, NULL, evaluator_main, e))
            st = kf__err(r->ctx, KF_EINTERNAL, "evaluator %d of --jobs %d: pthread_create failed", i + 1, s->jobs);
        if (st) {
            evaluator_close(e);
            return st;
        }
        s->nev++;
    }
    return KF_OK;
}

/* Wait for the evaluators to finish what they were given, then free them. */
static void sched_stop(sched *s) {
    pthread_mutex_lock(&s->mu);
    s->quit = 1;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    for (int i = 0; i < s->nev; i++) {
        pthread_join(s->ev[i].th, NULL);
        s->r->bench_ns += s->ev[i].r.bench_ns;
        evaluator_close(&s->ev[i]);
    }
    for (int i = 0; i < s->ndone; i++) kf_node_free(&s->done[i].n);
    free(s->ev);
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    s->r->sched = NULL;
    s->r = NULL;
}

/* Wait for the next outcome and record it (record_one). Its status: an evaluation that
 * reached no outcome stops the run as with --jobs 1 (detail on r->ctx). */
static kf_status sched_wait(sched *s) {
    uint64_t t0 = kf__now_ns();
    pthread_mutex_lock(&s->mu);
    while (!s->ndone) pthread_cond_wait(&s->cv, &s->mu);
    eval_outcome o = s->done[0];
    memmove(s->done, s->done + 1, (size_t)--s->ndone * sizeof *s->done);
    pthread_mutex_unlock(&s->mu);
    s->wait_ns += kf__now_ns() - t0;
    for (int k = 0; k < s->n; k++)
        if (s->fl[k].id == o.id) {
            kf_search_pending(s->se, s->fl[k].category, s->fl[k].proposer, -1);
            s->fl[k] = s->fl[--s->n];
            break;
        }
    s->r->running = s->n;
    kf_status st = o.st;
    if (st) kf__err(s->r->ctx, st, "%s", o.err);
    else record_one(s->r, s->se, s->bi, s->pm, &o.n);
    kf_node_free(&o.n);
    return st;
}

/* Evaluate node id: here and now with --jobs 1, else by an evaluator (after waiting for a
 * free one); search counts it as a pending try until its outcome is recorded. */
static kf_status sched_put(sched *s, int64_t id) {
    run_state *r = s->r;
    if (s->jobs == 1) return finish_one(r, s->se, s->bi, s->pm, id);
    kf_status st = KF_OK;
    if (s->n == s->jobs && (st = sched_wait(s))) return st;
    kf_node n;
    if ((st = kf_store_get_node(r->st, id, &n))) return st;
    flight *f = &s->fl[s->n++];
    memset(f, 0, sizeof *f);
    f->id = id;
    f->category = kf_search_category_parse(n.category);
    if (f->category < 0) f->category = KF_CAT_OTHER;
    f->proposer = proposer_index(n.proposer);
    f->haspt = s->bi && !point_of(s->bi, n.params_json, &f->pt);
    kf_node_free(&n);
    kf_search_pending(s->se, f->category, f->proposer, +1);
    r->running = s->n;
    pthread_mutex_lock(&s->mu);
    s->todo[s->ntodo++] = id;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    return KF_OK;
}

/* 1 when a builtin node at point p is in flight (a resumed run's interrupted nodes are
 * evaluated again while the builtin, which has not seen them yet, proposes). */
static int sched_flying(const sched *s, const kf_point *p) {
    int np = kf_builtin_nparams(s->bi);
    for (int k = 0; k < s->n; k++)
        if (s->fl[k].haspt && !memcmp(s->fl[k].pt.v, p->v, (size_t)np * sizeof p->v[0])) return 1;
    return 0;
}

/* The lessons the builtin started from, one line (defined with tree, below). */
static void lessons_text(kf_buf *b, kf_store *st);

/* The template the builtin proposer walks: candidates/param.<c|cu>. */
static int template_path(const kf_task *t, char *out, size_t n) {
    static const char *const ext[] = {"c", "cu"};
    for (int i = 0; i < 2; i++) {
        snprintf(out, n, "%s/candidates/param.%s", t->dir, ext[i]);
        if (!access(out, R_OK)) return i;
    }
    return -1;
}

/* ---- the context pack of an action -------------------------------------------------- */

#define PACK_FAILURES 8       /* recent failures of related nodes told to an agent */
#define PACK_CONSTRAINTS 32
#define AGENT_FAIL_STOP 3     /* proposals in a row without a candidate that stop a run */
#define PENDING_TTL_S 1800.0  /* tool mode: a pending action older than this no longer blocks */

static int failed_state(kf_node_state s) {
    return s == KF_NODE_REJECTED || s == KF_NODE_COMPILE_FAILED || s == KF_NODE_CRASHED ||
           s == KF_NODE_NO_CANDIDATE;
}

typedef struct {
    int64_t parent, grand;    /* the action's parent and the parent's own parent (-1: none) */
    kf_pack_failure f[PACK_FAILURES];
    char *own[PACK_FAILURES][2];
    int n, next;              /* a ring of the latest PACK_FAILURES */
} fail_ctx;

/* The first reason's message of a verdict, else the node's note; caller frees. */
static char *first_message(const kf_node *n) {
    json_t *v = n->verdict_json ? json_loads(n->verdict_json, 0, NULL) : NULL;
    json_t *m = json_object_get(json_array_get(json_object_get(v, "reasons"), 0), "message");
    char *out = json_is_string(m) ? strdup(json_string_value(m))
                : m               ? json_dumps(m, JSON_COMPACT | JSON_ENCODE_ANY)
                : n->note         ? strdup(n->note)
                                  : NULL;
    json_decref(v);
    return out;
}

static int collect_failure(void *arg, const kf_node *n) {
    fail_ctx *c = arg;
    /* children of the parent (the new node's siblings) and siblings of the parent */
    int related = n->parent == c->parent || (c->grand >= 0 && n->parent == c->grand && n->id != c->parent);
    if (!related || !failed_state(n->state)) return 0;
    int k = c->next;
    free(c->own[k][0]);
    free(c->own[k][1]);
    c->own[k][0] = strdup(n->reasons ? n->reasons : kf_node_state_name(n->state));
    c->own[k][1] = first_message(n);
    c->f[k] = (kf_pack_failure){n->id, c->own[k][0], c->own[k][1]};
    c->next = (k + 1) % PACK_FAILURES;
    if (c->n < PACK_FAILURES) c->n++;
    return 0;
}

typedef struct {
    char *text[PACK_CONSTRAINTS];
    int n;
    int64_t parent;
} cons_ctx;

static int collect_constraint(void *arg, const kf_constraint *c) {
    cons_ctx *k = arg;
    if (k->n == PACK_CONSTRAINTS) return 1;
    if (c->scope && c->scope != k->parent) return 0; /* another node's children */
    k->text[k->n] = strdup(c->text);
    if (k->text[k->n]) k->n++;
    return 0;
}

static const char *task_ext(const kf_task *t) { return !strcmp(t->backend, "cuda") ? "cu" : "c"; }

/* The pack for improving node parent (0: the reference) along category (NULL: any):
 * task.json, the visible shapes, the parent's source, its verdict and per-shape timings,
 * recent failures of its children and siblings (latest first), the run's constraints. */
static kf_status pack_for(run_state *r, int64_t parent, const char *category, kf_pack *out) {
    kf_ctx *ctx = r->ctx;
    char path[4200], *task_json = NULL, *src = NULL, *shapes = NULL;
    size_t len;
    kf_node pn;
    memset(&pn, 0, sizeof pn);
    fail_ctx fc;
    memset(&fc, 0, sizeof fc);
    cons_ctx cc;
    memset(&cc, 0, sizeof cc);
    kf_status st = KF_OK;
    snprintf(path, sizeof path, "%s/task.json", r->t->dir);
    if (kf__read_file(path, 4u << 20, &task_json, &len)) {
        st = kf__err(ctx, KF_EIO, "%s: %s", path, strerror(errno));
        goto out;
    }
    json_t *tj = json_loads(task_json, 0, NULL);
    shapes = json_object_get(tj, "shapes") ? json_dumps(json_object_get(tj, "shapes"), JSON_COMPACT) : NULL;
    json_decref(tj);
    fc.parent = parent;
    fc.grand = -1;
    cc.parent = parent;
    if (parent == 0) {
        if (kf__read_file(r->t->ref_path, 4u << 20, &src, &len)) {
            st = kf__err(ctx, KF_EIO, "%s: %s", r->t->ref_path, strerror(errno));
            goto out;
        }
    } else {
        if ((st = kf_store_get_node(r->st, parent, &pn))) goto out;
        if ((st = kf_store_read_source(r->st, pn.src_hash, pn.ext, &src, &len))) goto out;
        fc.grand = pn.parent;
    }
    if ((st = kf_store_each_node(r->st, collect_failure, &fc))) goto out;
    if ((st = kf_store_each_constraint(r->st, collect_constraint, &cc))) goto out;
    kf_pack_failure fl[PACK_FAILURES];
    for (int i = 0; i < fc.n; i++) fl[i] = fc.f[((fc.next - 1 - i) % PACK_FAILURES + PACK_FAILURES) % PACK_FAILURES];
    kf_pack_in in;
    memset(&in, 0, sizeof in);
    in.task_dir = r->t->dir;
    in.task_json = task_json;
    in.shapes_json = shapes;
    in.parent_id = parent;
    in.parent_src = src;
    in.ext = task_ext(r->t);
    in.category = category;
    in.verdict_json = pn.verdict_json;
    in.timings_json = pn.shapes_json;
    in.failures = fl;
    in.nfailures = fc.n;
    in.constraints = (const char *const *)cc.text;
    in.nconstraints = cc.n;
    in.total = r->o->pack_tokens;
    char qtext[1024];
    snprintf(qtext, sizeof qtext, "%s %s %.800s", kf_task_name(r->t), category ? category : "",
             fc.n ? fl[0].message ? fl[0].message : "" : pn.note ? pn.note : "");
    if ((st = kf_loop_memory_lessons(r->mem, r->t, qtext, &in))) goto out;
    st = kf_pack_build(ctx, &in, out);
out:
    for (int i = 0; i < PACK_FAILURES; i++) free(fc.own[i][0]), free(fc.own[i][1]);
    for (int i = 0; i < cc.n; i++) free(cc.text[i]);
    kf_node_free(&pn);
    free(task_json);
    free(shapes);
    free(src);
    return st;
}

/* ---- the run -------------------------------------------------------------------------- */

/* Ask the agent for a child of a.parent and record it: a candidate is evaluated like a
 * builtin node; no candidate is a node in state no_candidate (an empty source, reason
 * "no_candidate", the agent's error as its note), so a failed proposal is never lost. It
 * is not an evaluation (the budget counts those) but its tokens count. *stop is set to
 * a reason when AGENT_FAIL_STOP proposals in a row gave nothing. */
static kf_status agent_step(run_state *r, kf_agent *ag, kf_search *se, kf_builtin *bi, point_map *pm,
                            const kf_action *a, const char **stop) {
    static char why[700];
    const char *cat = kf_search_category_name(a->category);
    kf_pack pk;
    memset(&pk, 0, sizeof pk);
    kf_status st = pack_for(r, a->parent, cat, &pk);
    if (st) return st;
    kf_proposal pr;
    memset(&pr, 0, sizeof pr);
    st = kf_agent_propose(ag, &pk, &pr);
    if (st) goto out; /* kforge could not ask (no temp dir, no memory): detail on ctx */
    kf_node n;
    memset(&n, 0, sizeof n);
    n.parent = a->parent;
    snprintf(n.ext, sizeof n.ext, "%s", pr.text && pr.ext[0] ? pr.ext : pk.ext);
    snprintf(n.proposer, sizeof n.proposer, "%s", kf_agent_kind(ag));
    snprintf(n.category, sizeof n.category, "%s", cat ? cat : "other");
    n.tokens_in = pr.tokens_in;
    n.tokens_out = pr.tokens_out;
    n.cost_s = pr.elapsed_s;
    n.created = now_s();
    r->tokens += pr.tokens_in + pr.tokens_out;
    if (pr.text) {
        st = kf_store_put_source(r->st, pr.text, pr.len, n.ext, n.src_hash);
    } else {
        st = kf_store_put_source(r->st, "", 0, n.ext, n.src_hash);
        n.note = strdup(pr.error ? pr.error : "the agent gave no candidate");
    }
    if (!st) st = kf_store_add_node(r->st, &n);
    if (!st) {
        json_t *ev = json_pack("{s:s, s:i, s:b, s:f, s:s%}", "agent", kf_agent_kind(ag), "attempts", pr.attempts,
                               "tokens_estimated", pr.tokens_estimated, "elapsed_s", pr.elapsed_s, "log",
                               pr.log ? pr.log : "", pr.log ? strlen(pr.log) < 4096 ? strlen(pr.log) : 4096 : 0);
        char *evs = ev ? json_dumps(ev, JSON_COMPACT) : NULL;
        kf_store_event(r->st, n.id, "proposal", evs);
        free(evs);
        json_decref(ev);
        kf_loop_pack_record(r->st, n.id, &pk, pr.tokens_estimated ? -1 : pr.tokens_in, 0);
    }
    char *dup = !st && pr.text ? kf_diag_prune_note(r->st, &n, 0) : NULL;
    if (dup) { /* the very text of a node that failed: pruned, not evaluated again */
        n.state = KF_NODE_PRUNED;
        n.note = dup;
        n.finished = now_s();
        st = kf_store_finish_node(r->st, &n);
        if (!st) {
            observe(se, bi, pm, &n);
            progress(r, &n);
            if (++r->agent_fails >= AGENT_FAIL_STOP) {
                snprintf(why, sizeof why, "the agent gave no new candidate %d times in a row (last: %.500s)",
                         AGENT_FAIL_STOP, dup);
                *stop = why;
            }
        }
    } else if (!st && pr.text) {
        r->agent_fails = 0;
        st = sched_put(r->sched, n.id);
    } else if (!st) {
        n.state = KF_NODE_NO_CANDIDATE;
        n.reasons = strdup("no_candidate");
        n.finished = now_s();
        st = kf_store_finish_node(r->st, &n);
        if (!st) {
            observe(se, bi, pm, &n);
            kf_diag_record(r->st, &n);
            kf_diag_breaker(r->st, se, &r->trips, n.id, proposer_names, P_COUNT);
            progress(r, &n);
            if (!r->tty) fprintf(stderr, "kforge run: node %lld: no candidate: %s\n", (long long)n.id, n.note);
            if (++r->agent_fails >= AGENT_FAIL_STOP) {
                snprintf(why, sizeof why, "the agent gave no candidate %d times in a row (last: %.500s)",
                         AGENT_FAIL_STOP, n.note);
                *stop = why;
            }
        }
    }
    kf_node_free(&n);
out:
    kf_proposal_free(&pr);
    kf_pack_free(&pk);
    return st;
}

/* The run's config as recorded at create: the proposer, its endpoint settings (never a
 * key: only the name of the variable holding it), the budgets. */
static char *config_json(const kf_run_opts *o, const char *agent) {
    json_t *cfg = json_pack("{s:s, s:i, s:I, s:b}", "agent", agent, "budget", o->budget, "seed", (json_int_t)o->seed,
                            "with_builtin", o->with_builtin);
    if (o->base_url) json_object_set_new(cfg, "base_url", json_string(o->base_url));
    if (o->api_key_env) json_object_set_new(cfg, "api_key_env", json_string(o->api_key_env));
    if (o->agent_timeout_s > 0) json_object_set_new(cfg, "agent_timeout_s", json_real(o->agent_timeout_s));
    if (o->tokens > 0) json_object_set_new(cfg, "tokens", json_integer(o->tokens));
    if (o->critic_agent) json_object_set_new(cfg, "critic_agent", json_string(o->critic_agent));
    /* the checks' and timings' settings: tool mode and --resume use them when not given */
    if (o->hidden >= 0) json_object_set_new(cfg, "hidden", json_integer(o->hidden));
    if (o->min_runs > 0) json_object_set_new(cfg, "min_runs", json_integer(o->min_runs));
    if (o->max_runs > 0) json_object_set_new(cfg, "max_runs", json_integer(o->max_runs));
    if (o->min_time_s > 0) json_object_set_new(cfg, "min_time_s", json_real(o->min_time_s));
    if (o->ncritic > 0) {
        json_t *ca = json_array();
        for (int i = 0; i < o->ncritic; i++) json_array_append_new(ca, json_string(o->critic[i]));
        json_object_set_new(cfg, "critic", ca);
    }
    json_object_set_new(cfg, "jobs", json_integer(o->jobs > 0 ? o->jobs : 1));
    if (o->lessons) { /* absolute, so a resume from elsewhere finds it */
        char *abs = strcmp(o->lessons, "none") ? realpath(o->lessons, NULL) : NULL;
        json_object_set_new(cfg, "lessons", json_string(abs ? abs : o->lessons));
        free(abs);
    }
    if (o->pack_tokens > 0) json_object_set_new(cfg, "pack_tokens", json_integer(o->pack_tokens));
    char *cs = json_dumps(cfg, JSON_COMPACT);
    json_decref(cfg);
    return cs;
}

/* The Critic's settings: its defaults, then each --critic KEY=VALUE; the noise floor is
 * the checker's own (kf_opts.win_floor). */
static kf_status critic_setup(run_state *r) {
    kf_critic_opts_init(&r->critic);
    kf_opts ko;
    kf_opts_init(&ko);
    r->noise_floor = ko.win_floor;
    for (int i = 0; i < r->o->ncritic; i++) {
        char err[300];
        if (kf_critic_set(&r->critic, r->o->critic[i], err, sizeof err)) return kf__err(r->ctx, KF_EUSAGE, "%s", err);
    }
    if (r->o->critic_agent) return kf_advisor_new(r->ctx, r->o->critic_agent, r->o->agent_timeout_s, &r->advisor);
    return KF_OK;
}

/* Tool mode judges every node of a run alike: the Critic's settings and the number of
 * hidden shapes are the run's, recorded when it was created (or last resumed), never the
 * submitter's; timing rounds not given take the run's too. */
static kf_status tool_settings(run_state *r, const kf_run_opts *o) {
    r->own = *o;
    r->o = &r->own;
    const char *cs = kf_store_config(r->st);
    r->cfg = cs ? json_loads(cs, 0, NULL) : NULL;
    if (o->ncritic || o->critic_agent)
        return kf__err(r->ctx, KF_EUSAGE, "%s: --critic%s: the Critic's settings are the run's (set by `kforge run`, "
                                          "recorded when the run was created); a submitter does not choose its judge",
                       r->run_dir, o->ncritic ? "" : "-agent");
    r->own.ncritic = 0;
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(r->cfg, "critic"), i, v) {
        if (r->own.ncritic < 8 && json_string_value(v)) r->own.critic[r->own.ncritic++] = json_string_value(v);
    }
    r->own.critic_agent = json_string_value(json_object_get(r->cfg, "critic_agent"));
    json_t *h = json_object_get(r->cfg, "hidden");
    int floor_ = json_is_integer(h) ? (int)json_integer_value(h) : r->t->hidden_count;
    if (o->hidden >= 0 && o->hidden < floor_)
        return kf__err(r->ctx, KF_EUSAGE, "%s: --hidden %d: fewer hidden shapes than the run checks with (%d)", r->run_dir,
                       o->hidden, floor_);
    if (o->hidden < 0 && json_is_integer(h)) r->own.hidden = (int)json_integer_value(h);
    if (!o->min_runs) r->own.min_runs = (int)json_integer_value(json_object_get(r->cfg, "min_runs"));
    if (!o->max_runs) r->own.max_runs = (int)json_integer_value(json_object_get(r->cfg, "max_runs"));
    if (!(o->min_time_s > 0)) r->own.min_time_s = json_number_value(json_object_get(r->cfg, "min_time_s"));
    return KF_OK;
}

/* Open an existing run for tool mode or resume: the task from the run, its fingerprint
 * checked. */
static kf_status open_run(kf_ctx *ctx, const kf_run_opts *o, run_state *r) {
    memset(r, 0, sizeof *r);
    r->ctx = ctx;
    r->o = o;
    r->t0 = kf__now_ns();
    if (!o->run_dir) return kf__err(ctx, KF_EUSAGE, "which run?");
    kf_store *peek = NULL;
    kf_status st = kf_store_open(ctx, o->run_dir, NULL, &peek);
    if (st) return st;
    char td[4096];
    snprintf(td, sizeof td, "%s", kf_store_task_dir(peek));
    kf_store_close(peek);
    if ((st = kf_task_load(ctx, td, &r->t))) return st;
    snprintf(r->run_dir, sizeof r->run_dir, "%s", o->run_dir);
    if (!(st = kf_store_open(ctx, r->run_dir, r->t, &r->st)) && !(st = kf_loop_seals_usable(ctx, r->run_dir, r->st)))
        st = tool_settings(r, o);
    if (st || (st = critic_setup(r))) {
        kf_store_close(r->st);
        r->st = NULL;
        kf_task_free(r->t);
        r->t = NULL;
        json_decref(r->cfg);
        r->cfg = NULL;
    }
    return st;
}

static void close_run(run_state *r) {
    kf_advisor_free(r->advisor);
    r->advisor = NULL;
    json_decref(r->cfg);
    r->cfg = NULL;
    kf_store_close(r->st);
    kf_task_free(r->t);
}

/* Search over the run's proposers, every setting from o. */
static kf_status new_search(run_state *r, kf_search **out) {
    kf_search_cfg cfg;
    kf_search_defaults(&cfg);
    /* with no --target the gap never closes: the run goes on to its budget (search's own
     * default target, 2x, would stop it once 2x is reached); --search target=X still sets it */
    cfg.target = 1e6;
    for (int i = 0; i < r->o->nsearch; i++) {
        char err[256];
        if (kf_search_cfg_set(&cfg, r->o->search[i], err, sizeof err))
            return kf__err(r->ctx, KF_EUSAGE, "--search %s: %s", r->o->search[i], err);
    }
    if (r->o->target > 0) cfg.target = r->o->target;
    cfg.nproposers = P_COUNT;
    if (!(*out = kf_search_new(&cfg))) return kf__err(r->ctx, KF_ENOMEM, "out of memory");
    for (int p = 0; p < P_COUNT; p++) kf_search_offer(*out, p, 0); /* the caller offers */
    return KF_OK;
}

/* ---- specialisation proposals (spec.c) -------------------------------------------- */

#define SPEC_NOISE 0.05 /* a winner beats the compromise by at least this, besides the noise */

typedef struct {
    char (*h)[65];  /* source hashes of the run's specialisation nodes */
    size_t n, cap;
    int loaded;
} spec_seen;

static int seen_has(const spec_seen *s, const char *h) {
    for (size_t i = 0; i < s->n; i++)
        if (!strcmp(s->h[i], h)) return 1;
    return 0;
}

static int seen_add(void *arg, const kf_node *n) {
    spec_seen *s = arg;
    if (strcmp(n->category, "specialisation") || seen_has(s, n->src_hash)) return 0;
    if (s->n == s->cap) {
        size_t c = s->cap ? s->cap * 2 : 16;
        char(*p)[65] = realloc(s->h, c * sizeof *p);
        if (!p) return -1;
        s->h = p, s->cap = c;
    }
    snprintf(s->h[s->n++], 65, "%s", n->src_hash);
    return 0;
}

/* When the builtin's measurements call for a specialisation that the run does not hold
 * yet (by source hash, so a resumed run does not propose it again), record it as a child
 * of the compromise's node and evaluate it like any node; *done = 1 then. */
static kf_status specialise(run_state *r, kf_search *se, kf_builtin *bi, point_map *pm, spec_seen *seen,
                            const char *tmpl, size_t tlen, const char *ext, int *done) {
    *done = 0;
    kf_spec *sp = NULL;
    int n = 0;
    kf_status st = kf_loop_specs(r->ctx, r->t, bi, tmpl, tlen, SPEC_NOISE, &sp, &n);
    if (!st && n && !seen->loaded) {
        st = kf_store_each_node(r->st, seen_add, seen);
        seen->loaded = 1;
    }
    for (int i = 0; i < n && !st && !*done; i++) {
        char h[65];
        const void *parts[] = {sp[i].text};
        size_t lens[] = {sp[i].len};
        if (kf__sha256_hex(parts, lens, 1, h)) {
            st = kf__err(r->ctx, KF_EINTERNAL, "sha256 failed");
            break;
        }
        if (seen_has(seen, h)) continue;
        int64_t parent = 0;
        for (size_t id = 1; id < pm->cap && !parent; id++)
            if (pm->has[id] && !memcmp(&pm->p[id], &sp[i].compromise, sizeof sp[i].compromise)) parent = (int64_t)id;
        if (!parent) continue; /* the compromise is not a node of this run (cannot happen) */
        kf_node nd;
        memset(&nd, 0, sizeof nd);
        nd.parent = parent;
        snprintf(nd.ext, sizeof nd.ext, "%s", ext);
        snprintf(nd.proposer, sizeof nd.proposer, "builtin");
        snprintf(nd.category, sizeof nd.category, "specialisation");
        nd.params_json = strdup(sp[i].params_json);
        nd.note = kf__asprintf(SPEC_NOTE "%lld for %s: kforge:when %s (it beats node %lld there by %.2fx)",
                               (long long)parent, sp[i].shapes, sp[i].when, (long long)parent, sp[i].gain);
        nd.created = now_s();
        if (!nd.params_json || !nd.note) st = kf__err(r->ctx, KF_ENOMEM, "out of memory");
        if (!st) st = kf_store_put_source(r->st, sp[i].text, sp[i].len, nd.ext, nd.src_hash);
        if (!st) st = kf_store_add_node(r->st, &nd);
        if (!st && seen_add(seen, &nd)) st = kf__err(r->ctx, KF_ENOMEM, "out of memory");
        int64_t id = nd.id;
        kf_node_free(&nd);
        if (!st) st = r->sched ? sched_put(r->sched, id) : finish_one(r, se, bi, pm, id);
        *done = !st;
    }
    kf_loop_specs_free(sp, n);
    return st;
}

/* kf_store_each_event callback: a copy of the first event's JSON into *(char **)arg. */
static int first_event(void *arg, int64_t id, int64_t node, const char *json, double created) {
    (void)id, (void)node, (void)created;
    char **out = arg;
    if (!*out && json) *out = strdup(json);
    return 1;
}

kf_status kf_run(kf_ctx *ctx, const kf_run_opts *o, char **summary) {
    if (summary) *summary = NULL;
    run_state r;
    memset(&r, 0, sizeof r);
    r.ctx = ctx;
    r.o = o;
    r.t0 = kf__now_ns();
    r.tty = isatty(2);
    kf_status st = KF_OK;
    kf_search *se = NULL;
    kf_builtin *bi = NULL;
    kf_agent *ag = NULL;
    point_map pm = {0};
    spec_seen seen = {0};
    replay_ctx rc = {0};
    static const sched no_sched;
    sched sc = no_sched; /* sc.r set: started */
    char *tmpl = NULL;
    size_t tlen = 0;
    json_t *rcfg = NULL; /* the run's recorded config, on resume */
    json_t *split_j = NULL;
    const char *task_dir = o->task_dir;
    kf_run_opts eo = *o; /* the options in effect: the command's, else the run's */
    const char *cmd_lessons = o->lessons; /* the command's own, not the run's recorded one */
    static char default_lessons[4096];
    if (cmd_lessons && !strcmp(cmd_lessons, "default")) { /* the shared database, named */
        kf_lessons_default_path(default_lessons, sizeof default_lessons);
        eo.lessons = cmd_lessons = default_lessons;
    }
    /* resume: the task comes from the run, and so does what the command does not say */
    if (o->resume) {
        kf_store *peek = NULL;
        if ((st = kf_store_open(ctx, o->run_dir, NULL, &peek))) return st;
        static char td[4096];
        snprintf(td, sizeof td, "%s", kf_store_task_dir(peek));
        rcfg = kf_store_config(peek) ? json_loads(kf_store_config(peek), 0, NULL) : NULL;
        kf_store_close(peek);
        if (!task_dir) task_dir = td;
        if (!eo.agent) eo.agent = json_string_value(json_object_get(rcfg, "agent"));
        if (!eo.base_url) eo.base_url = json_string_value(json_object_get(rcfg, "base_url"));
        if (!eo.api_key_env) eo.api_key_env = json_string_value(json_object_get(rcfg, "api_key_env"));
        if (!eo.agent_timeout_s) eo.agent_timeout_s = json_number_value(json_object_get(rcfg, "agent_timeout_s"));
        if (!eo.tokens) eo.tokens = json_integer_value(json_object_get(rcfg, "tokens"));
        if (!eo.lessons) eo.lessons = json_string_value(json_object_get(rcfg, "lessons"));
        if (!eo.pack_tokens) eo.pack_tokens = json_integer_value(json_object_get(rcfg, "pack_tokens"));
        eo.with_builtin |= json_is_true(json_object_get(rcfg, "with_builtin"));
        if (!eo.critic_agent) eo.critic_agent = json_string_value(json_object_get(rcfg, "critic_agent"));
        if (eo.hidden < 0 && json_is_integer(json_object_get(rcfg, "hidden")))
            eo.hidden = (int)json_integer_value(json_object_get(rcfg, "hidden"));
        if (!eo.min_runs) eo.min_runs = (int)json_integer_value(json_object_get(rcfg, "min_runs"));
        if (!eo.max_runs) eo.max_runs = (int)json_integer_value(json_object_get(rcfg, "max_runs"));
        if (!(eo.min_time_s > 0)) eo.min_time_s = json_number_value(json_object_get(rcfg, "min_time_s"));
        if (!eo.ncritic) { /* the Critic judges a resumed run as it judged the rest */
            size_t ci;
            json_t *cv;
            json_array_foreach(json_object_get(rcfg, "critic"), ci, cv) {
                if (eo.ncritic < 8 && json_string_value(cv)) eo.critic[eo.ncritic++] = json_string_value(cv);
            }
        }
        if (!eo.jobs) eo.jobs = (int)json_integer_value(json_object_get(rcfg, "jobs"));
    }
    if (eo.jobs < 1) eo.jobs = 1;
    if (eo.jobs > KF_RUN_MAX_JOBS) {
        json_decref(rcfg);
        return kf__err(ctx, KF_EUSAGE, "--jobs %d: at most %d", eo.jobs, KF_RUN_MAX_JOBS);
    }
    o = &eo;
    r.o = o;
    if ((st = critic_setup(&r))) {
        json_decref(rcfg);
        return st;
    }
    const char *spec = o->agent ? o->agent : "builtin";
    int agent = strcmp(spec, "builtin") != 0;
    if (cmd_lessons && o->resume) {
        json_decref(rcfg);
        return kf__err(ctx, KF_EUSAGE, "--lessons with --resume: a run takes its lessons when it starts, and "
                                       "--resume applies the ones it recorded then");
    }
    if (cmd_lessons && strcmp(cmd_lessons, "none") && (st = kf_loop_lessons_check(ctx, cmd_lessons))) {
        json_decref(rcfg);
        return st;
    }
    if (!task_dir) {
        json_decref(rcfg);
        return kf__err(ctx, KF_EUSAGE, "kforge run: no task (kforge run TASK, or --resume RUN)");
    }
    if (agent) {
        kf_agent_opts ao;
        kf_agent_opts_init(&ao);
        if (o->agent_timeout_s > 0) ao.timeout_s = o->agent_timeout_s;
        ao.base_url = o->base_url;
        if (o->api_key_env && !(ao.api_key = getenv(o->api_key_env))) {
            st = kf__err(ctx, KF_EUSAGE, "--api-key-env %s: %s is not set", o->api_key_env, o->api_key_env);
            goto out;
        }
        if ((st = kf_agent_new(ctx, spec, &ao, &ag))) goto out;
    }
    if ((st = kf_task_load(ctx, task_dir, &r.t))) goto out;
    /* lessons fill agents' packs; a named database is checked whoever proposes */
    if ((agent || o->lessons) && (st = kf_loop_memory_open(ctx, o->lessons, &r.mem))) goto out;
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
    char tpath[4200];
    int ti = template_path(r.t, tpath, sizeof tpath);
    if (!agent && ti < 0 && o->budget > 0) {
        st = kf__err(ctx, KF_EUSAGE, "%s: no template candidate (candidates/param.c or param.cu) for the "
                                     "builtin proposer: give the task one with kforge:param lines (docs/tasks.md), "
                                     "use --agent, or create an empty run for tool mode with --budget 0",
                     r.t->dir);
        goto out;
    }
    if (o->resume) {
        st = kf_store_open(ctx, r.run_dir, r.t, &r.st);
        if (!st) st = kf_loop_seals_usable(ctx, r.run_dir, r.st);
    } else {
        char *cs = config_json(o, spec);
        st = kf_store_create(ctx, r.run_dir, r.t, cs, &r.st);
        free(cs);
    }
    if (st) goto out;
    if (ti >= 0 && (!agent || o->with_builtin)) {
        if ((st = kf_builtin_new(ctx, r.t, tpath, o->has_seed ? o->seed : kf__secret_u64(), &bi))) goto out;
        if (kf__read_file(tpath, 4u << 20, &tmpl, &tlen)) {
            st = kf__err(ctx, KF_EIO, "%s: %s", tpath, strerror(errno));
            goto out;
        }
    }
    if (bi && cmd_lessons && strcmp(cmd_lessons, "none")) { /* lessons as the walk's prior, recorded for tree and resume */
        char *ev = NULL;
        if (!(st = kf_loop_lessons_prior(ctx, r.t, cmd_lessons, bi, &ev))) st = kf_store_event(r.st, 0, "lessons", ev);
        free(ev);
        if (st) goto out;
        kf_buf lb; /* said at the start, as tree says it later */
        kf_buf_init(&lb, 1 << 16);
        lessons_text(&lb, r.st);
        if (lb.p && lb.len) fprintf(stderr, "kforge run: %s", lb.p);
        kf_buf_free(&lb);
    } else if (bi && o->resume) {
        char *ev = NULL;
        const char *lpath = json_string_value(json_object_get(rcfg, "lessons"));
        if ((st = kf_store_each_event(r.st, "lessons", first_event, &ev))) goto out;
        if (ev) {
            st = kf_loop_lessons_replay(ctx, ev, bi);
        } else if (lpath && strcmp(lpath, "none")) { /* killed between creating the run and recording its lessons:
                             * nothing was proposed yet, so this is still the start */
            if (!(st = kf_loop_lessons_prior(ctx, r.t, lpath, bi, &ev))) st = kf_store_event(r.st, 0, "lessons", ev);
        }
        free(ev);
        if (st) goto out;
    }
    if ((st = new_search(&r, &se))) goto out;
    if (bi) kf_search_offer(se, P_BUILTIN, kf_builtin_categories(bi));
    if (ag) kf_search_offer(se, P_AGENT, (1u << KF_CAT_COUNT) - 1);
    /* what the run already knows, then whatever was left unfinished */
    rc = (replay_ctx){se, bi, &pm, NULL, 0, 0, &r};
    if ((st = kf_store_each_node(r.st, replay_one, &rc))) goto out;
    r.nlearnt = bi ? kf_builtin_nlearnt(bi) : 0; /* relearnt from the replay: already stored */
    r.trips = kf_search_trips(se);               /* likewise the breaker's trips */
    if (r.evals)
        fprintf(stderr, "kforge run: resuming %s: %d evaluation%s recorded, %zu interrupted (evaluated again)\n",
                r.run_dir, r.evals, r.evals == 1 ? "" : "s", rc.nun);
    if ((st = sched_start(&sc, &r, se, bi, &pm, o->jobs))) goto out;
    for (size_t i = 0; i < rc.nun && !st; i++) st = sched_put(&sc, rc.unfinished[i]);
    const char *why = "budget spent";
    /* Stop rules stop the issuing of new work; what is in flight is waited for and
     * recorded after the loop. The budget counts evaluations in flight. */
    while (!st) {
        if (r.evals + sc.n >= o->budget) break;
        if (o->wall_s > 0 && (double)(kf__now_ns() - r.t0) / 1e9 >= o->wall_s) {
            why = "wall time spent";
            break;
        }
        if (o->tokens > 0 && r.tokens >= o->tokens) {
            why = "token budget spent";
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
        if (sc.n == sc.jobs) { /* every evaluator busy: the next outcome first */
            st = sched_wait(&sc);
            continue;
        }
        if (bi) { /* measurements that call for a specialisation come first */
            int done = 0;
            if ((st = specialise(&r, se, bi, &pm, &seen, tmpl, tlen, ti ? "cu" : "c", &done)) || done) continue;
        }
        kf_action a;
        if (kf_search_pick(se, &a)) {
            if (sc.n) { /* what is in flight may open new actions */
                st = sched_wait(&sc);
                continue;
            }
            why = "every action scores under the floor";
            break;
        }
        if (a.proposer == P_AGENT) {
            const char *stop = NULL;
            st = agent_step(&r, ag, se, bi, &pm, &a, &stop);
            if (stop) {
                why = stop;
                break;
            }
            continue;
        }
        kf_point pt;
        kf_move mv;
        int mcat = a.category, got;
        const kf_point *from = pm_get(&pm, a.parent);
        if (a.parent == 0)
            got = r.evals + sc.n == 0 ? kf_builtin_next(bi, NULL, -1, &pt, &mv, &mcat) : kf_builtin_restart(bi, &pt);
        else
            got = from ? kf_builtin_next(bi, from, a.category, &pt, &mv, &mcat) : -1;
        if (got) {
            /* nothing left along this action: search stops offering it */
            kf_search_exhaust(se, a.parent, a.category, P_BUILTIN);
            if (a.parent != 0) continue; /* choose again */
            if (kf_builtin_next(bi, NULL, -1, &pt, &mv, &mcat)) {
                if (ag) { /* the agent may still have something to say */
                    kf_search_offer(se, P_BUILTIN, 0);
                    continue;
                }
                why = "the parameter space is exhausted";
                break;
            }
        }
        if (sched_flying(&sc, &pt)) continue; /* an interrupted node's point, being evaluated again */
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
        if (!st) st = sched_put(&sc, id);
    }
    /* what is in flight is recorded, whatever stopped the loop */
    while (sc.n) {
        kf_status ws = sched_wait(&sc);
        if (!st) st = ws;
    }
    sched_stop(&sc);
    if (r.tty) fputc('\n', stderr);
    if (!st) {
        kf_store_set_status(r.st, "done");
        kf_loop_pack_split(r.st, &split_j); /* the split of prompt tokens over the run's packs */
        if (o->budget == 0 && !r.evals && !o->resume)
            fprintf(stderr, "kforge run: created %s, empty (--budget 0): `kforge next %s` gives the first action\n",
                    r.run_dir, r.run_dir);
        else {
            char tok[64] = "", best[64] = "none kept";
            if (ag) snprintf(tok, sizeof tok, ", %lld tokens", (long long)r.tokens);
            if (r.best_id) snprintf(best, sizeof best, "best %.3fx geomean (node %lld)", r.best, (long long)r.best_id);
            char split[512] = "";
            if (split_j) {
                split[0] = ';', split[1] = ' ';
                kf_loop_pack_split_text(split_j, split + 2, sizeof split - 2);
            }
            char trips[64] = "";
            if (kf_search_trips(se))
                snprintf(trips, sizeof trips, ", circuit breaker tripped %d time%s", kf_search_trips(se),
                         kf_search_trips(se) == 1 ? "" : "s");
            fprintf(stderr, "kforge run: %s: %d evaluations, %d kept, %s%s%s; %s%s\n", r.run_dir, r.evals, r.kept,
                    best, tok, trips, why, split);
        }
        /* the loop's own cost: everything but kf_bench (compile, check, timing) */
        /* --jobs N: the main thread's time outside waiting for outcomes */
        uint64_t inside = o->jobs > 1 ? sc.wait_ns : r.bench_ns;
        double over_ms = r.fresh ? ((double)(kf__now_ns() - r.t0 - inside) / 1e6) / r.fresh : 0;
        if (summary) {
            json_t *j = json_pack("{s:s, s:i, s:i, s:f, s:I, s:I, s:s, s:f, s:i, s:i}", "run", r.run_dir,
                                  "evaluations", r.evals, "kept", r.kept, "best_speedup", r.best, "best_node",
                                  (json_int_t)r.best_id, "tokens", (json_int_t)r.tokens, "stopped", why,
                                  "overhead_ms_per_evaluation", over_ms, "jobs", o->jobs, "max_concurrent_timing",
                                  kf_bench_timing_max());
            if (j && split_j) json_object_set(j, "pack_tokens", split_j);
            char *lev = NULL; /* the builtin's prior, when lessons made one */
            kf_store_each_event(r.st, "lessons", first_event, &lev);
            json_t *lj = lev ? json_loads(lev, 0, NULL) : NULL;
            free(lev);
            if (j && lj) json_object_set_new(j, "lessons", lj);
            else json_decref(lj);
            if (j) json_object_set_new(j, "breaker_trips", json_integer(kf_search_trips(se)));
            *summary = json_dumps(j, JSON_COMPACT);
            json_decref(j);
        }
    }
out:
    if (sc.r) sched_stop(&sc);
    json_decref(split_j);
    kf_loop_memory_close(r.mem);
    free(rc.unfinished);
    free(seen.h);
    free(pm.p);
    free(pm.has);
    free(tmpl);
    kf_search_free(se);
    kf_builtin_free(bi);
    kf_agent_free(ag);
    kf_advisor_free(r.advisor);
    kf_store_close(r.st);
    kf_task_free(r.t);
    json_decref(rcfg);
    return st;
}

/* ---- tool mode: next and submit ------------------------------------------------------- */

typedef struct {
    int64_t id, parent;
    int category;
    double created;
    int open;
} pending;

typedef struct {
    pending v[256];  /* the latest pending actions; older ones have expired long ago */
    int n;
} pending_set;

static int collect_pending(void *arg, int64_t id, int64_t node, const char *js, double created) {
    pending_set *p = arg;
    json_t *j = js ? json_loads(js, 0, NULL) : NULL;
    if (j && p->n == 256) memmove(p->v, p->v + 1, sizeof p->v - sizeof *p->v), p->n--;
    if (j)
        p->v[p->n++] = (pending){id, json_integer_value(json_object_get(j, "parent")),
                                 kf_search_category_parse(json_string_value(json_object_get(j, "category"))), created, 1};
    json_decref(j);
    return 0;
}

static int close_submitted(void *arg, int64_t id, int64_t node, const char *js, double created) {
    pending_set *p = arg;
    json_t *j = js ? json_loads(js, 0, NULL) : NULL;
    int64_t pid = json_integer_value(json_object_get(j, "pending"));
    for (int i = 0; pid && i < p->n; i++)
        if (p->v[i].id == pid) p->v[i].open = 0;
    json_decref(j);
    return 0;
}

/* The open pending actions: not submitted, younger than PENDING_TTL_S. */
static kf_status pendings(run_state *r, pending_set *p) {
    memset(p, 0, sizeof *p);
    kf_status st = kf_store_each_event(r->st, "pending", collect_pending, p);
    if (!st) st = kf_store_each_event(r->st, "submit", close_submitted, p);
    if (!st) st = kf_store_each_event(r->st, "withdrawn", close_submitted, p);
    double now = now_s();
    for (int i = 0; i < p->n; i++)
        if (now - p->v[i].created > PENDING_TTL_S || p->v[i].category < 0) p->v[i].open = 0;
    return st;
}

typedef struct {
    char nonce[24];
    int64_t id;
} mine_ctx;

/* The id of the pending event carrying this call's nonce (other callers write too). */
static int find_mine(void *arg, int64_t id, int64_t node, const char *js, double created) {
    mine_ctx *m = arg;
    if (js && strstr(js, m->nonce)) m->id = id;
    return 0;
}

kf_status kf_run_next(kf_ctx *ctx, const kf_run_opts *o, int json, char **out) {
    *out = NULL;
    run_state r;
    kf_status st = open_run(ctx, o, &r);
    if (st) return st;
    kf_search *se = NULL;
    replay_ctx rc = {0};
    kf_pack pk;
    memset(&pk, 0, sizeof pk);
    pending_set ps;
    json_t *ej = NULL;
    if ((st = new_search(&r, &se))) goto out;
    if ((st = kf_loop_memory_open(ctx, o->lessons, &r.mem))) goto out;
    kf_search_offer(se, P_TOOL, (1u << KF_CAT_COUNT) - 1);
    rc = (replay_ctx){se, NULL, NULL, NULL, 0, 0, &r};
    if ((st = kf_store_each_node(r.st, replay_one, &rc))) goto out;
    /* An action someone is working on is not offered again until it is submitted or
     * expires. Another `next` may record the same action between our read and our write:
     * then the earlier record stands and ours is withdrawn, and we choose again. */
    kf_action a;
    const char *cat = NULL;
    int64_t pid = 0;
    for (int attempt = 0; !pid; attempt++) {
        if ((st = pendings(&r, &ps))) goto out;
        for (int i = 0; i < ps.n; i++)
            if (ps.v[i].open) kf_search_exhaust(se, ps.v[i].parent, ps.v[i].category, P_TOOL);
        if (attempt == 8 || kf_search_pick(se, &a)) {
            st = kf__err(ctx, KF_EUSAGE, "%s: no action left to offer (every action scores under the floor or is "
                                         "pending)", r.run_dir);
            goto out;
        }
        cat = kf_search_category_name(a.category);
        mine_ctx m = {"", 0};
        snprintf(m.nonce, sizeof m.nonce, "%016llx", (unsigned long long)kf__secret_u64());
        json_t *ev = json_pack("{s:I, s:s, s:s, s:f, s:s}", "parent", (json_int_t)a.parent, "category", cat,
                               "proposer", "tool", "score", a.h, "nonce", m.nonce);
        char *evs = json_dumps(ev, JSON_COMPACT);
        json_decref(ev);
        st = kf_store_event(r.st, 0, "pending", evs);
        free(evs);
        if (!st) st = kf_store_each_event(r.st, "pending", find_mine, &m);
        if (!st) st = pendings(&r, &ps);
        if (st) goto out;
        pid = m.id;
        for (int i = 0; i < ps.n && pid; i++)
            if (ps.v[i].open && ps.v[i].id < m.id && ps.v[i].parent == a.parent && ps.v[i].category == a.category) {
                char w[64];
                snprintf(w, sizeof w, "{\"pending\": %lld}", (long long)m.id);
                if ((st = kf_store_event(r.st, 0, "withdrawn", w))) goto out;
                pid = 0;
            }
    }
    if ((st = pack_for(&r, a.parent, cat, &pk))) goto out;
    kf_loop_pack_record(r.st, 0, &pk, -1, pid);
    char expl[2048];
    kf_search_explain(&a, expl, sizeof expl);
    ej = json_loads(expl, 0, NULL);
    char submit[4600];
    snprintf(submit, sizeof submit, "kforge submit %s --parent %lld --category %s FILE", r.run_dir,
             (long long)a.parent, cat);
    if (json) {
        json_t *j = json_pack("{s:s, s:I, s:I, s:s, s:f, s:o, s:s, s:o, s:s, s:s}", "run", r.run_dir, "pending",
                              (json_int_t)pid, "parent", (json_int_t)a.parent, "category", cat, "score", a.h, "explain",
                              ej ? json_incref(ej) : json_null(), "submit", submit,
                              "pack", json_loads(pk.json, 0, NULL), "system", pk.system, "prompt", pk.prompt);
        *out = j ? json_dumps(j, JSON_INDENT(1)) : NULL;
        json_decref(j);
    } else {
        kf_buf b;
        kf_buf_init(&b, 64u << 20);
        kf_buf_printf(&b,
                      "kforge next: pending action %lld: improve node %lld (%s), category %s, score %.3f\n"
                      "write the whole candidate file, then: %s\n\n---- system ----\n%s\n\n---- prompt ----\n%s\n",
                      (long long)pid, (long long)a.parent, a.parent ? "a node of the run" : "the reference", cat, a.h,
                      submit, pk.system, pk.prompt);
        *out = b.p;
    }
    if (!*out) st = kf__err(ctx, KF_ENOMEM, "out of memory");
out:
    json_decref(ej);
    kf_pack_free(&pk);
    free(rc.unfinished);
    kf_search_free(se);
    kf_loop_memory_close(r.mem);
    close_run(&r);
    return st;
}

kf_status kf_run_submit(kf_ctx *ctx, const kf_run_opts *o, int64_t parent, const char *path, const char *category,
                        int json, char **out, int *outcome) {
    *out = NULL;
    *outcome = 2;
    if (category && kf_search_category_parse(category) < 0)
        return kf__err(ctx, KF_EUSAGE, "--category %s: not a category (tiling, vectorisation, unrolling, "
                                       "memory_layout, launch_config, algorithm, specialisation, precision, other)",
                       category);
    if (parent < 0) return kf__err(ctx, KF_EUSAGE, "--parent %lld: a node id, 0 for the root", (long long)parent);
    run_state r;
    kf_status st = open_run(ctx, o, &r);
    if (st) return st;
    kf_node pn, n;
    memset(&pn, 0, sizeof pn);
    memset(&n, 0, sizeof n);
    char *text = NULL;
    size_t len = 0;
    int hasp = 0;
    if (parent > 0) {
        if (kf_store_get_node(r.st, parent, &pn)) {
            st = kf__err(ctx, KF_EUSAGE, "%s: no node %lld (kforge tree %s lists them; 0 is the root)", r.run_dir,
                         (long long)parent, r.run_dir);
            goto out;
        }
        hasp = 1;
        if (!(pn.state == KF_NODE_MEASURED || pn.state == KF_NODE_KEPT || pn.state == KF_NODE_REVERTED)) {
            st = kf__err(ctx, KF_EUSAGE, "%s: node %lld is %s: a parent is the root (0) or a node that passed the check",
                         r.run_dir, (long long)parent, kf_node_state_name(pn.state));
            goto out;
        }
    }
    errno = 0;
    if (kf__read_file(path, 1u << 20, &text, &len)) {
        st = kf__err(ctx, KF_EUSAGE, "%s: %s", path, errno ? strerror(errno) : "larger than 1 MiB");
        goto out;
    }
    /* the category: as given, else the pending action's for this parent, else other */
    pending_set ps;
    if ((st = pendings(&r, &ps))) goto out;
    int64_t pid = 0;
    int want = category ? kf_search_category_parse(category) : -1;
    for (int i = 0; i < ps.n && !pid; i++)
        if (ps.v[i].open && ps.v[i].parent == parent && (want < 0 || ps.v[i].category == want)) {
            pid = ps.v[i].id;
            if (want < 0) want = ps.v[i].category;
        }
    const char *dot = strrchr(path, '.');
    snprintf(n.ext, sizeof n.ext, "%s", dot && (!strcmp(dot, ".c") || !strcmp(dot, ".cu")) ? dot + 1 : task_ext(r.t));
    n.parent = parent;
    snprintf(n.proposer, sizeof n.proposer, "tool");
    snprintf(n.category, sizeof n.category, "%s", want >= 0 ? kf_search_category_name(want) : "other");
    n.created = now_s();
    if ((st = kf_store_put_source(r.st, text, len, n.ext, n.src_hash))) goto out;
    if ((st = kf_store_add_node(r.st, &n))) goto out;
    json_t *ev = json_pack("{s:I, s:s}", "parent", (json_int_t)parent, "category", n.category);
    json_object_set_new(ev, "pending", pid ? json_integer(pid) : json_null());
    char *evs = json_dumps(ev, JSON_COMPACT);
    json_decref(ev);
    st = kf_store_event(r.st, n.id, "submit", evs);
    free(evs);
    r.display = path; /* the node's copy carries the submitted file's name */
    if (st) goto out;
    /* a text the run has already evaluated is not evaluated again: submitting it until a
     * lucky timing or a lucky draw of hidden shapes passes proves nothing new */
    char *dup = kf_diag_prune_note(r.st, &n, 1);
    if (dup) {
        n.state = KF_NODE_PRUNED;
        n.note = dup;
        n.finished = now_s();
        st = kf_store_finish_node(r.st, &n);
    } else {
        st = evaluate(&r, &n, hasp ? &pn : NULL);
    }
    if (st) goto out;
    kf_diag_record(r.st, &n);
    if (n.state == KF_NODE_KEPT) kf_store_savepoint(r.st, n.id, "kept");
    int passed = n.state == KF_NODE_MEASURED || n.state == KF_NODE_KEPT || n.state == KF_NODE_REVERTED;
    *outcome = passed ? 0 : n.state == KF_NODE_CRASHED ? 2 : 1;
    char *msg = passed ? NULL : first_message(&n);
    json_t *critics = json_object();
    kf_store_each_event(r.st, "critic", critic_event, critics);
    if (json) {
        json_t *j = node_json(&n, NULL, critics);
        json_object_set_new(j, "run", json_string(r.run_dir));
        json_object_set_new(j, "pending", pid ? json_integer(pid) : json_null());
        json_object_set_new(j, "message", msg ? json_string(msg) : json_null());
        *out = json_dumps(j, JSON_INDENT(1));
        json_decref(j);
    } else {
        kf_buf b;
        kf_buf_init(&b, 1u << 20);
        kf_node_vec one = {&n, 1, 1};
        kf_buf_printf(&b, "kforge submit: ");
        tree_text(&b, &one, NULL, parent, 0, critics, NULL);
        if (msg && !(b.p && strstr(b.p, msg))) kf_buf_printf(&b, "  %s\n", msg); /* the tree line may hold it */
        *out = b.p;
    }
    json_decref(critics);
    free(msg);
    if (!*out) st = kf__err(ctx, KF_ENOMEM, "out of memory");
out:
    free(text);
    kf_node_free(&n);
    if (hasp) kf_node_free(&pn);
    close_run(&r);
    return st;
}

/* ---- tree and best, public ------------------------------------------------------------- */

static kf_status load_nodes(kf_ctx *ctx, const char *dir, kf_node_vec *a, kf_store **stp) {
    kf_store *st = NULL;
    kf_status s = kf_store_open(ctx, dir, NULL, &st);
    if (s) return s;
    if ((s = kf_store_each_node(st, kf_loop_collect, a))) {
        kf_store_close(st);
        return s;
    }
    *stp = st;
    return KF_OK;
}

/* The lessons the builtin started from (the run's `lessons` event), one line. */
static void lessons_text(kf_buf *b, kf_store *st) {
    char *ev = NULL;
    kf_store_each_event(st, "lessons", first_event, &ev);
    json_t *j = ev ? json_loads(ev, 0, NULL) : NULL;
    free(ev);
    if (!j) return;
    json_t *ap = json_object_get(j, "applied");
    kf_buf_printf(b, "lessons from %s: %zu applied of %lld retrieved", json_string_value(json_object_get(j, "db")),
                  json_array_size(ap), (long long)json_integer_value(json_object_get(j, "retrieved")));
    size_t i;
    json_t *a;
    json_array_foreach(ap, i, a)
        kf_buf_printf(b, "%s%s %s %+.2f", i ? ", " : ": ", json_string_value(json_object_get(a, "id")),
                      json_string_value(json_object_get(a, "setting")), json_number_value(json_object_get(a, "weight")));
    const char *k;
    json_t *v;
    int first = 1;
    json_object_foreach(json_object_get(j, "start"), k, v) {
        kf_buf_printf(b, "%s%s=", first ? "; the walk started at " : ", ", k);
        if (json_is_string(v)) kf_buf_printf(b, "%s", json_string_value(v));
        else kf_buf_printf(b, "%lld", (long long)json_integer_value(v));
        first = 0;
    }
    kf_buf_printf(b, "\n");
    json_decref(j);
}

kf_status kf_run_tree(kf_ctx *ctx, const char *dir, int json, char **out) {
    kf_node_vec a = {0};
    kf_store *st = NULL;
    kf_status s = load_nodes(ctx, dir, &a, &st);
    if (s) return s;
    kf_diag_map *dm = NULL;
    kf_diag_load(st, &dm); /* diagnoses and breaker events; none when it fails */
    json_t *critics = json_object();
    kf_store_each_event(st, "critic", critic_event, critics);
    /* the domains of the nodes that passed the check (any kforge:when narrows what a
     * node is safe for: its source is read) */
    char **whens = a.n ? calloc(a.n, sizeof *whens) : NULL;
    for (size_t i = 0; whens && i < a.n; i++) {
        char *txt = NULL;
        kf_node_state ns = a.v[i].state;
        int passed = ns == KF_NODE_MEASURED || ns == KF_NODE_KEPT || ns == KF_NODE_REVERTED;
        if (!passed || kf_store_read_source(st, a.v[i].src_hash, a.v[i].ext, &txt, NULL)) continue;
        whens[i] = kf_loop_when_of(txt);
        free(txt);
    }
    if (json) {
        json_t *arr = json_array();
        for (size_t i = 0; i < a.n; i++) {
            json_t *nj = node_json(&a.v[i], whens ? whens[i] : NULL, critics), *dj = kf_diag_json(dm, a.v[i].id);
            if (dj) json_object_set_new(nj, "diagnosis", dj);
            json_array_append_new(arr, nj);
        }
        json_t *cs = json_array();
        kf_store_each_constraint(st, constraint_json, cs);
        json_t *o = json_pack("{s:s, s:s, s:o, s:o, s:o}", "run", dir, "task", kf_store_task_dir(st), "nodes", arr,
                              "constraints", cs, "integrity", kf_loop_integrity(st, a.v, a.n, NULL));
        json_object_set_new(o, "breakers", dm ? json_deep_copy(kf_diag_breakers(dm)) : json_array());
        char *lev = NULL;
        kf_store_each_event(st, "lessons", first_event, &lev);
        json_t *lj = lev ? json_loads(lev, 0, NULL) : NULL;
        if (lj) json_object_set_new(o, "lessons", lj);
        free(lev);
        *out = json_dumps(o, JSON_INDENT(1));
        json_decref(o);
    } else {
        kf_buf b;
        kf_buf_init(&b, 256u << 20);
        json_decref(kf_loop_integrity(st, a.v, a.n, &b));
        kf_buf_printf(&b, "run %s (task %s): %zu nodes; speedups against the reference, * = a win\n", dir,
                      kf_store_task_dir(st), a.n);
        kf_buf_printf(&b, "#0 root: the reference\n");
        tree_text(&b, &a, whens, 0, 1, critics, dm);
        ctext ct = {&b, 0};
        kf_store_each_constraint(st, constraint_text, &ct);
        kf_diag_breakers_text(dm, &b);
        lessons_text(&b, st);
        *out = b.p;
    }
    kf_diag_map_free(dm);
    json_decref(critics);
    for (size_t i = 0; whens && i < a.n; i++) free(whens[i]);
    free(whens);
    kf_loop_vec_free(&a);
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
    json_t *best = kf_loop_best_shapes(a.v, a.n);
    size_t bi;
    json_t *be;
    json_array_foreach(best, bi, be) {
        int64_t id = json_integer_value(json_object_get(be, "node"));
        for (size_t k = 0; k < a.n; k++)
            if (a.v[k].id == id) {
                char *txt = NULL;
                if (kf_store_read_source(st, a.v[k].src_hash, a.v[k].ext, &txt, NULL)) {
                    kf_loop_vec_free(&a);
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
                              kf_loop_integrity(st, a.v, a.n, NULL));
        *out = json_dumps(o, JSON_INDENT(1));
        json_decref(o);
    } else {
        kf_buf b;
        kf_buf_init(&b, 1u << 20);
        size_t j;
        json_t *e;
        json_decref(kf_loop_integrity(st, a.v, a.n, &b));
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
    kf_loop_vec_free(&a);
    kf_store_close(st);
    return *out ? KF_OK : kf__err(ctx, KF_ENOMEM, "out of memory");
}
