/*
 * backend.c - backend registry and the checked wrappers around the vtable.
 */
#include "backend.h"

#include <stdlib.h>
#include <string.h>

kf_backend *kf_backend_get(const char *name) {
    if (name && !strcmp(name, "c")) return kf_backend_c();
    return NULL;
}

kf_status kf_backend_compile(kf_backend *b, kf_ctx *ctx, const kf_task *t, const char *path,
                             const char *text, size_t len, const kf_param *params, int nparams,
                             const char *workdir, double timeout_s, kf_build *out) {
    memset(out, 0, sizeof *out);
    if (!b || !t || !text || !workdir || nparams < 0 || (nparams && !params))
        return kf__err(ctx, KF_EUSAGE, "kf_backend_compile: bad arguments");
    if (!b->iface.compile)
        return kf__err(ctx, KF_EBACKEND, "backend %s cannot compile", b->iface.name);
    return b->iface.compile(b, ctx, t, path, text, len, params, nparams, workdir, timeout_s, out);
}

void kf_build_free(kf_build *b) {
    if (!b) return;
    free(b->so_path);
    free(b->message);
    free(b->log);
    memset(b, 0, sizeof *b);
}
