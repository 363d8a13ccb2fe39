/*
 * run.h - the CUDA backend's run side (run.c): the slots of its vtable that say how a
 * GPU worker is started, how a call is staged and timed, what is fair to compare, and
 * what the result reports; and the pure launch-mode decisions behind them, unit-tested.
 */
#ifndef KF_CUDA_RUN_H
#define KF_CUDA_RUN_H

#include "../backend.h"

/* How one side's calls reach the device, for kforge bench's fairness rule. */
typedef enum {
    KF_MODE_CPU = 0, /* no device (unused by the CUDA backend; "cpu") */
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

/* Evaluate a GPU build's launches at the given sizes (the task's order) into lx[]
 * (grid x y z, block x y z, smem per launch). 0, or -1 with err (a bad expression, a
 * zero or negative dimension, a block over 1024 threads). */
int kf_build_eval_launches(const kf_build *b, const kf_task *t, const int64_t *sizes, uint32_t lx[][7],
                           char *err, size_t n);

/* GPU host mode: CUPTI's counts of one call (launches, graph launches, memory
 * operations, the first kernels' names and which are a library's; not counted without
 * CUPTI), into out. */
void kf__cuda_launch_report(kf_call_out *out, const kf_call_result *cr);
/* The vendor compute libraries in loaded (comma-separated file names) that declared
 * (kforge:link names and DT_NEEDED entries) does not cover, ", "-separated into out;
 * returns how many. */
int kf__cuda_undeclared(const char *loaded, const char *declared, char *out, size_t n);

/* The slots (backend.h says what each does) */
int kf__cuda_worker_opts(kf_backend *b, const kf_build *build, kf_worker_opts *o);
/* A GPU worker's environment lists (kf_worker_opts env_pass, env_settings). */
void kf__cuda_worker_env(kf_worker_opts *o);
int kf__cuda_stage(kf_backend *b, const kf_build *build, const kf_stage *st, kf_msg_run *m, char *err,
                   size_t n);
uint64_t kf__cuda_clock(kf_backend *b, const kf_call_result *cr);
void *kf__cuda_ceilings(kf_backend *b, kf_ctx *ctx, kf_ceil_out *out);
int kf__cuda_roofline(kf_backend *b, const void *ceil, const kf_roof_in *in, kf_roof_out *out, char *why,
                      size_t n);
void kf__cuda_plan(kf_backend *b, const kf_build *cand, const kf_build *base, int cand_graph,
                   int *host_timing, int *base_graph);
int kf__cuda_fair(kf_backend *b, const kf_build *cand, const kf_launch_seen *cs, const kf_build *base,
                  int base_graph, const kf_launch_seen *bs, kf_fair_out *out);
int kf__cuda_libraries(kf_backend *b, const kf_build *build, const char *loaded, char *bad, size_t n);
void kf__cuda_report_build(kf_backend *b, const kf_build *build, kf_build_out *out);
void kf__cuda_report_sandbox(kf_backend *b, const kf_build *build, kf_worker *w, kf_sandbox_out *out);
void kf__cuda_report_call(kf_backend *b, const kf_build *build, const kf_call_result *cr, kf_call_out *out);
void kf__cuda_resources(kf_backend *b, const kf_build *build, const kf_task *t, const int64_t *sizes,
                        const char *info, const uint32_t *occ, kf_resources_out *out);
kf_status kf__cuda_describe(kf_backend *b, kf_ctx *ctx, int device, int refresh, char **json);

#endif
