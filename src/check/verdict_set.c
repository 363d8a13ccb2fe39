/*
 * verdict_set.c - the verdict's setters (verdict.h, "filling"): what the checker, bench
 * and validate fill a struct kf_verdict with as they decide, the backend's typed reports
 * (backend.h's kf_*_out) copied into its fields, the move of a check under a bench's
 * "check", and the rounding of its reals as a reader of the document sees them. No key
 * name of the document is here: verdict.c alone knows them.
 */
#include "verdict.h"
#include "verdict_impl.h"

#include "../util/util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- filling ------------------------------------------------------------------------------ */

const char *kf_verdict_str(struct kf_verdict *v, const char *s) {
    json_t *j = kf_text_json(s);
    const char *c = j ? kf__verdict_pool(v, json_string_value(j)) : NULL;
    json_decref(j);
    if (!c) v->oom = 1;
    return c;
}

void kf_verdict_sizes_set(struct kf_verdict *v, kf_verdict_sizes *s, int n, const char *const *names,
                          const int64_t *vals) {
    memset(s, 0, sizeof *s);
    for (int i = 0; i < n && i < KF_VERDICT_MAX_SIZES; i++) {
        if (!(s->name[s->n] = kf__verdict_pool(v, names[i]))) {
            v->oom = 1;
            return;
        }
        s->v[s->n++] = vals[i];
    }
}

kf_verdict_shape *kf_verdict_add_shape(struct kf_verdict *v) {
    v->has_shapes = 1;
    if (v->nshapes == v->capshapes) {
        int cap = v->capshapes ? v->capshapes * 2 : 8;
        kf_verdict_shape *p = realloc(v->shapes, (size_t)cap * sizeof *p);
        if (!p) return v->oom = 1, NULL;
        v->shapes = p, v->capshapes = cap;
    }
    kf_verdict_shape *s = &v->shapes[v->nshapes++];
    memset(s, 0, sizeof *s);
    return s;
}

kf_verdict_reason *kf_verdict_add_reason(struct kf_verdict *v, kf_reason code, const kf_verdict_sizes *shape,
                                         const char *message) {
    if (v->nreasons == v->capreasons) {
        int cap = v->capreasons ? v->capreasons * 2 : 4;
        kf_verdict_reason *p = realloc(v->reasons, (size_t)cap * sizeof *p);
        if (!p) return v->oom = 1, NULL;
        v->reasons = p, v->capreasons = cap;
    }
    kf_verdict_reason *r = &v->reasons[v->nreasons++];
    memset(r, 0, sizeof *r);
    r->code = code;
    r->message = kf_verdict_str(v, message);
    if (shape) r->has_shape = 1, r->shape = *shape;
    r->count = 1;
    return r;
}

int kf_verdict_add_param(struct kf_verdict *v, int baseline, const char *name, const char *str,
                         int64_t ival) {
    kf_verdict_param **a = baseline ? &v->baseline_params : &v->params;
    int *n = baseline ? &v->nbaseline_params : &v->nparams;
    kf_verdict_param *p = realloc(*a, (size_t)(*n + 1) * sizeof *p);
    if (!p) return v->oom = 1, -1;
    *a = p;
    p[*n] = (kf_verdict_param){kf__verdict_pool(v, name), str ? kf_verdict_str(v, str) : NULL, ival};
    if (!p[*n].name) return v->oom = 1, -1;
    (*n)++;
    return 0;
}

/* "libraries_loaded" is there from now on, where it first was */
static void libraries_here(struct kf_verdict *v) {
    if (!v->has_libraries) v->has_libraries = 1, v->libraries_late = v->has_resources;
}

void kf_verdict_libraries_unknown(struct kf_verdict *v) {
    if (!v->has_libraries) v->libraries_null = 1;
    libraries_here(v);
}

void kf_verdict_libraries_known(struct kf_verdict *v) {
    libraries_here(v);
    v->libraries_null = 0;
}

int kf_verdict_add_library(struct kf_verdict *v, const char *name) {
    kf_verdict_libraries_known(v);
    for (int i = 0; i < v->nlibraries; i++)
        if (!strcmp(v->libraries[i], name)) return 0;
    const char **p = realloc(v->libraries, (size_t)(v->nlibraries + 1) * sizeof *p);
    if (!p) return v->oom = 1, -1;
    v->libraries = p;
    if (!(p[v->nlibraries] = kf_verdict_str(v, name))) return -1;
    v->nlibraries++;
    return 0;
}

kf_verdict_tool *kf_verdict_add_tool(struct kf_verdict *v, const char *tool) {
    v->has_sanitizer = 1;
    kf_verdict_tool *p = realloc(v->tools, (size_t)(v->ntools + 1) * sizeof *p);
    if (!p) return v->oom = 1, NULL;
    v->tools = p;
    kf_verdict_tool *t = &p[v->ntools++];
    memset(t, 0, sizeof *t);
    if (!(t->tool = kf__verdict_pool(v, tool))) v->oom = 1;
    return t;
}

/* ---- the backend's reports ---------------------------------------------------------------- */

int kf_verdict_set_build(struct kf_verdict *v, const kf_build_out *b) {
    if (b->launch_mode && !(v->launch_mode = kf__verdict_pool(v, b->launch_mode))) return v->oom = 1, -1;
    if (!b->libraries) return 0;
    v->has_build_libraries = 1;
    char *dup = kf__strdup(b->libraries), *save = NULL;
    if (!dup) return v->oom = 1, -1;
    for (char *l = strtok_r(dup, ",", &save); l; l = strtok_r(NULL, ",", &save)) {
        const char **p = realloc(v->build_libraries, (size_t)(v->nbuild_libraries + 1) * sizeof *p);
        if (!p || !(p[v->nbuild_libraries] = kf_verdict_str(v, l))) {
            if (p) v->build_libraries = p;
            free(dup);
            return v->oom = 1, -1;
        }
        v->build_libraries = p;
        v->nbuild_libraries++;
    }
    free(dup);
    return 0;
}

void kf_verdict_set_sandbox(struct kf_verdict *v, const kf_sandbox_out *sb) {
    v->has_sandbox = v->has_seccomp = 1;
    v->seccomp = sb->seccomp != 0;
    v->gpu_kernel_mode = sb->gpu_kernel_mode != 0;
    v->gpu_host_mode = sb->gpu_host_mode != 0;
}

int kf_verdict_set_call(struct kf_verdict *v, kf_verdict_shape *s, const kf_call_out *c) {
    if (!c->reported) return 0;
    if (!c->counted) {
        s->has |= KF_VS_UNCOUNTED;
        if (c->note && !(s->launch_note = kf_verdict_str(v, c->note))) return -1;
        return 0;
    }
    s->has |= KF_VS_COUNTED | KF_VS_LAUNCHES;
    s->launches_per_call = c->launches;
    s->graph_launches = c->graph_launches;
    s->memory_ops = c->memory_ops;
    s->kernels.n = s->library_kernels.n = 0;
    for (int i = 0; i < c->nkernels && i < KF_VERDICT_MAX_NAMES; i++) {
        const char *k = kf_verdict_str(v, c->kernels[i]);
        if (!k) return -1;
        s->kernels.s[s->kernels.n++] = k;
        if (c->library[i]) s->library_kernels.s[s->library_kernels.n++] = k;
    }
    if (c->library_kernels > s->library_kernels.n) {
        s->has |= KF_VS_LIBRARY_COUNT;
        s->library_kernel_count = c->library_kernels;
    }
    return 0;
}

int kf_verdict_set_fair(struct kf_verdict *v, kf_verdict_shape *s, const kf_fair_out *f, int fair) {
    if (!f->reported) return 0;
    s->has |= KF_VS_FAIR;
    s->fair = fair != 0;
    if (f->cand_mode && f->base_mode) {
        s->has |= KF_VS_LAUNCH_MODE;
        if (!(s->candidate_launch_mode = kf__verdict_pool(v, f->cand_mode)) ||
            !(s->baseline_launch_mode = kf__verdict_pool(v, f->base_mode)))
            return -1;
    }
    if (f->graph_use && !(s->graph_use = kf__verdict_pool(v, f->graph_use))) return -1;
    if (f->launches >= 0) s->has |= KF_VS_LAUNCHES, s->launches_per_call = f->launches;
    if (f->note[0]) {
        const char **at = fair ? &s->fair_note : &s->fair_reason;
        if (!(*at = kf_verdict_str(v, f->note))) return -1;
    }
    return 0;
}

int kf_verdict_set_roof(struct kf_verdict *v, kf_verdict_shape *s, const kf_roof_out *r) {
    if (r->has & KF_ROOF_RATES)
        s->has |= KF_VS_RATES, s->gflops = r->gflops, s->gbytes_per_s = r->gbytes_per_s;
    if (r->has & KF_ROOF_BASE_RATE)
        s->has |= KF_VS_BASE_RATE, s->baseline_gbytes_per_s = r->baseline_gbytes_per_s;
    if (r->has & KF_ROOF_FRACTION) s->has |= KF_VS_ROOFLINE, s->roofline_fraction = r->fraction;
    if (r->has & KF_ROOF_FLOOR) {
        s->has |= KF_VS_FLOOR;
        s->floor_ns = r->floor_ns;
        if (r->flops_ceiling && !(s->roofline_flops_ceiling = kf__verdict_pool(v, r->flops_ceiling)))
            return -1;
    }
    return 0;
}

int kf_verdict_set_ceilings(struct kf_verdict *v, const kf_ceil_out *c, int late) {
    kf_verdict_ceilings *o = &v->ceilings;
    kf__verdict_extras_free(&o->extra);
    memset(o, 0, sizeof *o);
    v->has_ceilings = 1;
    v->ceilings_late = late != 0;
    if (c->has & KF_CEIL_RATES) {
        o->has |= KF_VC_BYTES | KF_VC_FLOPS;
        o->bytes_per_s = c->bytes_per_s;
        o->flops_per_s = c->flops_per_s;
    }
    if (c->has & KF_CEIL_CORES) o->has |= KF_VC_CORES, o->cores = c->cores;
    if (c->has & KF_CEIL_DEVICE) {
        o->has |= KF_VC_TENSOR | KF_VC_THEORY_BYTES | KF_VC_PEAK | KF_VC_L2;
        o->tensor_flops_per_s = c->tensor_flops_per_s;
        o->theoretical_bytes_per_s = c->theoretical_bytes_per_s;
        o->peak_flops_per_s = c->peak_flops_per_s;
        o->l2_bytes = c->l2_bytes;
    }
    const char *const str[] = {c->has & KF_CEIL_DEVICE ? c->device : NULL,
                               c->has & KF_CEIL_DEVICE ? c->uuid : NULL,
                               c->has & KF_CEIL_DEVICE ? c->source : NULL, c->error};
    const char **dst[] = {&o->device, &o->uuid, &o->source, &o->error};
    const unsigned bit[] = {KF_VC_DEVICE, KF_VC_UUID, KF_VC_SOURCE, KF_VC_ERROR};
    for (int i = 0; i < 4; i++) {
        if (!str[i]) continue;
        if (!(*dst[i] = kf_verdict_str(v, str[i]))) return -1;
        o->has |= bit[i];
    }
    return 0;
}

int kf_verdict_set_resources(struct kf_verdict *v, const kf_resources_out *r, const kf_verdict_sizes *at) {
    kf_verdict_resources *o = &v->resources;
    if (!r->reported) return 0;
    kf__verdict_resources_free(o);
    v->has_resources = 1;
    o->has = KF_VR_KERNELS | KF_VR_LAUNCHES | KF_VR_AT;
    if (r->arch && (o->has |= KF_VR_ARCH, !(o->arch = kf_verdict_str(v, r->arch)))) return -1;
    o->at = *at;
    if ((r->nkernels > 0 && !(o->kernels = calloc((size_t)r->nkernels, sizeof *o->kernels))) ||
        (r->nlaunches > 0 && !(o->launches = calloc((size_t)r->nlaunches, sizeof *o->launches))))
        return v->oom = 1, -1;
    for (int i = 0; i < r->nkernels && i < KF_MAX_LAUNCH; i++) {
        const kf_res_kernel *k = &r->kernels[i];
        kf_verdict_kernel_res *d = &o->kernels[o->nkernels++];
        d->has = KF_VK_REGISTERS | KF_VK_STATIC_SMEM;
        if (k->name && (d->has |= KF_VK_NAME, !(d->name = kf_verdict_str(v, k->name)))) return -1;
        d->registers = k->registers;
        d->static_smem_bytes = k->static_smem_bytes;
        if (k->spill_store_bytes >= 0)
            d->has |= KF_VK_SPILL_STORE, d->spill_store_bytes = k->spill_store_bytes;
        if (k->spill_load_bytes >= 0) d->has |= KF_VK_SPILL_LOAD, d->spill_load_bytes = k->spill_load_bytes;
        if (k->local_bytes_per_thread >= 0)
            d->has |= KF_VK_LOCAL, d->local_bytes_per_thread = k->local_bytes_per_thread;
    }
    for (int i = 0; i < r->nlaunches && i < KF_MAX_LAUNCH; i++) {
        const kf_res_launch *l = &r->launches[i];
        kf_verdict_launch_res *d = &o->launches[o->nlaunches++];
        d->has = KF_VL_GRID | KF_VL_BLOCK | KF_VL_DYNAMIC_SMEM;
        if (l->kernel && (d->has |= KF_VL_KERNEL, !(d->kernel = kf_verdict_str(v, l->kernel)))) return -1;
        for (int j = 0; j < 3; j++) d->grid[j] = l->grid[j], d->block[j] = l->block[j];
        d->dynamic_smem_bytes = l->dynamic_smem_bytes;
        if (l->occupancy_known) {
            d->has |= KF_VL_BLOCKS_PER_SM | KF_VL_OCCUPANCY;
            d->blocks_per_sm = l->blocks_per_sm;
            d->occupancy = l->occupancy;
        }
    }
    return 0;
}

void kf_verdict_to_bench(struct kf_verdict *v, double check_seconds) {
    v->has_check = 1;
    v->check_verdict = v->verdict;
    v->has_check_seconds = 1;
    v->check_seconds = check_seconds;
    v->checked = v->shapes, v->nchecked = v->nshapes;
    v->shapes = NULL, v->nshapes = v->capshapes = 0;
    v->has_shapes = 1;
}

/* ---- reals -------------------------------------------------------------------------------- */

/* jansson writes a real with "%.*g" and reads it back with strtod: the same here */
double kf_verdict_real(double x, int digits) {
    if (!isfinite(x)) return x;
    char b[64];
    snprintf(b, sizeof b, "%.*g", digits, x);
    return strtod(b, NULL);
}

static void round_shapes(kf_verdict_shape *s, int n, int d) {
    for (int i = 0; i < n; i++) {
        double *f[] = {&s[i].max_abs_err,
                       &s[i].plain_abs_err,
                       &s[i].max_rel_err,
                       &s[i].candidate_gap_ns,
                       &s[i].baseline_gap_ns,
                       &s[i].speedup,
                       &s[i].noise,
                       &s[i].ci95[0],
                       &s[i].ci95[1],
                       &s[i].candidate_ns,
                       &s[i].baseline_ns,
                       &s[i].candidate_spread,
                       &s[i].baseline_spread,
                       &s[i].candidate_wall_ns,
                       &s[i].baseline_wall_ns,
                       &s[i].roofline_fraction,
                       &s[i].gflops,
                       &s[i].gbytes_per_s,
                       &s[i].baseline_gbytes_per_s,
                       &s[i].floor_ns,
                       &s[i].speedup_first,
                       &s[i].ci95_first[0],
                       &s[i].ci95_first[1]};
        for (size_t k = 0; k < sizeof f / sizeof *f; k++) *f[k] = kf_verdict_real(*f[k], d);
    }
}

void kf_verdict_round(struct kf_verdict *v, int digits) {
    round_shapes(v->shapes, v->nshapes, digits);
    round_shapes(v->checked, v->nchecked, digits);
    v->speedup = kf_verdict_real(v->speedup, digits);
    v->seconds = kf_verdict_real(v->seconds, digits);
    v->check_seconds = kf_verdict_real(v->check_seconds, digits);
    v->compile_seconds = kf_verdict_real(v->compile_seconds, digits);
    for (int i = 0; i < v->ntools; i++) v->tools[i].seconds = kf_verdict_real(v->tools[i].seconds, digits);
    kf_verdict_ceilings *c = &v->ceilings;
    double *f[] = {&c->bytes_per_s, &c->flops_per_s, &c->tensor_flops_per_s, &c->theoretical_bytes_per_s,
                   &c->peak_flops_per_s};
    for (size_t k = 0; k < sizeof f / sizeof *f; k++) *f[k] = kf_verdict_real(*f[k], digits);
    for (int i = 0; i < v->resources.nlaunches; i++)
        v->resources.launches[i].occupancy = kf_verdict_real(v->resources.launches[i].occupancy, digits);
}
