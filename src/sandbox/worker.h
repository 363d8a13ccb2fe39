/*
 * worker.h - pieces of kforge-worker shared by its CPU (worker_main.c) and GPU
 * (backend/cuda/gpu_worker.c) modes.
 */
#ifndef KF_WORKER_H
#define KF_WORKER_H

#include <stddef.h>
#include <stdint.h>

void kf_wk_send_text(uint32_t type, const char *text);
void kf_wk_die(int code, const char *what); /* LOADFAIL with errno's text, then exit */
uint64_t kf_wk_now_ns(void);                /* CLOCK_MONOTONIC */
int kf_wk_seal_image(void);                 /* mseal; 1 when sealed */
int kf_wk_drop_root(const char *uidarg, const char *ppid);
/* a deferred GPU worker's artifact path, from its configuration (NULL: <dir>/candidate.so) */
extern const char *kf_wk_deferred_path;
void kf_wk_forget_env(void); /* the KFORGE_ settings its configuration set, removed */

/* GPU mode (backend/cuda/gpu_worker.c) */
int kf_wk_is_gpu_artifact(const char *path);
int kf_gpu_worker_main(char **argv, void *arena, size_t arena_size);
/* compile mode: one NVRTC compile (backend/cuda/nvrtc_child.c) */
int kf_nvrtc_child_main(int argc, char **argv);

#endif
