/*
 * tree.h - a run's nodes as kforge tree shows them (tree.c), shared with kforge submit,
 * which answers with the submitted node's line.
 */
#ifndef KF_LOOP_TREE_H
#define KF_LOOP_TREE_H

#include "diagnose.h"
#include "../record/record.h"

#include <jansson.h>

/* The Critic's last decision per node, {"ID": {decision, why, advisory?, retimings?}}
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
