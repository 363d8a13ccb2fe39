/*
 * tool.c - tool mode (docs/agents.md): the loop driven from outside. `kforge next` replays
 * the run into search, picks the best action for the "tool" proposer, records it as a
 * `pending` event and answers with its context pack and prompt; `kforge submit` checks,
 * times and judges a file as a child of a node, exactly as the loop's own proposals are,
 * and records it. A pending action is not offered again until it is submitted or is
 * PENDING_TTL_S old; when two callers record the same action at once, the earlier record
 * stands and the later is withdrawn.
 *
 * Tool mode judges every node of a run alike: the checks' and the Critic's settings are
 * the run's, recorded when it was created (config.c), never the submitter's. A text the
 * run has already evaluated is not evaluated again, under any category, and records no
 * node; a file that contradicts its category (kf_loop_category_conflict) is refused
 * before anything is compiled or timed, and records nothing.
 *
 * Concurrent commands: each takes the run's writer's lock in turns (kf_store_lock_take
 * with KF_STORE_LOCK_QUEUE); a submit evaluates outside its turn (kf_store_lock_evaluate),
 * so submits to one run evaluate at the same time, their timings under the run's
 * per-CPU timing locks (RUN/timing.lock). A text another live submit is evaluating is
 * pruned, as one already evaluated is.
 */
#include "config.h"
#include "diagnose.h"
#include "eval.h"
#include "loop.h"
#include "memory.h"
#include "proposer.h"
#include "tally.h"
#include "tree.h"
#include "../backend/registry.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PENDING_TTL_S 1800.0 /* a pending action older than this no longer blocks */

/* An existing run opened for tool mode. */
typedef struct {
    kf_eval ev;
    kf_run_opts own; /* the options in effect: the submitter's, with the run's settings */
    json_t *cfg;     /* the run's recorded config (own's strings) */
    kf_tally tally;
    kf_proposer_env env;
    kf_proposer tool;
    kf_loop_memory *mem;
    kf_store_lock *lock; /* the run's writer's lock, for this command's duration */
    kf_pool *pool;       /* submit on a run with workers: its evaluations go to them */
} tool_run;

/* ---- pending actions ------------------------------------------------------------------ */

typedef struct {
    int64_t id, parent;
    int category;
    double created;
    int open;
} pending;

typedef struct {
    pending v[256]; /* the latest pending actions; older ones have expired long ago */
    int n;
} pending_set;

static int collect_pending(void *arg, int64_t id, int64_t node, const char *js, double created) {
    pending_set *p = arg;
    json_t *j = js ? json_loads(js, 0, NULL) : NULL;
    if (j && p->n == 256) memmove(p->v, p->v + 1, sizeof p->v - sizeof *p->v), p->n--;
    if (j)
        p->v[p->n++] = (pending){id, json_integer_value(json_object_get(j, "parent")),
                                 kf_search_category_parse(json_string_value(json_object_get(j, "category"))),
                                 created, 1};
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
static kf_status pendings(kf_store *st, pending_set *p) {
    memset(p, 0, sizeof *p);
    kf_status s = kf_store_each_event(st, "pending", collect_pending, p);
    if (!s) s = kf_store_each_event(st, "submit", close_submitted, p);
    if (!s) s = kf_store_each_event(st, "withdrawn", close_submitted, p);
    double now = kf_eval_now();
    for (int i = 0; i < p->n; i++)
        if (now - p->v[i].created > PENDING_TTL_S || p->v[i].category < 0) p->v[i].open = 0;
    return s;
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

/* ---- the tool proposer ------------------------------------------------------------------- */

/* A proposal in tool mode is deferred: the action is recorded as pending (out->pending),
 * and its node arrives with kforge submit. Another `next` may record the same action
 * between our read and our write: then the earlier record stands and ours is withdrawn
 * (out->pending 0: choose again). */
static kf_status tool_propose(kf_proposer *p, const kf_action *a, kf_proposed *out) {
    kf_store *st = p->env->ev->st;
    pending_set ps;
    const char *cat = kf_search_category_name(a->category);
    mine_ctx m = {"", 0};
    snprintf(m.nonce, sizeof m.nonce, "%016llx", (unsigned long long)kf__secret_u64());
    json_t *ev = json_pack("{s:I, s:s, s:s, s:f, s:s}", "parent", (json_int_t)a->parent, "category", cat,
                           "proposer", "tool", "score", a->h, "nonce", m.nonce);
    char *evs = kf__json_dumps(ev, JSON_COMPACT);
    json_decref(ev);
    kf_status s = kf_store_event(st, 0, "pending", evs);
    free(evs);
    if (!s) s = kf_store_each_event(st, "pending", find_mine, &m);
    if (!s) s = pendings(st, &ps);
    if (s) return s;
    int64_t pid = m.id;
    for (int i = 0; i < ps.n && pid; i++)
        if (ps.v[i].open && ps.v[i].id < m.id && ps.v[i].parent == a->parent &&
            ps.v[i].category == a->category) {
            char w[64];
            snprintf(w, sizeof w, "{\"pending\": %lld}", (long long)m.id);
            if ((s = kf_store_event(st, 0, "withdrawn", w))) return s;
            pid = 0;
        }
    out->pending = pid;
    return KF_OK;
}

static void tool_free(kf_proposer *p) { (void)p; }

static const kf_proposer_i tool_iface = {"tool", tool_propose, NULL, NULL, NULL, tool_free};

/* ---- opening a run ---------------------------------------------------------------------- */

/* Open an existing run for tool mode: the task from the run, its fingerprint checked,
 * its seals usable, the run's settings in force. */
static kf_status open_run(kf_ctx *ctx, const kf_run_opts *o, const char *cmd, tool_run *r) {
    memset(r, 0, sizeof *r);
    r->ev.ctx = ctx;
    r->ev.o = o;
    r->tally.t0 = kf__now_ns();
    if (!o->run_dir) return kf__err(ctx, KF_EUSAGE, "which run?");
    kf_store *peek = NULL;
    kf_status st = kf_store_open(ctx, o->run_dir, NULL, &peek);
    if (st) return st;
    char td[4096];
    snprintf(td, sizeof td, "%s", kf_store_task_dir(peek));
    kf_store_close(peek);
    /* one writer at a time: a run in progress holds it (exit 4 at once), or another
     * tool-mode command (this one waits its turn) */
    if ((st = kf_store_lock_take(ctx, o->run_dir, cmd, KF_STORE_LOCK_QUEUE, &r->lock))) return st;
    if ((st = kf_task_load(ctx, td, &r->ev.t))) {
        kf_store_unlock(r->lock);
        r->lock = NULL;
        return st;
    }
    snprintf(r->ev.run_dir, sizeof r->ev.run_dir, "%s", o->run_dir);
    snprintf(r->ev.timing_lock, sizeof r->ev.timing_lock, "%s/timing.lock", o->run_dir);
    if (!(st = kf_store_open(ctx, r->ev.run_dir, r->ev.t, &r->ev.st)) &&
        !(st = kf_record_seals_usable(ctx, r->ev.run_dir, r->ev.st))) {
        const char *cs = kf_store_config(r->ev.st);
        r->cfg = cs ? json_loads(cs, 0, NULL) : NULL;
        r->own = *o;
        r->ev.o = &r->own;
        st = kf_config_tool(ctx, r->ev.run_dir, r->ev.t->hidden_count, o, r->cfg, &r->own);
        if (o->workers || o->devices) /* the command's workers, not a mix with the run's */
            r->own.workers = o->workers, r->own.devices = o->devices;
    }
    if (st || (st = kf_eval_setup(&r->ev))) {
        kf_store_unlock(r->lock);
        r->lock = NULL;
        kf_store_close(r->ev.st);
        r->ev.st = NULL;
        kf_task_free(r->ev.t);
        r->ev.t = NULL;
        json_decref(r->cfg);
        r->cfg = NULL;
        return st;
    }
    r->tally.st = r->ev.st;
    r->env = (kf_proposer_env){&r->ev, &r->tally, NULL, NULL};
    r->tool = (kf_proposer){&tool_iface, KF_PROPOSER_TOOL, (1u << KF_CAT_COUNT) - 1, &r->env};
    r->tally.p[KF_PROPOSER_TOOL] = &r->tool;
    return KF_OK;
}

/* Scale-out in tool mode (docs/scale.md "Tool mode"): a submission on a run created with
 * --workers or --devices (or a submit that names them) has its checks and timings, the
 * Critic's re-timings among them, done by local workers that this command starts and
 * stops, under the same pool as kforge run's: idempotent evaluation ids, a lost request
 * requeued once, then the node crashed. Concurrent submits each start their own pool and
 * evaluate at the same time; their workers' timings take the run's timing locks
 * (timing_dir), so two never time on one CPU or one GPU at once. */
static kf_status tool_workers(tool_run *r) {
    const kf_run_opts *o = &r->own;
    if (!o->workers && !o->devices) return KF_OK;
    kf_pool_opts po = {.devices = o->devices,
                       .workers = o->workers,
                       .status_dir = r->ev.run_dir,
                       .timing_dir = r->ev.run_dir};
    kf_status st = kf_pool_start(r->ev.ctx, &po, &r->pool);
    if (!st) r->ev.pool = r->pool;
    return st;
}

static void close_run(tool_run *r) {
    kf_pool_stop(r->pool);
    r->pool = NULL;
    r->ev.pool = NULL;
    kf_search_free(r->tally.se);
    kf_loop_memory_close(r->mem);
    kf_advisor_free(r->ev.advisor);
    r->ev.advisor = NULL;
    json_decref(r->cfg);
    r->cfg = NULL;
    kf_store_close(r->ev.st);
    kf_store_unlock(r->lock);
    r->lock = NULL;
    kf_task_free(r->ev.t);
}

/* ---- kforge next ------------------------------------------------------------------------- */

/* The action to offer, recorded as pending (*pid): an action someone is working on is
 * not offered again until it is submitted or expires. KF_EUSAGE when none is left. */
static kf_status next_action(tool_run *r, kf_action *a, int64_t *pid) {
    kf_search *se = r->tally.se;
    kf_status st = KF_OK;
    pending_set ps;
    *pid = 0;
    for (int attempt = 0; !*pid; attempt++) {
        if ((st = pendings(r->ev.st, &ps))) return st;
        for (int i = 0; i < ps.n; i++)
            if (ps.v[i].open) kf_search_exhaust(se, ps.v[i].parent, ps.v[i].category, KF_PROPOSER_TOOL);
        if (attempt == 8 || kf_search_pick(se, a))
            return kf__err(r->ev.ctx, KF_EUSAGE,
                           "%s: no action left to offer (every action scores under the floor or "
                           "is pending)",
                           r->ev.run_dir);
        kf_proposed m;
        if ((st = kf_proposer_propose(&r->tool, a, &m))) return st;
        *pid = m.pending;
    }
    return KF_OK;
}

/* The answer of kforge next: the action, its explanation, the command to submit with,
 * and the pack, as text or one JSON object. */
static char *next_answer(const tool_run *r, const kf_action *a, int64_t pid, const kf_pack *pk, int json) {
    const char *cat = kf_search_category_name(a->category);
    char expl[2048];
    kf_search_explain(a, expl, sizeof expl);
    json_t *ej = json_loads(expl, 0, NULL);
    char submit[4600];
    snprintf(submit, sizeof submit, "kforge submit %s --parent %lld --category %s FILE", r->ev.run_dir,
             (long long)a->parent, cat);
    char *out;
    if (json) {
        json_t *j =
            json_pack("{s:s, s:I, s:I, s:s, s:f, s:o, s:s, s:o, s:s, s:s}", "run", r->ev.run_dir, "pending",
                      (json_int_t)pid, "parent", (json_int_t)a->parent, "category", cat, "score", a->h,
                      "explain", ej ? json_incref(ej) : json_null(), "submit", submit, "pack",
                      json_loads(pk->json, 0, NULL), "system", pk->system, "prompt", pk->prompt);
        out = j ? kf__json_dumps(j, JSON_INDENT(1)) : NULL;
        json_decref(j);
    } else {
        kf_buf b;
        kf_buf_init(&b, 64u << 20);
        kf_buf_printf(
            &b,
            "kforge next: pending action %lld: improve node %lld (%s), category %s, score %.3f\n"
            "write the whole candidate file, then: %s\n\n---- system ----\n%s\n\n---- prompt ----\n%s\n",
            (long long)pid, (long long)a->parent, a->parent ? "a node of the run" : "the reference", cat,
            a->h, submit, pk->system, pk->prompt);
        out = b.p;
    }
    json_decref(ej);
    return out;
}

kf_status kf_run_next(kf_ctx *ctx, const kf_run_opts *o, int json, char **out) {
    *out = NULL;
    tool_run r;
    kf_status st = open_run(ctx, o, "next", &r);
    if (st) return st;
    int64_t *unfinished = NULL;
    size_t nun = 0;
    kf_pack pk;
    memset(&pk, 0, sizeof pk);
    if ((st = kf_proposer_search(ctx, r.ev.o, &r.tally.se))) goto out;
    if ((st = kf_loop_memory_open(ctx, o->lessons, &r.mem))) goto out;
    r.env.mem = r.mem;
    kf_search_offer(r.tally.se, KF_PROPOSER_TOOL, r.tool.categories);
    if ((st = kf_tally_replay(&r.tally, &unfinished, &nun))) goto out;
    kf_action a;
    int64_t pid = 0;
    if ((st = next_action(&r, &a, &pid))) goto out;
    const char *cat = kf_search_category_name(a.category);
    st = kf_loop_pack_for(ctx, r.ev.t, r.ev.st, r.mem, r.ev.o->pack_tokens, a.parent, cat, &pk);
    if (st) goto out;
    kf_loop_pack_record(r.ev.st, 0, &pk, -1, pid);
    if (!(*out = next_answer(&r, &a, pid, &pk, json))) st = kf__err(ctx, KF_ENOMEM, "out of memory");
out:
    kf_pack_free(&pk);
    free(unfinished);
    close_run(&r);
    return st;
}

/* ---- kforge submit ----------------------------------------------------------------------- */

/* The parent of a submission: the root (0), or a node of the run that passed the check
 * (*pn then, *hasp 1). KF_EUSAGE otherwise. */
static kf_status submit_parent(tool_run *r, int64_t parent, kf_node *pn, int *hasp) {
    kf_ctx *ctx = r->ev.ctx;
    if (parent <= 0) return KF_OK;
    if (kf_store_get_node(r->ev.st, parent, pn))
        return kf__err(ctx, KF_EUSAGE, "%s: no node %lld (kforge tree %s lists them; 0 is the root)",
                       r->ev.run_dir, (long long)parent, r->ev.run_dir);
    *hasp = 1;
    if (pn->state == KF_NODE_SCREENED)
        return kf__err(ctx, KF_EUSAGE,
                       "%s: node %lld is screened (one short timing): promote it first "
                       "(kforge submit %s --promote %lld), then submit its children",
                       r->ev.run_dir, (long long)parent, r->ev.run_dir, (long long)parent);
    if (!(pn->state == KF_NODE_MEASURED || pn->state == KF_NODE_KEPT || pn->state == KF_NODE_REVERTED))
        return kf__err(ctx, KF_EUSAGE,
                       "%s: node %lld is %s: a parent is the root (0) or a node that passed the check",
                       r->ev.run_dir, (long long)parent, kf_node_state_name(pn->state));
    return KF_OK;
}

/* The category of a submission: as given, else the pending action's for this parent,
 * else other; *pid: the pending action it answers (0: none; always for a promotion, whose
 * screening answered it). */
static kf_status submit_category(tool_run *r, int64_t parent, const char *category, int promotion, int *cat,
                                 int64_t *pid) {
    pending_set ps;
    kf_status st = pendings(r->ev.st, &ps);
    if (st) return st;
    *pid = 0;
    int want = category ? kf_search_category_parse(category) : -1;
    for (int i = 0; i < ps.n && !*pid && !promotion; i++)
        if (ps.v[i].open && ps.v[i].parent == parent && (want < 0 || ps.v[i].category == want)) {
            *pid = ps.v[i].id;
            if (want < 0) want = ps.v[i].category;
        }
    *cat = want >= 0 ? want : KF_CAT_OTHER;
    return KF_OK;
}

/* The `submit` event of a submission: the pending action it answers (closed by it), for
 * one not evaluated again the node it is the same source as, for a promotion the
 * screened node, and whether it is a screening. */
static kf_status submit_event(tool_run *r, int64_t node, int64_t parent, const char *category, int64_t pid,
                              int64_t same_as, int64_t promoted_from) {
    json_t *ev = json_pack("{s:I, s:s}", "parent", (json_int_t)parent, "category", category);
    json_object_set_new(ev, "pending", pid ? json_integer(pid) : json_null());
    if (same_as) json_object_set_new(ev, "same_as", json_integer(same_as));
    if (promoted_from > 0) json_object_set_new(ev, "promoted_from", json_integer(promoted_from));
    if (r->ev.screen) json_object_set_new(ev, "screen", json_true());
    char *evs = kf__json_dumps(ev, JSON_COMPACT);
    json_decref(ev);
    kf_status st =
        evs ? kf_store_event(r->ev.st, node, "submit", evs) : kf__err(r->ev.ctx, KF_ENOMEM, "out of memory");
    free(evs);
    return st;
}

/* The submitted text as node *n of the run (proposer tool, category cat), with its
 * `submit` event and its description. */
static kf_status submit_record(tool_run *r, int64_t parent, const char *path, const char *text, size_t len,
                               int cat, int64_t pid, int64_t promoted_from, const char *desc, kf_node *n) {
    const char *dot = strrchr(path, '.');
    snprintf(n->ext, sizeof n->ext, "%s",
             dot && kf_backend_by_ext(dot + 1) ? dot + 1 : kf_loop_task_ext(r->ev.t));
    n->parent = parent;
    snprintf(n->proposer, sizeof n->proposer, "tool");
    snprintf(n->category, sizeof n->category, "%s", kf_search_category_name(cat));
    n->created = kf_eval_now();
    kf_status st;
    if ((st = kf_store_put_source(r->ev.st, text, len, n->ext, n->src_hash))) return st;
    if ((st = kf_store_add_node(r->ev.st, n))) return st;
    if ((st = submit_event(r, n->id, parent, n->category, pid, 0, promoted_from))) return st;
    return desc && *desc ? kf_loop_describe(r->ev.st, n->id, desc) : KF_OK;
}

/* A text the run already evaluated: not evaluated again, and no node; the answer names
 * the earlier node (`kforge tree` shows it). */
static char *pruned_answer(tool_run *r, int64_t parent, const char *cat, int64_t pid, int64_t same,
                           const char *note, int json) {
    if (json) {
        json_t *j = json_pack("{s:s, s:n, s:I, s:s, s:s, s:s, s:I, s:s}", "run", r->ev.run_dir, "id",
                              "parent", (json_int_t)parent, "state", "pruned", "proposer", "tool", "category",
                              cat, "same_as", (json_int_t)same, "note", note);
        json_object_set_new(j, "pending", pid ? json_integer(pid) : json_null());
        json_object_set_new(j, "message", json_string(note));
        char *out = j ? kf__json_dumps(j, JSON_INDENT(1)) : NULL;
        json_decref(j);
        return out;
    }
    return kf__asprintf(
        "kforge submit: not evaluated, no node recorded: %s (kforge tree %s shows node %lld)\n", note,
        r->ev.run_dir, (long long)same);
}

/* A submission evaluated on workers: the worker and device that timed its verdict, and
 * the pool's figures (dispatched, verdicts, requeued, lost, ...), into j. */
static void worker_fields(json_t *j, const kf_node *n, kf_pool *pool) {
    json_t *v = n->verdict_json ? json_loads(n->verdict_json, 0, NULL) : NULL;
    json_t *w = json_object_get(v, "worker"), *d = json_object_get(v, "device");
    json_object_set_new(j, "worker", json_is_string(w) ? json_incref(w) : json_null());
    json_object_set_new(j, "device", json_is_object(d) ? json_incref(d) : json_null());
    json_object_set_new(j, "scale", kf_pool_report(pool));
    json_decref(v);
}

/* The answer of kforge submit: the node as tree shows it (a line, or its JSON with the
 * run, the pending action and the first message of a failure). */
static char *submit_answer(tool_run *r, kf_node *n, int64_t parent, int64_t pid, int passed, int json) {
    char *msg = passed ? NULL : kf_record_first_message(n);
    json_t *critics = kf_tree_critics(r->ev.st);
    char *out;
    /* its parent, for the speedups against it (none: the root, or not read); in id
     * order, as tree's nodes are */
    kf_node pv[2];
    memset(pv, 0, sizeof pv);
    int hasp = parent > 0 && kf_store_get_node(r->ev.st, parent, &pv[0]) == KF_OK;
    pv[hasp] = *n;
    if (json) {
        json_t *j = kf_tree_node_json(n, hasp ? &pv[0] : NULL, NULL, critics);
        json_object_set_new(j, "run", json_string(r->ev.run_dir));
        json_object_set_new(j, "pending", pid ? json_integer(pid) : json_null());
        json_object_set_new(j, "message", msg ? json_string(msg) : json_null());
        if (r->pool) worker_fields(j, n, r->pool);
        out = kf__json_dumps(j, JSON_INDENT(1));
        json_decref(j);
    } else {
        kf_buf b;
        kf_buf_init(&b, 1u << 20);
        kf_node_vec one = {pv, (size_t)(hasp + 1), 2};
        kf_buf_printf(&b, "kforge submit: ");
        kf_tree_text(&b, &one, NULL, parent, 0, critics, NULL);
        if (msg && !(b.p && strstr(b.p, msg)))
            kf_buf_printf(&b, "  %s\n", msg); /* the tree line may hold it */
        out = b.p;
    }
    if (hasp) kf_node_free(&pv[0]);
    json_decref(critics);
    free(msg);
    return out;
}

typedef struct {
    const kf_node *n;
    int64_t id;
    kf_node_state state;
    const kf_store_lock *lock; /* KF_NODE_PROPOSED: only a node another submit evaluates */
    kf_store *st;
    int screen; /* this submission is a screening */
} screened_dup;

typedef struct {
    int64_t node;
    int screen;
} screen_of;

static int find_screen_event(void *arg, int64_t id, int64_t node, const char *js, double created) {
    (void)id, (void)created;
    screen_of *so = arg;
    if (node != so->node) return 0;
    json_t *j = js ? json_loads(js, 0, NULL) : NULL;
    so->screen = json_is_true(json_object_get(j, "screen"));
    json_decref(j);
    return 1;
}

static int find_screened(void *arg, const kf_node *m) {
    screened_dup *d = arg;
    if (m->id == d->n->id || m->tampered || strcmp(m->src_hash, d->n->src_hash) || m->state != d->state)
        return 0;
    if (d->state == KF_NODE_PROPOSED && !kf_store_lock_evaluating(d->lock, m->id)) return 0;
    /* a screening in flight does not stand for a full evaluation */
    screen_of so = {m->id, 0};
    if (d->state == KF_NODE_PROPOSED && !d->screen &&
        kf_store_each_event(d->st, "submit", find_screen_event, &so))
        return 0;
    if (so.screen) return 0;
    d->id = m->id;
    return 1;
}

/* The note when the run has evaluated n's text already (in full, or for a screening,
 * screened too), with the earlier node in *same; NULL when it has not. */
static char *submit_dup(tool_run *r, const kf_node *n, int64_t *same) {
    char *dup = kf_diag_prune_note(r->ev.st, n, 1, same);
    screened_dup sd = {n, 0, KF_NODE_SCREENED, r->lock, r->ev.st, 1};
    if (!dup && r->ev.screen && !kf_store_each_node(r->ev.st, find_screened, &sd) && sd.id) {
        *same = sd.id;
        dup = kf__asprintf(
            "pruned: the same source as node %lld, already screened (kforge submit --promote %lld "
            "evaluates it in full)",
            (long long)sd.id, (long long)sd.id);
    }
    /* the same text in another submit's evaluation now: its outcome will stand (one left
     * unfinished by a killed submit is evaluated again, under a new node) */
    screened_dup fl = {n, 0, KF_NODE_PROPOSED, r->lock, r->ev.st, r->ev.screen != KF_EVAL_FULL};
    if (!dup && !kf_store_each_node(r->ev.st, find_screened, &fl) && fl.id) {
        *same = fl.id;
        dup = kf__asprintf("pruned: the same source as node %lld, which another submit is evaluating now "
                           "(kforge tree %s shows its outcome when it is recorded)",
                           (long long)fl.id, r->ev.run_dir);
    }
    return dup;
}

/* The text of a submission, unless the run has evaluated it already: then no node is
 * recorded, and *out says which node it is the same source as (*outcome 1). 0 when
 * it is new, 1 when pruned, -1 on error (in *st). */
static int submit_pruned(tool_run *r, kf_node *n, const char *text, size_t len, int64_t parent,
                         const char *cname, int64_t pid, int json, char **out, int *outcome, kf_status *st) {
    const void *parts[] = {text};
    size_t lens[] = {len};
    if (kf__sha256_hex(parts, lens, 1, n->src_hash)) {
        *st = kf__err(r->ev.ctx, KF_EINTERNAL, "sha256 failed");
        return -1;
    }
    int64_t same = 0;
    char *dup = submit_dup(r, n, &same);
    if (!dup) return 0;
    *st = submit_event(r, 0, parent, cname, pid, same, 0);
    if (!*st && !(*out = pruned_answer(r, parent, cname, pid, same, dup, json)))
        *st = kf__err(r->ev.ctx, KF_ENOMEM, "out of memory");
    free(dup);
    *outcome = 1;
    return *st ? -1 : 1;
}

/* Evaluate recorded node *n, record what it teaches, and answer. The evaluation runs
 * without the writer's turn (kf_store_lock_evaluate): other submits to the run take
 * theirs and evaluate at the same time; its outcome is one transaction, as a --jobs
 * evaluator's. What follows it (what the node teaches, the answer) is a turn again. */
static kf_status submit_eval(tool_run *r, kf_node *n, int64_t parent, const kf_node *pn, int64_t pid,
                             int json, char **out, int *outcome) {
    kf_status st = kf_store_lock_evaluate(r->ev.ctx, r->lock, n->id);
    if (!st) st = kf_eval_evaluate(&r->ev, n, pn);
    if (!st) st = kf_store_lock_resume(r->ev.ctx, r->lock);
    if (st) return st;
    kf_diag_record(r->ev.st, n);
    if (n->state == KF_NODE_KEPT) kf_store_savepoint(r->ev.st, n->id, "kept");
    int passed = n->state == KF_NODE_MEASURED || n->state == KF_NODE_KEPT || n->state == KF_NODE_REVERTED ||
                 n->state == KF_NODE_SCREENED;
    *outcome = passed ? 0 : n->state == KF_NODE_CRASHED ? 2 : 1;
    if (!(*out = submit_answer(r, n, parent, pid, passed, json)))
        return kf__err(r->ev.ctx, KF_ENOMEM, "out of memory");
    return KF_OK;
}

kf_status kf_run_submit(kf_ctx *ctx, const kf_run_opts *o, int64_t parent, const char *path,
                        const char *category, int json, char **out, int *outcome) {
    *out = NULL;
    *outcome = 2;
    if (category && kf_search_category_parse(category) < 0)
        return kf__err(ctx, KF_EUSAGE,
                       "--category %s: not a category (tiling, vectorisation, unrolling, "
                       "memory_layout, launch_config, algorithm, specialisation, precision, other)",
                       category);
    if (parent < 0)
        return kf__err(ctx, KF_EUSAGE, "--parent %lld: a node id, 0 for the root", (long long)parent);
    tool_run r;
    kf_status st = open_run(ctx, o, "submit", &r);
    if (st) return st;
    r.ev.screen = o->screen ? KF_EVAL_SCREEN : KF_EVAL_FULL;
    kf_node pn, n;
    memset(&pn, 0, sizeof pn);
    memset(&n, 0, sizeof n);
    char *text = NULL;
    size_t len = 0;
    int hasp = 0;
    int64_t pid = 0;
    if ((st = submit_parent(&r, parent, &pn, &hasp))) goto out;
    errno = 0;
    if (kf__read_file(path, 1u << 20, &text, &len)) {
        st = kf__err(ctx, KF_EUSAGE, "%s: %s", path, errno ? strerror(errno) : "larger than 1 MiB");
        goto out;
    }
    int cat;
    if ((st = submit_category(&r, parent, category, 0, &cat, &pid))) goto out;
    const char *cname = kf_search_category_name(cat);
    /* a file that contradicts its category is refused before anything is compiled or
     * timed: nothing recorded, so the same file under the right category is no duplicate */
    char *conflict = kf_loop_category_conflict(text, len, cname, path);
    if (conflict) {
        st = kf__err(ctx, KF_EUSAGE, "%s", conflict);
        free(conflict);
        goto out;
    }
    char desc[KF_LOOP_DESC_MAX + 1] = "";
    if (o->description && kf_loop_description(o->description, desc, sizeof desc)) {
        st = kf__err(ctx, KF_EUSAGE, "--description: an empty description");
        goto out;
    }
    /* a text the run has already evaluated is not evaluated again, whatever its category:
     * submitting it until a lucky timing or a lucky draw of hidden shapes passes proves
     * nothing new. No node: the answer names the earlier one */
    if (submit_pruned(&r, &n, text, len, parent, cname, pid, json, out, outcome, &st)) goto out;
    if ((st = tool_workers(&r))) goto out; /* before the node: a pool that cannot start records nothing */
    st = submit_record(&r, parent, path, text, len, cat, pid, 0, desc, &n);
    r.ev.display = path; /* the node's copy carries the submitted file's name */
    if (st) goto out;
    st = submit_eval(&r, &n, parent, hasp ? &pn : NULL, pid, json, out, outcome);
out:
    free(text);
    kf_node_free(&n);
    if (hasp) kf_node_free(&pn);
    close_run(&r);
    return st;
}

kf_status kf_run_promote(kf_ctx *ctx, const kf_run_opts *o, int64_t node, int json, char **out,
                         int *outcome) {
    *out = NULL;
    *outcome = 2;
    if (node <= 0) return kf__err(ctx, KF_EUSAGE, "--promote %lld: a screened node's id", (long long)node);
    tool_run r;
    kf_status st = open_run(ctx, o, "submit --promote", &r);
    if (st) return st;
    r.ev.screen = KF_EVAL_FULL;
    kf_node sn, pn, n;
    memset(&sn, 0, sizeof sn);
    memset(&pn, 0, sizeof pn);
    memset(&n, 0, sizeof n);
    char *text = NULL;
    size_t len = 0;
    int hasp = 0;
    int64_t pid = 0;
    if (kf_store_get_node(r.ev.st, node, &sn)) {
        st = kf__err(ctx, KF_EUSAGE, "%s: no node %lld (kforge tree %s lists them)", r.ev.run_dir,
                     (long long)node, r.ev.run_dir);
        goto out;
    }
    if (sn.tampered || sn.state != KF_NODE_SCREENED) {
        st = kf__err(ctx, KF_EUSAGE,
                     "%s: node %lld is %s: only a screened node is promoted (kforge submit --screen)",
                     r.ev.run_dir, (long long)node,
                     sn.tampered ? "changed outside kforge" : kf_node_state_name(sn.state));
        goto out;
    }
    if ((st = submit_parent(&r, sn.parent, &pn, &hasp))) goto out;
    if ((st = kf_store_read_source(r.ev.st, sn.src_hash, sn.ext, &text, &len))) goto out;
    int cat;
    if ((st = submit_category(&r, sn.parent, sn.category, 1, &cat, &pid))) goto out;
    char name[64];
    snprintf(name, sizeof name, "n%lld.%s", (long long)node, sn.ext);
    if (submit_pruned(&r, &n, text, len, sn.parent, sn.category, pid, json, out, outcome, &st)) goto out;
    if ((st = tool_workers(&r))) goto out;
    if ((st = submit_record(&r, sn.parent, name, text, len, cat, pid, node, NULL, &n))) goto out;
    st = submit_eval(&r, &n, sn.parent, hasp ? &pn : NULL, pid, json, out, outcome);
out:
    free(text);
    kf_node_free(&n);
    kf_node_free(&sn);
    if (hasp) kf_node_free(&pn);
    close_run(&r);
    return st;
}
