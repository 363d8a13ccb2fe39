/*
 * proposer.h - the loop's proposers behind one interface (docs/run.md): the builtin over
 * a template's kforge:param space and an agent (cmd: or openai:, through kf_agent) in
 * proposers.c, tool mode (kforge next/submit, a model outside the process) in tool.c.
 *
 * Search picks an action (a parent, a category, a proposer); the proposer's propose
 * records a child of that parent in the store and says what is to happen to it: to be
 * evaluated (the driver hands it to the scheduler), already finished (a text that failed
 * before, an agent that gave nothing: the driver's tally records it), or deferred (tool
 * mode: a pending action, answered later by kforge submit). A proposer observes every
 * finished node of the run, replayed ones included, and may add to the run after an
 * outcome is recorded. The driver calls the kf_proposer_* wrappers, never the slots.
 */
#ifndef KF_LOOP_PROPOSER_H
#define KF_LOOP_PROPOSER_H

#include "eval.h"
#include "memory.h"
#include "../search/search.h"

/* Search's proposer numbers: fixed, so a run's statistics mean the same whoever reads
 * them (kforge run, kforge next). */
enum { KF_PROPOSER_BUILTIN = 0, KF_PROPOSER_AGENT = 1, KF_PROPOSER_TOOL = 2, KF_PROPOSER_COUNT = 3 };
extern const char *const kf_proposer_names[KF_PROPOSER_COUNT]; /* "builtin", "agent", "tool" */
/* The number of the proposer a node names (cmd and openai are the agent's). */
int kf_proposer_index(const char *name);

/* What a proposal made. */
typedef struct {
    int64_t id;       /* the node it recorded (0: none, choose again) */
    int evaluate;     /* 1: the node waits to be evaluated; 0: it is finished (or none) */
    int64_t pending;  /* tool mode: the pending action it recorded (0: none) */
    const char *stop; /* not NULL: the run stops, for this reason */
    int spent;        /* it has nothing left to propose (stop says so): with another
                         proposer in the run, search stops offering it instead */
} kf_proposed;

struct kf_tally;
struct kf_sched;
/* What proposers work with: the main thread's evaluation context (task, store,
 * options), the run's tally (search, counts) and scheduler (NULL in tool mode), the
 * lessons for context packs (NULL: none). */
typedef struct {
    kf_eval *ev;
    struct kf_tally *tally;
    struct kf_sched *sched;
    kf_loop_memory *mem;
} kf_proposer_env;

typedef struct kf_proposer kf_proposer;
typedef struct {
    const char *name;
    /* a child of a->parent along a->category, recorded; *out says what came of it */
    kf_status (*propose)(kf_proposer *p, const kf_action *a, kf_proposed *out);
    /* optional: before search picks, a proposal of its own (the builtin's
     * specialisations); out->id 0 when it has none */
    kf_status (*unprompted)(kf_proposer *p, kf_proposed *out);
    /* optional: a finished node of the run (replayed: read back at the start) */
    void (*observe)(kf_proposer *p, const kf_node *n, int replayed);
    /* optional: after a fresh outcome is recorded, what the proposer adds to the run */
    void (*recorded)(kf_proposer *p, const kf_node *n);
    void (*free)(kf_proposer *p);
} kf_proposer_i;

struct kf_proposer {
    const kf_proposer_i *iface;
    int index;                  /* search's proposer number */
    unsigned categories;        /* the categories it offers search (a bit each) */
    const kf_proposer_env *env; /* borrowed */
};

kf_status kf_proposer_propose(kf_proposer *p, const kf_action *a, kf_proposed *out);
kf_status kf_proposer_unprompted(kf_proposer *p, kf_proposed *out);
void kf_proposer_observe(kf_proposer *p, const kf_node *n, int replayed);
void kf_proposer_recorded(kf_proposer *p, const kf_node *n);
void kf_proposer_free(kf_proposer *p); /* accepts NULL */

/* The template the builtin walks: candidates/param.<ext> into out, for the first backend
 * (registry.h) whose extension names a file there; the backend's index, or
 * -1 when the task has none. */
int kf_proposer_template(const kf_task *t, char *out, size_t n);
/* The builtin proposer over the template at tpath (kf_proposer_template's ext), walking
 * from seed. KF_EUSAGE (a bad template), KF_EIO, KF_ENOMEM. */
kf_status kf_proposer_builtin_new(const kf_proposer_env *env, const char *tpath, int ext, uint64_t seed,
                                  kf_proposer **out);
/* Lessons as the builtin's prior (prior.c): cmd_lessons, the database the command names
 * (NULL or "none": none), is retrieved and recorded as the run's `lessons` event and said
 * on stderr; on resume the recorded event is applied again (or, for a run killed before
 * it was written, the database the run recorded, recorded_lessons, is). */
kf_status kf_proposer_builtin_prior(kf_proposer *p, const char *cmd_lessons, int resume,
                                    const char *recorded_lessons);
/* An agent proposer around ag (the proposer's from now on, also on error). */
kf_status kf_proposer_agent_new(const kf_proposer_env *env, kf_agent *ag, kf_proposer **out);

/* Search over the run's proposers, every setting from o (--search, --target), none
 * offered yet (the caller offers). KF_EUSAGE, KF_ENOMEM. */
kf_status kf_proposer_search(kf_ctx *ctx, const kf_run_opts *o, kf_search **out);

#endif
