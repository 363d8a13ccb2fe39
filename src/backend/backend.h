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
    /* GPU host mode (docs/cuda.md): kforge_launch in a shared object built by nvcc */
    int host;
    char *libraries; /* owned: "cublas,libcublas.so.13" (kforge:link, then DT_NEEDED) or "" */
} kf_build;

/* 1 for a GPU artifact (kernel or host mode), which a GPU worker runs. */
static inline int kf_build_gpu(const kf_build *b) { return b && (b->nlaunch > 0 || b->host); }

/* How one side's calls reach the device, for kforge bench's fairness rule. */
typedef enum {
    KF_MODE_CPU = 0, /* the C backend */
    KF_MODE_KERNEL,  /* GPU kernel mode: kforge launches the kernels */
    KF_MODE_HOST,    /* GPU host mode: the candidate's kforge_launch, no graph seen */
    KF_MODE_GRAPH    /* GPU host mode that launched a CUDA graph */
} kf_launch_mode;

const char *kf_launch_mode_name(kf_launch_mode m); /* "cpu", "kernel", "host", "graph" */
/* 1 when a comparison of a and b uses the host-mode timing protocol (a device-wide
 * synchronise inside the timed span, on both sides): either is in host mode. */
int kf_launch_host_timing(const kf_build *a, const kf_build *b);
/* Is timing cand against base a fair comparison? graph_known: whether the candidate's
 * graph use is known (CUPTI ran). 1 fair; 0 unfair with why. A candidate replaying a
 * graph saves the per-launch overhead a kernel-by-kernel baseline pays: fair only
 * against a graph baseline (KF_MODE_GRAPH: a kernel-mode baseline bench captured as a
 * graph). Unknown graph use stays fair, with a note in why. */
int kf_launch_fair(kf_launch_mode cand, kf_launch_mode base, int graph_known, char *why, size_t n);

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
/* Does the ELF shared object at path export `name` as a function (its dynamic symbol
 * table, what dlsym sees)? 1 yes, 0 no, -1 unreadable or not a 64-bit ELF. */
int kf__so_defines(const char *path, const char *name);

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
