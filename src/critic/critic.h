/*
 * critic.h - the Critic (critic.c, docs/run.md "The Critic"): the one stage that may let a
 * measured node become `kept`. It reads verdicts and asks its caller, through
 * kf_critic_env, for the task's fingerprint and for more timings; it calls nothing of
 * the loop's, so the loop, export and tests drive it alike.
 */
#ifndef KF_CRITIC_H
#define KF_CRITIC_H

#include "kforge.h"
#include "../check/verdict.h"

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

typedef enum { KF_CRITIC_APPROVE, KF_CRITIC_REJECT, KF_CRITIC_REVIEW } kf_critic_decision;
typedef struct {
    double max_speedup;     /* against the reference, on any shape: refused beyond (100) */
    double max_roofline;    /* roofline fraction refused beyond (1.05) */
    int retimes;            /* fresh worker pairs against the parent (2) ... */
    double decisive;        /* ... one when it and the first timing clear this over it (1.25; 0: off) */
    double suspicious_gain; /* a geomean gain over the parent at least this ... (1.5) */
    int tiny_lines;         /* ... from at most this many changed lines is verified again (3) */
} kf_critic_opts;
void kf_critic_opts_init(kf_critic_opts *o);
/* One "KEY=VALUE" (--critic); 0, or -1 with err set. */
int kf_critic_set(kf_critic_opts *o, const char *kv, char *err, size_t n);

typedef struct {
    const kf_critic_opts *o;
    double noise_floor;             /* a 95% interval must start above 1 + this (win_floor) */
    const char *locked_fingerprint; /* the run's */
    /* the task's fingerprint as on disk now into hex; 0, or -1 */
    int (*fingerprint_now)(void *arg, char hex[65]);
    /* check and time the file at path against vs (NULL: the reference); stricter: twice
     * the hidden shapes plus four and twice the rounds. 0 with the verdict in *out, or -1
     * with err set when no verdict was reached; *out is the caller's (kf_verdict_free)
     * either way. */
    int (*bench)(void *arg, const char *path, const char *vs, int stricter, struct kf_verdict *out, char *err,
                 size_t n);
    void *arg;
} kf_critic_env;

typedef struct {
    const char *category;                   /* the node's */
    const struct kf_verdict *result;        /* its check and timing against the reference */
    const struct kf_verdict *parent_result; /* the parent's (NULL for the root) */
    int beats_parent;                       /* some shape wins and beats the parent's speedup there */
    int64_t parent_id;                      /* 0: the root (the reference) */
    const char *path, *parent_path;         /* private copies (parent_path NULL for the root) */
    const char *source, *parent_source;     /* their texts (NULL when unknown) */
} kf_critic_case;

/* The decision, and *report: {decision, why, checks: [{check, outcome, detail}]}. */
kf_critic_decision kf_critic_judge(const kf_critic_env *env, const kf_critic_case *c, json_t **report);
const char *kf_critic_name(kf_critic_decision d);

/* 1 for a rejected bench result (or verification) whose every reason is
 * timing_mismatch: the two clocks disagreed, and one more timing in fresh workers decides
 * (the Critic's re-timings, the loop's first timing and export's verification alike). */
int kf_critic_timing_only(const struct kf_verdict *res);

#endif
