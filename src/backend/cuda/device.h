/*
 * device.h - a CUDA device's description and ceilings (`kforge device-info`), and the
 * GPU roofline `kforge bench` judges times against. See device.c.
 */
#ifndef KF_CUDA_DEVICE_H
#define KF_CUDA_DEVICE_H

#include "kforge.h"

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* Dense rates per clock per SM of an architecture (FLOP, or integer ops for int8);
 * 0 where the architecture has no such path. */
typedef struct {
    double fp32, tf32, bf16, fp8, int8, fp4;
} kf_device_peaks;

typedef struct {
    int device;
    char name[256];
    char uuid[48]; /* "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" */
    int cc_major, cc_minor, sms;
    int sm_clock_khz, mem_clock_khz, bus_width_bits; /* 0: not reported */
    int64_t l2_bytes, total_mem;
    int driver_version, nvrtc_major, nvrtc_minor;
    char kernel_driver[32]; /* "580.159.04" from /proc/driver/nvidia/version, or "" */
    /* measured ceilings: the best ever seen for this device and driver (0: none) */
    double copy_bytes_per_s;   /* device-to-device copy, bytes read + written */
    double fp32_flops_per_s;   /* independent FMA chains on every SM */
    double tensor_flops_per_s; /* bf16 mma.sync, f32 accumulation */
    int from_cache;
} kf_devinfo;

/* Theoretical figures from the attributes and the architecture table (0: unknown). */
typedef struct {
    double mem_bytes_per_s;                  /* memory clock x bus width x 2 (double data rate) / 8 */
    double fp32, tf32, bf16, fp8, int8, fp4; /* per second, at the maximum SM clock */
    double peak;                             /* the highest of them: the fastest dense path there is */
} kf_device_theory;

/* What the roofline says about one time (kf_device_roofline). */
typedef struct {
    double tmin_ns;            /* max(flops / flops ceiling, bytes / copy bandwidth), measured */
    const char *flops_ceiling; /* "tensor" or "fp32": which measured rate tmin used */
    double hard_bytes;         /* bytes that must cross DRAM: max(0, bytes - L2 size) */
    double hard_bw;            /* 1.10 x max(measured, theoretical); 1.25 x measured alone */
    double hard_flops;         /* 1.10 x the fastest dense rate (or 8x measured, arch unknown) */
    double floor_ns;           /* no honest kernel is faster than this (0: no floor) */
} kf_device_roof;

/* The architecture's dense rates; 0 when cc is known to kforge, -1 when not (p zeroed). */
int kf_device_arch_peaks(int cc_major, int cc_minor, kf_device_peaks *p);
void kf_device_theory_of(const kf_devinfo *d, kf_device_theory *t);

/* The roofline of a kernel doing `flops` and moving `bytes` (the task's cost model) on d;
 * half: some buffer is f16/bf16 (the tensor rate is the flops ceiling). Returns 1 when
 * t_ns is below the hard floor (by more than the event timer's slack): impossible for
 * an honest kernel. Pure: tests call it with made-up devices. */
int kf_device_roofline(const kf_devinfo *d, double flops, double bytes, int half, double t_ns,
                       kf_device_roof *out);

/* Describe device dev; measure its ceilings unless the cache has them (refresh:
 * measure anyway, keeping the best figures). KF_EBACKEND without a driver, a device or
 * NVRTC; KF_EUSAGE for a device number out of range. Detail on ctx. */
kf_status kf_device_get(kf_ctx *ctx, int dev, int refresh, kf_devinfo *out);

/* The cache file for d: <cache dir>/gpu-<uuid>-<driver>[-<kernel driver>].json. */
void kf_device_cache_path(const kf_devinfo *d, char *out, size_t n);
/* Fill d's measured ceilings from the file at path when it is for the same UUID and
 * drivers and has all three. 0, or -1. */
int kf_device_cache_load(const char *path, kf_devinfo *d);
/* Merge d's ceilings with the file's (the maxima, into d too) and write it atomically.
 * 0, or -1. */
int kf_device_cache_save(const char *path, kf_devinfo *d);

/* The driver's version ("580.159.04") from the first line of /proc/driver/nvidia/version
 * into out ("" when the line has none). */
void kf_device_kernel_driver(const char *line, char *out, size_t n);

/* d as a JSON object (docs/cli.md, device-info). New reference. */
json_t *kf_device_json(const kf_devinfo *d);
/* The measurement kernels' CUDA source (kforge's own, trusted). */
const char *kf_device_probe_source(void);
/* Compile the probes for arch ("sm_90") with NVRTC. 0 with *cubin (caller frees) and
 * its size, or -1 with err. */
int kf_device_probe_compile(const char *arch, char **cubin, size_t *size, char *err, size_t n);

#endif
