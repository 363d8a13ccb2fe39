/*
 * evaluate.c - one evaluation of a node of a run (docs/run.md): its source, verified
 * against its SHA-256, is copied to a private file; kf_bench checks and times it against
 * the reference (a rejection for timing_mismatch alone is timed once more in fresh
 * workers); a measured node that beats its parent somewhere goes to the Critic, which
 * alone may let it become `kept` (and the advisory reviewer, when there is one, gives a
 * second opinion); a kept node's figures become the conservative ones of its timings;
 * the outcome is recorded in one transaction. It never picks or proposes anything, and
 * touches only the store of its kf_eval, so --jobs evaluators run it side by side.
 */
#include "eval.h"

#include "loop.h"
#include "../bench/bench.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

double kf_eval_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void bench_opts(const kf_eval *r, kf_opts *o, const char *vs) {
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
static json_t *bench_json_ex(kf_eval *r, const char *path, const char *vs, int stricter, char *err, size_t n) {
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

static json_t *bench_json(kf_eval *r, const char *path, const char *vs, char *err, size_t n) {
    return bench_json_ex(r, path, vs, 0, err, n);
}

static void sweep_runs(void) { kf__sweep_dead_dirs("kforge-run-"); }

/* The node's text, verified against its SHA-256 (kf_store_read_source), copied to a
 * private file that only this evaluation uses: what is checked and timed is exactly the
 * text the node names, whatever is done to RUN/src meanwhile. 0, or -1 with err set. */

static int private_copy(kf_eval *r, const kf_node *n, char *out, size_t len, char *err, size_t en) {
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
    kf_eval *r = arg;
    return kf_store_fingerprint(r->ctx, r->t, hex) ? -1 : 0;
}

static json_t *critic_bench(void *arg, const char *path, const char *vs, int stricter, char *err, size_t n) {
    kf_eval *r = arg;
    return bench_json_ex(r, path, vs, stricter, err, n);
}

/* Check and time n's private copy (into path) against the reference, and what the
 * verdict makes of n: measured (*shapes: its per-shape figures), rejected or
 * compile_failed (its reasons), crashed when no verdict was reached (err: why). The
 * verdict JSON, or NULL. */
static json_t *measure(kf_eval *r, kf_node *n, char *path, size_t plen, json_t **shapes, char *err,
                       size_t en) {
    json_t *res = private_copy(r, n, path, plen, err, en) ? NULL : bench_json(r, path, NULL, err, en);
    /* a rejection for timing_mismatch alone (the two clocks disagreed: a loaded machine
     * or a forged stamp) is timed once more in fresh workers; the second verdict counts,
     * so a forger is rejected again */
    if (res && kf_critic_timing_only(res)) {
        json_t *again = bench_json(r, path, NULL, err, en);
        if (again) {
            json_decref(res);
            res = again;
        }
    }
    if (!res) {
        n->state = KF_NODE_CRASHED;
        n->note = strdup(err);
        return NULL;
    }
    const char *v = json_string_value(json_object_get(res, "verdict"));
    n->verdict_json = json_dumps(res, JSON_COMPACT);
    if (v && !strcmp(v, "accepted")) {
        *shapes = shapes_of(res);
        n->shapes_json = json_dumps(*shapes, JSON_COMPACT);
        n->speedup = json_number_value(json_object_get(res, "speedup"));
        n->state = KF_NODE_MEASURED;
        return res;
    }
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
    return res;
}

/* 1 when some shape of a measured node wins and beats its parent there (against the
 * reference: its own win; against a node: a higher speedup there, by keep_margin). */
static int beats_parent(const kf_eval *r, json_t *shapes, const kf_node *parent) {
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
    return better;
}

/* The texts the suspicious-gain check compares: the node's (its private copy at path)
 * and its parent's (at ppath, or for a child of the root the reference's). Caller frees
 * both; NULL when unknown. */
static void sources(const kf_eval *r, const char *path, const kf_node *parent, int pfail, const char *ppath,
                    char **src, char **psrc) {
    size_t sl = 0;
    if (kf__read_file(path, 16u << 20, src, &sl)) *src = NULL;
    if (!pfail && parent && kf__read_file(ppath, 16u << 20, psrc, &sl)) *psrc = NULL;
    /* a child of the root changes the reference: the suspicious-gain check
     * compares it with the reference's text */
    if (!parent) {
        char rp[4200];
        snprintf(rp, sizeof rp, "%s", r->t->ref_path);
        if (kf__read_file(rp, 16u << 20, psrc, &sl)) *psrc = NULL;
    }
}

/* The advisory reviewer's opinion of an approved node, into the Critic's report; the
 * run's token budget counts the review. */
static void advise(kf_eval *r, kf_node *n, const kf_node *parent, const char *src, const char *psrc,
                   json_t *shapes, json_t *rep) {
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

/* The Critic (critic.c): a measured node is kept only when it beats its parent on
 * some shape (against the reference: its own win; against a node: a higher speedup
 * there) and the Critic approves: task integrity, plausibility, re-timings against
 * the parent in fresh workers, a second look at a large gain from a tiny change. Its
 * decision becomes n's state and a `critic` event (no recorded approval, no keep); the
 * parent's private copy goes to ppath. */
static void judge(kf_eval *r, kf_node *n, const kf_node *parent, const char *path, json_t *res,
                  json_t *shapes, char *ppath, size_t pplen, char *err, size_t en) {
    int better = beats_parent(r, shapes, parent);
    const char *disp = r->display;
    r->display = NULL; /* the parent's copy keeps its node name */
    int pfail = better && parent && private_copy(r, parent, ppath, pplen, err, en);
    r->display = disp;
    char *src = NULL, *psrc = NULL;
    if (better) sources(r, path, parent, pfail, ppath, &src, &psrc);
    json_t *pres = parent && parent->verdict_json ? json_loads(parent->verdict_json, 0, NULL) : NULL;
    kf_critic_env env = {&r->critic, r->noise_floor, kf_store_task_fingerprint(r->st), critic_fingerprint,
                         critic_bench, r};
    kf_critic_case cc = {n->category, res, pres, better, parent ? parent->id : 0, path,
                         parent && !pfail ? ppath : NULL, src, psrc};
    json_t *rep = NULL;
    kf_critic_decision d = kf_critic_judge(&env, &cc, &rep);
    if (d == KF_CRITIC_APPROVE && r->advisor) advise(r, n, parent, src, psrc, shapes, rep);
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

kf_status kf_eval_evaluate(kf_eval *r, kf_node *n, const kf_node *parent) {
    char path[4400] = "", ppath[4400] = "", err[1200] = "";
    double t0 = kf_eval_now();
    json_t *shapes = NULL;
    json_t *res = measure(r, n, path, sizeof path, &shapes, err, sizeof err);
    if (n->state == KF_NODE_MEASURED)
        judge(r, n, parent, path, res, shapes, ppath, sizeof ppath, err, sizeof err);
    json_decref(shapes);
    json_decref(res);
    if (path[0]) private_drop(path);
    if (ppath[0]) private_drop(ppath);
    n->cost_s += kf_eval_now() - t0;
    n->finished = kf_eval_now();
    return kf_store_finish_node(r->st, n);
}

kf_status kf_eval_setup(kf_eval *r) {
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

kf_status kf_eval_node(kf_eval *r, int64_t id, kf_node *n) {
    kf_node parent;
    memset(&parent, 0, sizeof parent);
    memset(n, 0, sizeof *n);
    kf_status st = kf_store_get_node(r->st, id, n);
    if (st) return st;
    if (n->tampered) /* changed by hand while it waited: not evaluated, its outcome not sealed */
        return kf__err(r->ctx, KF_EUSAGE, "%s", n->note ? n->note : "a node does not match its seal");
    int hasp = n->parent > 0 && kf_store_get_node(r->st, n->parent, &parent) == KF_OK;
    st = kf_eval_evaluate(r, n, hasp ? &parent : NULL);
    if (hasp) kf_node_free(&parent);
    return st;
}
