/*
 * test_task.c - the task contract: every bundled task loads; every kind of malformed
 * task is refused with a message that says where and what; hidden and edge shapes
 * respect ranges, constraints and a candidate's domain.
 */
#define _GNU_SOURCE
#include "kft.h"

#include "search/builtin.h"
#include "task/candidate.h"
#include "util/util.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *good_ref =
    "#include <stdint.h>\n"
    "void twice(const float *x, float *y, int64_t n) { for (int64_t i = 0; i < n; i++) y[i] = 2 * x[i]; }\n";

static const char *good_json =
    "{\"name\":\"twice\",\"backend\":\"c\",\"entry\":\"twice\",\n"
    " \"sizes\":{\"n\":[1,4096]},\n"
    " \"args\":[{\"name\":\"x\",\"type\":\"f32\",\"shape\":[\"n\"],\"io\":\"in\"},\n"
    "          {\"name\":\"y\",\"type\":\"f32\",\"shape\":[\"n\"],\"io\":\"out\"},\n"
    "          {\"name\":\"n\",\"type\":\"i64\",\"value\":\"n\"}],\n"
    " \"shapes\":[{\"n\":1000}],\"hidden\":{\"count\":3}}\n";

/* Write a task directory; returns its path (static). */
static const char *mktask(const char *json, const char *ref) {
    static char dir[256];
    snprintf(dir, sizeof dir, "/tmp/kft-task-XXXXXX");
    CHECK(mkdtemp(dir));
    char p[512];
    if (json) {
        snprintf(p, sizeof p, "%s/task.json", dir);
        FILE *f = fopen(p, "w");
        CHECK(f);
        fputs(json, f);
        fclose(f);
    }
    if (ref) {
        snprintf(p, sizeof p, "%s/reference.c", dir);
        FILE *f = fopen(p, "w");
        CHECK(f);
        fputs(ref, f);
        fclose(f);
    }
    return dir;
}

static void put(const char *dir, const char *name, const char *text) {
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    CHECK(f);
    fputs(text, f);
    fclose(f);
}

static void fp_of(const char *dir, char out[65]) {
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = NULL;
    CHECKF(kf_task_load(ctx, dir, &t) == KF_OK, "%s", kf_errmsg(ctx));
    memcpy(out, t->fingerprint, 65);
    kf_task_free(t);
    kf_ctx_free(ctx);
}

/* A Python reference's fingerprint covers the modules beside it (an imported KernelBench
 * task's reference runs its problem.py): a changed problem.py is a changed task, while a C
 * task's fingerprint ignores .py files, as before. */
static void t_fingerprint_python(const void *arg) {
    (void)arg;
    char dir[256], a[65], b[65], c[65];
    snprintf(dir, sizeof dir, "/tmp/kft-task-py-XXXXXX");
    CHECK(mkdtemp(dir));
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = kft_task(ctx, "tasks/c/softmax_torch");
    char src[512];
    snprintf(src, sizeof src, "cp %s/task.json %s/reference.py %s/", kft_src("tasks/c/softmax_torch"),
             kft_src("tasks/c/softmax_torch"), dir);
    CHECK(system(src) == 0);
    fp_of(dir, a);
    CHECKF(!strcmp(a, t->fingerprint), "a copy of the task has another fingerprint");
    put(dir, "problem.py", "N = 16\n");
    fp_of(dir, b);
    CHECKF(strcmp(a, b), "problem.py beside the reference left the fingerprint as it was");
    put(dir, "problem.py", "N = 17\n");
    fp_of(dir, c);
    CHECKF(strcmp(b, c), "a changed problem.py left the fingerprint as it was");
    put(dir, "notes.txt", "not Python\n");
    fp_of(dir, a);
    CHECKF(!strcmp(a, c), "a file other than .py changed the fingerprint");
    kf_task_free(t);
    kf__rmtree(dir);
    /* a C task: .py files beside it are not its reference's */
    const char *cdir = mktask(good_json, good_ref);
    fp_of(cdir, a);
    put(cdir, "problem.py", "N = 16\n");
    fp_of(cdir, b);
    CHECKF(!strcmp(a, b), "a .py file changed a C task's fingerprint");
    kf__rmtree(cdir);
    kf_ctx_free(ctx);
}

/* Load a task expected to fail with status st and a message containing each needle. */
static void refused(const char *json, const char *ref, kf_status want, const char *n1, const char *n2) {
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = NULL;
    const char *dir = mktask(json, ref);
    kf_status st = kf_task_load(ctx, dir, &t);
    CHECKF(st == want, "want %s, got %s: %s", kf_strstatus(want), kf_strstatus(st), kf_errmsg(ctx));
    CHECK(t == NULL);
    CHECKF(!n1 || strstr(kf_errmsg(ctx), n1), "message '%s' lacks '%s'", kf_errmsg(ctx), n1);
    CHECKF(!n2 || strstr(kf_errmsg(ctx), n2), "message '%s' lacks '%s'", kf_errmsg(ctx), n2);
    kf_ctx_free(ctx);
    kf__rmtree(dir);
}

static char *edit(const char *from, const char *to) {
    const char *p = strstr(good_json, from);
    CHECKF(p, "test bug: '%s' not in the good task", from);
    return kf__asprintf("%.*s%s%s", (int)(p - good_json), good_json, to, p + strlen(from));
}

/* Fixed data ("data" on an in buffer, docs/tasks.md): the file is read at load and must
 * hold the buffer's bytes exactly, the buffer must have one size over the size ranges,
 * and the fingerprint covers the bytes. Each refusal names the argument and the file. */
static const char *table_json =
    "{\"name\":\"tab\",\"backend\":\"c\",\"entry\":\"twice\",\n"
    " \"sizes\":{\"n\":[1,4096]},\n"
    " \"args\":[{\"name\":\"x\",\"type\":\"f32\",\"shape\":[\"n\"],\"io\":\"in\"},\n"
    "          {\"name\":\"w\",\"type\":\"f32\",\"shape\":[SHAPE],\"io\":\"IO\",\"data\":\"DATA\"EXTRA},\n"
    "          {\"name\":\"y\",\"type\":\"f32\",\"shape\":[\"n\"],\"io\":\"out\"},\n"
    "          {\"name\":\"n\",\"type\":\"i64\",\"value\":\"n\"}],\n"
    " \"shapes\":[{\"n\":1000}],\"hidden\":{\"count\":3}}\n";

/* table_json with its SHAPE, IO, DATA and EXTRA holes filled (caller frees) */
static char *table_task(const char *shape, const char *io, const char *data, const char *extra) {
    const char *holes[4][2] = {{"SHAPE", shape}, {"IO", io}, {"DATA", data}, {"EXTRA", extra}};
    char *s = kf__strdup(table_json);
    for (int i = 0; i < 4; i++) {
        char *p = strstr(s, holes[i][0]);
        char *n = kf__asprintf("%.*s%s%s", (int)(p - s), s, holes[i][1], p + strlen(holes[i][0]));
        free(s);
        s = n;
    }
    return s;
}

static void put_bytes(const char *dir, const char *name, size_t n) {
    char p[512];
    snprintf(p, sizeof p, "%s/data", dir);
    mkdir(p, 0755);
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "wb");
    CHECK(f);
    for (size_t i = 0; i < n; i++) fputc((int)(i * 7 + 1) & 0xff, f);
    CHECK(fclose(f) == 0);
}

static void t_fixed_data(const void *arg) {
    (void)arg;
    kf_ctx *ctx = kf_ctx_new();
    /* the bundled test task: its table read as the file holds it */
    kf_task *t = kft_task(ctx, "tests/tasks/fixed_table");
    char *want = NULL;
    size_t wl = 0;
    CHECK(kf__read_file(kft_src("tests/tasks/fixed_table/data/w.bin"), 1024, &want, &wl) == 0 && wl == 64);
    CHECK(t->args[1].data_file && !strcmp(t->args[1].data_file, "data/w.bin") && t->args[1].data_len == 64 &&
          !memcmp(t->args[1].data, want, 64) && !t->args[0].data);
    free(want);
    kf_task_free(t);
    /* a good one, and its fingerprint follows the bytes */
    char *json = table_task("16", "in", "data/w.bin", "");
    const char *dir = mktask(json, good_ref);
    put_bytes(dir, "data/w.bin", 64);
    char a[65], b[65];
    fp_of(dir, a);
    char p[512];
    snprintf(p, sizeof p, "%s/data/w.bin", dir);
    FILE *f = fopen(p, "r+b");
    CHECK(f && fseek(f, 17, SEEK_SET) == 0 && fputc(0x55, f) != EOF && fclose(f) == 0);
    fp_of(dir, b);
    CHECKF(strcmp(a, b), "a changed data file left the fingerprint as it was");
    /* missing, short, long */
    CHECK(unlink(p) == 0);
    t = NULL;
    CHECK(kf_task_load(ctx, dir, &t) == KF_ETASK && !t);
    CHECKF(strstr(kf_errmsg(ctx), "args[1].data") && strstr(kf_errmsg(ctx), "data/w.bin") &&
               strstr(kf_errmsg(ctx), "No such file"),
           "%s", kf_errmsg(ctx));
    put_bytes(dir, "data/w.bin", 60);
    CHECK(kf_task_load(ctx, dir, &t) == KF_ETASK && !t);
    CHECKF(strstr(kf_errmsg(ctx), "holds 60 bytes, w needs 64 (16 f32)"), "%s", kf_errmsg(ctx));
    put_bytes(dir, "data/w.bin", 80);
    CHECK(kf_task_load(ctx, dir, &t) == KF_ETASK && !t);
    CHECKF(strstr(kf_errmsg(ctx), "larger than w's 64 bytes"), "%s", kf_errmsg(ctx));
    kf__rmtree(dir);
    free(json);
    /* a size that moves it, an out buffer, data with init, paths outside the directory */
    static const char *const bad[][6] = {
        {"\"n\"", "in", "data/w.bin", "", "moves with size n", "fixed data needs a buffer of one size"},
        {"16", "out", "data/w.bin", "", "args[1].data: only an in buffer has fixed data", NULL},
        {"16", "in", "data/w.bin", ",\"init\":{\"dist\":\"uniform\",\"lo\":0,\"hi\":1}", "both data", NULL},
        {"16", "in", "/etc/passwd", "", "args[1].data: expected a file of the task directory", NULL},
        {"16", "in", "../w.bin", "", "without ..", NULL},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        json = table_task(bad[i][0], bad[i][1], bad[i][2], bad[i][3]);
        refused(json, good_ref, KF_ETASK, bad[i][4], bad[i][5]);
        free(json);
    }
    kf_ctx_free(ctx);
}

static void t_bundled_load(const void *arg) {
    (void)arg;
    const char *names[] = {"saxpy", "softmax", "rmsnorm", "sum", "transpose", "sgemm", "linear"};
    kf_ctx *ctx = kf_ctx_new();
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        char rel[64];
        snprintf(rel, sizeof rel, "tasks/c/%s", names[i]);
        kf_task *t = kft_task(ctx, rel);
        CHECK(t->nshapes >= 1 && strlen(t->fingerprint) == 64);
        kf_task_free(t);
    }
    kf_ctx_free(ctx);
}

static void t_good_minimal(const void *arg) {
    (void)arg;
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = NULL;
    const char *dir = mktask(good_json, good_ref);
    CHECKF(kf_task_load(ctx, dir, &t) == KF_OK, "%s", kf_errmsg(ctx));
    CHECK(t->nargs == 3 && t->hidden_count == 3);
    kf_task_free(t);
    kf_ctx_free(ctx);
    kf__rmtree(dir);
}

static void t_malformed_json(const void *arg) {
    (void)arg;
    /* a missing comma on line 3: the message names line and column */
    char *j = edit("\"n\":[1,4096]},", "\"n\":[1,4096]}");
    refused(j, good_ref, KF_ETASK, "task.json:3:", NULL);
    free(j);
    refused("", good_ref, KF_ETASK, "task.json:", NULL);
}

static void t_unknown_field(const void *arg) {
    (void)arg;
    char *j = edit("\"hidden\"", "\"shpes\":[],\"hidden\"");
    refused(j, good_ref, KF_ETASK, "unknown field 'shpes' (did you mean 'shapes'?)", NULL);
    free(j);
    j = edit("\"io\":\"in\"}", "\"io\":\"in\",\"initt\":{}}");
    refused(j, good_ref, KF_ETASK, "args[0]", "initt' (did you mean 'init'?)");
    free(j);
    /* nothing near: no suggestion (a wrong guess would mislead more than none) */
    j = edit("\"hidden\"", "\"zzzzzz\":1,\"hidden\"");
    refused(j, good_ref, KF_ETASK, "unknown field 'zzzzzz'", NULL);
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = NULL;
    const char *dir = mktask(j, good_ref);
    CHECK(kf_task_load(ctx, dir, &t) == KF_ETASK);
    CHECKF(!strstr(kf_errmsg(ctx), "did you mean"), "%s", kf_errmsg(ctx));
    kf_ctx_free(ctx);
    kf__rmtree(dir);
    free(j);
}

static void t_bad_types(const void *arg) {
    (void)arg;
    char *j = edit("\"type\":\"f32\",\"shape\":[\"n\"],\"io\":\"in\"",
                   "\"type\":\"float32\",\"shape\":[\"n\"],\"io\":\"in\"");
    refused(j, good_ref, KF_ETASK, "args[0].type", "float32");
    free(j);
    j = edit("\"type\":\"f32\",\"shape\":[\"n\"],\"io\":\"in\"",
             "\"type\":\"f16\",\"shape\":[\"n\"],\"io\":\"in\"");
    refused(j, good_ref, KF_ETASK, "GPU", NULL);
    free(j);
    j = edit("\"io\":\"out\"", "\"io\":\"output\"");
    refused(j, good_ref, KF_ETASK, "args[1].io", NULL);
    free(j);
    j = edit("\"backend\":\"c\"", "\"backend\":\"fortran\"");
    refused(j, good_ref, KF_ETASK, "backend", "fortran");
    free(j);
}

static void t_bad_expressions(const void *arg) {
    (void)arg;
    char *j = edit("\"shape\":[\"n\"],\"io\":\"out\"", "\"shape\":[\"n *\"],\"io\":\"out\"");
    refused(j, good_ref, KF_ETASK, "args[1].shape[0]", "bad expression");
    free(j);
    j = edit("\"shape\":[\"n\"],\"io\":\"out\"", "\"shape\":[\"m\"],\"io\":\"out\"");
    refused(j, good_ref, KF_ETASK, "unknown name 'm'", NULL);
    free(j);
    j = edit("\"hidden\"", "\"constraints\":[\"n % \"],\"hidden\"");
    refused(j, good_ref, KF_ETASK, "constraints[0]", NULL);
    free(j);
}

static void t_missing_files(const void *arg) {
    (void)arg;
    refused(NULL, good_ref, KF_EIO, "task.json", NULL);
    refused(good_json, NULL, KF_EIO, "reference.c", NULL);
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t;
    CHECK(kf_task_load(ctx, "/nonexistent/task", &t) == KF_EIO);
    CHECK(strstr(kf_errmsg(ctx), "/nonexistent/task"));
    kf_ctx_free(ctx);
}

static void t_impossible(const void *arg) {
    (void)arg;
    char *j = edit("[1,4096]", "[10,2]");
    refused(j, good_ref, KF_ETASK, "impossible range", NULL);
    free(j);
    j = edit("{\"n\":1000}", "{\"n\":5000}");
    refused(j, good_ref, KF_ETASK, "outside its range", NULL);
    free(j);
    j = edit("\"hidden\"", "\"constraints\":[\"n % 7 == 0\"],\"hidden\"");
    refused(j, good_ref, KF_ETASK, "violates the constraint", "n % 7 == 0");
    free(j);
    /* buffers beyond the 1 GiB cap */
    j = edit("[1,4096]},", "[1,4096], \"m\":[1,100000000]},");
    char *j2 = kf__asprintf("%s", j);
    free(j);
    j = j2;
    char *k = strstr(j, "\"shape\":[\"n\"],\"io\":\"out\"");
    CHECK(k);
    char *j3 = kf__asprintf("%.*s\"shape\":[\"n\",\"m\"],\"io\":\"out\"%s", (int)(k - j), j,
                            k + strlen("\"shape\":[\"n\"],\"io\":\"out\""));
    char *j4 = NULL;
    char *sh = strstr(j3, "{\"n\":1000}");
    CHECK(sh);
    j4 = kf__asprintf("%.*s{\"n\":1000,\"m\":100000000}%s", (int)(sh - j3), j3, sh + strlen("{\"n\":1000}"));
    refused(j4, good_ref, KF_ETASK, "memory cap", NULL);
    free(j);
    free(j3);
    free(j4);
}

static void t_cost_and_backend(const void *arg) {
    (void)arg;
    char *j = edit("\"hidden\"", "\"cost\":{\"flops\":\"n / (n - n)\"},\"hidden\"");
    refused(j, good_ref, KF_ETASK, "cost.flops", "division by zero");
    free(j);
    j = edit("\"hidden\"", "\"cost\":{\"bytes\":\"4 - n\"},\"hidden\"");
    refused(j, good_ref, KF_ETASK, "cost.bytes", "negative");
    free(j);
    j = edit("\"backend\":\"c\"", "\"backend\":\"opencl\"");
    refused(j, good_ref, KF_EBACKEND, "not available", NULL);
    free(j);
    /* launch_mode: CUDA only, and only "kernel" or "host" */
    j = edit("\"hidden\"", "\"launch_mode\":\"host\",\"hidden\"");
    refused(j, good_ref, KF_ETASK, "launch_mode", "only for the cuda backend");
    free(j);
    j = edit("\"hidden\"", "\"launch_mode\":\"graph\",\"hidden\"");
    refused(j, good_ref, KF_ETASK, "launch_mode", "\"kernel\" or \"host\"");
    free(j);
}

static void t_no_output(const void *arg) {
    (void)arg;
    char *j = edit("\"io\":\"out\"", "\"io\":\"in\"");
    refused(j, good_ref, KF_ETASK, "no out or inout buffer", NULL);
    free(j);
}

/* Hidden and edge shapes: in range, satisfying constraints and the candidate's domain,
 * including the minimum sizes, and different on every draw. */
static void t_hidden_draws(const void *arg) {
    (void)arg;
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = kft_task(ctx, "tasks/c/sgemm");
    char err[256];
    kf_expr *when = kf_expr_parse("m == n && n == k && m % 16 == 0", err, sizeof err);
    kf_rng r;
    kf_rng_seed_secret(&r);
    kf_shape *sh;
    int n;
    CHECK(kf_task_draw_hidden(t, &r, 6, NULL, NULL, 1u << 30, &sh, &n, err, sizeof err) == 0);
    CHECK(n >= 7);
    int saw_min = 0, saw_odd = 0;
    for (int i = 0; i < n; i++) {
        for (int d = 0; d < 3; d++) CHECK(sh[i].v[d] >= 1 && sh[i].v[d] <= 256);
        saw_min |= sh[i].v[0] == 1 || sh[i].v[1] == 1 || sh[i].v[2] == 1;
        /* a prime or 2^k +/- 1 edge shape keeps its value in a random subset of the
         * sizes (so that it is not recognisable): any size, not always m */
        for (int d = 0; d < 3; d++) saw_odd |= sh[i].v[d] % 2 == 1 && sh[i].v[d] > 1;
    }
    CHECK(saw_min && saw_odd);
    kf_shapes_free(sh, n);
    CHECK(kf_task_draw_hidden(t, &r, 6, when, NULL, 1u << 30, &sh, &n, err, sizeof err) == 0);
    CHECK(n >= 3);
    for (int i = 0; i < n; i++)
        CHECK(sh[i].v[0] == sh[i].v[1] && sh[i].v[1] == sh[i].v[2] && sh[i].v[0] % 16 == 0);
    kf_shapes_free(sh, n);
    kf_expr_free(when);
    when = kf_expr_parse("m > 1000", err, sizeof err);
    CHECK(kf_task_draw_hidden(t, &r, 6, when, NULL, 1u << 30, &sh, &n, err, sizeof err) == -1);
    kf_expr_free(when);
    kf_rng_free(&r);
    kf_task_free(t);
    kf_ctx_free(ctx);
}

static int is_prime_size(int64_t x) {
    if (x < 2) return 0;
    for (int64_t d = 2; d * d <= x; d++)
        if (x % d == 0) return 0;
    return 1;
}

/* What a kernel could take for an edge shape from its sizes alone: a prime or 2^k +/- 1
 * size, a size at its minimum or maximum, all sizes equal, or a visible shape. */
static int looks_like_edge(const kf_task *t, const kf_shape *s) {
    int eq = 1, vis = 0;
    for (int i = 0; i < t->nsizes; i++) {
        int64_t x = s->v[i];
        if (is_prime_size(x) || x == t->size_min[i] || x == t->size_max[i]) return 1;
        for (int k = 1; k < 62; k++)
            if (x == (INT64_C(1) << k) - 1 || x == (INT64_C(1) << k) + 1) return 1;
        eq &= x == s->v[0];
    }
    for (int j = 0; j < t->nshapes; j++)
        vis |= !memcmp(t->shapes[j].v, s->v, (size_t)t->nsizes * sizeof *s->v);
    return vis || (t->nsizes > 1 && eq);
}

/* A shape's weight as shapes.c counts it: buffer bytes plus cost.flops. */
static double weight(const kf_task *t, const kf_shape *s) {
    kf_vars v = kf_task_vars(t, s);
    int64_t f = 0;
    char e[128];
    if (t->cost_flops && kf_expr_eval(t->cost_flops, &v, &f, e, sizeof e)) f = 0;
    return (double)kf_task_shape_bytes(t, s) + (double)f;
}

/* The realistic families, by design in every draw (docs/tasks.md "Shapes kforge
 * draws"): for each bundled C task, 50 draws each hold a shape whose every size is a
 * multiple of 64 and that looks like no edge shape (so a kernel wrong on the sizes models
 * use and right on anything edge-like is caught in every check); with several sizes a
 * non-square one too; and exactly one large-corner shape (light), every size in the top
 * sixteenth of its range, never the one all-maximum shape, and not the same from draw to
 * draw. The other edge shapes stay under a sixteenth of the all-maximum weight (what
 * keeps the time to a verdict from growing). */
static void t_hidden_families(const void *arg) {
    (void)arg;
    const char *tasks[] = {"sgemm", "rmsnorm", "saxpy", "transpose", "softmax", "sum", "linear"};
    kf_ctx *ctx = kf_ctx_new();
    kf_rng r;
    kf_rng_seed_secret(&r);
    char err[256];
    for (size_t ti = 0; ti < sizeof tasks / sizeof *tasks; ti++) {
        char dir[64];
        snprintf(dir, sizeof dir, "tasks/c/%s", tasks[ti]);
        kf_task *t = kft_task(ctx, dir);
        int64_t first_corner[KF_MAX_SIZES], top[KF_MAX_SIZES];
        int corner_moved = 0;
        for (int d = 0; d < t->nsizes; d++) top[d] = t->size_max[d];
        kf_shape all_max = {top, KF_SHAPE_EDGE, 1};
        double big = weight(t, &all_max);
        for (int rep = 0; rep < 50; rep++) {
            kf_shape *sh;
            int n;
            CHECKF(kf_task_draw_hidden(t, &r, t->hidden_count, NULL, NULL, 1u << 30, &sh, &n, err,
                                       sizeof err) == 0,
                   "%s: %s", tasks[ti], err);
            int aligned = 0, nonsquare = t->nsizes < 2, corners = 0;
            for (int i = 0; i < n; i++) {
                int all64 = 1, eq = 1;
                for (int d = 0; d < t->nsizes; d++) {
                    all64 &= sh[i].v[d] % 64 == 0;
                    eq &= sh[i].v[d] == sh[i].v[0];
                }
                int edgy = looks_like_edge(t, &sh[i]);
                aligned |= all64 && !edgy;
                nonsquare |= !eq && !edgy;
                if (sh[i].kind == KF_SHAPE_EDGE && !sh[i].light)
                    CHECKF(weight(t, &sh[i]) <= big / 16, "%s: an edge shape of weight %.3g (max %.3g)",
                           tasks[ti], weight(t, &sh[i]), big);
                if (!sh[i].light) continue;
                corners++;
                int allmax = 1;
                for (int d = 0; d < t->nsizes; d++) {
                    int64_t lo = t->size_min[d], hi = t->size_max[d];
                    CHECKF(sh[i].v[d] >= hi - (hi - lo) / 16, "%s: corner size %lld", tasks[ti],
                           (long long)sh[i].v[d]);
                    allmax &= sh[i].v[d] == hi;
                    if (rep == 0) first_corner[d] = sh[i].v[d];
                    else corner_moved |= first_corner[d] != sh[i].v[d];
                }
                CHECKF(!allmax, "%s: the corner is the all-maximum shape", tasks[ti]);
            }
            CHECKF(aligned, "%s: no shape with every size a multiple of 64 that looks like no edge",
                   tasks[ti]);
            CHECKF(nonsquare, "%s: no non-square shape that looks like no edge", tasks[ti]);
            CHECKF(corners == 1, "%s: %d large-corner shapes", tasks[ti], corners);
            kf_shapes_free(sh, n);
        }
        CHECKF(corner_moved, "%s: the same corner in 50 draws", tasks[ti]);
        kf_task_free(t);
    }
    kf_rng_free(&r);
    kf_ctx_free(ctx);
}

/* Where the top of the ranges is outside the constraints (a GPU sgemm's m * n, m * k and
 * k * n <= 2^22), the large corner is still large: on the boundary of a bounded product,
 * at a random place (it was once a small 2^k +/- 1 shape there, as the search for the
 * largest shape found nothing valid). */
static void t_hidden_corner_constrained(const void *arg) {
    (void)arg;
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = kft_task(ctx, "tasks/cuda/sgemm");
    kf_rng r;
    kf_rng_seed_secret(&r);
    char err[256];
    int64_t first[3] = {0, 0, 0};
    int moved = 0;
    for (int rep = 0; rep < 20; rep++) {
        kf_shape *sh;
        int n, corners = 0;
        CHECKF(kf_task_draw_hidden(t, &r, 4, NULL, NULL, 1u << 30, &sh, &n, err, sizeof err) == 0, "%s", err);
        for (int i = 0; i < n; i++) {
            if (!sh[i].light) continue;
            corners++;
            const int64_t *v = sh[i].v;
            int64_t mn = v[0] * v[1], mk = v[0] * v[2], kn = v[2] * v[1];
            int64_t top = mn > mk ? mn : mk;
            top = kn > top ? kn : top;
            CHECKF(top <= 4194304 && top >= 4194304 / 100 * 98, "corner m=%lld n=%lld k=%lld",
                   (long long)v[0], (long long)v[1], (long long)v[2]);
            if (!rep) memcpy(first, v, sizeof first);
            moved |= memcmp(first, v, sizeof first) != 0;
        }
        CHECK(corners == 1);
        kf_shapes_free(sh, n);
    }
    CHECK(moved);
    kf_rng_free(&r);
    kf_task_free(t);
    kf_ctx_free(ctx);
}

/* A kforge:when that fails to evaluate inside the constraints is reported as such (-2,
 * naming the expression and the shape), never read as "outside the domain": one that
 * overflows only on large sizes would otherwise shrink the large corner. Where the
 * constraints exclude the failing shapes, nothing is reported. */
static void t_hidden_when_errors(const void *arg) {
    (void)arg;
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = kft_task(ctx, "tasks/c/rmsnorm");
    kf_rng r;
    kf_rng_seed_secret(&r);
    char err[256];
    kf_shape *sh = NULL;
    int n = 0;
    kf_expr *when = kf_expr_parse("rows * cols * cols * cols * cols * cols > 0", err, sizeof err);
    CHECK(kf_task_draw_hidden(t, &r, 4, when, NULL, 1u << 30, &sh, &n, err, sizeof err) == -2);
    CHECKF(strstr(err, "kforge:when \"rows * cols * cols * cols * cols * cols > 0\" cannot be "
                       "evaluated at rows=") &&
               strstr(err, "overflow"),
           "%s", err);
    kf_expr_free(when);
    when = kf_expr_parse("cols / (rows - 1) >= 0", err, sizeof err);
    CHECK(kf_task_draw_hidden(t, &r, 4, when, NULL, 1u << 30, &sh, &n, err, sizeof err) == -2);
    CHECKF(strstr(err, "rows=1,") && strstr(err, "division by zero"), "%s", err);
    kf_expr_free(when);
    /* the same expression inside a domain that excludes rows = 1 first is sound */
    when = kf_expr_parse("rows > 1 && cols / (rows - 1) >= 0", err, sizeof err);
    CHECKF(kf_task_draw_hidden(t, &r, 4, when, NULL, 1u << 30, &sh, &n, err, sizeof err) == 0, "%s", err);
    for (int i = 0; i < n; i++) CHECK(sh[i].v[0] > 1);
    kf_shapes_free(sh, n);
    kf_expr_free(when);
    kf_rng_free(&r);
    kf_task_free(t);
    kf_ctx_free(ctx);
}

static void t_directives(const void *arg) {
    (void)arg;
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = kft_task(ctx, "tasks/c/sum");
    const char *path = "/tmp/kft-directives.c";
    FILE *f = fopen(path, "w");
    CHECK(f);
    fputs("/* kforge:param LANES = 16, 8, 32 */\n// kforge:param MODE = fast, slow\n"
          "/* kforge:require LANES % 8 == 0 && LANES <= 16 */\n/* kforge:when n > LANES */\n",
          f);
    fclose(f);
    kf_candidate *c = NULL;
    CHECKF(kf_candidate_load(ctx, t, path, NULL, 0, &c) == KF_OK, "%s", kf_errmsg(ctx));
    CHECK(c->nparams == 2 && !strcmp(c->params[0].selected, "16") && c->params[0].is_int);
    CHECK(!strcmp(c->params[1].selected, "fast") && !c->params[1].is_int && c->when);
    kf_candidate_free(c);
    const char *sel[] = {"LANES=8"};
    CHECK(kf_candidate_load(ctx, t, path, sel, 1, &c) == KF_OK && c->params[0].ival == 8);
    kf_candidate_free(c);
    const char *bad[] = {"LANES=32"}; /* declared, but fails the require */
    CHECK(kf_candidate_load(ctx, t, path, bad, 1, &c) == KF_EUSAGE);
    CHECK(strstr(kf_errmsg(ctx), "kforge:require"));
    const char *undeclared[] = {"LANES=24"};
    CHECK(kf_candidate_load(ctx, t, path, undeclared, 1, &c) == KF_EUSAGE);
    const char *unknown[] = {"WIDTH=4"};
    CHECK(kf_candidate_load(ctx, t, path, unknown, 1, &c) == KF_EUSAGE);
    CHECK(strstr(kf_errmsg(ctx), "no such parameter"));
    f = fopen(path, "w");
    fputs("/* kforge:when rows > 4 */\n", f); /* sum has no size 'rows' */
    fclose(f);
    CHECK(kf_candidate_load(ctx, t, path, NULL, 0, &c) == KF_EUSAGE);
    CHECK(strstr(kf_errmsg(ctx), "rows"));
    f = fopen(path, "w");
    fputs("/* kforge:param n = 4, 8 */\n", f); /* clashes with the size n */
    fclose(f);
    CHECK(kf_candidate_load(ctx, t, path, NULL, 0, &c) == KF_EUSAGE);
    CHECK(strstr(kf_errmsg(ctx), "size of that name"));
    f = fopen(path, "w");
    fputs("/* kforge:parm X = 1 */\n", f);
    fclose(f);
    CHECK(kf_candidate_load(ctx, t, path, NULL, 0, &c) == KF_EUSAGE);
    CHECK(strstr(kf_errmsg(ctx), ":1:") && strstr(kf_errmsg(ctx), "unknown directive"));
    CHECK(kf_candidate_load(ctx, t, "/tmp/kft-no-such-file.c", NULL, 0, &c) == KF_EIO);
    unlink(path);
    kf_task_free(t);
    kf_ctx_free(ctx);
}

/* Every directive error names the file and the directive's line: "PATH:LINE: ...", for
 * errors found while reading (a bad expression), after the selections (a require that
 * fails or cannot be evaluated, a when naming an unknown size) and by the builtin
 * proposer (an unknown category). */
static void t_directive_lines(const void *arg) {
    (void)arg;
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = kft_task(ctx, "tasks/c/sum");
    const char *path = "/tmp/kft-directive-lines.c";
    static const struct {
        const char *line3, *want;
        int builtin;
    } cases[] = {
        {"/* kforge:require LANES % 0 == 0 */", "kforge:require \"LANES % 0 == 0\": division by zero", 0},
        {"/* kforge:require LANES > 100 */", "kforge:require \"LANES > 100\" fails for LANES=16", 0},
        {"/* kforge:when rows > 4 */", "kforge:when \"rows > 4\": unknown name 'rows'", 0},
        {"/* kforge:when n > */", "kforge:when \"n >\"", 0},
        {"/* kforge:param B = 1, 2 # nosuchcategory */", "kforge:param B: unknown category 'nosuchcategory'",
         1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        FILE *f = fopen(path, "w");
        CHECK(f);
        fprintf(f, "/* line 1 */\n/* kforge:param LANES = 16, 8 */\n%s\nvoid reduce_sum(void) {}\n",
                cases[i].line3);
        fclose(f);
        kf_candidate *c = NULL;
        kf_builtin *b = NULL;
        kf_status st = cases[i].builtin ? kf_builtin_new(ctx, t, path, 1, &b)
                                        : kf_candidate_load(ctx, t, path, NULL, 0, &c);
        CHECKF(st == KF_EUSAGE, "%s: %d", cases[i].line3, (int)st);
        char want[512];
        snprintf(want, sizeof want, "%s:3: %s", path, cases[i].want);
        CHECKF(strstr(kf_errmsg(ctx), want), "%s: %s (want %s)", cases[i].line3, kf_errmsg(ctx), want);
    }
    unlink(path);
    kf_task_free(t);
    kf_ctx_free(ctx);
}

/* Bad input never crashes the loader: 3000 random mutations of a valid task.json
 * (byte flips, truncations, duplicated spans), each loaded in-process (ASan in CI). */
static void t_mutations(const void *arg) {
    (void)arg;
    kf_ctx *ctx = kf_ctx_new();
    const char *dir = mktask(good_json, good_ref);
    char path[512];
    snprintf(path, sizeof path, "%s/task.json", dir);
    size_t n = strlen(good_json);
    char *buf = malloc(2 * n + 1);
    uint64_t x = 88172645463325252ull;
    int loaded = 0;
    static const char alphabet[] = "{}[]\":,0123456789-+.eE \n\\abnxyz*%()!<=>";
    for (int iter = 0; iter < 3000; iter++) {
        memcpy(buf, good_json, n + 1);
        size_t len = n;
        int edits = 1 + (int)((x >> 7) % 4);
        for (int e = 0; e < edits; e++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            size_t pos = (size_t)(x % len);
            switch ((x >> 32) % 4) {
            case 0: buf[pos] = alphabet[(x >> 40) % (sizeof alphabet - 1)]; break;
            case 1:
                len = pos;
                buf[len] = 0;
                break;
            case 2: { /* duplicate a span */
                size_t span = 1 + (size_t)((x >> 20) % 16);
                if (pos + span > len || len + span > 2 * n) break;
                memmove(buf + pos + span, buf + pos, len - pos + 1);
                len += span;
                break;
            }
            default:
                memmove(buf + pos, buf + pos + 1, len - pos);
                len--;
                break;
            }
            if (len < 2) break;
        }
        FILE *f = fopen(path, "w");
        CHECK(f);
        fwrite(buf, 1, len, f);
        fclose(f);
        kf_task *t = NULL;
        kf_status st = kf_task_load(ctx, dir, &t);
        CHECK((st == KF_OK) == (t != NULL));
        CHECK(st == KF_OK || strlen(kf_errmsg(ctx)) > 10);
        loaded += st == KF_OK;
        kf_task_free(t);
    }
    free(buf);
    kf_ctx_free(ctx);
    kf__rmtree(dir);
    CHECK(loaded < 3000); /* the mutations did produce invalid tasks */
}

void kft_register_task(void) {
    kft_add("task/mutations", t_mutations, NULL, 60);
    kft_add("task/bundled_load", t_bundled_load, NULL, 10);
    kft_add("task/fingerprint_python", t_fingerprint_python, NULL, 10);
    kft_add("task/fixed_data", t_fixed_data, NULL, 10);
    kft_add("task/good_minimal", t_good_minimal, NULL, 10);
    kft_add("task/malformed_json", t_malformed_json, NULL, 10);
    kft_add("task/unknown_field", t_unknown_field, NULL, 10);
    kft_add("task/bad_types", t_bad_types, NULL, 10);
    kft_add("task/bad_expressions", t_bad_expressions, NULL, 10);
    kft_add("task/missing_files", t_missing_files, NULL, 10);
    kft_add("task/impossible", t_impossible, NULL, 10);
    kft_add("task/no_output", t_no_output, NULL, 10);
    kft_add("task/cost_and_backend", t_cost_and_backend, NULL, 10);
    kft_add("task/hidden_draws", t_hidden_draws, NULL, 10);
    kft_add("task/hidden_families", t_hidden_families, NULL, 30);
    kft_add("task/hidden_when_errors", t_hidden_when_errors, NULL, 10);
    kft_add("task/hidden_corner_constrained", t_hidden_corner_constrained, NULL, 10);
    kft_add("task/directives", t_directives, NULL, 10);
    kft_add("task/directive_lines", t_directive_lines, NULL, 10);
}
