/*
 * test_prior.c - lessons as the builtin's prior (docs/run.md "Lessons"): a lesson that
 * names a setting of the template changes the builtin's first proposal, one out of scope,
 * distrusted or naming another template's parameter does not; disfavoured points come
 * last; `kforge run --lessons` records and shows what applied, and refuses a path that is
 * not a lessons database with exit 2.
 */
#define _GNU_SOURCE
#include "kft.h"

#include "loop/loop.h"
#include "search/builtin.h"
#include "store/store.h"
#include "util/util.h"

#include <jansson.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* softmax's template with W alone (the bundled one has more parameters since): the
 * walk's every point is countable here */
static void rm_w_only(void);
static const char *softmax_w_only(void) {
    static char path[64];
    if (path[0]) return path;
    atexit(rm_w_only);
    snprintf(path, sizeof path, "/tmp/kft-prior-w-%d.c", (int)getpid());
    char *src = NULL;
    size_t n = 0;
    if (kf__read_file(kft_src("tasks/c/softmax/candidates/param.c"), 1 << 20, &src, &n))
        return "/nonexistent";
    FILE *f = fopen(path, "w");
    if (!f) return "/nonexistent";
    for (char *l = src; l && *l;) {
        char *e = strchr(l, '\n');
        size_t len = e ? (size_t)(e - l + 1) : strlen(l);
        int other = (strstr(l, "kforge:param") || strstr(l, "kforge:require")) &&
                    (memmem(l, len, "UM", 2) || memmem(l, len, "UE", 2) || memmem(l, len, "RECOMP", 6));
        if (!other) fwrite(l, 1, len, f);
        l += len;
    }
    fclose(f);
    free(src);
    return path;
}

static void rm_w_only(void) {
    char path[64];
    snprintf(path, sizeof path, "/tmp/kft-prior-w-%d.c", (int)getpid());
    unlink(path);
}

/* The builtin's first proposal on softmax's template (W = 8, 4, 16) as "W=V". */
static const char *first(kf_builtin *b) {
    static char s[64];
    kf_point p;
    const char *sel[KF_MAX_PARAMS];
    char buf[256];
    CHECK(kf_builtin_next(b, NULL, -1, &p, NULL, NULL) == 0);
    kf_builtin_sel(b, &p, sel, buf, sizeof buf);
    snprintf(s, sizeof s, "%s", sel[0]);
    return s;
}

/* The builtin alone: weights move the start and put disfavoured points last; no prior
 * leaves the walk as it was. */
static void t_builtin(const void *arg) {
    (void)arg;
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = kft_task(ctx, "tasks/c/softmax");
    kf_builtin *a = NULL, *b = NULL;
    CHECK(kf_builtin_new(ctx, t, softmax_w_only(), 5, &a) == KF_OK);
    CHECK(kf_builtin_new(ctx, t, softmax_w_only(), 5, &b) == KF_OK);
    CHECKF(!strcmp(first(a), "W=8"), "%s", first(a)); /* the template's default */
    /* W's values as declared: 8, 4, 16 -> index 2 is 16 */
    CHECK(kf_builtin_prior(b, 0, 2, 1.0) == 0 && kf_builtin_prior(b, 0, 1, -0.5) == 0);
    CHECK(kf_builtin_prior(b, 1, 0, 1.0) == -1 && kf_builtin_prior(b, 0, 3, 1.0) == -1); /* out of range */
    kf_point s;
    CHECK(kf_builtin_prior_start(b, &s) == 1 && s.v[0] == 2);
    CHECKF(!strcmp(first(b), "W=16"), "%s", first(b));
    /* W=4 is disfavoured: the restarts take W=8 before it, whatever the seed */
    kf_point p;
    CHECK(kf_builtin_restart(b, &p) == 0 && p.v[0] == 0);
    CHECK(kf_builtin_restart(b, &p) == 0 && p.v[0] == 1);
    CHECK(kf_builtin_restart(b, &p) == -1);
    kf_builtin_free(a);
    kf_builtin_free(b);
    /* equal seeds without a prior: the same walk (the prior's code changes nothing) */
    for (uint64_t seed = 1; seed < 20; seed++) {
        CHECK(kf_builtin_new(ctx, t, softmax_w_only(), seed, &a) == KF_OK);
        CHECK(kf_builtin_new(ctx, t, softmax_w_only(), seed, &b) == KF_OK);
        kf_point pa, pb;
        int ra, rb;
        while ((ra = kf_builtin_restart(a, &pa)) == 0 && (rb = kf_builtin_restart(b, &pb)) == 0)
            CHECK(pa.v[0] == pb.v[0]);
        kf_builtin_free(a);
        kf_builtin_free(b);
    }
    kf_task_free(t);
    kf_ctx_free(ctx);
}

static char dir[] = "/tmp/kft-prior-XXXXXX";
static int dir_made;

static void rm_dir(void) { kf__rmtree(dir); }

/* A fresh lessons database holding the JSON lines given, at dir/NAME. */
static const char *lessons_db(kf_ctx *ctx, const char *name, const char *const *lines) {
    static char path[256];
    if (!dir_made) { /* (a random name may hold an X: a flag, not the name, says it is made) */
        CHECK(mkdtemp(dir));
        dir_made = 1;
        atexit(rm_dir);
    }
    snprintf(path, sizeof path, "%s/%s", dir, name);
    kf_lessons *db = NULL;
    CHECKF(kf_lessons_open(ctx, path, NULL, &db) == KF_OK, "%s", kf_errmsg(ctx));
    for (int i = 0; lines[i]; i++)
        CHECKF(kf_lessons_add_json(db, lines[i], NULL) == KF_OK, "%s", kf_errmsg(ctx));
    kf_lessons_close(db);
    return path;
}

/* softmax's first proposal after the prior from the database at path; *applied gets how
 * many lessons applied. */
static const char *first_with(kf_ctx *ctx, const char *path, int *applied) {
    kf_task *t = kft_task(ctx, "tasks/c/softmax");
    kf_builtin *b = NULL;
    CHECK(kf_builtin_new(ctx, t, softmax_w_only(), 9, &b) == KF_OK);
    char *ev = NULL;
    CHECKF(kf_loop_lessons_prior(ctx, t, path, b, &ev) == KF_OK, "%s", kf_errmsg(ctx));
    json_t *j = json_loads(ev, 0, NULL);
    *applied = (int)json_array_size(json_object_get(j, "applied"));
    json_decref(j);
    free(ev);
    const char *s = first(b);
    kf_builtin_free(b);
    kf_task_free(t);
    return s;
}

#define WIN(id, scope, trust)                                                                              \
    "{\"id\": \"" id "\", \"situation\": {\"text\": \"row kernels\", " scope "}, \"action\": \"Set W=16: " \
    "moving to it beat the parent at 2 shapes, 1.50x to 2.10x over the parent\", \"trust\": " trust "}"

static void t_lessons(const void *arg) {
    (void)arg;
    kf_ctx *ctx = kf_ctx_new();
    int n = -1;
    /* in scope (backend c, op/softmax), trusted: the walk starts at W=16 */
    const char *in[] = {WIN("w16", "\"backend\": \"c\", \"ops\": [\"op/softmax\"]", "{\"confirmations\": 1}"),
                        NULL};
    CHECKF(!strcmp(first_with(ctx, lessons_db(ctx, "in.db", in), &n), "W=16") && n == 1, "%d", n);
    /* in scope through the task's family ("ops": ["op/rowwise"] in softmax's task.json),
     * and with a shape predicate that holds for a visible shape */
    const char *fam[] = {WIN("w16", "\"ops\": [\"op/rowwise\"], \"shape\": \"cols >= 1000\"", "{}"), NULL};
    CHECKF(!strcmp(first_with(ctx, lessons_db(ctx, "fam.db", fam), &n), "W=16") && n == 1, "%d", n);
    /* out of scope: another backend, another op, a shape none of the task's has */
    const char *out[] = {WIN("cu", "\"backend\": \"cuda\"", "{}"), WIN("gm", "\"ops\": [\"op/gemm\"]", "{}"),
                         WIN("big", "\"shape\": \"cols > 100000\"", "{}"), NULL};
    CHECKF(!strcmp(first_with(ctx, lessons_db(ctx, "out.db", out), &n), "W=8") && n == 0, "%d", n);
    /* distrusted: refuted twice, confirmed never (trust 0.25 < 0.5) */
    const char *low[] = {WIN("low", "\"backend\": \"c\"", "{\"refutations\": 2}"), NULL};
    CHECKF(!strcmp(first_with(ctx, lessons_db(ctx, "low.db", low), &n), "W=8") && n == 0, "%d", n);
    /* a parameter or a value the template does not have, prose, a technique */
    const char *other[] = {
        "{\"situation\": \"rows\", \"action\": \"Set ACC=2: it won at 2 shapes, 1.1x to 3.0x\"}",
        "{\"situation\": \"rows\", \"action\": \"Set W=32: it won at 2 shapes, 1.1x to 3.0x\"}",
        "{\"situation\": \"rows\", \"action\": \"Use one warp per row\"}",
        "{\"situation\": \"rows\", \"action\": \"Use vectorisation: it won at 2 shapes\"}", NULL};
    CHECKF(!strcmp(first_with(ctx, lessons_db(ctx, "other.db", other), &n), "W=8") && n == 0, "%d", n);
    /* "Avoid" the default: the walk starts elsewhere */
    const char *avoid[] = {
        "{\"situation\": \"rows\", \"action\": \"Avoid W=8: 2 of its candidates failed\"}",
        "{\"situation\": \"rows\", \"action\": \"Set W=4: it won at 2 shapes, 1.2x to 1.3x\"}", NULL};
    CHECKF(!strcmp(first_with(ctx, lessons_db(ctx, "avoid.db", avoid), &n), "W=4") && n == 2, "%d", n);
    /* an "Avoid" of the default alone: the first declared value not avoided (W = 8, 4, 16) */
    const char *avoid1[] = {
        "{\"situation\": \"rows\", \"action\": \"Do not expect W=8 to help: 1 candidate\"}", NULL};
    CHECKF(!strcmp(first_with(ctx, lessons_db(ctx, "avoid1.db", avoid1), &n), "W=4") && n == 1, "%d", n);
    /* wins weigh trust x the greatest gain over the parent; an older distill's speedups
     * "over the reference" (mostly what its nodes inherited) count as a gain of 1 */
    const char *gain[] = {"{\"situation\": \"rows\", \"action\": \"Set W=16: it won at 2 shapes, 9.00x to "
                          "12.00x over the reference\"}",
                          "{\"situation\": \"rows\", \"action\": \"Set W=4: moving to it beat the parent at "
                          "2 shapes, 1.20x to 1.30x "
                          "over the parent\"}",
                          NULL};
    CHECKF(!strcmp(first_with(ctx, lessons_db(ctx, "gain.db", gain), &n), "W=4") && n == 2, "%d", n);
    const char *gain2[] = {"{\"situation\": \"rows\", \"action\": \"Set W=16: moving to it beat the parent "
                           "at 2 shapes, 1.10x to 1.45x "
                           "over the parent\"}",
                           "{\"situation\": \"rows\", \"action\": \"Set W=4: moving to it beat the parent at "
                           "2 shapes, 1.20x to 1.30x "
                           "over the parent\"}",
                           NULL};
    CHECKF(!strcmp(first_with(ctx, lessons_db(ctx, "gain2.db", gain2), &n), "W=16") && n == 2, "%d", n);
    kf_ctx_free(ctx);
}

/* A finished sgemm node at its two visible shapes (m128 n128 k128, m96 n160 k72). */
static int64_t sg_node(kf_store *s, int64_t parent, const char *params, kf_node_state state, double a,
                       double b) {
    static int serial;
    char text[64], h[65], shapes[512];
    snprintf(text, sizeof text, "/* sgemm node %d */\n", ++serial);
    CHECK(kf_store_put_source(s, text, strlen(text), "c", h) == KF_OK);
    kf_node n = {0};
    memcpy(n.src_hash, h, 65);
    strcpy(n.ext, "c");
    strcpy(n.proposer, "builtin");
    strcpy(n.category, "tiling");
    n.parent = parent;
    n.params_json = (char *)params;
    CHECK(kf_store_add_node(s, &n) == KF_OK);
    n.state = state;
    snprintf(shapes, sizeof shapes,
             "[{\"sizes\": {\"m\": 128, \"n\": 128, \"k\": 128}, \"speedup\": %g, \"win\": true},"
             " {\"sizes\": {\"m\": 96, \"n\": 160, \"k\": 72}, \"speedup\": %g, \"win\": true}]",
             a, b);
    n.shapes_json = shapes;
    n.speedup = a < b ? a : b;
    CHECK(kft_finish_node(s, &n) == KF_OK);
    return n.id;
}

#define SG(bk, up, v) "{\"BK\": " #bk ", \"BM\": 32, \"UP\": " #up ", \"V\": " #v "}"

/* The defect distill's gain rule fixes (docs/lessons.md "Distillation"): the fastest
 * nodes inherit BK=64 from their parent; BK=128 beat the slow default once and then, from
 * the fastest node, lost (kept at 28x without a 5% gain anywhere, and reverted). Credited
 * with their nodes' speedups over the reference, "Set BK=128" read "won ... up to 28x"
 * and BK=64 (credited with the default alone) 10x, so the prior started at BK=128. With
 * the gain over the parent, the walk starts at the fastest node's point. */
static void t_distilled(const void *arg) {
    (void)arg;
    kf_ctx *ctx = kf_ctx_new();
    const char *none[] = {NULL};
    char db[256], run[300];
    snprintf(db, sizeof db, "%s", lessons_db(ctx, "distilled.db", none));
    snprintf(run, sizeof run, "%s/sgemm-run", dir);
    kf_task *t = kft_task(ctx, "tasks/c/sgemm");
    kf_store *s = NULL;
    CHECKF(kf_store_create(ctx, run, t, NULL, &s) == KF_OK, "%s", kf_errmsg(ctx));
    int64_t d1 = sg_node(s, 0, SG(64, 1, 8), KF_NODE_KEPT, 10, 10);   /* the default */
    sg_node(s, d1, SG(128, 1, 8), KF_NODE_KEPT, 11, 11.5);            /* BK=128: 1.10x, 1.15x */
    int64_t d3 = sg_node(s, d1, SG(64, 4, 8), KF_NODE_KEPT, 20, 20);  /* UP=4: 2x */
    int64_t d4 = sg_node(s, d3, SG(64, 4, 16), KF_NODE_KEPT, 27, 28); /* V=16: the fastest */
    sg_node(s, d4, SG(128, 4, 16), KF_NODE_KEPT, 28, 19);             /* BK=128: 1.04x, 0.68x */
    sg_node(s, d4, SG(128, 4, 16), KF_NODE_REVERTED, 25, 24);         /* BK=128 lost */
    sg_node(s, d4, SG(32, 4, 16), KF_NODE_REVERTED, 22, 21);          /* BK=32 lost */
    kf_store_close(s);
    kf_lessons *l = NULL;
    CHECKF(kf_lessons_open(ctx, db, NULL, &l) == KF_OK, "%s", kf_errmsg(ctx));
    CHECKF(kf_lessons_distill(l, run, NULL) == KF_OK, "%s", kf_errmsg(ctx));
    kf_lessons_close(l);
    kf_builtin *b = NULL;
    CHECK(kf_builtin_new(ctx, t, kft_src("tasks/c/sgemm/candidates/param.c"), 3, &b) == KF_OK);
    char *ev = NULL;
    CHECKF(kf_loop_lessons_prior(ctx, t, db, b, &ev) == KF_OK, "%s", kf_errmsg(ctx));
    json_t *j = json_loads(ev, 0, NULL);
    double w64 = 0, w128 = 0, wup4 = 0, wv16 = 0;
    size_t i;
    json_t *a;
    json_array_foreach(json_object_get(j, "applied"), i, a) {
        const char *set = json_string_value(json_object_get(a, "setting"));
        double w = json_number_value(json_object_get(a, "weight"));
        if (!strcmp(set, "BK=64")) w64 += w;
        if (!strcmp(set, "BK=128")) w128 += w;
        if (!strcmp(set, "UP=4")) wup4 += w;
        if (!strcmp(set, "V=16")) wv16 += w;
    }
    CHECKF(w128 < 0 && w128 < w64, "BK=128 %.3f, BK=64 %.3f: %s", w128, w64, ev);
    CHECKF(wup4 > wv16 && wv16 > 0, "UP=4 %.3f, V=16 %.3f (gains 2x and 1.4x): %s", wup4, wv16, ev);
    json_t *st = json_object_get(j, "start");
    CHECKF(json_integer_value(json_object_get(st, "BK")) == 64 &&
               json_integer_value(json_object_get(st, "UP")) == 4 &&
               json_integer_value(json_object_get(st, "V")) == 16 &&
               json_integer_value(json_object_get(st, "BM")) == 32,
           "the walk does not start at the fastest node's point: %s", ev);
    json_decref(j);
    free(ev);
    kf_builtin_free(b);
    kf_task_free(t);
    kf_ctx_free(ctx);
}

static int cli(const char *args, char *out, size_t n) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "cd %s && %s %s", kft_src("."), kft_bin("kforge"), args);
    return kft_run(cmd, out, n);
}

static const char quick[] = "--min-runs 5 --max-runs 8 --min-time 0.01 --hidden 1";

/* kforge run --lessons: the first node is the lessons' point, the run records and shows
 * what applied, resume keeps it; bad paths are exit 2 and leave no run behind. */
static void t_run(const void *arg) {
    (void)arg;
    kf_ctx *ctx = kf_ctx_new();
    const char *in[] = {WIN("w16", "\"backend\": \"c\", \"ops\": [\"op/softmax\"]", "{\"confirmations\": 1}"),
                        NULL};
    char db[256], args[2048], out[1 << 16];
    snprintf(db, sizeof db, "%s", lessons_db(ctx, "run.db", in));
    snprintf(args, sizeof args,
             "run tasks/c/softmax --budget 1 --seed 4 --run %s/r --lessons %s %s --json 2>&1", dir, db,
             quick);
    /* the run says what applied when it starts, and its summary carries it */
    CHECKF(cli(args, out, sizeof out) == 0 && strstr(out, "kforge run: lessons from ") &&
               strstr(out, "w16 W=16") && strstr(out, "\"lessons\":{\"db\":"),
           "%s", out);
    snprintf(args, sizeof args, "tree %s/r --json", dir);
    CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
    json_t *j = json_loads(out, 0, NULL);
    json_t *n1 = json_array_get(json_object_get(j, "nodes"), 0);
    CHECKF(!strcmp(json_string_value(json_object_get(json_object_get(n1, "params"), "W")) ?: "", "16") ||
               json_integer_value(json_object_get(json_object_get(n1, "params"), "W")) == 16,
           "%s", out);
    json_t *ap = json_object_get(json_object_get(j, "lessons"), "applied");
    CHECKF(json_array_size(ap) == 1 &&
               !strcmp(json_string_value(json_object_get(json_array_get(ap, 0), "id")), "w16"),
           "%s", out);
    json_decref(j);
    snprintf(args, sizeof args, "tree %s/r", dir);
    CHECKF(cli(args, out, sizeof out) == 0 && strstr(out, "lessons from ") && strstr(out, "w16 W=16") &&
               strstr(out, "the walk started at W=16"),
           "%s", out);
    /* resume: the recorded lessons, not the flag */
    snprintf(args, sizeof args, "run --resume %s/r --budget 2 --lessons %s 2>&1", dir, db);
    CHECKF(cli(args, out, sizeof out) == 2 && strstr(out, "--lessons with --resume"), "%s", out);
    snprintf(args, sizeof args, "run --resume %s/r --budget 2 %s 2>&1", dir, quick);
    CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
    snprintf(args, sizeof args, "tree %s/r", dir);
    CHECKF(cli(args, out, sizeof out) == 0 && strstr(out, "lessons from ") && strstr(out, "W=16"), "%s", out);
    /* killed before its lessons were recorded (the run created with its settings, no
     * event yet; run.db cannot be edited into that state: its seals would show it):
     * resume reads the database in its config */
    {
        kf_ctx *c2 = kf_ctx_new();
        kf_store *st = NULL;
        snprintf(args, sizeof args, "%s/r", dir);
        CHECK(kf_store_open(c2, args, NULL, &st) == KF_OK);
        char *cfg = strdup(kf_store_config(st));
        kf_store_close(st);
        kf_task *tk = kft_task(c2, "tasks/c/softmax");
        snprintf(args, sizeof args, "%s/r2", dir);
        CHECKF(kf_store_create(c2, args, tk, cfg, &st) == KF_OK, "%s", kf_errmsg(c2));
        kf_store_close(st);
        kf_task_free(tk);
        free(cfg);
        kf_ctx_free(c2);
    }
    snprintf(args, sizeof args, "tree %s/r2", dir);
    CHECKF(cli(args, out, sizeof out) == 0 && !strstr(out, "lessons from "), "%s", out);
    snprintf(args, sizeof args, "run --resume %s/r2 --budget 1 %s 2>&1", dir, quick);
    CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
    snprintf(args, sizeof args, "tree %s/r2", dir);
    CHECKF(cli(args, out, sizeof out) == 0 && strstr(out, "lessons from ") && strstr(out, "w16 W=16"), "%s",
           out);
    /* unreadable, missing, not a database: exit 2, a message naming the path, no run */
    snprintf(args, sizeof args, "run tasks/c/softmax --budget 1 --run %s/bad --lessons %s/nowhere.db 2>&1",
             dir, dir);
    CHECKF(cli(args, out, sizeof out) == 2 && strstr(out, "--lessons ") && strstr(out, "nowhere.db") &&
               strstr(out, "No such file"),
           "%s", out);
    snprintf(args, sizeof args, "run tasks/c/softmax --budget 1 --run %s/bad --lessons %s 2>&1", dir,
             kft_src("tasks/c/softmax/task.json"));
    CHECKF(cli(args, out, sizeof out) == 2 && strstr(out, "not a lessons database"), "%s", out);
    if (getuid() != 0) { /* root reads anything */
        char noread[300];
        snprintf(noread, sizeof noread, "%s/noread.db", dir);
        FILE *f = fopen(noread, "w");
        CHECK(f && fwrite("SQLite format 3", 1, 16, f) == 16);
        fclose(f);
        CHECK(chmod(noread, 0) == 0);
        snprintf(args, sizeof args, "run tasks/c/softmax --budget 1 --run %s/bad --lessons %s 2>&1", dir,
                 noread);
        CHECKF(cli(args, out, sizeof out) == 2 && strstr(out, "Permission denied"), "%s", out);
    }
    char bad[300];
    snprintf(bad, sizeof bad, "%s/bad", dir);
    CHECK(access(bad, F_OK) != 0);
    kf_ctx_free(ctx);
}

void kft_register_prior(void) {
    kft_add("prior/builtin", t_builtin, NULL, 20);
    kft_add("prior/lessons", t_lessons, NULL, 30);
    kft_add("prior/run", t_run, NULL, 240);
    kft_add("prior/distilled", t_distilled, NULL, 30);
}
