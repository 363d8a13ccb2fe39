/*
 * test_torch.c - tasks whose reference is PyTorch ("reference": "reference.py",
 * docs/torch.md). The bundled tasks/c/softmax_torch validates and judges candidates as
 * its C twin does (its agreement with tasks/c/softmax is xref/softmax_torch); a wrong
 * candidate is rejected against it; a reference that writes nothing useful is refused by
 * validate's degenerate-task gate; a reference that raises is a task error naming its
 * line; without python3, or with a python3 that has no torch, a check is a task error
 * that says what to do. The warm process (docs/torch.md "The warm process"): its runners
 * give a cold runner's bits, an edited reference is re-read, a killed or stopped warm
 * process is replaced, and candidates that go for it are rejected while it lives on. The
 * tests that need torch skip without it, saying why.
 */
#define _GNU_SOURCE
#include "kft.h"

#include "check/check.h"

#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#define need_torch kft_need_torch

/* A copy of tasks/c/softmax_torch in a fresh directory (dir), with reference.py's text
 * ref (NULL: the bundled one); loaded. */
static kf_task *torch_task_of(kf_ctx *ctx, const char *rel, const char *ref, char *dir, size_t n) {
    snprintf(dir, n, "/tmp/kft-torch-%d-XXXXXX", (int)getpid());
    CHECK(mkdtemp(dir));
    char *json = NULL, *bundled = NULL, path[PATH_MAX], src[PATH_MAX];
    size_t len;
    snprintf(src, sizeof src, "%s/task.json", rel);
    CHECK(kf__read_file(kft_src(src), 1u << 20, &json, &len) == 0);
    snprintf(src, sizeof src, "%s/reference.py", rel);
    CHECK(kf__read_file(kft_src(src), 1u << 20, &bundled, &len) == 0);
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

static kf_task *torch_task(kf_ctx *ctx, const char *ref, char *dir, size_t n) {
    return torch_task_of(ctx, "tasks/c/softmax_torch", ref, dir, n);
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
        {"cuda", "\"reference.cu\"", "reference: expected the file name of a PyTorch reference"},
        /* a CUDA task may name one: the file is looked for */
        {"cuda", "\"reference.py\"", "reference.py: No such file"},
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

/* tasks/cuda/softmax_torch, a CUDA task whose reference is PyTorch (docs/torch.md "A
 * PyTorch reference for a CUDA task"), loads without a GPU or torch: the twin of
 * tasks/cuda/softmax (arguments, sizes, shapes, tolerance), its runner told to compute on
 * the GPU (the C twin's is not), its reference.py in its fingerprint; and the
 * combinations a CUDA task cannot have are refused with the reason. */
static void t_cuda_task(const void *arg) {
    (void)arg;
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = kft_task(ctx, "tasks/cuda/softmax_torch"), *twin = kft_task(ctx, "tasks/cuda/softmax");
    kf_task *c = kft_task(ctx, "tasks/c/softmax_torch");
    CHECK(t->ref_torch && !strcmp(t->backend, "cuda") && strstr(t->ref_path, "softmax_torch/reference.py"));
    CHECK(t->nargs == twin->nargs && t->nsizes == twin->nsizes && t->nshapes == twin->nshapes &&
          t->hidden_count == twin->hidden_count);
    for (int i = 0; i < t->nargs; i++) {
        const kf_arg *a = &t->args[i], *b = &twin->args[i];
        CHECKF(!strcmp(a->name, b->name) && a->type == b->type && a->is_buffer == b->is_buffer &&
                   a->io == b->io,
               "argument %d differs from tasks/cuda/softmax's", i);
        double r1, a1, r2, a2;
        kf_task_tolerance(t, a, &r1, &a1);
        kf_task_tolerance(twin, b, &r2, &a2);
        CHECK(r1 == r2 && a1 == a2);
    }
    for (int k = 0; k < t->nshapes; k++)
        for (int i = 0; i < t->nsizes; i++) CHECK(t->shapes[k].v[i] == twin->shapes[k].v[i]);
    for (int i = 0; i < t->nsizes; i++)
        CHECK(t->size_min[i] == twin->size_min[i] && t->size_max[i] == twin->size_max[i]);
    char cfg[8192];
    CHECK(kf_torch_config(t, NULL, cfg, sizeof cfg) == 0);
    CHECKF(strstr(cfg, "\ndevice cuda "), "the runner is not told to use the GPU:\n%s", cfg);
    CHECK(kf_torch_config(c, NULL, cfg, sizeof cfg) == 0);
    CHECKF(!strstr(cfg, "device"), "a C task's runner is told of a device:\n%s", cfg);
    /* the fingerprint covers reference.py */
    char dir[PATH_MAX], path[PATH_MAX];
    kf_task *copy = torch_task_of(ctx, "tasks/cuda/softmax_torch", NULL, dir, sizeof dir);
    CHECK(!strcmp(copy->fingerprint, t->fingerprint));
    kf_task_free(copy);
    snprintf(path, sizeof path, "%s/reference.py", dir);
    write_text(path, "import torch\n\ndef softmax(x, y, rows, cols):\n    return torch.softmax(x, dim=1)\n");
    CHECK(kf_task_load(ctx, dir, &copy) == KF_OK);
    CHECKF(strcmp(copy->fingerprint, t->fingerprint), "an edited reference.py left the fingerprint");
    kf_task_free(copy);
    kf__rmtree(dir);
    /* refused: a magnitude function (a C reference's second entry), a reference that is
     * not a .py file of the task's directory */
    static const char *const bad[][2] = {
        {"\"tolerance\": {\"rtol\": 1e-4, \"atol\": 1e-6, \"mtol\": 1e-6, \"magnitude\": \"mag\"}, "
         "\"reference\": \"reference.py\"",
         "a magnitude function is supported for a C reference"},
        {"\"reference\": \"reference.cu\"", "reference: expected the file name of a PyTorch reference"},
        {"\"reference\": \"sub/reference.py\"", "reference: expected the file name of a PyTorch reference"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char d[] = "/tmp/kft-tcuda-XXXXXX";
        CHECK(mkdtemp(d));
        snprintf(path, sizeof path, "%s/reference.py", d);
        write_text(path, "def f(y, n):\n    y.fill_(1)\n");
        snprintf(path, sizeof path, "%s/task.json", d);
        FILE *f = fopen(path, "w");
        CHECK(f &&
              fprintf(f,
                      "{\"name\": \"t\", \"backend\": \"cuda\", \"entry\": \"f\", \"sizes\": {\"n\": [1, 8]},"
                      " \"args\": [{\"name\": \"y\", \"type\": \"f32\", \"shape\": [\"n\"], \"io\": \"out\"},"
                      " {\"name\": \"n\", \"type\": \"i64\", \"value\": \"n\"}],"
                      " \"shapes\": [{\"n\": 4}], %s}\n",
                      bad[i][0]) > 0 &&
              fclose(f) == 0);
        kf_task *x = NULL;
        kf_status st = kf_task_load(ctx, d, &x);
        kf__rmtree(d);
        CHECKF(st == KF_ETASK && strstr(kf_errmsg(ctx), bad[i][1]), "%zu: %s", i,
               st ? kf_errmsg(ctx) : "loaded");
        kf_task_free(x);
    }
    kf_task_free(c);
    kf_task_free(twin);
    kf_task_free(t);
    kf_ctx_free(ctx);
}

/* Run the kforge CLI (args after the binary) with KFORGE_PYTHON=py (NULL: unset); its
 * exit status, and its output into out. */
static int cli(const char *py, const char *args, char *out, size_t n) {
    char cmd[3 * PATH_MAX];
    snprintf(cmd, sizeof cmd, "cd %s && %s%s%s %s %s 2>&1", kft_src("."), py ? "KFORGE_PYTHON='" : "",
             py ? py : "", py ? "'" : "", kft_bin("kforge"), args);
    return kft_run(cmd, out, n);
}

/* Without what a CUDA task's PyTorch reference needs, `kforge validate` (and a check's
 * reference side) is an error of the environment, exit 2, naming what is missing: no
 * python3, a python3 without torch, and (on a machine without a GPU, with torch) no CUDA
 * device. */
static void t_cuda_missing(const void *arg) {
    (void)arg;
    char out[4096];
    int rc = cli("/nonexistent/python3", "validate tasks/cuda/softmax_torch", out, sizeof out);
    CHECKF(rc == 2 && strstr(out, "KFORGE_PYTHON=/nonexistent/python3: no such executable"), "%d: %s", rc,
           out);
    printf("%s", out);
    /* a python3 whose torch fails to import */
    char dir[] = "/tmp/kft-cudanotorch-XXXXXX", path[PATH_MAX], py[PATH_MAX + 32];
    CHECK(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/torch.py", dir);
    write_text(path, "raise ImportError('no torch in this python')\n");
    snprintf(py, sizeof py, "%s/python3", dir);
    FILE *f = fopen(py, "w");
    CHECK(f && fprintf(f, "#!/bin/sh\nPYTHONPATH=%s exec python3 \"$@\"\n", dir) > 0 && fclose(f) == 0);
    CHECK(chmod(py, 0755) == 0);
    rc = cli(py, "validate tasks/cuda/softmax_torch", out, sizeof out);
    kf__rmtree(dir);
    CHECKF(rc == 2 && strstr(out, "cannot import torch") && strstr(out, "no torch in this python"), "%d: %s",
           rc, out);
    printf("%s", out);
    /* torch without a GPU: the message says so, for validate and for the reference's side
     * of a check (spawned as a check spawns it) */
    char why[512];
    if (kft_have_gpu(why, sizeof why)) kft_skip("this machine has a GPU (the rest needs none)");
    need_torch();
    rc = cli(NULL, "validate tasks/cuda/softmax_torch", out, sizeof out);
    CHECKF(rc == 2 && strstr(out, "a CUDA task's PyTorch reference needs a GPU") &&
               strstr(out, "torch.cuda.is_available() is False"),
           "%d: %s", rc, out);
    printf("%s", out);
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = kft_task(ctx, "tasks/cuda/softmax_torch");
    kf_opts o;
    kf_opts_init(&o);
    kf_sess s;
    kf_side side;
    memset(&side, 0, sizeof side);
    CHECK(kf_sess_open(&s, ctx, t, NULL, &o, "check") == KF_OK);
    CHECK(kf_sess_build_ref(&s) == KF_OK);
    kf_call_result fail;
    kf_status st = kf_sess_spawn(&s, &s.rbuild, 1 << 20, &side, &fail);
    CHECKF(st == KF_EBACKEND && !side.w && strstr(kf_errmsg(ctx), "needs a GPU"), "%s: %s", kf_strstatus(st),
           st ? kf_errmsg(ctx) : "it started");
    kf_result_free(s.res);
    kf_sess_close(&s);
    kf_task_free(t);
    kf_ctx_free(ctx);
}

/* On a GPU: tasks/cuda/softmax_torch validates, accepts tasks/cuda/softmax's fast kernel,
 * rejects one wrong in every row, and is a baseline bench can time (its event time). A
 * reference that raises on the GPU is a task error naming its line. */
static void t_cuda_judges(const void *arg) {
    (void)arg;
    char why[512];
    if (!kft_have_gpu(why, sizeof why)) kft_skip("a CUDA task's PyTorch reference needs a GPU: %s", why);
    need_torch();
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = kft_task(ctx, "tasks/cuda/softmax_torch");
    kf_opts o;
    kf_opts_init(&o);
    kf_result *r = NULL;
    CHECKF(kf_validate(ctx, t, &o, &r) == KF_OK, "%s", kf_errmsg(ctx));
    CHECKF(kf_result_verdict(r) == KF_VERDICT_ACCEPTED, "validate refused it: %s", kft_reasons(r));
    kf_result_free(r);
    CHECKF(kf_check(ctx, t, kft_src("tasks/cuda/softmax_torch/candidates/fast.cu"), &o, &r) == KF_OK, "%s",
           kf_errmsg(ctx));
    CHECKF(kf_result_verdict(r) == KF_VERDICT_ACCEPTED, "fast.cu rejected: %s", kft_reasons(r));
    kf_result_free(r);
    char dir[PATH_MAX], path[PATH_MAX];
    snprintf(dir, sizeof dir, "/tmp/kft-tcudaw-%d-XXXXXX", (int)getpid());
    CHECK(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/uniform.cu", dir);
    write_text(
        path, "// kforge:launch kernel=uniform grid=((rows*cols+255)/256,1,1) block=(256,1,1)\n"
              "extern \"C\" __global__ void uniform(const float *x, float *y, int64_t rows, int64_t cols) {\n"
              "    int64_t i = (int64_t)blockIdx.x * 256 + threadIdx.x;\n"
              "    if (i < rows * cols) y[i] = 1.0f / (float)cols;\n"
              "}\n");
    CHECKF(kf_check(ctx, t, path, &o, &r) == KF_OK, "%s", kf_errmsg(ctx));
    kf__rmtree(dir);
    CHECKF(kf_result_verdict(r) == KF_VERDICT_REJECTED && strstr(kft_reasons(r), "wrong_result"), "%s",
           kft_reasons(r));
    kf_result_free(r);
    o.bench_min_runs = 5;
    o.bench_min_time_s = 0.01;
    CHECKF(kf_bench(ctx, t, kft_src("tasks/cuda/softmax_torch/candidates/fast.cu"), &o, &r) == KF_OK, "%s",
           kf_errmsg(ctx));
    CHECKF(kf_result_verdict(r) == KF_VERDICT_ACCEPTED, "bench: %s", kft_reasons(r));
    /* the reference's own event time is the baseline of every shape */
    char *json = kf_result_json(r);
    json_t *doc = json ? json_loads(json, 0, NULL) : NULL, *sh;
    size_t k;
    int timed = 0;
    CHECK(doc);
    json_array_foreach(json_object_get(doc, "shapes"), k, sh) {
        double b = json_number_value(json_object_get(sh, "baseline_ns"));
        CHECKF(b > 1000, "shape %zu: baseline_ns %g", k, b);
        printf("shape %zu: baseline %.1f us, candidate %.1f us\n", k, b / 1e3,
               json_number_value(json_object_get(sh, "candidate_ns")) / 1e3);
        timed++;
    }
    CHECK(timed > 0);
    json_decref(doc);
    free(json);
    kf_result_free(r);
    kf_task_free(t);
    /* a reference that raises on the GPU */
    t = torch_task_of(ctx, "tasks/cuda/softmax_torch",
                      "import torch\n\ndef softmax(x, y, rows, cols):\n    return torch.softmax(x, dim=7)\n",
                      dir, sizeof dir);
    kf_status st = kf_check(ctx, t, kft_src("tasks/cuda/softmax_torch/candidates/fast.cu"), &o, &r);
    kf__rmtree(dir);
    CHECKF(st == KF_ETASK && strstr(kf_errmsg(ctx), "reference.py (line 4): IndexError"), "%s: %s",
           kf_strstatus(st), st ? kf_errmsg(ctx) : "no error");
    kf_task_free(t);
    kf_ctx_free(ctx);
}

/* The import of tests/kernelbench (problems written in that format for these tests):
 * the single op, the fused elementwise ops, the small conv and the matmul with bias are
 * imported and validated; dropout, a BatchNorm in training mode and nonzero are refused,
 * each with its reason. The imported matmul with bias then judges C kernels: one right,
 * one that forgets the bias. */
/* A reference whose outputs show any state a process carries from call to call: torch's
 * global generator, a module-level counter, the thread count. */
static const char *const stateful_ref = "import torch\n"
                                        "calls = [0]\n"
                                        "\n"
                                        "def softmax(x, y, rows, cols):\n"
                                        "    calls[0] += 1\n"
                                        "    noise = torch.randn(x.shape, dtype=x.dtype)\n"
                                        "    k = calls[0] * torch.get_num_threads()\n"
                                        "    return torch.softmax(x + noise, dim=-1) * k\n";

#define WARM_CALLS 8

/* One reference side of t: WARM_CALLS calls at t's first visible shape on inputs drawn
 * from a fixed seed, every output kept in outs[call] (freed with kf_sess_free_outputs). */
static void ref_side_calls(kf_task *t, void *outs[WARM_CALLS][KF_MAX_ARGS]) {
    kf_ctx *ctx = kf_ctx_new();
    kf_opts o;
    kf_opts_init(&o);
    o.has_seed = 1;
    o.seed = 17;
    kf_shape sh = {t->shapes[0].v, KF_SHAPE_VISIBLE, 0};
    kf_extents ex;
    char err[512];
    CHECKF(!kf_data_extents(t, &sh, &ex, err, sizeof err), "%s", err);
    kf_sess s;
    kf_side side;
    memset(&side, 0, sizeof side);
    CHECKF(kf_sess_open(&s, ctx, t, NULL, &o, "validate") == KF_OK, "%s", kf_errmsg(ctx));
    CHECKF(kf_sess_build_ref(&s) == KF_OK, "%s", kf_errmsg(ctx));
    kf_call_result fail;
    CHECKF(kf_sess_spawn(&s, &s.rbuild, kf_sess_arena_bytes(t, &ex), &side, &fail) == KF_OK, "%s",
           kf_errmsg(ctx));
    CHECKF(side.w, "the reference does not load: %s", fail.msg);
    kf_rng rng;
    CHECK(kf_rng_seed(&rng, 17) == 0);
    for (int k = 0; k < WARM_CALLS; k++) {
        kf_inputs in;
        kf_poison p;
        kf_call_result cr;
        CHECK(kf_data_gen_inputs(t, &ex, &rng, k % 2, &in) == 0);
        kf_data_make_poison(t, &rng, &p);
        kf_sess_place(&s, &rng, &ex, k % 2, &side.lay);
        kf_sess_call(&s, &side, &ex, &in, &p, &cr);
        CHECKF(cr.st == KF_CALL_OK, "call %d: %s: %s", k, kf_reason_name(cr.reason), cr.msg);
        CHECK(kf_sess_take_outputs(&s, &side, &ex, outs[k]) == 0);
        kf_data_free_inputs(t, &in);
    }
    kf_rng_free(&rng);
    kf_worker_close(side.w);
    kf_result_free(s.res);
    kf_sess_close(&s);
    kf_ctx_free(ctx);
}

/* The warm process's runners give the outputs of a cold process, bit for bit, call after
 * call, and one runner leaves nothing to the next: a cold side, then three warm ones
 * forked from one warm process, WARM_CALLS calls each. */
static void t_warm_identical(const void *arg) {
    (void)arg;
    need_torch();
    kf_ctx *ctx = kf_ctx_new();
    char dir[PATH_MAX];
    kf_task *t = torch_task(ctx, stateful_ref, dir, sizeof dir);
    static void *cold[WARM_CALLS][KF_MAX_ARGS], *warm[WARM_CALLS][KF_MAX_ARGS];
    setenv("KFORGE_TORCH_WARM", "0", 1);
    ref_side_calls(t, cold);
    CHECKF(kf_torch_warm_pid() < 0, "a warm process with KFORGE_TORCH_WARM=0");
    setenv("KFORGE_TORCH_WARM", "process", 1); /* this process's warm process, not the server */
    pid_t first = -1;
    int y = 1; /* softmax's output */
    kf_shape sh = {t->shapes[0].v, KF_SHAPE_VISIBLE, 0};
    kf_extents ex;
    char err[512];
    CHECKF(!kf_data_extents(t, &sh, &ex, err, sizeof err), "%s", err);
    size_t bytes = (size_t)ex.count[y] * sizeof(float);
    for (int side = 0; side < 3; side++) {
        ref_side_calls(t, warm);
        pid_t p = kf_torch_warm_pid();
        CHECKF(p > 0 && (first < 0 || p == first), "side %d: warm process %d, first %d", side, (int)p,
               (int)first);
        first = p;
        for (int k = 0; k < WARM_CALLS; k++) {
            CHECKF(k == 0 || memcmp(warm[k][y], warm[k - 1][y], bytes),
                   "call %d: the same as the call before", k);
            CHECKF(!memcmp(cold[k][y], warm[k][y], bytes),
                   "warm side %d, call %d: not the cold process's bits", side, k);
        }
        for (int k = 0; k < WARM_CALLS; k++) kf_sess_free_outputs(t, warm[k]);
    }
    printf("3 warm sides of %d calls: the cold process's bits (warm process %d)\n", WARM_CALLS, (int)first);
    for (int k = 0; k < WARM_CALLS; k++) kf_sess_free_outputs(t, cold[k]);
    kf__rmtree(dir);
    kf_task_free(t);
    kf_ctx_free(ctx);
}

static kf_verdict check_verdict(kf_ctx *ctx, const char *dir, const char *cand, char *reasons, size_t n) {
    kf_task *t = NULL;
    CHECKF(kf_task_load(ctx, dir, &t) == KF_OK, "%s", kf_errmsg(ctx));
    kf_result *r = kft_check(ctx, t, kft_src(cand), NULL, 0);
    kf_verdict v = kf_result_verdict(r);
    snprintf(reasons, n, "%s", kft_reasons(r));
    kf_result_free(r);
    kf_task_free(t);
    return v;
}

static const char *const fast = "tasks/c/softmax_torch/candidates/fast.c";

/* A reference edited between two checks is the one the second check runs, although the
 * same warm process serves both. */
static void t_warm_reread(const void *arg) {
    (void)arg;
    need_torch();
    setenv("KFORGE_TORCH_WARM", "process", 1); /* this process's warm process, not the server */
    kf_ctx *ctx = kf_ctx_new();
    char dir[PATH_MAX], why[256], path[PATH_MAX + 16];
    kf_task_free(torch_task(ctx, NULL, dir, sizeof dir));
    CHECKF(check_verdict(ctx, dir, fast, why, sizeof why) == KF_VERDICT_ACCEPTED, "%s", why);
    pid_t p = kf_torch_warm_pid();
    CHECK(p > 0);
    snprintf(path, sizeof path, "%s/reference.py", dir);
    write_text(path,
               "import torch\n\ndef softmax(x, y, rows, cols):\n    return torch.softmax(x, dim=-1) * 2\n");
    CHECKF(check_verdict(ctx, dir, fast, why, sizeof why) == KF_VERDICT_REJECTED &&
               strstr(why, "wrong_result"),
           "the edited reference was not run: %s", why);
    CHECKF(kf_torch_warm_pid() == p, "warm process %d, then %d", (int)p, (int)kf_torch_warm_pid());
    kf__rmtree(dir);
    kf_ctx_free(ctx);
}

/* A killed warm process, then a stopped (hung) one, is replaced: the verdicts stay
 * right, and the new warm process serves the next check. */
static void t_warm_replaced(const void *arg) {
    (void)arg;
    need_torch();
    setenv("KFORGE_TORCH_WARM", "process", 1); /* this process's warm process, not the server */
    kf_ctx *ctx = kf_ctx_new();
    char why[256];
    const char *task = kft_src("tasks/c/softmax_torch");
    CHECKF(check_verdict(ctx, task, fast, why, sizeof why) == KF_VERDICT_ACCEPTED, "%s", why);
    pid_t p1 = kf_torch_warm_pid();
    CHECK(p1 > 0 && kill(p1, SIGKILL) == 0);
    usleep(100 * 1000);
    CHECKF(check_verdict(ctx, task, fast, why, sizeof why) == KF_VERDICT_ACCEPTED, "after a kill: %s", why);
    pid_t p2 = kf_torch_warm_pid();
    CHECKF(p2 > 0 && p2 != p1, "killed %d, now %d", (int)p1, (int)p2);
    CHECK(kill(p2, SIGSTOP) == 0);
    CHECKF(check_verdict(ctx, task, "tests/redteam/01_skip_last_row.c", why, sizeof why) ==
               KF_VERDICT_REJECTED,
           "a wrong kernel against a replaced warm process: %s", why);
    pid_t p3 = kf_torch_warm_pid();
    CHECKF(p3 > 0 && p3 != p2 && kill(p2, 0) < 0, "stopped %d, now %d", (int)p2, (int)p3);
    CHECKF(check_verdict(ctx, task, fast, why, sizeof why) == KF_VERDICT_ACCEPTED, "%s", why);
    CHECK(kf_torch_warm_pid() == p3);
    printf("warm process %d killed, %d stopped, %d serves\n", (int)p1, (int)p2, (int)p3);
    kf_ctx_free(ctx);
}

/* Candidates that go for the warm process (tests/redteam/18_torch_warm_*.c) are rejected
 * for it, and the warm process lives on unharmed and serves the next check. */
static void t_warm_redteam(const void *arg) {
    (void)arg;
    need_torch();
    setenv("KFORGE_TORCH_WARM", "process", 1); /* this process's warm process, not the server */
    kf_ctx *ctx = kf_ctx_new();
    char why[256];
    const char *task = kft_src("tasks/c/softmax_torch");
    CHECKF(check_verdict(ctx, task, fast, why, sizeof why) == KF_VERDICT_ACCEPTED, "%s", why);
    pid_t p = kf_torch_warm_pid();
    CHECK(p > 0);
    static const char *const cases[][2] = {{"proc", "unwritten_output"},
                                           {"signal", "sandbox_violation"},
                                           {"socket", "sandbox_violation"},
                                           {"fds", "unwritten_output"}};
    for (int i = 0; i < 4; i++) {
        char cand[128];
        snprintf(cand, sizeof cand, "tests/redteam/18_torch_warm_%s.c", cases[i][0]);
        CHECKF(check_verdict(ctx, task, cand, why, sizeof why) == KF_VERDICT_REJECTED &&
                   strstr(why, cases[i][1]),
               "%s: %s", cand, why);
        CHECKF(kill(p, 0) == 0 && kf_torch_warm_pid() == p, "after %s: warm process %d gone (now %d)", cand,
               (int)p, (int)kf_torch_warm_pid());
    }
    CHECKF(check_verdict(ctx, task, fast, why, sizeof why) == KF_VERDICT_ACCEPTED, "%s", why);
    CHECK(kf_torch_warm_pid() == p);
    kf_ctx_free(ctx);
}

/* ---- The warm server (docs/torch.md "Across invocations") ---- */

/* A private cache directory (where the server's socket goes) and idle timeout for this
 * test's checks, the server on: the directory into dir. */
static void server_env(char *dir, size_t n, const char *idle) {
    snprintf(dir, n, "/tmp/kft-tsrv-XXXXXX");
    CHECK(mkdtemp(dir));
    setenv("KFORGE_CACHE_DIR", dir, 1);
    setenv("KFORGE_TORCH_SERVER_IDLE", idle, 1);
    unsetenv("KFORGE_TORCH_WARM");
}

static void server_sock(char *path, size_t n) {
    kf_ctx *ctx = kf_ctx_new();
    char py[PATH_MAX];
    CHECKF(kf_torch_python(ctx, py, sizeof py) == KF_OK, "%s", kf_errmsg(ctx));
    CHECK(kf_torch_server_path(py, path, n) == 0);
    kf_ctx_free(ctx);
}

/* The pid of the server listening at this test's socket (its answer to HELLO), or -1. */
static pid_t server_pid(void) {
    char path[PATH_MAX], msg[256];
    server_sock(path, sizeof path);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
    int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    CHECK(s >= 0);
    pid_t p = -1;
    struct pollfd pf = {s, POLLIN, 0};
    if (!connect(s, (struct sockaddr *)&sa, sizeof sa) && send(s, "HELLO", 5, MSG_NOSIGNAL) == 5 &&
        poll(&pf, 1, 10000) == 1) {
        ssize_t k = recv(s, msg, sizeof msg - 1, 0);
        if (k > 6 && !strncmp(msg, "READY ", 6)) {
            msg[k] = 0;
            p = (pid_t)strtol(strrchr(msg, ' ') + 1, NULL, 10);
        }
    }
    close(s);
    return p;
}

/* Whether pid is gone (or a zombie: its parent has not reaped it yet). */
static int pid_dead(pid_t pid) {
    char path[64], buf[256] = "";
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f) return 1;
    size_t k = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[k] = 0;
    char *rp = strrchr(buf, ')');
    return !rp || rp[1] == 0 || rp[2] == 'Z' || rp[2] == 'X';
}

static void server_end(const char *dir) {
    pid_t p = server_pid();
    if (p > 0) kill(p, SIGKILL);
    kf__rmtree(dir);
}

/* `kforge check TASK CAND --json --seed 7` with env before it, its document with the
 * timings masked into out: the exit status. */
static int check_doc(const char *env, const char *task, const char *cand, char *out, size_t n) {
    char cmd[PATH_MAX * 4], tmp[] = "/tmp/kft-tdoc-XXXXXX";
    int fd = mkstemp(tmp);
    CHECK(fd >= 0);
    close(fd);
    snprintf(cmd, sizeof cmd,
             "env %s %s check %s %s --json --seed 7 >%s; r=$?; "
             "sed -E 's/\"(seconds|best_ns)\":[0-9.e+-]+/\"\\1\":0/g; s/\"cached\":[a-z]+/\"cached\":0/' %s; "
             "rm -f %s; exit $r",
             env, kft_bin("kforge"), kft_src(task), kft_src(cand), tmp, tmp, tmp);
    return kft_run(cmd, out, n);
}

/* Separate `kforge check` processes: the second and later ones are served by the server
 * the first started, and give the same verdict documents (timings masked) as checks
 * whose runners start cold, for an accepted and for a rejected kernel. */
static void t_server_same(const void *arg) {
    (void)arg;
    need_torch();
    char dir[64];
    server_env(dir, sizeof dir, "60");
    static const char *const cands[] = {"tasks/c/softmax_torch/candidates/fast.c",
                                        "tests/redteam/01_skip_last_row.c"};
    static char cold[65536], warm1[65536], warm2[65536];
    pid_t first = -1;
    for (int i = 0; i < 2; i++) {
        int rc = check_doc("KFORGE_TORCH_WARM=0", "tasks/c/softmax_torch", cands[i], cold, sizeof cold);
        CHECKF(rc == i, "%s cold: exit %d: %s", cands[i], rc, cold);
        CHECKF(strstr(cold, i ? "\"verdict\":\"rejected\"" : "\"verdict\":\"accepted\""), "%s", cold);
        rc = check_doc("", "tasks/c/softmax_torch", cands[i], warm1, sizeof warm1);
        CHECKF(rc == i, "%s: exit %d: %s", cands[i], rc, warm1);
        pid_t p = server_pid();
        CHECKF(p > 0 && (first < 0 || p == first), "server %d after the first check, first %d", (int)p,
               (int)first);
        first = p;
        uint64_t t0 = kf__now_ns();
        rc = check_doc("", "tasks/c/softmax_torch", cands[i], warm2, sizeof warm2);
        double s = (double)(kf__now_ns() - t0) / 1e9;
        CHECKF(rc == i, "%s: exit %d: %s", cands[i], rc, warm2);
        CHECKF(server_pid() == first, "the server changed: %d, then %d", (int)first, (int)server_pid());
        CHECKF(!strcmp(cold, warm1) && !strcmp(cold, warm2),
               "%s: cold and served documents differ:\n%s\n%s\n%s", cands[i], cold, warm1, warm2);
        printf("%s: the cold document, served by server %d (the second check %.2f s)\n", cands[i], (int)first,
               s);
    }
    server_end(dir);
}

/* Start a server at this test's socket as another build would (another identity):
 * its pid. */
static pid_t fake_server(const char *ident) {
    kf_ctx *ctx = kf_ctx_new();
    char py[PATH_MAX], path[PATH_MAX];
    CHECK(kf_torch_python(ctx, py, sizeof py) == KF_OK);
    kf_ctx_free(ctx);
    server_sock(path, sizeof path);
    int sv[2];
    CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv) == 0);
    pid_t c = fork();
    CHECK(c >= 0);
    if (c == 0) {
        dup2(sv[1], 3);
        execl(py, py, "-c", kf_torch_runner(), "serve", path, ident, "60", (char *)NULL);
        _exit(127);
    }
    close(sv[1]);
    waitpid(c, NULL, 0);
    char out[128] = "";
    struct pollfd pf = {sv[0], POLLIN, 0};
    ssize_t k = poll(&pf, 1, 120000) == 1 ? recv(sv[0], out, sizeof out - 1, 0) : -1;
    close(sv[0]);
    CHECKF(k > 6 && !strncmp(out, "READY ", 6), "the other server did not start: %s", out);
    out[k] = 0;
    return (pid_t)strtol(out + 6, NULL, 10);
}

/* Runners forked by the server give the outputs of a cold process, bit for bit, call
 * after call, with a reference that reads torch's generator, keeps a counter and
 * multiplies by the thread count: nothing of one side reaches the next, and the server's
 * runner starts from a cold runner's state. Three sides, the server started by the first. */
static void t_server_identical(const void *arg) {
    (void)arg;
    need_torch();
    kf_ctx *ctx = kf_ctx_new();
    char dir[PATH_MAX], sdir[64];
    kf_task *t = torch_task(ctx, stateful_ref, dir, sizeof dir);
    static void *cold[WARM_CALLS][KF_MAX_ARGS], *warm[WARM_CALLS][KF_MAX_ARGS];
    setenv("KFORGE_TORCH_WARM", "0", 1);
    ref_side_calls(t, cold);
    server_env(sdir, sizeof sdir, "60");
    CHECK(server_pid() < 0);
    int y = 1; /* softmax's output */
    kf_shape sh = {t->shapes[0].v, KF_SHAPE_VISIBLE, 0};
    kf_extents ex;
    char err[512];
    CHECKF(!kf_data_extents(t, &sh, &ex, err, sizeof err), "%s", err);
    size_t bytes = (size_t)ex.count[y] * sizeof(float);
    pid_t first = -1;
    for (int side = 0; side < 3; side++) {
        ref_side_calls(t, warm);
        pid_t p = server_pid();
        CHECKF(p > 0 && (first < 0 || p == first), "side %d: server %d, first %d", side, (int)p, (int)first);
        CHECKF(kf_torch_warm_pid() < 0, "side %d: served by this process's warm process", side);
        first = p;
        for (int k = 0; k < WARM_CALLS; k++)
            CHECKF(!memcmp(cold[k][y], warm[k][y], bytes),
                   "served side %d, call %d: not the cold process's bits", side, k);
        for (int k = 0; k < WARM_CALLS; k++) kf_sess_free_outputs(t, warm[k]);
    }
    printf("3 sides of %d calls served by server %d: the cold process's bits\n", WARM_CALLS, (int)first);
    for (int k = 0; k < WARM_CALLS; k++) kf_sess_free_outputs(t, cold[k]);
    server_end(sdir);
    kf__rmtree(dir);
    kf_task_free(t);
    kf_ctx_free(ctx);
}

/* A server of another identity (another build of kforge, another runner) is told to quit
 * and replaced: the check is served by a fresh one, the old one ends. */
static void t_server_stale(const void *arg) {
    (void)arg;
    need_torch();
    char dir[64];
    server_env(dir, sizeof dir, "60");
    pid_t old = fake_server("0000000000000000000000000000000000000000000000000000000000000000");
    CHECKF(server_pid() == old, "the other build's server %d does not answer (%d)", (int)old,
           (int)server_pid());
    static char doc[65536];
    int rc =
        check_doc("", "tasks/c/softmax_torch", "tasks/c/softmax_torch/candidates/fast.c", doc, sizeof doc);
    CHECKF(rc == 0, "exit %d: %s", rc, doc);
    pid_t now = server_pid();
    CHECKF(now > 0 && now != old, "the stale server %d still serves (%d)", (int)old, (int)now);
    for (int i = 0; i < 100 && !pid_dead(old); i++) usleep(100 * 1000);
    CHECKF(pid_dead(old), "the stale server %d lives on", (int)old);
    printf("stale server %d replaced by %d\n", (int)old, (int)now);
    server_end(dir);
}

/* A killed server, then a stopped (hung) one, is replaced at the next check, which
 * still succeeds. */
static void t_server_restart(const void *arg) {
    (void)arg;
    need_torch();
    char dir[64];
    server_env(dir, sizeof dir, "60");
    static char doc[65536];
    const char *task = "tasks/c/softmax_torch", *cand = "tasks/c/softmax_torch/candidates/fast.c";
    int rc = check_doc("", task, cand, doc, sizeof doc);
    CHECKF(rc == 0, "exit %d: %s", rc, doc);
    pid_t p1 = server_pid();
    CHECK(p1 > 0 && kill(p1, SIGKILL) == 0);
    for (int i = 0; i < 100 && !pid_dead(p1); i++) usleep(50 * 1000);
    rc = check_doc("", task, cand, doc, sizeof doc);
    CHECKF(rc == 0 && strstr(doc, "\"verdict\":\"accepted\""), "after a kill: exit %d: %s", rc, doc);
    pid_t p2 = server_pid();
    CHECKF(p2 > 0 && p2 != p1, "killed %d, now %d", (int)p1, (int)p2);
    CHECK(kill(p2, SIGSTOP) == 0);
    rc = check_doc("", task, "tests/redteam/01_skip_last_row.c", doc, sizeof doc);
    CHECKF(rc == 1 && strstr(doc, "\"verdict\":\"rejected\""), "a wrong kernel after a stop: exit %d: %s", rc,
           doc);
    pid_t p3 = server_pid();
    CHECKF(p3 > 0 && p3 != p2, "stopped %d, now %d", (int)p2, (int)p3);
    kill(p2, SIGKILL);
    printf("server %d killed, %d stopped, %d serves\n", (int)p1, (int)p2, (int)p3);
    server_end(dir);
}

/* A candidate that connects to the server's socket, by its path, is a sandbox_violation
 * (the worker's seccomp filter refuses socket()), and the server serves on. */
static void t_server_redteam(const void *arg) {
    (void)arg;
    need_torch();
    char dir[64], path[PATH_MAX], cand[128], src[PATH_MAX + 2048];
    server_env(dir, sizeof dir, "60");
    static char doc[65536];
    const char *task = "tasks/c/softmax_torch";
    int rc = check_doc("", task, "tasks/c/softmax_torch/candidates/fast.c", doc, sizeof doc);
    CHECKF(rc == 0, "exit %d: %s", rc, doc);
    pid_t p = server_pid();
    CHECK(p > 0);
    server_sock(path, sizeof path);
    snprintf(cand, sizeof cand, "%s/connect.c", dir);
    /* it asks for a runner on descriptors of its own, or at least for the server's HELLO */
    snprintf(
        src, sizeof src,
        "#include <stdint.h>\n#include <string.h>\n#include <sys/socket.h>\n#include <sys/un.h>\n"
        "#include <unistd.h>\n"
        "void softmax(const float *x, float *y, int64_t rows, int64_t cols) {\n"
        "    struct sockaddr_un sa = {.sun_family = AF_UNIX};\n"
        "    strcpy(sa.sun_path, \"%s\");\n"
        "    int s = socket(AF_UNIX, SOCK_SEQPACKET, 0);\n"
        "    char buf[256] = \"\";\n"
        "    if (s >= 0 && !connect(s, (struct sockaddr *)&sa, sizeof sa) && send(s, \"HELLO\", 5, 0) == 5)\n"
        "        recv(s, buf, sizeof buf, 0);\n"
        "    for (int64_t i = 0; i < rows * cols; i++) y[i] = buf[0] == 'R' ? 0.0f : x[i];\n"
        "}\n",
        path);
    write_text(cand, src);
    char cmd[PATH_MAX * 3];
    snprintf(cmd, sizeof cmd, "%s check %s %s --json", kft_bin("kforge"), kft_src(task), cand);
    rc = kft_run(cmd, doc, sizeof doc);
    CHECKF(rc == 1 && strstr(doc, "sandbox_violation"), "exit %d: %s", rc, doc);
    CHECKF(server_pid() == p, "the server %d is gone (%d)", (int)p, (int)server_pid());
    rc = check_doc("", task, "tasks/c/softmax_torch/candidates/fast.c", doc, sizeof doc);
    CHECKF(rc == 0 && server_pid() == p, "exit %d, server %d then %d: %s", rc, (int)p, (int)server_pid(),
           doc);
    server_end(dir);
}

/* The server exits after KFORGE_TORCH_SERVER_IDLE seconds without a request, and takes
 * its socket's name with it; the next check starts a new one. */
static void t_server_idle(const void *arg) {
    (void)arg;
    need_torch();
    char dir[64], path[PATH_MAX];
    server_env(dir, sizeof dir, "2");
    static char doc[65536];
    const char *task = "tasks/c/softmax_torch", *cand = "tasks/c/softmax_torch/candidates/fast.c";
    int rc = check_doc("", task, cand, doc, sizeof doc);
    CHECKF(rc == 0, "exit %d: %s", rc, doc);
    pid_t p = server_pid();
    CHECK(p > 0);
    server_sock(path, sizeof path);
    struct stat st;
    int i = 0;
    for (; i < 200 && (!pid_dead(p) || !lstat(path, &st)); i++) usleep(50 * 1000);
    CHECKF(pid_dead(p) && lstat(path, &st) < 0, "server %d still there %.1f s after its idle timeout", (int)p,
           i * 0.05);
    CHECKF(i >= 10, "server %d gone %.2f s after the check, before its 2 s idle timeout", (int)p, i * 0.05);
    rc = check_doc("", task, cand, doc, sizeof doc);
    pid_t q = server_pid();
    CHECKF(rc == 0 && q > 0 && q != p, "exit %d, server %d then %d", rc, (int)p, (int)q);
    printf("server %d idle-exited after %.1f s; %d serves\n", (int)p, i * 0.05, (int)q);
    server_end(dir);
}

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

/* A problem whose Model holds buffers with exact values (tests/kernelbench/8_fixed_buffers.py:
 * a permutation from a generator of its own, a causal mask as bool) and a frozen parameter
 * (a scale the constructor sets): imported with all three as in buffers with fixed data
 * (data/scale.bin as f32, data/perm.bin as i64, data/mask.bin as u8), the size that
 * shapes them kept fixed, and validated. A kernel that gathers through perm, sums under
 * mask and scales is accepted; one that ignores perm, or scale, is rejected; a mask file
 * of another size is a clear error at load. */
static void t_import_fixed_data(const void *arg) {
    (void)arg;
    need_torch();
    char dir[] = "/tmp/kft-kbdata-XXXXXX", cmd[PATH_MAX * 3], out[16384], tdir[PATH_MAX], p[PATH_MAX + 64];
    CHECK(mkdtemp(dir));
    snprintf(tdir, sizeof tdir, "%s/fb", dir);
    snprintf(cmd, sizeof cmd, "%s import kernelbench %s -o %s 2>&1", kft_bin("kforge"),
             kft_src("tests/kernelbench/8_fixed_buffers.py"), tdir);
    int rc = kft_run(cmd, out, sizeof out);
    printf("%s", out);
    CHECKF(rc == 0 && strstr(out, "validated") &&
               strstr(out, "size features kept fixed: it shapes fixed data (mask, perm, scale)"),
           "exit %d: %s", rc, out);
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = NULL;
    CHECKF(kf_task_load(ctx, tdir, &t) == KF_OK, "%s", kf_errmsg(ctx));
    CHECK(t->nargs == 6 && t->nsizes == 1 && !strcmp(t->size_names[0], "batch_size") && !t->args[0].data);
    CHECK(!strcmp(t->args[1].name, "scale") && t->args[1].type == KF_T_F32 && t->args[1].data_len == 24 * 4);
    CHECK(!strcmp(t->args[2].name, "perm") && t->args[2].type == KF_T_I64 && t->args[2].data_len == 24 * 8 &&
          t->args[2].data_file && !strcmp(t->args[2].data_file, "data/perm.bin"));
    CHECK(!strcmp(t->args[3].name, "mask") && t->args[3].type == KF_T_U8 && t->args[3].data_len == 24 * 24);
    /* the exact values: the scale's; a permutation of 0..23, not the identity; the lower triangle */
    const float *scale = (const float *)t->args[1].data;
    CHECK(scale[0] == 0.5f && scale[23] == 2.0f && scale[1] > scale[0]);
    const int64_t *perm = (const int64_t *)t->args[2].data;
    int seen[24] = {0}, moved = 0;
    for (int i = 0; i < 24; i++) {
        CHECK(perm[i] >= 0 && perm[i] < 24);
        seen[perm[i]]++;
        moved += perm[i] != i;
    }
    for (int i = 0; i < 24; i++) CHECK(seen[i] == 1);
    CHECK(moved > 0);
    for (int i = 0; i < 24; i++)
        for (int j = 0; j < 24; j++) CHECK(t->args[3].data[i * 24 + j] == (j <= i));
    static const char kernel[] =
        "#include <stdint.h>\n"
        "void kb_8_fixed_buffers(const float *x, const float *scale, const int64_t *perm,\n"
        "                        const uint8_t *mask, float *out, int64_t batch_size) {\n"
        "    for (int64_t b = 0; b < batch_size; b++)\n"
        "        for (int i = 0; i < 24; i++) {\n"
        "            float s = 0;\n"
        "            for (int j = 0; j < 24; j++)\n"
        "                if (mask[i * 24 + j]) s += x[b * 24 + GATHER];\n"
        "            out[b * 24 + i] = s * SCALE;\n"
        "        }\n"
        "}\n";
    const char *gather[3][3] = {{"perm[j]", "scale[i]", NULL},
                                {"j", "scale[i]", "wrong_result"},
                                {"perm[j]", "1.0f", "wrong_result"}};
    for (int i = 0; i < 3; i++) {
        char text[sizeof kernel + 64], cand[PATH_MAX + 32];
        const char *at = strstr(kernel, "GATHER"), *sc = strstr(kernel, "SCALE");
        snprintf(text, sizeof text, "%.*s%s%.*s%s%s", (int)(at - kernel), kernel, gather[i][0],
                 (int)(sc - at - 6), at + 6, gather[i][1], sc + 5);
        snprintf(cand, sizeof cand, "%s/k%d.c", dir, i);
        write_text(cand, text);
        kf_result *r = kft_check(ctx, t, cand, NULL, 0);
        if (!gather[i][2]) CHECKF(kf_result_verdict(r) == KF_VERDICT_ACCEPTED, "%s", kft_reasons(r));
        else CHECKF(strstr(kft_reasons(r), gather[i][2]), "%s: %s", gather[i][0], kft_reasons(r));
        kf_result_free(r);
    }
    kf_task_free(t);
    /* a mask of another size: refused at load, saying which file and what it needs */
    snprintf(p, sizeof p, "%s/data/mask.bin", tdir);
    write_text(p, "short");
    t = NULL;
    CHECK(kf_task_load(ctx, tdir, &t) == KF_ETASK && !t);
    CHECKF(strstr(kf_errmsg(ctx), "data/mask.bin holds 5 bytes, mask needs 576 (576 u8)"), "%s",
           kf_errmsg(ctx));
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
    kft_add("torch/import_fixed_data", t_import_fixed_data, NULL, 300);
    kft_add("torch/field", t_field, NULL, 30);
    kft_add("torch/cuda_task", t_cuda_task, NULL, 30);
    kft_add("torch/cuda_missing", t_cuda_missing, NULL, 120);
    kft_add("torch/cuda_judges", t_cuda_judges, NULL, 300);
    kft_add("torch/validate", t_validate, NULL, 120);
    kft_add("torch/judges", t_judges, NULL, 180);
    kft_add("torch/degenerate", t_degenerate, NULL, 120);
    kft_add("torch/failures", t_failures, NULL, 180);
    kft_add("torch/no_torch", t_no_torch, NULL, 60);
    kft_add("torch/warm_identical", t_warm_identical, NULL, 300);
    kft_add("torch/warm_reread", t_warm_reread, NULL, 300);
    kft_add("torch/warm_replaced", t_warm_replaced, NULL, 300);
    kft_add("torch/warm_redteam", t_warm_redteam, NULL, 400);
    kft_add("torch/server_same", t_server_same, NULL, 400);
    kft_add("torch/server_identical", t_server_identical, NULL, 300);
    kft_add("torch/server_stale", t_server_stale, NULL, 300);
    kft_add("torch/server_restart", t_server_restart, NULL, 300);
    kft_add("torch/server_redteam", t_server_redteam, NULL, 300);
    kft_add("torch/server_idle", t_server_idle, NULL, 300);
}
