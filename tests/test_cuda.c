/*
 * test_cuda.c - the CUDA backend's compile path, for real, on any machine with NVRTC
 * (no GPU needed): every bundled kernel builds, errors carry line numbers, launch
 * directives are parsed and evaluated, builds are cached by text; the 16-bit types
 * round correctly; and a check without a GPU fails clearly. The GPU runs themselves
 * are in test_corpus.c (they skip without a device).
 */
#define _GNU_SOURCE
#include "kft.h"

#include "backend/backend.h"
#include "backend/cuda/cuda_api.h"
#include "backend/cuda/host.h"
#include "check/check.h"
#include "data/data.h"
#include "task/candidate.h"
#include "task/task.h"
#include "util/util.h"

#include "sandbox/policy.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static void need_nvrtc(void) {
    char why[512];
    if (!kf_nvrtc_load(why, sizeof why)) kft_skip("needs NVRTC: %s", why);
}

static void need_nvcc(void) {
    char why[512];
    if (!kf__cuda_have_nvcc(why, sizeof why)) kft_skip("needs nvcc (host mode): %s", why);
}

typedef struct {
    kf_build b;
    kf_task *t;
    kf_ctx *ctx;
    char dir[64];
} built;

/* Compile text for the task at rel (or path) with the selections sel. */
static void build_text(built *o, const char *task_rel, const char *name, const char *text,
                       const char **sel, int nsel) {
    memset(o, 0, sizeof *o);
    o->ctx = kf_ctx_new();
    o->t = kft_task(o->ctx, task_rel);
    snprintf(o->dir, sizeof o->dir, "/tmp/kft-cuda-XXXXXX");
    CHECK(mkdtemp(o->dir));
    char path[256];
    snprintf(path, sizeof path, "%s/%s", o->dir, name);
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
    kf_candidate *c = NULL;
    CHECKF(kf_candidate_load(o->ctx, o->t, path, sel, nsel, &c) == KF_OK, "%s", kf_errmsg(o->ctx));
    kf_status st = kf_backend_compile(kf_backend_get("cuda"), o->ctx, o->t, path, c->text, c->len,
                                      c->params, c->nparams, o->dir, 60, &o->b);
    CHECKF(st == KF_OK, "%s", kf_errmsg(o->ctx));
    kf_candidate_free(c);
}

static void built_free(built *o) {
    kf_build_free(&o->b);
    kf_task_free(o->t);
    kf_ctx_free(o->ctx);
    kf__rmtree(o->dir);
}

/* Every bundled CUDA file, and every value of each template's parameters, builds. */
static void t_bundled_build(const void *arg) {
    (void)arg;
    need_nvrtc();
    setenv("KFORGE_CUDA_ARCH", "sm_90", 1);
    int files = 0, builds = 0;
    for (int i = 0; kft_cuda_tasks[i]; i++) {
        char rel[128];
        snprintf(rel, sizeof rel, "tasks/cuda/%s", kft_cuda_tasks[i]);
        kf_ctx *ctx = kf_ctx_new();
        kf_task *t = kft_task(ctx, rel);
        const char *names[8];
        int n = 0;
        names[n++] = "reference.cu";
        char cdir[160];
        snprintf(cdir, sizeof cdir, "%s/candidates", rel);
        DIR *d = opendir(kft_src(cdir));
        CHECKF(d, "%s: no candidates", rel);
        struct dirent *e;
        static char store[8][64];
        while ((e = readdir(d)) && n < 8)
            if (strstr(e->d_name, ".cu")) {
                snprintf(store[n], sizeof store[n], "candidates/%s", e->d_name);
                names[n] = store[n];
                n++;
            }
        closedir(d);
        CHECKF(n >= 3, "%s: needs a reference, a fast candidate and a template (%d files)", rel, n);
        for (int k = 0; k < n; k++) {
            char fp[256];
            snprintf(fp, sizeof fp, "%s/%s", rel, names[k]);
            /* each value of the first parameter (the others at their defaults) */
            kf_candidate *c0 = NULL;
            CHECKF(kf_candidate_load(ctx, t, kft_src(fp), NULL, 0, &c0) == KF_OK, "%s: %s", fp, kf_errmsg(ctx));
            int nv = c0->nparams ? c0->params[0].nvalues : 1;
            for (int v = 0; v < nv; v++) {
                char selb[128];
                const char *sel[1] = {selb};
                if (c0->nparams) snprintf(selb, sizeof selb, "%s=%s", c0->params[0].name, c0->params[0].values[v]);
                kf_candidate *c = NULL;
                if (kf_candidate_load(ctx, t, kft_src(fp), sel, c0->nparams ? 1 : 0, &c) != KF_OK)
                    continue; /* a combination its kforge:require refuses */
                char why[256];
                if (kf__cuda_host_mode(t, c->text, c->len) && !kf__cuda_have_nvcc(why, sizeof why)) {
                    fprintf(stderr, "    %s: host mode, not built: %s\n", fp, why);
                    kf_candidate_free(c);
                    continue;
                }
                char wd[] = "/tmp/kft-cudab-XXXXXX";
                CHECK(mkdtemp(wd));
                kf_build b;
                kf_status st = kf_backend_compile(kf_backend_get("cuda"), ctx, t, kft_src(fp), c->text,
                                                  c->len, c->params, c->nparams, wd, 60, &b);
                CHECKF(st == KF_OK, "%s: %s", fp, kf_errmsg(ctx));
                CHECKF(b.ok, "%s %s: %s\n%s", fp, c0->nparams ? selb : "", b.message, b.log);
                CHECK((b.nlaunch >= 1 || b.host) && !strcmp(b.arch, "sm_90"));
                /* ptxas's report, whenever the log carries one (on the H200 it was
                 * sometimes empty; kernel presence is then checked from the cubin) */
                int reported = b.log && strstr(b.log, "Compiling entry function");
                for (int q = 0; q < b.nkernels && reported; q++)
                    CHECKF(b.kernels[q].regs > 0, "%s: no registers for %s", fp, b.kernels[q].name);
                kf_build_free(&b);
                kf_candidate_free(c);
                kf__rmtree(wd);
                builds++;
            }
            kf_candidate_free(c0);
            files++;
        }
        kf_task_free(t);
        kf_ctx_free(ctx);
    }
    CHECKF(files >= 21, "only %d bundled CUDA files", files);
    fprintf(stderr, "    %d files, %d builds\n", files, builds);
}

static const char good[] =
    "// kforge:launch kernel=sm grid=(rows) block=(min(256, cols + 31) / 32 * 32) smem=0\n"
    "extern \"C\" __global__ void sm(const float *x, float *y, int64_t rows, int64_t cols) {\n"
    "  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) y[blockIdx.x * cols + c] = x[blockIdx.x * cols + c];\n"
    "}\n";

/* Errors say where: NVRTC's line numbers are the file's own (the prelude does not
 * shift them); directive errors name their line. */
static void t_errors(const void *arg) {
    (void)arg;
    need_nvrtc();
    setenv("KFORGE_CUDA_ARCH", "sm_90", 1);
    built o;
    build_text(&o, "tasks/cuda/softmax", "syntax.cu",
               "// kforge:launch kernel=k grid=(rows) block=(32)\n"
               "extern \"C\" __global__ void k(const float *x, float *y, int64_t rows, int64_t cols) {\n"
               "  y[0] = x[0] +;\n}\n", NULL, 0);
    CHECK(!o.b.ok && o.b.reason == KF_REASON_COMPILE_ERROR);
    CHECKF(strstr(o.b.message, "syntax.cu(3)") && strstr(o.b.message, "error"), "%s", o.b.message);
    built_free(&o);

    build_text(&o, "tasks/cuda/softmax", "missing.cu",
               "// kforge:launch kernel=nothere grid=(rows) block=(32)\n"
               "extern \"C\" __global__ void k(const float *x, float *y, int64_t rows, int64_t cols) {}\n",
               NULL, 0);
    CHECK(!o.b.ok && o.b.reason == KF_REASON_MISSING_ENTRY);
    CHECKF(strstr(o.b.message, "nothere"), "%s", o.b.message);
    built_free(&o);

    static const struct { const char *line, *want; } bad[] = {
        {"// kforge:launch kernel=k grid=(rows block=(32)\n", "line 2"},
        {"// kforge:launch kernel=k grid=(nosuch) block=(32)\n", "nosuch"},
        {"// kforge:launch kernel=k block=(32)\n", "grid= and block= are required"},
        {"// kforge:launch grid=(1) block=(32)\n", "kernel= is missing"},
        {"// kforge:launch kernel=k grid=(1) block=(32) colour=red\n", "unknown key"},
        {"// nothing here\n", "no kforge:launch line"},
        /* NVRTC runs in the coordinator: no file outside the toolkit's headers */
        {"#include \"/etc/passwd\"\n// kforge:launch kernel=k grid=(1) block=(32)\n", "allows #include only"},
        {"#  include </etc/passwd>\n// kforge:launch kernel=k grid=(1) block=(32)\n", "allows #include only"},
        {"%:include \"/dev/zero\"\n// kforge:launch kernel=k grid=(1) block=(32)\n", "allows #include only"},
        {"#inc\\\nlude \"x.h\"\n// kforge:launch kernel=k grid=(1) block=(32)\n", "allows #include only"},
        {"#define P \"/etc/passwd\"\n#include P\n// kforge:launch kernel=k grid=(1) block=(32)\n", "allows #include only"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[512];
        snprintf(text, sizeof text, "// a comment\n%sextern \"C\" __global__ void k(const float *x, "
                 "float *y, int64_t rows, int64_t cols) {}\n", bad[i].line);
        build_text(&o, "tasks/cuda/softmax", "bad.cu", text, NULL, 0);
        CHECKF(!o.b.ok && o.b.reason == KF_REASON_COMPILE_ERROR && strstr(o.b.message, bad[i].want),
               "%s -> %s", bad[i].line, o.b.message ? o.b.message : "(built)");
        built_free(&o);
    }
}

/* Launch expressions see the sizes and the integer parameters; limits are enforced. */
static void t_launch_eval(const void *arg) {
    (void)arg;
    need_nvrtc();
    setenv("KFORGE_CUDA_ARCH", "sm_90", 1);
    built o;
    const char *sel[1] = {"B=128"};
    build_text(&o, "tasks/cuda/softmax", "p.cu",
               "// kforge:param B = 64, 128\n"
               "// kforge:launch kernel=k grid=((rows + B - 1) / B, 2) block=(B, 1, 1) smem=B*4\n"
               "// kforge:launch kernel=k grid=(cols) block=(rows)\n"
               "extern \"C\" __global__ void k(const float *x, float *y, int64_t rows, int64_t cols) {}\n",
               sel, 1);
    CHECKF(o.b.ok, "%s", o.b.message);
    CHECK(o.b.nlaunch == 2 && o.b.nkernels == 1);
    uint32_t lx[KF_MAX_LAUNCH][7];
    char err[256];
    int64_t sz[2] = {1000, 7}; /* rows, cols */
    CHECKF(kf_build_eval_launches(&o.b, o.t, sz, lx, err, sizeof err) == 0, "%s", err);
    CHECK(lx[0][0] == 8 && lx[0][1] == 2 && lx[0][2] == 1 && lx[0][3] == 128 && lx[0][6] == 512);
    CHECK(lx[1][0] == 7 && lx[1][3] == 1000 && lx[1][6] == 0);
    /* rows = 2000 makes the second launch's block 2000 threads */
    int64_t big[2] = {2000, 7};
    CHECK(kf_build_eval_launches(&o.b, o.t, big, lx, err, sizeof err) == -1);
    CHECKF(strstr(err, "line 3") && strstr(err, "block.x"), "%s", err);
    built_free(&o);
}

/* The same text is cached; one changed byte builds afresh (THREATS #22). */
static void t_cache(const void *arg) {
    (void)arg;
    need_nvrtc();
    setenv("KFORGE_CUDA_ARCH", "sm_90", 1);
    char tmp[] = "/tmp/kft-cudacache-XXXXXX";
    CHECK(mkdtemp(tmp));
    setenv("KFORGE_CACHE_DIR", tmp, 1);
    char text[1024];
    snprintf(text, sizeof text, "%s// %d\n", good, (int)getpid());
    built a, b, c;
    build_text(&a, "tasks/cuda/softmax", "c.cu", text, NULL, 0);
    build_text(&b, "tasks/cuda/softmax", "c.cu", text, NULL, 0);
    text[strlen(text) - 2] ^= 1;
    build_text(&c, "tasks/cuda/softmax", "c.cu", text, NULL, 0);
    CHECKF(a.b.ok && b.b.ok && c.b.ok, "%s | %s | %s", a.b.message ? a.b.message : "ok",
           b.b.message ? b.b.message : "ok", c.b.message ? c.b.message : "ok");
    CHECK(!a.b.cached && b.b.cached && !c.b.cached);
    CHECK(!strcmp(a.b.so_path, b.b.so_path) && strcmp(a.b.so_path, c.b.so_path));
    CHECK(b.b.kernels[0].regs == a.b.kernels[0].regs); /* the report comes from the cache too */
    built_free(&a);
    built_free(&b);
    built_free(&c);
    unsetenv("KFORGE_CACHE_DIR");
    kf__rmtree(tmp);
}

/* Without a driver, a check says so and gives no verdict. */
static void t_no_gpu_is_clear(const void *arg) {
    (void)arg;
    need_nvrtc();
    char why[256];
    if (kft_have_gpu(why, sizeof why)) kft_skip("this machine has a GPU");
    setenv("KFORGE_CUDA_ARCH", "sm_90", 1);
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = kft_task(ctx, "tasks/cuda/softmax");
    kf_result *r = NULL;
    kf_status st = kf_check(ctx, t, kft_src("tasks/cuda/softmax/reference.cu"), NULL, &r);
    CHECKF(st == KF_EBACKEND && r == NULL, "status %d", (int)st);
    CHECKF(strstr(kf_errmsg(ctx), "CUDA") || strstr(kf_errmsg(ctx), "cuda"), "%s", kf_errmsg(ctx));
    kf_task_free(t);
    kf_ctx_free(ctx);
}

/* f16 and bf16 inputs are rounded to nearest even and read back exactly. */
static void t_half_types(const void *arg) {
    (void)arg;
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = kft_task(ctx, "tasks/cuda/bgemm");
    /* a bf16 input round-trips through the generator: every value is representable */
    kf_shape sh = t->shapes[1];
    kf_extents ex;
    char err[256];
    CHECK(kf_data_extents(t, &sh, &ex, err, sizeof err) == 0);
    kf_rng rng;
    CHECK(kf_rng_seed(&rng, 7) == 0);
    kf_inputs in;
    CHECK(kf_data_gen_inputs(t, &ex, &rng, 0, &in) == 0);
    double sum = 0, sum2 = 0;
    for (int64_t k = 0; k < ex.count[0]; k++) {
        double v = kf_data_get(KF_T_BF16, in.buf[0], k);
        sum += v, sum2 += v * v;
    }
    double mean = sum / (double)ex.count[0], var = sum2 / (double)ex.count[0] - mean * mean;
    CHECKF(fabs(mean) < 0.01 && fabs(var - 1) < 0.02, "mean %g var %g", mean, var);
    kf_data_free_inputs(t, &in);
    kf_rng_free(&rng);
    /* per-buffer tolerance: gdn_decode's bf16 output has its own */
    kf_task *g = kft_task(ctx, "tasks/cuda/gdn_decode");
    double rt, at;
    for (int i = 0; i < g->nargs; i++) {
        if (!strcmp(g->args[i].name, "o")) {
            kf_task_tolerance(g, &g->args[i], &rt, &at);
            CHECK(rt == 1e-2 && at == 1e-2);
        }
        if (!strcmp(g->args[i].name, "state")) {
            kf_task_tolerance(g, &g->args[i], &rt, &at);
            CHECK(rt == 1e-4 && at == 1e-5);
        }
    }
    kf_task_free(g);
    kf_task_free(t);
    kf_ctx_free(ctx);
}

/* Host mode: every honest and red-team host-mode file of the corpora builds with nvcc
 * (their verdicts need a GPU: test_corpus.c), and the libraries they link are named. */
static void t_host_build(const void *arg) {
    (void)arg;
    need_nvcc();
    setenv("KFORGE_CUDA_ARCH", "sm_90", 1);
    const char *dirs[] = {"tests/honest/cuda", "tests/redteam/cuda"};
    int built_n = 0;
    for (int di = 0; di < 2; di++) {
        DIR *d = opendir(kft_src(dirs[di]));
        CHECK(d);
        struct dirent *e;
        while ((e = readdir(d))) {
            if (strncmp(e->d_name, "host_", 5) || !strstr(e->d_name, ".cu")) continue;
            char fp[300], task[128] = "";
            snprintf(fp, sizeof fp, "%s/%s", dirs[di], e->d_name);
            char *text = NULL;
            size_t len = 0;
            CHECK(kf__read_file(kft_src(fp), 1 << 20, &text, &len) == 0);
            const char *tk = strstr(text, "task=");
            CHECKF(tk, "%s: no task=", fp);
            sscanf(tk + 5, "%127s", task);
            free(text);
            built o;
            memset(&o, 0, sizeof o);
            o.ctx = kf_ctx_new();
            o.t = kft_task(o.ctx, task);
            kf_candidate *c = NULL;
            CHECKF(kf_candidate_load(o.ctx, o.t, kft_src(fp), NULL, 0, &c) == KF_OK, "%s", kf_errmsg(o.ctx));
            snprintf(o.dir, sizeof o.dir, "/tmp/kft-host-XXXXXX");
            CHECK(mkdtemp(o.dir));
            CHECKF(kf_backend_compile(kf_backend_get("cuda"), o.ctx, o.t, kft_src(fp), c->text, c->len,
                                      c->params, c->nparams, o.dir, 120, &o.b) == KF_OK, "%s", kf_errmsg(o.ctx));
            CHECKF(o.b.ok && o.b.host, "%s: %s\n%s", fp, o.b.message ? o.b.message : "", o.b.log ? o.b.log : "");
            if (strstr(c->text, "kforge:link cublas"))
                CHECKF(o.b.libraries && strstr(o.b.libraries, "cublas") && strstr(o.b.libraries, "libcublas.so"),
                       "%s: libraries '%s'", fp, o.b.libraries ? o.b.libraries : "");
            kf_candidate_free(c);
            built_free(&o);
            built_n++;
        }
        closedir(d);
    }
    CHECKF(built_n >= 8, "only %d host-mode corpus files", built_n);
    fprintf(stderr, "    %d host-mode files built\n", built_n);
}

static const char host_ok[] =
    "// kforge:host\n"
    "__global__ void cp(const float *x, float *y, int64_t n) {\n"
    "  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; if (i < n) y[i] = x[i];\n}\n"
    "extern \"C\" int kforge_launch(const float *x, float *y, int64_t rows, int64_t cols, cudaStream_t s) {\n"
    "  cp<<<(unsigned)((rows * cols + 255) / 256), 256, 0, s>>>(x, y, rows * cols);\n  return 0;\n}\n";

/* Host mode's errors: file:line from nvcc, a wrong signature, a missing kforge_launch,
 * a library outside the allow-list, kforge:launch in a host file; the task-level
 * launch_mode; the cache. */
static void t_host_errors(const void *arg) {
    (void)arg;
    need_nvcc();
    setenv("KFORGE_CUDA_ARCH", "sm_90", 1);
    char tmp[] = "/tmp/kft-hostcache-XXXXXX";
    CHECK(mkdtemp(tmp));
    setenv("KFORGE_CACHE_DIR", tmp, 1);
    built o;
    build_text(&o, "tasks/cuda/softmax", "ok.cu", host_ok, NULL, 0);
    CHECKF(o.b.ok && o.b.host && o.b.nlaunch == 0 && !o.b.cached, "%s\n%s", o.b.message, o.b.log);
    CHECKF(o.b.libraries && !o.b.libraries[0], "libraries '%s'", o.b.libraries);
    built_free(&o);
    build_text(&o, "tasks/cuda/softmax", "ok.cu", host_ok, NULL, 0);
    CHECK(o.b.ok && o.b.cached);
    built_free(&o);

    static const struct { const char *text, *want; kf_reason why; } bad[] = {
        {"// kforge:host\nextern \"C\" int kforge_launch(const float *x, float *y, int64_t r, int64_t c, cudaStream_t s) {\n"
         "  return r +;\n}\n", "syn.cu(3)", KF_REASON_COMPILE_ERROR},
        /* y is an output: float *, not const float * */
        {"// kforge:host\nextern \"C\" int kforge_launch(const float *x, const float *y, int64_t r, int64_t c, cudaStream_t s) {\n"
         "  return 0;\n}\n", "syn.cu(2)", KF_REASON_COMPILE_ERROR},
        {"// kforge:host\nextern \"C\" void kforge_launch(const float *x, float *y, int64_t r, int64_t c, cudaStream_t s) {\n"
         "}\n", "syn.cu(2)", KF_REASON_COMPILE_ERROR},
        {"// kforge:host\nextern \"C\" int kforge_other(void) { return 0; }\n", "kforge_launch", KF_REASON_MISSING_ENTRY},
        {"// kforge:host\n// kforge:link cudnn\nextern \"C\" int kforge_launch(const float *x, float *y, int64_t r, int64_t c, cudaStream_t s) { return 0; }\n",
         "syn.cu:line 2: kforge:link 'cudnn' is not allowed", KF_REASON_COMPILE_ERROR},
        {"// kforge:host\n// kforge:launch kernel=k grid=(1) block=(1)\n", "line 2: kforge:launch in a host-mode file",
         KF_REASON_COMPILE_ERROR},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        build_text(&o, "tasks/cuda/softmax", "syn.cu", bad[i].text, NULL, 0);
        CHECKF(!o.b.ok && o.b.reason == bad[i].why && o.b.message && strstr(o.b.message, bad[i].want),
               "case %zu: want '%s', got %s: %s", i, bad[i].want, kf_reason_name(o.b.reason),
               o.b.message ? o.b.message : "(built)");
        built_free(&o);
    }
    /* no nvcc: an error of the environment (exit 2), never a rejection */
    setenv("KFORGE_NVCC", "/nonexistent/nvcc", 1);
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = kft_task(ctx, "tasks/cuda/softmax");
    kf_build b;
    memset(&b, 0, sizeof b);
    kf_status st = kf_backend_compile(kf_backend_get("cuda"), ctx, t, "x.cu", host_ok, strlen(host_ok), NULL, 0,
                                      tmp, 60, &b);
    CHECKF(st == KF_EBACKEND && strstr(kf_errmsg(ctx), "nvcc"), "status %d: %s", (int)st, kf_errmsg(ctx));
    unsetenv("KFORGE_NVCC");
    kf_build_free(&b);
    kf_task_free(t);
    kf_ctx_free(ctx);
    unsetenv("KFORGE_CACHE_DIR");
    kf__rmtree(tmp);
}

/* The directive and the task-level default pick the mode; the generated signature
 * follows the task's types. */
static void t_host_mode_select(const void *arg) {
    (void)arg;
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = kft_task(ctx, "tasks/cuda/bgemm");
    const char *k = "// kforge:launch kernel=k grid=(1) block=(1)\n", *h = "// kforge:host\n", *none = "int x;\n";
    CHECK(!kf__cuda_host_mode(t, k, strlen(k)));
    CHECK(kf__cuda_host_mode(t, h, strlen(h)));
    CHECK(!kf__cuda_host_mode(t, none, strlen(none)));
    const char *hostile = "// kforge:hostile\n";
    CHECK(!kf__cuda_host_mode(t, hostile, strlen(hostile)));
    t->launch_host = 1; /* "launch_mode": "host" */
    CHECK(kf__cuda_host_mode(t, none, strlen(none)));
    CHECK(!kf__cuda_host_mode(t, k, strlen(k))); /* the reference may stay in kernel mode */
    /* the library list comes from DT_NEEDED, minus the C/C++ runtime (this test binary
     * needs jansson and libc) */
    char *elf = NULL, libs[512];
    size_t elen = 0;
    CHECK(kf__read_file("/proc/self/exe", 1u << 30, &elf, &elen) == 0);
    CHECK(kf__elf_needed((unsigned char *)elf, elen, libs, sizeof libs) == 0);
    CHECKF(strstr(libs, "libjansson") && !strstr(libs, "libc.so"), "%s", libs);
    CHECK(kf__elf_needed((unsigned char *)"KFHOST01", 8, libs, sizeof libs) == -1);
    free(elf);
    char *hdr = kf__cuda_host_header(t);
    CHECKF(strstr(hdr, "kforge_launch(const __nv_bfloat16 *, const __nv_bfloat16 *, __nv_bfloat16 *, "
                       "int64_t, int64_t, int64_t, cudaStream_t)"), "%s", hdr);
    free(hdr);
    kf_task_free(t);
    kf_ctx_free(ctx);
}

/* The fairness rule (docs/cuda.md): a graph-replaying candidate against a baseline
 * launched kernel by kernel is unfair; unknown graph use is noted; the host protocol
 * applies to both sides when either is host mode. */
static void t_fairness(const void *arg) {
    (void)arg;
    char why[400];
    CHECK(kf_launch_fair(KF_MODE_KERNEL, KF_MODE_KERNEL, 1, why, sizeof why) == 1 && !why[0]);
    CHECK(kf_launch_fair(KF_MODE_HOST, KF_MODE_KERNEL, 1, why, sizeof why) == 1 && !why[0]);
    CHECK(kf_launch_fair(KF_MODE_GRAPH, KF_MODE_KERNEL, 1, why, sizeof why) == 0 && strstr(why, "graph"));
    CHECK(kf_launch_fair(KF_MODE_GRAPH, KF_MODE_HOST, 1, why, sizeof why) == 0 && strstr(why, "host code"));
    CHECK(kf_launch_fair(KF_MODE_GRAPH, KF_MODE_GRAPH, 1, why, sizeof why) == 1);
    CHECK(kf_launch_fair(KF_MODE_KERNEL, KF_MODE_GRAPH, 1, why, sizeof why) == 1);
    CHECK(kf_launch_fair(KF_MODE_HOST, KF_MODE_KERNEL, 0, why, sizeof why) == 1 && strstr(why, "unknown"));
    kf_build a = {0}, b = {0};
    CHECK(!kf_launch_host_timing(&a, &b));
    b.host = 1;
    CHECK(kf_launch_host_timing(&a, &b) && kf_launch_host_timing(&b, &a));
    CHECK(!strcmp(kf_launch_mode_name(KF_MODE_GRAPH), "graph"));
    /* library kernels by name */
    CHECK(kf_library_kernel("sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x32"));
    CHECK(kf_library_kernel("cutlass::Kernel2<cutlass_80_simt_sgemm>"));
    CHECK(!kf_library_kernel("softmax_fast"));
    /* libraries mapped at run time against those declared */
    char bad[256];
    CHECK(kf_library_undeclared("libcublas.so.13,libcublasLt.so.13,libfoo.so", "cublas,libcublas.so.13", bad, sizeof bad) == 0);
    CHECK(kf_library_undeclared("libcublas.so.13,libcublasLt.so.13", "", bad, sizeof bad) == 2 && strstr(bad, "libcublasLt"));
    CHECK(kf_library_undeclared("libcublas.so.13", "cublasLt", bad, sizeof bad) == 1 && !strcmp(bad, "libcublas.so.13"));
    CHECK(kf_library_undeclared("libcudnn.so.9,libz.so.1", "cublas", bad, sizeof bad) == 1 && !strcmp(bad, "libcudnn.so.9"));
    /* per-shape JSON with and without CUPTI */
    kf_call_result cr;
    memset(&cr, 0, sizeof cr);
    json_t *j = json_object();
    kf_sess_launch_json(j, &cr);
    CHECK(json_is_null(json_object_get(j, "launch_count")) && json_object_get(j, "launch_note"));
    json_decref(j);
    cr.cupti = 1, cr.nlaunch = 3, cr.ngraph = 0, cr.nnames = 2, cr.nlib = 1;
    snprintf(cr.names[0], sizeof cr.names[0], "row_stats");
    snprintf(cr.names[1], sizeof cr.names[1], "cutlass_80_tensorop_s1688gemm");
    j = json_object();
    kf_sess_launch_json(j, &cr);
    CHECK(json_integer_value(json_object_get(j, "launches_per_call")) == 3);
    CHECK(json_array_size(json_object_get(j, "kernels")) == 2 && json_array_size(json_object_get(j, "library_kernels")) == 1);
    json_decref(j);
}

/* On a GPU: what a host-mode result reports. sgemm through cuBLAS: launch_mode host,
 * libraries with cublas, the host-mode sandbox flag, and per shape either CUPTI's
 * counts with cuBLAS's kernels flagged or launch_count null. bgemm replayed as a graph,
 * benched: launch modes per side, and a graph against the kernel-mode reference is
 * never a win (fair false), or graph use is "unknown" without CUPTI. */
static void t_host_gpu_report(const void *arg) {
    (void)arg;
    char why[512];
    if (!kft_have_gpu(why, sizeof why)) kft_skip("needs a GPU: %s", why);
    need_nvcc();
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = kft_task(ctx, "tasks/cuda/sgemm");
    kf_opts o;
    kf_opts_init(&o);
    o.call_timeout_s = 10;
    o.hidden_count = 1;
    kf_result *r = NULL;
    CHECKF(kf_check(ctx, t, kft_src("tasks/cuda/sgemm/candidates/host.cu"), &o, &r) == KF_OK, "%s", kf_errmsg(ctx));
    char *js = kf_result_json(r);
    json_error_t je;
    json_t *root = json_loads(js, 0, &je);
    CHECKF(kf_result_verdict(r) == KF_VERDICT_ACCEPTED, "%s", js);
    CHECKF(!strcmp(json_string_value(json_object_get(root, "launch_mode")), "host"), "%s", js);
    json_t *libs = json_object_get(root, "libraries"), *v;
    size_t i;
    int cub = 0;
    json_array_foreach(libs, i, v) cub |= strstr(json_string_value(v), "cublas") != NULL;
    CHECKF(cub, "no cublas in libraries: %s", js);
    json_t *ll = json_object_get(root, "libraries_loaded");
    if (json_is_array(ll)) { /* the coordinator reads the worker's maps as root */
        cub = 0;
        json_array_foreach(ll, i, v) cub |= strstr(json_string_value(v), "libcublas") != NULL;
        CHECKF(cub, "libcublas not among the mapped libraries: %s", js);
    }
    CHECKF(json_is_true(json_object_get(json_object_get(root, "sandbox"), "gpu_host_mode")), "%s", js);
    json_t *sh0 = json_array_get(json_object_get(root, "shapes"), 0);
    if (json_object_get(sh0, "launches_per_call")) {
        CHECKF(json_integer_value(json_object_get(sh0, "launches_per_call")) >= 1, "%s", js);
        CHECKF(json_array_size(json_object_get(sh0, "library_kernels")) >= 1, "cuBLAS kernels not flagged: %s", js);
        fprintf(stderr, "    CUPTI: %lld launches per call\n",
                (long long)json_integer_value(json_object_get(sh0, "launches_per_call")));
    } else {
        CHECKF(json_is_null(json_object_get(sh0, "launch_count")), "%s", js);
        fprintf(stderr, "    no CUPTI: launch_count null\n");
    }
    json_decref(root);
    free(js);
    kf_result_free(r);
    kf_task_free(t);

    /* cuBLAS behind the allow-list's back (dlopen, no kforge:link): the worker's mapped
     * libraries (read by the coordinator, as root) name it: sandbox_violation */
    char dldir[] = "/tmp/kft-hostdl-XXXXXX", dl[64];
    CHECK(mkdtemp(dldir));
    snprintf(dl, sizeof dl, "%s/dl.cu", dldir);
    FILE *df = fopen(dl, "w");
    CHECK(df);
    fputs("// kforge:host\n#include <dlfcn.h>\n#include <cublas_v2.h>\n"
          "extern \"C\" int kforge_launch(const float *a, const float *b, float *c, int64_t m, int64_t n, int64_t k, cudaStream_t s) {\n"
          "  static void *h; static cublasHandle_t hd;\n"
          "  if (!h && !(h = dlopen(\"libcublas.so.13\", RTLD_NOW)) && !(h = dlopen(\"libcublas.so\", RTLD_NOW))) return 1;\n"
          "  auto cr = (cublasStatus_t (*)(cublasHandle_t *))dlsym(h, \"cublasCreate_v2\");\n"
          "  auto ss = (cublasStatus_t (*)(cublasHandle_t, cudaStream_t))dlsym(h, \"cublasSetStream_v2\");\n"
          "  auto mm = (cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const float *,\n"
          "      const float *, int, const float *, int, const float *, float *, int))dlsym(h, \"cublasSgemm_v2\");\n"
          "  if (!cr || !ss || !mm || (!hd && cr(&hd))) return 2;\n  ss(hd, s);\n  const float one = 1, zero = 0;\n"
          "  return mm(hd, CUBLAS_OP_N, CUBLAS_OP_N, (int)n, (int)m, (int)k, &one, b, (int)n, a, (int)k, &zero, c, (int)n) ? 3 : 0;\n}\n", df);
    fclose(df);
    t = kft_task(ctx, "tasks/cuda/sgemm");
    CHECKF(kf_check(ctx, t, dl, &o, &r) == KF_OK, "%s", kf_errmsg(ctx));
    js = kf_result_json(r);
    root = json_loads(js, 0, &je);
    if (json_is_array(json_object_get(root, "libraries_loaded"))) {
        int found = 0;
        for (int q = 0; q < kf_result_nreasons(r); q++)
            found |= kf_result_reason(r, q) == KF_REASON_SANDBOX_VIOLATION;
        CHECKF(kf_result_verdict(r) == KF_VERDICT_REJECTED && found, "an undeclared cuBLAS passed: %s", js);
    } else {
        fprintf(stderr, "    libraries_loaded unreadable (not root): the dlopen case is not judged\n");
    }
    json_decref(root);
    free(js);
    kf_result_free(r);
    kf_task_free(t);
    kf__rmtree(dldir);

    t = kft_task(ctx, "tasks/cuda/bgemm");
    o.bench_min_time_s = 0.05;
    o.bench_min_runs = 11;
    o.bench_max_runs = 31;
    /* against the kernel-mode reference (a graph baseline when CUPTI saw the graph),
     * then against a host-mode baseline, which cannot be captured: unfair */
    char vsdir[] = "/tmp/kft-hostvs-XXXXXX", vs[64];
    CHECK(mkdtemp(vsdir));
    snprintf(vs, sizeof vs, "%s/vs.cu", vsdir);
    FILE *f = fopen(vs, "w");
    CHECK(f);
    fputs("// kforge:host\n"
          "__global__ void g(const __nv_bfloat16 *a, const __nv_bfloat16 *b, __nv_bfloat16 *c, int64_t m, int64_t n, int64_t k) {\n"
          "  int64_t col = blockIdx.x * 16 + threadIdx.x, row = blockIdx.y * 16 + threadIdx.y;\n"
          "  if (row >= m || col >= n) return;\n  float acc = 0;\n"
          "  for (int64_t p = 0; p < k; p++) acc += __bfloat162float(a[row * k + p]) * __bfloat162float(b[p * n + col]);\n"
          "  c[row * n + col] = __float2bfloat16(acc);\n}\n"
          "extern \"C\" int kforge_launch(const __nv_bfloat16 *a, const __nv_bfloat16 *b, __nv_bfloat16 *c, int64_t m,\n"
          "    int64_t n, int64_t k, cudaStream_t s) {\n"
          "  g<<<dim3((unsigned)((n + 15) / 16), (unsigned)((m + 15) / 16)), dim3(16, 16), 0, s>>>(a, b, c, m, n, k);\n"
          "  return 0;\n}\n", f);
    fclose(f);
    for (int pass = 0; pass < 2; pass++) {
        o.vs_path = pass ? vs : NULL;
        CHECKF(kf_bench(ctx, t, kft_src("tasks/cuda/bgemm/candidates/host.cu"), &o, &r) == KF_OK, "%s", kf_errmsg(ctx));
        js = kf_result_json(r);
        root = json_loads(js, 0, &je);
        CHECKF(kf_result_verdict(r) == KF_VERDICT_ACCEPTED, "%s", js);
        int timed = 0;
        json_array_foreach(json_object_get(root, "shapes"), i, v) {
            json_t *lm = json_object_get(v, "launch_mode");
            if (!lm) continue; /* the check's shapes carry no timing */
            timed++;
            const char *gu = json_string_value(json_object_get(v, "graph_use"));
            const char *cm = json_string_value(json_object_get(lm, "candidate"));
            const char *bm = json_string_value(json_object_get(lm, "baseline"));
            CHECKF(gu && (!strcmp(gu, "yes") || !strcmp(gu, "unknown")), "graph_use %s: %s", gu ? gu : "-", js);
            if (!strcmp(gu, "unknown")) {
                CHECKF(json_object_get(v, "fair_note") && !strcmp(bm, pass ? "host" : "kernel"), "%s", js);
            } else if (!pass) {
                CHECKF(!strcmp(cm, "graph") && !strcmp(bm, "graph") && json_is_true(json_object_get(v, "fair")),
                       "a graph candidate needs a graph baseline: %s", js);
            } else {
                CHECKF(!strcmp(cm, "graph") && !strcmp(bm, "host") && json_is_false(json_object_get(v, "fair")) &&
                       json_is_false(json_object_get(v, "win")) && json_object_get(v, "fair_reason"),
                       "graph vs host baseline must be unfair: %s", js);
            }
        }
        CHECKF(timed >= 1, "no timed shape: %s", js);
        fprintf(stderr, "    bgemm graph vs %s: speedup %.3f, %d timed shape(s)\n",
                pass ? "host-mode baseline" : "reference", kf_result_speedup(r), timed);
        json_decref(root);
        free(js);
        kf_result_free(r);
    }
    kf__rmtree(vsdir);
    kf_task_free(t);
    kf_ctx_free(ctx);
}

/* GPU host mode's seccomp filter, without a GPU: it loads (its rules do not conflict),
 * lets through what the driver uses (any ioctl but TIOCSTI, read-write opens of
 * existing files, epoll, threads), and a forbidden call traps with its number, which
 * the coordinator names. Which calls the real driver needs is for the GPU run to show. */
static int sigsys_pipe = -1;
static void on_sys(int sig, siginfo_t *si, void *uc) {
    (void)sig;
    (void)uc;
    int nr = si->si_syscall;
    if (write(sigsys_pipe, &nr, sizeof nr) != (ssize_t)sizeof nr) _exit(3);
    _exit(0);
}

static void t_gpu_seccomp(const void *arg) {
    (void)arg;
    int p[2];
    CHECK(pipe(p) == 0);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        close(p[0]);
        sigsys_pipe = p[1];
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_sys;
        sa.sa_flags = SA_SIGINFO;
        if (sigaction(SIGSYS, &sa, NULL) || kf_policy_seccomp_gpu_host(getpid())) _exit(10);
        int fd = open("/dev/null", O_RDWR);
        if (fd < 0) _exit(11);
        int nb = 0;
        if (ioctl(fd, FIONREAD, &nb) && errno != ENOTTY && errno != EINVAL) _exit(12);
        char c = 'x';
        if (ioctl(fd, TIOCSTI, &c) == 0 || errno != EPERM) _exit(13);
        int ep = epoll_create1(EPOLL_CLOEXEC);
        if (ep < 0) _exit(14);
        if (open("/tmp/kft-should-not-exist", O_WRONLY | O_CREAT, 0600) >= 0) _exit(15); /* traps first */
        _exit(16);
    }
    close(p[1]);
    int nr = -1, status = 0;
    ssize_t got = read(p[0], &nr, sizeof nr);
    close(p[0]);
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECKF(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d (10: the filter did not load; "
           "11-14: an allowed call failed; 16: the forbidden open was not trapped)", WEXITSTATUS(status));
    CHECKF(got == (ssize_t)sizeof nr && nr == SYS_openat, "trapped %d", nr);
    char *name = kf_policy_syscall_name(nr);
    CHECKF(name && !strcmp(name, "openat"), "%s", name ? name : "(null)");
    free(name);
}

void kft_register_cuda(void) {
    kft_add("cuda/gpu_seccomp", t_gpu_seccomp, NULL, 30);
    kft_add("cuda/host_gpu_report", t_host_gpu_report, NULL, 600);
    kft_add("cuda/host_build", t_host_build, NULL, 900);
    kft_add("cuda/host_errors", t_host_errors, NULL, 300);
    kft_add("cuda/host_mode_select", t_host_mode_select, NULL, 30);
    kft_add("cuda/fairness", t_fairness, NULL, 30);
    kft_add("cuda/bundled_build", t_bundled_build, NULL, 600);
    kft_add("cuda/errors", t_errors, NULL, 120);
    kft_add("cuda/launch_eval", t_launch_eval, NULL, 60);
    kft_add("cuda/cache", t_cache, NULL, 60);
    kft_add("cuda/no_gpu_is_clear", t_no_gpu_is_clear, NULL, 60);
    kft_add("cuda/half_types", t_half_types, NULL, 60);
}
