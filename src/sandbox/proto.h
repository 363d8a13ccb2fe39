/*
 * proto.h - the messages between the coordinator and a kforge-worker, over a
 * SOCK_SEQPACKET socket (fd 3 in the worker). The arena (outputs, and a GPU worker's
 * inputs) is a shared memfd (fd 4); a CPU worker's inputs are in a second one (fd 5,
 * read-only), mapped right after the arena: buffer offsets run across both. Everything the worker sends is
 * untrusted once candidate code is loaded: the coordinator checks sizes, magic, type and sequence numbers,
 * and never takes a verdict from the worker, only an in-process time that it cross-checks.
 */
#ifndef KF_PROTO_H
#define KF_PROTO_H

#include <stdint.h>

#define KF_PROTO_MAGIC 0x6b66726bu /* "kfrk" */
#define KF_PROTO_MAXARGS 32
#define KF_PROTO_MAXDIMS 8
#define KF_WORKER_SOCK_FD 3
#define KF_WORKER_ARENA_FD 4
#define KF_WORKER_INPUT_FD 5 /* CPU workers: the inputs' region, a read-only descriptor */

enum {
    KF_MSG_READY = 1, /* worker -> parent: candidate loaded */
    KF_MSG_LOADFAIL,  /* worker -> parent: dlopen/dlsym failed (text) */
    KF_MSG_RUN,       /* parent -> worker: call the entry once */
    KF_MSG_DONE,      /* worker -> parent: returned; ns = CLOCK_MONOTONIC after */
    KF_MSG_EXIT,      /* parent -> worker: exit now */
    KF_MSG_START,     /* worker -> parent: about to call; ns = CLOCK_MONOTONIC before */
    KF_MSG_SETUP_OK,  /* worker -> parent: confined; ns = layers; the candidate loads next */
    KF_MSG_FAIL,      /* worker -> parent: the call failed (text: a CUDA error); it exits */
    KF_MSG_INFO,      /* worker -> parent: text about the loaded code (GPU: resources) */
    KF_MSG_LOAD,      /* parent -> deferred GPU worker: its artifact is in place now */
    KF_MSG_CONFIG     /* parent -> CPU worker, first: its arguments (kf_msg_config) */
};

/* A CPU worker is started with no arguments but its name (argv and the environment are
 * visible to the candidate, and must look like any program's): its arguments arrive as
 * the first message, '\n'-separated: SO_PATH, PARENT_PID, CPU_S, AS_BYTES, SO_DIR, CPUS,
 * UID, ENTRY (worker_main.c); after them a deferred GPU worker's artifact, "MAGNITUDE=NAME"
 * (the second function a reference's worker calls) and KFORGE_ settings. */
typedef struct {
    uint32_t magic, type;
    char text[8192];
} kf_msg_config;

#define KF_PROTO_MAXLAUNCH 8
#define KF_PROTO_MAXNAMES 8
/* argument kinds for GPU workers (kernel parameters) */
enum { KF_ARG_BUF = 0, KF_ARG_I32, KF_ARG_I64, KF_ARG_F32, KF_ARG_F64, KF_ARG_U8 };
#define KF_RUN_FLUSH_L2 1u /* GPU: write a scratch buffer larger than L2 before the call */
/* GPU, under compute-sanitizer: every buffer gets its own device allocation of exactly
 * len[] bytes (no mirror, no guard zones around it), so memcheck sees its bounds; in and
 * inout buffers are copied in, out buffers are left uninitialised for initcheck */
#define KF_RUN_PRECISE 2u
/* on EXIT: leave through exit(), not _exit(), so a tool injected into the worker
 * (compute-sanitizer) finishes its report */
#define KF_EXIT_CLEAN 4u
enum { KF_IO_ARG_IN = 0, KF_IO_ARG_OUT, KF_IO_ARG_INOUT };
/* GPU: the host-mode timing protocol (either side of a comparison is in host mode):
 * event 0, the call, a device-wide synchronise, event 1 */
#define KF_RUN_HOST_TIMING 8u
/* GPU kernel mode: capture the launches into a CUDA graph before the timed span and
 * time one graph launch (the baseline of a graph-replaying candidate) */
#define KF_RUN_GRAPH 16u
/* GPU, bench's timed calls (both sides): wait until no other process has work on the
 * device before the timed span (a candidate's GPU work left running while its worker is
 * frozen), and say how long that took beyond the probes themselves */
#define KF_RUN_WAIT_IDLE 32u
/* CPU workers, some checking calls: a timer makes whichever of the candidate's threads runs
 * yield its CPU every KF_INTERLEAVE_NS, so threads that share one CPU take turns finely and
 * an unsynchronised update is lost, as it is when they truly run at once (races, #32) */
#define KF_RUN_INTERLEAVE 64u
#define KF_INTERLEAVE_NS 30000
/* CPU workers started with a magnitude function (a trusted reference's): call it instead
 * of the entry, with the same arguments */
#define KF_RUN_MAGNITUDE 128u

typedef struct {
    uint32_t magic, type, seq, nargs;
    uint64_t off[KF_PROTO_MAXARGS]; /* arena offsets of buffers */
    int64_t ival[KF_PROTO_MAXARGS]; /* integer scalars */
    double fval[KF_PROTO_MAXARGS];  /* float scalars */
    /* GPU workers: the arena span the call uses (copied to and from the device), the
     * parameter kinds, and the launches (grid x y z, block x y z, dynamic smem) */
    uint64_t span_lo, span_hi;
    uint8_t kind[KF_PROTO_MAXARGS];
    uint32_t nlaunch, flags;
    uint32_t kernel[KF_PROTO_MAXLAUNCH];
    uint32_t dims[KF_PROTO_MAXLAUNCH][7];
    /* KF_RUN_PRECISE: each buffer's bytes and direction (KF_IO_ARG_*) */
    uint64_t len[KF_PROTO_MAXARGS];
    uint8_t io[KF_PROTO_MAXARGS];
    /* a task's PyTorch reference only (kf_worker_opts.exec; zero for every other
     * worker): each buffer's extents, KF_PROTO_MAXDIMS per buffer, unused ones 0 */
    int64_t extent[KF_PROTO_MAXARGS][KF_PROTO_MAXDIMS];
} kf_msg_run;

#define KF_PROTO_NPHASES 6

/* kf_msg_done.gpu_flags */
#define KF_DONE_PERSISTING_L2 1u /* host mode: the call set a persisting-L2 set-aside (reset after it) */
#define KF_DONE_GPU_BUSY 2u      /* timed call: the device never went idle before the span */
#define KF_DONE_THREADS 4u       /* CPU: threads other than the caller ran during the call */

typedef struct {
    uint32_t magic, type, seq, gpu_flags;
    uint64_t ns;
    uint64_t dev_ns;                  /* GPU: event time of the launches */
    uint32_t occ[KF_PROTO_MAXLAUNCH]; /* GPU: resident blocks per SM of each launch */
    /* GPU host mode: what CUPTI saw during the call (cupti 0: not available) */
    int32_t cupti, nlaunch, ngraph, nmemop, nlib, nnames;
    char names[KF_PROTO_MAXNAMES][64]; /* the first kernels' names, NUL-terminated */
    /* GPU: the worker's CLOCK_MONOTONIC at each step of the call, for `bench -v`'s
     * breakdown only (the worker's word: never a timing or a verdict): RUN received,
     * inputs on the device, flush done (host protocol), timed span's end, outputs back,
     * re-poisoned */
    uint64_t phase[KF_PROTO_NPHASES];
    /* GPU, KF_RUN_WAIT_IDLE: how long the device stayed busy with other processes' work
     * before the timed span (0 when the first probes found it idle) */
    uint64_t idle_wait_ns;
} kf_msg_done;

typedef struct {
    uint32_t magic, type;
    char text[1024];
} kf_msg_text;

#endif
