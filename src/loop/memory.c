/*
 * memory.c - lessons for context packs, and the packs' token accounting.
 *
 * Lessons: one kf_lessons handle per run (its first retrieval loads the cache, the
 * others reuse it), queried with the task's scope (backend, op/<task name> and the task's
 * "ops", the host's
 * architecture for C tasks, the visible shapes) and a short text (the task, the
 * category asked for, the parent's feedback). The default database is used only when it
 * exists: kf_lessons_open would create an empty one, and a run must not write outside
 * its directory just to find nothing.
 *
 * Accounting: every pack handed to an agent is a "pack" event with its per-section
 * estimated tokens; a run's split sums them, scaling each pack to the prompt tokens its
 * endpoint reported when it reported any. Not here: building packs (src/agent/pack.c).
 */
#include "memory.h"
#include "../backend/registry.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

struct kf_loop_memory {
    kf_ctx *ctx;
    kf_lessons *db;
    kf_lesson_hit hits[KF_LOOP_LESSONS_K];
    char arch[65];
    char params_of[4096]; /* the task directory whose template parameters are in params */
    char params[2048];    /* " name name ... ": template_params, read once per task */
};

kf_status kf_loop_memory_open(kf_ctx *ctx, const char *path, kf_loop_memory **out) {
    *out = NULL;
    char def[4096];
    if (path && !strcmp(path, "none")) return KF_OK;
    if (path && !strcmp(path, "default")) { /* the shared database, named: it must exist */
        kf_lessons_default_path(def, sizeof def);
        path = def;
    }
    if (!path) {
        kf_lessons_default_path(def, sizeof def);
        if (access(def, F_OK)) return KF_OK; /* no shared database yet: no lessons */
        path = def;
    } else if (access(path, F_OK)) {
        return kf__err(ctx, KF_EUSAGE, "--lessons %s: %s (kforge lessons add or import creates one; "
                                       "--lessons none runs without)", path, strerror(errno));
    }
    kf_loop_memory *m = calloc(1, sizeof *m);
    if (!m) return kf__err(ctx, KF_ENOMEM, "out of memory");
    m->ctx = ctx;
    kf_status st = kf_lessons_open(ctx, path, NULL, &m->db);
    if (st) {
        free(m);
        return st;
    }
    struct utsname u;
    if (!uname(&u)) snprintf(m->arch, sizeof m->arch, "%s", u.machine);
    *out = m;
    return KF_OK;
}

void kf_loop_memory_close(kf_loop_memory *m) {
    if (!m) return;
    kf_lessons_close(m->db);
    free(m);
}

/* The task's template parameters as " name name ... " (lower case; "" when it has no
 * template): candidates/param.<ext>'s kforge:param lines (a backend's extension). */
static void template_params(const kf_task *t, char *out, size_t n) {
    snprintf(out, n, " ");
    kf_backend *b;
    for (int e = 0; (b = kf_backend_at(e)); e++) {
        char path[4200];
        snprintf(path, sizeof path, "%s/candidates/param.%s", t->dir, kf_backend_ext(b));
        char *text = NULL;
        size_t len = 0;
        if (kf__read_file(path, 1 << 20, &text, &len)) continue;
        size_t at = 1;
        for (char *p = strstr(text, "kforge:param"); p; p = strstr(p + 12, "kforge:param")) {
            char name[64];
            if (sscanf(p, "kforge:param %63[A-Za-z0-9_]", name) != 1) continue;
            for (char *c = name; *c; c++) *c = (char)tolower((unsigned char)*c);
            int k = snprintf(out + at, n - at, "%s ", name);
            if (k < 0 || (size_t)k >= n - at) break;
            at += (size_t)k;
        }
        free(text);
        return;
    }
}

/* Is lesson id about a template parameter (a "param/K=V" tag, as distill writes) that the
 * task's template (names, from template_params) does not have? Such a lesson (softmax's
 * RECOMP in rmsnorm's pack, through op/rowwise) names a setting the agent cannot make:
 * it takes the pack's tokens and says nothing. Lessons without such tags always pass. */
static int about_absent_param(kf_lessons *db, const char *id, const char *names) {
    char *js = NULL;
    if (kf_lessons_get_json(db, id, &js)) return 0;
    json_t *l = json_loads(js, 0, NULL);
    free(js);
    int absent = 0;
    size_t i;
    json_t *x;
    json_array_foreach(json_object_get(l, "tags"), i, x) {
        const char *tag = json_string_value(x);
        if (!tag || strncmp(tag, "param/", 6)) continue;
        char want[80];
        snprintf(want, sizeof want, " %.*s ", (int)strcspn(tag + 6, "="), tag + 6);
        if (!strstr(names, want)) absent = 1;
    }
    json_decref(l);
    return absent;
}

kf_status kf_loop_memory_lessons(kf_loop_memory *m, const kf_task *t, const char *text, kf_pack_in *in) {
    if (!m) return KF_OK;
    char op[128];
    snprintf(op, sizeof op, "op/%s", t->name);
    const char *ops[1 + 16] = {op}; /* op/<task name>, then the task's own "ops" */
    int nops = 1;
    for (int k = 0; k < t->nops && nops < 17; k++) ops[nops++] = t->ops[k];
    int64_t *vals = t->nshapes > 0 && t->nsizes > 0 ? calloc((size_t)t->nshapes * (size_t)t->nsizes, sizeof *vals)
                                                     : NULL;
    for (int i = 0; vals && i < t->nshapes; i++)
        memcpy(vals + (size_t)i * (size_t)t->nsizes, t->shapes[i].v, (size_t)t->nsizes * sizeof *vals);
    kf_lesson_query q = {0};
    q.backend = t->backend;
    /* a CPU backend's kernel runs on this host; a device's is not known here */
    q.arch = kf_backend_has(kf_backend_get(t->backend), KF_BACKEND_CPU) && m->arch[0] ? m->arch : NULL;
    q.ops = ops;
    q.nops = nops;
    q.shape_names = (const char *const *)t->size_names;
    q.nshape_names = vals ? t->nsizes : 0;
    q.shapes = vals;
    q.nshapes = vals ? t->nshapes : 0;
    q.text = text;
    int n = 0, kept = 0;
    kf_lesson_hit more[3 * KF_LOOP_LESSONS_K]; /* room for the ones about absent parameters */
    kf_status st = kf_lessons_retrieve(m->db, &q, 3 * KF_LOOP_LESSONS_K, KF_LOOP_LESSONS_TRUST, more, &n);
    free(vals);
    if (st) return st;
    if (strcmp(m->params_of, t->dir)) { /* the template is read once, not for every pack */
        template_params(t, m->params, sizeof m->params);
        snprintf(m->params_of, sizeof m->params_of, "%s", t->dir);
    }
    for (int i = 0; i < n && kept < KF_LOOP_LESSONS_K; i++)
        if (!about_absent_param(m->db, more[i].id, m->params)) m->hits[kept++] = more[i];
    in->lessons_db = m->db;
    in->lesson_hits = m->hits;
    in->nlesson_hits = kept;
    return KF_OK;
}

kf_status kf_loop_pack_record(kf_store *st, int64_t node, const kf_pack *pk, int64_t prompt_tokens,
                              int64_t pending) {
    json_t *secs = json_object();
    for (int s = 0; s < KF_PACK_NSECTIONS; s++)
        json_object_set_new(secs, kf_pack_section_name((kf_pack_section)s), json_integer(pk->tokens[s]));
    json_t *ev = json_pack("{s:o, s:I, s:I, s:I, s:I, s:i}", "sections", secs, "frame", (json_int_t)pk->frame_tokens,
                           "estimated_prompt_tokens", (json_int_t)pk->tokens_prompt, "budget_tokens",
                           (json_int_t)pk->total, "reported_prompt_tokens", (json_int_t)prompt_tokens, "lessons",
                           pk->nlessons);
    if (ev && pending > 0) json_object_set_new(ev, "pending", json_integer(pending));
    char *js = ev ? json_dumps(ev, JSON_COMPACT) : NULL;
    json_decref(ev);
    kf_status rc = js ? kf_store_event(st, node, "pack", js) : KF_ENOMEM;
    free(js);
    return rc;
}

typedef struct {
    double sec[KF_PACK_NSECTIONS], frame, prompt;
    int packs, reported;
    int64_t lessons; /* lessons rendered into the packs, summed */
} split_acc;

static int add_pack(void *arg, int64_t id, int64_t node, const char *js, double created) {
    (void)id, (void)node, (void)created;
    split_acc *a = arg;
    json_t *e = js ? json_loads(js, 0, NULL) : NULL;
    if (!e) return 0;
    double est = (double)json_integer_value(json_object_get(e, "estimated_prompt_tokens"));
    json_int_t rep = json_integer_value(json_object_get(e, "reported_prompt_tokens"));
    double scale = rep > 0 && est > 0 ? (double)rep / est : 1;
    json_t *secs = json_object_get(e, "sections");
    for (int s = 0; s < KF_PACK_NSECTIONS; s++)
        a->sec[s] += scale * (double)json_integer_value(json_object_get(secs, kf_pack_section_name((kf_pack_section)s)));
    a->frame += scale * (double)json_integer_value(json_object_get(e, "frame"));
    a->prompt += rep > 0 ? (double)rep : est;
    a->packs++;
    a->reported += rep > 0;
    a->lessons += json_integer_value(json_object_get(e, "lessons"));
    json_decref(e);
    return 0;
}

kf_status kf_loop_pack_split(kf_store *st, json_t **out) {
    *out = NULL;
    split_acc a;
    memset(&a, 0, sizeof a);
    kf_status rc = kf_store_each_event(st, "pack", add_pack, &a);
    if (rc || !a.packs) return rc;
    json_t *secs = json_object();
    for (int s = 0; s < KF_PACK_NSECTIONS; s++)
        json_object_set_new(secs, kf_pack_section_name((kf_pack_section)s), json_integer((json_int_t)llround(a.sec[s])));
    double mem = a.sec[KF_PACK_FAILURES] + a.sec[KF_PACK_CONSTRAINTS] + a.sec[KF_PACK_LESSONS];
    *out = json_pack("{s:i, s:i, s:I, s:o, s:I, s:I, s:f, s:f}", "packs", a.packs, "reported", a.reported,
                     "prompt_tokens", (json_int_t)llround(a.prompt), "sections", secs, "frame",
                     (json_int_t)llround(a.frame), "memory_tokens", (json_int_t)llround(mem), "memory_share",
                     a.prompt > 0 ? mem / a.prompt : 0.0, "lessons_share",
                     a.prompt > 0 ? a.sec[KF_PACK_LESSONS] / a.prompt : 0.0);
    if (*out) json_object_set_new(*out, "lessons", json_integer((json_int_t)a.lessons));
    return *out ? KF_OK : KF_ENOMEM;
}

void kf_loop_pack_split_text(const json_t *split, char *buf, size_t n) {
    double total = (double)json_integer_value(json_object_get(split, "prompt_tokens"));
    int packs = (int)json_integer_value(json_object_get(split, "packs"));
    int rep = (int)json_integer_value(json_object_get(split, "reported"));
    int k = snprintf(buf, n, "prompt tokens %.0f over %d pack%s (%s):", total, packs, packs == 1 ? "" : "s",
                     rep == packs ? "reported" : rep ? "partly reported" : "estimated");
    json_t *secs = json_object_get(split, "sections");
    for (int s = 0; s < KF_PACK_NSECTIONS; s++) {
        const char *key = kf_pack_section_name((kf_pack_section)s);
        double t = (double)json_integer_value(json_object_get(secs, key));
        if (t > 0 && k >= 0 && (size_t)k < n)
            k += snprintf(buf + k, n - (size_t)k, " %s %.0f%%", key, total > 0 ? 100 * t / total : 0);
    }
    if (k >= 0 && (size_t)k < n)
        snprintf(buf + k, n - (size_t)k, ", frame %.0f%%; memory %.1f%%; %lld lessons in the packs",
                 total > 0 ? 100 * (double)json_integer_value(json_object_get(split, "frame")) / total : 0,
                 100 * json_number_value(json_object_get(split, "memory_share")),
                 (long long)json_integer_value(json_object_get(split, "lessons")));
}
