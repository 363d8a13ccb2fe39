/*
 * test_xref.c - one operation, two backends: every bundled CUDA task that has a C twin
 * (tasks/c/<op> beside tasks/cuda/<op>) must declare the same arguments, and its CUDA
 * reference must compute what the C reference computes. Both references run on the
 * same inputs (the declared distributions, then spiked ones) at the C task's visible
 * shapes and at the smallest shape, and the CUDA outputs must be within the CUDA task's
 * tolerance of the C outputs (magnitudes from the C reference, as a check computes
 * them): the C reference is the oracle, as ggml's test-backend-ops holds every backend
 * to the CPU. A bf16 twin (the CUDA decode stages: tasks/cuda/linear beside tasks/c/linear)
 * declares bf16 where the C task declares f32 and is otherwise the same: the inputs are
 * then drawn for the bf16 task and given to the C reference as the same values in f32
 * (exact), and the bf16 outputs are compared, as f32, with the C outputs. xref/<op>
 * compares the arguments everywhere and skips the runs without a GPU (the stand-in
 * driver, fake_libcuda.c, runs no kernels). xref/softmax_torch and
 * xref/softmax_torch_cuda hold a PyTorch reference to its C twin (on the CPU) and to its
 * CUDA twin (on the GPU).
 *
 * The comparison itself runs on every machine: xref/c_twin holds the C softmax
 * reference against a task whose reference is the honest fast candidate (a different
 * program for the same operation), and xref/catches_mismatch against one that computes
 * something else, which the comparison must report. xref/fake_driver takes each CUDA
 * reference's whole path (NVRTC, a GPU worker, staging, launches, outputs back) on the
 * stand-in driver, whose kernels do nothing: the CUDA outputs must come back unwritten.
 */
#define _GNU_SOURCE
#include "kft.h"

#include "backend/cuda/cuda_api.h"
#include "check/check.h"

#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define XREF_SEED 0x78726566u /* fixed: a failure reproduces */

/* 0 when a and b declare the same sizes and arguments (names, types, directions,
 * extents, scalar values); 1 with the first difference in why. */
static int same_signature(const kf_task *a, const kf_task *b, char *why, size_t n) {
    if (a->nsizes != b->nsizes) return snprintf(why, n, "%d sizes against %d", a->nsizes, b->nsizes), 1;
    for (int i = 0; i < a->nsizes; i++)
        if (strcmp(a->size_names[i], b->size_names[i]))
            return snprintf(why, n, "size %d is %s against %s", i, a->size_names[i], b->size_names[i]), 1;
    if (a->nargs != b->nargs) return snprintf(why, n, "%d arguments against %d", a->nargs, b->nargs), 1;
    for (int i = 0; i < a->nargs; i++) {
        const kf_arg *x = &a->args[i], *y = &b->args[i];
        int bf16_twin = x->is_buffer && x->type == KF_T_F32 && y->type == KF_T_BF16;
        if (strcmp(x->name, y->name) || (x->type != y->type && !bf16_twin) || x->is_buffer != y->is_buffer ||
            (x->is_buffer && (x->io != y->io || x->ndim != y->ndim)))
            return snprintf(why, n, "argument %d: %s %s against %s %s", i, kf_dtype_name(x->type), x->name,
                            kf_dtype_name(y->type), y->name),
                   1;
        for (int d = 0; x->is_buffer && d < x->ndim; d++)
            if (strcmp(kf_expr_src(x->shape[d]), kf_expr_src(y->shape[d])))
                return snprintf(why, n, "%s: extent %d is %s against %s", x->name, d,
                                kf_expr_src(x->shape[d]), kf_expr_src(y->shape[d])),
                       1;
        if (!x->is_buffer && (!x->value_expr != !y->value_expr ||
                              (x->value_expr ? strcmp(kf_expr_src(x->value_expr), kf_expr_src(y->value_expr))
                                             : x->value_num != y->value_num)))
            return snprintf(why, n, "scalar %s has another value", x->name), 1;
    }
    return 0;
}

/* One reference, ready to call: its session and its worker. */
typedef struct {
    kf_sess s;
    kf_side side;
} ref_run;

static void ref_open(ref_run *r, kf_ctx *ctx, const kf_task *t, const kf_opts *o, size_t arena) {
    memset(r, 0, sizeof *r);
    CHECKF(kf_sess_open(&r->s, ctx, t, NULL, o, "validate") == KF_OK, "%s: %s", t->dir, kf_errmsg(ctx));
    CHECKF(kf_sess_build_ref(&r->s) == KF_OK, "%s", kf_errmsg(ctx));
    kf_call_result fail;
    CHECKF(kf_sess_spawn(&r->s, &r->s.rbuild, arena, &r->side, &fail) == KF_OK, "%s", kf_errmsg(ctx));
    CHECKF(r->side.w, "%s: the reference does not load: %s", t->ref_path, fail.msg);
}

static void ref_close(ref_run *r) {
    kf_worker_close(r->side.w);
    kf_result_free(r->s.res);
    kf_sess_close(&r->s);
}

/* Call r's reference on in; its outputs into outs (freed with kf_sess_free_outputs). */
static void ref_call(ref_run *r, kf_rng *rng, const kf_extents *ex, const kf_inputs *in, kf_poison *p,
                     void **outs, const char *at) {
    kf_call_result cr;
    kf_data_make_poison(r->s.t, rng, p);
    kf_sess_place(&r->s, rng, ex, 0, &r->side.lay);
    kf_sess_call(&r->s, &r->side, ex, in, p, &cr);
    CHECKF(cr.st == KF_CALL_OK, "%s at %s: %s: %s", r->s.t->ref_path, at, kf_reason_name(cr.reason), cr.msg);
    CHECK(kf_sess_take_outputs(&r->s, &r->side, ex, outs) == 0);
}

/* The shapes compared: the oracle's visible ones, then every size at its smallest, those
 * inside both tasks' ranges and constraints. */
static int xref_shapes(const kf_task *a, const kf_task *b, int64_t v[][KF_MAX_SIZES], int max) {
    int n = 0;
    for (int k = 0; k <= a->nshapes && n < max; k++) {
        for (int i = 0; i < a->nsizes; i++) v[n][i] = k < a->nshapes ? a->shapes[k].v[i] : a->size_min[i];
        kf_shape sh = {v[n], KF_SHAPE_VISIBLE, 0};
        char err[256];
        int ok = kf_task_shape_ok(a, &sh, NULL, NULL, err, sizeof err) == 1 &&
                 kf_task_shape_ok(b, &sh, NULL, NULL, err, sizeof err) == 1;
        for (int i = 0; i < a->nsizes; i++)
            ok = ok && v[n][i] >= b->size_min[i] && v[n][i] <= b->size_max[i] && v[n][i] >= a->size_min[i] &&
                 v[n][i] <= a->size_max[i];
        n += ok;
    }
    return n;
}

/* Run the references of oracle and other on the same inputs and compare other's outputs
 * with the oracle's under other's tolerance. 0 when they agree everywhere; 1 with the
 * first disagreement in why. Anything that keeps a reference from running fails the
 * test. */
static int xref_compare(const kf_task *oracle, const kf_task *other, char *why, size_t n) {
    kf_ctx *ctx = kf_ctx_new();
    kf_opts o;
    kf_opts_init(&o);
    o.has_seed = 1;
    o.seed = XREF_SEED;
    int64_t v[8][KF_MAX_SIZES];
    int nshapes = xref_shapes(oracle, other, v, 8);
    CHECKF(nshapes > 0, "no shape of %s fits %s", oracle->dir, other->dir);
    size_t arena = 0;
    kf_extents ex[8], exo;
    char err[512];
    for (int k = 0; k < nshapes; k++) {
        kf_shape sh = {v[k], KF_SHAPE_VISIBLE, 0};
        CHECKF(!kf_data_extents(oracle, &sh, &ex[k], err, sizeof err), "%s", err);
        CHECKF(!kf_data_extents(other, &sh, &exo, err, sizeof err), "%s", err);
        CHECK(!memcmp(ex[k].count, exo.count, sizeof exo.count)); /* same signature, same extents */
        size_t b = kf_sess_arena_bytes(oracle, &ex[k]);
        if (b > arena) arena = b;
    }
    ref_run ra, rb;
    ref_open(&ra, ctx, oracle, &o, arena);
    ref_open(&rb, ctx, other, &o, arena);
    kf_rng rng;
    CHECK(kf_rng_seed(&rng, XREF_SEED) == 0);
    int bad = 0;
    for (int k = 0; k < nshapes && !bad; k++) {
        kf_shape sh = {v[k], KF_SHAPE_VISIBLE, 0};
        char at[600];
        kf_shape_format(oracle, &sh, at, sizeof at);
        for (int variant = 0; variant < 2 && !bad; variant++) {
            kf_inputs in, in_o; /* in_o: other's inputs (its bf16 buffers), in the oracle's f32 */
            void *want[KF_MAX_ARGS], *got[KF_MAX_ARGS], *mag[KF_MAX_ARGS];
            kf_poison pa, pb;
            CHECK(kf_data_gen_inputs(other, &ex[k], &rng, variant, &in) == 0);
            memset(&in_o, 0, sizeof in_o);
            for (int i = 0; i < oracle->nargs; i++) {
                if (!in.buf[i]) continue;
                in_o.buf[i] = in.buf[i];
                if (oracle->args[i].type == other->args[i].type) continue;
                float *f = malloc(ex[k].count[i] * sizeof *f + 1);
                CHECK(f);
                for (int64_t e = 0; e < ex[k].count[i]; e++) f[e] = (float)kf_data_get(KF_T_BF16, in.buf[i], e);
                in_o.buf[i] = f;
            }
            ref_call(&ra, &rng, &ex[k], &in_o, &pa, want, at);
            ref_call(&rb, &rng, &ex[k], &in, &pb, got, at);
            CHECKF(kf_sess_magnitude(&ra.s, ctx, &ra.side, &ex[k], &in_o, &rng, mag, at) == KF_OK, "%s",
                   kf_errmsg(ctx));
            double max_abs = 0, max_rel = 0;
            /* the outputs first, then the inout buffers (a kernel that ran nothing leaves the
             * outputs unwritten: that is what the stand-in driver's test looks for) */
            for (int pass = 0; pass < 2; pass++)
            for (int i = 0; i < other->nargs && !bad; i++) {
                const kf_arg *a = &other->args[i];
                if (!a->is_buffer || a->io == (pass ? KF_IO_OUT : KF_IO_INOUT) || a->io == KF_IO_IN) continue;
                double rtol, atol, mtol = mag[i] ? kf_task_mtol(other, a) : 0;
                kf_task_tolerance(other, a, &rtol, &atol);
                kf_cmp c;
                kf_dtype ty = a->type;
                void *gi = got[i];
                uint64_t sent = pb.sentinel[i];
                if (oracle->args[i].type != ty) { /* a bf16 twin's output, as f32 */
                    float *f = malloc(ex[k].count[i] * sizeof *f + 1);
                    CHECK(f);
                    /* an element still holding the sentinel holds one in f32 too (a pattern
                     * no converted bf16 value has: its low half is not zero) */
                    const uint32_t f32_sentinel = 0x7f7fbeefu;
                    for (int64_t e = 0; e < ex[k].count[i]; e++) {
                        uint16_t h;
                        memcpy(&h, (const char *)got[i] + 2 * e, 2);
                        f[e] = (float)kf_data_get(KF_T_BF16, got[i], e);
                        if (h == (uint16_t)pb.sentinel[i]) memcpy(&f[e], &f32_sentinel, 4);
                    }
                    gi = f, ty = KF_T_F32, sent = f32_sentinel;
                }
                kf_data_compare_mag(ty, gi, want[i], mag[i], ex[k].count[i], rtol, atol, mtol,
                                    a->io == KF_IO_OUT ? &sent : NULL, &c);
                if (gi != got[i]) free(gi);
                if (c.max_abs > max_abs) max_abs = c.max_abs;
                if (c.max_rel > max_rel) max_rel = c.max_rel;
                if (c.first_bad < 0) continue;
                static const char *const kinds[] = {"unwritten", "not finite", "outside tolerance"};
                int kind = c.first[KF_CMP_UNWRITTEN] >= 0   ? KF_CMP_UNWRITTEN
                           : c.first[KF_CMP_NONFINITE] >= 0 ? KF_CMP_NONFINITE
                                                            : KF_CMP_WRONG;
                char idx[160];
                kf_data_format_index(other, &ex[k], i, c.first[kind], idx, sizeof idx);
                snprintf(why, n,
                         "%s at %s, %s inputs: %lld of %lld elements of %s %s (first %s: %.9g "
                         "where %s has %.9g; atol %g, rtol %g, mtol %g)",
                         other->ref_path, at, variant ? "spiked" : "plain",
                         (long long)(c.unwritten + c.nonfinite + c.wrong), (long long)c.n, a->name,
                         kinds[kind], idx, c.got[kind], oracle->ref_path, c.want[kind], atol, rtol, mtol);
                bad = 1;
            }
            if (!bad) /* for -v */
                printf("agree at %s, %s inputs: largest difference %.3g (relative %.3g)\n", at,
                       variant ? "spiked" : "plain", max_abs, max_rel);
            kf_sess_free_outputs(oracle, want);
            kf_sess_free_outputs(other, got);
            kf_sess_free_outputs(oracle, mag);
            for (int i = 0; i < oracle->nargs; i++)
                if (in_o.buf[i] != in.buf[i]) free(in_o.buf[i]);
            kf_data_free_inputs(other, &in);
        }
    }
    kf_rng_free(&rng);
    ref_close(&rb);
    ref_close(&ra);
    kf_ctx_free(ctx);
    return bad;
}

static void t_twin(const void *arg) {
    const char *op = arg;
    char rel_c[128], rel_cuda[128], why[1024];
    snprintf(rel_c, sizeof rel_c, "tasks/c/%s", op);
    snprintf(rel_cuda, sizeof rel_cuda, "tasks/cuda/%s", op);
    kf_ctx *ctx = kf_ctx_new();
    kf_task *c = kft_task(ctx, rel_c), *cuda = kft_task(ctx, rel_cuda);
    CHECKF(!same_signature(c, cuda, why, sizeof why), "%s and %s: %s", rel_c, rel_cuda, why);
    if (!kft_have_gpu(why, sizeof why)) kft_skip("the CUDA reference needs a GPU: %s", why);
    int bad = xref_compare(c, cuda, why, sizeof why);
    CHECKF(!bad, "the CUDA reference disagrees with the C one: %s", why);
    kf_task_free(cuda);
    kf_task_free(c);
    kf_ctx_free(ctx);
}

/* tasks/c/softmax's task.json with the reference text ref, in a directory of this
 * process's (dir); loaded. */
static kf_task *softmax_with_reference(kf_ctx *ctx, const char *ref, char *dir, size_t n) {
    snprintf(dir, n, "/tmp/kft-xref-%d-XXXXXX", (int)getpid());
    CHECK(mkdtemp(dir));
    char *json = NULL, path[PATH_MAX];
    size_t len;
    CHECK(kf__read_file(kft_src("tasks/c/softmax/task.json"), 1u << 20, &json, &len) == 0);
    const char *files[2][2] = {{"task.json", json}, {"reference.c", ref}};
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i][0]);
        FILE *f = fopen(path, "w");
        CHECK(f && fputs(files[i][1], f) >= 0 && fclose(f) == 0);
    }
    free(json);
    kf_task *t = NULL;
    CHECKF(kf_task_load(ctx, dir, &t) == KF_OK, "%s", kf_errmsg(ctx));
    return t;
}

static void t_c_twin(const void *arg) {
    (void)arg;
    kf_ctx *ctx = kf_ctx_new();
    char dir[PATH_MAX], why[1024] = "", *fast = NULL;
    size_t len;
    CHECK(kf__read_file(kft_src("tasks/c/softmax/candidates/fast.c"), 1u << 20, &fast, &len) == 0);
    kf_task *a = kft_task(ctx, "tasks/c/softmax"), *b = softmax_with_reference(ctx, fast, dir, sizeof dir);
    CHECK(!same_signature(a, b, why, sizeof why));
    int bad = xref_compare(a, b, why, sizeof why);
    kf__rmtree(dir);
    CHECKF(!bad, "%s", why);
    free(fast);
    kf_task_free(b);
    kf_task_free(a);
    kf_ctx_free(ctx);
}

/* A C task with a PyTorch reference (docs/torch.md) beside its C twin: the same
 * arguments, and the same outputs within the tolerance; skipped without torch. */
static void t_torch_twin(const void *arg) {
    const char *op = arg;
    char rel_c[128], rel_torch[128], why[1024] = "", py[PATH_MAX], cmd[PATH_MAX + 64], out[256];
    snprintf(rel_c, sizeof rel_c, "tasks/c/%s", op);
    snprintf(rel_torch, sizeof rel_torch, "tasks/c/%s_torch", op);
    kf_ctx *ctx = kf_ctx_new();
    kf_task *c = kft_task(ctx, rel_c), *pt = kft_task(ctx, rel_torch);
    CHECK(pt->ref_torch);
    CHECKF(!same_signature(c, pt, why, sizeof why), "%s and %s: %s", rel_c, rel_torch, why);
    if (kf_torch_python(ctx, py, sizeof py))
        kft_skip("no python3 for the PyTorch reference: %s", kf_errmsg(ctx));
    snprintf(cmd, sizeof cmd, "'%s' -c 'import torch' 2>&1", py);
    if (kft_run(cmd, out, sizeof out)) kft_skip("%s has no torch (make deps installs it into .venv)", py);
    int bad = xref_compare(c, pt, why, sizeof why);
    CHECKF(!bad, "the PyTorch reference disagrees with the C one: %s", why);
    kf_task_free(pt);
    kf_task_free(c);
    kf_ctx_free(ctx);
}

/* A CUDA task with a PyTorch reference (computed on the GPU) beside its CUDA twin: the
 * same arguments everywhere; on a GPU, the torch outputs within the tolerance of the CUDA
 * reference's on the same inputs (the CUDA reference the oracle, as the C one is for
 * tasks/c). Skipped without a GPU or torch. */
static void t_torch_cuda_twin(const void *arg) {
    const char *op = arg;
    char rel_cuda[128], rel_torch[128], why[1024] = "", py[PATH_MAX], cmd[PATH_MAX + 64], out[256];
    snprintf(rel_cuda, sizeof rel_cuda, "tasks/cuda/%s", op);
    snprintf(rel_torch, sizeof rel_torch, "tasks/cuda/%s_torch", op);
    kf_ctx *ctx = kf_ctx_new();
    kf_task *cuda = kft_task(ctx, rel_cuda), *pt = kft_task(ctx, rel_torch);
    CHECK(pt->ref_torch && !cuda->ref_torch);
    CHECKF(!same_signature(cuda, pt, why, sizeof why), "%s and %s: %s", rel_cuda, rel_torch, why);
    if (!kft_have_gpu(why, sizeof why)) kft_skip("both references need a GPU: %s", why);
    if (kf_torch_python(ctx, py, sizeof py))
        kft_skip("no python3 for the PyTorch reference: %s", kf_errmsg(ctx));
    snprintf(cmd, sizeof cmd, "'%s' -c 'import torch' 2>&1", py);
    if (kft_run(cmd, out, sizeof out)) kft_skip("%s has no torch (make deps installs it into .venv)", py);
    int bad = xref_compare(cuda, pt, why, sizeof why);
    CHECKF(!bad, "the PyTorch reference on the GPU disagrees with the CUDA one: %s", why);
    kf_task_free(pt);
    kf_task_free(cuda);
    kf_ctx_free(ctx);
}

static void t_catches_mismatch(const void *arg) {
    (void)arg;
    kf_ctx *ctx = kf_ctx_new();
    char dir[PATH_MAX], why[1024] = "";
    /* a uniform row: every output written, finite, and wrong */
    static const char uniform[] = "#include <stdint.h>\n"
                                  "void softmax(const float *x, float *y, int64_t rows, int64_t cols) {\n"
                                  "    (void)x;\n"
                                  "    for (int64_t i = 0; i < rows * cols; i++) y[i] = 1.0f / (float)cols;\n"
                                  "}\n";
    kf_task *a = kft_task(ctx, "tasks/c/softmax"), *b = softmax_with_reference(ctx, uniform, dir, sizeof dir);
    int bad = xref_compare(a, b, why, sizeof why);
    kf__rmtree(dir);
    CHECKF(bad, "a uniform softmax agreed with the reference");
    CHECKF(strstr(why, "elements of y outside tolerance") && strstr(why, "plain inputs") &&
               strstr(why, "rows="),
           "%s", why);
    printf("reported: %s\n", why);
    /* and a signature that differs is named */
    kf_task *sum = kft_task(ctx, "tasks/c/sum");
    CHECK(same_signature(a, sum, why, sizeof why) && strstr(why, "sizes"));
    kf_task_free(sum);
    kf_task_free(b);
    kf_task_free(a);
    kf_ctx_free(ctx);
}

static void t_fake_driver(const void *arg) {
    (void)arg;
    char why[1024] = "";
    if (!kf_nvrtc_load(why, sizeof why)) kft_skip("needs NVRTC: %s", why);
    /* the stand-in as libcuda.so.1 in a directory of its own, its events 1 us apart (the
     * coordinator then accepts the calls against its own clock) */
    char dir[] = "/tmp/kft-xfake-XXXXXX", lib[64], envf[64];
    CHECK(mkdtemp(dir));
    snprintf(lib, sizeof lib, "%s/libcuda.so.1", dir);
    snprintf(envf, sizeof envf, "%s/fakecuda.env", dir);
    CHECK(symlink(kft_bin("libkft_fakecuda.so"), lib) == 0);
    FILE *f = fopen(envf, "w");
    CHECK(f && fputs("FAKECUDA_MS=0.001\n", f) >= 0 && fclose(f) == 0);
    /* the worker drops to a user of its own: it must read the settings */
    CHECK(chmod(dir, 0755) == 0 && chmod(envf, 0644) == 0);
    setenv("KFORGE_LIBCUDA", lib, 1);
    kf_ctx *ctx = kf_ctx_new();
    int n = 0;
    for (int i = 0; kft_cuda_tasks[i]; i++) {
        char rel_c[128], rel_cuda[128];
        struct stat st;
        snprintf(rel_c, sizeof rel_c, "tasks/c/%s", kft_cuda_tasks[i]);
        snprintf(rel_cuda, sizeof rel_cuda, "tasks/cuda/%s", kft_cuda_tasks[i]);
        if (stat(kft_src(rel_c), &st)) continue;
        kf_task *c = kft_task(ctx, rel_c), *cuda = kft_task(ctx, rel_cuda);
        int bad = xref_compare(c, cuda, why, sizeof why);
        CHECKF(bad && strstr(why, " unwritten (first ") && strstr(why, "reference.cu at "), "%s: %s",
               rel_cuda, bad ? why : "agreed");
        printf("%s: %s\n", kft_cuda_tasks[i], why);
        kf_task_free(cuda);
        kf_task_free(c);
        n++;
    }
    kf__rmtree(dir);
    CHECK(n > 0);
    kf_ctx_free(ctx);
}

void kft_register_xref(void) {
    for (int i = 0; kft_cuda_tasks[i]; i++) {
        char rel[128], name[128];
        struct stat st;
        snprintf(rel, sizeof rel, "tasks/c/%s/task.json", kft_cuda_tasks[i]);
        if (stat(kft_src(rel), &st)) continue; /* no C twin */
        snprintf(name, sizeof name, "xref/%s", kft_cuda_tasks[i]);
        kft_add(name, t_twin, kft_cuda_tasks[i], 300);
    }
    kft_add("xref/softmax_torch", t_torch_twin, "softmax", 120);
    kft_add("xref/softmax_torch_cuda", t_torch_cuda_twin, "softmax", 300);
    kft_add("xref/c_twin", t_c_twin, NULL, 60);
    kft_add("xref/catches_mismatch", t_catches_mismatch, NULL, 60);
    kft_add("xref/fake_driver", t_fake_driver, NULL, 120);
}
