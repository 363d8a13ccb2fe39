/*
 * dispatch.h - the dispatchers export writes (dispatch.c: the C one and what both share;
 * dispatch_cuda.c: the CUDA host-mode one). Each takes the run's winners, the fallback
 * among them and the best node per visible shape (kf_record_best_shapes), and writes one
 * source file that calls the right winner by shape.
 */
#ifndef KF_EXPORT_DISPATCH_H
#define KF_EXPORT_DISPATCH_H

#include "ctok.h"
#include "../task/candidate.h"
#include "../util/util.h"

#include <jansson.h>
#include <stdint.h>

/* A node that wins a shape, or the fallback, with its text. */
typedef struct {
    int64_t id;
    char *text; /* the node's source */
    size_t len;
    char *params_json, *shapes_json;
    double speedup;
    char ext[8], hash[65];
} kf_winner;

/* The dispatcher's text into b; routes gets {sizes, node, predicate} per routed shape
 * and notes the shapes that could not be routed (w[fallback] runs there). KF_EUSAGE for
 * an argument type C cannot declare, KF_ENOMEM. */
kf_status kf_dispatch_c(kf_ctx *ctx, const kf_task *t, const char *run_dir, kf_winner *w, int nw,
                        int fallback, json_t *best, kf_buf *b, json_t *routes, json_t *notes);
/* The CUDA dispatcher into b, a host-mode file (dispatch_cuda.c); routes and notes as
 * for C. KF_EUSAGE with the reason when the task cannot have one. */
kf_status kf_dispatch_cuda(kf_ctx *ctx, const kf_task *t, const char *run_dir, kf_winner *w, int nw,
                           int fallback, json_t *best, kf_buf *b, json_t *routes, json_t *notes);

/* A node's parameters pinned as #define for a plain compiler (export's winner files too). */
void kf_dispatch_pinned(kf_buf *b, const char *params_json);

/* Shared by the two dispatchers. */
/* A task argument type's C name, or NULL. */
const char *kf_dispatch_ctype(kf_dtype t);
/* The predicate that picks the shape sizes out of the entry's integer scalar arguments,
 * into b; *exact: every size is such an argument itself. 0, or -1 when no argument tells
 * shapes apart. */
int kf_dispatch_predicate(const kf_task *t, json_t *sizes, kf_buf *b, int *exact);
/* The fallback's kforge:when, its parameters replaced by their values, into b. */
void kf_dispatch_when_header(kf_buf *b, const kf_winner *fb);
/* The function that makes winner x's launches (the CUDA dispatcher's), into b; ren: the
 * names renamed apart. */
typedef kf_status (*kf_dispatch_launcher)(kf_ctx *ctx, const kf_task *t, const kf_winner *x, const kf_names *ren,
                                          kf_buf *b);
/* Winner x's text into b, renamed apart, then launcher's function when given. */
kf_status kf_dispatch_section(kf_ctx *ctx, const kf_task *t, const char *run_dir, const kf_winner *x,
                              kf_buf *b, kf_dispatch_launcher launcher);

#endif
