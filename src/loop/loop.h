/*
 * loop.h - kforge run (docs/run.md): the optimisation loop over the run store, the
 * search policy and the proposers. Its public face is kf_run, kf_run_tree, kf_run_best,
 * kf_run_next, kf_run_submit and kf_run_export in kforge.h.
 */
#ifndef KF_LOOP_H
#define KF_LOOP_H

#include "kforge.h"
#include "../search/builtin.h"
#include "../store/store.h"

#include <jansson.h>
#include <stddef.h>

/* The template with each kforge:param list cut to the value point gives its name. */
char *kf_loop_materialize(const char *text, size_t len, json_t *point, size_t *outlen);

/* Per visible shape, the kept node (confirmed by the Critic) with the highest speedup
 * there: [{sizes, node, speedup, win}] in the order shapes are first seen, or
 * NULL when out of memory (caller decrefs). `best` and `export` both use it. */
json_t *kf_loop_best_shapes(const kf_node *nodes, size_t n);

/* Every node of a run, copied (verdict_json left out: large and unused by readers of
 * the whole tree): kf_store_each_node(st, kf_loop_collect, &vec), then kf_loop_vec_free. */
typedef struct {
    kf_node *v;
    size_t n, cap;
} kf_node_vec;
int kf_loop_collect(void *vec, const kf_node *n);
void kf_loop_vec_free(kf_node_vec *a);

/* 1 for a rejected bench result (or verification) whose every reason is
 * timing_mismatch: the two clocks disagreed, and one more timing in fresh workers decides. */
int kf_loop_timing_only(json_t *res);

/* Specialisation proposals (spec.c): per point that wins some visible shapes by more
 * than the noise (at least min_noise) over the compromise (kf_builtin_best), the template
 * at that point with a kforge:when line for the shapes where it wins. */
typedef struct {
    kf_point point, compromise;
    char *when;        /* the domain: "n >= 65536", or the shapes pinned */
    char *text;        /* the template at point, the kforge:when line last */
    size_t len;
    char *params_json; /* the point, as builtin nodes record it */
    char *shapes;      /* the visible shapes it wins: "n=65536; ..." */
    double gain;       /* the least compromise/winner time ratio over them */
} kf_spec;
/* *out: *n specialisations (none when one point serves every shape, the template has a
 * kforge:when, or nothing was measured); free with kf_loop_specs_free. KF_ENOMEM. */
kf_status kf_loop_specs(kf_ctx *ctx, const kf_task *t, const kf_builtin *bi, const char *tmpl, size_t tlen,
                        double min_noise, kf_spec **out, int *n);
void kf_loop_specs_free(kf_spec *s, int n);
/* The expression of the first kforge:when in s, or NULL (caller frees). */
char *kf_loop_when_of(const char *s);

#endif
