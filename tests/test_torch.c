/*
 * test_torch.c - tasks whose reference is PyTorch ("reference": "reference.py",
 * docs/torch.md). The bundled tasks/c/softmax_torch validates and judges candidates as
 * its C twin does (its agreement with tasks/c/softmax is xref/softmax_torch); a wrong
 * candidate is rejected against it; a reference that writes nothing useful is refused by
 * validate's degenerate-task gate; a reference that raises is a task error naming its
 * line; without python3, or with a python3 that has no torch, a check is a task error
 * that says what to do. The tests that need torch skip without it, saying why.
 */
#define _GNU_SOURCE
#include "kft.h"

#include "check/check.h"

#include <jansson.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Skip unless the python3 kforge would use imports torch. */
static void need_torch(void) {
    kf_ctx *ctx = kf_ctx_new();
    char py[PATH_MAX], cmd[PATH_MAX + 64], out[256];
    if (kf_torch_python(ctx, py, sizeof py))
        kft_skip("no python3 for PyTorch references: %s", kf_errmsg(ctx));
    kf_ctx_free(ctx);
    snprintf(cmd, sizeof cmd, "'%s' -c 'import torch' 2>&1", py);
    if (kft_run(cmd, out, sizeof out)) kft_skip("%s has no torch (make deps installs it into .venv)", py);
}

/* A copy of tasks/c/softmax_torch in a fresh directory (dir), with reference.py's text
 * ref (NULL: the bundled one); loaded. */
static kf_task *torch_task(kf_ctx *ctx, const char *ref, char *dir, size_t n) {
    snprintf(dir, n, "/tmp/kft-torch-%d-XXXXXX", (int)getpid());
    CHECK(mkdtemp(dir));
    char *json = NULL, *bundled = NULL, path[PATH_MAX];
    size_t len;
    CHECK(kf__read_file(kft_src("tasks/c/softmax_torch/task.json"), 1u << 20, &json, &len) == 0);
    CHECK(kf__read_file(kft_src("tasks/c/softmax_torch/reference.py"), 1u << 20, &bundled, &len) == 0);
    const char *files[2][2] = {{"task.json", json}, {"reference.py", ref ? ref : bundled}};
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i][0]);
        FILE *f = fopen(path, "w");
        CHECK(f && fputs(files[i][1], f) >= 0 && fclose(f) == 0);
    }
    free(json);
    free(bundled);
    kf_task *t = NULL;
    CHECKF(kf_task_load(ctx, dir, &t) == KF_OK, "%s", kf_errmsg(ctx));
    return t;
}

static void t_validate(const void *arg) {
    (void)arg;
    need_torch();
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = kft_task(ctx, "tasks/c/softmax_torch");
    CHECK(t->ref_torch && strstr(t->ref_path, "reference.py"));
    kf_opts o;
    kf_opts_init(&o);
    kf_result *r = NULL;
    CHECKF(kf_validate(ctx, t, &o, &r) == KF_OK, "%s", kf_errmsg(ctx));
    CHECKF(kf_result_verdict(r) == KF_VERDICT_ACCEPTED, "refused: %s", kft_reasons(r));
    kf_result_free(r);
    kf_task_free(t);
    kf_ctx_free(ctx);
}

/* The C reference and the honest fast candidate are accepted; a kernel wrong in the last
 * column only, and one that writes its outputs into its input, are rejected. */
static void t_judges(const void *arg) {
    (void)arg;
    need_torch();
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = kft_task(ctx, "tasks/c/softmax_torch");
    const char *good[] = {"tasks/c/softmax/reference.c", "tasks/c/softmax_torch/candidates/fast.c"};
    for (int i = 0; i < 2; i++) {
        kf_result *r = kft_check(ctx, t, kft_src(good[i]), NULL, 0);
        CHECKF(kf_result_verdict(r) == KF_VERDICT_ACCEPTED, "%s: %s", good[i], kft_reasons(r));
        kf_result_free(r);
    }
    char path[] = "/tmp/kft-torch-cand-XXXXXX.c";
    int fd = mkstemps(path, 2);
    CHECK(fd >= 0);
    static const char wrong[] =
        "#include <math.h>\n#include <stdint.h>\n"
        "void softmax(const float *x, float *y, int64_t rows, int64_t cols) {\n"
        "    for (int64_t r = 0; r < rows; r++) {\n"
        "        const float *a = x + r * cols; float *b = y + r * cols; float m = a[0], s = 0;\n"
        "        for (int64_t c = 1; c < cols; c++) m = a[c] > m ? a[c] : m;\n"
        "        for (int64_t c = 0; c < cols; c++) s += b[c] = expf(a[c] - m);\n"
        "        for (int64_t c = 0; c + 1 < cols; c++) b[c] /= s;\n" /* the last column unnormalised */
        "    }\n}\n";
    CHECK(write(fd, wrong, sizeof wrong - 1) == (ssize_t)(sizeof wrong - 1) && close(fd) == 0);
    kf_result *r = kft_check(ctx, t, path, NULL, 0);
    unlink(path);
    CHECKF(kf_result_verdict(r) == KF_VERDICT_REJECTED && strstr(kft_reasons(r), "wrong_result"), "%s",
           kft_reasons(r));
    kf_result_free(r);
    kf_task_free(t);
    kf_ctx_free(ctx);
}

/* A reference whose output does not depend on its inputs is refused by validate. */
static void t_degenerate(const void *arg) {
    (void)arg;
    need_torch();
    kf_ctx *ctx = kf_ctx_new();
    char dir[PATH_MAX];
    kf_task *t = torch_task(ctx,
                            "import torch\n\ndef softmax(x, y, rows, cols):\n"
                            "    y.fill_(1.0 / cols)\n",
                            dir, sizeof dir);
    kf_opts o;
    kf_opts_init(&o);
    kf_result *r = NULL;
    kf_status st = kf_validate(ctx, t, &o, &r);
    kf__rmtree(dir);
    CHECKF(st == KF_OK && kf_result_verdict(r) == KF_VERDICT_REJECTED, "%s",
           st ? kf_errmsg(ctx) : "accepted");
    CHECKF(strstr(kft_reasons(r), "degenerate_task"), "%s", kft_reasons(r));
    kf_result_free(r);
    kf_task_free(t);
    kf_ctx_free(ctx);
}

/* A reference that raises, or returns the wrong number of tensors: a task error that
 * names the file (and the line), never a verdict on the candidate. */
static void t_failures(const void *arg) {
    (void)arg;
    need_torch();
    static const char *const refs[][2] = {
        {"import torch\n\ndef softmax(x, y, rows, cols):\n    return torch.softmax(x, dim=7)\n",
         "reference.py (line 4): IndexError"},
        {"import torch\n\ndef softmax(x, y, rows, cols):\n    return x, x\n", "returned 2 value(s)"},
        {"import torch\n\ndef soft_max(x, y, rows, cols):\n    pass\n", "defines no function softmax"},
        {"import torch\nraise RuntimeError('broken at import')\n", "broken at import"},
    };
    for (size_t i = 0; i < sizeof refs / sizeof refs[0]; i++) {
        kf_ctx *ctx = kf_ctx_new();
        char dir[PATH_MAX];
        kf_task *t = torch_task(ctx, refs[i][0], dir, sizeof dir);
        kf_opts o;
        kf_opts_init(&o);
        kf_result *r = NULL;
        kf_status st = kf_check(ctx, t, kft_src("tasks/c/softmax_torch/candidates/fast.c"), &o, &r);
        kf__rmtree(dir);
        CHECKF(st == KF_ETASK && strstr(kf_errmsg(ctx), refs[i][1]), "%zu: %s: %s", i, kf_strstatus(st),
               st ? kf_errmsg(ctx) : "no error");
        printf("%s\n", kf_errmsg(ctx));
        kf_task_free(t);
        kf_ctx_free(ctx);
    }
}

/* No python3 at KFORGE_PYTHON, and a python3 without torch: task errors (exit 2 from the
 * CLI) that say what to do. Needs no torch: the second python3 hides it. */
static void t_no_torch(const void *arg) {
    (void)arg;
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = kft_task(ctx, "tasks/c/softmax_torch");
    kf_opts o;
    kf_opts_init(&o);
    kf_result *r = NULL;
    setenv("KFORGE_PYTHON", "/nonexistent/python3", 1);
    kf_status st = kf_check(ctx, t, kft_src("tasks/c/softmax_torch/candidates/fast.c"), &o, &r);
    CHECKF(st == KF_ETASK && strstr(kf_errmsg(ctx), "KFORGE_PYTHON=/nonexistent/python3: no such executable"),
           "%s: %s", kf_strstatus(st), kf_errmsg(ctx));
    printf("%s\n", kf_errmsg(ctx));
    /* a python3 whose torch fails to import */
    char dir[] = "/tmp/kft-notorch-XXXXXX", path[PATH_MAX], py[PATH_MAX + 32];
    CHECK(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/torch.py", dir);
    FILE *f = fopen(path, "w");
    CHECK(f && fputs("raise ImportError('no torch in this python')\n", f) >= 0 && fclose(f) == 0);
    snprintf(py, sizeof py, "%s/python3", dir);
    f = fopen(py, "w");
    CHECK(f && fprintf(f, "#!/bin/sh\nPYTHONPATH=%s exec python3 \"$@\"\n", dir) > 0 && fclose(f) == 0);
    CHECK(chmod(py, 0755) == 0);
    setenv("KFORGE_PYTHON", py, 1);
    st = kf_check(ctx, t, kft_src("tasks/c/softmax_torch/candidates/fast.c"), &o, &r);
    kf__rmtree(dir);
    CHECKF(st == KF_ETASK && strstr(kf_errmsg(ctx), "cannot import torch") &&
               strstr(kf_errmsg(ctx), "KFORGE_PYTHON"),
           "%s: %s", kf_strstatus(st), kf_errmsg(ctx));
    printf("%s\n", kf_errmsg(ctx));
    unsetenv("KFORGE_PYTHON");
    kf_task_free(t);
    kf_ctx_free(ctx);
}

/* "reference" names a .py file in the task's directory, for a CPU backend's task. */
static void t_field(const void *arg) {
    (void)arg;
    static const char *const cases[][3] = {
        {"c", "\"ref.c\"", "reference: expected the file name of a PyTorch reference"},
        {"c", "\"../reference.py\"", "reference: expected the file name"},
        {"c", "7", "reference: expected the file name"},
        {"cuda", "\"reference.py\"", "for tasks of CPU backends (\"c\") only"},
        {"c", "\"missing.py\"", "missing.py: No such file"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char dir[] = "/tmp/kft-tfield-XXXXXX", path[PATH_MAX];
        CHECK(mkdtemp(dir));
        snprintf(path, sizeof path, "%s/task.json", dir);
        FILE *f = fopen(path, "w");
        CHECK(f &&
              fprintf(f,
                      "{\"name\": \"t\", \"backend\": \"%s\", \"entry\": \"f\", \"sizes\": {\"n\": [1, 8]},"
                      " \"args\": [{\"name\": \"y\", \"type\": \"f32\", \"shape\": [\"n\"], \"io\": \"out\"},"
                      " {\"name\": \"n\", \"type\": \"i64\", \"value\": \"n\"}],"
                      " \"shapes\": [{\"n\": 4}], \"reference\": %s}\n",
                      cases[i][0], cases[i][1]) > 0 &&
              fclose(f) == 0);
        kf_ctx *ctx = kf_ctx_new();
        kf_task *t = NULL;
        kf_status st = kf_task_load(ctx, dir, &t);
        kf__rmtree(dir);
        CHECKF(st != KF_OK && strstr(kf_errmsg(ctx), cases[i][2]), "%zu: %s", i,
               st ? kf_errmsg(ctx) : "loaded");
        kf_task_free(t);
        kf_ctx_free(ctx);
    }
}

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    CHECK(f && fputs(text, f) >= 0 && fclose(f) == 0);
}

/* The import of tests/kernelbench (problems written in that format for these tests):
 * the single op, the fused elementwise ops, the small conv and the matmul with bias are
 * imported and validated; dropout, a BatchNorm in training mode and nonzero are refused,
 * each with its reason. The imported matmul with bias then judges C kernels: one right,
 * one that forgets the bias. */
static void t_import(const void *arg) {
    (void)arg;
    need_torch();
    char dir[] = "/tmp/kft-kbimport-XXXXXX", cmd[PATH_MAX * 3], out[16384];
    CHECK(mkdtemp(dir));
    snprintf(cmd, sizeof cmd, "%s import kernelbench %s -o %s/tasks 2>&1", kft_bin("kforge"),
             kft_src("tests/kernelbench"), dir);
    int rc = kft_run(cmd, out, sizeof out);
    printf("%s", out);
    CHECKF(rc == 1, "exit %d (1: some problems refused)", rc);
    static const char *const rows[] = {
        "1_relu.py                        validated",
        "2_fused_gelu_scale.py            validated",
        "3_small_conv.py                  validated",
        "4_matmul_bias.py                 validated",
        "5_dropout.py                     refused    random op",
        "6_batchnorm_train.py             refused    stateful module: forward changes bn.running_mean",
        "7_nonzero.py                     refused    data-dependent output shape",
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        CHECKF(strstr(out, rows[i]), "no row '%s'", rows[i]);
    /* one problem: refused is exit 2, validated 0 */
    snprintf(cmd, sizeof cmd, "%s import kernelbench %s -o %s/one 2>&1", kft_bin("kforge"),
             kft_src("tests/kernelbench/5_dropout.py"), dir);
    CHECK(kft_run(cmd, out, sizeof out) == 2 && strstr(out, "refused"));
    kf_ctx *ctx = kf_ctx_new();
    char tdir[PATH_MAX], cand[PATH_MAX];
    snprintf(tdir, sizeof tdir, "%s/tasks/4_matmul_bias", dir);
    kf_task *t = NULL;
    CHECKF(kf_task_load(ctx, tdir, &t) == KF_OK, "%s", kf_errmsg(ctx));
    CHECK(t->ref_torch && t->nsizes == 3 && !strcmp(t->entry, "kb_4_matmul_bias"));
    static const char linear[] =
        "#include <stdint.h>\n"
        "void kb_4_matmul_bias(const float *x, const float *w, const float *b, float *y, int64_t m, int64_t "
        "k,\n"
        "                      int64_t n) {\n"
        "    for (int64_t i = 0; i < m; i++)\n"
        "        for (int64_t j = 0; j < n; j++) {\n"
        "            float s = BIAS;\n"
        "            for (int64_t p = 0; p < k; p++) s += x[i * k + p] * w[j * k + p];\n"
        "            y[i * n + j] = s;\n"
        "        }\n"
        "}\n";
    const char *bias[2][2] = {{"b[j]", "accepted"}, {"0.0f", "wrong_result"}};
    for (int i = 0; i < 2; i++) {
        char text[sizeof linear + 64];
        const char *at = strstr(linear, "BIAS");
        snprintf(text, sizeof text, "%.*s%s%s", (int)(at - linear), linear, bias[i][0], at + 4);
        snprintf(cand, sizeof cand, "%s/linear%d.c", dir, i);
        write_text(cand, text);
        kf_result *r = kft_check(ctx, t, cand, NULL, 0);
        if (i == 0) CHECKF(kf_result_verdict(r) == KF_VERDICT_ACCEPTED, "%s", kft_reasons(r));
        else CHECKF(strstr(kft_reasons(r), bias[i][1]), "%s", kft_reasons(r));
        kf_result_free(r);
    }
    kf_task_free(t);
    kf_ctx_free(ctx);
    kf__rmtree(dir);
}

/* kforge export --torch of a run of softmax_torch whose one kept node is the fast
 * candidate: DIR/torch holds the package, the README's import line and a test, which
 * passes against the PyTorch reference (building the op through cpp_extension), and
 * fails once the package's copy of the dispatcher is replaced by a wrong kernel. An
 * export without an accepted dispatcher has no op. */
static void t_export(const void *arg) {
    (void)arg;
    need_torch();
    char dir[] = "/tmp/kft-texport-XXXXXX", run[512], out[512], path[1200], cmd[4096], log[16384];
    CHECK(mkdtemp(dir));
    snprintf(run, sizeof run, "%s/run", dir);
    snprintf(out, sizeof out, "%s/out", dir);
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = kft_task(ctx, "tasks/c/softmax_torch");
    kf_store *st = NULL;
    CHECKF(kf_store_create(ctx, run, t, NULL, &st) == KF_OK, "%s", kf_errmsg(ctx));
    char *src = NULL, *js = NULL;
    size_t len = 0;
    CHECK(kf__read_file(kft_src("tasks/c/softmax_torch/candidates/fast.c"), 1u << 20, &src, &len) == 0);
    kft_kept_node(st, t, src, len, "c", 1.5);
    free(src);
    kf_store_close(st);
    /* before the export: no EXPORT.json, no op */
    CHECK(kf__mkdirs(out) == 0);
    CHECK(kf_run_export_torch(ctx, out, 0, &js) == KF_EUSAGE && strstr(kf_errmsg(ctx), "EXPORT.json"));
    kf_opts o;
    kf_opts_init(&o);
    o.bench_min_time_s = 0.02;
    o.bench_min_runs = 6;
    CHECKF(kf_run_export_opts(ctx, run, out, &o, &js) == KF_OK && js, "%s", kf_errmsg(ctx));
    free(js);
    js = NULL;
    CHECKF(kf_run_export_torch(ctx, out, 1, &js) == KF_OK, "%s", kf_errmsg(ctx));
    printf("%s\n", js);
    json_t *doc = json_loads(js, 0, NULL);
    CHECKF(!strcmp(json_string_value(json_object_get(doc, "test")), "passed") &&
               !strcmp(json_string_value(json_object_get(doc, "op")), "torch.ops.kforge.softmax"),
           "%s", js);
    json_decref(doc);
    free(js);
    char *readme = NULL;
    snprintf(path, sizeof path, "%s/torch/README.md", out);
    CHECK(kf__read_file(path, 1u << 20, &readme, &len) == 0);
    CHECKF(strstr(readme, "import kforge_softmax_torch") && strstr(readme, "torch.ops.kforge.softmax(x)"),
           "%s", readme);
    free(readme);
    /* the package's test can fail: a wrong kernel in its dispatcher's place */
    snprintf(path, sizeof path, "%s/torch/kforge_softmax_torch/softmax_torch_dispatch.c", out);
    write_text(path, "#include <stdint.h>\n"
                     "void softmax(const float *x, float *y, int64_t rows, int64_t cols) {\n"
                     "    (void)x;\n"
                     "    for (int64_t i = 0; i < rows * cols; i++) y[i] = 1.0f / (float)cols;\n"
                     "}\n");
    char py[PATH_MAX];
    CHECK(kf_torch_python(ctx, py, sizeof py) == KF_OK);
    snprintf(cmd, sizeof cmd, "cd %s/torch && '%s' test_softmax_torch.py 2>&1", out, py);
    int rc = kft_run(cmd, log, sizeof log);
    CHECKF(rc == 1 && strstr(log, "FAIL y"), "exit %d: %s", rc, log);
    kf_task_free(t);
    kf_ctx_free(ctx);
    kf__rmtree(dir);
}

void kft_register_torch(void) {
    kft_add("torch/export", t_export, NULL, 900);
    kft_add("torch/import_kernelbench", t_import, NULL, 300);
    kft_add("torch/field", t_field, NULL, 30);
    kft_add("torch/validate", t_validate, NULL, 120);
    kft_add("torch/judges", t_judges, NULL, 180);
    kft_add("torch/degenerate", t_degenerate, NULL, 120);
    kft_add("torch/failures", t_failures, NULL, 180);
    kft_add("torch/no_torch", t_no_torch, NULL, 60);
}
