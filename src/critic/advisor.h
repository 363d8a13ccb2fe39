/*
 * advisor.h - the optional advisory critic (advisor.c): an agent's second opinion on a
 * node the Critic approved, recorded, never deciding.
 */
#ifndef KF_ADVISOR_H
#define KF_ADVISOR_H

#include "kforge.h"

#include <jansson.h>
#include <stdint.h>

typedef struct kf_advisor kf_advisor;
typedef struct {
    int64_t node_id, parent_id;
    const char *task_dir, *task_json;
    const char *source, *parent_source; /* parent_source NULL: the reference */
    json_t *shapes;                     /* per-shape speedups against the reference */
    json_t *report;                     /* the Critic's report */
} kf_advisor_case;
kf_status kf_advisor_new(kf_ctx *ctx, const char *spec, double timeout_s, kf_advisor **out);
/* {agent, opinion: approve|concern|unclear|none, text | error, tokens_in, tokens_out,
 * seconds}; *tokens grows by the tokens used. Thread-safe (one review at a time). */
json_t *kf_advisor_review(kf_advisor *a, const kf_advisor_case *c, int64_t *tokens);
void kf_advisor_free(kf_advisor *a);

#endif
