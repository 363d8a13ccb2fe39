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
#include "data/data.h"
#include "task/candidate.h"
#include "task/task.h"
#include "util/util.h"

#include <dirent.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

static void need_nvrtc(void) {
    char why[512];
    if (!kf_nvrtc_load(why, sizeof why)) kft_skip("needs NVRTC: %s", why);
}

typedef struct {
    kf_build b;
    kf_task *t;
    kf_ctx *ctx;
    char dir[64];
} built;

/* Compile text for the task at rel (or path) with the selections sel, under a compile
 * deadline of timeout_s. */
static void build_text_t(built *o, const char *task_rel, const char *name, const char *text,
                         const char **sel, int nsel, double timeout_s) {
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
                                      c->params, c->nparams, o->dir, timeout_s, &o->b);
    CHECKF(st == KF_OK, "%s", kf_errmsg(o->ctx));
    kf_candidate_free(c);
}

static void build_text(built *o, const char *task_rel, const char *name, const char *text,
                       const char **sel, int nsel) {
    build_text_t(o, task_rel, name, text, sel, nsel, 60);
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
                char wd[] = "/tmp/kft-cudab-XXXXXX";
                CHECK(mkdtemp(wd));
                kf_build b;
                kf_status st = kf_backend_compile(kf_backend_get("cuda"), ctx, t, kft_src(fp), c->text,
                                                  c->len, c->params, c->nparams, wd, 60, &b);
                CHECKF(st == KF_OK, "%s: %s", fp, kf_errmsg(ctx));
                CHECKF(b.ok, "%s %s: %s\n%s", fp, c0->nparams ? selb : "", b.message, b.log);
                CHECK(b.nlaunch >= 1 && !strcmp(b.arch, "sm_90"));
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

/* NVRTC runs in a child under the compile deadline: a text that keeps it busy for
 * minutes (16384 dependent statements, macro-expanded: about 50 s for 4096 on a
 * 2-core machine) is a compile_error at the deadline, and the next compile works. */
static void t_compile_timeout(const void *arg) {
    (void)arg;
    need_nvrtc();
    setenv("KFORGE_CUDA_ARCH", "sm_90", 1);
    static const char slow[] =
        "#define S1(i) a = a * x[((i) * 7 + (int)a) & 1023] + (float)(i);\n"
        "#define S4(i) S1(i) S1(i + 1) S1(i + 2) S1(i + 3)\n"
        "#define S16(i) S4(i) S4(i + 4) S4(i + 8) S4(i + 12)\n"
        "#define S64(i) S16(i) S16(i + 16) S16(i + 32) S16(i + 48)\n"
        "#define S256(i) S64(i) S64(i + 64) S64(i + 128) S64(i + 192)\n"
        "#define S1K(i) S256(i) S256(i + 256) S256(i + 512) S256(i + 768)\n"
        "#define S4K(i) S1K(i) S1K(i + 1024) S1K(i + 2048) S1K(i + 3072)\n"
        "#define S16K(i) S4K(i) S4K(i + 4096) S4K(i + 8192) S4K(i + 12288)\n"
        "// kforge:launch kernel=k grid=(rows) block=(32)\n"
        "extern \"C\" __global__ void k(const float *x, float *y, int64_t rows, int64_t cols) {\n"
        "  float a = x[threadIdx.x];\n  S16K(0)\n  y[threadIdx.x] = a;\n}\n";
    char tmp[] = "/tmp/kft-cudato-XXXXXX";
    CHECK(mkdtemp(tmp));
    setenv("KFORGE_CACHE_DIR", tmp, 1);
    built o;
    uint64_t t0 = kf__now_ns();
    build_text_t(&o, "tasks/cuda/softmax", "slow.cu", slow, NULL, 0, 1.0);
    double s = (double)(kf__now_ns() - t0) / 1e9;
    CHECKF(!o.b.ok && o.b.reason == KF_REASON_COMPILE_ERROR, "%s", o.b.message ? o.b.message : "(built)");
    CHECKF(strstr(o.b.message, "deadline") && strstr(o.b.message, "NVRTC"), "%s", o.b.message);
    CHECKF(s < 5, "the deadline of 1 s took %.1f s to act", s);
    built_free(&o);
    /* nothing of the killed compile is left behind: the next one builds */
    build_text(&o, "tasks/cuda/softmax", "good.cu", good, NULL, 0);
    CHECKF(o.b.ok && !o.b.cached, "%s", o.b.message ? o.b.message : "");
    built_free(&o);
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

void kft_register_cuda(void) {
    kft_add("cuda/bundled_build", t_bundled_build, NULL, 600);
    kft_add("cuda/errors", t_errors, NULL, 120);
    kft_add("cuda/launch_eval", t_launch_eval, NULL, 60);
    kft_add("cuda/cache", t_cache, NULL, 60);
    kft_add("cuda/compile_timeout", t_compile_timeout, NULL, 60);
    kft_add("cuda/no_gpu_is_clear", t_no_gpu_is_clear, NULL, 60);
    kft_add("cuda/half_types", t_half_types, NULL, 60);
}
