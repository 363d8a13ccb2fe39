/*
 * tally.c - the run's tally: what a finished node teaches search (its observation: the
 * action's outcome and cost) and the proposers (kf_proposer_observe: the builtin's walk),
 * and what it adds to the run's counts. Outcomes are recorded by the main thread alone,
 * in the order they arrive (kf_tally_record, from the scheduler); a resumed run, and tool
 * mode, replay the store's nodes through the same observations first. The progress line
 * is drawn here too, since it shows these counts.
 */
#include "tally.h"

#include "diagnose.h"
#include "loop.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static kf_search_state sobs_state(kf_node_state s) {
    switch (s) {
    case KF_NODE_KEPT: return KF_SOBS_KEPT;
    case KF_NODE_MEASURED:
    case KF_NODE_REVERTED:
    /* a try that passed the check; its screened figures are no speedup search may build
     * on (kf_tally_observe gives it none) */
    case KF_NODE_SCREENED: return KF_SOBS_MEASURED;
    case KF_NODE_COMPILE_FAILED: return KF_SOBS_COMPILE_FAILED;
    case KF_NODE_CRASHED: return KF_SOBS_CRASHED;
    case KF_NODE_PRUNED: return KF_SOBS_PRUNED;
    /* the (proposer, category) action gave nothing to check: search.h counts that as a
     * failure to build for that proposer's statistics, never as a checker rejection */
    case KF_NODE_NO_CANDIDATE: return KF_SOBS_COMPILE_FAILED;
    default: return KF_SOBS_REJECTED;
    }
}

/* 1 for a specialisation, whoever proposed it (the builtin, an agent, tool mode): its
 * speedup is a geometric mean over its domain only (one shape, perhaps), so it is not
 * the run's best geomean (progress line, --target, the summary). */
static int narrowed(const kf_node *n) { return kf_loop_is_spec(n) || !strcmp(n->category, "specialisation"); }

int kf_tally_specialisable(const kf_node *n) {
    if (!n || n->state != KF_NODE_KEPT || !n->shapes_json) return 0;
    struct kf_verdict v;
    if (kf_verdict_from_text(n->shapes_json, &v)) return 0;
    double lo = 0, hi = 0;
    int timed = 0, wins = 0;
    for (int k = 0; k < v.nshapes; k++) {
        const kf_verdict_shape *s = &v.shapes[k];
        if (!(s->speedup > 0)) continue;
        lo = timed ? (s->speedup < lo ? s->speedup : lo) : s->speedup;
        hi = timed ? (s->speedup > hi ? s->speedup : hi) : s->speedup;
        timed++;
        wins += (s->has & KF_VS_WIN) && s->win;
    }
    kf_verdict_free(&v);
    return timed >= 2 && ((wins && wins < timed) || hi > lo * KF_TALLY_SPEC_SPREAD);
}

void kf_tally_observe(kf_tally *tl, const kf_node *n, int replayed) {
    kf_search_obs o = {n->id,
                       n->parent,
                       kf_search_category_parse(n->category),
                       kf_proposer_index(n->proposer),
                       sobs_state(n->state),
                       n->state == KF_NODE_SCREENED ? 0 : n->speedup,
                       n->cost_s};
    if (o.category < 0) o.category = KF_CAT_OTHER;
    kf_search_observe(tl->se, &o);
    /* an agent is asked for a specialisation of a node only when there is something to
     * specialise (the builtin proposes its own, from its measurements) */
    if (!kf_tally_specialisable(n)) {
        kf_search_exhaust(tl->se, n->id, KF_CAT_SPECIALISATION, KF_PROPOSER_AGENT);
        kf_search_exhaust(tl->se, n->id, KF_CAT_SPECIALISATION, KF_PROPOSER_TOOL);
    }
    for (int k = 0; k < KF_PROPOSER_COUNT; k++) kf_proposer_observe(tl->p[k], n, replayed);
}

typedef struct {
    kf_tally *tl;
    int64_t *unfinished;
    size_t nun, capun;
} replay_ctx;

static int replay_one(void *arg, const kf_node *n) {
    replay_ctx *c = arg;
    kf_tally *tl = c->tl;
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
        kf_search_obs o = {n->id, n->parent, KF_CAT_OTHER, kf_proposer_index(n->proposer), KF_SOBS_PRUNED,
                           0,     0};
        kf_search_observe(tl->se, &o);
        tl->evals++;
        return 0;
    }
    kf_tally_observe(tl, n, 1);
    tl->tokens = kf__sat_add(tl->tokens, kf__sat_add(n->tokens_in, n->tokens_out));
    if (n->state == KF_NODE_NO_CANDIDATE || n->state == KF_NODE_PRUNED) return 0; /* not an evaluation */
    tl->evals++;
    tl->kept += n->state == KF_NODE_KEPT;
    if (n->speedup > tl->best && n->state == KF_NODE_KEPT && !narrowed(n)) {
        tl->best = n->speedup;
        tl->best_id = n->id;
    }
    return 0;
}

kf_status kf_tally_replay(kf_tally *tl, int64_t **unfinished, size_t *nun) {
    replay_ctx rc = {tl, NULL, 0, 0};
    kf_status st = kf_store_each_node(tl->st, replay_one, &rc);
    *unfinished = rc.unfinished;
    *nun = rc.nun;
    return st;
}

void kf_tally_record(kf_tally *tl, const kf_node *n) {
    kf_tally_observe(tl, n, 0);
    kf_diag_record(tl->st, n); /* why it failed, and the constraint it teaches */
    kf_diag_breaker(tl->st, tl->se, &tl->trips, n->id, kf_proposer_names, KF_PROPOSER_COUNT);
    /* what the proposers add (the builtin: the constraints it learnt) */
    for (int k = 0; k < KF_PROPOSER_COUNT; k++) kf_proposer_recorded(tl->p[k], n);
    tl->evals++;
    tl->fresh++;
    tl->tokens = kf__sat_add(tl->tokens, n->review_tokens);
    if (n->state == KF_NODE_KEPT && n->speedup > tl->best && !narrowed(n)) {
        tl->best = n->speedup;
        tl->best_id = n->id;
        tl->since_improve = 0;
    } else {
        tl->since_improve++;
    }
    if (n->state == KF_NODE_KEPT) {
        tl->kept++;
        kf_store_savepoint(tl->st, n->id, "kept");
    }
    kf_tally_progress(tl, n);
}

void kf_tally_settle(kf_tally *tl, const kf_node *n) {
    kf_tally_observe(tl, n, 0);
    if (n->state == KF_NODE_NO_CANDIDATE) {
        kf_diag_record(tl->st, n);
        kf_diag_breaker(tl->st, tl->se, &tl->trips, n->id, kf_proposer_names, KF_PROPOSER_COUNT);
    }
    kf_tally_progress(tl, n);
}

void kf_tally_progress(kf_tally *tl, const kf_node *n) {
    double el = (double)(kf__now_ns() - tl->t0) / 1e9;
    int budget = tl->budget;
    double eta = tl->evals > 0 && budget > tl->evals ? el / tl->evals * (budget - tl->evals) : 0;
    if (n->state == KF_NODE_SCREENED) /* one short timing: labelled, never a best */
        snprintf(tl->last, sizeof tl->last, "#%lld screened %.3fx (screened, not confirmed)",
                 (long long)n->id, n->speedup);
    else
        snprintf(tl->last, sizeof tl->last, "#%lld %s%s%s", (long long)n->id, kf_node_state_name(n->state),
                 n->reasons ? " " : "", n->reasons ? n->reasons : "");
    char best[64] = "none kept yet", run[32] = "";
    if (tl->best_id)
        snprintf(best, sizeof best, "%.3fx geomean (node %lld)", tl->best, (long long)tl->best_id);
    if (tl->running) snprintf(run, sizeof run, tl->tty ? "  %d running" : ", %d running", tl->running);
    if (tl->tty)
        fprintf(stderr, "\r\033[K[%d/%d] best %s  last %s%s  %02d:%02d  ETA %02d:%02d", tl->evals, budget,
                best, tl->last, run, (int)el / 60, (int)el % 60, (int)eta / 60, (int)eta % 60);
    else
        fprintf(stderr, "kforge run: %d/%d evaluations, best %s, last %s%s, %.0f s\n", tl->evals, budget,
                best, tl->last, run, el);
    fflush(stderr);
}
