/*
 * verdict.h - the verdict as a C type: what check, bench and validate decided (accepted
 * or rejected, the reasons), the per-shape records behind it (sizes, kind, status and
 * errors of the check; speedup, interval, win, times, spreads, roofline and fairness of
 * the timing), and what the document reports besides (the build, the sandbox, the
 * libraries loaded, the sanitizer, the timing CPUs, the seconds). The checker and bench
 * fill it; the loop, the Critic, diagnosis, export, distillation and the report read its
 * fields.
 *
 * JSON stays at the edges: the CLI's document (docs/cli.md), the store's verdict_json
 * and shapes_json columns, EXPORT.json. verdict.c alone knows the key names: the
 * document and the columns become a struct kf_verdict through kf_verdict_from_json, and
 * the document, the columns and summaries are written by the kf_verdict_*_json
 * functions.
 *
 * What a backend reports of a build, a worker, a call or a timed shape (launch modes,
 * launch counts and kernels, rates and the roofline: the kf_*_out types of
 * src/backend/backend.h) is typed too: the kf_verdict_set_* setters copy it into the
 * verdict's fields, the device's ceilings (kf_ceil_out) and the resource report
 * (kf_resources_out) included: no report of a backend reaches the document as an object
 * of its own. A key this build does not know is kept as an extra, with the typed field it
 * followed (in the document, the sandbox report, the ceilings, the resources and each of
 * their records), and written back there, so the document keeps its order.
 * Its name is the struct tag (kf_verdict alone is the accepted/rejected enum of kforge.h).
 */
#ifndef KF_VERDICT_H
#define KF_VERDICT_H

#include "kforge.h"

#include "../backend/backend.h"

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define KF_VERDICT_MAX_SIZES 16

/* A shape's sizes in the document's order ({"rows": 64, "cols": 8}). The names are
 * borrowed from the verdict that holds the sizes (its pool): a kf_verdict_sizes does
 * not outlive its verdict. */
typedef struct {
    int n;
    const char *name[KF_VERDICT_MAX_SIZES];
    int64_t v[KF_VERDICT_MAX_SIZES];
} kf_verdict_sizes;

/* A shape record's kind and status in the check ("kind", "status"; a timed record has
 * neither). A kind this build does not know reads as edge. */
typedef enum { KF_VSHAPE_NO_KIND, KF_VSHAPE_VISIBLE, KF_VSHAPE_HIDDEN, KF_VSHAPE_EDGE } kf_vshape_kind;
typedef enum {
    KF_VSHAPE_NO_STATUS,
    KF_VSHAPE_PASSED,
    KF_VSHAPE_FAILED,
    KF_VSHAPE_SKIPPED,
    KF_VSHAPE_OTHER /* not_run, or a status this build does not know */
} kf_vshape_status;

/* A key the verdict does not type, its value (owned), and the typed field it follows
 * (a KF_VAT_* or a field's slot; 0: first). */
typedef struct {
    int at;
    const char *key; /* from the pool */
    json_t *val;
} kf_verdict_extra;

typedef struct {
    int n, cap;
    kf_verdict_extra *e;
} kf_verdict_extras;

/* The backend's ceilings ("ceilings", from kf_ceil_out): which fields are present
 * (kf_verdict_ceilings.has), in the document's order. */
enum {
    KF_VC_BYTES = 1u << 0,        /* bytes_per_s */
    KF_VC_FLOPS = 1u << 1,        /* flops_per_s */
    KF_VC_CORES = 1u << 2,        /* cores */
    KF_VC_TENSOR = 1u << 3,       /* tensor_flops_per_s */
    KF_VC_THEORY_BYTES = 1u << 4, /* theoretical_bytes_per_s */
    KF_VC_PEAK = 1u << 5,         /* peak_flops_per_s */
    KF_VC_L2 = 1u << 6,           /* l2_bytes */
    KF_VC_DEVICE = 1u << 7,       /* device */
    KF_VC_UUID = 1u << 8,         /* uuid */
    KF_VC_SOURCE = 1u << 9,       /* source */
    KF_VC_ERROR = 1u << 10,       /* error: there are none, and why */
};
typedef struct {
    unsigned has; /* KF_VC_* */
    double bytes_per_s, flops_per_s, tensor_flops_per_s, theoretical_bytes_per_s, peak_flops_per_s;
    int64_t cores, l2_bytes;
    const char *device, *uuid, *source, *error; /* from the pool */
    kf_verdict_extras extra;                    /* keys this build does not type */
} kf_verdict_ceilings;

/* The backend's resource report ("resources", from kf_resources_out): the report, its
 * kernels' and its launches' records, each with the fields present (has) in the
 * document's order. */
enum {
    KF_VR_ARCH = 1u << 0,
    KF_VR_KERNELS = 1u << 1,
    KF_VR_LAUNCHES = 1u << 2,
    KF_VR_AT = 1u << 3, /* the sizes it was measured at */
};
enum {
    KF_VK_NAME = 1u << 0,        /* kernel */
    KF_VK_REGISTERS = 1u << 1,   /* registers */
    KF_VK_SPILL_STORE = 1u << 2, /* spill_store_bytes */
    KF_VK_SPILL_LOAD = 1u << 3,  /* spill_load_bytes */
    KF_VK_STATIC_SMEM = 1u << 4, /* static_smem_bytes */
    KF_VK_LOCAL = 1u << 5,       /* local_bytes_per_thread */
};
enum {
    KF_VL_KERNEL = 1u << 0,
    KF_VL_GRID = 1u << 1,
    KF_VL_BLOCK = 1u << 2,
    KF_VL_DYNAMIC_SMEM = 1u << 3, /* dynamic_smem_bytes */
    KF_VL_BLOCKS_PER_SM = 1u << 4,
    KF_VL_OCCUPANCY = 1u << 5,
};
typedef struct {
    unsigned has; /* KF_VK_* */
    const char *name;
    int64_t registers, spill_store_bytes, spill_load_bytes, static_smem_bytes, local_bytes_per_thread;
    kf_verdict_extras extra;
} kf_verdict_kernel_res;
typedef struct {
    unsigned has; /* KF_VL_* */
    const char *kernel;
    int64_t grid[3], block[3], dynamic_smem_bytes, blocks_per_sm;
    double occupancy;
    kf_verdict_extras extra;
} kf_verdict_launch_res;
typedef struct {
    unsigned has; /* KF_VR_* */
    const char *arch;
    int nkernels;
    kf_verdict_kernel_res *kernels;
    int nlaunches;
    kf_verdict_launch_res *launches;
    kf_verdict_sizes at;
    kf_verdict_extras extra;
} kf_verdict_resources;

/* Names listed in a shape record (a call's kernels), from the pool. */
#define KF_VERDICT_MAX_NAMES KF_CALL_MAX_KERNELS
typedef struct {
    int n;
    const char *s[KF_VERDICT_MAX_NAMES];
} kf_verdict_names;

/* Which optional fields of a shape record are present (kf_verdict_shape.has). */
enum {
    KF_VS_SPEEDUP = 1u << 0,
    KF_VS_CI95 = 1u << 1,
    KF_VS_WIN = 1u << 2,
    KF_VS_CANDIDATE_NS = 1u << 3,
    KF_VS_BASELINE_NS = 1u << 4,
    KF_VS_ROOFLINE = 1u << 5,
    KF_VS_FAIR = 1u << 6,
    KF_VS_SPEEDUP_FIRST = 1u << 7,
    KF_VS_CI95_FIRST = 1u << 8,
    KF_VS_MAX_ABS_ERR = 1u << 9,
    KF_VS_PLAIN_ABS_ERR = 1u << 10,
    KF_VS_MAX_REL_ERR = 1u << 11,
    KF_VS_CALLS = 1u << 12,
    KF_VS_BEST_NS = 1u << 13,
    KF_VS_WAITED = 1u << 14, /* baseline_waited_rounds, unclean_rounds (a device's) */
    KF_VS_GPU_SHARED = 1u << 15,
    KF_VS_GAPS = 1u << 16, /* candidate_gap_ns, baseline_gap_ns */
    KF_VS_NOISE = 1u << 17,
    KF_VS_SLOWER = 1u << 18,
    KF_VS_RUNS = 1u << 19,
    KF_VS_SPREADS = 1u << 20,      /* candidate_spread, baseline_spread */
    KF_VS_WALLS = 1u << 21,        /* candidate_wall_ns, baseline_wall_ns */
    KF_VS_REFERENCE_MS = 1u << 22, /* validate: the reference's fastest call there */
    /* the backend's reports (backend.h's kf_call_out, kf_fair_out, kf_roof_out) */
    KF_VS_COUNTED = 1u << 23,       /* graph_launches, memory_ops, kernels, library_kernels */
    KF_VS_UNCOUNTED = 1u << 24,     /* "launch_count": null (launch_note says why) */
    KF_VS_LAUNCHES = 1u << 25,      /* launches_per_call (the check's, or the timing's) */
    KF_VS_LIBRARY_COUNT = 1u << 26, /* library_kernel_count */
    KF_VS_LAUNCH_MODE = 1u << 27,   /* candidate_launch_mode, baseline_launch_mode */
    KF_VS_RATES = 1u << 28,         /* gflops, gbytes_per_s */
    KF_VS_BASE_RATE = 1u << 29,     /* baseline_gbytes_per_s */
    KF_VS_FLOOR = 1u << 30,         /* floor_ns (roofline_flops_ceiling with it) */
};

/* One shape record: of the check (kind, status, errors) or of the timing (speedup and
 * the rest, present when has says so; a timed record has KF_VS_SPEEDUP). */
typedef struct {
    kf_verdict_sizes sizes;
    kf_vshape_kind kind;
    kf_vshape_status status;
    int maximum;                /* the maximum-sizes shape (spiked or extreme inputs) */
    unsigned has;               /* KF_VS_* */
    const char *warning, *note; /* validate's warning, a skipped shape's note (NULL: none) */
    double reference_ms;        /* validate: the reference's fastest call (KF_VS_REFERENCE_MS) */
    int64_t calls, best_ns;     /* the check's calls and its fastest call's worker time */
    double max_abs_err, plain_abs_err, max_rel_err;
    int64_t waited_rounds, unclean_rounds; /* rounds the baseline waited for an idle device */
    double candidate_gap_ns, baseline_gap_ns;
    double speedup; /* median paired ratio, baseline over candidate */
    double noise;
    double ci95[2]; /* its 95% interval */
    int win;        /* the interval clears 1 and the win floor */
    int slower;
    int64_t runs;
    double candidate_ns, baseline_ns;
    double candidate_spread, baseline_spread, candidate_wall_ns, baseline_wall_ns;
    double roofline_fraction;
    int fair;                /* 0: the comparison was not fair (fair_reason says why) */
    const char *fair_reason; /* NULL when none; from the pool */
    const char *fair_note;
    double speedup_first; /* a kept node's first timing, when the Critic's was lower */
    double ci95_first[2];
    /* the backend's report of the check's first call at this shape (GPU host mode) */
    const char *launch_note; /* why launches were not counted (KF_VS_UNCOUNTED) */
    int64_t launches_per_call, graph_launches, memory_ops, library_kernel_count;
    kf_verdict_names kernels, library_kernels;
    /* the backend's report of a timed shape: how each side reached the device, and the
     * rates and floor of the roofline */
    const char *candidate_launch_mode, *baseline_launch_mode, *graph_use;
    double gflops, gbytes_per_s, baseline_gbytes_per_s, floor_ns;
    const char *roofline_flops_ceiling;
    kf_verdict_extras extra; /* keys this build does not type */
} kf_verdict_shape;

typedef struct {
    kf_reason code;        /* KF_REASON_COUNT: a name this build does not know, or none */
    const char *code_word; /* that name this build does not know, or NULL; from the pool */
    const char *message;   /* NULL when none; from the pool */
    int has_shape;
    kf_verdict_sizes shape; /* where it was first seen (has_shape) */
    int count;              /* how many times it was seen */
} kf_verdict_reason;

/* A template parameter's value ("params", "baseline_params"): a number or a word. */
typedef struct {
    const char *name, *str; /* str NULL: the integer ival */
    int64_t ival;
} kf_verdict_param;

/* One compute-sanitizer tool's run ("sanitizer"). */
typedef struct {
    const char *tool;
    int ran, has_warnings;
    int64_t errors, warnings, exit, calls;
    double seconds;
    const char *note, *report; /* NULL: none */
} kf_verdict_tool;

struct kf_verdict {
    kf_verdict verdict;       /* accepted, or rejected (any other word too) */
    const char *verdict_word; /* that other word ("error"), or NULL */
    int has_reasons;          /* "reasons" is there (every verdict kforge reaches) */
    int nreasons, capreasons;
    kf_verdict_reason *reasons;
    /* "shapes": a check's records, or a bench's timed ones (the check's are then in
     * checked, has_check) */
    int has_shapes, nshapes, capshapes;
    kf_verdict_shape *shapes;
    int has_check;
    kf_verdict check_verdict; /* the check's own verdict, in a bench's "check" */
    int has_check_seconds;
    double check_seconds;
    int nchecked;
    kf_verdict_shape *checked;
    int has_untimed;
    int nuntimed; /* visible shapes outside the candidate's kforge:when domain */
    kf_verdict_sizes *untimed;
    int has_speedup;
    double speedup;                                      /* geometric mean over the timed shapes */
    const char *task, *fingerprint, *when, *compile_log; /* NULL when absent; from the pool */
    const char *candidate;                               /* the candidate's path (NULL: validate) */
    int has_when;            /* "when" is there (null when the candidate claims every shape) */
    int has_params, nparams; /* the candidate's template values */
    kf_verdict_param *params;
    int has_seed;
    int64_t seed;
    int has_compile, compile_ok, compile_cached;
    double compile_seconds;
    int has_sandbox;
    int64_t landlock_abi, check_cpus, parallel_call_cpus, interleave_ns, race_calls;
    int mseal, frozen;
    int has_seccomp, seccomp, gpu_kernel_mode, gpu_host_mode; /* the backend's (kf_sandbox_out) */
    kf_verdict_extras sandbox_extra;                          /* keys this build does not type */
    /* the backend's report of the build (kf_build_out): its launch mode ("launch_mode"),
     * and its declared libraries ("libraries", has_build_libraries) */
    const char *launch_mode;
    int has_build_libraries, nbuild_libraries;
    const char **build_libraries;
    int has_libraries, libraries_null, libraries_late; /* late: after "resources" */
    int nlibraries;
    const char **libraries; /* "libraries_loaded", each once; from the pool */
    int has_resources;
    kf_verdict_resources resources; /* the backend's resource report, its "at" included */
    const char *candidate_output;
    int has_sanitizer, ntools;
    kf_verdict_tool *tools;
    const char *baseline; /* bench: "reference" or the --vs file */
    int has_baseline_params, nbaseline_params;
    kf_verdict_param *baseline_params;
    int has_ceilings;
    kf_verdict_ceilings ceilings; /* the backend's ceilings report */
    json_t *reference_time; /* validate: the reference's slowest shape (owned; NULL: none) */
    int ceilings_late;      /* written after the geomean (measured on the timing CPU) */
    int has_timing_cpus, coordinator_pinned;
    int64_t worker_cpus;
    int has_wins;
    int64_t wins;
    int has_seconds;
    double seconds;
    kf_verdict_extras extra; /* top-level keys this build does not type */
    int oom;                 /* a setter ran out of memory: the verdict is not whole */
    char **pool;             /* the strings above point into it */
    int npool, cappool;
};

/* A verdict from its document: a `kforge check --json` or `bench --json` object, or an
 * array of shape records (a node's shapes_json column: into shapes). *v is always
 * initialised (free it with kf_verdict_free); 0, or -1 when doc is NULL or neither an
 * object nor an array, or out of memory (*v then holds what was read). */
int kf_verdict_from_json(const json_t *doc, struct kf_verdict *v);
/* The same from JSON text (a store column; NULL: -1 with an empty verdict). */
int kf_verdict_from_text(const char *text, struct kf_verdict *v);
/* An empty verdict (rejected, nothing in it), as kf_verdict_free leaves one. */
void kf_verdict_init(struct kf_verdict *v);
void kf_verdict_free(struct kf_verdict *v);

/* ---- filling: the checker's and bench's setters. Each records a failed allocation in
 * v->oom (the verdict is then not whole: no document may be made from it). */

/* A copy of s in v's pool, as the document can hold it (not UTF-8: printable ASCII
 * kept, every other byte '?'); NULL: "" . NULL when out of memory. */
const char *kf_verdict_str(struct kf_verdict *v, const char *s);
/* Sizes from n names (copied to the pool) and values. */
void kf_verdict_sizes_set(struct kf_verdict *v, kf_verdict_sizes *s, int n, const char *const *names,
                          const int64_t *vals);
/* A new empty record at the end of "shapes" (valid until the next one is added), or NULL. */
kf_verdict_shape *kf_verdict_add_shape(struct kf_verdict *v);
/* A reason at the end of the list, count 1, message copied (kf_verdict_str), shape (may be
 * NULL) copied; NULL when out of memory. */
kf_verdict_reason *kf_verdict_add_reason(struct kf_verdict *v, kf_reason code, const kf_verdict_sizes *shape,
                                         const char *message);
/* A template value of the candidate's (baseline 0) or the --vs baseline's (1): the word
 * str, or the integer ival when str is NULL. 0, or -1 when out of memory. */
int kf_verdict_add_param(struct kf_verdict *v, int baseline, const char *name, const char *str, int64_t ival);
/* "libraries_loaded": unknown (null, unless a list is there already), a list (empty at
 * first), name into the list unless it is there (0 or -1). */
void kf_verdict_libraries_unknown(struct kf_verdict *v);
void kf_verdict_libraries_known(struct kf_verdict *v);
int kf_verdict_add_library(struct kf_verdict *v, const char *name);
/* A sanitizer tool's record at the end of "sanitizer" (fill its fields), or NULL. */
kf_verdict_tool *kf_verdict_add_tool(struct kf_verdict *v, const char *tool);
/* The backend's reports (backend.h) into v and its record s: a build's, the candidate
 * worker's confinement, the first checking call's at s, a timed shape's launch modes
 * and fairness (fair: the slot's answer), a timed shape's rates and roofline. Strings
 * are copied. 0, or -1 when out of memory. */
int kf_verdict_set_build(struct kf_verdict *v, const kf_build_out *b);
void kf_verdict_set_sandbox(struct kf_verdict *v, const kf_sandbox_out *sb);
int kf_verdict_set_call(struct kf_verdict *v, kf_verdict_shape *s, const kf_call_out *c);
int kf_verdict_set_fair(struct kf_verdict *v, kf_verdict_shape *s, const kf_fair_out *f, int fair);
int kf_verdict_set_roof(struct kf_verdict *v, kf_verdict_shape *s, const kf_roof_out *r);
/* A roofline slot's answer as the document's keys (gflops, gbytes_per_s, ...,
 * roofline_fraction, floor_ns) onto o: a pipeline's step report (src/system/). */
void kf_verdict_roof_keys(json_t *o, const kf_roof_out *r);
/* The backend's resource report (nothing when r->reported is 0), measured at the sizes
 * at (copied). Strings are copied. 0, or -1 when out of memory. */
int kf_verdict_set_resources(struct kf_verdict *v, const kf_resources_out *r, const kf_verdict_sizes *at);
/* The backend's ceilings (the document then has "ceilings", however empty), measured
 * before the timing (late 0) or on the timing CPU (1). Strings are copied. 0 or -1. */
int kf_verdict_set_ceilings(struct kf_verdict *v, const kf_ceil_out *c, int late);
/* A bench: the check's verdict and records move under "check", "shapes" starts empty for
 * the timed records. */
void kf_verdict_to_bench(struct kf_verdict *v, double check_seconds);

/* Every real of v as a reader of its document written with `digits` significant digits
 * sees it (kf_result_json writes six). */
void kf_verdict_round(struct kf_verdict *v, int digits);
double kf_verdict_real(double x, int digits);

/* v as its document: `kforge check/bench/validate --json`'s, every field in the order
 * and under the keys the CLI writes (docs/cli.md). The reals are v's, whole (the CLI's
 * text has six digits). Caller decrefs; NULL when out of memory (a field that could not
 * be added shows in kf__json_failures()). */
json_t *kf_verdict_to_json(const struct kf_verdict *v);
/* The timed records of v (those with a speedup) as a node's shapes_json keeps them:
 * sizes, speedup, ci95, win, candidate_ns, baseline_ns, roofline_fraction, fair,
 * speedup_first, ci95_first, each when present: the array (caller decrefs), or its
 * compact text (caller frees). NULL when out of memory. */
json_t *kf_verdict_shapes_json(const struct kf_verdict *v);
char *kf_verdict_shapes_text(const struct kf_verdict *v);
/* The verdict as EXPORT.json's verification keeps it: verdict, reasons (code and
 * message), the timed shapes (sizes, speedup, ci95, win) and the speedup (null when
 * none). Caller decrefs. */
json_t *kf_verdict_summary_json(const struct kf_verdict *v);
/* {"sizes": ..., "speedup": ...}: one timed shape as the Critic's re-timings list it. */
json_t *kf_verdict_retimed_json(const kf_verdict_shape *s);

/* validate's "reference_time": the reference's slowest call, where (the sizes' names are
 * borrowed from v), and which kind of shape that is, with its warning (NULL: none). */
typedef struct {
    double slowest_ms;
    kf_verdict_sizes at;
    const char *kind, *warning;
} kf_verdict_reftime;
/* 1 and *t filled when v has a reference_time, else 0. */
int kf_verdict_reference_time(const struct kf_verdict *v, kf_verdict_reftime *t);

/* A reason's code as its document names it: the vocabulary's name, the name a newer
 * build wrote (code_word), or NULL when the record had none. */
const char *kf_verdict_reason_code(const kf_verdict_reason *r);
/* The ceilings report as the document holds it, its extras in place (caller decrefs; NULL
 * when out of memory): the same object whichever document it was read from. */
json_t *kf_verdict_ceilings_json(const kf_verdict_ceilings *c);

/* The check's records: checked for a bench verdict, else shapes. *n gets their count. */
const kf_verdict_shape *kf_verdict_check_shapes(const struct kf_verdict *v, int *n);
/* The first shape record of v with these sizes, or NULL. */
const kf_verdict_shape *kf_verdict_find(const struct kf_verdict *v, const kf_verdict_sizes *sizes);
/* 1 when a and b name the same sizes with the same values (in any order). */
int kf_verdict_sizes_equal(const kf_verdict_sizes *a, const kf_verdict_sizes *b);
/* The value of the size called name, or 0 when there is none. */
int64_t kf_verdict_size(const kf_verdict_sizes *s, const char *name);
/* The sizes as a document object (caller decrefs). */
json_t *kf_verdict_sizes_json(const kf_verdict_sizes *s);
/* The sizes as "n=64<sep>m=8" into out, cut at a whole item. */
void kf_verdict_sizes_text(const kf_verdict_sizes *s, const char *sep, char *out, size_t n);

#endif
