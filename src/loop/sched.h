/*
 * sched.h - several evaluations at once (sched.c, kforge run --jobs N): where proposed
 * nodes go to be evaluated. With one job a node is evaluated where it is handed over;
 * with more, evaluator threads take them and the main thread records the outcomes in the
 * order they arrive (kf_tally_record).
 */
#ifndef KF_LOOP_SCHED_H
#define KF_LOOP_SCHED_H

#include "eval.h"
#include "tally.h"

#include <pthread.h>

typedef struct {
    int64_t id;
    int category, proposer; /* search's pending try, undone when the outcome arrives */
    char *params_json;      /* the node's parameters, while it is in flight */
} kf_flight;

typedef struct {
    int64_t id;
    kf_status st;
    kf_node n;      /* the outcome as recorded (st KF_OK) */
    char err[1024]; /* the evaluator's message (st not KF_OK) */
} kf_outcome;

typedef struct kf_evaluator kf_evaluator;

typedef struct kf_sched {
    kf_eval *ev;     /* the main thread's */
    kf_tally *tally; /* where outcomes are recorded */
    int jobs;
    kf_flight fl[KF_RUN_MAX_JOBS]; /* in flight: main thread only */
    int n;
    pthread_mutex_t mu; /* guards todo, done, quit */
    pthread_cond_t cv;  /* work for an evaluator: one is woken per node handed over */
    pthread_cond_t done_cv; /* an outcome for the main thread */
    int64_t todo[KF_RUN_MAX_JOBS];
    int ntodo;
    kf_outcome done[KF_RUN_MAX_JOBS];
    int ndone, quit;
    kf_evaluator *evs;
    int nev;          /* evaluators started */
    uint64_t wait_ns; /* the main thread's time waiting for outcomes */
    int started;
} kf_sched;

/* Start the evaluators (none for jobs 1): each with its own kf_ctx, task and store
 * connection, copied from ev. KF_OK, or a status with the detail on ev->ctx
 * (kf_sched_stop then still frees what was made). */
kf_status kf_sched_start(kf_sched *s, kf_eval *ev, kf_tally *tally, int jobs);
/* Evaluate node id: here and now with one job, else by an evaluator (after waiting for a
 * free one); search counts it as a pending try until its outcome is recorded. */
kf_status kf_sched_put(kf_sched *s, int64_t id);
/* Wait for the next outcome and record it. Its status: an evaluation that reached no
 * outcome stops the run as with one job (detail on ev->ctx). */
kf_status kf_sched_wait(kf_sched *s);
/* Wait for the evaluators to finish what they were given, then free them; their time
 * inside kf_bench is added to ev's. Accepts a scheduler never started. */
void kf_sched_stop(kf_sched *s);

#endif
