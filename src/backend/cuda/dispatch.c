/*
 * dispatch.c - the CUDA backend's dispatcher slot (kforge export): a host-mode file
 * (docs/cuda.md "Host mode": // kforge:host and extern "C" int kforge_launch(<args>,
 * cudaStream_t)). Each routed winner's kernel-mode text is renamed apart as for C
 * (../dispatch.c), then a
 * launcher per winner makes its kforge:launch launches (geometry from its launch
 * expressions over the sizes, which must be integer arguments, and its parameters), and
 * kforge_launch chooses by the same predicates as the C dispatcher.
 */
#define _GNU_SOURCE
#include "host.h"

#include "../dispatch.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A task argument's C type in kernel and host-mode signatures (docs/cuda.md). */
static const char *cutype(kf_dtype t) {
    switch (t) {
    case KF_T_F16: return "__half";
    case KF_T_BF16: return "__nv_bfloat16";
    default: return kf_dispatch_ctype(t);
    }
}

/* The task's arguments as parameters ("const float *x, float *y, int64_t rows"). */
static void cu_params(kf_buf *b, const kf_task *t) {
    for (int i = 0; i < t->nargs; i++) {
        const kf_arg *a = &t->args[i];
        kf_buf_printf(b, "%s%s%s%s%s", i ? ", " : "", a->is_buffer && a->io == KF_IO_IN ? "const " : "",
                      cutype(a->type), a->is_buffer ? " *" : " ", a->name);
    }
}

/* The integer scalar argument whose value is exactly size k, or NULL. */
static const kf_arg *size_arg(const kf_task *t, int k) {
    for (int i = 0; i < t->nargs; i++) {
        const kf_arg *a = &t->args[i];
        if (!a->is_buffer && a->value_expr && (a->type == KF_T_I32 || a->type == KF_T_I64) &&
            !strcmp(kf_expr_src(a->value_expr), t->size_names[k]))
            return a;
    }
    return NULL;
}

/* A launch expression as C over int64_t: sizes become kf_s_<name>, min/max kf_min/kf_max;
 * parameters stay names (their #define is in force). */
static void cu_expr(kf_buf *b, const kf_task *t, const char *e, size_t n) {
    kf_toks tk = {0};
    if (kf_ctok_tokenize(e, n, &tk)) {
        kf_buf_append(b, e, n);
        return;
    }
    size_t at = 0;
    for (size_t i = 0; i < tk.n; i++) {
        const kf_tok *k = &tk.v[i];
        if (k->kind != KF_TOK_ID) continue;
        const char *rep = NULL, *pre = "";
        for (int z = 0; z < t->nsizes; z++)
            if (strlen(t->size_names[z]) == k->len && !memcmp(t->size_names[z], e + k->off, k->len))
                pre = "kf_s_";
        if (k->len == 3 && !memcmp(e + k->off, "min", 3)) rep = "kf_min";
        if (k->len == 3 && !memcmp(e + k->off, "max", 3)) rep = "kf_max";
        if (!rep && !*pre) continue;
        kf_buf_append(b, e + at, k->off - at);
        if (rep) kf_buf_printf(b, "%s", rep);
        else kf_buf_printf(b, "%s%.*s", pre, (int)k->len, e + k->off);
        at = k->off + k->len;
    }
    kf_buf_append(b, e + at, n - at);
    free(tk.v);
}

/* A (a, b, c) tuple's i-th element (i < 3) at *p into b as C; "1" when absent. */
static int cu_tuple(kf_buf *b, const kf_task *t, const char *v, size_t n, int i) {
    if (!n || v[0] != '(') {
        if (i == 0) cu_expr(b, t, v, n);
        else kf_buf_printf(b, "1");
        return 0;
    }
    int d = 0, k = 0;
    size_t from = 1;
    for (size_t j = 0; j < n; j++) {
        if (v[j] == '(') d++;
        if (v[j] == ')') d--;
        if ((v[j] == ',' && d == 1) || (v[j] == ')' && d == 0)) {
            if (k == i) {
                kf_buf_printf(b, "(");
                cu_expr(b, t, v + from, j - from);
                kf_buf_printf(b, ")");
                return 0;
            }
            k++;
            from = j + 1;
        }
    }
    kf_buf_printf(b, "1");
    return 0;
}

/* The value of key (grid, block, smem, kernel) on a kforge:launch line [p, e): its text
 * (a tuple whole). */
static int launch_key(const char *p, const char *e, const char *key, const char **v, size_t *n) {
    size_t kl = strlen(key);
    for (const char *q = p; q + kl < e; q++) {
        if (memcmp(q, key, kl) || q[kl] != '=' || (q > p && !isspace((unsigned char)q[-1]))) continue;
        const char *s = q + kl + 1, *x = s;
        int d = 0;
        while (x < e && (d > 0 || !isspace((unsigned char)*x)) && strncmp(x, "*/", 2)) {
            if (*x == '(') d++;
            if (*x == ')') d--;
            x++;
        }
        *v = s;
        *n = (size_t)(x - s);
        return 0;
    }
    return -1;
}

/* The host function that makes winner x's launches as kernel mode would: every
 * kforge:launch line in order, each kernel given every task argument, the dynamic shared
 * memory limit raised when a launch asks for more than the default 48 KiB. */
static kf_status cu_launcher(kf_ctx *ctx, const kf_task *t, const kf_winner *x, const kf_names *ren,
                             kf_buf *b) {
    kf_buf_printf(b, "static int kf_n%lld_launch(", (long long)x->id);
    cu_params(b, t);
    kf_buf_printf(b, ", cudaStream_t stream)\n{\n");
    for (int k = 0; k < t->nsizes; k++)
        kf_buf_printf(b, "    const int64_t kf_s_%s = (int64_t)%s;\n", t->size_names[k],
                      size_arg(t, k)->name);
    for (int k = 0; k < t->nsizes; k++) kf_buf_printf(b, "    (void)kf_s_%s;\n", t->size_names[k]);
    kf_buf call;
    kf_buf_init(&call, 1u << 16);
    for (int i = 0; i < t->nargs; i++) kf_buf_printf(&call, "%s%s", i ? ", " : "", t->args[i].name);
    int nl = 0;
    const char *p = x->text, *end = x->text + x->len;
    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol) eol = end;
        const char *d = memmem(p, (size_t)(eol - p), "kforge:launch", 13);
        if (d) {
            const char *kv, *gv, *bv, *sv;
            size_t kn, gn, bn, sn = 0;
            if (launch_key(d, eol, "kernel", &kv, &kn) || launch_key(d, eol, "grid", &gv, &gn) ||
                launch_key(d, eol, "block", &bv, &bn)) {
                kf_buf_free(&call);
                return kf__err(
                    ctx, KF_EUSAGE,
                    "node %lld: a kforge:launch line without kernel=, grid= or block=", (long long)x->id);
            }
            int has_smem = !launch_key(d, eol, "smem", &sv, &sn);
            char kname[256];
            snprintf(kname, sizeof kname, "%.*s", (int)kn, kv);
            kf_buf_printf(b, "    { /* launch %d */\n", ++nl);
            const char *dn[6] = {"gx", "gy", "gz", "bx", "by", "bz"};
            for (int i = 0; i < 6; i++) {
                kf_buf_printf(b, "        const int64_t %s = ", dn[i]);
                cu_tuple(b, t, i < 3 ? gv : bv, i < 3 ? gn : bn, i % 3);
                kf_buf_printf(b, ";\n");
            }
            kf_buf_printf(b, "        const int64_t smem = ");
            if (has_smem) cu_expr(b, t, sv, sn);
            else kf_buf_printf(b, "0");
            kf_buf_printf(b, ";\n");
            kf_buf_printf(
                b,
                "        if (gx <= 0 || gy <= 0 || gz <= 0 || bx <= 0 || by <= 0 || bz <= 0 || smem < 0)\n"
                "            return (int)cudaErrorInvalidConfiguration;\n"
                "        if (smem > 48 * 1024) {\n"
                "            cudaError_t e = cudaFuncSetAttribute(kf_n%lld_%s, "
                "cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);\n"
                "            if (e != cudaSuccess) return (int)e;\n"
                "        }\n"
                "        kf_n%lld_%s<<<dim3((unsigned)gx, (unsigned)gy, (unsigned)gz), "
                "dim3((unsigned)bx, (unsigned)by, (unsigned)bz), (size_t)smem, stream>>>(%s);\n"
                "        cudaError_t e = cudaGetLastError();\n"
                "        if (e != cudaSuccess) return (int)e;\n"
                "    }\n",
                (long long)x->id, kname, (long long)x->id, kname, call.p ? call.p : "");
        }
        p = eol + 1;
    }
    kf_buf_free(&call);
    kf_buf_printf(b, "    return 0;\n}\n");
    return nl ? KF_OK : kf__err(ctx, KF_EUSAGE, "node %lld: no kforge:launch line", (long long)x->id);
}

/* The CUDA dispatcher into b: one host-mode file (docs/cuda.md "Host mode") holding every
 * routed winner's kernels renamed apart, a launcher per winner, and kforge_launch, which
 * tests the shape predicates and calls a winner's launcher, else the fallback's. routes
 * and notes as for C. KF_EUSAGE with the reason when the task cannot have one (a size
 * that no integer scalar argument equals: the launch geometry could not be computed). */
kf_status kf__cuda_dispatcher(kf_backend *be, kf_ctx *ctx, const kf_task *t, const char *run_dir,
                              const kf_winner *w, int nw, int fallback, const kf_best_shape *best, int nbest,
                              kf_buf *b, kf_dispatch_out *d, int *alone) {
    (void)be;
    *alone = 1; /* a task that cannot have one still has its winners exported */
    for (int k = 0; k < t->nsizes; k++)
        if (!size_arg(t, k))
            return kf__err(
                ctx, KF_EUSAGE,
                "size %s is no integer argument of the kernels: a host-mode dispatcher cannot compute "
                "the launch geometry",
                t->size_names[k]);
    int *used = calloc((size_t)nw, sizeof *used);
    if (!used) return kf__err(ctx, KF_ENOMEM, "out of memory");
    used[fallback] = 1;
    kf_buf sw, call;
    kf_buf_init(&sw, 1u << 20);
    kf_buf_init(&call, 1u << 16);
    for (int i = 0; i < t->nargs; i++) kf_buf_printf(&call, "%s, ", t->args[i].name);
    kf_buf_printf(&call, "stream");
    kf_route *rt = NULL;
    int nrt = 0;
    if (kf_dispatch_plan(t, w, nw, fallback, best, nbest, used, &rt, &nrt, d)) {
        free(used);
        kf_buf_free(&call);
        kf_buf_free(&sw);
        return kf__err(ctx, KF_ENOMEM, "out of memory");
    }
    for (int k = 0; k < nrt; k++) {
        const kf_route *r = &rt[k];
        if (r->domain)
            kf_buf_printf(&sw, "    if %s /* node %lld's domain: %s */\n", r->pred, (long long)w[r->wi].id,
                          r->label);
        else kf_buf_printf(&sw, "    if (%s) /* %s */\n", r->pred, r->label);
        kf_buf_printf(&sw, "        return kf_n%lld_launch(%s);\n", (long long)w[r->wi].id, call.p);
    }
    kf_dispatch_plan_free(rt, nrt);
    kf_status st = KF_OK;
    if (!d->nroutes) {
        /* one node wins everywhere: the dispatcher is that kernel-mode file, as checked */
        kf_buf_printf(
            b,
            "/* %s_dispatch.cu - written by `kforge export` from run %s: node %lld runs on every shape. */\n",
            t->name, run_dir, (long long)w[fallback].id);
        kf_dispatch_pinned(b, w[fallback].params_json);
        kf_buf_append(b, w[fallback].text, w[fallback].len);
        goto out;
    }
    kf_buf_printf(b,
                  "/* %s_dispatch.cu - written by `kforge export` from run %s: a host-mode file\n"
                  " * (docs/cuda.md) that launches the fastest kept kernels of the run for each visible\n"
                  " * shape, else node %lld's (the best over all shapes). Each node's kernels are its\n"
                  " * source with its file-scope names prefixed kf_n<ID>_ and its parameters as #define;\n"
                  " * kf_n<ID>_launch makes its launches as its launch lines say. */\n"
                  "// kforge:host\n",
                  t->name, run_dir, (long long)w[fallback].id);
    kf_dispatch_when_header(b, &w[fallback]);
    kf_buf_printf(
        b, "#include <stdint.h>\n#include <cuda_runtime.h>\n#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n"
           "static inline int64_t kf_min(int64_t a, int64_t b) { return a < b ? a : b; }\n"
           "static inline int64_t kf_max(int64_t a, int64_t b) { return a > b ? a : b; }\n");
    for (int i = 0; i < nw && !st; i++)
        if (used[i]) st = kf_dispatch_section(ctx, t, run_dir, &w[i], b, cu_launcher);
    kf_buf_printf(b, "\n/* ---- the dispatcher ---- */\nextern \"C\" int kforge_launch(");
    cu_params(b, t);
    kf_buf_printf(b, ", cudaStream_t stream)\n{\n%s    return kf_n%lld_launch(%s); /* the fallback */\n}\n",
                  sw.p ? sw.p : "", (long long)w[fallback].id, call.p);
    if (!st && (b->dropped || !b->p))
        st = kf__err(ctx, KF_ENOMEM, "the dispatcher is too large or out of memory");
out:
    free(used);
    kf_buf_free(&sw);
    kf_buf_free(&call);
    return st;
}
