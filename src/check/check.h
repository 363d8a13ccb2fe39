/*
 * check.h - internals shared by the checker and the bench: an evaluation session
 * (task, candidate, builds, secret RNG, scratch directory) and the single call path
 * that correctness trials and timed runs both use.
 */
#ifndef KF_CHECK_H
#define KF_CHECK_H

#include "../backend/backend.h"
#include "../data/data.h"
#include "../sandbox/sandbox.h"
#include "result.h"

#include <limits.h>
#include <sched.h>

/* -v's phase clock: the reference thread and the main thread write disjoint slots */
enum {
    KF_PROF_REF_GEN,
    KF_PROF_REF_CALL,
    KF_PROF_REF_CHECK,
    KF_PROF_CAND_STAGE,
    KF_PROF_CAND_CALL,
    KF_PROF_CAND_JUDGE,
    KF_PROF_N
};

typedef struct {
    kf_ctx *ctx;
    const kf_task *t;
    const kf_opts *o;
    kf_backend *be;
    kf_rng rng;  /* inputs, shapes, the reference's poison and places */
    kf_rng crng; /* the candidate's poison and places (its own stream: the
                    reference is prepared in another thread meanwhile) */
    char workdir[PATH_MAX];
    kf_candidate *cand;      /* NULL for validate */
    kf_build cbuild, rbuild; /* candidate, reference */
    kf_result *res;
    uint64_t t0;
    unsigned long json_failures;      /* kf__json_failures() at the start: the result is whole
                                         when it has not moved */
    int timing;                       /* bench's timed phase: its protocol on every side */
    int pinned;                       /* ... with this thread on a CPU of its own: workers
                                         spin-waited and kept off it */
    int have_occ;                     /* occ holds the first checking call's (GPU kernel mode reports them) */
    int host_timing;                  /* GPU: the host-mode timing protocol on every side */
    int cand_graph;                   /* GPU host mode: CUPTI saw the candidate launch a graph */
    const void *cand_side;            /* -v: the check's candidate side (a kf_side), for prof */
    uint64_t prof[KF_PROF_N];         /* -v: nanoseconds per phase (KF_PROF_*) */
    uint64_t stprof[4];               /* bench -v: a timed call's staging steps, ns summed (and calls) */
    int precise;                      /* GPU calls with one allocation per buffer (sanitize.c) */
    double call_timeout_s;            /* overrides o->call_timeout_s when > 0 (sanitize.c) */
    uint32_t occ[KF_PROTO_MAXLAUNCH]; /* resident blocks per SM of each launch */
    cpu_set_t worker_cpus;
    cpu_set_t check_cpus; /* a checking worker's CPUs: the same count as a timing worker's */
    int have_check_cpus;  /* set once in kf_sess_open; read only after */
    cpu_set_t all_cpus;   /* every CPU this process may use (the parallel call's) */
    int parallel_call;    /* check_cpus is one CPU of several: some calls run on all */
    cpu_set_t one_cpu;    /* one CPU of check_cpus: the solo calls' (check_shape) */
    int cand_called;      /* the candidate's checking worker has made a call */
    int interleave;       /* the next candidate call runs with KF_RUN_INTERLEAVE */
    int interleaved;      /* some call did */
    int cand_threads;     /* a candidate call ran threads (KF_DONE_THREADS): race rounds */
    int race_calls;       /* the race rounds' calls (check_shape) */
    int base_nice;        /* this process's nice value, which workers inherit */
    char python[PATH_MAX]; /* a PyTorch reference's python3 (kf_torch_python), or "" */
} kf_sess;

/* One side of a comparison: a worker and where its current buffers sit. */
typedef struct {
    kf_worker *w;
    kf_layout lay;
    const kf_build *b; /* what it runs (GPU builds carry their launches) */
    int graph;         /* GPU kernel mode: timed as a captured graph (a graph baseline) */
    int wait_idle;     /* GPU, bench: waits for an idle device before timed spans (KF_RUN_WAIT_IDLE) */
    kf_spent spent;    /* CPU candidates: what earlier calls used, poisoned and verified */
    int magnitude;     /* the reference's worker: calls go to the task's magnitude function */
} kf_side;

/* A task's PyTorch reference (torch.c, docs/torch.md). The python3 that runs it, into out:
 * $KFORGE_PYTHON, else the project's .venv beside the build, else python3 in PATH;
 * KF_ETASK with what to do when there is none. */
kf_status kf_torch_python(kf_ctx *ctx, char *out, size_t n);
/* The runner's source (python3 -c), static. */
const char *kf_torch_runner(void);
/* The runner's configuration message for task t (cpus: a cpu_set_t, or NULL): 0, or -1
 * when it does not fit in n bytes. */
int kf_torch_config(const kf_task *t, const void *cpus, char *out, size_t n);
/* A kf_worker_opts.exec_warm for the runner (python: its python3's path): the runner
 * forked by the warm server of that python3 (a stand-in in *pid, the runner in *peer),
 * else by this process's warm process; either is started (or replaced) here when needed.
 * Thread-safe. KFORGE_TORCH_WARM=0: always -1 (cold starts); =process: this process's
 * warm process only (docs/torch.md "Across invocations"). */
int kf_torch_warm_spawn(void *python, const int fds[6], pid_t *pid, pid_t *peer, char *err, size_t n);
/* Where the warm server of python listens, into out (its directory made, mode 0700): 0,
 * or -1 (no such directory of this user's, or a path too long for a socket). */
int kf_torch_server_path(const char *python, char *out, size_t n);
/* The warm process's pid, or -1 when there is none (tests). */
pid_t kf_torch_warm_pid(void);
/* Each buffer's extents at ex into m->extent (the runner's RUN message only). */
void kf_torch_extents(const kf_task *t, const kf_extents *ex, kf_msg_run *m);

kf_status kf_sess_open(kf_sess *s, kf_ctx *ctx, const kf_task *t, const char *cand_path, const kf_opts *o,
                       const char *kind);
void kf_sess_close(kf_sess *s);
/* The check of an open session (kf_check's, and kf_bench's first part): both builds, then
 * every shape; the verdict and its reasons are on s->res. KF_OK whatever the verdict; an
 * error for the session's own failures (a broken task, the sandbox). */
kf_status kf_sess_check(kf_sess *s);
/* End a session: with st KF_OK, its result (with "seconds") goes to *out, the caller's to
 * free with kf_result_free; the session is closed either way. Returns st. */
kf_status kf_sess_finish(kf_sess *s, kf_status st, kf_result **out);
/* Build the reference (a failure is a task error) and, when the session has one, the
 * candidate (a failure is a rejection recorded on s->res; *cand_ok = 0). */
kf_status kf_sess_build(kf_sess *s, int *cand_ok);
kf_status kf_sess_build_ref(kf_sess *s);
/* Build the candidate into s->cbuild, reporting errors on ctx (thread-safe with respect
 * to everything but s->cbuild). */
kf_status kf_sess_build_cand(kf_sess *s, kf_ctx *ctx);
/* Spawn a worker for a built object with an arena for `bytes` of layouts. *w NULL and
 * a rejection recorded (with `who` in the message) when the object fails to load. */
kf_status kf_sess_spawn(kf_sess *s, const kf_build *b, size_t bytes, kf_side *side, kf_call_result *fail);
/* The same with errors in ctx: for a worker started on another thread (its
 * parent-death signal follows that thread, which must outlive the worker). */
kf_status kf_sess_spawn_in(kf_sess *s, kf_ctx *ctx, const kf_build *b, size_t bytes, kf_side *side,
                           kf_call_result *fail);
/* Arena bytes for two layouts of ex plus placement jitter. */
size_t kf_sess_arena_bytes(const kf_task *t, const kf_extents *ex);
/* Place the buffers in half `half` (0/1) of the arena, with a random jitter. */
void kf_sess_place(kf_sess *s, kf_rng *rng, const kf_extents *ex, int half, kf_layout *lay);
/* The one call path: stage inputs and poison, flush caches, call once. */
void kf_sess_call(kf_sess *s, kf_side *side, const kf_extents *ex, const kf_inputs *in, const kf_poison *p,
                  kf_call_result *cr);
/* Copy the out/inout buffers of a side into fresh heap buffers (outs[i]). */
int kf_sess_take_outputs(const kf_sess *s, kf_side *side, const kf_extents *ex, void **outs);
/* The same into the buffers outs holds from an earlier call at the same extents (NULL
 * ones allocated; the others' stay out of the arena as they were). */
int kf_sess_retake_outputs(const kf_sess *s, kf_side *side, const kf_extents *ex, void **outs);
void kf_sess_free_outputs(const kf_task *t, void **outs);
/* The sizes of sh, their names in the session's verdict's pool. */
void kf_sess_sizes(kf_sess *s, const kf_shape *sh, kf_verdict_sizes *out);

/* Judge one candidate call against reference outputs `ref`. Returns 0 when the
 * outputs pass; records reasons otherwise. `prev` (may be NULL, nprev entries) are
 * reference outputs of earlier calls, for stale-result detection. max_abs/max_rel get
 * the largest errors seen. With magnitudes (kf_task_mtol): mag[i] is the magnitude of
 * this call's output i (kf_sess_magnitude), prevmag[k]
 * the earlier calls'; either may be NULL (no magnitude term). */
int kf_judge_mag(kf_sess *s, kf_side *side, const kf_extents *ex, const kf_inputs *in, const kf_poison *p,
                 void **ref, void **mag, void ***prev, void ***prevmag, int nprev,
                 const kf_verdict_sizes *shape, const char *when, double *max_abs, double *max_rel);

/* Does any output of side's last call with an mtol fail its bound against ref, with the
 * magnitudes mag (NULL: atol + rtol*|ref| alone, where the magnitudes would then
 * decide)? 1 or 0. Magnitude runs are made only where this says they decide. */
int kf_sess_mtol_fails(const kf_sess *s, const kf_side *side, const kf_extents *ex, void **ref, void **mag);

/* A write into memory earlier calls used (kf_spent), found by a verification so far:
 * recorded once as out_of_bounds on s->res (shape may be NULL); 1 when recorded now.
 * Verify what is still poisoned first with kf_data_spent_check. */
int kf_sess_spent_report(kf_sess *s, kf_side *side, const kf_verdict_sizes *shape, const char *when);

/* A watched worker (kf_backend_watches_libraries: GPU host mode): the shared libraries
 * side's (frozen) worker has mapped, from /proc/PID/maps (the kernel's view), merged into
 * the result's "libraries_loaded" (null when the maps are unreadable: kforge not root);
 * a vendor compute library the candidate did not declare (kf_backend_undeclared) was
 * loaded behind the allow-list's back: sandbox_violation, with when ("seen while
 * timing") in the message. Run after every shape of a check and every call of a timing
 * worker, so a library loaded only where the candidate detects timing is seen too. 1
 * when it rejected. */
int kf_check_libraries(kf_sess *s, kf_side *side, const char *when);

/* Do two sets of outputs agree under the task's determinism rule (bitwise, or within
 * the tolerance: atol + rtol*|b| + mtol*M, M from mag, the inputs' magnitudes
 * (kf_sess_magnitude), or NULL for none)? */
int kf_outputs_same(const kf_task *t, const kf_extents *ex, void **a, void **b, void **mag);

/* Task-level degeneracy at one shape, judged over nsets input sets and their reference
 * outputs: would zeros, a copied input, or the output of other inputs pass as the
 * reference on EVERY set? (One set can pass by chance at tiny shapes.) 0 with *why a
 * description (caller frees) or NULL; -1 when memory ran out (the question is then
 * open). Not errno: a successful allocation may leave ENOMEM there (glibc does, on
 * the H200 host, for a 32 MiB calloc). */
int kf_degenerate(const kf_task *t, const kf_extents *ex, const kf_inputs *in, void ***ref, void ***mag,
                  int nsets, char **why);
/* For a task with an mtol (kf_task_has_mtol): the reference (side ref, at its current
 * layout) on the absolute values of in's float inputs, or the task's magnitude function
 * (t->mag_fn) on in itself, in the reference's worker; its float outputs with an mtol
 * into mag[i] (the magnitude M of what each element sums; the rest NULL). KF_OK with mag
 * all NULL for other tasks; KF_ETASK when the reference fails. Free with
 * kf_sess_free_outputs. */
kf_status kf_sess_magnitude(kf_sess *s, kf_ctx *ctx, kf_side *ref, const kf_extents *ex, const kf_inputs *in,
                            kf_rng *rng, void **mag, const char *shape_txt);

/* ---- compute-sanitizer (sanitize.c) ---- */

/* What one compute-sanitizer report says. */
typedef struct {
    int errors;        /* findings that reject: the error summary, racecheck's errors, or
                          1 when the tool exited with its error code and nothing parsed */
    int warnings;      /* racecheck's warnings (warp-synchronous hazards): reported only */
    int summary;       /* 1 when the report has a summary line (the tool finished) */
    char first[512];   /* the first finding's headline and location, when errors > 0 */
    char report[4096]; /* the report's first 40 lines, capped */
} kf_san_report;

/* "memcheck,racecheck" -> KF_SANITIZE_* bits; 0 for an empty list or an unknown tool. */
unsigned kf_sanitize_parse_tools(const char *list);
/* Locate compute-sanitizer: KFORGE_SANITIZER (only it, when set), then $CUDA_HOME,
 * $CUDA_PATH, /usr/local/cuda and /usr/local/cuda-* (compute-sanitizer/ and bin/), then
 * PATH. 0 with the path in out, or -1 with what was tried in why. */
int kf_sanitize_find(char *out, size_t n, char *why, size_t wn);
/* Parse a report (log may be NULL: no report) and the tool's exit status (-1 unknown). */
void kf_sanitize_parse(const char *log, int exit_code, kf_san_report *r);
/* Before a check with o->sanitize: a usage error for a non-CUDA task or unknown bits,
 * KF_EBACKEND when compute-sanitizer is missing; KF_OK with its path in path. */
kf_status kf_sanitize_prepare(kf_ctx *ctx, const kf_task *t, const kf_opts *o, char *path, size_t n);
/* After an accepted check: run each selected tool over the visible shapes, record the
 * "sanitizer" object and reject with KF_REASON_SANITIZER on any finding. A tool that
 * cannot run is recorded as not run; the status is for the session's own failures. */
kf_status kf_sanitize_run(kf_sess *s, const char *sanitizer_path);

#endif
