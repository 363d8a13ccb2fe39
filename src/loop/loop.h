/*
 * loop.h - kforge run (docs/run.md): the optimisation loop over the run store. Its public
 * face is kf_run, kf_run_tree, kf_run_best, kf_run_next and kf_run_submit in kforge.h;
 * this header is what the rest of the library and the tests use of it. The files:
 *
 *   run.c        the driver: set-up, the loop's turns, the stop rules, the summary
 *   config.c     the options a run records, and what --resume takes back (a field table)
 *   proposers.c  the builtin and agent proposers behind proposer.h; tool.c: tool mode
 *   sched.c      --jobs N: evaluator threads, outcomes recorded in arrival order
 *   evaluate.c   one evaluation: private copy, check and timing, the Critic, the record
 *   tally.c      what each outcome adds to search, the proposers and the run's counts
 *   tree.c       kforge tree and best (a run's records read back: src/record/)
 *   memory.c     context packs and their lessons; prior.c: lessons as the builtin's prior
 *   spec.c       a template at a point, and specialisations; diagnose.c: failure classes
 *
 * The Critic (src/critic/) and export (src/export/) are modules of their own: the loop
 * calls the Critic; export reads runs through src/record/ and calls nothing of the loop.
 */
#ifndef KF_LOOP_H
#define KF_LOOP_H

#include "kforge.h"
#include "../critic/critic.h"
#include "../record/record.h"
#include "../search/builtin.h"
#include "../store/store.h"
#include "../util/util.h"

#include <jansson.h>
#include <stddef.h>

/* The template with each kforge:param list cut to the value point gives its name (spec.c). */
char *kf_loop_materialize(const char *text, size_t len, json_t *point, size_t *outlen);
/* A kept node's figures after the Critic's re-timings (retimed: the Critic's report's,
 * one array of shape records per re-timing against parent): the lowest implied speedup
 * per timed shape of v, with its interval, the first timing's as speedup_first /
 * ci95_first; v's shapes change, n's shapes_json and speedup become theirs (evaluate.c;
 * for tests). */
void kf_loop__conservative(kf_node *n, struct kf_verdict *v, const kf_node *parent, json_t *retimed);

/* Lessons as the builtin's prior (prior.c, docs/run.md "Lessons"). kf_loop_lessons_prior:
 * open the lessons database at path (KF_EUSAGE when it is missing, unreadable or not
 * SQLite), retrieve the lessons scoped to task t, give the builtin the settings their
 * actions name, and describe what applied as the run's `lessons` event JSON in *event
 * (caller frees). kf_loop_lessons_replay: apply such an event again (resume). */
struct kf_builtin;
kf_status kf_loop_lessons_check(kf_ctx *ctx, const char *path); /* the KF_EUSAGE cases alone */
kf_status kf_loop_lessons_prior(kf_ctx *ctx, const kf_task *t, const char *path, struct kf_builtin *b,
                                char **event);
kf_status kf_loop_lessons_replay(kf_ctx *ctx, const char *event, struct kf_builtin *b);
/* The run's `lessons` event JSON into *json (NULL: none; caller frees). Store errors. */
kf_status kf_loop_lessons_event(kf_store *st, char **json);
/* The lessons the builtin started from (the run's `lessons` event), one line into b;
 * nothing when the run has none. */
void kf_loop_lessons_text(kf_buf *b, kf_store *st);

/* Specialisation proposals (spec.c): per point that wins some visible shapes by more
 * than the noise (at least min_noise) over the compromise (kf_builtin_best), the template
 * at that point with a kforge:when line for the shapes where it wins. */
typedef struct {
    kf_point point, compromise;
    char *when; /* the domain: "n >= 65536", or the shapes pinned */
    char *text; /* the template at point, the kforge:when line last */
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
/* A specialisation node's note starts with KF_LOOP_SPEC_NOTE: kf_loop_is_spec is 1 for
 * one (its speedup is a geometric mean over its kforge:when domain only, so it is not the
 * run's best geomean, and it is no point of the builtin's walk). */
#define KF_LOOP_SPEC_NOTE "specialisation of node "
int kf_loop_is_spec(const kf_node *n);

/* The line (1-based) of a text's kforge:when directive, its expression into expr (cut
 * to n bytes; may be NULL), or 0 when it has none. */
int kf_loop_when_line(const char *text, size_t len, char *expr, size_t n);
/* Why a text contradicts the category it is proposed under: a kforge:when (which narrows
 * the task's domain) in anything but a specialisation, or a specialisation without one.
 * A message "PATH:LINE: ..." or "PATH: ..." (caller frees), or NULL when they agree (or
 * out of memory). Checked before any evaluation: nothing is compiled or timed. */
char *kf_loop_category_conflict(const char *text, size_t len, const char *category, const char *path);

/* A submitter's one-line description of its change, as the run keeps it: the first line
 * of in, control characters as spaces, trimmed, cut to KF_LOOP_DESC_MAX bytes (at a
 * character boundary). 0 with out filled (n > KF_LOOP_DESC_MAX), -1 when nothing is left. */
#define KF_LOOP_DESC_MAX 200
int kf_loop_description(const char *in, char *out, size_t n);
/* Record a node's description (a `description` event); none when desc is NULL or empty. */
kf_status kf_loop_describe(kf_store *st, int64_t node, const char *desc);

#endif
