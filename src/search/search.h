/*
 * search.h - Arbor's selection: score every (parent, category, proposer) action from the
 * tree's statistics and pick the best (docs/run.md "Selection").
 *
 *   h(a) = [g/c * (1 - r_fail) * (1 - r_crash) * m_gap + C * sqrt(ln N / (1 + n_cat))]
 *          * keep_decay^kept(parent) * fail_penalty^max(0, streak - fail_streak + 1)
 *          + aging * picks since (proposer, category) last ran
 *   g = gain(category) * max(0.05, 1 - best/target) * speedup(parent)/best
 *
 * Statistics (rates, gains, costs, n_cat, streaks, waits) are per (proposer, category).
 *
 * Search is pure memory of outcomes: it never evaluates anything. The loop feeds it every
 * recorded outcome in order (kf_search_observe) and asks for the next action.
 */
#ifndef KF_SEARCH_H
#define KF_SEARCH_H

#include <stddef.h>
#include <stdint.h>

// clang-format off
typedef enum {
    KF_CAT_TILING, KF_CAT_VECTORISATION, KF_CAT_UNROLLING, KF_CAT_MEMORY_LAYOUT,
    KF_CAT_LAUNCH_CONFIG, KF_CAT_ALGORITHM, KF_CAT_SPECIALISATION, KF_CAT_PRECISION,
    KF_CAT_OTHER, KF_CAT_COUNT
} kf_category;
// clang-format on

#define KF_SEARCH_MAX_PROPOSERS 8

/* "tiling", ... ; NULL for an out-of-range value. */
const char *kf_search_category_name(int cat);
/* The category named s, or -1. */
int kf_search_category_parse(const char *s);
/* A builtin parameter's category from its name (BM, TILE -> tiling; UNROLL -> unrolling;
 * VEC, LANES, W -> vectorisation; BLOCK, THREADS -> launch_config; ...); other if none. */
int kf_search_category_of_param(const char *name);

typedef struct {
    double C;            /* exploration weight (0.6) */
    double aging;        /* added per pick an action waits (0.05) */
    double keep_decay;   /* a parent's multiplier per child kept from it (0.7) */
    double fail_penalty; /* a category's multiplier per failure from the fail_streak-th on (0.85) */
    int fail_streak;     /* failures in a row before fail_penalty applies (3) */
    double k0;           /* pseudo-count of the gain prior against measured gains (2) */
    double floor;        /* pick returns -1 when no action scores at least this (0.01) */
    double target;       /* target speedup over the reference, for g's share and m_gap (2) */
    double gain_prior[KF_CAT_COUNT]; /* expected child/parent speedup per category (1.2; specialisation 1.3,
                                        other 1.1) */
    double cost_prior[KF_CAT_COUNT]; /* relative cost until measured (1) */
    int max_parents;                 /* candidate parents considered by pick (64) */
    int parents_per_cat;             /* best measured nodes per category among them (2) */
    int nproposers;                  /* proposers 0..nproposers-1 (1: the builtin) */
    int breaker_k;                   /* circuit breaker: failures in a row (rejected, failed to build,
                                        crashed) of one (proposer, category) that pause it (4; 0: off) */
    int breaker_pause;               /* ... for this many outcomes of other actions, or until another
                                        action gives a measured kernel (8) */
} kf_search_cfg;

void kf_search_defaults(kf_search_cfg *cfg);
/* Apply one "KEY=VALUE" (C, aging, keep_decay, fail_penalty, fail_streak, k0, floor,
 * target, max_parents, parents_per_cat, breaker_k, breaker_pause, gain.CATEGORY,
 * cost.CATEGORY). 0, or -1 with a message in err. */
int kf_search_cfg_set(kf_search_cfg *cfg, const char *kv, char *err, size_t errlen);

/* An outcome as search needs it (the loop adapts kf_node to it). */
typedef enum {
    KF_SOBS_KEPT,           /* measured and kept by the Critic */
    KF_SOBS_MEASURED,       /* measured, not kept (reverted or slower) */
    KF_SOBS_REJECTED,       /* built, rejected by the checker (wrong result, timeout, ...) */
    KF_SOBS_COMPILE_FAILED, /* did not build (or the proposer produced nothing) */
    KF_SOBS_CRASHED,        /* the evaluation itself died */
    KF_SOBS_PRUNED          /* a constraint excluded it: not a try */
} kf_search_state;

typedef struct {
    int64_t id, parent; /* parent 0: the root (the reference); ids > 0, unique */
    int category;       /* kf_category */
    int proposer;       /* 0 .. nproposers-1 */
    kf_search_state state;
    double speedup; /* geomean over visible shapes against the reference; 0 if none */
    double cost_s;  /* wall seconds of proposing + evaluating */
} kf_search_obs;

typedef struct {
    int64_t parent;
    int category;
    int proposer;
    double h, g, c, r_fail, r_crash, m_gap, bonus;
    double decay;   /* keep_decay and fail_penalty factors applied */
    double age;     /* aging * picks waited */
    double share;   /* g's share: the best time so far above the target (at least 0.05) */
    double quality; /* g's parent weight: its speedup over the best so far's */
    double gain;    /* g's blended expected gain (speedup - 1) */
    int paused;     /* circuit breaker: outcomes left in its pause (0: not paused) */
} kf_action;

typedef struct kf_search kf_search;

/* cfg NULL: the defaults. NULL on out of memory. Free with kf_search_free. */
kf_search *kf_search_new(const kf_search_cfg *cfg);
void kf_search_free(kf_search *s);
/* Record one outcome (every recorded node, in order). 0, or -1 for a bad observation
 * (category or proposer out of range, id <= 0, an unknown parent) or out of memory. */
int kf_search_observe(kf_search *s, const kf_search_obs *o);
/* No further (parent, category, proposer) action: the proposer has nothing left there. */
void kf_search_exhaust(kf_search *s, int64_t parent, int category, int proposer);
/* A try of (category, proposer) was issued (delta +1) or its outcome observed (-1; call it
 * before kf_search_observe): tries in flight count in N and n_cat of the bonus, so that
 * several evaluations at once spread over actions. With none in flight, scores are as
 * without this call. */
void kf_search_pending(kf_search *s, int category, int proposer, int delta);
/* Which categories proposer p offers (bit c = category c; all by default). */
void kf_search_offer(kf_search *s, int proposer, unsigned mask);
/* The best action into *out; its wait resets and every other action waits one more pick.
 * Actions of a (proposer, category) paused by the circuit breaker are passed over while
 * any other action scores at least the floor (a pause never ends a run on its own).
 * 0, or -1 when no action scores at least cfg.floor (or none is left). O(candidate
 * parents x categories x proposers). */
int kf_search_pick(kf_search *s, kf_action *out);
/* Score one action without picking it (its terms into *out). 0, or -1 if parent unknown. */
int kf_search_score(kf_search *s, int64_t parent, int category, int proposer, kf_action *out);
/* Circuit breaker: how many times it tripped over every observation so far, and the last
 * trip's proposer, category and the failures in a row that tripped it (any pointer may
 * be NULL). kf_search_trips is 0 when it never tripped. */
int kf_search_trips(const kf_search *s);
void kf_search_last_trip(const kf_search *s, int *proposer, int *category, int *failures);
/* Outcomes left in the pause of (proposer, category); 0 when it is not paused. */
int kf_search_paused(const kf_search *s, int proposer, int category);

/* Each term of a, as one JSON object, into buf (truncated to n). Returns buf. */
char *kf_search_explain(const kf_action *a, char *buf, size_t n);

#endif
