/*
 * torch.c - a task's PyTorch reference ("reference": "reference.py", docs/torch.md): the
 * python3 that runs it, and the trusted process it runs in. That process is
 * src/check/torch_ref.py (embedded in the library, run with python3 -c), started in place
 * of kforge-worker (kf_worker_opts.exec) with the same channel, arena and read-only
 * inputs' region, so the reference is a kf_side like any other: staged, called, frozen
 * between calls, timed and judged by the same code. Its configuration message carries
 * the reference's path, the entry, the CPUs, the message layout and each argument's
 * name, kind, type, direction and rank; each call's RUN message carries the buffers'
 * extents (kf_msg_run.extent, zero for every other worker). The process never sees a
 * candidate: it is started for the reference's side alone, and a candidate's worker is
 * never told of it.
 */
#define _GNU_SOURCE
#include "check.h"

#include "kf_python.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* An executable file at path, or name found in PATH, into out: 0, else -1. */
static int find_exe(const char *name, char *out, size_t n) {
    if (strchr(name, '/')) {
        if (access(name, X_OK)) return -1;
        snprintf(out, n, "%s", name);
        return 0;
    }
    const char *path = getenv("PATH");
    if (!path || !*path) path = "/usr/local/bin:/usr/bin:/bin";
    while (*path) {
        const char *colon = strchr(path, ':');
        size_t len = colon ? (size_t)(colon - path) : strlen(path);
        if (len && (size_t)snprintf(out, n, "%.*s/%s", (int)len, path, name) < n && !access(out, X_OK))
            return 0;
        path += len + (colon ? 1 : 0);
    }
    return -1;
}

kf_status kf_torch_python(kf_ctx *ctx, char *out, size_t n) {
    const char *env = getenv("KFORGE_PYTHON");
    if (env && *env) {
        if (!find_exe(env, out, n)) return KF_OK;
        return kf__err(ctx, KF_ETASK,
                       "KFORGE_PYTHON=%s: no such executable (the python3 with torch that runs a task's "
                       "PyTorch reference; docs/torch.md)",
                       env);
    }
    /* the project's virtual environment, which `make deps` creates beside build/ */
    const char *worker = kf_sandbox_worker_path(ctx);
    if (worker) {
        const char *slash = strrchr(worker, '/');
        if (slash &&
            (size_t)snprintf(out, n, "%.*s/../.venv/bin/python3", (int)(slash - worker), worker) < n &&
            !access(out, X_OK))
            return KF_OK;
    }
    if (!find_exe("python3", out, n)) return KF_OK;
    return kf__err(ctx, KF_ETASK,
                   "a PyTorch reference needs python3 with torch, and none was found (KFORGE_PYTHON, the "
                   "project's .venv, python3 in PATH): run `make deps` or set KFORGE_PYTHON (docs/torch.md)");
}

const char *kf_torch_runner(void) { return kf__py_torch_ref; }

static const char *type_tag(kf_dtype t) {
    switch (t) {
    case KF_T_F32: return "f32";
    case KF_T_F64: return "f64";
    case KF_T_I32: return "i32";
    case KF_T_I64: return "i64";
    case KF_T_U8: return "u8";
    case KF_T_F16: return "f16";
    case KF_T_BF16: return "bf16";
    }
    return "?";
}

int kf_torch_config(const kf_task *t, const void *cpus, char *out, size_t n) {
    size_t k = 0;
    int w = snprintf(
        out, n, "kforge-torch 1\nref %s\nentry %s\nthreads 1\nmsg %zu %zu %zu %zu %zu %zu %zu %zu %d\ncpus ",
        t->ref_path, t->entry, sizeof(kf_msg_run), offsetof(kf_msg_run, off), offsetof(kf_msg_run, ival),
        offsetof(kf_msg_run, fval), offsetof(kf_msg_run, extent), sizeof(kf_msg_done),
        offsetof(kf_msg_done, ns), sizeof(kf_msg_text), KF_PROTO_MAXDIMS);
    if (w < 0 || (size_t)w >= n) return -1;
    k = (size_t)w;
    int any = 0;
    for (int c = 0; cpus && c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, (const cpu_set_t *)cpus)) {
            w = snprintf(out + k, n - k, "%s%d", any ? "," : "", c);
            if (w < 0 || (size_t)w >= n - k) return -1;
            k += (size_t)w, any = 1;
        }
    w = snprintf(out + k, n - k, "%s\n", any ? "" : "-");
    if (w < 0 || (size_t)w >= n - k) return -1;
    k += (size_t)w;
    for (int i = 0; i < t->nargs; i++) {
        const kf_arg *a = &t->args[i];
        w = snprintf(out + k, n - k, "arg %s %s %s %s %d\n", a->name, a->is_buffer ? "buf" : "scalar",
                     type_tag(a->type),
                     !a->is_buffer        ? "-"
                     : a->io == KF_IO_IN  ? "in"
                     : a->io == KF_IO_OUT ? "out"
                                          : "inout",
                     a->is_buffer ? a->ndim : 0);
        if (w < 0 || (size_t)w >= n - k) return -1;
        k += (size_t)w;
    }
    return 0;
}

void kf_torch_extents(const kf_task *t, const kf_extents *ex, kf_msg_run *m) {
    for (int i = 0; i < t->nargs && i < KF_PROTO_MAXARGS; i++)
        for (int d = 0; t->args[i].is_buffer && d < t->args[i].ndim && d < KF_PROTO_MAXDIMS; d++)
            m->extent[i][d] = ex->dims[i][d];
}
