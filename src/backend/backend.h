/*
 * backend.h - the backend interface: turn a source text into something a worker can
 * load. A backend is a vtable (struct kf_backend_i) plus a context, registered by
 * name. Core code calls the kf_backend_* wrappers, never the vtable directly: the
 * wrappers check arguments. Backends build code; they never judge it.
 */
#ifndef KF_BACKEND_H
#define KF_BACKEND_H

#include "../task/candidate.h"

#define KF_MAX_LAUNCH 8

/* GPU kernel mode: one kforge:launch directive. dim[] are grid x y z, block x y z and
 * dynamic shared memory, over the task's sizes and the integer parameters; NULL means
 * 1 (0 for smem). */
typedef struct {
    int kernel; /* index into kernels[] */
    kf_expr *dim[7];
    int line;   /* in the source, for messages */
} kf_launch;

/* What the device compiler reported for one kernel (-1: not reported). */
typedef struct {
    char *name;
    int regs, spill_stores, spill_loads, smem_static, stack;
} kf_kernel_info;

typedef struct {
    char *so_path;   /* built object (owned; in the build dir or the cache) */
    int ok;          /* 0: compile failed; reason + message + log say why */
    kf_reason reason;
    char *message;   /* one line: the first error */
    char *log;       /* compiler output, capped */
    double seconds;  /* wall time of the compile (0 when cached) */
    int cached;
    /* GPU kernel mode (nlaunch > 0): the launches, the kernels they name, and the
     * integer parameters the launch expressions may use */
    int nlaunch;
    kf_launch launch[KF_MAX_LAUNCH];
    int nkernels;
    kf_kernel_info kernels[KF_MAX_LAUNCH];
    int nparams;
    char *pnames[KF_MAX_PARAMS];
    int64_t pvals[KF_MAX_PARAMS];
    char arch[16];   /* "sm_90" */
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

/* Evaluate a GPU build's launches at the given sizes (the task's order) into lx[]
 * (grid x y z, block x y z, smem per launch). 0, or -1 with err (a bad expression, a
 * zero or negative dimension, a block over 1024 threads). */
int kf_build_eval_launches(const kf_build *b, const kf_task *t, const int64_t *sizes,
                           uint32_t lx[][7], char *err, size_t n);

/* Registered backends */
kf_backend *kf_backend_c(void);
kf_backend *kf_backend_cuda(void);

#endif
