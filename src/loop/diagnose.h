/*
 * diagnose.h - root-cause classes of failed nodes and the constraints they teach
 * (diagnose.c; docs/run.md "Failure classes and constraints").
 */
#ifndef KF_LOOP_DIAGNOSE_H
#define KF_LOOP_DIAGNOSE_H

#include "../store/store.h"
#include "../util/util.h"

#include <jansson.h>

/* X(id, name): the names are what the store and `kforge tree --json` say. */
#define KF_DIAG_CLASS_MAP(X)                        \
    X(COMPILE_SYNTAX, "compile/syntax")             \
    X(COMPILE_RESOURCE, "compile/resource_limit")   \
    X(COMPILE_SYMBOL, "compile/unknown_symbol")     \
    X(COMPILE_OTHER, "compile/other")               \
    X(CRASH_SIGNAL, "crash/signal")                 \
    X(CRASH_CUDA, "crash/cuda_error")               \
    X(NUMERIC_BOUNDARY, "numeric/boundary")         \
    X(NUMERIC_OVERFIT, "numeric/overfit")           \
    X(NUMERIC_ACCUMULATION, "numeric/accumulation") \
    X(NUMERIC_OTHER, "numeric/other")               \
    X(NUMERIC_STRESS, "numeric/stress_inputs")      \
    X(MEMORY_BOUNDS, "memory/out_of_bounds")        \
    X(TIMEOUT, "timeout")                           \
    X(SANDBOX, "sandbox_violation")                 \
    X(INTEGRITY, "integrity")                       \
    X(EVALUATION, "evaluation_failed")              \
    X(NO_CANDIDATE, "agent/no_candidate")           \
    X(OTHER, "other")

// clang-format off
typedef enum {
#define KF_X(id, name) KF_DIAG_##id,
    KF_DIAG_CLASS_MAP(KF_X)
#undef KF_X
    KF_DIAG_COUNT
} kf_diag_class;
// clang-format on

typedef struct {
    kf_diag_class cls;
    char detail[96];      /* "SIGSEGV", "CUDA_ERROR_ILLEGAL_ADDRESS", "8" (a divisor),
                             "fast_fma" (a symbol), the reason code; "" when none */
    char subject[96];     /* a boundary rule's sizes ("n", "m or n") or "tail" */
    char note[600];       /* one sentence: what went wrong, from what evidence */
    char constraint[400]; /* "" when the failure does not generalise */
    int64_t scope;        /* the constraint's: 0 the run, N the children of node N */
} kf_diag;

const char *kf_diag_class_name(kf_diag_class c);

/* Diagnose a finished node from its state, reasons, verdict JSON (the check's, as
 * `kforge check --json` or `bench --json` print it) and note. 0 with *out filled for a
 * failure (rejected, compile_failed, crashed, no_candidate), -1 for any other state. */
int kf_diag_node(const kf_node *n, kf_diag *out);

/* Diagnose n, record the diagnosis as a "diagnosis" event of the node, and add its
 * constraint to the store unless the same text is there already. Nothing for a node
 * that did not fail. Store errors are returned (detail on the store's ctx). */
kf_status kf_diag_record(kf_store *st, const kf_node *n);

/* When n's source (src_hash) is the source of an earlier node that failed, the note
 * that prunes n: "pruned: the same source as node N, which failed (class)"; with
 * passed_too, also of one that passed the check ("... (kept), already checked and timed;
 * its figures stand": tool mode, where resubmitting until a lucky figure proves nothing).
 * The node's category plays no part (the same text is the same source under any label),
 * and nodes never evaluated (no_candidate: an agent's empty answer, a file refused for
 * its category) are no earlier source. *same (may be NULL): the earlier node's id, 0 for
 * none. Caller frees. NULL when there is none (or on a store error: n is then evaluated). */
char *kf_diag_prune_note(kf_store *st, const kf_node *n, int passed_too, int64_t *same);

/* Record the circuit breaker's trips since *seen (kf_search_trips) as "breaker" events
 * of node (the outcome that tripped it: {proposer, category, failures, pause}) with a
 * line on stderr; *seen is updated. names[p]: proposer p's name. */
struct kf_search;
void kf_diag_breaker(kf_store *st, const struct kf_search *se, int *seen, int64_t node,
                     const char *const *names, int nnames);

/* The diagnoses and breaker events of a run, for tree: kf_diag_load, then
 * kf_diag_note (text) / kf_diag_json (tree --json), kf_diag_map_free. */
typedef struct kf_diag_map kf_diag_map;
kf_status kf_diag_load(kf_store *st, kf_diag_map **out);
void kf_diag_map_free(kf_diag_map *m);
/* The node's diagnosis as "class: note" (borrowed; NULL when none). */
const char *kf_diag_note(const kf_diag_map *m, int64_t node);
/* The node's diagnosis {class, detail, note, constraint} (new reference; NULL: none). */
json_t *kf_diag_json(const kf_diag_map *m, int64_t node);
/* Every breaker event in order ({proposer, category, failures, ...}); borrowed. */
json_t *kf_diag_breakers(const kf_diag_map *m);
/* One line per breaker event ("circuit breaker: ...") appended to b. */
void kf_diag_breakers_text(const kf_diag_map *m, kf_buf *b);

#endif
