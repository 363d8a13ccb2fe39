/*
 * worker.h - pieces of kforge-worker shared by its CPU (worker_main.c) and GPU
 * (backend/cuda/gpu_worker.c) modes, and the start every mode but the NVRTC child makes
 * (kf_wk_start). The program's main, which picks the mode, is src/worker/main.c.
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
/* The libffi type (an ffi_type *) of a kf_msg_run argument kind (KF_ARG_*). */
void *kf_wk_ffi_type(unsigned kind);
/* a deferred GPU worker's artifact path, from its configuration (NULL: <dir>/candidate.so) */
extern const char *kf_wk_deferred_path;
void kf_wk_forget_env(void); /* the KFORGE_ settings its configuration set, removed */

/* The arena a worker runs on, mapped by kf_wk_start. */
typedef struct {
    void *base;   /* the shared arena; with split, the inputs' read-only region follows it */
    size_t size;  /* the arena's bytes */
    size_t total; /* size, or 2 * size with the inputs' region */
    int split;    /* 1: the inputs' region is mapped (CPU workers) */
} kf_wk_arena;

/* The start of a worker, before its mode: a parent-death SIGKILL, the arguments (argv[1..8]
 * and the entry as argv[8], or for a CPU worker started under a random name the
 * configuration message; *argc, *argv and *entry are set to them), the parent check, every
 * other descriptor closed, the arena mapped into *a, the CPU affinity. 0, or the status
 * to exit with: 111 bad arguments, 112 the parent is gone (setup failures exit 113 with
 * a LOADFAIL message). */
int kf_wk_start(int *argc, char ***argv, const char **entry, kf_wk_arena *a);
/* The CPU mode, after kf_wk_start: every confinement layer, then the candidate loaded and
 * its entry served, one RUN request at a time, until EXIT. Does not return. */
int kf_wk_cpu_main(char **argv, const char *entry, const kf_wk_arena *a);

#endif
