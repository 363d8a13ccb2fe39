/*
 * host.h - the CUDA backend's host mode (host_build.c): the build side, the launch-mode
 * decisions that bench and check share (pure functions, unit-tested), and export's
 * dispatcher, a host-mode file (dispatch.c).
 */
#ifndef KF_CUDA_HOST_H
#define KF_CUDA_HOST_H

#include "../backend.h"

/* 1 when text is a host-mode file: a kforge:host line, or a task with
 * "launch_mode": "host" and no kforge:launch line. */
int kf__cuda_host_mode(const kf_task *t, const char *text, size_t len);
/* The generated header (declaration of kforge_launch and the worker's shim); caller frees. */
char *kf__cuda_host_header(const kf_task *t);
/* Build a host-mode file with nvcc in the sandboxed compiler child; out->arch is set.
 * KF_OK when nvcc ran (see out->ok); KF_EBACKEND without nvcc. */
kf_status kf__cuda_host_compile(kf_ctx *ctx, const kf_task *t, const char *path, const char *text, size_t len,
                                const kf_param *params, int nparams, const char *workdir, double timeout_s,
                                kf_build *out);
/* 1 when nvcc is found; else 0 with why. */
int kf__cuda_have_nvcc(char *why, size_t n);
/* The DT_NEEDED entries of an ELF64 object outside the C/C++ runtime, comma-separated
 * into out. 0, or -1 when it is not a readable ELF64 object. */
int kf__elf_needed(const unsigned char *elf, size_t n, char *out, size_t outsz);

/* The dispatcher slot (dispatch.c): a host-mode file. A task whose sizes are not all
 * integer arguments cannot have one (KF_EUSAGE, *alone set: its winners are exported). */
kf_status kf__cuda_dispatcher(kf_backend *be, kf_ctx *ctx, const kf_task *t, const char *run_dir,
                              const kf_winner *w, int nw, int fallback, const kf_best_shape *best, int nbest,
                              kf_buf *b, kf_dispatch_out *d, int *alone);

#endif
