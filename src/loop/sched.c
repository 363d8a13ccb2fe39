/*
 * sched.c - several evaluations at once (kforge run --jobs N; docs/run.md "Several
 * evaluations at once").
 *
 * The main thread selects, proposes and records every node, and does all the bookkeeping
 * (search's and the proposers' observations, learnt constraints, counters, progress, stop
 * rules) in the order outcomes arrive. N evaluator threads each own a kf_ctx, a loaded
 * task and a store connection (WAL: writers queue under the busy timeout, store.c) and
 * run kf_eval_node: the private copy, kf_bench (compiles and checks overlap; timed phases
 * run one at a time under bench.c's timing lock), the Critic's re-timings and the
 * outcome's transaction. With --jobs 1 there is no thread: each node is evaluated where
 * it is handed over, exactly as before there was a scheduler. Work and outcomes have a
 * condition variable each, and each hand-over wakes one thread.
 */
#include "sched.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct kf_evaluator {
    kf_sched *s;
    kf_eval r; /* the main thread's, with its own ctx, task and store */
    pthread_t th;
};

static void *evaluator_main(void *arg) {
    kf_evaluator *e = arg;
    kf_sched *s = e->s;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        while (!s->ntodo && !s->quit) pthread_cond_wait(&s->cv, &s->mu);
        if (!s->ntodo) break;
        int64_t id = s->todo[0];
        memmove(s->todo, s->todo + 1, (size_t)--s->ntodo * sizeof *s->todo);
        pthread_mutex_unlock(&s->mu);
        kf_outcome o;
        memset(&o, 0, sizeof o);
        o.id = id;
        if ((o.st = kf_eval_node(&e->r, id, &o.n)))
            snprintf(o.err, sizeof o.err, "node %lld: %s", (long long)id, kf_errmsg(e->r.ctx));
        pthread_mutex_lock(&s->mu);
        s->done[s->ndone++] = o; /* room: never more than jobs ids are out */
        pthread_cond_signal(&s->done_cv);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

static void evaluator_close(kf_evaluator *e) {
    kf_store_close(e->r.st);
    kf_task_free(e->r.t);
    kf_ctx_free(e->r.ctx);
}

kf_status kf_sched_start(kf_sched *s, kf_eval *ev, kf_tally *tally, int jobs) {
    *s = (kf_sched){.ev = ev, .tally = tally, .jobs = jobs < 1 ? 1 : jobs};
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    pthread_cond_init(&s->done_cv, NULL);
    s->started = 1;
    if (s->jobs == 1) return KF_OK;
    if (!(s->evs = calloc((size_t)s->jobs, sizeof *s->evs)))
        return kf__err(ev->ctx, KF_ENOMEM, "out of memory");
    for (int i = 0; i < s->jobs; i++) {
        kf_evaluator *e = &s->evs[i];
        e->s = s;
        e->r = *ev;
        e->r.ctx = kf_ctx_new();
        e->r.t = NULL;
        e->r.st = NULL;
        e->r.display = NULL;
        e->r.bench_ns = 0;
        kf_status st = e->r.ctx ? KF_OK : kf__err(ev->ctx, KF_ENOMEM, "out of memory");
        if (!st && ((st = kf_task_load(e->r.ctx, ev->t->dir, &e->r.t)) ||
                    (st = kf_store_open_peer(e->r.ctx, ev->st, &e->r.st))))
            kf__err(ev->ctx, st, "evaluator %d of --jobs %d: %s", i + 1, s->jobs, kf_errmsg(e->r.ctx));
        /* the task as loaded now is the run's (what kf_store_open checked for main) */
        if (!st && strcmp(e->r.t->fingerprint, kf_store_task_fingerprint(e->r.st)))
            st = kf__err(ev->ctx, KF_ETASK,
                         "%s: the task changed since this run started (fingerprint %.12s, now %.12s)",
                         ev->run_dir, kf_store_task_fingerprint(e->r.st), e->r.t->fingerprint);
        if (!st && pthread_create(&e->th, NULL, evaluator_main, e))
            st = kf__err(ev->ctx, KF_EINTERNAL, "evaluator %d of --jobs %d: pthread_create failed", i + 1,
                         s->jobs);
        if (st) {
            evaluator_close(e);
            return st;
        }
        s->nev++;
    }
    return KF_OK;
}

void kf_sched_stop(kf_sched *s) {
    if (!s->started) return;
    pthread_mutex_lock(&s->mu);
    s->quit = 1;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    for (int i = 0; i < s->nev; i++) {
        pthread_join(s->evs[i].th, NULL);
        s->ev->bench_ns += s->evs[i].r.bench_ns;
        evaluator_close(&s->evs[i]);
    }
    for (int i = 0; i < s->ndone; i++) kf_node_free(&s->done[i].n);
    for (int i = 0; i < s->n; i++) free(s->fl[i].params_json);
    free(s->evs);
    pthread_cond_destroy(&s->cv);
    pthread_cond_destroy(&s->done_cv);
    pthread_mutex_destroy(&s->mu);
    s->started = 0;
}

kf_status kf_sched_wait(kf_sched *s) {
    uint64_t t0 = kf__now_ns();
    pthread_mutex_lock(&s->mu);
    while (!s->ndone) pthread_cond_wait(&s->done_cv, &s->mu);
    kf_outcome o = s->done[0];
    memmove(s->done, s->done + 1, (size_t)--s->ndone * sizeof *s->done);
    pthread_mutex_unlock(&s->mu);
    s->wait_ns += kf__now_ns() - t0;
    for (int k = 0; k < s->n; k++)
        if (s->fl[k].id == o.id) {
            kf_search_pending(s->tally->se, s->fl[k].category, s->fl[k].proposer, -1);
            free(s->fl[k].params_json);
            s->fl[k] = s->fl[--s->n];
            break;
        }
    s->tally->running = s->n;
    kf_status st = o.st;
    if (st) kf__err(s->ev->ctx, st, "%s", o.err);
    else kf_tally_record(s->tally, &o.n);
    kf_node_free(&o.n);
    return st;
}

/* With one job: evaluated and recorded here and now. */
static kf_status finish_one(kf_sched *s, int64_t id) {
    kf_node n;
    kf_status st = kf_eval_node(s->ev, id, &n);
    if (!st) kf_tally_record(s->tally, &n);
    kf_node_free(&n);
    return st;
}

kf_status kf_sched_put(kf_sched *s, int64_t id) {
    if (s->jobs == 1) return finish_one(s, id);
    kf_status st = KF_OK;
    if (s->n == s->jobs && (st = kf_sched_wait(s))) return st;
    kf_node n;
    if ((st = kf_store_get_node(s->ev->st, id, &n))) return st;
    kf_flight *f = &s->fl[s->n++];
    memset(f, 0, sizeof *f);
    f->id = id;
    f->category = kf_search_category_parse(n.category);
    if (f->category < 0) f->category = KF_CAT_OTHER;
    f->proposer = kf_proposer_index(n.proposer);
    f->params_json = n.params_json ? strdup(n.params_json) : NULL;
    kf_node_free(&n);
    kf_search_pending(s->tally->se, f->category, f->proposer, +1);
    s->tally->running = s->n;
    pthread_mutex_lock(&s->mu);
    s->todo[s->ntodo++] = id;
    /* one evaluator for one node: a broadcast woke all N idle ones, which with --jobs 64
     * cost more than the node's own bookkeeping */
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
    return KF_OK;
}
