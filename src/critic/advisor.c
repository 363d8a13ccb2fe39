/*
 * advisor.c - the optional advisory critic (docs/run.md, "The Critic"): an agent
 * (cmd:'COMMAND' or openai:MODEL, through the agent interface) asked for a second opinion
 * on a node the Critic has approved. It sees the task, the parent's and the node's
 * sources, the speedups and the Critic's checks, and answers APPROVE or CONCERN with
 * reasons. Its answer is recorded beside the Critic's decision and shown by `kforge tree`;
 * it never changes the decision: the mechanical checks keep the veto.
 */
#include "advisor.h"

#include "../agent/agent.h"
#include "../util/util.h"

#include <ctype.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct kf_advisor {
    kf_agent *ag;
    char spec[512];
    pthread_mutex_t mu; /* one review at a time (--jobs evaluators share it) */
};

kf_status kf_advisor_new(kf_ctx *ctx, const char *spec, double timeout_s, kf_advisor **out) {
    *out = NULL;
    kf_advisor *a = calloc(1, sizeof *a);
    if (!a) return kf__err(ctx, KF_ENOMEM, "out of memory");
    kf_agent_opts ao;
    kf_agent_opts_init(&ao);
    if (timeout_s > 0) ao.timeout_s = timeout_s;
    kf_status st = kf_agent_new(ctx, spec, &ao, &a->ag);
    if (st) {
        free(a);
        return kf__err(ctx, st, "--critic-agent %s: %s", spec, kf_errmsg(ctx));
    }
    snprintf(a->spec, sizeof a->spec, "%s", spec);
    pthread_mutex_init(&a->mu, NULL);
    *out = a;
    return KF_OK;
}

void kf_advisor_free(kf_advisor *a) {
    if (!a) return;
    kf_agent_free(a->ag);
    pthread_mutex_destroy(&a->mu);
    free(a);
}

static const char review_system[] =
    "You review changes in kforge's kernel optimisation loop. The candidate below passed kforge's "
    "correctness checks (visible, hidden and edge shapes, fresh random inputs, poisoned outputs) and "
    "was timed faster than its parent. Look for ways the speed-up could still be false or fragile: "
    "work skipped for shapes or values the checks may not cover, results kept between calls, lowered "
    "precision, dependence on input values or on how it is timed, undefined behaviour that happens "
    "to work. Answer with one fenced code block without a language tag whose first line is APPROVE "
    "or CONCERN, followed by at most ten lines of reasons.";

/* APPROVE / CONCERN as the first word of the answer (after fences and spaces). */
static const char *opinion_of(const char *t) {
    if (!t) return "unclear";
    while (*t && (isspace((unsigned char)*t) || *t == '`' || *t == '*' || *t == '#')) t++;
    if (!strncasecmp(t, "approve", 7)) return "approve";
    if (!strncasecmp(t, "concern", 7)) return "concern";
    return "unclear";
}

json_t *kf_advisor_review(kf_advisor *a, const kf_advisor_case *c, int64_t *tokens) {
    kf_buf p;
    kf_buf_init(&p, 4u << 20);
    kf_buf_printf(&p, "## The task (task.json)\n\n%s\n\n", c->task_json ? c->task_json : "(unavailable)");
    if (c->parent_source)
        kf_buf_printf(&p, "## The parent (node %lld)\n\n```\n%s\n```\n\n", (long long)c->parent_id,
                      c->parent_source);
    else kf_buf_printf(&p, "## The parent\n\nThe task's reference implementation.\n\n");
    kf_buf_printf(&p, "## The candidate (node %lld)\n\n```\n%s\n```\n\n", (long long)c->node_id,
                  c->source ? c->source : "(unavailable)");
    char *sh = c->shapes ? kf__json_dumps(c->shapes, JSON_COMPACT) : NULL;
    char *ck = c->report ? kf__json_dumps(json_object_get(c->report, "checks"), JSON_COMPACT) : NULL;
    kf_buf_printf(&p, "## Speedups against the reference, per visible shape\n\n%s\n\n", sh ? sh : "[]");
    kf_buf_printf(&p, "## kforge's Critic (mechanical checks, all passed)\n\n%s\n\n", ck ? ck : "[]");
    kf_buf_printf(&p, "Answer as the system message says: APPROVE or CONCERN, then your reasons.\n");
    free(sh);
    free(ck);
    json_t *pj = json_pack("{s:s, s:I, s:I, s:s?}", "kind", "review", "node", (json_int_t)c->node_id,
                           "parent", (json_int_t)c->parent_id, "task_dir", c->task_dir);
    kf_pack pk;
    memset(&pk, 0, sizeof pk);
    pk.json = kf__json_dumps(pj, JSON_COMPACT);
    json_decref(pj);
    pk.system = strdup(review_system);
    pk.prompt = p.p;
    snprintf(pk.ext, sizeof pk.ext, "txt");
    pk.tokens_prompt = kf_text_tokens(strlen(review_system) + (p.p ? strlen(p.p) : 0));
    json_t *out = json_pack("{s:s}", "agent", a->spec);
    if (!pk.json || !pk.system || !pk.prompt) {
        json_object_set_new(out, "error", json_string("out of memory"));
        kf_pack_free(&pk);
        return out;
    }
    kf_proposal pr;
    memset(&pr, 0, sizeof pr);
    pthread_mutex_lock(&a->mu);
    kf_status st = kf_agent_propose(a->ag, &pk, &pr);
    pthread_mutex_unlock(&a->mu);
    const char *text = pr.text ? pr.text : NULL;
    if (st) {
        json_object_set_new(out, "opinion", json_string("none"));
        json_object_set_new(out, "error", json_string("the review could not be asked for"));
    } else if (!text && pr.error) {
        json_object_set_new(out, "opinion", json_string("none"));
        json_object_set_new(out, "error", kf_text_json(pr.error));
    } else {
        json_object_set_new(out, "opinion", json_string(opinion_of(text)));
        char cut[2001];
        snprintf(cut, sizeof cut, "%s", text ? text : "");
        json_object_set_new(out, "text", kf_text_json(cut));
    }
    json_object_set_new(out, "tokens_in", json_integer(pr.tokens_in));
    json_object_set_new(out, "tokens_out", json_integer(pr.tokens_out));
    json_object_set_new(out, "seconds", json_real(pr.elapsed_s));
    if (tokens) *tokens = kf__sat_add(*tokens, kf__sat_add(pr.tokens_in, pr.tokens_out));
    kf_proposal_free(&pr);
    kf_pack_free(&pk);
    return out;
}
