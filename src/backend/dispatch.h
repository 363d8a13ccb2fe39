/*
 * dispatch.h - what the backends' dispatcher slots (backend.h: export's dispatcher; the C
 * one in c/dispatch.c, the CUDA host-mode one in cuda/dispatch.c) share (dispatch.c).
 * Each slot takes the run's winners, the fallback among them and the best node per
 * visible shape, and writes one source file that calls the right winner by shape.
 */
#ifndef KF_BACKEND_DISPATCH_H
#define KF_BACKEND_DISPATCH_H

#include "backend.h"
#include "ctok.h"
#include "../task/candidate.h"
#include "../util/util.h"

#include <stdint.h>

/* A node's parameters pinned as #define for a plain compiler (export's winner files too). */
void kf_dispatch_pinned(kf_buf *b, const char *params_json);

/* Shared by the dispatcher slots. */
/* A shape's sizes as "rows=256<sep>cols=1024" into out (whole items only). */
void kf_dispatch_sizes_text(const kf_best_shape *sizes, const char *sep, char *out, size_t n);
/* A task argument type's C name, or NULL. */
const char *kf_dispatch_ctype(kf_dtype t);
/* The predicate that picks the shape sizes out of the entry's integer scalar arguments,
 * into b; *exact: every size is such an argument itself. 0, or -1 when no argument tells
 * shapes apart. */
int kf_dispatch_predicate(const kf_task *t, const kf_best_shape *sizes, kf_buf *b, int *exact);
/* Winner w's kforge:when as a C predicate over the entry's integer scalar arguments, into
 * b ("cols == 768" -> "(int64_t)(cols) == 768"): each size it names must be such an
 * argument itself, its template parameters become their values, and it may divide only
 * by a non-zero number. 0, or -1 when w has no kforge:when or it cannot be written so
 * (w is then routed by its exact shapes alone). */
int kf_dispatch_domain(const kf_task *t, const kf_winner *w, kf_buf *b);
/* One test of a dispatcher's entry: winner wi runs where pred holds. label: the shape
 * ("rows=256, cols=768") of an exact-shape route, or the winner's kforge:when of a
 * domain route (domain 1). */
typedef struct {
    int wi, domain;
    char *pred, *label;
} kf_route;
/* The tests of a dispatcher's entry, in order (caller frees with kf_dispatch_plan_free):
 * each visible shape's winner by its exact shape (best, nbest of them), then each winner
 * with a kforge:when the arguments do not pin over its whole domain. d gets their
 * records (a shape's index in best, or the domain) and a note for each shape that goes
 * to the fallback, and why; used[i] is set for every winner routed (the fallback's is
 * the caller's). 0, or -1 when out of memory. */
int kf_dispatch_plan(const kf_task *t, const kf_winner *w, int nw, int fallback, const kf_best_shape *best,
                     int nbest, int *used, kf_route **out, int *nout, kf_dispatch_out *d);
void kf_dispatch_plan_free(kf_route *r, int n);
/* The fallback's kforge:when, its parameters replaced by their values, into b. */
void kf_dispatch_when_header(kf_buf *b, const kf_winner *fb);
/* The function that makes winner x's launches (the CUDA dispatcher's), into b; ren: the
 * names renamed apart. */
typedef kf_status (*kf_dispatch_launcher)(kf_ctx *ctx, const kf_task *t, const kf_winner *x,
                                          const kf_names *ren, kf_buf *b);
/* Winner x's text into b, renamed apart, then launcher's function when given. */
kf_status kf_dispatch_section(kf_ctx *ctx, const kf_task *t, const char *run_dir, const kf_winner *x,
                              kf_buf *b, kf_dispatch_launcher launcher);

#endif
