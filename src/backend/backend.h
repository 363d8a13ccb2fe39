/*
 * backend.h - the backend interface: turn a source text into something a worker can
 * load. A backend is a vtable (struct kf_backend_i) plus a context, registered by
 * name. Core code calls the kf_backend_* wrappers, never the vtable directly: the
 * wrappers check arguments. Backends build code; they never judge it.
 */
#ifndef KF_BACKEND_H
#define KF_BACKEND_H

#include "../task/candidate.h"

typedef struct {
    char *so_path;   /* built object (owned; in the build dir or the cache) */
    int ok;          /* 0: compile failed; reason + message + log say why */
    kf_reason reason;
    char *message;   /* one line: the first error */
    char *log;       /* compiler output, capped */
    double seconds;  /* wall time of the compile (0 when cached) */
    int cached;
} kf_build;

typedef struct kf_backend kf_backend;

struct kf_backend_i {
    const char *name;
    /* Build `text` (from `path`, for messages) with the task's calling convention and
     * the selected parameters into a loadable object under workdir. KF_OK when the
     * compiler ran (whether or not the build succeeded: see out->ok). */
    kf_status (*compile)(kf_backend *b, kf_ctx *ctx, const kf_task *t, const char *path,
                         const char *text, size_t len, const kf_param *params, int nparams,
                         const char *workdir, double timeout_s, kf_build *out);
};

struct kf_backend {
    struct kf_backend_i iface;
    void *context;
};

/* The backend registered under name, or NULL. */
kf_backend *kf_backend_get(const char *name);
kf_status kf_backend_compile(kf_backend *b, kf_ctx *ctx, const kf_task *t, const char *path,
                             const char *text, size_t len, const kf_param *params, int nparams,
                             const char *workdir, double timeout_s, kf_build *out);
void kf_build_free(kf_build *b);

/* Registered backends */
kf_backend *kf_backend_c(void);

#endif
