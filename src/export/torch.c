/*
 * torch.c - `kforge export RUN --torch -o DIR` (docs/torch.md): after an export whose
 * dispatcher the checker accepted, DIR/torch, a Python package that makes the dispatcher
 * a PyTorch custom op (torch.ops.kforge.<entry>, torch.library, built through
 * torch.utils.cpp_extension), with a test against the task's reference and a README.
 * The package's text is written by an embedded Python program (src/export/torch_pkg.py)
 * from a spec made here: the task, the dispatcher, and the shapes the test runs at (the
 * visible ones and three drawn inside the ranges and constraints), each with every
 * buffer's extents and scalar's value as the checker computes them, so the test needs no
 * expression evaluator of its own. Then the package's test runs once (its first import
 * builds it). Both programs run under Landlock (writes: DIR and TMPDIR) with a deadline.
 * It reads the export's EXPORT.json and the task; it touches nothing else of the export.
 */
#define _GNU_SOURCE
#include "../check/check.h"
#include "../task/task.h"
#include "kf_python.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TORCH_GEN_TIMEOUT_S 120
#define TORCH_TEST_TIMEOUT_S 900 /* the first build: the dispatcher and op.cpp against torch's headers */
#define TORCH_DRAWN 3

extern char **environ;

/* The visible shapes and TORCH_DRAWN drawn ones, as the spec's "shapes". */
static json_t *spec_shapes(const kf_task *t) {
    json_t *a = json_array();
    kf_rng rng;
    if (!a || kf_rng_seed_secret(&rng)) return json_decref(a), NULL;
    int64_t v[KF_MAX_SIZES];
    int drawn = 0;
    for (int k = 0; k < t->nshapes + 400 && drawn < TORCH_DRAWN; k++) {
        kf_shape sh = {v, KF_SHAPE_HIDDEN, 0};
        if (k < t->nshapes) {
            sh = t->shapes[k];
        } else {
            for (int i = 0; i < t->nsizes; i++) { /* log-uniform, as hidden shapes are */
                double lo = log((double)t->size_min[i] + 1), hi = log((double)t->size_max[i] + 1);
                double u = (double)kf_rng_range(&rng, 0, 1u << 30) / (double)(1u << 30);
                v[i] = (int64_t)floor(exp(lo + u * (hi - lo))) - 1;
                if (v[i] < t->size_min[i]) v[i] = t->size_min[i];
                if (v[i] > t->size_max[i]) v[i] = t->size_max[i];
            }
            char err[256];
            if (kf_task_shape_ok(t, &sh, NULL, NULL, err, sizeof err) != 1) continue;
        }
        kf_extents ex;
        char err[256];
        if (kf_data_extents(t, &sh, &ex, err, sizeof err)) continue;
        size_t bytes = 0;
        for (int i = 0; i < t->nargs; i++) bytes += t->args[i].is_buffer ? ex.bytes[i] : 0;
        if (k >= t->nshapes && bytes > (256u << 20)) continue;
        json_t *s = json_object(), *sizes = json_object(), *dims = json_array(), *sc = json_array();
        for (int i = 0; i < t->nsizes; i++)
            json_object_set_new(sizes, t->size_names[i], json_integer(sh.v[i]));
        for (int i = 0; i < t->nargs; i++) {
            const kf_arg *x = &t->args[i];
            json_t *d = x->is_buffer ? json_array() : json_null();
            for (int j = 0; x->is_buffer && j < x->ndim; j++)
                json_array_append_new(d, json_integer(ex.dims[i][j]));
            json_array_append_new(dims, d);
            json_array_append_new(sc, x->is_buffer                 ? json_null()
                                      : kf_dtype_is_float(x->type) ? json_real(ex.fval[i])
                                                                   : json_integer(ex.ival[i]));
        }
        json_object_set_new(s, "sizes", sizes);
        json_object_set_new(s, "dims", dims);
        json_object_set_new(s, "scalars", sc);
        json_array_append_new(a, s);
        drawn += k >= t->nshapes;
    }
    kf_rng_free(&rng);
    return a;
}

/* Run the Python program src with args under Landlock (writes: rw, TMPDIR) in cwd; its
 * output into log, its exit code into *code (-1: past the deadline). */
static kf_status run_py(kf_ctx *ctx, const char *py, const char *src, char *const *args, int nargs,
                        const char *cwd, const char *rw, double timeout_s, kf_buf *log, int *code) {
    char *argv[12];
    int n = 0;
    argv[n++] = (char *)py;
    if (src) argv[n++] = "-c", argv[n++] = (char *)src;
    for (int i = 0; i < nargs && n < 11; i++) argv[n++] = args[i];
    argv[n] = NULL;
    const char *tmp = getenv("TMPDIR");
    const char *ro[] = {"/"}, *w[] = {rw, tmp && *tmp ? tmp : "/tmp", "/dev"};
    kf_limits lim = {timeout_s * 4, 0, 1ull << 32, 4096};
    return kf_sandbox_exec(ctx, argv, cwd, environ, &lim, ro, 1, w, 3, timeout_s, log, code);
}

kf_status kf_run_export_torch(kf_ctx *ctx, const char *out_dir, int run_test, char **json_out) {
    *json_out = NULL;
    char path[PATH_MAX], dir[PATH_MAX], pkg[PATH_MAX + 16], specp[PATH_MAX + 32], py[PATH_MAX];
    if (!realpath(out_dir, dir))
        return kf__err(ctx, kf__io_status(errno), "%s: %s", out_dir, strerror(errno));
    snprintf(path, sizeof path, "%s/EXPORT.json", dir);
    json_error_t je;
    json_t *doc = json_load_file(path, 0, &je);
    if (!doc) return kf__err(ctx, KF_EUSAGE, "%s: %s (not an export)", path, je.text);
    const char *task_dir = json_string_value(json_object_get(doc, "task"));
    const char *disp = json_string_value(json_object_get(doc, "dispatcher"));
    kf_task *t = NULL;
    json_t *spec = NULL, *res = NULL;
    kf_buf log;
    kf_buf_init(&log, 1u << 20);
    kf_status st = KF_OK;
    if (!task_dir || !disp) {
        st = kf__err(ctx, KF_EUSAGE,
                     "%s: no dispatcher the checker accepted, so no PyTorch op (--torch exports a verified "
                     "dispatcher only)",
                     dir);
        goto out;
    }
    if ((st = kf_task_load(ctx, task_dir, &t)) || (st = kf_torch_python(ctx, py, sizeof py))) goto out;
    snprintf(pkg, sizeof pkg, "%s/torch", dir);
    snprintf(specp, sizeof specp, "%s/torch-spec.json", dir);
    char dpath[PATH_MAX + 256];
    snprintf(dpath, sizeof dpath, "%s/%s", dir, disp);
    json_t *shapes = spec_shapes(t);
    spec = json_pack("{s:s, s:s, s:o*}", "task", t->dir, "dispatcher", dpath, "shapes", shapes);
    if (!spec || !shapes) {
        st = kf__err(ctx, KF_ENOMEM, "out of memory");
        goto out;
    }
    json_t *run = json_object_get(doc, "run");
    json_object_set_new(spec, "run", run ? json_incref(run) : json_string("RUN"));
    if (json_dump_file(spec, specp, JSON_INDENT(1))) {
        st = kf__err(ctx, KF_EIO, "%s: %s", specp, strerror(errno));
        goto out;
    }
    kf__rmtree(pkg);
    if (kf__mkdirs(pkg)) {
        st = kf__err(ctx, kf__io_status(errno), "%s: %s", pkg, strerror(errno));
        goto out;
    }
    int code = 0;
    char *gargs[] = {specp, pkg};
    st = run_py(ctx, py, kf__py_torch_pkg, gargs, 2, dir, dir, TORCH_GEN_TIMEOUT_S, &log, &code);
    unlink(specp);
    if (!st && code) {
        st = kf__err(ctx, code == 2 ? KF_EUSAGE : KF_EINTERNAL, "%s",
                     log.p ? log.p : "the package's generator failed");
        kf__rmtree(pkg);
    }
    if (st) goto out;
    res = json_pack("{s:s, s:s, s:s}", "package", pkg, "op", "", "test", run_test ? "passed" : "not run");
    char op[300];
    snprintf(op, sizeof op, "torch.ops.kforge.%s", t->entry);
    json_object_set_new(res, "op", json_string(op));
    if (run_test) {
        char test[PATH_MAX + 64];
        snprintf(test, sizeof test, "%s/test_%s.py", pkg, t->name);
        kf_buf_free(&log);
        kf_buf_init(&log, 1u << 20);
        char *targs[] = {test};
        if ((st = run_py(ctx, py, NULL, targs, 1, pkg, pkg, TORCH_TEST_TIMEOUT_S, &log, &code))) goto out;
        const char *txt = log.p ? log.p : "";
        size_t n = strlen(txt);
        json_object_set_new(res, "test", json_string(code ? "failed" : "passed"));
        json_object_set_new(res, "output", kf_text_json(n > 4000 ? txt + n - 4000 : txt));
    }
    if (!(*json_out = kf__json_dumps(res, JSON_COMPACT))) st = kf__err(ctx, KF_ENOMEM, "out of memory");
out:
    kf_buf_free(&log);
    json_decref(res);
    json_decref(spec);
    json_decref(doc);
    kf_task_free(t);
    return st;
}
