/*
 * modes.h - the CUDA backend's modes of kforge-worker, which src/worker/main.c picks: the
 * GPU worker (gpu_worker.c), which runs kernel-mode cubins and host-mode objects, and the
 * NVRTC compile child (nvrtc_child.c). Both are built into the worker only, never into
 * the library.
 */
#ifndef KF_CUDA_MODES_H
#define KF_CUDA_MODES_H

#include <stddef.h>

/* 1 when path is a GPU artifact (a kernel-mode cubin or a "KFHOST01" host-mode object),
 * which the GPU worker runs rather than the CPU worker. */
int kf_wk_is_gpu_artifact(const char *path);
/* GPU mode, after kf_wk_start (sandbox/worker.h), on its arena: the device set up, the
 * confinement layers, then the artifact's calls served. Does not return but to exit. */
int kf_gpu_worker_main(char **argv, void *arena, size_t arena_size);
/* Compile mode: one NVRTC compile (`kforge-worker --nvrtc SRC NAME CUBIN LOG OPTION...`);
 * the exit status (0 built, 1 refused, 3 failed). */
int kf_nvrtc_child_main(int argc, char **argv);

#endif
