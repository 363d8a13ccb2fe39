/*
 * cupti.h - launch accounting for host mode: how many kernels (and graphs, and copies) a
 * candidate's host code launched during one call, and which kernels, seen through the
 * CUPTI Callback API loaded at run time. Without CUPTI the same binary works and the log
 * says "unavailable" (available = 0), never zero. docs/cuda.md, "Launch accounting".
 */
#ifndef KF_CUPTI_H
#define KF_CUPTI_H

#include <stddef.h>

#define KF_CUPTI_MAXNAMES 16
#define KF_CUPTI_NAMELEN 96

typedef struct kf_launch_log {
    int available;      /* 0: CUPTI not loaded (or detached); the counts below mean nothing */
    int nlaunch;        /* successful kernel launches (driver or runtime, plain, Ex, cooperative) */
    int ngraph;         /* successful graph launches (cuGraphLaunch / cudaGraphLaunch) */
    int nmemop;         /* successful memcpy/memset calls (driver level where the driver reports them) */
    int nfail;          /* kernel or graph launches whose API call returned an error (not counted above) */
    int nnames;         /* distinct kernel names seen, first-seen order, at most KF_CUPTI_MAXNAMES */
    int names_overflow; /* 1: more distinct names were launched than fit */
    char names[KF_CUPTI_MAXNAMES][KF_CUPTI_NAMELEN]; /* truncated to 95 bytes; "?" if unknown */
    int nlib; /* launches whose kernel name looks like a library's (kf_cupti_is_library) */
    int nctx; /* CUDA contexts created (cuCtxCreate*, cuGreenCtxCreate) since kf_cupti_init */
} kf_launch_log;

/* Load libcupti (KFORGE_LIBCUPTI; else the CUDA toolkit's extras/CUPTI/lib64, lib64, lib,
 * targets/x86_64-linux/lib; else the loader's path), subscribe the callback and enable the
 * launch, graph-launch and memcpy/memset callbacks. Call once per process, before the
 * candidate runs (CUPTI allows one subscriber per process). Returns 0, or -1 with the
 * reason in err. A second call after success returns 0. */
int kf_cupti_init(char *err, size_t n);
/* Reset the log and start counting: a call starts. Any thread; not concurrently with end. */
void kf_cupti_begin(void);
/* Stop counting, wait for callbacks in flight on other threads, copy the log into out.
 * out->available is 0 when CUPTI is not loaded or the subscription is no longer enabled. */
void kf_cupti_end(kf_launch_log *out);
/* Unsubscribe. libcupti stays loaded (its threads make dlclose unsafe). */
void kf_cupti_shutdown(void);
/* 1 if a kernel name (mangled or not) looks like a vendor library's kernel: it contains
 * cublas, cutlass, xmma, nvjet, cudnn, cufft, regular_fft, vector_fft, cusparse,
 * cusolver or nccl (any case), or starts with ampere_, volta_, turing_, maxwell_, kepler_,
 * hopper_ or blackwell_ (also after a mangled name's length digits). Pure. */
int kf_cupti_is_library(const char *name);
/* 1 for the CUPTI name of a driver entry point that creates a context: cuCtxCreate*,
 * cuGreenCtxCreate. Pure. */
int kf_cupti__is_ctx_name(const char *s);

#endif
