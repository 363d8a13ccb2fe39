/*
 * sandbox.h - the coordinator's side of process isolation: spawning kforge-worker
 * processes and talking to them, and running a command (the compiler) under limits.
 */
#ifndef KF_SANDBOX_H
#define KF_SANDBOX_H

#include "../util/util.h"
#include "policy.h"
#include "proto.h"

typedef struct kf_worker kf_worker;

typedef enum {
    KF_CALL_OK = 0,   /* the entry returned; outputs are ready to read */
    KF_CALL_FAILED    /* no usable result: see reason/msg; the worker is dead */
} kf_call_status;

typedef struct {
    kf_call_status st;
    kf_reason reason;      /* when FAILED */
    char msg[512];
    uint64_t worker_ns;    /* the worker's own clock around the call */
    uint64_t parent_ns;    /* the coordinator's clock, send to receive */
    uint64_t dev_ns;       /* GPU: the launches' CUDA event time */
    uint32_t occ[KF_PROTO_MAXLAUNCH]; /* GPU: resident blocks per SM, per launch */
} kf_call_result;

typedef struct {
    double cpu_s;          /* CPU seconds for the worker's whole life */
    uint64_t mem_limit;    /* address space beyond the arena */
    double start_timeout_s;
    int spin;              /* spin-wait for replies (timing runs): steady latency */
    const void *cpus;      /* cpu_set_t the worker may run on, or NULL for any */
    int gpu;               /* a GPU kernel-mode artifact: driver threads allowed */
} kf_worker_opts;

/* Spawn a worker for the built object so_path with an arena of arena_size bytes.
 * KF_OK with *out set: ready to call. KF_OK with *out NULL: the candidate failed to
 * load (fail says why: missing_entry, crash in a constructor, timeout...). Another
 * status: the environment is broken (no kforge-worker, no memfd...), detail on ctx. */
kf_status kf_worker_spawn(kf_ctx *ctx, const char *so_path, size_t arena_size,
                          const kf_worker_opts *o, kf_worker **out, kf_call_result *fail);
unsigned char *kf_worker_arena(kf_worker *w);
int kf_worker_landlock_abi(const kf_worker *w);
int kf_worker_sealed(const kf_worker *w); /* 1 when mseal protects the worker's image */
int kf_worker_dead(const kf_worker *w);   /* 1 after a failed call: only close may follow */
const char *kf_worker_info(const kf_worker *w); /* GPU: device and kernel attributes */
/* One call. msg's magic/type/seq are filled in here. After FAILED the worker is dead
 * and only kf_worker_close may follow. */
void kf_worker_call(kf_worker *w, kf_msg_run *msg, double timeout_s, kf_call_result *r);
/* Captured stdout/stderr (capped at 64 KiB; the rest is read and dropped), for logs. */
const char *kf_worker_output(kf_worker *w);
/* Kill the worker's process group, reap it, remove its directory. Accepts NULL. */
void kf_worker_close(kf_worker *w);
/* Kill a worker's process group without waiting (kf_worker_close still reaps it):
 * several GPU workers then tear their contexts down at the same time. */
void kf_worker_kill(kf_worker *w);

/* Path of the kforge-worker executable, or NULL (detail on ctx). */
const char *kf_sandbox_worker_path(kf_ctx *ctx);

/* Run argv in cwd with an empty environment plus env (NULL-terminated), in its own
 * session, under lim, with Landlock (ro/rw lists) and a wall deadline. Captures
 * stdout+stderr up to log->limit. *exit_code gets the exit status, or 128+signal,
 * or -1 on timeout. KF_OK when it ran (whatever it returned). */
kf_status kf_sandbox_exec(kf_ctx *ctx, char *const argv[], const char *cwd, char *const env[],
                          const kf_limits *lim, const char *const *ro, int nro,
                          const char *const *rw, int nrw, double timeout_s, kf_buf *log,
                          int *exit_code);

#endif
