/*
 * agent.h - proposers that ask something outside kforge for a candidate: the context
 * pack they read (pack.c) and the agents that answer it (agent.c: cmd:'COMMAND';
 * openai.c: openai:MODEL). docs/run.md, "Proposers", is the design.
 *
 * An agent never judges anything: it turns a pack into a candidate text or an error
 * string, and the loop hands the text to kf_check/kf_bench like any other file.
 */
#ifndef KF_AGENT_H
#define KF_AGENT_H

#include "../util/util.h"

/* ------------------------------------------------------------------------------------
 * The context pack: what an agent is told. Built from plain inputs (the loop reads them
 * from the store), as one JSON object and as prompt text, each section under its own
 * token allowance. Tokens are ESTIMATED, never counted with a model's tokenizer:
 * kf_text_tokens(bytes) = ceil(bytes / 4), which is close for English and code with
 * BPE tokenizers and errs high on dense JSON. A section larger than its allowance is
 * cut to fit (head and tail kept, cut at line ends where near) with a marker
 * "[kforge: truncated, N of M tokens omitted]" in the middle; list sections drop whole
 * items from the end and say how many.
 * ---------------------------------------------------------------------------------- */

/* X(id, name, default allowance in tokens) */
#define KF_PACK_SECTION_MAP(X)         \
    X(TASK, "task", 2000)              \
    X(SHAPES, "shapes", 1000)          \
    X(PARENT, "parent", 8000)          \
    X(VERDICT, "verdict", 1500)        \
    X(TIMINGS, "timings", 1000)        \
    X(FAILURES, "failures", 1500)      \
    X(CONSTRAINTS, "constraints", 800) \
    X(LESSONS, "lessons", 1000)

/* The pack's whole budget by default (--pack-tokens): the section allowances above
 * (16,800) plus 1,200 for the frame (the system message and what to do). With another
 * budget N every default allowance is scaled by N / 18000. */
#define KF_PACK_DEFAULT_TOKENS 18000
#define KF_PACK_MIN_TOKENS 1000
/* lessons + failures + constraints (the pack's memory) take at most this share of the
 * budget, give-back included */
#define KF_PACK_MEMORY_SHARE 0.20

// clang-format off
typedef enum {
#define KF_X(id, name, budget) KF_PACK_##id,
    KF_PACK_SECTION_MAP(KF_X)
#undef KF_X
    KF_PACK_NSECTIONS
} kf_pack_section;
// clang-format on

/* A recent failure of a related node (a sibling, the parent's other children). */
typedef struct {
    int64_t id;
    const char *reasons; /* "wrong_result,timeout" */
    const char *message; /* the first reason's message, or the proposer's error */
} kf_pack_failure;

/* The pack's inputs. Every pointer is borrowed and may be NULL (the section is then
 * empty). JSON-valued inputs are embedded as JSON when they parse and were not cut,
 * else as strings. */
typedef struct {
    const char *task_dir;     /* for the record */
    const char *task_json;    /* task.json's text */
    const char *shapes_json;  /* the visible shapes, a JSON array */
    int64_t parent_id;        /* the node to improve; 0: the reference */
    const char *parent_src;   /* its source text (NUL-terminated) */
    const char *ext;          /* the candidate's extension: "c" or "cu" (NULL: "c") */
    const char *category;     /* the move asked for ("tiling"), or NULL: any */
    const char *verdict_json; /* the parent's check, as `kforge check --json` prints it */
    const char *timings_json; /* the parent's timings and resources */
    const kf_pack_failure *failures;
    int nfailures; /* most relevant first: the last ones are dropped first */
    const char *const *constraints;
    int nconstraints;
    const char *const *lessons; /* lessons as plain items (used when lessons_db is NULL) */
    int nlessons;
    kf_lessons *lessons_db; /* retrieved lessons, rendered with kf_lessons_render
                               (whole lessons) at the section's final allowance */
    const kf_lesson_hit *lesson_hits;
    int nlesson_hits;
    int64_t budget[KF_PACK_NSECTIONS]; /* tokens per section; 0: its share of total. An
                                          explicit allowance is also a cap: it gives back
                                          what it does not need, never receives */
    int64_t total;                     /* the pack's budget in tokens, frame included (0: the
                                          default, KF_PACK_DEFAULT_TOKENS; at least KF_PACK_MIN_TOKENS) */
    double memory_share;               /* cap on lessons + failures + constraints (0: 0.20) */
} kf_pack_in;

typedef struct kf_pack {
    char *json;   /* the pack: one JSON object (docs/run.md, "The context pack") */
    char *system; /* the system message */
    char *prompt; /* the user message: every section, then what to do */
    char ext[8];
    char category[32];                      /* the move asked for, "" for any */
    int64_t tokens[KF_PACK_NSECTIONS];      /* estimated tokens of each section as sent */
    int64_t full_tokens[KF_PACK_NSECTIONS]; /* ... before any cut */
    int truncated[KF_PACK_NSECTIONS];
    int64_t allowance[KF_PACK_NSECTIONS]; /* its allowance before any give-back */
    int64_t granted[KF_PACK_NSECTIONS];   /* ... after give-back (heading included) */
    int64_t tokens_prompt;                /* estimate over system + prompt */
    int64_t total;                        /* the budget it was built to */
    int64_t frame_tokens;                 /* tokens_prompt - the sections' tokens: the
                                             system message, headings, fences, what to do */
    int nlessons;                         /* lessons rendered */
} kf_pack;

/* Build a pack to in->total tokens: tokens_prompt <= total always. Each section gets its
 * allowance; what a section does not need goes back to the others in the order parent,
 * verdict, task, shapes, timings, failures, constraints, lessons (the last three only up
 * to the memory cap); then each is cut to what it was granted (docs/run.md "The context
 * pack"). KF_OK with *out filled (free with kf_pack_free); KF_EUSAGE for a bad
 * extension, a negative allowance or a total under KF_PACK_MIN_TOKENS; KF_EBACKEND or
 * KF_EIO when rendering the lessons fails; KF_ENOMEM. */
kf_status kf_pack_build(kf_ctx *ctx, const kf_pack_in *in, kf_pack *out);
/* A verdict document (`kforge bench --json`, a node's verdict_json) as the pack's compact
 * verdict: {verdict, reasons: [{code, shape, message}], checked: "N of M shapes passed
 * (...)", failed: [{sizes, kind, max_abs_err}], speedup, shapes: [{sizes, speedup, ci95,
 * win}]}, the per-shape figures from shapes_json when given (a node's recorded ones),
 * with no temporary paths (a private copy's directory is cut from every message) and
 * nothing the agent cannot act on (sandbox, fingerprint, ceilings). NULL when verdict_json
 * is NULL or no JSON object; caller frees. */
char *kf_pack_verdict_summary(const char *verdict_json, const char *shapes_json);
void kf_pack_free(kf_pack *p); /* accepts a zeroed or freed pack */
const char *kf_pack_section_name(kf_pack_section s);
int64_t kf_pack_default_budget(kf_pack_section s);

/* ------------------------------------------------------------------------------------
 * Proposals and agents.
 * ---------------------------------------------------------------------------------- */

/* What a proposer returns: a candidate, or the error that says why none came. */
typedef struct {
    char *text;
    size_t len;
    char ext[8];       /* the candidate */
    char *params_json; /* builtin: the parameter point */
    char category[32];
    int64_t tokens_in, tokens_out;
    char *error; /* why no candidate came (recorded on the node) */
    /* set by the agents */
    int tokens_estimated; /* 1: tokens are kf_text_tokens estimates, not reported counts */
    int attempts;         /* openai: HTTP requests made; cmd: 1 */
    double elapsed_s;     /* wall seconds spent proposing */
    char *log;            /* for the record, capped: cmd: its stdout and stderr;
                             openai: the reply's content. NULL when there is none */
    char *description;    /* the agent's description of its change, raw (its first line,
                             at most 1 KiB: cmd: KFORGE_OUT.description; openai: a line
                             "Description: ..." of the reply outside the code); or NULL */
    char *warning;        /* a token count the agent reported that was not one (a
                             negative, huge or non-integer value): the estimate counts
                             instead (tokens_estimated). NULL when none */
} kf_proposal;

/* The most tokens one proposal may report for its prompt or its completion: larger
 * counts are not trusted (no model reads or writes a billion tokens in one call), so
 * sums of many of them stay far from overflowing. */
#define KF_AGENT_TOKENS_MAX 1000000000LL

/* Free what a proposal owns and zero it. Accepts NULL and a zeroed proposal. */
void kf_proposal_free(kf_proposal *p);

typedef struct {
    double timeout_s;         /* the proposal's wall time (300): cmd: the command's; openai:
                                 every request, retry and wait (Retry-After included) */
    double connect_timeout_s; /* openai: connecting (10) */
    int max_attempts;         /* openai: requests at most, the first included (4) */
    double backoff_s;         /* openai: first retry delay (1); doubled each retry, with
                                 jitter: each wait is uniform in [d/2, d] */
    double backoff_max_s;     /* openai: cap on one wait, Retry-After included (60) */
    size_t reply_cap;         /* openai: largest reply body in bytes (4 MiB) */
    size_t out_cap;           /* largest candidate in bytes (1 MiB) */
    size_t log_cap;           /* cmd: bytes kept of stdout and of stderr (64 KiB each) */
    const char *base_url;     /* openai: NULL: $OPENAI_BASE_URL, else
                                 https://api.openai.com/v1 */
    const char *api_key;      /* openai: NULL: $OPENAI_API_KEY (sent as Bearer; never
                                 logged); none: no Authorization header */
    double temperature;       /* openai: < 0: not sent (-1) */
    int max_tokens;           /* openai: 0: not sent */
    const char *tmp_dir;      /* cmd: where its private directory goes (NULL: $TMPDIR,
                                 else /tmp) */
} kf_agent_opts;

void kf_agent_opts_init(kf_agent_opts *o);

typedef struct kf_agent kf_agent;

/* Make an agent from a spec: "cmd:COMMAND" (COMMAND run with /bin/sh -c; one pair of
 * quotes around it is removed) or "openai:MODEL". opts may be NULL (the defaults); its
 * strings are copied. KF_EUSAGE for an unknown or empty spec, a base URL that is not
 * http(s), or openai's own endpoint without a key; KF_ENOMEM. Free with kf_agent_free. */
kf_status kf_agent_new(kf_ctx *ctx, const char *spec, const kf_agent_opts *opts, kf_agent **out);

/* Ask for one candidate. KF_OK: *out is filled (zeroed first) with either a candidate
 * (text, len, ext) or an error string saying what went wrong with the agent (a command
 * that failed, an endpoint that did not answer, a reply without code): that is an
 * outcome to record, not a failure of kforge. Another status: kforge itself could not
 * ask (no temp directory, out of memory), detail on the agent's ctx. Either way free
 * *out with kf_proposal_free. */
kf_status kf_agent_propose(kf_agent *a, const kf_pack *pack, kf_proposal *out);

/* "cmd" or "openai": the proposer's name for the store. */
const char *kf_agent_kind(const kf_agent *a);
void kf_agent_free(kf_agent *a); /* accepts NULL */

/* The candidate in a model's reply: the first fenced block tagged c, cu, cuda, cpp,
 * c++, cc, cxx, h, hpp or untagged; else the whole reply when it looks like code
 * (braces, semicolons, an #include or a function); else -1 with why set. 0 with
 * [*start, *start + *n) inside content. */
int kf_agent_extract_code(const char *content, size_t len, const char **start, size_t *n, char *why,
                          size_t whylen);

/* internal: agent.c <-> openai.c */
struct kf_agent {
    kf_ctx *ctx;
    int kind;                 /* KF_AGENT_CMD or KF_AGENT_OPENAI */
    char *arg;                /* the command, or the model */
    char *base_url, *api_key; /* openai */
    char *tmp_dir;            /* cmd: NULL: $TMPDIR, else /tmp */
    kf_agent_opts o;          /* its string fields point at the copies above */
};
enum { KF_AGENT_CMD = 1, KF_AGENT_OPENAI = 2 };
kf_status kf_agent_openai_check(kf_agent *a);
kf_status kf_agent_openai_propose(kf_agent *a, const kf_pack *pack, kf_proposal *out);
/* The counts an agent reported (pt, ct: JSON values; both NULL when it reported none)
 * into out: taken when both are integers in [0, KF_AGENT_TOKENS_MAX], else the estimates
 * est_in and est_out with tokens_estimated set and, when something was reported, a
 * warning naming `who` and the bad value. */
void kf_agent_usage(const char *who, json_t *pt, json_t *ct, int64_t est_in, int64_t est_out,
                    kf_proposal *out);

#endif
