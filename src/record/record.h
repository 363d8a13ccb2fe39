/*
 * record.h - a run's records read back (record.c): its nodes copied out, its seals, the
 * best node per shape and a node's first message. A module of its own below the loop and
 * export: the readers of a run (tree, best, tool mode, resume in the loop; export) share
 * it, and export needs nothing of the loop.
 */
#ifndef KF_RECORD_H
#define KF_RECORD_H

#include "kforge.h"
#include "../store/store.h"
#include "../util/util.h"

#include <jansson.h>
#include <stddef.h>

/* Every node of a run, copied (verdict_json left out: large and unused by readers of
 * the whole tree): kf_store_each_node(st, kf_record_collect, &vec), then kf_record_vec_free. */
typedef struct {
    kf_node *v;
    size_t n, cap;
} kf_node_vec;
int kf_record_collect(void *vec, const kf_node *n);
void kf_record_vec_free(kf_node_vec *a);

/* The run's seals for tree, best, export and resume (docs/run.md "Seals"):
 * {"seals": "sealed"|"unsealed"|"key missing", "key": path|null, "tampered": [ids]}
 * (the caller's), and when b is given a warning line into it for tampered nodes, an
 * unsealed run or a missing key. */
json_t *kf_record_integrity(kf_store *st, const kf_node *v, size_t n, kf_buf *b);

/* A run whose key is elsewhere, or whose own row was edited, takes no more outcomes:
 * resume and tool mode say so (KF_EUSAGE, with the run directory dir) before any work. */
kf_status kf_record_seals_usable(kf_ctx *ctx, const char *dir, kf_store *st);

/* Per visible shape, the kept node (confirmed by the Critic) with the highest speedup
 * there: [{sizes, node, speedup, win}] in the order shapes are first seen, or
 * NULL when out of memory (caller decrefs). `best` and `export` both use it. */
json_t *kf_record_best_shapes(const kf_node *nodes, size_t n);

/* The first reason's message of a node's verdict, else its note, else NULL (caller
 * frees): what a context pack tells of a failure, and what kforge submit says. */
char *kf_record_first_message(const kf_node *n);

/* A system run's record (sysrun.c, docs/system.md "The record"). kf_sysrun_is: dir holds
 * system.json. kf_sysrun_load: *rec the record, *integrity {"seals": "sealed"|"tampered"|
 * "unsealed"|"key missing", "key": path|null, "pipeline_matches": bool (when recorded)}
 * (both the caller's), a warning line into warn (may be NULL) unless sealed. KF_EIO when
 * there is no record, KF_ETASK when it is not a JSON object. */
int kf_sysrun_is(const char *dir);
kf_status kf_sysrun_load(kf_ctx *ctx, const char *dir, json_t **rec, json_t **integrity, kf_buf *warn);

#endif
