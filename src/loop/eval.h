/*
 * eval.h - one evaluation of a node (evaluate.c): its private copy checked and timed
 * against the reference, the Critic's decision, the outcome recorded in one transaction.
 * A kf_eval is what that needs; the main thread has one, and each --jobs evaluator a
 * copy with its own context, task and store connection.
 */
#ifndef KF_LOOP_EVAL_H
#define KF_LOOP_EVAL_H

#include "kforge.h"
#include "../critic/advisor.h"
#include "../critic/critic.h"
#include "../scale/scale.h"
#include "../store/store.h"

#include <stdint.h>

typedef struct kf_eval {
    kf_ctx *ctx;
    const kf_run_opts *o; /* the options in effect (checks' and timings' settings) */
    kf_task *t;
    kf_store *st;
    char run_dir[4096];
    const char *display;   /* submit: the file's own name, for the evaluated copy (messages) */
    kf_critic_opts critic; /* the Critic's settings (--critic) */
    double noise_floor;    /* a kept win's 95% interval starts above 1 + this */
    kf_advisor *advisor;   /* --critic-agent: a second opinion on approved nodes (the
                              evaluators share the main thread's: one review at a time) */
    uint64_t bench_ns;     /* time inside kf_bench (compiles, checks, timing) */
    int screen;            /* KF_EVAL_FULL, KF_EVAL_SCREEN (submit --screen) or
                              KF_EVAL_SCREEN_FIRST (run --screen-first) */
    struct kf_pool *pool;  /* scale-out: checks and timings on its workers (NULL: here) */
    int64_t node;          /* the node being evaluated, and its kf_bench calls so far: */
    int nbench;            /* the evaluation ids sent to workers (NODE.K) */
    struct {               /* with a pool, the private copies are texts held here: a worker */
        char path[4400];   /* gets the text, so no file is written (their names are what */
        char *text;        /* the worker names them by; path "" when the slot is free) */
        size_t len;
    } copies[2];
    char timing_lock[4200]; /* tool mode: RUN/timing.lock, the per-CPU timing locks that
                               concurrent submits to the run share ("": none) */
    int env_failed;        /* this evaluation failed for the machine, not the candidate */
    char env_err[1400];    /* what failed, when env_failed */
} kf_eval;

/* How kf_eval_evaluate judges a node. A screening is the full check and one short timing
 * (KF_SCREEN_RUNS rounds per shape, no minimum time) without the Critic: a node that
 * passes is `screened`, its figures labelled so and never kept. */
enum { KF_EVAL_FULL, KF_EVAL_SCREEN, KF_EVAL_SCREEN_FIRST };
#define KF_SCREEN_RUNS 8
/* A full evaluation's timing stops a shape once the speedup's interval is within +/- 1%
 * of it (kf_opts.bench_precision; run and submit --precision change it) */
#define KF_LOOP_PRECISION 0.01

/* The Critic's settings: its defaults, then each of r->o's --critic KEY=VALUE; the noise
 * floor is the checker's own (kf_opts.win_floor); the advisory reviewer when
 * --critic-agent names one (r->advisor, the caller's: kf_advisor_free). KF_EUSAGE. */
kf_status kf_eval_setup(kf_eval *r);

/* Evaluate node n (recorded as proposed) against its parent (NULL: the root): check and
 * time it, let the Critic decide whether it is kept, record the outcome (store errors
 * are returned; a failed evaluation is the node's state, crashed, not an error). With
 * r->screen KF_EVAL_SCREEN a node that passes the check is `screened`; with
 * KF_EVAL_SCREEN_FIRST it is screened, and evaluated in full only when its screened
 * figures beat its parent's on some shape (kf_eval_promising); the screening's figures
 * are then a `screen` event of the node. An evaluation the environment failed
 * (kf_bench's KF_EIO, KF_ENOMEM, KF_EBACKEND or KF_EINTERNAL: a full disk, no compiler,
 * no process or thread could start, or the private copy could not be written) records
 * nothing - the node stays unfinished, for resume - and returns KF_EENV saying what
 * failed and where. */
kf_status kf_eval_evaluate(kf_eval *r, kf_node *n, const kf_node *parent);
/* 1 when some shape of v (a screening's verdict) has a speedup above its parent's there
 * (the reference's 1 for a child of the root) by r->o->keep_margin: a screened node worth
 * a full evaluation. Its interval is not asked for: a few rounds' is wide. */
int kf_eval_promising(const kf_eval *r, const struct kf_verdict *v, const kf_node *parent);
/* Evaluate node id of r's store: its outcome into *n (caller frees with kf_node_free,
 * also on error). KF_EUSAGE for a node changed by hand while it waited. */
kf_status kf_eval_node(kf_eval *r, int64_t id, kf_node *n);

/* The wall clock in seconds, as nodes record created and finished. */
double kf_eval_now(void);

#endif
