/*
 * tree.h - a run's nodes as kforge tree shows them (tree.c), shared with kforge submit,
 * which answers with the submitted node's line.
 */
#ifndef KF_LOOP_TREE_H
#define KF_LOOP_TREE_H

#include "diagnose.h"
#include "../record/record.h"

#include <jansson.h>

/* A run's records as tree, best and the report read them: its store, its nodes (in id
 * order), the failures' diagnoses (NULL when they could not be read), the Critic's
 * decisions (kf_tree_critics) and per node its kforge:when (whens[i] NULL: none, or it
 * did not pass the check). kf_tree_load: KF_OK and *d the caller's (kf_tree_data_free),
 * else the store's error on ctx and nothing to free. */
typedef struct {
    kf_store *st;
    kf_node_vec a;
    kf_diag_map *dm;
    json_t *critics;
    char **whens;
} kf_tree_data;
kf_status kf_tree_load(kf_ctx *ctx, const char *dir, kf_tree_data *d);
void kf_tree_data_free(kf_tree_data *d);
/* The node of that id among a's nodes, which are in id order (kf_store_each_node): a
 * binary search, so a 100,000-node tree stays linear. NULL when none (0: the root). */
const kf_node *kf_tree_find(const kf_node_vec *a, int64_t id);

/* The Critic's last decision per node, {"ID": {decision, why, veto?, advisory?, retimings?}}
 * (veto: true when it refused the node for what it is: integrity, plausibility, a
 * suspicious gain or a review, rather than for an unconfirmed gain)
 * (retimings: each re-timing against the parent, {geomean, best, best_lo, floor}), from the
 * run's critic events, and the submitters' descriptions, {"descriptions": {"ID": text}}
 * (caller decrefs). */
json_t *kf_tree_critics(kf_store *st);
/* A node as tree --json gives it; parent: its parent's node (NULL: the root, or unknown),
 * for its speedups against the parent; when: its kforge:when (NULL: none, or not read). */
json_t *kf_tree_node_json(const kf_node *n, const kf_node *parent, const char *when, json_t *critics);
/* The children of parent among a's nodes (in id order, as kf_store_each_node gives them),
 * depth levels in, and theirs below them, one line each into b, each shape against the
 * reference and, when its parent is among a's nodes, against the parent. whens[i] (NULL, or an entry NULL):
 * the domain of a->v[i], shown as what it is safe for; dm: the failures' diagnoses (may be NULL). */
void kf_tree_text(kf_buf *b, const kf_node_vec *a, char **whens, int64_t parent, int depth, json_t *critics,
                  const kf_diag_map *dm);

#endif
