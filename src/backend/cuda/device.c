/*
 * device.c - `kforge device-info`: a CUDA device's attributes and its measured ceilings,
 * and the GPU roofline that `kforge bench` refuses impossible times with (docs/checker.md #25).
 *
 * Ceilings are measured in the coordinator by kforge's own kernels (NVRTC-compiled,
 * trusted), timed with CUDA events: a device-to-device copy over buffers 8x the L2
 * (bytes read + written; the better of a copy kernel and cuMemcpyDtoD), independent
 * f32 FMA chains on every SM, and a bf16 mma.sync loop (f32 accumulation). A ceiling is
 * a maximum: a measurement on a busy device can only under-estimate it, so the cache
 * (gpu-<uuid>-<driver>.json in kforge's cache dir) keeps the best figure ever seen, and
 * a second call reads it without touching the device beyond its attributes.
 *
 * The hard floor below which a time is refused is deliberately loose (docs/cuda.md,
 * Timing): it uses the higher of the measured and theoretical bandwidth and the
 * architecture's fastest dense rate (fp8/int8/fp4, not the bf16 the probe measures),
 * both with 10% margin, and forgives one L2 of bytes. A false refusal of an honest
 * kernel is as bad as a cheat that gets through.
 *
 * Not done: wgmma/tcgen05 probes (the measured tensor rate is what warp-level mma
 * reaches; the hard floor uses the table instead), clocks under load (the attribute is
 * the maximum SM clock), MIG slices (the UUID is the slice's, the table the chip's).
 */
#define _GNU_SOURCE
#include "device.h"
#include "run.h"

#include "../../util/util.h"
#include "cuda_api.h"

#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#define MARGIN 1.10             /* on every rate of the hard floor */
#define UNKNOWN_ARCH_FACTOR 8   /* unknown arch: fp8/fp4 paths and wgmma over mma.sync */
#define MEASURED_BW_MARGIN 1.25 /* no datasheet figure: reads alone can beat a copy */
#define EVENT_SLACK_NS 2000.0   /* CUDA events resolve about 0.5 us */

int kf_device_arch_peaks(int maj, int min, kf_device_peaks *p) {
    /* Dense per-SM-per-clock rates from NVIDIA's architecture whitepapers (A100, GA102,
     * AD102/L40S, H100, B200 datasheet figures divided by SMs x boost clock). fp32 is
     * 2 x the FP32 lanes per SM. Ampere/Ada GeForce parts run f32-accumulate tensor
     * math at half these rates: a table that errs high only loosens the hard floor, one
     * that errs low would refuse honest kernels, so parts not checked (sm_87 Orin, whose
     * tensor cores are A100-like, sm_120) are left out: 8x measured applies there. */
    static const struct {
        int maj, min;
        kf_device_peaks p;
    } tab[] = {
        {8, 0, {128, 1024, 2048, 0, 4096, 0}},           {8, 6, {256, 512, 1024, 0, 2048, 0}},
        {8, 9, {256, 512, 1024, 2048, 2048, 0}},         {9, 0, {256, 2048, 4096, 8192, 8192, 0}},
        {10, 0, {256, 4096, 8192, 16384, 16384, 32768}},
    };
    memset(p, 0, sizeof *p);
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
        if (tab[i].maj == maj && tab[i].min == min) {
            *p = tab[i].p;
            return 0;
        }
    return -1;
}

void kf_device_theory_of(const kf_devinfo *d, kf_device_theory *t) {
    memset(t, 0, sizeof *t);
    if (d->mem_clock_khz > 0 && d->bus_width_bits > 0)
        t->mem_bytes_per_s = (double)d->mem_clock_khz * 1e3 * d->bus_width_bits * 2 / 8;
    kf_device_peaks p;
    if (kf_device_arch_peaks(d->cc_major, d->cc_minor, &p) || d->sms <= 0 || d->sm_clock_khz <= 0) return;
    double k = (double)d->sms * d->sm_clock_khz * 1e3;
    t->fp32 = p.fp32 * k, t->tf32 = p.tf32 * k, t->bf16 = p.bf16 * k;
    t->fp8 = p.fp8 * k, t->int8 = p.int8 * k, t->fp4 = p.fp4 * k;
    double r[] = {t->fp32, t->tf32, t->bf16, t->fp8, t->int8, t->fp4};
    for (int i = 0; i < 6; i++) t->peak = fmax(t->peak, r[i]);
}

int kf_device_roofline(const kf_devinfo *d, double flops, double bytes, int half, double t_ns,
                       kf_device_roof *out) {
    memset(out, 0, sizeof *out);
    flops = fmax(flops, 0);
    bytes = fmax(bytes, 0);
    double fc = half && d->tensor_flops_per_s > 0 ? d->tensor_flops_per_s : d->fp32_flops_per_s;
    out->flops_ceiling = half && d->tensor_flops_per_s > 0 ? "tensor" : "fp32";
    out->tmin_ns =
        1e9 * fmax(fc > 0 ? flops / fc : 0, d->copy_bytes_per_s > 0 ? bytes / d->copy_bytes_per_s : 0);
    kf_device_theory th;
    kf_device_theory_of(d, &th);
    /* bytes: written outputs may still sit in L2 when the last kernel ends (inputs
     * were flushed out of it before the call) */
    out->hard_bytes = fmax(0, bytes - (double)(d->l2_bytes > 0 ? d->l2_bytes : 0));
    out->hard_bw = th.mem_bytes_per_s > 0 ? MARGIN * fmax(d->copy_bytes_per_s, th.mem_bytes_per_s)
                                          : MEASURED_BW_MARGIN * d->copy_bytes_per_s;
    double measured = fmax(d->tensor_flops_per_s, d->fp32_flops_per_s);
    out->hard_flops = MARGIN * (th.peak > 0 ? fmax(th.peak, measured) : UNKNOWN_ARCH_FACTOR * measured);
    out->floor_ns = 1e9 * fmax(out->hard_bw > 0 ? out->hard_bytes / out->hard_bw : 0,
                               out->hard_flops > 0 ? flops / out->hard_flops : 0);
    return out->floor_ns > 0 && t_ns < out->floor_ns - EVENT_SLACK_NS;
}

/* ---- the cache ----------------------------------------------------------------- */

void kf_device_cache_path(const kf_devinfo *d, char *out, size_t n) {
    char dir[4096];
    kf__cache_dir(dir, sizeof dir);
    snprintf(out, n, "%s/gpu-%s-%d%s%s.json", dir, d->uuid, d->driver_version, d->kernel_driver[0] ? "-" : "",
             d->kernel_driver);
}

void kf_device_kernel_driver(const char *line, char *out, size_t n) {
    out[0] = 0;
    const char *p = strstr(line, "Module");
    /* the first word after "Module" made of digits and dots, with a dot ("x86_64" is not) */
    while (p && *p && *p != '\n') {
        while (*p == ' ' || *p == '\t') p++;
        size_t k = strspn(p, "0123456789."), w = strcspn(p, " \t\n");
        if (k && k == w && memchr(p, '.', k) && k < n) {
            snprintf(out, n, "%.*s", (int)k, p);
            return;
        }
        p += w;
    }
}

/* cuDriverGetVersion only says which CUDA version the driver supports, which many
 * driver releases share: the kernel module's version tells them apart. */
static void kernel_driver(char *out, size_t n) {
    char line[512] = "";
    FILE *f = fopen("/proc/driver/nvidia/version", "re");
    if (f && !fgets(line, sizeof line, f)) line[0] = 0;
    if (f) fclose(f);
    kf_device_kernel_driver(line, out, n);
}

static double measured_field(json_t *o, const char *k) {
    double v = json_number_value(json_object_get(json_object_get(o, "measured"), k));
    return isfinite(v) && v > 0 ? v : 0;
}

int kf_device_cache_load(const char *path, kf_devinfo *d) {
    json_t *o = json_load_file(path, 0, NULL);
    const char *uuid = json_string_value(json_object_get(o, "uuid"));
    const char *kd = json_string_value(json_object_get(o, "kernel_driver"));
    int ok = o && uuid && !strcmp(uuid, d->uuid) &&
             json_integer_value(json_object_get(o, "driver_version")) == d->driver_version &&
             !strcmp(kd ? kd : "", d->kernel_driver);
    double c = measured_field(o, "copy_bytes_per_s"), f = measured_field(o, "fp32_flops_per_s");
    double tc = measured_field(o, "bf16_tensor_flops_per_s");
    /* a device without bf16 mma (before sm_80) has no tensor figure */
    ok = ok && c > 0 && f > 0 && (tc > 0 || d->cc_major < 8);
    if (ok) {
        d->copy_bytes_per_s = c;
        d->fp32_flops_per_s = f;
        d->tensor_flops_per_s = tc;
    }
    json_decref(o);
    return ok ? 0 : -1;
}

int kf_device_cache_save(const char *path, kf_devinfo *d) {
    kf_devinfo old = *d;
    if (!kf_device_cache_load(path, &old)) {
        d->copy_bytes_per_s = fmax(d->copy_bytes_per_s, old.copy_bytes_per_s);
        d->fp32_flops_per_s = fmax(d->fp32_flops_per_s, old.fp32_flops_per_s);
        d->tensor_flops_per_s = fmax(d->tensor_flops_per_s, old.tensor_flops_per_s);
    }
    char *dir = kf__strdup(path), *slash = dir ? strrchr(dir, '/') : NULL;
    if (slash) *slash = 0;
    char *tmp = kf__asprintf("%s.%d.tmp", path, (int)gettid());
    json_t *o = kf_device_json(d);
    json_object_del(o, "source");
    int rc = -1;
    if (dir && tmp && o && (!slash || !kf__mkdirs(dir)) && !json_dump_file(o, tmp, JSON_INDENT(2)))
        rc = rename(tmp, path) ? -1 : 0;
    if (rc && tmp) unlink(tmp);
    json_decref(o);
    free(dir);
    free(tmp);
    return rc;
}

static json_t *num_or_null(double v) { return v > 0 ? json_real(v) : json_null(); }

json_t *kf_device_json(const kf_devinfo *d) {
    kf_device_theory t;
    kf_device_theory_of(d, &t);
    char cc[32], arch[32], nv[32];
    snprintf(cc, sizeof cc, "%d.%d", d->cc_major, d->cc_minor);
    snprintf(arch, sizeof arch, "sm_%d%d", d->cc_major, d->cc_minor);
    snprintf(nv, sizeof nv, "%d.%d", d->nvrtc_major, d->nvrtc_minor);
    json_t *m = json_object();
    json_object_set_new(m, "copy_bytes_per_s", num_or_null(d->copy_bytes_per_s));
    json_object_set_new(m, "fp32_flops_per_s", num_or_null(d->fp32_flops_per_s));
    json_object_set_new(m, "bf16_tensor_flops_per_s", num_or_null(d->tensor_flops_per_s));
    json_t *th = json_object();
    json_object_set_new(th, "mem_bytes_per_s", num_or_null(t.mem_bytes_per_s));
    json_object_set_new(th, "fp32_flops_per_s", num_or_null(t.fp32));
    json_object_set_new(th, "tf32_flops_per_s", num_or_null(t.tf32));
    json_object_set_new(th, "bf16_flops_per_s", num_or_null(t.bf16));
    json_object_set_new(th, "fp8_flops_per_s", num_or_null(t.fp8));
    json_object_set_new(th, "int8_ops_per_s", num_or_null(t.int8));
    json_object_set_new(th, "fp4_flops_per_s", num_or_null(t.fp4));
    json_object_set_new(th, "peak_flops_per_s", num_or_null(t.peak));
    json_t *o = json_object();
    json_object_set_new(o, "device", json_integer(d->device));
    json_object_set_new(o, "name", json_string(d->name));
    json_object_set_new(o, "uuid", json_string(d->uuid));
    json_object_set_new(o, "compute_capability", json_string(cc));
    json_object_set_new(o, "arch", json_string(arch));
    json_object_set_new(o, "sms", json_integer(d->sms));
    json_object_set_new(o, "sm_clock_khz", json_integer(d->sm_clock_khz));
    json_object_set_new(o, "mem_clock_khz", json_integer(d->mem_clock_khz));
    json_object_set_new(o, "mem_bus_width_bits", json_integer(d->bus_width_bits));
    json_object_set_new(o, "l2_bytes", json_integer(d->l2_bytes));
    json_object_set_new(o, "total_mem_bytes", json_integer(d->total_mem));
    json_object_set_new(o, "driver_version", json_integer(d->driver_version));
    json_object_set_new(o, "kernel_driver",
                        d->kernel_driver[0] ? json_string(d->kernel_driver) : json_null());
    json_object_set_new(o, "nvrtc_version", json_string(nv));
    json_object_set_new(o, "measured", m);
    json_object_set_new(o, "theoretical", th);
    json_object_set_new(o, "source", json_string(d->from_cache ? "cache" : "measured"));
    return o;
}

/* ---- measurement --------------------------------------------------------------- */

static const char probe_src[] =
    "typedef unsigned long long u64;\n"
    "/* copy: 16-byte words, four loads in flight per thread */\n"
    "extern \"C\" __global__ void kf_probe_copy(const uint4 *__restrict__ s, uint4 *__restrict__ d, u64 n) "
    "{\n"
    "    u64 st = (u64)gridDim.x * blockDim.x, i = (u64)blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    for (; i + 3 * st < n; i += 4 * st) {\n"
    "        uint4 a = s[i], b = s[i + st], c = s[i + 2 * st], e = s[i + 3 * st];\n"
    "        d[i] = a; d[i + st] = b; d[i + 2 * st] = c; d[i + 3 * st] = e;\n"
    "    }\n"
    "    for (; i < n; i += st) d[i] = s[i];\n"
    "}\n"
    "/* f32: 8 independent FMA chains per thread, 16 steps per iteration */\n"
    "extern \"C\" __global__ void kf_probe_fma(float *out, float m, float c, int iters) {\n"
    "    float x = threadIdx.x * 1e-3f;\n"
    "    float a0 = x, a1 = x + 1, a2 = x + 2, a3 = x + 3, a4 = x + 4, a5 = x + 5, a6 = x + 6, a7 = x + 7;\n"
    "    for (int i = 0; i < iters; i++) {\n"
    "#pragma unroll\n"
    "        for (int u = 0; u < 16; u++) {\n"
    "            a0 = fmaf(a0, m, c); a1 = fmaf(a1, m, c); a2 = fmaf(a2, m, c); a3 = fmaf(a3, m, c);\n"
    "            a4 = fmaf(a4, m, c); a5 = fmaf(a5, m, c); a6 = fmaf(a6, m, c); a7 = fmaf(a7, m, c);\n"
    "        }\n"
    "    }\n"
    "    out[(u64)blockIdx.x * blockDim.x + threadIdx.x] = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;\n"
    "}\n"
    "/* bf16 tensor cores: 8 independent m16n8k16 accumulators per warp (4096 FLOP each) */\n"
    "extern \"C\" __global__ void kf_probe_mma(float *out, int iters) {\n"
    "#if __CUDA_ARCH__ >= 800\n"
    "    unsigned a[4], b[2];\n"
    "    for (int k = 0; k < 4; k++) a[k] = 0x3f803f80u ^ ((threadIdx.x + k) & 7u);\n"
    "    for (int k = 0; k < 2; k++) b[k] = 0x3c003c00u ^ ((threadIdx.x + k) & 7u);\n"
    "    float acc[8][4];\n"
    "    for (int j = 0; j < 8; j++) for (int k = 0; k < 4; k++) acc[j][k] = 0.f;\n"
    "    for (int i = 0; i < iters; i++) {\n"
    "#pragma unroll\n"
    "        for (int j = 0; j < 8; j++)\n"
    "            asm volatile(\"mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 \"\n"
    "                         \"{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\"\n"
    "                         : \"+f\"(acc[j][0]), \"+f\"(acc[j][1]), \"+f\"(acc[j][2]), \"+f\"(acc[j][3])\n"
    "                         : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"r\"(b[0]), "
    "\"r\"(b[1]));\n"
    "    }\n"
    "    float s = 0.f;\n"
    "    for (int j = 0; j < 8; j++) for (int k = 0; k < 4; k++) s += acc[j][k];\n"
    "    out[(u64)blockIdx.x * blockDim.x + threadIdx.x] = s;\n"
    "#endif\n"
    "}\n";

const char *kf_device_probe_source(void) { return probe_src; }

int kf_device_probe_compile(const char *arch, char **cubin, size_t *size, char *err, size_t n) {
    *cubin = NULL;
    *size = 0;
    const kf_nvrtc_api *rtc = kf_nvrtc_load(err, n);
    if (!rtc) return -1;
    char archopt[64];
    snprintf(archopt, sizeof archopt, "--gpu-architecture=%s", arch);
    const char *opts[] = {archopt, "-default-device", "-std=c++17"};
    nvrtcProgram prog = NULL;
    int rc = rtc->CreateProgram(&prog, probe_src, "kforge_probes.cu", 0, NULL, NULL);
    if (rc) {
        snprintf(err, n, "nvrtcCreateProgram: %s", rtc->GetErrorString(rc));
        return -1;
    }
    rc = rtc->CompileProgram(prog, 3, opts);
    if (rc) {
        size_t ls = 0;
        rtc->GetProgramLogSize(prog, &ls);
        char *log = calloc(1, ls + 1);
        if (log && ls) rtc->GetProgramLog(prog, log);
        snprintf(err, n, "the device probes do not compile for %s: %.400s", arch, log ? log : "");
        free(log);
        rtc->DestroyProgram(&prog);
        return -1;
    }
    size_t cs = 0;
    rtc->GetCUBINSize(prog, &cs);
    char *c = malloc(cs ? cs : 1);
    if (!c || rtc->GetCUBIN(prog, c)) {
        free(c);
        rtc->DestroyProgram(&prog);
        snprintf(err, n, "nvrtcGetCUBIN failed");
        return -1;
    }
    rtc->DestroyProgram(&prog);
    *cubin = c;
    *size = cs;
    return 0;
}

typedef struct {
    const kf_cu_api *cu;
    CUstream stream;
    CUevent e0, e1;
    char *err;
    size_t n;
} probe;

/* Milliseconds of one launch of f (or, f NULL, one cuMemcpyDtoD of bytes), timed with
 * events on the probe's stream; -1 on a CUDA error (err set). */
static double timed(probe *p, CUfunction f, unsigned grid, unsigned block, void **args, CUdeviceptr dst,
                    CUdeviceptr src, size_t bytes) {
    const kf_cu_api *cu = p->cu;
    float ms = 0;
    CUresult r = cu->EventRecord(p->e0, p->stream);
    if (!r)
        r = f ? cu->LaunchKernel(f, grid, 1, 1, block, 1, 1, 0, p->stream, args, NULL)
              : cu->MemcpyDtoDAsync(dst, src, bytes, p->stream);
    if (!r) r = cu->EventRecord(p->e1, p->stream);
    if (!r) r = cu->EventSynchronize(p->e1);
    if (!r) r = cu->EventElapsedTime(&ms, p->e0, p->e1);
    if (r) {
        snprintf(p->err, p->n, "a device probe failed: %s", kf_cu_errname(cu, r));
        return -1;
    }
    return ms;
}

/* Blocks of `block` threads that fill every SM of the device at f's occupancy. */
static unsigned fill_grid(probe *p, CUfunction f, int block, int sms) {
    int per = 0;
    if (p->cu->OccupancyMaxActiveBlocksPerMultiprocessor(&per, f, block, 0) || per < 1) per = 1;
    return (unsigned)(per * (sms > 0 ? sms : 1));
}

/* Best rate of `work` units per launch of a compute probe whose loop count is args'
 * iters: grown until one launch takes 20 ms, then the best of 5. 0 on error. */
static double rate_of(probe *p, CUfunction f, int block, int sms, void **args, int *iters,
                      double work_per_iter) {
    unsigned grid = fill_grid(p, f, block, sms);
    double ms = 0;
    for (*iters = 64;; *iters *= 2) {
        if ((ms = timed(p, f, grid, (unsigned)block, args, 0, 0, 0)) < 0) return 0;
        if (ms >= 20 || *iters >= (1 << 22)) break;
    }
    double best = 0;
    for (int rep = 0; rep < 5; rep++) {
        if ((ms = timed(p, f, grid, (unsigned)block, args, 0, 0, 0)) < 0) return 0;
        if (ms > 0) best = fmax(best, work_per_iter * (double)grid * block * *iters / (ms / 1e3));
    }
    return best;
}

#define CK(call, what)                                               \
    do {                                                             \
        CUresult r_ = (call);                                        \
        if (r_) {                                                    \
            snprintf(err, n, "%s: %s", what, kf_cu_errname(cu, r_)); \
            goto out;                                                \
        }                                                            \
    } while (0)

/* Measure d's three ceilings on device dev. 0, or -1 with err. */
static int measure(const kf_cu_api *cu, CUdevice dev, kf_devinfo *d, char *err, size_t n) {
    char arch[32];
    snprintf(arch, sizeof arch, "sm_%d%d", d->cc_major, d->cc_minor);
    char *cubin = NULL;
    size_t cs;
    if (kf_device_probe_compile(arch, &cubin, &cs, err, n)) return -1;
    int rc = -1, retained = 0;
    CUcontext ctx;
    CUmodule mod = NULL;
    CUdeviceptr a = 0, b = 0, out = 0;
    probe p = {cu, NULL, NULL, NULL, err, n};
    CK(cu->PrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
    retained = 1;
    CK(cu->CtxSetCurrent(ctx), "cuCtxSetCurrent");
    CK(cu->ModuleLoadData(&mod, cubin), "cuModuleLoadData (the device probes)");
    CUfunction fcopy, ffma, fmma;
    CK(cu->ModuleGetFunction(&fcopy, mod, "kf_probe_copy"), "cuModuleGetFunction");
    CK(cu->ModuleGetFunction(&ffma, mod, "kf_probe_fma"), "cuModuleGetFunction");
    CK(cu->ModuleGetFunction(&fmma, mod, "kf_probe_mma"), "cuModuleGetFunction");
    CK(cu->StreamCreate(&p.stream, 0), "cuStreamCreate");
    CK(cu->EventCreate(&p.e0, 0), "cuEventCreate");
    CK(cu->EventCreate(&p.e1, 0), "cuEventCreate");

    /* copy: each buffer 8x the L2 (at least 256 MiB), so nothing is served from it */
    size_t bytes = (size_t)(d->l2_bytes > 0 ? d->l2_bytes : 64 << 20) * 8;
    if (bytes < (256u << 20)) bytes = 256u << 20;
    if (d->total_mem > 0 && bytes > (size_t)d->total_mem / 8) bytes = (size_t)d->total_mem / 8;
    bytes &= ~(size_t)((1 << 20) - 1);
    CK(cu->MemAlloc(&a, bytes), "cuMemAlloc (copy probe)");
    CK(cu->MemAlloc(&b, bytes), "cuMemAlloc (copy probe)");
    CK(cu->MemsetD32Async(a, 0x3f800000u, bytes / 4, p.stream), "cuMemsetD32Async");
    CK(cu->MemsetD32Async(b, 0, bytes / 4, p.stream), "cuMemsetD32Async");
    unsigned long long words = bytes / 16;
    void *cargs[] = {&a, &b, &words};
    unsigned grid = fill_grid(&p, fcopy, 256, d->sms);
    double best = 0;
    for (int rep = 0; rep < 11; rep++) {
        double ms = timed(&p, rep & 1 ? NULL : fcopy, grid, 256, cargs, b, a, bytes);
        if (ms < 0) goto out;
        if (rep > 1 && ms > 0) best = fmax(best, 2.0 * (double)bytes / (ms / 1e3)); /* 2 warm-ups */
    }
    d->copy_bytes_per_s = best;
    cu->MemFree(a);
    cu->MemFree(b);
    a = b = 0;

    CK(cu->MemAlloc(&out, (size_t)(d->sms > 0 ? d->sms : 1) * 64 * 1024 * 4), "cuMemAlloc (probes)");
    float m = 1.0000001f, c = 1e-7f;
    int iters = 0;
    void *fargs[] = {&out, &m, &c, &iters};
    d->fp32_flops_per_s = rate_of(&p, ffma, 256, d->sms, fargs, &iters, 2.0 * 8 * 16);
    if (d->fp32_flops_per_s <= 0) goto out;
    if (d->cc_major >= 8) {
        void *margs[] = {&out, &iters};
        /* per thread: a warp's 8 mma of 4096 FLOP per iteration, over its 32 lanes */
        d->tensor_flops_per_s = rate_of(&p, fmma, 256, d->sms, margs, &iters, 8.0 * 4096 / 32);
        if (d->tensor_flops_per_s <= 0) goto out;
    }
    rc = 0;
out:
    if (a) cu->MemFree(a);
    if (b) cu->MemFree(b);
    if (out) cu->MemFree(out);
    if (p.e0) cu->EventDestroy(p.e0);
    if (p.e1) cu->EventDestroy(p.e1);
    if (p.stream) cu->StreamDestroy(p.stream);
    if (mod) cu->ModuleUnload(mod);
    if (retained) {
        cu->CtxSetCurrent(NULL);
        cu->PrimaryCtxRelease(dev); /* the workers get the device's memory back */
    }
    free(cubin);
    return rc;
}
#undef CK

kf_status kf_device_get(kf_ctx *ctx, int dev, int refresh, kf_devinfo *d) {
    memset(d, 0, sizeof *d);
    char err[1024];
    const kf_cu_api *cu = kf_cu_load(err, sizeof err);
    if (!cu) return kf__err(ctx, KF_EBACKEND, "%s", err);
    int count = 0;
    CUresult r = cu->Init(0);
    const char *what = "cuInit";
    if (!r) r = cu->DeviceGetCount(&count), what = "cuDeviceGetCount";
    if (r)
        return kf__err(ctx, KF_EBACKEND, "no usable CUDA device: %s: %s (%d)", what, kf_cu_errname(cu, r), r);
    if (count < 1) return kf__err(ctx, KF_EBACKEND, "no CUDA device");
    if (dev < 0 || dev >= count)
        return kf__err(ctx, KF_EUSAGE, "--device %d: this machine has %d CUDA device%s (0 to %d)", dev, count,
                       count == 1 ? "" : "s", count - 1);
    CUdevice h;
    if ((r = cu->DeviceGet(&h, dev)))
        return kf__err(ctx, KF_EBACKEND, "cuDeviceGet: %s", kf_cu_errname(cu, r));
    d->device = dev;
    int l2 = 0;
    unsigned char u[16];
    size_t mem = 0;
    if ((r = cu->DeviceGetName(d->name, (int)sizeof d->name, h)) || (r = cu->DeviceGetUuid(u, h)) ||
        (r = cu->DeviceTotalMem(&mem, h)) || (r = cu->DriverGetVersion(&d->driver_version)))
        return kf__err(ctx, KF_EBACKEND, "reading device %d: %s", dev, kf_cu_errname(cu, r));
    snprintf(d->uuid, sizeof d->uuid,
             "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1], u[2],
             u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
    /* attributes a driver does not report stay 0 and their figures unknown */
    cu->DeviceGetAttribute(&d->cc_major, KF_CU_ATTR_CC_MAJOR, h);
    cu->DeviceGetAttribute(&d->cc_minor, KF_CU_ATTR_CC_MINOR, h);
    cu->DeviceGetAttribute(&d->sms, KF_CU_ATTR_SM_COUNT, h);
    cu->DeviceGetAttribute(&d->sm_clock_khz, KF_CU_ATTR_CLOCK_RATE, h);
    cu->DeviceGetAttribute(&d->mem_clock_khz, KF_CU_ATTR_MEM_CLOCK_RATE, h);
    cu->DeviceGetAttribute(&d->bus_width_bits, KF_CU_ATTR_MEM_BUS_WIDTH, h);
    cu->DeviceGetAttribute(&l2, KF_CU_ATTR_L2_SIZE, h);
    d->l2_bytes = l2;
    d->total_mem = (int64_t)mem;
    kernel_driver(d->kernel_driver, sizeof d->kernel_driver);
    /* NVRTC only compiles the probes: a cached description does not need it */
    const kf_nvrtc_api *rtc = kf_nvrtc_load(err, sizeof err);
    if (rtc) rtc->Version(&d->nvrtc_major, &d->nvrtc_minor);

    char path[4400], lock[4500], dir[4096];
    kf_device_cache_path(d, path, sizeof path);
    /* one measurement at a time per device: two at once would each see half the device
     * (and the second process finds the first one's figures in the cache) */
    kf__cache_dir(dir, sizeof dir);
    snprintf(lock, sizeof lock, "%s.lock", path);
    int lfd = kf__mkdirs(dir) ? -1 : open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (lfd >= 0) flock(lfd, LOCK_EX);
    kf_status st = KF_OK;
    if (!refresh && !kf_device_cache_load(path, d)) {
        d->from_cache = 1;
    } else if (!rtc) {
        st = kf__err(ctx, KF_EBACKEND, "measuring device ceilings needs NVRTC: %s", err);
    } else if (measure(cu, h, d, err, sizeof err)) {
        st = kf__err(ctx, KF_EBACKEND, "measuring device %d's ceilings: %s", dev, err);
    } else {
        kf_device_cache_save(path, d); /* a read-only cache only costs the next call a measurement */
    }
    if (lfd >= 0) close(lfd); /* releases the lock */
    return st;
}

/* The describe slot: kf_device_info (kforge.h) for the CUDA backend. */
kf_status kf__cuda_describe(kf_backend *b, kf_ctx *ctx, int device, int refresh, char **json) {
    (void)b;
    *json = NULL;
    kf_devinfo d;
    kf_status st = kf_device_get(ctx, device, refresh, &d);
    if (st) return st;
    json_t *o = kf_device_json(&d);
    *json = o ? kf__json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(6)) : NULL;
    json_decref(o);
    return *json ? KF_OK : kf__err(ctx, KF_ENOMEM, "out of memory");
}
