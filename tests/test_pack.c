/*
 * test_pack.c - context packs under a token budget (docs/run.md "The context pack"):
 * the budget is never exceeded, allowances and the memory cap hold, what a section does
 * not need goes to the others, lessons come from a real lessons database, and a run with
 * a scripted cmd agent records each pack's per-section counts and sums them.
 */
#define _GNU_SOURCE
#include "kft.h"

#include "agent/agent.h"
#include "loop/memory.h"
#include "store/store.h"
#include "task/task.h"
#include "util/util.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *orempty(const char *s) { return s ? s : ""; }
#define CHECKSTR(hay, needle) \
    CHECKF(strstr(orempty(hay), (needle)), "expected '%s' in '%.2000s'", (needle), orempty(hay))

static const char quick[] = "--min-runs 5 --max-runs 8 --min-time 0.01 --hidden 1";

/* a text of about n bytes in lines of 40 */
static char *filler(size_t n, char c) {
    char *s = malloc(n + 1);
    CHECK(s);
    for (size_t i = 0; i < n; i++) s[i] = (i % 40 == 39) ? '\n' : c;
    s[n] = 0;
    return s;
}

static int64_t mem_tokens(const kf_pack *p) {
    return p->tokens[KF_PACK_FAILURES] + p->tokens[KF_PACK_CONSTRAINTS] + p->tokens[KF_PACK_LESSONS];
}

/* 300 packs of random section sizes and budgets: the whole prompt stays within the
 * budget, no section passes what it was granted, memory stays under 20%, a section that
 * needs its whole allowance gets at least that, and the counts add up. */
static void t_budget(const void *arg) {
    (void)arg;
    kf_ctx *ctx = kf_ctx_new();
    srand(7);
    for (int it = 0; it < 300; it++) {
        size_t sz[5];
        for (int k = 0; k < 5; k++) sz[k] = rand() % 4 ? (size_t)(rand() % 60000) : 0;
        char *task = filler(sz[0], 't'), *shapes = filler(sz[1] / 8, 's'), *src = filler(sz[2] * 2, 'p'),
             *ver = filler(sz[3], 'v'), *tim = filler(sz[4] / 4, 'm');
        int nf = rand() % 20, nc = rand() % 40, nl = rand() % 10;
        kf_pack_failure f[20];
        char *msgs[20], *cons[40], *les[10];
        for (int i = 0; i < nf; i++) {
            msgs[i] = filler((size_t)(rand() % 3000), 'f');
            f[i] = (kf_pack_failure){i + 1, "wrong_result", msgs[i]};
        }
        for (int i = 0; i < nc; i++) cons[i] = filler((size_t)(rand() % 400), 'c');
        for (int i = 0; i < nl; i++) les[i] = filler((size_t)(rand() % 2000), 'l');
        kf_pack_in in = {0};
        in.task_dir = "tasks/c/saxpy";
        in.task_json = task;
        in.shapes_json = shapes;
        in.parent_id = it;
        in.parent_src = src;
        in.verdict_json = ver;
        in.timings_json = tim;
        in.failures = f;
        in.nfailures = nf;
        in.constraints = (const char *const *)cons;
        in.nconstraints = nc;
        in.lessons = (const char *const *)les;
        in.nlessons = nl;
        in.category = it % 2 ? "tiling" : NULL;
        in.total = it % 5 ? 1000 + rand() % 40000 : 0;
        kf_pack p;
        CHECKF(kf_pack_build(ctx, &in, &p) == KF_OK, "%s", kf_errmsg(ctx));
        int64_t total = in.total ? in.total : KF_PACK_DEFAULT_TOKENS, sum = 0;
        CHECKF(p.tokens_prompt <= total, "pack %d: %lld tokens for a budget of %lld", it,
               (long long)p.tokens_prompt, (long long)total);
        CHECK(p.total == total);
        CHECK(p.tokens_prompt == kf_text_tokens(strlen(p.system) + strlen(p.prompt)));
        CHECKF(mem_tokens(&p) <= total / 5, "pack %d: memory %lld of %lld", it, (long long)mem_tokens(&p),
               (long long)total);
        CHECKF(mem_tokens(&p) * 5 <= p.tokens_prompt, "pack %d: memory %lld of a %lld-token pack", it,
               (long long)mem_tokens(&p), (long long)p.tokens_prompt);
        for (int s = 0; s < KF_PACK_NSECTIONS; s++) {
            CHECKF(p.tokens[s] <= p.granted[s], "pack %d: %s %lld > granted %lld", it,
                   kf_pack_section_name((kf_pack_section)s), (long long)p.tokens[s], (long long)p.granted[s]);
            /* a section that needs more than its allowance is cut, never starved below it */
            if (p.full_tokens[s] > p.allowance[s] &&
                !(s == KF_PACK_FAILURES || s == KF_PACK_CONSTRAINTS || s == KF_PACK_LESSONS))
                CHECKF(p.granted[s] >= p.allowance[s], "pack %d: %s granted %lld under its allowance %lld",
                       it, kf_pack_section_name((kf_pack_section)s), (long long)p.granted[s],
                       (long long)p.allowance[s]);
            if (p.truncated[s] && p.tokens[s] > 0) CHECK(strstr(p.prompt, "[kforge: truncated"));
            sum += p.tokens[s];
        }
        CHECK(p.frame_tokens == p.tokens_prompt - sum && p.frame_tokens > 0);
        json_t *j = json_loads(p.json, 0, NULL);
        CHECKF(j, "pack %d: invalid JSON", it);
        CHECK(json_integer_value(json_object_get(j, "budget_tokens")) == total);
        CHECK(json_integer_value(json_object_get(j, "memory_tokens")) == mem_tokens(&p));
        json_decref(j);
        kf_pack_free(&p);
        free(task), free(shapes), free(src), free(ver), free(tim);
        for (int i = 0; i < nf; i++) free(msgs[i]);
        for (int i = 0; i < nc; i++) free(cons[i]);
        for (int i = 0; i < nl; i++) free(les[i]);
    }
    kf_pack_in in = {0};
    kf_pack p;
    in.total = 999;
    CHECK(kf_pack_build(ctx, &in, &p) == KF_EUSAGE);
    CHECKSTR(kf_errmsg(ctx), "at least 1000");
    kf_ctx_free(ctx);
}

/* What small sections leave goes to the parent first; with lessons present the parent
 * gets less by what they take. */
static void t_giveback(const void *arg) {
    (void)arg;
    kf_ctx *ctx = kf_ctx_new();
    char *src = filler(400000, 'p'); /* 100,000 tokens: more than any budget here */
    kf_pack_in in = {0};
    in.task_json = "{\"name\": \"x\"}";
    in.parent_src = src;
    kf_pack p;
    CHECK(kf_pack_build(ctx, &in, &p) == KF_OK);
    CHECK(p.allowance[KF_PACK_PARENT] == 8000);
    /* every other section's allowance but the task's few tokens came back to it */
    CHECKF(p.granted[KF_PACK_PARENT] > 8000 + 6000, "parent granted %lld",
           (long long)p.granted[KF_PACK_PARENT]);
    CHECK(p.truncated[KF_PACK_PARENT] && p.tokens_prompt <= KF_PACK_DEFAULT_TOKENS);
    CHECK(p.granted[KF_PACK_LESSONS] == 0 && p.tokens[KF_PACK_LESSONS] == 0);
    int64_t alone = p.granted[KF_PACK_PARENT];
    kf_pack_free(&p);
    char *l1 = filler(6000, 'l'), *l2 = filler(6000, 'm');
    const char *les[] = {l1, l2};
    in.lessons = les;
    in.nlessons = 2;
    CHECK(kf_pack_build(ctx, &in, &p) == KF_OK);
    CHECK(p.granted[KF_PACK_LESSONS] > 0 && p.tokens[KF_PACK_LESSONS] > 0);
    CHECK(p.granted[KF_PACK_PARENT] == alone - p.granted[KF_PACK_LESSONS]);
    CHECK(p.tokens_prompt <= KF_PACK_DEFAULT_TOKENS);
    kf_pack_free(&p);
    free(l1), free(l2), free(src);
    kf_ctx_free(ctx);
}

static char tmpdir[64];
static void rm_tmp(void) {
    if (tmpdir[0]) kf__rmtree(tmpdir);
}
static const char *scratch(void) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/kft-pack-XXXXXX");
    CHECK(mkdtemp(tmpdir));
    atexit(rm_tmp);
    return tmpdir;
}

/* A lessons database with one lesson for C saxpy and one for CUDA softmax. */
static void make_lessons(const char *path) {
    kf_ctx *ctx = kf_ctx_new();
    kf_lessons *db = NULL;
    CHECKF(kf_lessons_open(ctx, path, NULL, &db) == KF_OK, "%s", kf_errmsg(ctx));
    CHECK(kf_lessons_add_json(
              db,
              "{\"id\": \"saxpy-tail\", \"situation\": {\"text\": \"saxpy with n not a multiple of "
              "the vector width\", \"backend\": \"c\", \"ops\": [\"op/saxpy\"]}, \"action\": \"keep a "
              "scalar tail loop after the vectorised one\"}",
              NULL) == KF_OK);
    CHECK(kf_lessons_add_json(
              db,
              "{\"id\": \"softmax-warp\", \"situation\": {\"text\": \"rows of at most 1024\", "
              "\"backend\": \"cuda\", \"ops\": [\"op/softmax\"]}, \"action\": \"one warp per row\"}",
              NULL) == KF_OK);
    kf_lessons_close(db);
    kf_ctx_free(ctx);
}

/* Lessons retrieved for the task's scope fill the section; a task no lesson matches has
 * none, and its allowance goes to the others. A named database that does not exist is an
 * error; "none" and a missing default are not. */
static void t_lessons(const void *arg) {
    (void)arg;
    const char *dir = scratch();
    char db[256];
    snprintf(db, sizeof db, "%s/lessons.db", dir);
    make_lessons(db);
    kf_ctx *ctx = kf_ctx_new();
    kf_loop_memory *m = NULL;
    CHECKF(kf_loop_memory_open(ctx, db, &m) == KF_OK && m, "%s", kf_errmsg(ctx));
    const char *tasks[] = {"tasks/c/saxpy", "tasks/c/softmax"};
    int64_t parent_grant[2];
    for (int i = 0; i < 2; i++) {
        kf_task *t = kft_task(ctx, tasks[i]);
        char *src = filler(200000, 'p');
        kf_pack_in in = {0};
        in.task_json = "{}";
        in.parent_src = src;
        CHECKF(kf_loop_memory_lessons(m, t, "vectorisation", &in) == KF_OK, "%s", kf_errmsg(ctx));
        kf_pack p;
        CHECKF(kf_pack_build(ctx, &in, &p) == KF_OK, "%s", kf_errmsg(ctx));
        json_t *j = json_loads(p.json, 0, NULL);
        if (i == 0) {
            CHECKF(in.nlesson_hits == 1 && p.nlessons == 1, "%d hits", in.nlesson_hits);
            CHECKSTR(p.prompt, "# Lessons\n");
            CHECKSTR(p.prompt, "keep a scalar tail loop");
            CHECK(!strcmp(json_string_value(json_array_get(json_object_get(j, "lesson_ids"), 0)),
                          "saxpy-tail"));
            CHECK(p.tokens[KF_PACK_LESSONS] > 0 && p.tokens[KF_PACK_LESSONS] <= p.granted[KF_PACK_LESSONS]);
        } else {
            /* the CUDA softmax lesson is out of a C task's scope */
            CHECK(in.nlesson_hits == 0 && p.nlessons == 0);
            CHECK(!strstr(p.prompt, "# Lessons") && !strstr(p.prompt, "one warp per row"));
            CHECK(p.granted[KF_PACK_LESSONS] == 0 && json_array_size(json_object_get(j, "lessons")) == 0);
        }
        parent_grant[i] = p.granted[KF_PACK_PARENT];
        json_decref(j);
        kf_pack_free(&p);
        free(src);
        kf_task_free(t);
    }
    /* the lessons' allowance went to the parent when there were none */
    CHECK(parent_grant[1] > parent_grant[0]);
    kf_loop_memory_close(m);

    char missing[256];
    snprintf(missing, sizeof missing, "%s/nope.db", dir);
    m = NULL;
    CHECK(kf_loop_memory_open(ctx, missing, &m) == KF_EUSAGE && !m);
    CHECKSTR(kf_errmsg(ctx), "--lessons ");
    CHECK(access(missing, F_OK) != 0); /* nothing created */
    CHECK(kf_loop_memory_open(ctx, "none", &m) == KF_OK && !m);
    setenv("XDG_DATA_HOME", dir, 1); /* no kforge/lessons.db under it */
    CHECK(kf_loop_memory_open(ctx, NULL, &m) == KF_OK && !m);
    kf_ctx_free(ctx);
}

/* A lesson about a template parameter (a "param/K=V" tag, as distill writes) reaches a
 * pack only when the task's template has K: softmax's RECOMP lessons, in scope for rmsnorm
 * through op/rowwise, took 19% of an rmsnorm agent's prompt and named a setting rmsnorm's
 * template does not have. Lessons without such tags, and those about its own W, stay. */
static void t_lessons_params(const void *arg) {
    (void)arg;
    const char *dir = scratch();
    char db[256];
    snprintf(db, sizeof db, "%s/params.db", dir);
    kf_ctx *ctx = kf_ctx_new();
    kf_lessons *l = NULL;
    CHECKF(kf_lessons_open(ctx, db, NULL, &l) == KF_OK, "%s", kf_errmsg(ctx));
    static const char *const add[] = {
        "{\"id\": \"recomp\", \"situation\": {\"text\": \"row kernels\", \"backend\": \"c\", \"ops\": "
        "[\"op/rowwise\"]},"
        " \"action\": \"Set RECOMP=0\", \"tags\": [\"param/recomp=0\"]}",
        "{\"id\": \"w16\", \"situation\": {\"text\": \"row kernels\", \"backend\": \"c\", \"ops\": "
        "[\"op/rowwise\"]},"
        " \"action\": \"Set W=16\", \"tags\": [\"param/w=16\"]}",
        "{\"id\": \"plain\", \"situation\": {\"text\": \"row kernels\", \"backend\": \"c\", \"ops\": "
        "[\"op/rowwise\"]},"
        " \"action\": \"keep one row in cache\"}",
    };
    for (int i = 0; i < 3; i++) CHECKF(kf_lessons_add_json(l, add[i], NULL) == KF_OK, "%s", kf_errmsg(ctx));
    kf_lessons_close(l);
    kf_loop_memory *m = NULL;
    CHECKF(kf_loop_memory_open(ctx, db, &m) == KF_OK && m, "%s", kf_errmsg(ctx));
    const char *tasks[] = {"tasks/c/rmsnorm", "tasks/c/softmax"};
    for (int i = 0; i < 2; i++) {
        kf_task *t = kft_task(ctx, tasks[i]);
        kf_pack_in in = {0};
        CHECKF(kf_loop_memory_lessons(m, t, "row kernels", &in) == KF_OK, "%s", kf_errmsg(ctx));
        int seen[3] = {0, 0, 0};
        for (int h = 0; h < in.nlesson_hits; h++)
            for (int k = 0; k < 3; k++)
                seen[k] |= !strcmp(in.lesson_hits[h].id, k == 0 ? "recomp" : k == 1 ? "w16" : "plain");
        if (i == 0)
            CHECKF(!seen[0] && seen[1] && seen[2], "rmsnorm: recomp %d w16 %d plain %d", seen[0], seen[1],
                   seen[2]);
        else
            CHECKF(seen[0] && seen[1] && seen[2], "softmax: recomp %d w16 %d plain %d", seen[0], seen[1],
                   seen[2]);
        kf_task_free(t);
    }
    kf_loop_memory_close(m);
    kf_ctx_free(ctx);
}

static int cli(const char *args, char *out, size_t n) {
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "cd %s && %s %s", kft_src("."), kft_bin("kforge"), args);
    return kft_run(cmd, out, n);
}

typedef struct {
    int64_t sec[KF_PACK_NSECTIONS], est, rep;
    int n;
} sums;

static int sum_pack(void *arg, int64_t id, int64_t node, const char *js, double created) {
    (void)id, (void)created;
    sums *s = arg;
    json_t *e = json_loads(js, 0, NULL);
    CHECK(e && node > 0);
    for (int k = 0; k < KF_PACK_NSECTIONS; k++)
        s->sec[k] += json_integer_value(
            json_object_get(json_object_get(e, "sections"), kf_pack_section_name((kf_pack_section)k)));
    s->est += json_integer_value(json_object_get(e, "estimated_prompt_tokens"));
    s->rep += json_integer_value(json_object_get(e, "reported_prompt_tokens"));
    s->n++;
    json_decref(e);
    return 0;
}

/* A scripted cmd agent over a run with lessons: each proposal's pack is a "pack" event
 * with its per-section counts, and the summary's split sums them (estimated, since the
 * agent reports nothing); the final line gives the memory share. A second agent that
 * reports its usage gets the endpoint's count, apportioned. */
static void t_run_split(const void *arg) {
    (void)arg;
    const char *dir = scratch();
    char db[256], script[2048], path[512], args[4096], out[1 << 16];
    snprintf(db, sizeof db, "%s/lessons.db", dir);
    make_lessons(db);
    /* it follows the category asked for: a specialisation (of the whole domain) has a
     * kforge:when, as one without is refused */
    snprintf(
        script, sizeof script,
        "grep -q saxpy-tail \"$KFORGE_PACK\" || exit 4\n"
        "{ grep -q '\"category\": *\"specialisation\"' \"$KFORGE_PACK\" && echo '/* kforge:when n > 0 */'; "
        "cat %s; } > \"$KFORGE_OUT\"\n",
        kft_src("tasks/c/saxpy/candidates/fast.c"));
    snprintf(path, sizeof path, "%s/agent.sh", dir);
    FILE *f = fopen(path, "w");
    CHECK(f);
    fputs(script, f);
    fclose(f);
    snprintf(args, sizeof args,
             "run tasks/c/saxpy --budget 3 --seed 1 --run %s/r --agent 'cmd:sh %s' --lessons %s "
             "--pack-tokens 4000 "
             "--json %s 2>%s/err",
             dir, path, db, quick, dir);
    CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
    json_t *sum = json_loads(out, 0, NULL);
    json_t *split = json_object_get(sum, "pack_tokens");
    CHECKF(split, "no pack_tokens in %s", out);
    CHECK(json_integer_value(json_object_get(split, "packs")) == 3);
    CHECK(json_integer_value(json_object_get(split, "reported")) == 0);

    char run[300];
    snprintf(run, sizeof run, "%s/r", dir);
    kf_ctx *ctx = kf_ctx_new();
    kf_store *st = NULL;
    CHECK(kf_store_open(ctx, run, NULL, &st) == KF_OK);
    sums s = {0};
    CHECK(kf_store_each_event(st, "pack", sum_pack, &s) == KF_OK);
    CHECK(s.n == 3 && s.rep == -3);
    json_t *secs = json_object_get(split, "sections");
    for (int k = 0; k < KF_PACK_NSECTIONS; k++)
        CHECKF(json_integer_value(json_object_get(secs, kf_pack_section_name((kf_pack_section)k))) ==
                   s.sec[k],
               "section %s", kf_pack_section_name((kf_pack_section)k));
    CHECK(json_integer_value(json_object_get(split, "prompt_tokens")) == s.est);
    CHECK(s.sec[KF_PACK_LESSONS] > 0); /* the lesson was in every pack: the agent checked */
    double share = (double)(s.sec[KF_PACK_FAILURES] + s.sec[KF_PACK_CONSTRAINTS] + s.sec[KF_PACK_LESSONS]) /
                   (double)s.est;
    CHECK(json_number_value(json_object_get(split, "memory_share")) > share - 1e-9 &&
          json_number_value(json_object_get(split, "memory_share")) < share + 1e-9);
    CHECK(share > 0 && share <= 0.2);
    /* every node's prompt was within the budget */
    CHECK(s.est <= 3 * 4000);
    kf_store_close(st);
    json_decref(sum);
    char errp[300];
    snprintf(errp, sizeof errp, "%s/err", dir);
    char *err = NULL;
    size_t elen;
    CHECK(kf__read_file(errp, 1 << 20, &err, &elen) == 0);
    CHECKSTR(err, "prompt tokens ");
    CHECKSTR(err, "memory ");
    free(err);

    /* a resume from elsewhere keeps the run's lessons and budget (the agent exits 4
     * without the lesson in its pack, which would leave a no_candidate node) */
    snprintf(args, sizeof args, "cd / && %s run --resume %s --budget 4 --json %s 2>/dev/null",
             kft_bin("kforge"), run, quick);
    CHECKF(kft_run(args, out, sizeof out) == 0, "%s", out);
    sum = json_loads(out, 0, NULL);
    CHECKF(json_integer_value(json_object_get(json_object_get(sum, "pack_tokens"), "packs")) == 4, "%s", out);
    json_decref(sum);
    CHECK(kf_store_open(ctx, run, NULL, &st) == KF_OK);
    kf_node n4;
    CHECK(kf_store_get_node(st, 4, &n4) == KF_OK);
    CHECKF(n4.state != KF_NODE_NO_CANDIDATE, "the resumed run's pack had no lessons: %s", orempty(n4.note));
    kf_node_free(&n4);
    memset(&s, 0, sizeof s);
    CHECK(kf_store_each_event(st, "pack", sum_pack, &s) == KF_OK && s.n == 4 && s.est <= 4 * 4000);
    kf_store_close(st);

    /* an agent that reports 1000 prompt tokens: the split is the endpoint's */
    snprintf(script, sizeof script,
             "cp %s \"$KFORGE_OUT\"\necho '{\"prompt_tokens\": 1000, \"completion_tokens\": 5}' > "
             "\"$KFORGE_OUT.usage.json\"\n",
             kft_src("tasks/c/saxpy/candidates/fast.c"));
    f = fopen(path, "w");
    CHECK(f);
    fputs(script, f);
    fclose(f);
    snprintf(args, sizeof args,
             "run tasks/c/saxpy --budget 2 --seed 1 --run %s/r2 --agent 'cmd:sh %s' --lessons none --json %s "
             "2>/dev/null",
             dir, path, quick);
    CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
    sum = json_loads(out, 0, NULL);
    split = json_object_get(sum, "pack_tokens");
    /* one pack per proposal: two, or three when the second copy of fast.c was pruned as
     * its parent's source and the agent asked again */
    json_int_t packs = json_integer_value(json_object_get(split, "packs"));
    CHECKF(packs >= 2 && json_integer_value(json_object_get(split, "reported")) == packs, "%s", out);
    CHECKF(json_integer_value(json_object_get(split, "prompt_tokens")) == 1000 * packs, "%s", out);
    CHECK(json_integer_value(json_object_get(json_object_get(split, "sections"), "lessons")) == 0);
    int64_t tot = json_integer_value(json_object_get(split, "frame"));
    for (int k = 0; k < KF_PACK_NSECTIONS; k++)
        tot += json_integer_value(
            json_object_get(json_object_get(split, "sections"), kf_pack_section_name((kf_pack_section)k)));
    CHECKF(tot >= 1000 * packs - 10 && tot <= 1000 * packs + 10, "sections sum to %lld for %lld packs",
           (long long)tot, (long long)packs); /* rounding */
    json_decref(sum);
    /* a named lessons database that does not exist stops the run before it starts */
    snprintf(args, sizeof args,
             "run tasks/c/saxpy --budget 1 --run %s/r3 --agent 'cmd:sh %s' --lessons %s/no.db 2>&1", dir,
             path, dir);
    CHECK(cli(args, out, sizeof out) == 2);
    CHECKSTR(out, "no.db");
    kf_ctx_free(ctx);
}

/* The verdict section is a compact summary: verdict, reasons, what passed, per-shape
 * figures, and no temporary paths (the whole document was 1,100 tokens of sandbox,
 * ceilings and /tmp paths). */
static void t_verdict_summary(const void *arg) {
    (void)arg;
    const char *doc =
        "{\"verdict\": \"rejected\", \"candidate\": \"/tmp/kforge-run-77-AbCd/n4.c\", \"fingerprint\": "
        "\"bbd42635d9dc\", \"sandbox\": {\"seccomp\": true}, \"ceilings\": {\"cores\": 2}, \"reasons\": "
        "[{\"code\": \"compile_error\", \"message\": \"/tmp/kforge-run-77-AbCd/n4.c:12:3: error: expected "
        "';'\"}],"
        " \"check\": {\"shapes\": [{\"sizes\": {\"n\": 64}, \"kind\": \"visible\", \"status\": \"passed\"}, "
        "{\"sizes\": {\"n\": 7}, \"kind\": \"edge\", \"status\": \"failed\", \"max_abs_err\": 0.5}]}}";
    char *s = kf_pack_verdict_summary(doc, "[{\"sizes\": {\"n\": 64}, \"speedup\": 1.5, \"win\": true}]");
    CHECK(s != NULL);
    CHECKF(!strstr(s, "/tmp/") && !strstr(s, "kforge-run") && !strstr(s, "seccomp") &&
               !strstr(s, "bbd42635") && !strstr(s, "cores"),
           "%s", s);
    CHECKF(strstr(s, "\"n4.c:12:3: error: expected ';'\"") && strstr(s, "compile_error") &&
               strstr(s, "1 of 2 shapes passed (1 visible, 0 hidden, 1 edge)") &&
               strstr(s, "\"max_abs_err\":0.5") && strstr(s, "\"speedup\":1.5"),
           "%s", s);
    CHECKF(strlen(s) < strlen(doc), "%zu bytes from %zu", strlen(s), strlen(doc));
    free(s);
    CHECK(kf_pack_verdict_summary(NULL, NULL) == NULL && kf_pack_verdict_summary("not json", NULL) == NULL);
}

void kft_register_pack(void) {
    kft_add("pack/verdict_summary", t_verdict_summary, NULL, 30);
    kft_add("pack/budget", t_budget, NULL, 60);
    kft_add("pack/giveback", t_giveback, NULL, 30);
    kft_add("pack/lessons", t_lessons, NULL, 60);
    kft_add("pack/lessons_params", t_lessons_params, NULL, 60);
    kft_add("pack/run_split", t_run_split, NULL, 180);
}
