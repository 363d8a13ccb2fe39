/*
 * tally.h - the run's tally (tally.c): what every finished node adds to search, to the
 * proposers and to the run's counts (evaluations, kept, best, tokens), and the progress
 * line. The main thread alone keeps it, in the order outcomes arrive; it is replayed from
 * the store when a run is resumed or driven by tool mode.
 */
#ifndef KF_LOOP_TALLY_H
#define KF_LOOP_TALLY_H

#include "proposer.h"
#include "../search/search.h"
#include "../store/store.h"

#include <stddef.h>
#include <stdint.h>

typedef struct kf_tally {
    kf_store *st; /* the main thread's */
    kf_search *se;
    kf_proposer *p[KF_PROPOSER_COUNT]; /* the run's proposers by search number (NULL: none) */
    int budget;                        /* evaluations in all, for the progress line */
    int tty;                           /* stderr is a terminal: one progress line, redrawn */
    uint64_t t0;                       /* when this process started on the run */
    int evals, kept, since_improve;
    int64_t tokens; /* tokens recorded on the run's nodes, in + out */
    double best;    /* best geometric-mean speedup over the reference so far */
    int64_t best_id;
    int fresh;      /* evaluations made by this process (not replayed) */
    int running;    /* evaluations in flight (--jobs), for the progress line */
    int trips;      /* circuit-breaker trips already recorded */
    char last[160]; /* the last verdict, for the progress line */
} kf_tally;

/* A node's visible shapes differ by more than this ratio of speedups to be worth a
 * specialisation (or some are wins and some are not). */
#define KF_TALLY_SPEC_SPREAD 2.0
/* 1 when n is worth specialising: kept, with per-shape results that differ (a win at one
 * visible shape and not at another, or speedups KF_TALLY_SPEC_SPREAD times apart).
 * Agents (run's and tool mode's) are asked for a specialisation of such a node only. */
int kf_tally_specialisable(const kf_node *n);
/* Tell search and the proposers what a finished node gave (replayed: read back). */
void kf_tally_observe(kf_tally *tl, const kf_node *n, int replayed);
/* Replay the run's finished nodes in id order (tampered ones count as spent tries that
 * taught nothing, with a warning); the ids of the unfinished ones, to be evaluated again,
 * into *unfinished (caller frees), *nun of them. Store errors, KF_ENOMEM. */
kf_status kf_tally_replay(kf_tally *tl, int64_t **unfinished, size_t *nun);
/* The bookkeeping of a freshly evaluated node: observations, its diagnosis and the
 * constraint it teaches, the circuit breaker, what the proposers add, the counts, a save
 * point for a kept node, the progress line. */
void kf_tally_record(kf_tally *tl, const kf_node *n);
/* A node that finished without an evaluation (pruned, no candidate): observed, a failure
 * diagnosed (no candidate), the progress line; it counts as no evaluation. */
void kf_tally_settle(kf_tally *tl, const kf_node *n);
void kf_tally_progress(kf_tally *tl, const kf_node *n);

#endif
