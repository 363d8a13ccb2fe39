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
    KF_CALL_OK = 0, /* the entry returned; outputs are ready to read */
    KF_CALL_FAILED  /* no usable result: see reason/msg; the worker is dead */
} kf_call_status;

typedef struct {
    kf_call_status st;
    kf_reason reason; /* when FAILED */
    char msg[512];
    uint64_t worker_ns;               /* the worker's own clock around the call */
    uint64_t parent_ns;               /* the coordinator's clock, send to receive */
    uint64_t sent_ns;                 /* the coordinator's clock, send to the kernel's stamp of the
                                       * answer's send (parent_ns when the channel has no stamps) */
    uint64_t dev_ns;                  /* GPU: the launches' CUDA event time */
    uint32_t occ[KF_PROTO_MAXLAUNCH]; /* GPU: resident blocks per SM, per launch */
    /* GPU host mode: CUPTI's counts for the call (cupti 0: unknown). Reported by the
     * worker, so by the candidate's process: information, never a verdict. */
    int cupti, nlaunch, ngraph, nmemop, nlib, nnames;
    char names[KF_PROTO_MAXNAMES][64];
    /* reason input_modified from the worker's fault handler: the argument written and
     * the byte (ro_arg -1 otherwise) */
    int ro_arg;
    uint64_t ro_byte;
    /* GPU: the worker's step stamps (kf_msg_done.phase) and the coordinator's own clock
     * at the request and at the answer, for `bench -v` only */
    uint64_t phase[KF_PROTO_NPHASES], resumed_at, answered_at;
    /* GPU: KF_DONE_* flags and the wait for an idle device before a timed span (the
     * worker's word: trusted only from a worker running no candidate host code) */
    uint32_t gpu_flags;
    uint64_t idle_wait_ns;
} kf_call_result;

typedef struct {
    double cpu_s;       /* CPU seconds for the worker's whole life */
    uint64_t mem_limit; /* address space beyond the arena */
    double start_timeout_s;
    int spin;         /* spin-wait for replies (timing runs): steady latency */
    const void *cpus; /* cpu_set_t the worker may run on, or NULL for any */
    /* A device worker (the worker's device mode, for a backend with a device): one arena
     * region, which the worker copies to and from the device; the driver's own threads
     * allowed; a set-up failure is the backend's (KF_EBACKEND) */
    int device;
    /* A wrapper program and its arguments (NULL-terminated), or NULL: the worker is
     * started as wrap[0] wrap[1].. kforge-worker ARGS, in the same session, and the
     * wrapper is the process waited for (compute-sanitizer). When a wrapped worker fails
     * or closes its channel, the wrapper gets wrap_grace_s to exit on its own (and finish
     * its report) before its group is killed. */
    const char *const *wrap;
    double wrap_grace_s;
    /* CPU workers: the entry the worker calls, and the file name its copy of the object
     * gets (the name the documented build gives it, "x.so" for x.c; NULL: kernel.so) */
    const char *entry;
    const char *so_name;
    /* Device workers: the variables of kforge's environment the worker gets, by name
     * (NULL-terminated, or NULL). env_pass: in its environment as they are (the user's
     * choice of devices); env_settings: kforge's own settings for it, in its
     * configuration message, which the worker sets for its set-up and removes before
     * candidate code loads (under a wrapping tool: in its environment). Unset or empty
     * ones are left out. */
    const char *const *env_pass;
    const char *const *env_settings;
    /* A trusted program instead of kforge-worker (a task's PyTorch reference), or NULL:
     * started as exec[0] (searched in PATH) with exec's arguments and kforge's own
     * environment, as this user, with the same channel, arena and inputs' region; its
     * first message is exec_config (a kf_msg_config's text) and it then speaks the CPU
     * worker's protocol (a CUDA task's PyTorch reference fills a GPU worker's DONE fields
     * too; a LOADFAIL before SETUP_OK is KF_EBACKEND, the environment's). Nothing is
     * copied for it, no sandbox layer applies, and the
     * threads it keeps between calls are its own (kforge's code, never a candidate's). */
    const char *const *exec;
    const char *exec_config;
    /* exec only, or NULL: start the trusted program from a warm process instead (a
     * PyTorch reference's, kf_torch_warm_spawn). Called with exec_warm_arg and the six
     * descriptors the program takes as 0-5; it starts the program as a child of this
     * process, in a process group of its own (setsid), and sets *pid: 0. Or it sets *pid
     * to a stand-in, a child of this process in a group of its own that ends as the
     * program ends (the same exit status or signal), and *peer to the program's pid (a
     * group leader, not this process's child): the freezes, resumes and kills of the
     * worker then reach both groups (a warm server's runner, docs/torch.md "Across
     * invocations"); *peer stays -1 otherwise. -1: nothing was handed over,
     * and exec is spawned as usual; -2: the descriptors were handed over and the start
     * failed (err says why): the spawn fails, an error of the environment. */
    int (*exec_warm)(void *arg, const int fds[6], pid_t *pid, pid_t *peer, char *err, size_t n);
    void *exec_warm_arg;
    /* CPU workers: a second function of the object, called instead of the entry by a RUN
     * with KF_RUN_MAGNITUDE (a C reference's magnitude function, docs/tasks.md
     * "Tolerance"), or NULL; missing from the object, the load fails */
    const char *mag_entry;
} kf_worker_opts;

/* Spawn a worker for the built object so_path with an arena of arena_size bytes.
 * KF_OK with *out set: ready to call. KF_OK with *out NULL: the candidate failed to
 * load (fail says why: missing_entry, crash in a constructor, timeout...). Another
 * status: the environment is broken (no kforge-worker, no memfd...), detail on ctx. */
kf_status kf_worker_spawn(kf_ctx *ctx, const char *so_path, size_t arena_size, const kf_worker_opts *o,
                          kf_worker **out, kf_call_result *fail);
/* The coordinator's mapping of the worker's buffers: the writable arena, then (CPU
 * workers) the read-only inputs' region at kf_worker_ro_base (0: no such region). */
unsigned char *kf_worker_arena(kf_worker *w);
size_t kf_worker_ro_base(const kf_worker *w);
int kf_worker_landlock_abi(const kf_worker *w);
int kf_worker_sealed(const kf_worker *w);   /* 1 when mseal protects the worker's image */
int kf_worker_filtered(const kf_worker *w); /* GPU host mode: 1 when its seccomp filter is on */
/* The shared libraries mapped in a live worker, from /proc/PID/maps (the kernel's view:
 * the candidate cannot forge it), outside the C/C++ runtime, the CUDA driver and CUPTI,
 * comma-separated into out. 0, or -1 when the worker is dead or its maps unreadable
 * (a non-dumpable worker's maps are readable by root only). */
int kf_worker_libraries(const kf_worker *w, char *out, size_t n);
/* Move a live CPU worker, between calls, onto the CPUs of cpus (a cpu_set_t): its main
 * thread, the only one a worker has between calls; the threads a call starts inherit
 * it. 0, or -1 (a GPU worker, which has driver threads, a dead one, or a refusal). The
 * worker itself cannot do this: its filter refuses sched_setaffinity. */
int kf_worker_set_cpus(kf_worker *w, const void *cpus);
/* Set the nice value and the scheduler slice (slice_ns, 0 for the default; honoured
 * from Linux 6.12) of a live CPU worker's main thread, between calls (the threads a call
 * starts inherit both). 0, or -1 (as kf_worker_set_cpus; a negative value needs
 * CAP_SYS_NICE, i.e. a coordinator started as root). */
int kf_worker_set_nice(kf_worker *w, int nice, uint64_t slice_ns);

int kf_worker_dead(const kf_worker *w);         /* 1 after a failed call: only close may follow */
const char *kf_worker_info(const kf_worker *w); /* GPU: device and kernel attributes */
/* One call. msg's magic/type/seq are filled in here. After FAILED the worker is dead
 * and only kf_worker_close may follow. */
void kf_worker_call(kf_worker *w, kf_msg_run *msg, double timeout_s, kf_call_result *r);
/* Captured stdout/stderr (capped at 64 KiB; the rest is read and dropped), for logs. */
const char *kf_worker_output(kf_worker *w);
/* End a worker in order: ask it to exit cleanly (KF_EXIT_CLEAN), then wait up to
 * timeout_s for its process (the wrapper, when there is one) to exit. Returns its exit
 * status (0-255), 128 + signal, or -1 when it had to be killed or its end is unknown;
 * for a worker already dead after a failed call, the status it ended with. Only
 * kf_worker_close may follow. */
int kf_worker_finish(kf_worker *w, double timeout_s);
/* Kill the worker's process group, reap it, remove its directory. Accepts NULL. */
void kf_worker_close(kf_worker *w);
/* A GPU worker may be started before its artifact exists: kf_worker_spawn with so_path
 * NULL (and opts->device) returns at once with a worker that initialises the driver and
 * page-locks its arena meanwhile; kf_worker_attach gives it the artifact and finishes the
 * start exactly as kf_worker_spawn does (*w NULL and fail set when the candidate does not
 * load; the worker is consumed either way). Saves most of a GPU worker's start (about
 * 0.3 s on an H200) from the time to a verdict. */
kf_status kf_worker_attach(kf_ctx *ctx, kf_worker **w, const char *so_path, kf_call_result *fail);
/* Kill a worker's process group without waiting (kf_worker_close still reaps it):
 * several GPU workers then tear their contexts down at the same time. */
void kf_worker_kill(kf_worker *w);

/* Path of the kforge-worker executable, or NULL (detail on ctx). */
const char *kf_sandbox_worker_path(kf_ctx *ctx);

/* Run argv in cwd with an empty environment plus env (NULL-terminated), in its own
 * session (headed by a guard process that kills the whole group when kforge dies, kill -9
 * included; every other way out kills the group too), under lim, with Landlock (ro/rw lists) and a wall
 * deadline. Captures stdout+stderr up to log->limit. *exit_code gets the exit status, or 128+signal, or -1 on
 * timeout. KF_OK when it ran (whatever it returned). */
kf_status kf_sandbox_exec(kf_ctx *ctx, char *const argv[], const char *cwd, char *const env[],
                          const kf_limits *lim, const char *const *ro, int nro, const char *const *rw,
                          int nrw, double timeout_s, kf_buf *log, int *exit_code);

#endif
