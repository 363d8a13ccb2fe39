/*
 * proposers.c - the proposers of kforge run behind kf_proposer_i (proposer.h): the
 * builtin and an agent. Tool mode's is in tool.c.
 *
 * The builtin (0) walks the template's kforge:param space (search/builtin.c): a node's
 * source is the template with each kforge:param list cut to the chosen value
 * (kf_loop_materialize), so it is self-contained and can be re-checked, used as a parent
 * baseline and exported without remembering any --param. It remembers each of its nodes'
 * points (by observing them, replayed ones included), proposes specialisations of its own
 * when its measurements call for them (spec.c), and turns what it learnt from failures
 * into the run's constraints. Lessons can be its prior (prior.c).
 *
 * The agent (1: cmd or openai) is given the context pack of the picked parent and
 * category (memory.c). A proposal that gives no text is still a node (no_candidate), so
 * nothing an agent was asked is lost; AGENT_FAIL_STOP such proposals in a row stop the
 * run.
 */
#include "proposer.h"

#include "diagnose.h"
#include "loop.h"
#include "sched.h"
#include "tally.h"
#include "../backend/registry.h"
#include "../search/builtin.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SPEC_NOISE 0.05   /* a winner beats the compromise by at least this, besides the noise */
#define AGENT_FAIL_STOP 3 /* proposals in a row without a candidate that stop a run */

const char *const kf_proposer_names[KF_PROPOSER_COUNT] = {"builtin", "agent", "tool"};

int kf_proposer_index(const char *name) {
    if (!strcmp(name, "builtin")) return KF_PROPOSER_BUILTIN;
    if (!strcmp(name, "tool")) return KF_PROPOSER_TOOL;
    return KF_PROPOSER_AGENT; /* cmd, openai */
}

kf_status kf_proposer_propose(kf_proposer *p, const kf_action *a, kf_proposed *out) {
    memset(out, 0, sizeof *out);
    return p->iface->propose(p, a, out);
}

kf_status kf_proposer_unprompted(kf_proposer *p, kf_proposed *out) {
    memset(out, 0, sizeof *out);
    return p && p->iface->unprompted ? p->iface->unprompted(p, out) : KF_OK;
}

void kf_proposer_observe(kf_proposer *p, const kf_node *n, int replayed) {
    if (p && p->iface->observe) p->iface->observe(p, n, replayed);
}

void kf_proposer_recorded(kf_proposer *p, const kf_node *n) {
    if (p && p->iface->recorded) p->iface->recorded(p, n);
}

void kf_proposer_free(kf_proposer *p) {
    if (p) p->iface->free(p);
}

kf_status kf_proposer_search(kf_ctx *ctx, const kf_run_opts *o, kf_search **out) {
    kf_search_cfg cfg;
    kf_search_defaults(&cfg);
    /* with no --target the gap never closes: the run goes on to its budget (search's own
     * default target, 2x, would stop it once 2x is reached); --search target=X still sets it */
    cfg.target = 1e6;
    for (int i = 0; i < o->nsearch; i++) {
        char err[256];
        if (kf_search_cfg_set(&cfg, o->search[i], err, sizeof err))
            return kf__err(ctx, KF_EUSAGE, "--search %s: %s", o->search[i], err);
    }
    if (o->target > 0) cfg.target = o->target;
    cfg.nproposers = KF_PROPOSER_COUNT;
    if (!(*out = kf_search_new(&cfg))) return kf__err(ctx, KF_ENOMEM, "out of memory");
    for (int p = 0; p < KF_PROPOSER_COUNT; p++) kf_search_offer(*out, p, 0); /* the caller offers */
    /* nothing to specialise at the root (the reference): kf_tally_specialisable */
    kf_search_exhaust(*out, 0, KF_CAT_SPECIALISATION, KF_PROPOSER_AGENT);
    kf_search_exhaust(*out, 0, KF_CAT_SPECIALISATION, KF_PROPOSER_TOOL);
    return KF_OK;
}

/* Record n (its text, then the node) in the run's store; n->id is set. */
static kf_status add_node(kf_store *st, kf_node *n, const char *text, size_t len) {
    kf_status s = kf_store_put_source(st, text, len, n->ext, n->src_hash);
    return s ? s : kf_store_add_node(st, n);
}

/* ---- the builtin --------------------------------------------------------------------- */

typedef struct {
    kf_point *p; /* the point of node id (builtin nodes), indexed by id */
    char *has;
    size_t cap;
} point_map;

typedef struct {
    char (*h)[65]; /* source hashes of the run's specialisation nodes */
    size_t n, cap;
    int loaded;
} spec_seen;

typedef struct {
    kf_proposer base;
    kf_builtin *bi;
    point_map pm;
    spec_seen seen;
    char *tmpl; /* the template's text */
    size_t tlen;
    const char *ext; /* its extension: what its nodes are */
    int nlearnt;     /* its learnt constraints already in the store */
} builtin_proposer;

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

/* What a finished node at one of the walk's points gave: the builtin observes it. */
static void builtin_observe(kf_proposer *base, const kf_node *n, int replayed) {
    builtin_proposer *b = (builtin_proposer *)base;
    kf_builtin *bi = b->bi;
    kf_point p;
    /* a specialisation is timed on its domain only: not a point of the builtin's walk,
     * and no parent of neighbour moves */
    if (!kf_loop_is_spec(n) && !point_of(bi, n->params_json, &p)) {
        pm_put(&b->pm, n->id, &p);
        kf_builtin_outcome bo = n->state == KF_NODE_COMPILE_FAILED ? KF_BUILTIN_COMPILE_FAILED
                                : n->state == KF_NODE_CRASHED      ? KF_BUILTIN_CRASHED
                                : n->shapes_json                   ? KF_BUILTIN_OK
                                                                   : KF_BUILTIN_REJECTED;
        kf_shape_time times[64];
        int ns = 0;
        struct kf_verdict sh;
        kf_verdict_from_text(n->shapes_json, &sh);
        for (int i = 0; i < sh.nshapes && ns < 64; i++) {
            const kf_verdict_shape *s = &sh.shapes[i];
            double sp = s->speedup;
            double half = (s->has & KF_VS_CI95) && sp > 0 ? (s->ci95[1] - s->ci95[0]) / 2 / sp : 0;
            times[ns].ns = s->candidate_ns;
            times[ns++].rel_noise = half;
        }
        kf_verdict_free(&sh);
        if (bo == KF_BUILTIN_OK && ns == 0) bo = KF_BUILTIN_REJECTED;
        kf_builtin_observe(bi, &p, bo, times, bo == KF_BUILTIN_OK ? ns : 0);
    }
    if (replayed) b->nlearnt = kf_builtin_nlearnt(bi); /* relearnt from the replay: already stored */
}

/* What the builtin learnt from an outcome ("BM != 64": a value that never builds)
 * becomes a constraint of the run, shown by tree. */
static void builtin_recorded(kf_proposer *base, const kf_node *n) {
    builtin_proposer *b = (builtin_proposer *)base;
    int nl = kf_builtin_nlearnt(b->bi);
    for (; b->nlearnt < nl; b->nlearnt++) {
        char txt[256];
        kf_builtin_learnt(b->bi, b->nlearnt, txt, sizeof txt);
        kf_store_add_constraint(base->env->ev->st, n->id, 0, n->category, txt, NULL);
    }
}

/* 1 when a builtin node at point p is in flight (a resumed run's interrupted nodes are
 * evaluated again while the builtin, which has not seen them yet, proposes). */
static int flying(const builtin_proposer *b, const kf_point *p) {
    const kf_sched *s = b->base.env->sched;
    int np = kf_builtin_nparams(b->bi);
    for (int k = 0; s && k < s->n; k++) {
        kf_point q;
        if (!point_of(b->bi, s->fl[k].params_json, &q) && !memcmp(q.v, p->v, (size_t)np * sizeof p->v[0]))
            return 1;
    }
    return 0;
}

/* The next point along action a into *pt (its move's category into *mcat): 0, or 1 when
 * there is none here (search is told: choose again), or -1 when the whole space is
 * spent. */
static int next_point(builtin_proposer *b, const kf_action *a, kf_point *pt, int *mcat) {
    const kf_proposer_env *env = b->base.env;
    kf_builtin *bi = b->bi;
    kf_move mv;
    int got;
    const kf_point *from = pm_get(&b->pm, a->parent);
    /* a child of the root: the defaults first while they were never tried (a resumed run
     * whose nodes so far came from agents or tool mode had them never tried), then
     * restarts */
    if (a->parent == 0)
        got = env->tally->evals + env->sched->n == 0 || kf_builtin_start_untried(bi)
                  ? kf_builtin_next(bi, NULL, -1, pt, &mv, mcat)
                  : kf_builtin_restart(bi, pt);
    else got = from ? kf_builtin_next(bi, from, a->category, pt, &mv, mcat) : -1;
    if (!got) return 0;
    /* nothing left along this action: search stops offering it */
    kf_search_exhaust(env->tally->se, a->parent, a->category, KF_PROPOSER_BUILTIN);
    if (a->parent != 0) return 1; /* choose again */
    return kf_builtin_next(bi, NULL, -1, pt, &mv, mcat) ? -1 : 0;
}

static kf_status builtin_propose(kf_proposer *base, const kf_action *a, kf_proposed *out) {
    builtin_proposer *b = (builtin_proposer *)base;
    kf_eval *ev = base->env->ev;
    kf_builtin *bi = b->bi;
    kf_point pt;
    int mcat = a->category;
    int got = next_point(b, a, &pt, &mcat);
    if (got < 0) {
        out->spent = 1;
        out->stop = "the parameter space is exhausted";
        return KF_OK;
    }
    if (got > 0 || flying(b, &pt)) return KF_OK; /* an interrupted node's point, being evaluated again */
    char pj[1024];
    kf_builtin_json(bi, &pt, pj, sizeof pj);
    json_t *pjson = json_loads(pj, 0, NULL);
    /* the materialiser wants string values */
    json_t *ps = json_object();
    for (int i = 0; i < kf_builtin_nparams(bi); i++)
        json_object_set_new(ps, kf_builtin_param_name(bi, i),
                            json_string(kf_builtin_param_value(bi, i, pt.v[i])));
    size_t slen = 0;
    char *src = kf_loop_materialize(b->tmpl, b->tlen, ps, &slen);
    json_decref(ps);
    kf_node n;
    memset(&n, 0, sizeof n);
    n.parent = a->parent;
    snprintf(n.ext, sizeof n.ext, "%s", b->ext);
    snprintf(n.proposer, sizeof n.proposer, "builtin");
    const char *cat = kf_search_category_name(mcat >= 0 ? mcat : a->category);
    snprintf(n.category, sizeof n.category, "%s", cat ? cat : "other");
    n.params_json = pjson ? kf__json_dumps(pjson, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(pjson);
    n.created = kf_eval_now();
    kf_status st = src ? add_node(ev->st, &n, src, slen) : kf__err(ev->ctx, KF_ENOMEM, "out of memory");
    free(src);
    out->id = st ? 0 : n.id;
    out->evaluate = !st;
    kf_node_free(&n);
    return st;
}

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

/* Specialisation sp as a child of the compromise's node: 0 into *id when the run holds
 * it already (by source hash) or the compromise is no node of the run. */
static kf_status record_spec(builtin_proposer *b, const kf_spec *sp, int64_t *id) {
    kf_eval *r = b->base.env->ev;
    point_map *pm = &b->pm;
    *id = 0;
    char h[65];
    const void *parts[] = {sp->text};
    size_t lens[] = {sp->len};
    if (kf__sha256_hex(parts, lens, 1, h)) return kf__err(r->ctx, KF_EINTERNAL, "sha256 failed");
    if (seen_has(&b->seen, h)) return KF_OK;
    int64_t parent = 0;
    for (size_t k = 1; k < pm->cap && !parent; k++)
        if (pm->has[k] && !memcmp(&pm->p[k], &sp->compromise, sizeof sp->compromise)) parent = (int64_t)k;
    if (!parent) return KF_OK; /* the compromise is not a node of this run (cannot happen) */
    kf_node nd;
    memset(&nd, 0, sizeof nd);
    nd.parent = parent;
    snprintf(nd.ext, sizeof nd.ext, "%s", b->ext);
    snprintf(nd.proposer, sizeof nd.proposer, "builtin");
    snprintf(nd.category, sizeof nd.category, "specialisation");
    nd.params_json = strdup(sp->params_json);
    nd.note =
        kf__asprintf(KF_LOOP_SPEC_NOTE "%lld for %s: kforge:when %s (it beats node %lld there by %.2fx)",
                     (long long)parent, sp->shapes, sp->when, (long long)parent, sp->gain);
    nd.created = kf_eval_now();
    kf_status st = KF_OK;
    if (!nd.params_json || !nd.note) st = kf__err(r->ctx, KF_ENOMEM, "out of memory");
    if (!st) st = add_node(r->st, &nd, sp->text, sp->len);
    if (!st && seen_add(&b->seen, &nd)) st = kf__err(r->ctx, KF_ENOMEM, "out of memory");
    if (!st) *id = nd.id;
    kf_node_free(&nd);
    return st;
}

/* When the builtin's measurements call for a specialisation that the run does not hold
 * yet (by source hash, so a resumed run does not propose it again), record it as a child
 * of the compromise's node, to be evaluated like any node. */
static kf_status builtin_specialise(kf_proposer *base, kf_proposed *out) {
    builtin_proposer *b = (builtin_proposer *)base;
    kf_eval *r = base->env->ev;
    kf_spec *sp = NULL;
    int n = 0;
    kf_status st = kf_loop_specs(r->ctx, r->t, b->bi, b->tmpl, b->tlen, SPEC_NOISE, &sp, &n);
    if (!st && n && !b->seen.loaded) {
        st = kf_store_each_node(r->st, seen_add, &b->seen);
        b->seen.loaded = 1;
    }
    for (int i = 0; i < n && !st && !out->id; i++) st = record_spec(b, &sp[i], &out->id);
    out->evaluate = out->id != 0;
    kf_loop_specs_free(sp, n);
    return st;
}

static void builtin_free(kf_proposer *base) {
    builtin_proposer *b = (builtin_proposer *)base;
    free(b->seen.h);
    free(b->pm.p);
    free(b->pm.has);
    free(b->tmpl);
    kf_builtin_free(b->bi);
    free(b);
}

static const kf_proposer_i builtin_iface = {"builtin",       builtin_propose,  builtin_specialise,
                                            builtin_observe, builtin_recorded, builtin_free};

int kf_proposer_template(const kf_task *t, char *out, size_t n) {
    kf_backend *b;
    for (int i = 0; (b = kf_backend_at(i)); i++) {
        snprintf(out, n, "%s/candidates/param.%s", t->dir, kf_backend_ext(b));
        if (!access(out, R_OK)) return i;
    }
    return -1;
}

kf_status kf_proposer_builtin_new(const kf_proposer_env *env, const char *tpath, int ext, uint64_t seed,
                                  kf_proposer **out) {
    kf_ctx *ctx = env->ev->ctx;
    *out = NULL;
    builtin_proposer *b = calloc(1, sizeof *b);
    if (!b) return kf__err(ctx, KF_ENOMEM, "out of memory");
    b->base = (kf_proposer){&builtin_iface, KF_PROPOSER_BUILTIN, 0, env};
    b->ext = kf_backend_ext(kf_backend_at(ext));
    kf_status st = kf_builtin_new(ctx, env->ev->t, tpath, seed, &b->bi);
    if (!st && kf__read_file(tpath, 4u << 20, &b->tmpl, &b->tlen))
        st = kf__err(ctx, KF_EIO, "%s: %s", tpath, strerror(errno));
    if (st) {
        builtin_free(&b->base);
        return st;
    }
    b->base.categories = kf_builtin_categories(b->bi);
    *out = &b->base;
    return KF_OK;
}

kf_status kf_proposer_builtin_prior(kf_proposer *base, const char *cmd_lessons, int resume,
                                    const char *recorded_lessons) {
    builtin_proposer *b = (builtin_proposer *)base;
    kf_eval *r = base->env->ev;
    kf_ctx *ctx = r->ctx;
    kf_status st = KF_OK;
    char *ev = NULL;
    if (cmd_lessons &&
        strcmp(cmd_lessons, "none")) { /* lessons as the walk's prior, recorded for tree and resume */
        if (!(st = kf_loop_lessons_prior(ctx, r->t, cmd_lessons, b->bi, &ev)))
            st = kf_store_event(r->st, 0, "lessons", ev);
        free(ev);
        if (st) return st;
        kf_buf lb; /* said at the start, as tree says it later */
        kf_buf_init(&lb, 1 << 16);
        kf_loop_lessons_text(&lb, r->st);
        if (lb.p && lb.len) fprintf(stderr, "kforge run: %s", lb.p);
        kf_buf_free(&lb);
    } else if (resume) {
        const char *lpath = recorded_lessons;
        if ((st = kf_loop_lessons_event(r->st, &ev))) return st;
        if (ev) {
            st = kf_loop_lessons_replay(ctx, ev, b->bi);
        } else if (lpath &&
                   strcmp(lpath, "none")) { /* killed between creating the run and recording its lessons:
                                             * nothing was proposed yet, so this is still the start */
            if (!(st = kf_loop_lessons_prior(ctx, r->t, lpath, b->bi, &ev)))
                st = kf_store_event(r->st, 0, "lessons", ev);
        }
        free(ev);
    }
    return st;
}

/* ---- an agent ---------------------------------------------------------------------------- */

typedef struct {
    kf_proposer base;
    kf_agent *ag;
    int fails;     /* proposals in a row that gave no candidate */
    char why[700]; /* the stop reason, when they stop the run */
} agent_proposer;

/* The agent's answer as a node of the run (its text, or an empty source and the agent's
 * error as its note), with its `proposal` event and the pack's token counts. */
static kf_status record_proposal(agent_proposer *g, const kf_action *a, const char *cat, const kf_pack *pk,
                                 const kf_proposal *pr, kf_node *n) {
    kf_eval *r = g->base.env->ev;
    kf_agent *ag = g->ag;
    n->parent = a->parent;
    snprintf(n->ext, sizeof n->ext, "%s", pr->text && pr->ext[0] ? pr->ext : pk->ext);
    snprintf(n->proposer, sizeof n->proposer, "%s", kf_agent_kind(ag));
    snprintf(n->category, sizeof n->category, "%s", cat ? cat : "other");
    n->tokens_in = pr->tokens_in;
    n->tokens_out = pr->tokens_out;
    n->cost_s = pr->elapsed_s;
    n->created = kf_eval_now();
    g->base.env->tally->tokens =
        kf__sat_add(g->base.env->tally->tokens, kf__sat_add(pr->tokens_in, pr->tokens_out));
    kf_status st;
    if (pr->text) {
        st = add_node(r->st, n, pr->text, pr->len);
    } else {
        n->note = strdup(pr->error ? pr->error : "the agent gave no candidate");
        st = add_node(r->st, n, "", 0);
    }
    if (st) return st;
    char desc[KF_LOOP_DESC_MAX + 1];
    if (pr->description && !kf_loop_description(pr->description, desc, sizeof desc) &&
        (st = kf_loop_describe(r->st, n->id, desc)))
        return st;
    json_t *ev = json_pack(
        "{s:s, s:i, s:b, s:f, s:s%, s:s?}", "agent", kf_agent_kind(ag), "attempts", pr->attempts,
        "tokens_estimated", pr->tokens_estimated, "elapsed_s", pr->elapsed_s, "log", pr->log ? pr->log : "",
        pr->log ? strlen(pr->log) < 4096 ? strlen(pr->log) : 4096 : 0, "warning", pr->warning);
    if (pr->warning) fprintf(stderr, "kforge run: WARNING: node %lld: %s\n", (long long)n->id, pr->warning);
    char *evs = ev ? kf__json_dumps(ev, JSON_COMPACT) : NULL;
    kf_store_event(r->st, n->id, "proposal", evs);
    free(evs);
    json_decref(ev);
    kf_loop_pack_record(r->st, n->id, pk, pr->tokens_estimated ? -1 : pr->tokens_in, 0);
    return KF_OK;
}

/* One more proposal without a new candidate: AGENT_FAIL_STOP in a row stop the run. */
static void agent_failed(agent_proposer *g, const char *what, const char *last, kf_proposed *out) {
    if (++g->fails < AGENT_FAIL_STOP) return;
    snprintf(g->why, sizeof g->why, "the agent gave %s %d times in a row (last: %.500s)", what,
             AGENT_FAIL_STOP, last);
    out->stop = g->why;
}

/* A recorded proposal that will not be evaluated: the very text of a node that failed
 * (pruned, dup its note), or no candidate at all. */
static kf_status agent_unevaluated(agent_proposer *g, kf_node *n, char *dup, kf_proposed *out) {
    kf_eval *r = g->base.env->ev;
    kf_tally *tl = g->base.env->tally;
    if (dup) {
        n->state = KF_NODE_PRUNED;
        n->note = dup;
    } else {
        n->state = KF_NODE_NO_CANDIDATE;
        n->reasons = strdup("no_candidate");
    }
    n->finished = kf_eval_now();
    kf_status st = kf_store_finish_node(r->st, n);
    if (st) return st;
    kf_tally_settle(tl, n);
    if (dup) {
        agent_failed(g, "no new candidate", dup, out);
        return KF_OK;
    }
    if (!tl->tty) fprintf(stderr, "kforge run: node %lld: no candidate: %s\n", (long long)n->id, n->note);
    agent_failed(g, "no candidate", n->note, out);
    return KF_OK;
}

/* Ask the agent for a child of a->parent and record it: a candidate is evaluated like a
 * builtin node; no candidate is a node in state no_candidate (an empty source, reason
 * "no_candidate", the agent's error as its note), so a failed proposal is never lost. It
 * is not an evaluation (the budget counts those) but its tokens count. */
static kf_status agent_propose(kf_proposer *base, const kf_action *a, kf_proposed *out) {
    agent_proposer *g = (agent_proposer *)base;
    const kf_proposer_env *env = base->env;
    kf_eval *r = env->ev;
    const char *cat = kf_search_category_name(a->category);
    kf_pack pk;
    memset(&pk, 0, sizeof pk);
    kf_status st = kf_loop_pack_for(r->ctx, r->t, r->st, env->mem, r->o->pack_tokens, a->parent, cat, &pk);
    if (st) return st;
    kf_proposal pr;
    memset(&pr, 0, sizeof pr);
    st = kf_agent_propose(g->ag, &pk, &pr);
    if (st) goto out; /* kforge could not ask (no temp dir, no memory): detail on ctx */
    kf_node n;
    memset(&n, 0, sizeof n);
    st = record_proposal(g, a, cat, &pk, &pr, &n);
    /* a candidate that contradicts the category it was asked for is refused before any
     * evaluation: kept as the node's source, recorded as no candidate */
    char where[64];
    snprintf(where, sizeof where, "node %lld's candidate", (long long)n.id);
    char *conflict = !st && pr.text ? kf_loop_category_conflict(pr.text, pr.len, n.category, where) : NULL;
    if (conflict) {
        free(n.note);
        n.note = conflict;
        /* not asked again for that category of this parent: an agent that cannot give one
         * is not asked until it gives up the run */
        kf_search_exhaust(env->tally->se, a->parent, a->category, KF_PROPOSER_AGENT);
        st = agent_unevaluated(g, &n, NULL, out);
        out->id = n.id;
        kf_node_free(&n);
        goto out;
    }
    char *dup = !st && pr.text ? kf_diag_prune_note(r->st, &n, 0, NULL) : NULL;
    if (!st && pr.text && !dup) {
        g->fails = 0;
        out->id = n.id;
        out->evaluate = 1;
    } else if (!st) {
        st = agent_unevaluated(g, &n, dup, out);
        out->id = n.id;
    }
    kf_node_free(&n);
out:
    kf_proposal_free(&pr);
    kf_pack_free(&pk);
    return st;
}

static void agent_free(kf_proposer *base) {
    agent_proposer *g = (agent_proposer *)base;
    kf_agent_free(g->ag);
    free(g);
}

static const kf_proposer_i agent_iface = {"agent", agent_propose, NULL, NULL, NULL, agent_free};

kf_status kf_proposer_agent_new(const kf_proposer_env *env, kf_agent *ag, kf_proposer **out) {
    *out = NULL;
    agent_proposer *g = calloc(1, sizeof *g);
    if (!g) {
        kf_agent_free(ag);
        return kf__err(env->ev->ctx, KF_ENOMEM, "out of memory");
    }
    g->base = (kf_proposer){&agent_iface, KF_PROPOSER_AGENT, (1u << KF_CAT_COUNT) - 1, env};
    g->ag = ag;
    *out = &g->base;
    return KF_OK;
}
