/*
 * memory.c - context packs: the pack of an action, the lessons in it, and the packs'
 * token accounting.
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
 * endpoint reported when it reported any.
 *
 * The pack of an action (kf_loop_pack_for): what the run knows about the parent, read
 * from the store (its source, verdict and timings; the latest failures among its children
 * and siblings; the run's constraints that apply there) and the lessons, handed to
 * kf_pack_build (src/agent/pack.c), which fits them to the token budget.
 */
#include "memory.h"
#include "../backend/registry.h"

#include "../record/record.h"

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
        return kf__err(ctx, KF_EUSAGE,
                       "--lessons %s: %s (kforge lessons add or import creates one; "
                       "--lessons none runs without)",
                       path, strerror(errno));
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
    int64_t *vals =
        t->nshapes > 0 && t->nsizes > 0 ? calloc((size_t)t->nshapes * (size_t)t->nsizes, sizeof *vals) : NULL;
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
    json_t *ev = json_pack("{s:o, s:I, s:I, s:I, s:I, s:i}", "sections", secs, "frame",
                           (json_int_t)pk->frame_tokens, "estimated_prompt_tokens",
                           (json_int_t)pk->tokens_prompt, "budget_tokens", (json_int_t)pk->total,
                           "reported_prompt_tokens", (json_int_t)prompt_tokens, "lessons", pk->nlessons);
    if (ev && pending > 0) json_object_set_new(ev, "pending", json_integer(pending));
    char *js = ev ? kf__json_dumps(ev, JSON_COMPACT) : NULL;
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
        a->sec[s] += scale * (double)json_integer_value(
                                 json_object_get(secs, kf_pack_section_name((kf_pack_section)s)));
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
        json_object_set_new(secs, kf_pack_section_name((kf_pack_section)s),
                            json_integer((json_int_t)llround(a.sec[s])));
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
                     rep == packs ? "reported"
                     : rep        ? "partly reported"
                                  : "estimated");
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

/* ---- the context pack of an action -------------------------------------------------- */

#define PACK_FAILURES 8 /* recent failures of related nodes told to an agent */
#define PACK_CONSTRAINTS 32

static int failed_state(kf_node_state s) {
    return s == KF_NODE_REJECTED || s == KF_NODE_COMPILE_FAILED || s == KF_NODE_CRASHED ||
           s == KF_NODE_NO_CANDIDATE;
}

typedef struct {
    int64_t parent, grand; /* the action's parent and the parent's own parent (-1: none) */
    kf_pack_failure f[PACK_FAILURES];
    char *own[PACK_FAILURES][2];
    int n, next; /* a ring of the latest PACK_FAILURES */
} fail_ctx;

static int collect_failure(void *arg, const kf_node *n) {
    fail_ctx *c = arg;
    /* children of the parent (the new node's siblings) and siblings of the parent */
    int related = n->parent == c->parent || (c->grand >= 0 && n->parent == c->grand && n->id != c->parent);
    if (!related || !failed_state(n->state)) return 0;
    int k = c->next;
    free(c->own[k][0]);
    free(c->own[k][1]);
    c->own[k][0] = strdup(n->reasons ? n->reasons : kf_node_state_name(n->state));
    c->own[k][1] = kf_record_first_message(n);
    c->f[k] = (kf_pack_failure){n->id, c->own[k][0], c->own[k][1]};
    c->next = (k + 1) % PACK_FAILURES;
    if (c->n < PACK_FAILURES) c->n++;
    return 0;
}

typedef struct {
    char *text[PACK_CONSTRAINTS];
    int n;
    int64_t parent;
} cons_ctx;

static int collect_constraint(void *arg, const kf_constraint *c) {
    cons_ctx *k = arg;
    if (k->n == PACK_CONSTRAINTS) return 1;
    if (c->scope && c->scope != k->parent) return 0; /* another node's children */
    k->text[k->n] = strdup(c->text);
    if (k->text[k->n]) k->n++;
    return 0;
}

const char *kf_loop_task_ext(const kf_task *t) { return kf_backend_ext(kf_backend_get(t->backend)); }

/* The pack for improving node parent (0: the reference) along category (NULL: any):
 * task.json, the visible shapes, the parent's source, its verdict and per-shape timings,
 * recent failures of its children and siblings (latest first), the run's constraints. */
kf_status kf_loop_pack_for(kf_ctx *ctx, const kf_task *t, kf_store *st, kf_loop_memory *mem, int64_t budget,
                           int64_t parent, const char *category, kf_pack *out) {
    char path[4200], *task_json = NULL, *src = NULL, *shapes = NULL, *vsum = NULL;
    size_t len;
    kf_node pn;
    memset(&pn, 0, sizeof pn);
    fail_ctx fc;
    memset(&fc, 0, sizeof fc);
    cons_ctx cc;
    memset(&cc, 0, sizeof cc);
    kf_status s = KF_OK;
    snprintf(path, sizeof path, "%s/task.json", t->dir);
    if (kf__read_file(path, 4u << 20, &task_json, &len)) {
        s = kf__err(ctx, KF_EIO, "%s: %s", path, strerror(errno));
        goto out;
    }
    json_t *tj = json_loads(task_json, 0, NULL);
    shapes =
        json_object_get(tj, "shapes") ? kf__json_dumps(json_object_get(tj, "shapes"), JSON_COMPACT) : NULL;
    json_decref(tj);
    fc.parent = parent;
    fc.grand = -1;
    cc.parent = parent;
    if (parent == 0) {
        if (kf__read_file(t->ref_path, 4u << 20, &src, &len)) {
            s = kf__err(ctx, KF_EIO, "%s: %s", t->ref_path, strerror(errno));
            goto out;
        }
    } else {
        if ((s = kf_store_get_node(st, parent, &pn))) goto out;
        if ((s = kf_store_read_source(st, pn.src_hash, pn.ext, &src, &len))) goto out;
        fc.grand = pn.parent;
    }
    if ((s = kf_store_each_node(st, collect_failure, &fc))) goto out;
    if ((s = kf_store_each_constraint(st, collect_constraint, &cc))) goto out;
    kf_pack_failure fl[PACK_FAILURES];
    for (int i = 0; i < fc.n; i++)
        fl[i] = fc.f[((fc.next - 1 - i) % PACK_FAILURES + PACK_FAILURES) % PACK_FAILURES];
    kf_pack_in in;
    memset(&in, 0, sizeof in);
    in.task_dir = t->dir;
    in.task_json = task_json;
    in.shapes_json = shapes;
    in.parent_id = parent;
    in.parent_src = src;
    in.ext = kf_loop_task_ext(t);
    in.category = category;
    /* the verdict as a compact summary: a 1,100-token document with temporary paths
     * gave an agent nothing the summary does not */
    vsum = kf_pack_verdict_summary(pn.verdict_json, pn.shapes_json);
    in.verdict_json = vsum ? vsum : pn.verdict_json;
    in.timings_json = pn.shapes_json;
    in.failures = fl;
    in.nfailures = fc.n;
    in.constraints = (const char *const *)cc.text;
    in.nconstraints = cc.n;
    in.total = budget;
    char qtext[1024];
    snprintf(qtext, sizeof qtext, "%s %s %.800s", kf_task_name(t), category ? category : "",
             fc.n      ? fl[0].message ? fl[0].message : ""
             : pn.note ? pn.note
                       : "");
    if ((s = kf_loop_memory_lessons(mem, t, qtext, &in))) goto out;
    s = kf_pack_build(ctx, &in, out);
out:
    for (int i = 0; i < PACK_FAILURES; i++) free(fc.own[i][0]), free(fc.own[i][1]);
    for (int i = 0; i < cc.n; i++) free(cc.text[i]);
    kf_node_free(&pn);
    free(task_json);
    free(shapes);
    free(src);
    free(vsum);
    return s;
}
