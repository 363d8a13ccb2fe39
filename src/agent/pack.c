/*
 * pack.c - the context pack: what an agent (cmd, openai) is told about one action.
 *
 * Inputs are plain text the loop already has (task.json, the visible shapes, the
 * parent's source, its verdict and timings, recent failures, constraints, lessons).
 * Each section gets a token allowance; a section over it is cut to fit, so a pack's
 * size is bounded whatever the store holds (a 2 MB compiler log cannot crowd the
 * kernel out of a model's context). Tokens are estimated (kf_text_tokens), never
 * counted with a tokenizer: kforge talks to any model, and a 25% error on an allowance
 * does not matter. The same cut text goes to the JSON and to the prompt, so both say
 * the same thing and the recorded counts describe what was sent.
 *
 * The pack is built to one budget (kf_pack_in.total): every section has an allowance (its
 * share of the budget), a section that needs less gives the rest back to the others in a
 * fixed order, and lessons + failures + constraints (what the run and earlier runs
 * remember) never take more than the memory share (20%) of the budget. A section's
 * heading and fences count in its grant, the system message and the closing
 * instructions in the frame, so the whole prompt never exceeds the budget.
 *
 * Not here: choosing what goes in (the loop), retrieving lessons (src/lessons/).
 */
#include "agent.h"
#include "../backend/registry.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#define MIN_BUDGET 32  /* tokens: room for a marker and a little text */
#define MARKER_ROOM 64 /* bytes kept free for the marker when cutting */
#define ITEM_MARKER 64 /* bytes kept free for "K more omitted" in a list */

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

/* What each category of change means: the prompt says it for the category asked for, and
 * docs/agents.md "Categories" says the same. */
static const char *const category_defs[][2] = {
    {"tiling",
     "split the work into blocks (tiles) that fit a cache level, registers or shared memory, and reuse "
     "the data inside each block"},
    {"vectorisation",
     "process several elements per instruction: SIMD lanes, wider loads and stores, restrict "
     "pointers and loops the compiler can vectorise"},
    {"unrolling", "unroll loops and keep several independent accumulators, to cut loop overhead and expose "
                  "instruction-level parallelism"},
    {"memory_layout", "change how memory is accessed or staged: access order, coalescing, padding, staged or "
                      "transposed copies, prefetching"},
    {"launch_config",
     "change how the work is spread: block and grid sizes, work per thread, occupancy (GPU), "
     "chunks per thread (CPU)"},
    {"algorithm", "compute the same result another way: a different reduction order, a fused or one-pass "
                  "formulation, fewer passes over memory"},
    {"specialisation", "a version for some shapes only, declared by one kforge:when line saying which (for "
                       "example kforge:when n % 16 == 0); it is checked and timed only there"},
    {"precision",
     "cheaper arithmetic that stays within the task's tolerance on every shape: fused multiply-add, "
     "fast intrinsics, a different accumulator type"},
    {"other", "a change that fits none of the other categories"},
};

/* The definition of category c, or NULL for a name it does not know. */
static const char *category_def(const char *c) {
    for (size_t i = 0; c && i < sizeof category_defs / sizeof category_defs[0]; i++)
        if (!strcmp(c, category_defs[i][0])) return category_defs[i][1];
    return NULL;
}

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

/* Cut s (n bytes) to at most limit bytes: head and tail kept (2:1), cut at a line end
 * when one is near and never inside a UTF-8 sequence, a marker between. Returns a new
 * string (NULL on OOM); *cut set to 1 when anything was dropped. */
static char *fit_text(const char *s, size_t n, size_t limit, int *cut) {
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
    if (keep < 8) keep = 0; /* too little room for text: the marker alone */
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
    int64_t full = kf_text_tokens(n), kept = kf_text_tokens(head + (n - ts));
    kf_buf b;
    kf_buf_init(&b, (size_t)-1);
    if (kf_buf_append(&b, s, head) ||
        kf_buf_printf(&b, "%s[kforge: truncated, %lld of %lld tokens omitted]\n",
                      head && s[head - 1] != '\n' ? "\n" : "", (long long)(full - kept), (long long)full) ||
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
    return kf_text_json(text);
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
    return kf_buf_printf(b, "%.*s%s\n%s%s%.*s\n\n", k, "``````````````````````````````", lang, text,
                         n && text[n - 1] != '\n' ? "\n" : "", k, "``````````````````````````````");
}

/* ---- the budget ------------------------------------------------------------------------ */

/* Give-back order: who gets what others did not need, first come first served. */
static const kf_pack_section giveback_order[] = {KF_PACK_PARENT,      KF_PACK_VERDICT, KF_PACK_TASK,
                                                 KF_PACK_SHAPES,      KF_PACK_TIMINGS, KF_PACK_FAILURES,
                                                 KF_PACK_CONSTRAINTS, KF_PACK_LESSONS};

static int is_memory(kf_pack_section s) {
    return s == KF_PACK_FAILURES || s == KF_PACK_CONSTRAINTS || s == KF_PACK_LESSONS;
}

/* One section while the pack is planned: its heading and fence (the overhead), the
 * tokens it would take whole (need) and what it is granted. */
typedef struct {
    char *heading;    /* "# Task (...)\n"; NULL: the section is empty, left out */
    const char *lang; /* fenced as this language; NULL: a list, not fenced */
    int fence;        /* backticks of the fence */
    size_t overhead;  /* bytes of heading, fences and trailing newlines */
    size_t full;      /* bytes of the content, whole */
    int64_t need, allowance, grant;
} plan;

typedef struct {
    kf_pack *p;
    const kf_pack_in *in;
    json_t *root, *meta;
    kf_buf prompt;
    plan pl[KF_PACK_NSECTIONS];
} builder;

/* The bytes a section's content may take once its heading and fences are paid. */
static size_t body_limit(const plan *q) {
    size_t room = (size_t)q->grant * 4;
    return room > q->overhead ? room - q->overhead : 0;
}

static void record(builder *B, kf_pack_section s, const char *sent, int64_t full, int cut, int omitted) {
    plan *q = &B->pl[s];
    B->p->tokens[s] = kf_text_tokens(strlen(sent));
    B->p->full_tokens[s] = full;
    B->p->truncated[s] = cut;
    B->p->allowance[s] = q->allowance;
    B->p->granted[s] = q->grant;
    json_t *m = json_object();
    json_object_set_new(m, "tokens", json_integer(B->p->tokens[s]));
    json_object_set_new(m, "budget", json_integer(q->allowance));
    json_object_set_new(m, "granted", json_integer(q->grant));
    json_object_set_new(m, "full_tokens", json_integer(full));
    json_object_set_new(m, "truncated", json_boolean(cut));
    if (omitted) json_object_set_new(m, "omitted_items", json_integer(omitted));
    json_object_set_new(B->meta, section_names[s], m);
}

/* task, shapes, verdict, timings: JSON text under a heading, fenced as json */
static int json_section(builder *B, kf_pack_section s, const char *text) {
    plan *q = &B->pl[s];
    if (!text) text = "";
    int cut = 0;
    size_t lim = body_limit(q);
    char *sent = !q->heading                               ? kf__strdup("")
                 : strlen(text) > lim && lim < MARKER_ROOM ? (cut = 1, kf__strdup(""))
                                                           : fit_text(text, strlen(text), lim, &cut);
    if (!sent) return -1;
    record(B, s, sent, kf_text_tokens(strlen(text)), cut, 0);
    json_object_set_new(B->root, section_names[s], *text ? json_or_text(sent, cut) : json_null());
    int rc = 0;
    if (*sent) rc = kf_buf_printf(&B->prompt, "%s", q->heading) || fenced(&B->prompt, q->lang, sent);
    free(sent);
    return rc;
}

/* A list item's line: "- node N [reasons]: message\n" or "- text\n"; caller frees. */
static char *item_line(const kf_pack_failure *f, const char *text) {
    return f ? kf__asprintf("- node %lld [%s]: %s\n", (long long)f->id, f->reasons ? f->reasons : "", text)
             : kf__asprintf("- %s\n", text);
}

/* failures, constraints, lessons given as items: one line per item; an item's text is
 * cut to a quarter of the section's room; items that do not fit are dropped from the
 * end, and counted */
static int list_section(builder *B, kf_pack_section s, int n, const kf_pack_failure *fails,
                        const char *const *texts, const char *noun) {
    plan *q = &B->pl[s];
    json_t *arr = json_array();
    kf_buf sec;
    kf_buf_init(&sec, (size_t)-1);
    size_t lim = q->heading ? body_limit(q) : 0;
    int all = q->full <= lim; /* everything fits: nothing cut, no room kept for a marker */
    size_t item_lim = all ? lim : lim / 4 > (size_t)MIN_BUDGET * 4 ? lim / 4 : (size_t)MIN_BUDGET * 4;
    size_t full_bytes = 0;
    int any_cut = 0, omitted = 0, rc = 0;
    for (int i = 0; i < n && !rc; i++) {
        const char *t = fails ? fails[i].message : texts[i];
        if (!t) t = "";
        int cut;
        char *sent = fit_text(t, strlen(t), item_lim, &cut);
        char *line = sent ? item_line(fails ? &fails[i] : NULL, sent) : NULL;
        if (!line) {
            free(sent);
            rc = -1;
            break;
        }
        full_bytes += strlen(line) - strlen(sent) + strlen(t);
        size_t room = all ? lim : lim > ITEM_MARKER ? lim - (i < n - 1 ? ITEM_MARKER : 0) : 0;
        if (!omitted && sec.len + strlen(line) <= room) {
            rc = kf_buf_append(&sec, line, strlen(line));
            any_cut |= cut;
            json_t *item;
            if (fails) {
                item = json_object();
                json_object_set_new(item, "id", json_integer(fails[i].id));
                json_object_set_new(item, "reasons", kf_text_json(fails[i].reasons));
                json_object_set_new(item, "message", kf_text_json(sent));
            } else {
                item = kf_text_json(sent);
            }
            json_array_append_new(arr, item);
        } else {
            omitted++;
        }
        free(line);
        free(sent);
    }
    /* the marker fits: ITEM_MARKER was kept free unless every item was in */
    if (!rc && omitted && lim >= ITEM_MARKER)
        rc = kf_buf_printf(&sec, "[kforge: truncated, %d more %s omitted]\n", omitted, noun);
    if (rc) {
        json_decref(arr);
        kf_buf_free(&sec);
        return -1;
    }
    const char *sent = sec.p ? sec.p : "";
    record(B, s, sent, kf_text_tokens(full_bytes), any_cut || omitted, omitted);
    json_object_set_new(B->root, section_names[s], arr);
    if (*sent) rc = kf_buf_printf(&B->prompt, "%s%s\n", q->heading, sent);
    kf_buf_free(&sec);
    return rc;
}

/* The lessons retrieved for this pack, rendered whole (kf_lessons_render) into what the
 * section was granted. full: the rendering when there was room for all of them. */
static kf_status lessons_text(kf_ctx *ctx, const kf_pack_in *in, int64_t max_tokens, char **text, int *used) {
    *text = NULL;
    *used = 0;
    kf_status st = kf_lessons_render(in->lessons_db, in->lesson_hits, in->nlesson_hits,
                                     max_tokens > 0 ? max_tokens : 0, text, NULL, used);
    if (st) { /* the detail is on ctx already: copy it before writing ctx again */
        char why[512];
        snprintf(why, sizeof why, "%s", kf_errmsg(ctx));
        return kf__err(ctx, st, "pack: lessons: %s", why);
    }
    return KF_OK;
}

static int lessons_section(builder *B, const char *full_text, const char *sent, int used) {
    plan *q = &B->pl[KF_PACK_LESSONS];
    int omitted = B->in->nlesson_hits - used;
    record(B, KF_PACK_LESSONS, sent, kf_text_tokens(strlen(full_text)), omitted > 0, omitted);
    json_t *ids = json_array();
    for (int i = 0; i < B->in->nlesson_hits; i++)
        json_array_append_new(ids, json_string(B->in->lesson_hits[i].id));
    json_object_set_new(B->root, "lessons", *sent ? json_pack("[s]", sent) : json_array());
    json_object_set_new(B->root, "lesson_ids", ids);
    json_object_set_new(B->root, "lessons_used", json_integer(used));
    if (*sent) return kf_buf_printf(&B->prompt, "%s%s\n", q->heading, sent);
    return 0;
}

/* Plan one section: its heading, its overhead and the tokens it would take whole. */
static int plan_section(builder *B, kf_pack_section s, const char *heading, const char *lang,
                        const char *content, size_t full) {
    plan *q = &B->pl[s];
    if (!content || !*content) return 0;
    if (!(q->heading = kf__strdup(heading))) return -1;
    q->lang = lang;
    q->full = full;
    q->overhead = strlen(heading) + 1; /* a list's closing newline */
    if (lang) {
        q->fence = max_backticks(content) + 1;
        if (q->fence < 3) q->fence = 3;
        q->overhead = strlen(heading) + 2 * (size_t)q->fence + strlen(lang) + 4;
    }
    q->need = kf_text_tokens(q->overhead + full);
    return 0;
}

/* Split the budget: allowances (explicit, else each section's share), the frame paid
 * first, what a section does not need given back in giveback_order (the non-memory
 * sections first), memory capped at mem_cap. */
static void allocate(builder *B, int64_t total, int64_t frame, int64_t mem_cap) {
    plan *pl = B->pl;
    int64_t sum = 0;
    for (int s = 0; s < KF_PACK_NSECTIONS; s++) {
        int64_t a = B->in->budget[s] ? B->in->budget[s] : default_budgets[s] * total / KF_PACK_DEFAULT_TOKENS;
        pl[s].allowance = a < MIN_BUDGET ? MIN_BUDGET : a;
        sum += pl[s].allowance;
    }
    int64_t pool = total - frame - sum; /* negative: the allowances overrun the budget */
    for (int s = 0; s < KF_PACK_NSECTIONS; s++) {
        pl[s].grant = pl[s].need < pl[s].allowance ? pl[s].need : pl[s].allowance;
        pool += pl[s].allowance - pl[s].grant;
    }
    /* an overrun (explicit allowances, a long frame) is taken back against the give-back
     * order's end first, the parent last */
    for (int i = KF_PACK_NSECTIONS - 1; i >= 0 && pool < 0; i--) {
        plan *q = &pl[giveback_order[i]];
        int64_t take = q->grant < -pool ? q->grant : -pool;
        q->grant -= take;
        pool += take;
    }
    int64_t mem = 0;
    for (int s = 0; s < KF_PACK_NSECTIONS; s++)
        if (is_memory((kf_pack_section)s)) mem += pl[s].grant;
    for (int i = KF_PACK_NSECTIONS - 1; i >= 0 && mem > mem_cap; i--) {
        plan *q = &pl[giveback_order[i]];
        if (!is_memory(giveback_order[i])) continue;
        int64_t take = q->grant < mem - mem_cap ? q->grant : mem - mem_cap;
        q->grant -= take;
        mem -= take;
        pool += take;
    }
    for (int i = 0; i < KF_PACK_NSECTIONS && pool > 0; i++) {
        kf_pack_section s = giveback_order[i];
        plan *q = &pl[s];
        if (B->in->budget[s]) continue; /* an explicit allowance is a cap */
        int64_t want = q->need - q->grant;
        if (is_memory(s) && want > mem_cap - mem) want = mem_cap - mem;
        if (want <= 0) continue;
        if (want > pool) want = pool;
        q->grant += want;
        pool -= want;
        if (is_memory(s)) mem += want;
    }
}

/* The full text of a list section (what it needs whole), for planning. */
static size_t list_full(int n, const kf_pack_failure *fails, const char *const *texts) {
    size_t b = 0;
    for (int i = 0; i < n; i++) {
        const char *t = fails ? fails[i].message : texts[i];
        char *line = item_line(fails ? &fails[i] : NULL, t ? t : "");
        b += line ? strlen(line) : 0;
        free(line);
    }
    return b;
}

/* Build to the budget with memory capped at mem_cap tokens. */
static kf_status build(kf_ctx *ctx, const kf_pack_in *in, kf_pack *out, int64_t mem_cap_in) {
    memset(out, 0, sizeof *out);
    const char *ext = in->ext ? in->ext : "c";
    kf_backend *be = kf_backend_by_ext(ext); /* the language the reply is asked in */
    if (!be) {
        char exts[128] = "";
        kf_backend *b;
        for (int i = 0; (b = kf_backend_at(i)); i++)
            snprintf(exts + strlen(exts), sizeof exts - strlen(exts), "%s%s",
                     !i                     ? ""
                     : kf_backend_at(i + 1) ? ", "
                                            : " or ",
                     kf_backend_ext(b));
        return kf__err(ctx, KF_EUSAGE, "pack: extension '%s' (expected %s)", ext, exts);
    }
    for (int s = 0; s < KF_PACK_NSECTIONS; s++)
        if (in->budget[s] < 0)
            return kf__err(ctx, KF_EUSAGE, "pack: negative allowance for section %s", section_names[s]);
    int64_t total = in->total ? in->total : KF_PACK_DEFAULT_TOKENS;
    if (total < KF_PACK_MIN_TOKENS)
        return kf__err(ctx, KF_EUSAGE, "pack: a budget of %lld tokens (at least %d)", (long long)total,
                       KF_PACK_MIN_TOKENS);
    double mem_share =
        in->memory_share > 0 && in->memory_share <= 1 ? in->memory_share : KF_PACK_MEMORY_SHARE;
    snprintf(out->ext, sizeof out->ext, "%s", ext);
    snprintf(out->category, sizeof out->category, "%s", in->category ? in->category : "");
    out->total = total;
    builder B = {out, in, json_object(), json_object(), {0}, {{0}}};
    kf_buf_init(&B.prompt, (size_t)-1);
    kf_buf instr;
    kf_buf_init(&instr, (size_t)-1);
    char *lfull = NULL, *lsent = NULL;
    int lused = 0;
    kf_status st = KF_OK;
    int rc = !B.root || !B.meta;
    const char *lang = kf_backend_lang(be);

    /* the frame: what to do, written last, paid first */
    rc = rc || kf_buf_printf(&instr, "# What to do\nWrite a faster version of the kernel above");
    if (!rc && in->category) rc = kf_buf_printf(&instr, " by a change of the kind '%.31s'", in->category);
    const char *def = in->category ? category_def(in->category) : NULL;
    if (!rc && def) rc = kf_buf_printf(&instr, " (%s)", def);
    rc = rc || kf_buf_printf(&instr,
                             ". Keep the entry point and its signature exactly as they are, stay "
                             "correct for every size the task allows, and respect the constraints. "
                             "Only a specialisation has a kforge:when line, and a specialisation must "
                             "have one: a file that contradicts its category is refused unevaluated. "
                             "Reply with the complete file in one fenced ```%s block, then one line "
                             "'Description: ' saying in a few words what you changed.\n",
                             lang);
    /* plan every section */
    if (!rc) {
        char heading[512];
        snprintf(heading, sizeof heading, "# Task%s%.300s%s\n", in->task_dir ? " (" : "",
                 in->task_dir ? in->task_dir : "", in->task_dir ? ")" : "");
        const char *t = in->task_json, *sh = in->shapes_json, *v = in->verdict_json, *tm = in->timings_json;
        rc = plan_section(&B, KF_PACK_TASK, heading, "json", t, t ? strlen(t) : 0) ||
             plan_section(&B, KF_PACK_SHAPES, "# Visible shapes (the speedup is measured on these)\n", "json",
                          sh, sh ? strlen(sh) : 0) ||
             plan_section(&B, KF_PACK_VERDICT, "# Its verdict\n", "json", v, v ? strlen(v) : 0) ||
             plan_section(&B, KF_PACK_TIMINGS, "# Its timings and resources\n", "json", tm,
                          tm ? strlen(tm) : 0);
        if (in->parent_id)
            snprintf(heading, sizeof heading, "# The kernel to improve (node %lld)\n",
                     (long long)in->parent_id);
        else snprintf(heading, sizeof heading, "# The kernel to improve (the reference)\n");
        const char *src = in->parent_src;
        rc = rc || plan_section(&B, KF_PACK_PARENT, heading, lang, src, src ? strlen(src) : 0);
        if (!rc && in->nfailures > 0)
            rc = plan_section(&B, KF_PACK_FAILURES, "# Recent failures of related nodes\n", NULL, "-",
                              list_full(in->nfailures, in->failures, NULL));
        if (!rc && in->nconstraints > 0)
            rc = plan_section(&B, KF_PACK_CONSTRAINTS, "# Constraints learnt so far (do not repeat these)\n",
                              NULL, "-", list_full(in->nconstraints, NULL, in->constraints));
        if (!rc && in->lessons_db && in->nlesson_hits > 0) {
            /* whole, as far as the memory cap could ever let it be */
            if ((st = lessons_text(ctx, in, (int64_t)(mem_share * (double)total), &lfull, &lused))) goto out;
            /* rendering counts whole tokens: plan for the bytes those tokens may hold */
            if (*lfull)
                rc = plan_section(&B, KF_PACK_LESSONS, "# Lessons\n", NULL, lfull,
                                  (size_t)kf_text_tokens(strlen(lfull)) * 4);
        } else if (!rc && in->nlessons > 0) {
            rc = plan_section(&B, KF_PACK_LESSONS, "# Lessons\n", NULL, "-",
                              list_full(in->nlessons, NULL, in->lessons));
        }
    }
    if (!rc) {
        out->system = kf__strdup(system_text);
        rc = !out->system;
    }
    int64_t mem_cap = (int64_t)(mem_share * (double)total);
    if (mem_cap_in >= 0 && mem_cap_in < mem_cap) mem_cap = mem_cap_in;
    if (!rc) allocate(&B, total, kf_text_tokens(strlen(out->system) + instr.len), mem_cap);

    if (!rc) {
        json_object_set_new(B.root, "kforge_pack", json_integer(1));
        json_object_set_new(B.root, "task_dir", in->task_dir ? kf_text_json(in->task_dir) : json_null());
        json_object_set_new(B.root, "ext", json_string(ext));
        json_object_set_new(B.root, "category", in->category ? kf_text_json(in->category) : json_null());
        rc = json_section(&B, KF_PACK_TASK, in->task_json) ||
             json_section(&B, KF_PACK_SHAPES, in->shapes_json);
    }
    if (!rc) { /* the parent's source */
        plan *q = &B.pl[KF_PACK_PARENT];
        const char *src = in->parent_src ? in->parent_src : "";
        int cut = 0;
        size_t lim = body_limit(q);
        char *sent = !q->heading                              ? kf__strdup("")
                     : strlen(src) > lim && lim < MARKER_ROOM ? (cut = 1, kf__strdup(""))
                                                              : fit_text(src, strlen(src), lim, &cut);
        rc = !sent;
        if (!rc) {
            record(&B, KF_PACK_PARENT, sent, kf_text_tokens(strlen(src)), cut, 0);
            json_t *par = json_object();
            json_object_set_new(par, "id", json_integer(in->parent_id));
            json_object_set_new(par, "source", kf_text_json(sent));
            json_object_set_new(B.root, "parent", par);
            if (*sent) rc = kf_buf_printf(&B.prompt, "%s", q->heading) || fenced(&B.prompt, lang, sent);
            free(sent);
        }
    }
    rc = rc || json_section(&B, KF_PACK_VERDICT, in->verdict_json) ||
         json_section(&B, KF_PACK_TIMINGS, in->timings_json) ||
         list_section(&B, KF_PACK_FAILURES, in->nfailures, in->failures, NULL, "failures") ||
         list_section(&B, KF_PACK_CONSTRAINTS, in->nconstraints, NULL, in->constraints, "constraints");
    if (!rc && lfull) {
        plan *q = &B.pl[KF_PACK_LESSONS];
        size_t lim = q->heading ? body_limit(q) : 0;
        if ((st = lessons_text(ctx, in, (int64_t)(lim / 4), &lsent, &lused))) goto out;
        rc = lessons_section(&B, lfull, lsent, lused);
        out->nlessons = lused;
    } else if (!rc) {
        rc = list_section(&B, KF_PACK_LESSONS, in->nlessons, NULL, in->lessons, "lessons");
        out->nlessons = (int)json_array_size(json_object_get(B.root, "lessons"));
    }
    rc = rc || kf_buf_append(&B.prompt, instr.p, instr.len);
    if (!rc) {
        out->prompt = B.prompt.p;
        B.prompt.p = NULL;
        rc = !out->prompt;
    }
    if (!rc) {
        out->tokens_prompt = kf_text_tokens(strlen(out->system) + strlen(out->prompt));
        int64_t secs = 0;
        for (int s = 0; s < KF_PACK_NSECTIONS; s++) secs += out->tokens[s];
        out->frame_tokens = out->tokens_prompt - secs;
        int64_t mem =
            out->tokens[KF_PACK_FAILURES] + out->tokens[KF_PACK_CONSTRAINTS] + out->tokens[KF_PACK_LESSONS];
        json_object_set_new(B.root, "system", json_string(out->system));
        json_object_set_new(B.root, "prompt_tokens", json_integer(out->tokens_prompt));
        json_object_set_new(B.root, "budget_tokens", json_integer(total));
        json_object_set_new(B.root, "frame_tokens", json_integer(out->frame_tokens));
        json_object_set_new(B.root, "memory_tokens", json_integer(mem));
        json_object_set_new(B.root, "memory_cap_tokens", json_integer(mem_cap));
        json_object_set_new(B.root, "token_estimator", json_string("ceil(bytes/4)"));
        json_object_set(B.root, "sections", B.meta);
        out->json = kf__json_dumps(B.root, JSON_INDENT(2));
        rc = !out->json;
    }
out:
    for (int s = 0; s < KF_PACK_NSECTIONS; s++) free(B.pl[s].heading);
    free(lfull);
    free(lsent);
    kf_buf_free(&instr);
    json_decref(B.root);
    json_decref(B.meta);
    kf_buf_free(&B.prompt);
    if (st) {
        kf_pack_free(out);
        return st;
    }
    if (rc) {
        kf_pack_free(out);
        return kf__err(ctx, KF_ENOMEM, "pack: out of memory");
    }
    return KF_OK;
}

/* Memory (lessons + failures + constraints) takes at most the memory share of the budget
 * and of the pack itself: a small pack must not become mostly memory. The second bound
 * needs the other sections' size, so a pack over it is built once more with memory
 * capped at share / (1 - share) of what the rest took (system, instructions and
 * non-memory sections, headings left out: a lower bound, so the rebuilt pack holds). The
 * rest does not depend on memory's cap (it is given back to first), so once is enough. */
/* text without the directories of kforge's private copies ("/tmp/kforge-run-1-Ab/n2.c:3"
 * becomes "n2.c:3"): they change every evaluation and mean nothing to an agent. */
static json_t *no_tmp_paths(const char *text, size_t cap) {
    kf_buf b;
    kf_buf_init(&b, cap + 64);
    const char *p = text;
    while (*p) {
        const char *k = strstr(p, "/kforge-");
        if (!k) {
            kf_buf_printf(&b, "%s", p);
            break;
        }
        const char *start = k; /* back to the path's first character */
        while (start > p && !strchr(" \t\n'\"(:=", start[-1])) start--;
        const char *end = k + 1; /* past the private directory's name */
        while (*end && *end != '/' && !strchr(" \t\n'\")", *end)) end++;
        kf_buf_append(&b, p, (size_t)(start - p));
        p = *end == '/' ? end + 1 : end;
    }
    if (b.len > cap) {
        b.p[cap] = 0;
        b.len = cap;
    }
    json_t *j = kf_text_json(b.p ? b.p : "");
    kf_buf_free(&b);
    return j;
}

char *kf_pack_verdict_summary(const char *verdict_json, const char *shapes_json) {
    json_t *v = verdict_json ? json_loads(verdict_json, 0, NULL) : NULL;
    if (!json_is_object(v)) {
        json_decref(v);
        return NULL;
    }
    json_t *o = json_object();
    json_object_set(o, "verdict", json_object_get(v, "verdict"));
    json_t *rs = json_array(), *r;
    size_t i;
    json_array_foreach(json_object_get(v, "reasons"), i, r) {
        if (i == 6) break; /* the first few say what to fix */
        json_t *x = json_pack("{s:O?}", "code", json_object_get(r, "code"));
        if (json_object_get(r, "shape")) json_object_set(x, "shape", json_object_get(r, "shape"));
        const char *m = json_string_value(json_object_get(r, "message"));
        if (m) json_object_set_new(x, "message", no_tmp_paths(m, 600));
        json_array_append_new(rs, x);
    }
    json_object_set_new(o, "reasons", rs);
    if (json_is_string(json_object_get(v, "when"))) json_object_set(o, "when", json_object_get(v, "when"));
    /* the check: how many shapes of each kind passed, and the failing ones */
    json_t *cs = json_object_get(json_object_get(v, "check"), "shapes");
    if (!cs) cs = json_object_get(v, "shapes");
    int n = 0, pass = 0, kinds[3] = {0, 0, 0};
    json_t *failed = json_array(), *s;
    json_array_foreach(cs, i, s) {
        const char *st = json_string_value(json_object_get(s, "status")),
                   *kd = json_string_value(json_object_get(s, "kind"));
        if (!st) continue;
        n++;
        pass += !strcmp(st, "passed");
        kinds[kd && !strcmp(kd, "visible") ? 0 : kd && !strcmp(kd, "hidden") ? 1 : 2]++;
        if (!strcmp(st, "failed") && json_array_size(failed) < 6)
            json_array_append_new(failed,
                                  json_pack("{s:O?, s:O?, s:O?}", "sizes", json_object_get(s, "sizes"),
                                            "kind", json_object_get(s, "kind"), "max_abs_err",
                                            json_object_get(s, "max_abs_err")));
    }
    if (n)
        json_object_set_new(o, "checked",
                            json_sprintf("%d of %d shapes passed (%d visible, %d hidden, %d edge)", pass, n,
                                         kinds[0], kinds[1], kinds[2]));
    if (json_array_size(failed)) json_object_set(o, "failed", failed);
    json_decref(failed);
    /* the timing: the geomean and each visible shape's figure (the recorded ones) */
    if (json_is_number(json_object_get(v, "speedup")))
        json_object_set(o, "speedup", json_object_get(v, "speedup"));
    json_t *sj = shapes_json ? json_loads(shapes_json, 0, NULL) : NULL;
    json_t *ts = json_is_array(sj) ? sj : json_object_get(v, "shapes"), *sh = json_array();
    json_array_foreach(ts, i, s) {
        if (!json_is_number(json_object_get(s, "speedup"))) continue;
        json_t *x = json_pack("{s:O?, s:O?}", "sizes", json_object_get(s, "sizes"), "speedup",
                              json_object_get(s, "speedup"));
        if (json_object_get(s, "ci95")) json_object_set(x, "ci95", json_object_get(s, "ci95"));
        if (json_object_get(s, "win")) json_object_set(x, "win", json_object_get(s, "win"));
        json_array_append_new(sh, x);
    }
    if (json_array_size(sh)) json_object_set(o, "shapes", sh);
    json_decref(sh);
    json_decref(sj);
    char *out = kf__json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(4));
    json_decref(o);
    json_decref(v);
    return out;
}

kf_status kf_pack_build(kf_ctx *ctx, const kf_pack_in *in, kf_pack *out) {
    kf_status st = build(ctx, in, out, -1);
    if (st) return st;
    double share = in->memory_share > 0 && in->memory_share <= 1 ? in->memory_share : KF_PACK_MEMORY_SHARE;
    int64_t mem =
        out->tokens[KF_PACK_FAILURES] + out->tokens[KF_PACK_CONSTRAINTS] + out->tokens[KF_PACK_LESSONS];
    if ((double)mem <= share * (double)out->tokens_prompt || share >= 1) return KF_OK;
    /* each section's count rounds up: take one token off each for the rounding */
    int64_t rest = kf_text_tokens(strlen(out->system)) - 1;
    for (int s = 0; s < KF_PACK_NSECTIONS; s++)
        if (!is_memory((kf_pack_section)s)) rest += out->tokens[s] > 0 ? out->tokens[s] - 1 : 0;
    int64_t cap = (int64_t)(share / (1 - share) * (double)rest);
    kf_pack_free(out);
    return build(ctx, in, out, cap);
}
