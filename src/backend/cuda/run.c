/*
 * run.c - the CUDA backend's run side: the vtable slots that say how its builds run.
 *
 * A build runs in a GPU worker (gpu_worker.c), started before the candidate is built so
 * the driver's and the context's set-up overlaps the compile. A call is staged by
 * handing the worker the arena span it copies to the device and, in kernel mode, the
 * launches evaluated at the call's sizes; the device's own L2 is flushed in the worker.
 * A call is timed by its launches' CUDA events (dev_ns). The roofline is the device's
 * measured ceilings (device.c), with a hard floor no honest kernel beats. A comparison is
 * fair when both sides reach the device the same way (kernel by kernel, or as a graph).
 * Host-mode workers are watched for vendor libraries the candidate did not declare. The
 * result reports each build's launch mode, libraries, confinement, launch counts and
 * resources. What a GPU cannot be asked here (no device) is never guessed: the slots only
 * read what the build and the worker reported.
 */
#define _GNU_SOURCE
#include "run.h"
#include "cupti.h"
#include "device.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* 1 for a GPU artifact (kernel or host mode), which a GPU worker runs. */
static int gpu_build(const kf_build *b) { return b && (b->nlaunch > 0 || b->host); }

int kf_build_eval_launches(const kf_build *b, const kf_task *t, const int64_t *sizes, uint32_t lx[][7],
                           char *err, size_t n) {
    const char *names[64];
    int64_t vals[64];
    int nv = 0;
    for (int i = 0; i < t->nsizes && nv < 64; i++, nv++) names[nv] = t->size_names[i], vals[nv] = sizes[i];
    for (int i = 0; i < b->nparams && nv < 64; i++, nv++) names[nv] = b->pnames[i], vals[nv] = b->pvals[i];
    kf_vars v = {names, vals, nv};
    static const char *const what[7] = {"grid.x",  "grid.y",  "grid.z", "block.x",
                                        "block.y", "block.z", "smem"};
    for (int i = 0; i < b->nlaunch; i++) {
        int64_t threads = 1;
        for (int d = 0; d < 7; d++) {
            int64_t x = d == 6 ? 0 : 1;
            char e[256];
            if (b->launch[i].dim[d] && kf_expr_eval(b->launch[i].dim[d], &v, &x, e, sizeof e)) {
                snprintf(err, n, "line %d: kforge:launch %s: %s", b->launch[i].line, what[d], e);
                return -1;
            }
            int64_t lim = d == 6 ? (int64_t)1 << 30 : d == 0 ? INT32_MAX : d < 3 ? 65535 : 1024;
            if (x < (d == 6 ? 0 : 1) || x > lim) {
                snprintf(err, n, "line %d: kforge:launch %s = %lld is out of range [%d, %lld]",
                         b->launch[i].line, what[d], (long long)x, d == 6 ? 0 : 1, (long long)lim);
                return -1;
            }
            if (d >= 3 && d < 6) threads *= x;
            lx[i][d] = (uint32_t)x;
        }
        if (threads > 1024) {
            snprintf(err, n, "line %d: kforge:launch block has %lld threads (at most 1024)",
                     b->launch[i].line, (long long)threads);
            return -1;
        }
    }
    return 0;
}

const char *kf_launch_mode_name(kf_launch_mode m) {
    static const char *const n[] = {"cpu", "kernel", "host", "graph"};
    return (unsigned)m < 4 ? n[m] : "?";
}

int kf_launch_host_timing(const kf_build *a, const kf_build *b) { return (a && a->host) || (b && b->host); }

int kf_launch_fair(kf_launch_mode cand, kf_launch_mode base, int graph_known, char *why, size_t n) {
    if (n) why[0] = 0;
    if (cand == KF_MODE_GRAPH && base != KF_MODE_GRAPH) {
        snprintf(why, n,
                 "the candidate replays a CUDA graph and the baseline is launched %s, "
                 "so the launch overhead the graph saves is not a kernel speedup",
                 base == KF_MODE_HOST ? "by its own host code (which kforge cannot capture as a graph)"
                                      : "kernel by kernel (no graph use was seen during the check)");
        return 0;
    }
    if (cand == KF_MODE_HOST && !graph_known)
        snprintf(why, n,
                 "graph use unknown (CUPTI not available): a speedup may include launch "
                 "overhead saved by a CUDA graph");
    return 1;
}

void kf__cuda_launch_report(kf_call_out *out, const kf_call_result *cr) {
    out->reported = 1;
    if (!cr->cupti) {
        out->note = "CUPTI not available: launches not counted";
        return;
    }
    out->counted = 1;
    out->launches = cr->nlaunch;
    out->graph_launches = cr->ngraph;
    out->memory_ops = cr->nmemop;
    out->nkernels = cr->nnames < KF_CALL_MAX_KERNELS ? cr->nnames : KF_CALL_MAX_KERNELS;
    for (int i = 0; i < out->nkernels; i++) {
        out->kernels[i] = cr->names[i];
        out->library[i] = kf_cupti_is_library(cr->names[i]) != 0;
    }
    out->library_kernels = cr->nlib;
}

int kf__cuda_undeclared(const char *loaded, const char *declared, char *out, size_t n) {
    static const char *const vendor[] = {"libcublasLt", "libcublas",   "libcudnn", "libcufft",    "libcurand",
                                         "libcusparse", "libcusolver", "libnccl",  "libcutensor", "libnvblas",
                                         "libnpp",      "libnvjpeg",   NULL};
    out[0] = 0;
    int cnt = 0;
    char *dup = kf__strdup(loaded ? loaded : ""), *save = NULL;
    for (char *l = dup ? strtok_r(dup, ",", &save) : NULL; l; l = strtok_r(NULL, ",", &save)) {
        int v = -1;
        for (int i = 0; vendor[i] && v < 0; i++)
            if (!strncmp(l, vendor[i], strlen(vendor[i]))) v = i;
        if (v < 0) continue;
        /* declared: named by kforge:link ("cublas") or DT_NEEDED ("libcublas.so.13");
         * cublasLt comes with cublas (libcublas needs it) */
        char name[64];
        snprintf(name, sizeof name, "%s", vendor[v] + 3);
        const char *d = declared ? declared : "";
        int ok = strstr(d, vendor[v]) != NULL;
        for (const char *q = d; !ok && (q = strstr(q, name)); q++) {
            size_t nl = strlen(name);
            ok = (q == d || q[-1] == ',') && (q[nl] == 0 || q[nl] == ',');
        }
        if (!ok && v == 0) ok = strstr(d, "cublas") != NULL;
        if (ok) continue;
        size_t o = strlen(out);
        snprintf(out + o, n - o, "%s%s", o ? ", " : "", l);
        cnt++;
    }
    free(dup);
    return cnt;
}

/* ---- the slots ---------------------------------------------------------------------- */

/* What of kforge's environment a GPU worker gets: the devices the user chose, and where
 * the driver and CUPTI are and the seccomp switch (docs/cuda.md), as settings. */
static const char *const gpu_env_pass[] = {"CUDA_VISIBLE_DEVICES", NULL};
static const char *const gpu_env_settings[] = {"KFORGE_LIBCUDA", "KFORGE_GPU_SECCOMP", "KFORGE_LIBCUPTI",
                                               NULL};

void kf__cuda_worker_env(kf_worker_opts *o) {
    o->env_pass = gpu_env_pass;
    o->env_settings = gpu_env_settings;
}

int kf__cuda_worker_opts(kf_backend *b, const kf_build *build, kf_worker_opts *o) {
    (void)b;
    /* before the build: the worker every build of this backend runs in */
    o->device = build ? gpu_build(build) : 1;
    if (o->device) kf__cuda_worker_env(o);
    if (o->device && o->start_timeout_s < 60) o->start_timeout_s = 60; /* driver and context set-up */
    return 1;
}

int kf__cuda_stage(kf_backend *b, const kf_build *build, const kf_stage *st, kf_msg_run *m, char *err,
                   size_t n) {
    (void)b;
    if (!gpu_build(build)) {
        kf_stage_flush(st);
        return 0;
    }
    /* a GPU worker: the span it copies, the launches (none in host mode: the candidate's
     * kforge_launch makes them); L2 is flushed in the worker */
    m->span_lo = st->lay->lo;
    m->span_hi = st->lay->end;
    uint32_t lx[KF_MAX_LAUNCH][7];
    if (build->nlaunch && kf_build_eval_launches(build, st->t, st->ex->size, lx, err, n)) return -1;
    m->nlaunch = (uint32_t)build->nlaunch;
    for (int l = 0; l < build->nlaunch; l++) {
        m->kernel[l] = (uint32_t)build->launch[l].kernel;
        memcpy(m->dims[l], lx[l], sizeof m->dims[l]);
    }
    m->flags |= st->flags & (KF_RUN_FLUSH_L2 | KF_RUN_WAIT_IDLE);
    if ((st->flags & KF_RUN_HOST_TIMING) || build->host) m->flags |= KF_RUN_HOST_TIMING;
    if ((st->flags & KF_RUN_GRAPH) && build->nlaunch) m->flags |= KF_RUN_GRAPH;
    if (st->flags & KF_RUN_PRECISE) { /* under compute-sanitizer: one allocation per buffer */
        m->flags |= KF_RUN_PRECISE;
        for (int i = 0; i < st->t->nargs; i++) {
            const kf_arg *a = &st->t->args[i];
            m->len[i] = a->is_buffer ? st->ex->bytes[i] : 0;
            m->io[i] = a->io == KF_IO_IN    ? KF_IO_ARG_IN
                       : a->io == KF_IO_OUT ? KF_IO_ARG_OUT
                                            : KF_IO_ARG_INOUT;
        }
    }
    return 0;
}

/* the launches' event time; the host spans are cross-checked per call */
uint64_t kf__cuda_clock(kf_backend *b, const kf_call_result *cr) {
    (void)b;
    return cr->dev_ns;
}

/* The device's ceilings (kforge device-info): from the cache, or measured now, while no
 * worker holds the device and before the coordinator is pinned; without them bench
 * still reports GB/s and GFLOP/s. */
void *kf__cuda_ceilings(kf_backend *b, kf_ctx *ctx, kf_ceil_out *out) {
    (void)b;
    kf_devinfo *gpu = malloc(sizeof *gpu);
    if (gpu && kf_device_get(ctx, 0, 0, gpu) == KF_OK) {
        kf_device_theory th;
        kf_device_theory_of(gpu, &th);
        out->has = KF_CEIL_RATES | KF_CEIL_DEVICE;
        out->bytes_per_s = gpu->copy_bytes_per_s;
        out->flops_per_s = gpu->fp32_flops_per_s;
        out->tensor_flops_per_s = gpu->tensor_flops_per_s;
        out->theoretical_bytes_per_s = th.mem_bytes_per_s;
        out->peak_flops_per_s = th.peak;
        out->l2_bytes = gpu->l2_bytes;
        out->device = gpu->name;
        out->uuid = gpu->uuid;
        out->source = gpu->from_cache ? "cache" : "measured";
        return gpu;
    }
    out->error = gpu ? kf_errmsg(ctx) : "out of memory";
    free(gpu);
    return NULL;
}

/* Rates from the task's cost model; the roofline when the device's ceilings are known. */
int kf__cuda_roofline(kf_backend *b, const void *ceil, const kf_roof_in *in, kf_roof_out *out, char *why,
                      size_t n) {
    (void)b;
    const kf_devinfo *dev = ceil;
    const kf_task *t = in->t;
    double fl = in->flops, by = in->bytes, cmed = in->cand_ns;
    out->has = KF_ROOF_RATES | KF_ROOF_BASE_RATE;
    out->gflops = fl / cmed;
    out->gbytes_per_s = by / cmed;
    out->baseline_gbytes_per_s = by / in->base_ns;
    int half = 0;
    for (int i = 0; i < t->nargs; i++)
        half |= t->args[i].is_buffer && (t->args[i].type == KF_T_F16 || t->args[i].type == KF_T_BF16);
    kf_device_roof roof = {0};
    int bad = 0;
    if (dev && kf_device_roofline(dev, fl, by, half, cmed, &roof)) {
        snprintf(why, n,
                 "impossible: %.0f ns measured, but %.3g bytes (%.3g beyond the L2) "
                 "at %.3g B/s and %.3g FLOP at %.3g FLOP/s (the device's best, with "
                 "margin) take at least %.0f ns; or the task's cost model "
                 "overstates the work",
                 cmed, by, roof.hard_bytes, roof.hard_bw, fl, roof.hard_flops, roof.floor_ns);
        bad = 1;
    }
    if (dev && roof.tmin_ns > 0) {
        out->has |= KF_ROOF_FRACTION | KF_ROOF_FLOOR;
        out->fraction = roof.tmin_ns / cmed;
        out->flops_ceiling = roof.flops_ceiling;
        out->floor_ns = roof.floor_ns;
    }
    return bad;
}

/* One timing protocol for both sides: host mode on either side puts a device-wide
 * synchronise inside both timed spans. A candidate that replayed CUDA graphs in its
 * check is compared with a baseline replaying a graph of its own launches (kernel mode;
 * a host-mode baseline cannot be captured, and the shapes are then marked unfair). */
void kf__cuda_plan(kf_backend *b, const kf_build *cand, const kf_build *base, int cand_graph,
                   int *host_timing, int *base_graph) {
    (void)b;
    *base_graph = cand_graph && base->nlaunch > 0;
    *host_timing = kf_launch_host_timing(cand, base);
}

/* the launch modes, and whether comparing them is fair (docs/cuda.md) */
int kf__cuda_fair(kf_backend *b, const kf_build *cand, const kf_launch_seen *cs, const kf_build *base,
                  int base_graph, const kf_launch_seen *bs, kf_fair_out *out) {
    (void)b;
    if (!gpu_build(cand)) return 1;
    kf_launch_mode cm = cand->host ? (cs->graph ? KF_MODE_GRAPH : KF_MODE_HOST) : KF_MODE_KERNEL;
    kf_launch_mode bm = base->host   ? (bs->graph ? KF_MODE_GRAPH : KF_MODE_HOST)
                        : base_graph ? KF_MODE_GRAPH
                                     : KF_MODE_KERNEL;
    int fair = kf_launch_fair(cm, bm, !cand->host || cs->known, out->note, sizeof out->note);
    out->reported = 1;
    out->cand_mode = kf_launch_mode_name(cm);
    out->base_mode = kf_launch_mode_name(bm);
    if (cand->host) {
        out->graph_use = !cs->known ? "unknown" : cs->graph ? "yes" : "no";
        out->launches = cs->launches;
    }
    return fair;
}

/* Host mode runs the candidate's own host code: kforge:link allows cuBLAS and cuBLASLt,
 * and any other vendor library it maps is loaded behind the allow-list's back. */
int kf__cuda_libraries(kf_backend *b, const kf_build *build, const char *loaded, char *bad, size_t n) {
    (void)b;
    if (!build->host) return -1;
    return loaded ? kf__cuda_undeclared(loaded, build->libraries, bad, n) : 0;
}

void kf__cuda_report_build(kf_backend *b, const kf_build *build, kf_build_out *out) {
    (void)b;
    if (!gpu_build(build)) return;
    out->launch_mode = build->host ? "host" : "kernel";
    if (build->host) out->libraries = build->libraries ? build->libraries : "";
}

/* A GPU kernel-mode worker runs no candidate host code; it has no seccomp filter or
 * Landlock (the driver needs its devices), only its own uid and rlimits. */
void kf__cuda_report_sandbox(kf_backend *b, const kf_build *build, kf_worker *w, kf_sandbox_out *out) {
    (void)b;
    out->seccomp = !gpu_build(build) || (build->host && w && kf_worker_filtered(w));
    out->gpu_kernel_mode = build->nlaunch > 0;
    out->gpu_host_mode = build->host != 0;
}

void kf__cuda_report_call(kf_backend *b, const kf_build *build, const kf_call_result *cr, kf_call_out *out) {
    (void)b;
    if (build->host) kf__cuda_launch_report(out, cr);
}

/* Kernel mode: the per-kernel resource report. Registers, spills and static shared
 * memory from the compiler (or the driver), dynamic shared memory and an occupancy
 * estimate for each launch at the first visible shape. */
void kf__cuda_resources(kf_backend *be, const kf_build *b, const kf_task *t, const int64_t *sizes,
                        const char *info, const uint32_t *occ, kf_resources_out *out) {
    (void)be;
    if (!b->nlaunch) return;
    int maxthr = 0;
    const char *p = strstr(info, "max_threads_per_sm=");
    if (p) maxthr = (int)strtol(p + 19, NULL, 10);
    out->reported = 1;
    out->arch = b->arch;
    for (int k = 0; k < b->nkernels && k < KF_MAX_LAUNCH; k++) {
        const kf_kernel_info *ki = &b->kernels[k];
        kf_res_kernel *o = &out->kernels[out->nkernels++];
        int regs = ki->regs, local = -1, shared = ki->smem_static;
        char key[32];
        snprintf(key, sizeof key, "kernel %d ", k);
        if ((p = strstr(info, key)))
            sscanf(p + strlen(key), "regs=%d local=%d shared=%d", &regs, &local, &shared);
        o->name = ki->name;
        o->registers = regs;
        o->spill_store_bytes = ki->spill_stores;
        o->spill_load_bytes = ki->spill_loads;
        o->static_smem_bytes = shared;
        o->local_bytes_per_thread = local;
    }
    uint32_t lx[KF_MAX_LAUNCH][7];
    char err[256];
    if (sizes && !kf_build_eval_launches(b, t, sizes, lx, err, sizeof err))
        for (int l = 0; l < b->nlaunch && l < KF_MAX_LAUNCH; l++) {
            kf_res_launch *o = &out->launches[out->nlaunches++];
            uint32_t thr = lx[l][3] * lx[l][4] * lx[l][5];
            o->kernel = b->kernels[b->launch[l].kernel].name;
            for (int d = 0; d < 3; d++) o->grid[d] = lx[l][d], o->block[d] = lx[l][3 + d];
            o->dynamic_smem_bytes = lx[l][6];
            if (occ && maxthr > 0) {
                o->occupancy_known = 1;
                o->blocks_per_sm = occ[l];
                o->occupancy = (double)occ[l] * thr / maxthr;
            }
        }
}
