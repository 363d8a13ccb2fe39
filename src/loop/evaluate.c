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
#include "../check/result.h"

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

static void bench_opts(const kf_eval *r, kf_opts *o, const char *vs, int screen) {
    kf_opts_init(o);
    o->vs_path = vs;
    if (r->o->min_runs > 0) o->bench_min_runs = r->o->min_runs;
    if (r->o->max_runs > 0) o->bench_max_runs = r->o->max_runs;
    if (r->o->min_time_s > 0) o->bench_min_time_s = r->o->min_time_s;
    o->bench_precision = r->o->precision >= 0 ? r->o->precision : KF_LOOP_PRECISION;
    if (r->o->hidden >= 0) o->hidden_count = r->o->hidden;
    if (r->timing_lock[0]) o->timing_lock = r->timing_lock;
    if (screen) { /* the same check; one short timing: a few rounds, no minimum time */
        o->bench_min_runs = o->bench_max_runs = KF_SCREEN_RUNS;
        o->bench_min_time_s = 0;
    }
    /* --seed makes the search's walk reproducible; checks keep their secret inputs (a
     * seed derived from it would let a proposer predict hidden shapes and inputs) */
}

/* The speedup the shapes of v give for the shape with these sizes, or 0. */
static double speedup_at(const struct kf_verdict *v, const kf_verdict_sizes *sizes) {
    const kf_verdict_shape *s = kf_verdict_find(v, sizes);
    return s ? s->speedup : 0;
}

/* A parent's shapes column into *ps: 1, or 0 when it has none (no parent, the root).
 * *ps is the caller's either way (kf_verdict_free). */
static int parent_shapes(const kf_node *parent, struct kf_verdict *ps) {
    kf_verdict_init(ps);
    return parent && parent->shapes_json && !kf_verdict_from_text(parent->shapes_json, ps);
}

/* 1 when the node's and its parent's figures came from devices of different models
 * (their verdict documents' "device"): their speedups over the reference are then not
 * compared with one another (docs/scale.md "Fair timing across devices"). */
static int other_device(const char *mine, const kf_node *parent) {
    if (!mine || !parent || !parent->verdict_json) return 0;
    json_t *a = json_loads(mine, 0, NULL), *b = json_loads(parent->verdict_json, 0, NULL);
    const char *ma = json_string_value(json_object_get(json_object_get(a, "device"), "model"));
    const char *mb = json_string_value(json_object_get(json_object_get(b, "device"), "model"));
    int other = ma && mb && strcmp(ma, mb);
    json_decref(a);
    json_decref(b);
    return other;
}

/* The evaluation failed for the environment: the first cause is kept. */
static void env_fail(kf_eval *r, const char *what) {
    if (r->env_failed++) return;
    snprintf(r->env_err, sizeof r->env_err, "%s", what);
}

/* The text of a private copy (a pool's, held in memory, or a file), into *text (caller
 * frees): 0, or -1 when there is none. */
static int copy_read(const kf_eval *r, const char *path, char **text, size_t *len) {
    for (int i = 0; i < 2; i++)
        if (r->copies[i].text && !strcmp(r->copies[i].path, path)) {
            if (!(*text = malloc(r->copies[i].len + 1))) return -1;
            memcpy(*text, r->copies[i].text, r->copies[i].len);
            (*text)[r->copies[i].len] = 0;
            *len = r->copies[i].len;
            return 0;
        }
    return kf__read_file(path, 16u << 20, text, len) ? -1 : 0;
}

/* bench_ex on one of the pool's workers (docs/scale.md): the candidate's and the
 * baseline's texts go together, so both are timed on one device in one worker; the
 * verdict document comes back with that device in it. A request lost twice (its workers
 * died) is the candidate's crash; no worker at all is the machine's failure. */
static int remote_bench(kf_eval *r, const char *path, const kf_opts *o, struct kf_verdict *v, char **stored,
                        char *err, size_t n) {
    char *text = NULL, *vs = NULL;
    size_t tl = 0, vl = 0;
    if (copy_read(r, path, &text, &tl) || (o->vs_path && copy_read(r, o->vs_path, &vs, &vl))) {
        snprintf(err, n, "the private copy %s: unreadable", o->vs_path && text ? o->vs_path : path);
        env_fail(r, err);
        free(text);
        return -1;
    }
    json_t *oj = json_pack("{s:i, s:i, s:i, s:f}", "hidden", o->hidden_count, "min_runs", o->bench_min_runs,
                           "max_runs", o->bench_max_runs, "min_time_s", o->bench_min_time_s);
    char id[64];
    snprintf(id, sizeof id, "%lld.%d", (long long)r->node, ++r->nbench);
    const char *vsn = o->vs_path ? strrchr(o->vs_path, '/') : NULL;
    const char *nm = strrchr(path, '/');
    kf_pool_req rq = {r->t->dir,
                      kf_store_task_fingerprint(r->st),
                      nm ? nm + 1 : path,
                      text,
                      tl,
                      vsn ? vsn + 1 : o->vs_path,
                      vs,
                      vl,
                      oj,
                      id};
    json_t *doc = NULL;
    kf_status bst = KF_OK;
    uint64_t b0 = kf__now_ns();
    int rc = kf_pool_bench_doc(r->pool, &rq, &doc, &bst, err, n);
    r->bench_ns += kf__now_ns() - b0;
    json_decref(oj);
    free(text);
    free(vs);
    if (rc == -2 ||
        (rc == 1 && (bst == KF_EIO || bst == KF_ENOMEM || bst == KF_EBACKEND || bst == KF_EINTERNAL)))
        env_fail(r, err);
    if (rc) {
        json_decref(doc);
        return -1;
    }
    if (kf_verdict_from_json(doc, v)) {
        snprintf(err, n, "a worker's verdict document does not parse");
        json_decref(doc);
        return -1;
    }
    /* the document as stored: the Critic's re-timings need only the typed verdict */
    if (stored && !(*stored = kf__json_dumps(doc, JSON_COMPACT))) {
        snprintf(err, n, "out of memory");
        json_decref(doc);
        return -1;
    }
    json_decref(doc);
    return 0;
}

/* kf_bench of the node's source against vs (NULL: the reference), with a screening's
 * short timing when screen is 1: 0 with the verdict in *v (its reals as its document
 * gives them) and, when stored is not NULL, the document as the store keeps it in *stored
 * (caller frees); -1 with err set when no verdict was reached (the evaluation itself
 * failed). *v is the caller's either way. */
static int bench_ex(kf_eval *r, const char *path, const char *vs, int stricter, int screen,
                    struct kf_verdict *v, char **stored, char *err, size_t n) {
    kf_verdict_init(v);
    kf_opts o;
    bench_opts(r, &o, vs, screen);
    if (stricter) {
        o.hidden_count = (o.hidden_count >= 0 ? o.hidden_count : r->t->hidden_count) * 2 + 4;
        o.bench_min_runs *= 2;
        if (o.bench_max_runs < o.bench_min_runs) o.bench_max_runs = o.bench_min_runs;
    }
    if (r->pool) return remote_bench(r, path, &o, v, stored, err, n);
    kf_result *res = NULL;
    uint64_t b0 = kf__now_ns();
    kf_status s = kf_bench(r->ctx, r->t, path, &o, &res);
    r->bench_ns += kf__now_ns() - b0;
    if (s) {
        snprintf(err, n, "%s: %s", kf_strstatus(s), kf_errmsg(r->ctx));
        /* no verdict for the machine's reasons (kf_bench's failures: fault tests pin
         * them to these): nothing to hold against the candidate */
        if (s == KF_EIO || s == KF_ENOMEM || s == KF_EBACKEND || s == KF_EINTERNAL) env_fail(r, err);
        return -1;
    }
    int rc = kf_result_verdict_typed(res, v);
    if (!rc && stored && !(*stored = kf_result_json_stored(res))) rc = -1;
    kf_result_free(res);
    if (rc) snprintf(err, n, "out of memory");
    return rc;
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
    /* compiler messages name this file: a submitted file keeps its own name */
    const char *base = r->display ? strrchr(r->display, '/') : NULL;
    base = base ? base + 1 : r->display;
    char name[4200];
    if (base && *base && !strchr(base, '/')) snprintf(name, sizeof name, "%s", base);
    else snprintf(name, sizeof name, "n%lld.%s", (long long)n->id, n->ext);
    /* with a pool the text goes to a worker, which writes its own copy: none here (a
     * directory made and removed per evaluation cost more than the rest of its
     * bookkeeping with many workers) */
    for (int i = 0; r->pool && i < 2; i++)
        if (!r->copies[i].text) {
            snprintf(r->copies[i].path, sizeof r->copies[i].path, "copy%d/%s", i, name);
            snprintf(out, len, "%s", r->copies[i].path);
            r->copies[i].text = text;
            r->copies[i].len = tl;
            return 0;
        }
    const char *tmp = getenv("TMPDIR");
    char dir[4096];
    static pthread_once_t swept = PTHREAD_ONCE_INIT;
    pthread_once(&swept, sweep_runs);
    snprintf(dir, sizeof dir, "%s/kforge-run-%d-XXXXXX", tmp && *tmp ? tmp : "/tmp", (int)getpid());
    int rc = -1;
    if (mkdtemp(dir)) {
        snprintf(out, len, "%s/%s", dir, name);
        FILE *f = fopen(out, "wb");
        if (f && fwrite(text, 1, tl, f) == tl && !fclose(f)) rc = 0;
        else if (f) fclose(f);
    }
    if (rc) {
        snprintf(err, en, "a private copy of node %lld's source in %s: %s", (long long)n->id, dir,
                 strerror(errno));
        env_fail(r, err);
    }
    free(text);
    return rc;
}

static void private_drop(kf_eval *r, const char *path) {
    for (int i = 0; i < 2; i++)
        if (r->copies[i].text && !strcmp(r->copies[i].path, path)) {
            free(r->copies[i].text);
            r->copies[i].text = NULL;
            r->copies[i].path[0] = 0;
            return;
        }
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
void kf_loop__conservative(kf_node *n, struct kf_verdict *v, const kf_node *parent, json_t *retimed) {
    struct kf_verdict ps;
    int hasp = parent_shapes(parent, &ps);
    if (other_device(n->verdict_json, parent)) retimed = NULL; /* the parent's figures are another device's */
    /* each re-timing's speedups over the parent (the Critic's report: shape records) */
    size_t nrt = json_array_size(retimed);
    struct kf_verdict *rt = calloc(nrt ? nrt : 1, sizeof *rt);
    for (size_t k = 0; rt && k < nrt; k++) kf_verdict_from_json(json_array_get(retimed, k), &rt[k]);
    double lg = 0;
    int cnt = 0;
    for (int i = 0; i < v->nshapes; i++) {
        kf_verdict_shape *s = &v->shapes[i];
        if (!(s->has & KF_VS_SPEEDUP)) continue;
        double first = s->speedup, low = first;
        double base = hasp ? speedup_at(&ps, &s->sizes) : 1.0;
        int have_ci = 0; /* the interval that goes with low: the re-timing's, scaled */
        double low_ci[2] = {0, 0};
        for (size_t k = 0; rt && k < nrt; k++)
            for (int j = 0; j < rt[k].nshapes; j++) {
                const kf_verdict_shape *x = &rt[k].shapes[j];
                if (!kf_verdict_sizes_equal(&x->sizes, &s->sizes)) continue;
                double implied = base * x->speedup;
                if (base > 0 && implied > 0 && implied < low) {
                    low = implied;
                    have_ci = (x->has & KF_VS_CI95) != 0;
                    low_ci[0] = base * x->ci95[0], low_ci[1] = base * x->ci95[1];
                }
            }
        if (low < first) {
            s->has |= KF_VS_SPEEDUP_FIRST;
            s->speedup_first = first;
            s->speedup = low;
            /* its interval with it: a record whose speedup lay outside its own 95%
             * interval (the first timing's) misled a docs-only user */
            if (s->has & KF_VS_CI95) {
                s->has |= KF_VS_CI95_FIRST;
                memcpy(s->ci95_first, s->ci95, sizeof s->ci95);
            }
            if (have_ci) s->has |= KF_VS_CI95, memcpy(s->ci95, low_ci, sizeof low_ci);
            else s->has &= ~(unsigned)KF_VS_CI95;
        }
        if (s->speedup > 0) lg += log(s->speedup), cnt++;
    }
    for (size_t k = 0; rt && k < nrt; k++) kf_verdict_free(&rt[k]);
    free(rt);
    kf_verdict_free(&ps);
    if (cnt) n->speedup = exp(lg / cnt);
    free(n->shapes_json);
    n->shapes_json = kf_verdict_shapes_text(v);
}

/* The Critic's callbacks: the task's fingerprint as on disk now, and one more timing
 * (stricter: twice the hidden shapes plus four, twice the rounds, fresh inputs). */
static int critic_fingerprint(void *arg, char hex[65]) {
    kf_eval *r = arg;
    return kf_store_fingerprint(r->ctx, r->t, hex) ? -1 : 0;
}

static int critic_bench(void *arg, const char *path, const char *vs, int stricter, struct kf_verdict *out,
                        char *err, size_t n) {
    return bench_ex(arg, path, vs, stricter, 0, out, NULL, err, n);
}

/* Check and time n's private copy (made into path when path is empty) against the
 * reference, with a screening's short timing when screen is 1, and what the verdict
 * (into *res, the caller's either way) makes of n: measured (its per-shape figures),
 * rejected or compile_failed (its reasons), crashed when no verdict was reached (err:
 * why). */
static void measure(kf_eval *r, kf_node *n, char *path, size_t plen, int screen, struct kf_verdict *res,
                    char *err, size_t en) {
    char *stored = NULL;
    kf_verdict_init(res);
    int failed = (!path[0] && private_copy(r, n, path, plen, err, en)) ||
                 bench_ex(r, path, NULL, 0, screen, res, &stored, err, en);
    /* a rejection for timing_mismatch alone (the two clocks disagreed: a loaded machine
     * or a forged stamp) is timed once more in fresh workers; the second verdict counts,
     * so a forger is rejected again */
    if (!failed && kf_critic_timing_only(res)) {
        struct kf_verdict again;
        char *astored = NULL;
        if (!bench_ex(r, path, NULL, 0, screen, &again, &astored, err, en)) {
            kf_verdict_free(res);
            free(stored);
            *res = again;
            stored = astored;
        } else {
            kf_verdict_free(&again);
        }
    }
    if (failed) {
        n->state = KF_NODE_CRASHED;
        n->note = strdup(err);
        return;
    }
    n->verdict_json = stored;
    if (res->verdict == KF_VERDICT_ACCEPTED) {
        n->shapes_json = kf_verdict_shapes_text(res);
        n->speedup = res->has_speedup ? res->speedup : 0;
        n->state = KF_NODE_MEASURED;
        return;
    }
    kf_buf rb;
    kf_buf_init(&rb, 4096);
    int compile = 0;
    for (int i = 0; i < res->nreasons; i++) {
        const char *c = kf_reason_name(res->reasons[i].code);
        if (!strstr(rb.p ? rb.p : "", c)) kf_buf_printf(&rb, "%s%s", rb.len ? "," : "", c);
        compile |= res->reasons[i].code == KF_REASON_COMPILE_ERROR;
    }
    n->reasons = rb.p;
    n->state = compile ? KF_NODE_COMPILE_FAILED : KF_NODE_REJECTED;
}

/* 1 when some shape of a measured node wins and beats its parent there (against the
 * reference: its own win; against a node: a higher speedup there, by keep_margin). */
static int beats_parent(const kf_eval *r, const struct kf_verdict *v, const kf_node *parent,
                        const char *mine) {
    struct kf_verdict ps;
    /* measured on another model of device: its own win over the reference sends it to the
     * Critic, whose re-timings against the parent run on one device */
    int other = other_device(mine, parent);
    int hasp = parent_shapes(parent, &ps) && !other, better = 0;
    for (int i = 0; i < v->nshapes; i++) {
        const kf_verdict_shape *s = &v->shapes[i];
        if (!(s->has & KF_VS_SPEEDUP)) continue;
        double theirs = hasp ? speedup_at(&ps, &s->sizes) : 1.0;
        if ((s->has & KF_VS_WIN) && s->win && s->speedup > theirs * (1 + r->o->keep_margin)) better = 1;
    }
    kf_verdict_free(&ps);
    return better;
}

/* The texts the suspicious-gain check compares: the node's (its private copy at path)
 * and its parent's (at ppath, or for a child of the root the reference's). Caller frees
 * both; NULL when unknown. */
static void sources(const kf_eval *r, const char *path, const kf_node *parent, int pfail, const char *ppath,
                    char **src, char **psrc) {
    size_t sl = 0;
    if (copy_read(r, path, src, &sl)) *src = NULL;
    if (!pfail && parent && copy_read(r, ppath, psrc, &sl)) *psrc = NULL;
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
                   const struct kf_verdict *res, json_t *rep) {
    json_t *shapes = kf_verdict_shapes_json(res);
    kf_advisor_case ac = {n->id, parent ? parent->id : 0, r->t->dir, NULL, src, psrc, shapes, rep};
    char *tj = NULL;
    size_t tl = 0;
    char tp[4200];
    snprintf(tp, sizeof tp, "%s/task.json", r->t->dir);
    if (!kf__read_file(tp, 1u << 20, &tj, &tl)) ac.task_json = tj;
    int64_t used = 0;
    json_object_set_new(rep, "advisory", kf_advisor_review(r->advisor, &ac, &used));
    n->tokens_in = kf__sat_add(n->tokens_in, used); /* the run's token budget counts the reviews */
    n->review_tokens = kf__sat_add(n->review_tokens, used);
    free(tj);
    json_decref(shapes);
}

/* The Critic (critic.c): a measured node is kept only when it beats its parent on
 * some shape (against the reference: its own win; against a node: a higher speedup
 * there) and the Critic approves: task integrity, plausibility, re-timings against
 * the parent in fresh workers, a second look at a large gain from a tiny change. Its
 * decision becomes n's state and a `critic` event (no recorded approval, no keep); the
 * parent's private copy goes to ppath. */
static void judge(kf_eval *r, kf_node *n, const kf_node *parent, const char *path, struct kf_verdict *res,
                  char *ppath, size_t pplen, char *err, size_t en) {
    int better = beats_parent(r, res, parent, n->verdict_json);
    const char *disp = r->display;
    r->display = NULL; /* the parent's copy keeps its node name */
    int pfail = better && parent && private_copy(r, parent, ppath, pplen, err, en);
    r->display = disp;
    char *src = NULL, *psrc = NULL;
    if (better) sources(r, path, parent, pfail, ppath, &src, &psrc);
    struct kf_verdict pres;
    kf_verdict_init(&pres);
    int hasp = parent && parent->verdict_json && !kf_verdict_from_text(parent->verdict_json, &pres);
    kf_critic_env env = {&r->critic,         r->noise_floor, kf_store_task_fingerprint(r->st),
                         critic_fingerprint, critic_bench,   r};
    kf_critic_case cc = {n->category,
                         res,
                         hasp ? &pres : NULL,
                         better,
                         parent ? parent->id : 0,
                         path,
                         parent && !pfail ? ppath : NULL,
                         src,
                         psrc};
    json_t *rep = NULL;
    kf_critic_decision d = kf_critic_judge(&env, &cc, &rep);
    if (r->env_failed) { /* a re-timing failed for the machine: no decision on the candidate */
        free(src);
        free(psrc);
        kf_verdict_free(&pres);
        json_decref(rep);
        return;
    }
    if (d == KF_CRITIC_APPROVE && r->advisor) advise(r, n, parent, src, psrc, res, rep);
    free(src);
    free(psrc);
    kf_verdict_free(&pres);
    n->state = d == KF_CRITIC_APPROVE ? KF_NODE_KEPT : KF_NODE_REVERTED;
    if (d == KF_CRITIC_APPROVE) kf_loop__conservative(n, res, parent, json_object_get(rep, "retimed"));
    char *evs = kf__json_dumps(rep, JSON_COMPACT);
    kf_status est = kf_store_event(r->st, n->id, "critic", evs);
    if (est) n->state = KF_NODE_REVERTED; /* no recorded approval, no keep */
    free(evs);
    json_decref(rep);
}

int kf_eval_promising(const kf_eval *r, const struct kf_verdict *v, const kf_node *parent) {
    struct kf_verdict ps;
    int hasp = parent_shapes(parent, &ps), better = 0;
    for (int i = 0; i < v->nshapes; i++) {
        const kf_verdict_shape *s = &v->shapes[i];
        double theirs = hasp ? speedup_at(&ps, &s->sizes) : 1.0;
        if ((s->has & KF_VS_SPEEDUP) && s->speedup > theirs * (1 + r->o->keep_margin)) better = 1;
    }
    kf_verdict_free(&ps);
    return better;
}

/* A screening that passed, as the `screen` event of a node about to be evaluated in
 * full: its geometric mean and per-shape figures (what the full evaluation's replace). */
static void screen_event(kf_eval *r, kf_node *n) {
    json_t *ev = json_pack("{s:f, s:i}", "speedup", n->speedup, "rounds", KF_SCREEN_RUNS);
    json_t *sh = n->shapes_json ? json_loads(n->shapes_json, 0, NULL) : NULL;
    json_object_set_new(ev, "shapes", sh ? sh : json_null());
    char *evs = ev ? kf__json_dumps(ev, JSON_COMPACT) : NULL;
    json_decref(ev);
    if (evs) kf_store_event(r->st, n->id, "screen", evs); /* a record of the path taken, no outcome */
    free(evs);
    free(n->verdict_json), n->verdict_json = NULL;
    free(n->shapes_json), n->shapes_json = NULL;
    n->speedup = 0;
    n->state = KF_NODE_PROPOSED;
}

kf_status kf_eval_evaluate(kf_eval *r, kf_node *n, const kf_node *parent) {
    char path[4400] = "", ppath[4400] = "", err[1200] = "";
    double t0 = kf_eval_now();
    struct kf_verdict res;
    r->env_failed = 0;
    r->node = n->id;
    r->nbench = 0;
    measure(r, n, path, sizeof path, r->screen != KF_EVAL_FULL, &res, err, sizeof err);
    if (r->screen != KF_EVAL_FULL && n->state == KF_NODE_MEASURED && !r->env_failed) {
        /* screened: never kept, never judged by the Critic; screen-first evaluates a
         * promising one in full */
        n->state = KF_NODE_SCREENED;
        if (r->screen == KF_EVAL_SCREEN_FIRST && kf_eval_promising(r, &res, parent)) {
            screen_event(r, n);
            kf_verdict_free(&res);
            measure(r, n, path, sizeof path, 0, &res, err, sizeof err);
        }
    }
    if (n->state == KF_NODE_MEASURED && !r->env_failed)
        judge(r, n, parent, path, &res, ppath, sizeof ppath, err, sizeof err);
    kf_verdict_free(&res);
    if (path[0]) private_drop(r, path);
    if (ppath[0]) private_drop(r, ppath);
    if (r->env_failed) {
        /* not the candidate's failure: nothing recorded, nothing taught; the node stays
         * unfinished and a resume evaluates it again */
        const char *tmp = getenv("TMPDIR");
        return kf__err(
            r->ctx, KF_EENV,
            "%s: stopped: the environment failed while evaluating node %lld, not the "
            "candidate (nothing was recorded for it): %s [TMPDIR %s]; fix it, then `kforge run --resume "
            "%s` evaluates the node again",
            r->run_dir, (long long)n->id, r->env_err, tmp && *tmp ? tmp : "/tmp", r->run_dir);
    }
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
        if (kf_critic_set(&r->critic, r->o->critic[i], err, sizeof err))
            return kf__err(r->ctx, KF_EUSAGE, "%s", err);
    }
    if (r->o->critic_agent)
        return kf_advisor_new(r->ctx, r->o->critic_agent, r->o->agent_timeout_s, &r->advisor);
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
