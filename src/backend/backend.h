/*
 * backend.h - the backend interface. A backend turns a source text into something a
 * worker can load, and says how its workers stage, run and time a call and what to
 * report about them: a vtable (struct kf_backend_i) plus a context (struct kf_backend),
 * registered by name (registry.h), as ggml's ggml-backend-impl.h and SQLite's
 * sqlite3_io_methods.
 *
 * Core code (check, bench, task, the loop, export, context packs, lessons) never names a
 * backend: it calls the kf_backend_* wrappers below, never the vtable, and reads the
 * capability bits (KF_BACKEND_*). A wrapper checks its arguments and supplies the
 * default of an optional slot left NULL. Backends build code and describe how it runs;
 * they never judge it: the checker compares, the bench times, the sandbox confines.
 *
 * A backend is complete with api_version, its four names and compile; every other slot
 * is optional and says what NULL means. Adding one: docs/design.md, "Extending".
 *
 * What a backend reports for a result (its build, its worker's confinement, a call, a
 * timed shape's fairness and roofline, the ceilings, the resources) it fills into the
 * typed kf_*_out structs below: no slot returns or fills a JSON object for the verdict,
 * whose key names verdict.c alone knows. The dispatcher slot is typed too: it takes the
 * best node per shape as kf_best_shape records and fills a kf_dispatch_out, which
 * export writes as EXPORT.json's routes and notes. JSON is left only where a slot
 * writes an edge document itself: describe (device-info's text).
 */
#ifndef KF_BACKEND_H
#define KF_BACKEND_H

#include "../data/data.h"
#include "../sandbox/sandbox.h"
#include "../task/candidate.h"
#include "registry.h"

#define KF_MAX_LAUNCH 8

/* GPU kernel mode: one kforge:launch directive. dim[] are grid x y z, block x y z and
 * dynamic shared memory, over the task's sizes and the integer parameters; NULL means
 * 1 (0 for smem). */
typedef struct {
    int kernel; /* index into kernels[] */
    kf_expr *dim[7];
    int line; /* in the source, for messages */
} kf_launch;

/* What the device compiler reported for one kernel (-1: not reported). */
typedef struct {
    char *name;
    int regs, spill_stores, spill_loads, smem_static, stack;
} kf_kernel_info;

typedef struct {
    char *so_path; /* built object (owned; in the build dir or the cache) */
    int ok;        /* 0: compile failed; reason + message + log say why */
    kf_reason reason;
    char *message;  /* one line: the first error */
    char *log;      /* compiler output, capped */
    double seconds; /* wall time of the compile (0 when cached) */
    int cached;
    /* The rest is the CUDA backend's own (its slots read it; core code does not).
     * GPU kernel mode (nlaunch > 0): the launches, the kernels they name, and the
     * integer parameters the launch expressions may use */
    int nlaunch;
    kf_launch launch[KF_MAX_LAUNCH];
    int nkernels;
    kf_kernel_info kernels[KF_MAX_LAUNCH];
    int nparams;
    char *pnames[KF_MAX_PARAMS];
    int64_t pvals[KF_MAX_PARAMS];
    char arch[16]; /* "sm_90" */
    /* GPU host mode (docs/cuda.md): kforge_launch in a shared object built by nvcc */
    int host;
    char *libraries; /* owned: "cublas,libcublas.so.13" (kforge:link, then DT_NEEDED) or "" */
} kf_build;

/* One call being staged (the stage slot): the coordinator has written its inputs,
 * sentinels and guard zones into the arena at lay, and m holds its arguments. */
typedef struct {
    const kf_task *t;
    const kf_extents *ex;
    const unsigned char *arena;
    const kf_layout *lay;
    /* what the session asks of this call, as KF_RUN_* bits (sandbox/proto.h): FLUSH_L2
     * and WAIT_IDLE for a timed call, HOST_TIMING and GRAPH as the plan slot decided,
     * PRECISE under compute-sanitizer. The backend passes on those its build can honour. */
    uint32_t flags;
} kf_stage;
/* The stage slot's default for a CPU worker: evict the staged bytes (both regions of
 * st->lay) from every cache level, from the coordinator (cold-cache timing). */
void kf_stage_flush(const kf_stage *st);

/* One timed shape, for the roofline slot: the task's cost model evaluated there and the
 * median times. */
typedef struct {
    const kf_task *t;
    double flops, bytes;
    double cand_ns, base_ns;
} kf_roof_in;

/* A node that wins a shape in kforge export, or its fallback, with its text (the
 * dispatcher slot's input). */
typedef struct {
    int64_t id;
    char *text; /* the node's source */
    size_t len;
    char *params_json, *shapes_json;
    double speedup;
    char ext[8], hash[65];
} kf_winner;

/* A visible shape and the kept node that is best there, as export hands them to the
 * dispatcher slot (kf_record_best_shapes): the sizes in the record's order, their names
 * borrowed from export for the length of the call. */
typedef struct {
    int64_t node;
    int nsizes;
    const char *name[KF_MAX_SIZES];
    int64_t v[KF_MAX_SIZES];
} kf_best_shape;

/* One test of an exported dispatcher's entry (the dispatcher slot): node runs where
 * predicate holds, at the exact shape best[shape], or (shape -1) over its kforge:when
 * domain (NULL: none). Strings owned by the kf_dispatch_out. */
typedef struct {
    int64_t node;
    int shape;
    char *domain, *predicate;
} kf_dispatch_route;
/* What the dispatcher slot says of the file it wrote (zeroed by the wrapper): its tests
 * in order, and a line for each shape it leaves to the fallback, and why. oom: an
 * entry could not be added (the slot then fails). Free with kf_dispatch_out_free. */
typedef struct {
    int nroutes, caproutes;
    kf_dispatch_route *routes;
    int nnotes, capnotes;
    char **notes;
    int oom;
} kf_dispatch_out;
void kf_dispatch_out_free(kf_dispatch_out *o);

/* What the worker's counters saw over one side's timed calls (CUPTI, GPU host mode). */
typedef struct {
    int graph;    /* some call launched a graph */
    int known;    /* every call was counted */
    int launches; /* the most launches one call made (-1: never counted) */
} kf_launch_seen;

/* The backend's reports, typed: each report slot fills one of these, and the verdict
 * (src/check/verdict.h) keeps its fields; verdict.c alone gives them key names. Strings
 * are static or borrowed from the slot's arguments, for the length of the call. */

/* One timed shape's rates from the task's cost model, and its place under the ceilings
 * (the roofline slot). */
enum {
    KF_ROOF_RATES = 1u << 0,     /* gflops, gbytes_per_s */
    KF_ROOF_BASE_RATE = 1u << 1, /* baseline_gbytes_per_s */
    KF_ROOF_FRACTION = 1u << 2,  /* fraction */
    KF_ROOF_FLOOR = 1u << 3,     /* flops_ceiling, floor_ns */
};
typedef struct {
    unsigned has; /* KF_ROOF_* */
    double gflops, gbytes_per_s, baseline_gbytes_per_s;
    double fraction;           /* of the roofline: the fastest possible time over the measured */
    const char *flops_ceiling; /* the FLOP ceiling the fraction was judged against */
    double floor_ns;           /* the hard floor: no kernel does the work faster */
} kf_roof_out;

/* How each side of one timed shape reached the device (the fair slot). */
typedef struct {
    int reported;                      /* 0: nothing to say (then always fair) */
    const char *cand_mode, *base_mode; /* launch modes; NULL: not reported */
    const char *graph_use;             /* the candidate's: "yes", "no", "unknown"; NULL: not reported */
    int launches;                      /* the candidate's most launches in one call; -1: not reported */
    char note[400];                    /* why it is unfair, or a note on a fair one; "": none */
} kf_fair_out;

/* What the first checking call at a shape launched (the report_call slot: CUPTI). */
#define KF_CALL_MAX_KERNELS KF_PROTO_MAXNAMES
typedef struct {
    int reported; /* 0: nothing to say */
    int counted;  /* 0: launches were not counted; note says why */
    const char *note;
    int launches, graph_launches, memory_ops;
    int nkernels; /* the first kernels' names */
    const char *kernels[KF_CALL_MAX_KERNELS];
    unsigned char library[KF_CALL_MAX_KERNELS]; /* 1: kernels[i] is a vendor library's */
    int library_kernels;                        /* library kernels in all, named or not */
} kf_call_out;

/* The ceilings the roofline is judged against (the ceilings slot): this machine's or a
 * device's, measured or from a cache; or why there are none (error). */
enum {
    KF_CEIL_RATES = 1u << 0,  /* bytes_per_s, flops_per_s */
    KF_CEIL_CORES = 1u << 1,  /* cores */
    KF_CEIL_DEVICE = 1u << 2, /* the device's: tensor_flops_per_s ... l2_bytes, and its strings */
};
typedef struct {
    unsigned has;       /* KF_CEIL_* */
    double bytes_per_s; /* copy bandwidth, bytes read + written per second */
    double flops_per_s; /* FP32 peak (a CPU's: one core's) */
    int cores;          /* a CPU's cores the all-core roofline counts */
    double tensor_flops_per_s, theoretical_bytes_per_s, peak_flops_per_s;
    int64_t l2_bytes;
    const char *device, *uuid; /* the device's name and UUID; NULL: not reported */
    const char *source;        /* "measured" or "cache"; NULL: not reported */
    const char *error;         /* no ceilings, and why (nothing else is then set); NULL: none */
} kf_ceil_out;

/* A checked candidate's resources at the first visible shape (the resources slot): per
 * kernel what the device compiler reported, per launch its geometry and occupancy. */
typedef struct {
    const char *name;
    int registers, static_smem_bytes;
    int spill_store_bytes, spill_load_bytes; /* -1: not reported */
    int local_bytes_per_thread;              /* -1: not reported */
} kf_res_kernel;
typedef struct {
    const char *kernel;
    uint32_t grid[3], block[3], dynamic_smem_bytes;
    int occupancy_known; /* blocks_per_sm and occupancy are set */
    uint32_t blocks_per_sm;
    double occupancy; /* resident threads per SM over its maximum */
} kf_res_launch;
typedef struct {
    int reported; /* 0: no report (no "resources") */
    const char *arch;
    int nkernels;
    kf_res_kernel kernels[KF_MAX_LAUNCH];
    int nlaunches; /* 0 when the launches could not be evaluated at the shape */
    kf_res_launch launches[KF_MAX_LAUNCH];
} kf_resources_out;

/* A built candidate's own fields (the report_build slot). */
typedef struct {
    const char *launch_mode; /* NULL: not reported */
    const char *libraries;   /* ","-separated, the declared libraries; NULL: not reported */
} kf_build_out;

/* The candidate worker's confinement (the report_sandbox slot). */
typedef struct {
    int seccomp;                        /* a seccomp filter confines it */
    int gpu_kernel_mode, gpu_host_mode; /* the worker runs a GPU build of that mode */
} kf_sandbox_out;

struct kf_backend_i {
    int api_version;       /* KF_BACKEND_API_VERSION */
    const char *name;      /* a task's "backend": "c", "cuda" */
    const char *ext;       /* a candidate's file extension, without the dot: "c", "cu" */
    const char *reference; /* the reference's file in a task's directory: "reference.c" */
    /* The language of its sources: a context pack's fence tag, and the name export gives its
     * dispatcher ("c": "the C dispatcher") */
    const char *lang;
    unsigned caps; /* KF_BACKEND_* (registry.h) */
    /* bench: timed rounds that are enough whatever their total time, once bench_min_runs
     * are made too (0: the time decides). A GPU round costs milliseconds of staging and
     * copies around microseconds of kernel. */
    int timing_rounds;
    /* 1: the ceilings slot runs before the timing workers start and the coordinator is
     * pinned (a device the workers would hold), and "ceilings" comes first in a bench
     * result; 0: after, on the coordinator's own CPU, and "ceilings" comes last. */
    int ceilings_early;

    /* ---- mandatory ---- */

    /* Build `text` (from `path`, for messages) with the task's calling convention and
     * the selected parameters into a loadable object under workdir. KF_OK when the
     * compiler ran (whether or not the build succeeded: see out->ok). */
    kf_status (*compile)(kf_backend *b, kf_ctx *ctx, const kf_task *t, const char *path, const char *text,
                         size_t len, const kf_param *params, int nparams, const char *workdir,
                         double timeout_s, kf_build *out);

    /* ---- optional: NULL means what each says ---- */

    /* Adjust o (filled with the session's limits and CPUs) for a worker running build.
     * build NULL asks for a worker started before its build exists (kf_worker_spawn
     * without an object, kf_worker_attach once built): return 1 and set o when this
     * backend can start one, which must then be the kind of worker every build of its
     * runs in; 0 when it cannot. NULL: a CPU worker as o says, never started early. */
    int (*worker_opts)(kf_backend *b, const kf_build *build, kf_worker_opts *o);
    /* Finish staging one call: make the staged data visible to the candidate as a cold
     * call would see it, and set the backend's part of m (a GPU worker's span, launches
     * and KF_RUN_* flags). 0, or -1 with err (the call fails as a crash: a launch
     * expression that cannot be evaluated at this shape). NULL: the staged lines are
     * flushed from every CPU cache level (kf_stage_flush). */
    int (*stage)(kf_backend *b, const kf_build *build, const kf_stage *st, kf_msg_run *m, char *err,
                 size_t n);
    /* The clock that times a call, in ns. NULL: cr->worker_ns, the worker's own clock
     * around the call (cross-checked against the coordinator's by the bench). */
    uint64_t (*clock)(kf_backend *b, const kf_call_result *cr);
    /* The ceilings the roofline is judged against, measured or from a cache, with the
     * timing lock held (ceilings_early says when): their figures into out (zeroed by the
     * caller; its strings borrowed from the answer or ctx), or out->error saying why there
     * are none. Returns what the roofline slot reads (caller frees with free()), or NULL
     * when there are none. NULL: no ceilings, no roofline. */
    void *(*ceilings)(kf_backend *b, kf_ctx *ctx, kf_ceil_out *out);
    /* One timed shape of a task with a cost model: its rates and roofline fraction into
     * out (zeroed by the caller); ceil is the ceilings slot's answer (NULL when there was
     * none). 1 when the time is impossible (why says so: the shape is rejected,
     * timing_mismatch), else 0. NULL: nothing is reported. */
    int (*roofline)(kf_backend *b, const void *ceil, const kf_roof_in *in, kf_roof_out *out, char *why,
                    size_t n);
    /* bench, before the first timed call: whether every call of the comparison is timed
     * under the host protocol (*host_timing) and the baseline as a replayed graph
     * (*base_graph); cand_graph: the candidate launched a graph while it was checked.
     * NULL: neither. */
    void (*plan)(kf_backend *b, const kf_build *cand, const kf_build *base, int cand_graph, int *host_timing,
                 int *base_graph);
    /* bench, after a shape's rounds: how each side reached the device (into out, zeroed
     * by the caller with launches -1) and whether comparing them is fair; an unfair shape
     * wins nothing and stays out of the mean. 1 fair, 0 unfair. NULL: always fair,
     * nothing reported. */
    int (*fair)(kf_backend *b, const kf_build *cand, const kf_launch_seen *cs, const kf_build *base,
                int base_graph, const kf_launch_seen *bs, kf_fair_out *out);
    /* The library policy of build's workers: the vendor libraries in loaded (a worker's
     * mapped files, comma-separated) that build did not declare, ", "-separated into bad;
     * returns how many. loaded NULL: 0 when build's workers are watched at all, -1 when
     * not. NULL: no worker is watched. */
    int (*libraries)(kf_backend *b, const kf_build *build, const char *loaded, char *bad, size_t n);
    /* A built candidate's own fields (its launch mode, its libraries), into out (zeroed
     * by the caller). NULL: none. */
    void (*report_build)(kf_backend *b, const kf_build *build, kf_build_out *out);
    /* The candidate worker's confinement, into out (zeroed by the caller). NULL: a
     * seccomp filter, nothing else. */
    void (*report_sandbox)(kf_backend *b, const kf_build *build, kf_worker *w, kf_sandbox_out *out);
    /* What the first checking call at a shape reported about itself (launch counts,
     * kernel names), into out (zeroed by the caller; its strings borrowed from cr).
     * NULL: nothing. */
    void (*report_call)(kf_backend *b, const kf_build *build, const kf_call_result *cr, kf_call_out *out);
    /* The resource report of a checked candidate (registers, shared memory, occupancy),
     * at the first visible shape: sizes (NULL when they have no extents), the worker's
     * kf_worker_info text and the first call's resident blocks per launch (occ, NULL
     * when unknown), into out (zeroed by the caller; out->reported 0: no report; its
     * strings borrowed from build). NULL: none. */
    void (*resources)(kf_backend *b, const kf_build *build, const kf_task *t, const int64_t *sizes,
                      const char *info, const uint32_t *occ, kf_resources_out *out);
    /* kforge device-info: describe device `device` as one JSON text (caller frees with
     * free()); refresh measures its ceilings again. NULL: this backend has no devices. */
    kf_status (*describe)(kf_backend *b, kf_ctx *ctx, int device, int refresh, char **json);
    /* kforge export: the dispatcher, one source file in this backend's language that calls
     * the winner of each routed shape and w[fallback] elsewhere (w: the run's winners; best:
     * the best kept node per visible shape, nbest of them), into out; its tests and the
     * shapes it could not route into d (zeroed by the caller). KF_EUSAGE with why on ctx
     * when the task cannot have one: *alone set, export writes the winners without it;
     * clear, the export fails. Shared pieces: dispatch.h. NULL: no dispatcher, the
     * winners are exported alone. */
    kf_status (*dispatcher)(kf_backend *b, kf_ctx *ctx, const kf_task *t, const char *run_dir,
                            const kf_winner *w, int nw, int fallback, const kf_best_shape *best, int nbest,
                            kf_buf *out, kf_dispatch_out *d, int *alone);
};

struct kf_backend {
    struct kf_backend_i iface;
    void *context;
};

/* Does the ELF shared object at path export `name` as a function (its dynamic symbol
 * table, what dlsym sees)? 1 yes, 0 no, -1 unreadable (errno from the read) or not a
 * 64-bit ELF (errno ENOEXEC). */
int kf__so_defines(const char *path, const char *name);

kf_status kf_backend_compile(kf_backend *b, kf_ctx *ctx, const kf_task *t, const char *path, const char *text,
                             size_t len, const kf_param *params, int nparams, const char *workdir,
                             double timeout_s, kf_build *out);
void kf_build_free(kf_build *b);

/* The wrappers of the optional slots: each applies the slot's default when it is NULL
 * (backend.h above says which). b must not be NULL. */
void kf_backend_worker_opts(kf_backend *b, const kf_build *build, kf_worker_opts *o);
int kf_backend_starts_early(kf_backend *b, kf_worker_opts *o);
int kf_backend_stage(kf_backend *b, const kf_build *build, const kf_stage *st, kf_msg_run *m, char *err,
                     size_t n);
uint64_t kf_backend_clock(kf_backend *b, const kf_call_result *cr);
int kf_backend_timing_rounds(const kf_backend *b);
int kf_backend_ceilings_early(const kf_backend *b);
int kf_backend_has_ceilings(const kf_backend *b);
void *kf_backend_ceilings(kf_backend *b, kf_ctx *ctx, kf_ceil_out *out);
int kf_backend_roofline(kf_backend *b, const void *ceil, const kf_roof_in *in, kf_roof_out *out, char *why,
                        size_t n);
void kf_backend_plan(kf_backend *b, const kf_build *cand, const kf_build *base, int cand_graph,
                     int *host_timing, int *base_graph);
int kf_backend_fair(kf_backend *b, const kf_build *cand, const kf_launch_seen *cs, const kf_build *base,
                    int base_graph, const kf_launch_seen *bs, kf_fair_out *out);
/* 1 when build's workers are under a library policy (kf_backend_undeclared applies). */
int kf_backend_watches_libraries(kf_backend *b, const kf_build *build);
int kf_backend_undeclared(kf_backend *b, const kf_build *build, const char *loaded, char *bad, size_t n);
/* The report wrappers (and kf_backend_ceilings) zero out first (kf_fair_out's launches: -1). */
void kf_backend_report_build(kf_backend *b, const kf_build *build, kf_build_out *out);
void kf_backend_report_sandbox(kf_backend *b, const kf_build *build, kf_worker *w, kf_sandbox_out *out);
void kf_backend_report_call(kf_backend *b, const kf_build *build, const kf_call_result *cr, kf_call_out *out);
void kf_backend_resources(kf_backend *b, const kf_build *build, const kf_task *t, const int64_t *sizes,
                          const char *info, const uint32_t *occ, kf_resources_out *out);
/* KF_EBACKEND (with why on ctx) for a backend without devices. */
kf_status kf_backend_describe(kf_backend *b, kf_ctx *ctx, int device, int refresh, char **json);
/* 1 when b has a dispatcher slot. */
int kf_backend_has_dispatcher(const kf_backend *b);
/* d zeroed first; KF_EUSAGE with *alone set (and why on ctx) for a backend without a
 * dispatcher; KF_EUSAGE for fallback outside w; KF_ENOMEM when the slot's d ran out of
 * memory. The caller frees d (kf_dispatch_out_free) whatever it returns. */
kf_status kf_backend_dispatcher(kf_backend *b, kf_ctx *ctx, const kf_task *t, const char *run_dir,
                                const kf_winner *w, int nw, int fallback, const kf_best_shape *best,
                                int nbest, kf_buf *out, kf_dispatch_out *d, int *alone);

/* The backends of the build, one line each: X(NAME) for the constructor
 * kf_backend_NAME(void) in src/backend/NAME/, which returns its static kf_backend. The
 * registry (backend.c) lists them in this order. */
#define KF_BACKENDS(X) \
    X(c)               \
    X(cuda)
#define KF_BACKEND_DECLARE(NAME) kf_backend *kf_backend_##NAME(void);
KF_BACKENDS(KF_BACKEND_DECLARE)
#undef KF_BACKEND_DECLARE

#endif
