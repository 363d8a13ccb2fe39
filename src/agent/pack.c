/*
 * pack.c - the context pack: what an agent (cmd, openai) is told about one action.
 *
 * Inputs are plain text the loop already has (task.json, the visible shapes, the
 * parent's source, its verdict and timings, recent failures, constraints, lessons).
 * Each section gets a token allowance; a section over it is cut to fit, so a pack's
 * size is bounded whatever the store holds (a 2 MB compiler log cannot crowd the
 * kernel out of a model's context). Tokens are estimated (kf_pack_tokens), never
 * counted with a tokenizer: kforge talks to any model, and a 25% error on an allowance
 * does not matter. The same cut text goes to the JSON and to the prompt, so both say
 * the same thing and the recorded counts describe what was sent.
 *
 * Not here: choosing what goes in (the loop), lessons (issue 5 fills the slot).
 */
#include "agent.h"
#include "../check/result.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#define MIN_BUDGET 32    /* tokens: room for a marker and a little text */
#define MARKER_ROOM 64   /* bytes kept free for the marker when cutting */
#define ITEM_MARKER 16   /* tokens kept free for "K more omitted" in a list */

static const char *const section_names[] = {
#define KF_X(id, name, budget) name,
    KF_PACK_SECTION_MAP(KF_X)
#undef KF_X
};
static const int64_t default_budgets[] = {
#define KF_X(id, name, budget) budget,
    KF_PACK_SECTION_MAP(KF_X)
#undef KF_X
};

static const char system_text[] =
    "You optimise compute kernels for kforge. kforge checks every candidate against a "
    "trusted reference on the visible shapes, on hidden and edge shapes drawn afresh each "
    "time (sizes of 1, primes, sizes that are not multiples of any tile), with fresh random "
    "inputs, in a sandbox, and times it against a baseline; only a candidate that is correct "
    "everywhere and measurably faster is kept. A candidate defines the task's entry point "
    "with exactly its signature, keeps no state between calls, and does not try to influence "
    "the measurement. Reply with the complete candidate file in one fenced code block and "
    "nothing after it but an optional short explanation.";

int64_t kf_pack_tokens(size_t bytes) { return (int64_t)((bytes + 3) / 4); }

const char *kf_pack_section_name(kf_pack_section s) {
    return s >= 0 && s < KF_PACK_NSECTIONS ? section_names[s] : "unknown";
}

int64_t kf_pack_default_budget(kf_pack_section s) {
    return s >= 0 && s < KF_PACK_NSECTIONS ? default_budgets[s] : 0;
}

void kf_pack_free(kf_pack *p) {
    if (!p) return;
    free(p->json);
    free(p->system);
    free(p->prompt);
    memset(p, 0, sizeof *p);
}

/* Cut s (n bytes) to at most budget tokens: head and tail kept (2:1), cut at a line end
 * when one is near and never inside a UTF-8 sequence, a marker between. Returns a new
 * string (NULL on OOM); *cut set to 1 when anything was dropped. */
static char *fit_text(const char *s, size_t n, int64_t budget, int *cut) {
    size_t limit = (size_t)budget * 4;
    *cut = 0;
    if (n <= limit) {
        char *p = malloc(n + 1);
        if (p) {
            memcpy(p, s, n);
            p[n] = 0;
        }
        return p;
    }
    *cut = 1;
    size_t keep = limit > MARKER_ROOM ? limit - MARKER_ROOM : 0;
    size_t head = keep * 2 / 3, tail = keep - head;
    /* a line end within the last quarter of the head, the first quarter of the tail */
    for (size_t i = head; i > head - head / 4 && i > 0; i--)
        if (s[i - 1] == '\n') {
            head = i;
            break;
        }
    size_t ts = n - tail;
    for (size_t i = ts; i < ts + tail / 4 && i < n; i++)
        if (s[i] == '\n') {
            ts = i + 1;
            break;
        }
    while (head > 0 && ((unsigned char)s[head] & 0xC0) == 0x80) head--;
    while (ts < n && ((unsigned char)s[ts] & 0xC0) == 0x80) ts++;
    int64_t full = kf_pack_tokens(n), kept = kf_pack_tokens(head + (n - ts));
    kf_buf b;
    kf_buf_init(&b, (size_t)-1);
    if (kf_buf_append(&b, s, head) ||
        kf_buf_printf(&b, "%s[kforge: truncated, %lld of %lld tokens omitted]\n",
                      head && s[head - 1] != '\n' ? "\n" : "", (long long)(full - kept),
                      (long long)full) ||
        kf_buf_append(&b, s + ts, n - ts)) {
        kf_buf_free(&b);
        return NULL;
    }
    return b.p;
}

/* A JSON-text section's value: the parsed JSON when it was not cut and parses, else
 * the text as a string. */
static json_t *json_or_text(const char *text, int cut) {
    if (!cut) {
        json_t *j = json_loads(text, JSON_DECODE_ANY, NULL);
        if (j) return j;
    }
    return kf_result_text_json(text);
}

/* The longest run of backticks in s, so a fence around it can be one longer. */
static int max_backticks(const char *s) {
    int best = 0, run = 0;
    for (; *s; s++) {
        run = *s == '`' ? run + 1 : 0;
        if (run > best) best = run;
    }
    return best;
}

static int fenced(kf_buf *b, const char *lang, const char *text) {
    int k = max_backticks(text) + 1;
    if (k < 3) k = 3;
    size_t n = strlen(text);
    return kf_buf_printf(b, "%.*s%s\n%s%s%.*s\n\n", k, "``````````````````````````````", lang,
                         text, n && text[n - 1] != '\n' ? "\n" : "", k,
                         "``````````````````````````````");
}

typedef struct {
    kf_pack *p;
    const kf_pack_in *in;
    json_t *root, *meta;
    kf_buf prompt;
} builder;

static void record(builder *B, kf_pack_section s, int64_t budget, const char *sent,
                   int64_t full, int cut, int omitted) {
    B->p->tokens[s] = kf_pack_tokens(strlen(sent));
    B->p->full_tokens[s] = full;
    B->p->truncated[s] = cut;
    json_t *m = json_object();
    json_object_set_new(m, "tokens", json_integer(B->p->tokens[s]));
    json_object_set_new(m, "budget", json_integer(budget));
    json_object_set_new(m, "full_tokens", json_integer(full));
    json_object_set_new(m, "truncated", json_boolean(cut));
    if (omitted) json_object_set_new(m, "omitted_items", json_integer(omitted));
    json_object_set_new(B->meta, section_names[s], m);
}

/* task, shapes, verdict, timings: JSON text under a heading, fenced as json */
static int json_section(builder *B, kf_pack_section s, int64_t budget, const char *text,
                        const char *heading) {
    if (!text) text = "";
    int cut;
    char *sent = fit_text(text, strlen(text), budget, &cut);
    if (!sent) return -1;
    record(B, s, budget, sent, kf_pack_tokens(strlen(text)), cut, 0);
    json_object_set_new(B->root, section_names[s], *text ? json_or_text(sent, cut) : json_null());
    int rc = 0;
    if (*text) rc = kf_buf_printf(&B->prompt, "# %s\n", heading) || fenced(&B->prompt, "json", sent);
    free(sent);
    return rc;
}

/* failures, constraints, lessons: one line per item; an item's text is cut to a quarter
 * of the allowance; items that do not fit are dropped from the end, and counted */
static int list_section(builder *B, kf_pack_section s, int64_t budget, int n,
                        const kf_pack_failure *fails, const char *const *texts,
                        const char *heading, const char *noun) {
    json_t *arr = json_array();
    kf_buf sec;
    kf_buf_init(&sec, (size_t)-1);
    int64_t item_budget = budget / 4 > MIN_BUDGET ? budget / 4 : MIN_BUDGET, used = 0;
    size_t full_bytes = 0;
    int any_cut = 0, omitted = 0, rc = 0;
    for (int i = 0; i < n && !rc; i++) {
        const char *t = fails ? fails[i].message : texts[i];
        if (!t) t = "";
        int cut;
        char *sent = fit_text(t, strlen(t), item_budget, &cut);
        char *line = !sent ? NULL
                     : fails ? kf__asprintf("- node %lld [%s]: %s\n", (long long)fails[i].id,
                                            fails[i].reasons ? fails[i].reasons : "", sent)
                             : kf__asprintf("- %s\n", sent);
        if (!line) {
            free(sent);
            rc = -1;
            break;
        }
        full_bytes += strlen(line) - strlen(sent) + strlen(t);
        int64_t lt = kf_pack_tokens(strlen(line));
        int64_t room = budget - (i < n - 1 ? ITEM_MARKER : 0);
        if (!omitted && used + lt <= room) {
            rc = kf_buf_append(&sec, line, strlen(line));
            used = kf_pack_tokens(sec.len);
            any_cut |= cut;
            json_t *item;
            if (fails) {
                item = json_object();
                json_object_set_new(item, "id", json_integer(fails[i].id));
                json_object_set_new(item, "reasons", kf_result_text_json(fails[i].reasons));
                json_object_set_new(item, "message", kf_result_text_json(sent));
            } else {
                item = kf_result_text_json(sent);
            }
            json_array_append_new(arr, item);
        } else {
            omitted++;
        }
        free(line);
        free(sent);
    }
    if (!rc && omitted)
        rc = kf_buf_printf(&sec, "[kforge: truncated, %d more %s omitted]\n", omitted, noun);
    if (rc) {
        json_decref(arr);
        kf_buf_free(&sec);
        return -1;
    }
    const char *sent = sec.p ? sec.p : "";
    record(B, s, budget, sent, kf_pack_tokens(full_bytes), any_cut || omitted, omitted);
    json_object_set_new(B->root, section_names[s], arr);
    if (n) rc = kf_buf_printf(&B->prompt, "# %s\n%s\n", heading, sent);
    kf_buf_free(&sec);
    return rc;
}

kf_status kf_pack_build(kf_ctx *ctx, const kf_pack_in *in, kf_pack *out) {
    memset(out, 0, sizeof *out);
    const char *ext = in->ext ? in->ext : "c";
    if (strcmp(ext, "c") && strcmp(ext, "cu"))
        return kf__err(ctx, KF_EUSAGE, "pack: extension '%s' (expected c or cu)", ext);
    int64_t budget[KF_PACK_NSECTIONS];
    for (int s = 0; s < KF_PACK_NSECTIONS; s++) {
        if (in->budget[s] < 0)
            return kf__err(ctx, KF_EUSAGE, "pack: negative allowance for section %s",
                           section_names[s]);
        budget[s] = in->budget[s] ? in->budget[s] : default_budgets[s];
        if (budget[s] < MIN_BUDGET) budget[s] = MIN_BUDGET;
    }
    snprintf(out->ext, sizeof out->ext, "%s", ext);
    snprintf(out->category, sizeof out->category, "%s", in->category ? in->category : "");
    builder B = {out, in, json_object(), json_object(), {0}};
    kf_buf_init(&B.prompt, (size_t)-1);
    int rc = !B.root || !B.meta;
    const char *lang = strcmp(ext, "cu") ? "c" : "cuda";

    if (!rc) {
        json_object_set_new(B.root, "kforge_pack", json_integer(1));
        json_object_set_new(B.root, "task_dir", in->task_dir ? kf_result_text_json(in->task_dir)
                                                             : json_null());
        json_object_set_new(B.root, "ext", json_string(ext));
        json_object_set_new(B.root, "category",
                            in->category ? kf_result_text_json(in->category) : json_null());
        char heading[512];
        snprintf(heading, sizeof heading, "Task%s%s%s", in->task_dir ? " (" : "",
                 in->task_dir ? in->task_dir : "", in->task_dir ? ")" : "");
        rc = json_section(&B, KF_PACK_TASK, budget[KF_PACK_TASK], in->task_json, heading) ||
             json_section(&B, KF_PACK_SHAPES, budget[KF_PACK_SHAPES], in->shapes_json,
                          "Visible shapes (the speedup is measured on these)");
    }
    if (!rc) { /* the parent's source */
        const char *src = in->parent_src ? in->parent_src : "";
        int cut;
        char *sent = fit_text(src, strlen(src), budget[KF_PACK_PARENT], &cut);
        rc = !sent;
        if (!rc) {
            record(&B, KF_PACK_PARENT, budget[KF_PACK_PARENT], sent, kf_pack_tokens(strlen(src)),
                   cut, 0);
            json_t *par = json_object();
            json_object_set_new(par, "id", json_integer(in->parent_id));
            json_object_set_new(par, "source", kf_result_text_json(sent));
            json_object_set_new(B.root, "parent", par);
            if (*src) {
                if (in->parent_id)
                    rc = kf_buf_printf(&B.prompt, "# The kernel to improve (node %lld)\n",
                                       (long long)in->parent_id);
                else
                    rc = kf_buf_printf(&B.prompt, "# The kernel to improve (the reference)\n");
                rc = rc || fenced(&B.prompt, lang, sent);
            }
            free(sent);
        }
    }
    rc = rc ||
         json_section(&B, KF_PACK_VERDICT, budget[KF_PACK_VERDICT], in->verdict_json,
                      "Its verdict") ||
         json_section(&B, KF_PACK_TIMINGS, budget[KF_PACK_TIMINGS], in->timings_json,
                      "Its timings and resources") ||
         list_section(&B, KF_PACK_FAILURES, budget[KF_PACK_FAILURES], in->nfailures,
                      in->failures, NULL, "Recent failures of related nodes", "failures") ||
         list_section(&B, KF_PACK_CONSTRAINTS, budget[KF_PACK_CONSTRAINTS], in->nconstraints,
                      NULL, in->constraints, "Constraints learnt so far (do not repeat these)",
                      "constraints") ||
         list_section(&B, KF_PACK_LESSONS, budget[KF_PACK_LESSONS], in->nlessons, NULL,
                      in->lessons, "Lessons", "lessons");
    if (!rc) {
        rc = kf_buf_printf(&B.prompt, "# What to do\nWrite a faster version of the kernel above");
        if (!rc && in->category)
            rc = kf_buf_printf(&B.prompt, " by a change of the kind '%s'", in->category);
        rc = rc ||
             kf_buf_printf(&B.prompt,
                           ". Keep the entry point and its signature exactly as they are, stay "
                           "correct for every size the task allows, and respect the constraints. "
                           "Reply with the complete file in one fenced ```%s block.\n",
                           lang);
    }
    if (!rc) {
        out->system = kf__strdup(system_text);
        out->prompt = B.prompt.p;
        B.prompt.p = NULL;
        rc = !out->system || !out->prompt;
    }
    if (!rc) {
        out->tokens_prompt = kf_pack_tokens(strlen(out->system) + strlen(out->prompt));
        json_object_set_new(B.root, "system", json_string(out->system));
        json_object_set_new(B.root, "prompt_tokens", json_integer(out->tokens_prompt));
        json_object_set_new(B.root, "token_estimator", json_string("ceil(bytes/4)"));
        json_object_set(B.root, "sections", B.meta);
        out->json = json_dumps(B.root, JSON_INDENT(2));
        rc = !out->json;
    }
    json_decref(B.root);
    json_decref(B.meta);
    kf_buf_free(&B.prompt);
    if (rc) {
        kf_pack_free(out);
        return kf__err(ctx, KF_ENOMEM, "pack: out of memory");
    }
    return KF_OK;
}
