/*
 * builtin.h - the builtin proposer: a seeded, deterministic walk over a template's
 * kforge:param space (docs/run.md "Proposers").
 */
#ifndef KF_BUILTIN_H
#define KF_BUILTIN_H

#include "../task/candidate.h"

typedef struct kf_builtin kf_builtin;

/* A point of the space: the index of each parameter's value in its declared list. */
typedef struct {
    int v[KF_MAX_PARAMS];
} kf_point;

typedef enum {
    KF_BUILTIN_OK,             /* built, correct and timed: times are given */
    KF_BUILTIN_REJECTED,       /* built but rejected (wrong result, timeout...): tried, no lesson */
    KF_BUILTIN_COMPILE_FAILED, /* a lesson: may exclude a parameter value */
    KF_BUILTIN_CRASHED         /* a lesson: may exclude a parameter value */
} kf_builtin_outcome;

typedef enum { KF_MOVE_DEFAULT, KF_MOVE_NEIGHBOUR, KF_MOVE_RESTART } kf_move;

typedef struct {
    double ns;        /* the candidate's time on one visible shape */
    double rel_noise; /* relative half-width of its interval (0 if unknown) */
} kf_shape_time;

/* Parse the template at path (directives through kf_candidate_load; t may be a task
 * without sizes when only the parameters matter). KF_EUSAGE when it declares no parameter,
 * a "# category" that is not one, or a space over 2^32 points; detail on ctx. Free with
 * kf_builtin_free. */
kf_status kf_builtin_new(kf_ctx *ctx, const kf_task *t, const char *path, uint64_t seed, kf_builtin **out);
void kf_builtin_free(kf_builtin *b);

int kf_builtin_nparams(const kf_builtin *b);
const char *kf_builtin_param_name(const kf_builtin *b, int i);
/* How many values parameter i declares, and the j-th as declared (NULL out of range). */
int kf_builtin_param_nvalues(const kf_builtin *b, int i);
const char *kf_builtin_param_value(const kf_builtin *b, int i, int j);
/* The search category of moves along parameter i ("# category", else from the name). */
int kf_builtin_param_category(const kf_builtin *b, int i);
/* Bit c set when some parameter's moves are of category c (for kf_search_offer). */
unsigned kf_builtin_categories(const kf_builtin *b);
/* Points in the declared space (product of the value lists, constraints not applied). */
uint64_t kf_builtin_space(const kf_builtin *b);

/* The next point to evaluate into *out; it is never proposed again. from NULL: the
 * proposer's own strategy (the template's defaults first, then neighbours of the best
 * points so far - the overall best, each shape's best, then the rest by time - with a
 * restart at an untried random point one time in ten or when no neighbour is left).
 * from a point: an untried neighbour of it along a parameter of category (-1: any), no
 * restart. A neighbour moves one parameter to the adjacent value in numeric order (the
 * declared order for non-numeric values), stepping over values that fail kforge:require.
 * Points that fail kforge:require or a learnt constraint are never proposed. *move and
 * *move_cat (may be NULL) say what it was. 0, or -1 when nothing is left. */
int kf_builtin_next(kf_builtin *b, const kf_point *from, int category, kf_point *out, kf_move *move,
                    int *move_cat);
/* A random untried allowed point (a child of the root, not of a tried point): the move the
 * loop makes for a (root, category) action or when every action is exhausted. 0, or -1
 * when nothing is left. */
int kf_builtin_restart(kf_builtin *b, kf_point *out);
/* Record the outcome at p (proposed or not); times: nshapes per visible shape when OK,
 * the same count every time. 0, or -1 on a shape-count mismatch or out of memory. */
int kf_builtin_observe(kf_builtin *b, const kf_point *p, kf_builtin_outcome o, const kf_shape_time *times,
                       int nshapes);

/* A prior from lessons (docs/run.md "Lessons"): add weight to value j of parameter i
 * (declared order). Positive: the walk's first point takes, per parameter, the value of
 * the greatest positive weight (where none, the default, or when the default has a
 * negative weight the first declared value without one), and restarts try the other
 * favoured values first; negative: points with that value are proposed only when the
 * move has no other candidate left. Call before the first proposal. Without a call the
 * walk is unchanged. 0, or -1 for an index out of range or out of memory. */
int kf_builtin_prior(kf_builtin *b, int i, int j, double weight);
/* The prior's first point into *out (the defaults where the prior says nothing); 1 when
 * it differs from the template's defaults. */
int kf_builtin_prior_start(const kf_builtin *b, kf_point *out);
/* 1 when the walk's first point (the defaults, or the prior's start) is allowed and was
 * never proposed or observed: kf_builtin_next(b, NULL, ...) proposes it next. */
int kf_builtin_start_untried(const kf_builtin *b);
/* 1 when p satisfies every kforge:require and learnt constraint. */
int kf_builtin_allowed(const kf_builtin *b, const kf_point *p);
/* 1 when p was proposed or observed. */
int kf_builtin_tried(const kf_builtin *b, const kf_point *p);
/* The measured point with the least geometric-mean time over shapes. 0, or -1 if none. */
int kf_builtin_best(const kf_builtin *b, kf_point *out, double *geomean_ns);
/* Specialisation: each visible shape's fastest measured point into per_shape[nshapes],
 * and gain[s] (may be NULL) = the compromise's (kf_builtin_best) time on s over the
 * winner's. Returns how many shapes' winners beat the compromise by more than the noise
 * (the sum of both relative noises, at least min_noise): 0 means one point serves all;
 * > 0 means the per-shape winners should become kforge:when variants. -1 if nothing was
 * measured or nshapes is not the observed count. */
int kf_builtin_best_per_shape(const kf_builtin *b, double min_noise, kf_point *per_shape, double *gain,
                              int nshapes);

/* The same, and beats[s] (may be NULL) = 1 where shape s's winner beats the compromise by
 * more than the noise (the shapes a specialisation is for). */
int kf_builtin_shape_winners(const kf_builtin *b, double min_noise, kf_point *per_shape, double *gain,
                             int *beats, int nshapes);

/* Learnt constraints: how many, and the i-th as text ("BM != 64") into buf. */
int kf_builtin_nlearnt(const kf_builtin *b);
const char *kf_builtin_learnt(const kf_builtin *b, int i, char *buf, size_t n);
/* p as "NAME=VALUE" selections for kf_check (sel[i] point into b; valid until free).
 * Returns the count. */
int kf_builtin_sel(const kf_builtin *b, const kf_point *p, const char **sel, char *buf, size_t n);
/* p as a JSON object ({"BM": 32, "KIND": "a"}) into buf. Returns buf. */
char *kf_builtin_json(const kf_builtin *b, const kf_point *p, char *buf, size_t n);

#endif
