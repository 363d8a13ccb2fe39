/*
 * kforge.h - the one public header of libkforge.
 *
 * kforge checks a candidate compute kernel against a task's trusted reference, in a
 * sandboxed worker process, on visible, hidden and edge shapes with fresh secret-seeded
 * inputs, and times it fairly against a baseline. Everything a client needs is here:
 * opaque handles, status codes, options, and read access to results (as JSON or as a
 * short human summary).
 *
 * Typical use:
 *
 *     kf_ctx *ctx = kf_ctx_new();
 *     kf_task *task;
 *     if (kf_task_load(ctx, "tasks/c/saxpy", &task) != KF_OK)
 *         fprintf(stderr, "%s\n", kf_errmsg(ctx));
 *     kf_opts opts;
 *     kf_opts_init(&opts);
 *     kf_result *res;
 *     if (kf_check(ctx, task, "cand.c", &opts, &res) == KF_OK) {
 *         char *json = kf_result_json(res);  ...  free(json);
 *         kf_result_free(res);
 *     }
 *     kf_task_free(task);
 *     kf_ctx_free(ctx);
 *
 * Thread safety: a kf_ctx and everything made with it belong to one thread at a time.
 */
#ifndef KFORGE_H
#define KFORGE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define KF_API __attribute__((visibility("default")))
#else
#define KF_API
#endif

#define KF_VERSION "0.1.0"

/* Status codes. X(name, text). KF_OK is 0; every other value is an error whose detail
 * is on the context (kf_errmsg). A rejected candidate is NOT an error: kf_check returns
 * KF_OK with a result whose verdict is KF_VERDICT_REJECTED. KF_EBUSY: a run directory
 * is held by another writer (kf_run, tool mode); KF_EENV: kf_run or kf_run_submit
 * stopped because the machine failed an evaluation (a full disk, no compiler, no
 * process could start): nothing was recorded for it, and the run resumes once the
 * environment is fixed. */
#define KF_STATUS_MAP(X)                 \
    X(OK, "ok")                          \
    X(EUSAGE, "bad usage")               \
    X(ETASK, "invalid task")             \
    X(EIO, "i/o error")                  \
    X(ENOMEM, "out of memory")           \
    X(EBACKEND, "backend unavailable")   \
    X(EINTERNAL, "internal error")       \
    X(EBUSY, "in use by another writer") \
    X(EENV, "the environment failed")

// clang-format off
typedef enum {
#define KF_X(n, s) KF_##n,
    KF_STATUS_MAP(KF_X)
#undef KF_X
    KF_STATUS_COUNT
} kf_status;
// clang-format on

/* Rejection reasons: a fixed vocabulary, stable across versions (docs/checker.md). */
#define KF_REASON_MAP(X)                      \
    X(COMPILE_ERROR, "compile_error")         \
    X(MISSING_ENTRY, "missing_entry")         \
    X(WRONG_RESULT, "wrong_result")           \
    X(NONFINITE, "nonfinite")                 \
    X(UNWRITTEN_OUTPUT, "unwritten_output")   \
    X(INPUT_MODIFIED, "input_modified")       \
    X(OUT_OF_BOUNDS, "out_of_bounds")         \
    X(NONDETERMINISTIC, "nondeterministic")   \
    X(STALE_RESULT, "stale_result")           \
    X(TIMING_MISMATCH, "timing_mismatch")     \
    X(CRASH, "crash")                         \
    X(TIMEOUT, "timeout")                     \
    X(RESOURCE_LIMIT, "resource_limit")       \
    X(SANDBOX_VIOLATION, "sandbox_violation") \
    X(SANITIZER, "sanitizer")                 \
    X(DEGENERATE_TASK, "degenerate_task")     \
    X(DOMAIN_ERROR, "domain_error")

// clang-format off
typedef enum {
#define KF_X(n, s) KF_REASON_##n,
    KF_REASON_MAP(KF_X)
#undef KF_X
    KF_REASON_COUNT
} kf_reason;
// clang-format on

typedef enum { KF_VERDICT_ACCEPTED = 0, KF_VERDICT_REJECTED = 1 } kf_verdict;

typedef struct kf_ctx kf_ctx;       /* error state and shared settings */
typedef struct kf_task kf_task;     /* a loaded, validated task */
typedef struct kf_result kf_result; /* the outcome of check, bench or validate */

/* Options for check, bench and validate. Initialise with kf_opts_init, then set fields.
 * Strings are borrowed: they must outlive the call. */
typedef struct kf_opts {
    uint64_t seed;       /* input seed; used only when has_seed (reproduction) */
    int has_seed;        /* 0: a fresh secret seed from getrandom() per call */
    const char **params; /* "NAME=VALUE" template parameter selections */
    int nparams;
    const char *vs_path;      /* bench: baseline candidate file (NULL: the reference) */
    double call_timeout_s;    /* wall deadline of one call in the worker (default 10) */
    double cpu_limit_s;       /* CPU seconds for one worker process (default 60) */
    double compile_timeout_s; /* wall deadline of one compile (default 60) */
    uint64_t mem_limit;       /* bytes of address space a worker may add (default 2 GiB) */
    uint64_t buffer_cap;      /* max bytes of all buffers of one shape (default 1 GiB) */
    int hidden_count;         /* -1: the task's hidden.count */
    double bench_min_time_s;  /* bench: minimum timed seconds per shape and side (0.3) */
    int bench_min_runs;       /* bench: minimum timed rounds per shape (15) */
    int bench_max_runs;       /* bench: maximum timed rounds per shape (400) */
    double win_floor;         /* bench: relative noise floor a win must clear (0.05) */
    int verbose;              /* progress lines on stderr */
    unsigned sanitize;        /* check, CUDA tasks: KF_SANITIZE_* tools to run after an
                                 accepted check (0: none) */
    double bench_precision;   /* bench: a shape's rounds stop, past bench_min_runs and 20,
                                 once the speedup's 95% interval is within +/- this
                                 fraction of it, before bench_min_time_s (0: off, the
                                 default; the loop's evaluations use 0.01) */
    const char *timing_lock;  /* bench: a file shared with other processes that time on
                                 these CPUs: each timed phase holds a lock on it per CPU
                                 it may use (NULL: $KFORGE_TIMING_LOCK, else none) */
} kf_opts;

/* compute-sanitizer tools for kf_opts.sanitize (docs/cuda.md) */
#define KF_SANITIZE_MEMCHECK 1u
#define KF_SANITIZE_RACECHECK 2u
#define KF_SANITIZE_INITCHECK 4u
#define KF_SANITIZE_ALL 7u

KF_API void kf_opts_init(kf_opts *o);

/* Context. kf_ctx_new returns NULL only when out of memory. kf_ctx_free accepts NULL. */
KF_API kf_ctx *kf_ctx_new(void);
KF_API void kf_ctx_free(kf_ctx *ctx);
/* The detail of the last error on ctx ("task.json:12:5: unknown field 'shpe'").
 * Valid until the next call on ctx. Never NULL. */
KF_API const char *kf_errmsg(const kf_ctx *ctx);
/* Static text of a status code. */
KF_API const char *kf_strstatus(kf_status s);
/* Stable name of a reason code ("stale_result"), or "unknown". */
KF_API const char *kf_reason_name(kf_reason r);

/* The name of the i-th backend of this build ("c", "cuda", ...; i from 0), or NULL past the
 * last: what a task's "backend" and a lesson's --backend may name. */
KF_API const char *kf_backend_name_at(int i);

/* Load and validate the task in directory dir (task.json plus the backend's reference).
 * KF_ETASK with the file, position and problem on ctx when it is malformed; KF_EIO when a
 * file is missing. On success *out is owned by the caller: free with kf_task_free. */
KF_API kf_status kf_task_load(kf_ctx *ctx, const char *dir, kf_task **out);
KF_API void kf_task_free(kf_task *task);
KF_API const char *kf_task_name(const kf_task *task);

/* Check a candidate source file against the task. KF_OK means a verdict was reached
 * (accepted or rejected) and *out holds it; other codes mean no verdict (usage, task,
 * or environment errors; detail on ctx). Caller frees *out with kf_result_free. */
KF_API kf_status kf_check(kf_ctx *ctx, const kf_task *task, const char *candidate, const kf_opts *opts,
                          kf_result **out);

/* Check, then time the candidate against the baseline (opts->vs_path or the reference)
 * on every visible shape in its domain. Same return contract as kf_check; a candidate
 * rejected by the check is not timed. */
KF_API kf_status kf_bench(kf_ctx *ctx, const kf_task *task, const char *candidate, const kf_opts *opts,
                          kf_result **out);

/* Validate the task itself: the reference builds and runs on every visible shape and on
 * drawn hidden ones, is deterministic, and all-zero, input-copy and other-input outputs
 * would fail the tolerance. KF_OK with an accepted verdict when the task is sound,
 * KF_OK with a rejected verdict when it is degenerate (reasons say why). */
KF_API kf_status kf_validate(kf_ctx *ctx, const kf_task *task, const kf_opts *opts, kf_result **out);

/* `kforge import kernelbench` (docs/torch.md): read the KernelBench-format problem file
 * `problem` (a Model class, get_inputs, get_init_inputs) and write into outdir (created
 * when missing; its task.json, reference.py and problem.py replaced) a C task whose
 * reference is PyTorch, its sizes ranging over [v * scale_lo, v * scale_hi] around the
 * problem's values v (0 < scale_lo <= 1 <= scale_hi), then validate it with opts. KF_OK
 * with *json (caller frees) an object: "problem", "status" ("validated"; "invalid" or
 * "refused", with "reason"), "name", "dir", "notes" (what was assumed). An error status
 * when the import cannot run at all (no python3 with torch: KF_ETASK; bad usage). */
KF_API kf_status kf_import_kernelbench(kf_ctx *ctx, const char *problem, const char *outdir, double scale_lo,
                                       double scale_hi, const kf_opts *opts, char **json);

/* Describe CUDA device `device` (0 is the one kernel mode uses) as one JSON object
 * (docs/cli.md, device-info): its attributes, ceilings measured on it (copy bandwidth,
 * f32 FMA and bf16 tensor rates) and theoretical figures. Measured ceilings are cached
 * per device UUID and driver version, keeping the best ever seen; refresh measures
 * again. KF_EBACKEND without a driver, a device or NVRTC; KF_EUSAGE for a device
 * number out of range. On KF_OK the caller frees *json with free(). */
KF_API kf_status kf_device_info(kf_ctx *ctx, int device, int refresh, char **json);

/* kforge run (docs/run.md): the optimisation loop. Initialise with kf_run_opts_init. */
typedef struct kf_run_opts {
    const char *task_dir;    /* NULL with resume: the run's own task */
    const char *run_dir;     /* NULL: runs/<task>-<date> */
    const char *agent;       /* "builtin", "cmd:COMMAND", "openai:MODEL"; NULL: builtin, or
                                on resume the run's own (docs/agents.md) */
    int with_builtin;        /* an agent run: the builtin proposer too, when the task has
                                a template */
    const char *base_url;    /* openai: NULL: $OPENAI_BASE_URL, else OpenAI's */
    const char *api_key_env; /* openai: the variable holding the key (NULL: OPENAI_API_KEY);
                               only its name is recorded, never the key */
    double agent_timeout_s;  /* one proposal's wall time (0: the agent's default) */
    int64_t tokens;          /* stop once the recorded tokens (in + out) reach this (0: none) */
    int budget;              /* evaluations in all, the run's earlier ones included (20) */
    double wall_s;           /* 0: no wall-time budget */
    int resume;              /* continue the run in run_dir */
    uint64_t seed;           /* the builtin proposer's and the inputs' seed, when has_seed */
    int has_seed;
    double target;          /* stop at this geometric-mean speedup (0: none) */
    int patience;           /* stop after this many evaluations without a better one (0: none) */
    double keep_margin;     /* a node beats its parent by more than this, besides the noise (0) */
    const char *search[16]; /* "KEY=VALUE" settings of the search policy */
    int nsearch;
    const char *critic[8]; /* "KEY=VALUE" settings of the Critic (docs/run.md); recorded in
                              the run and reused by --resume when none is given */
    int ncritic;
    const char *critic_agent; /* "cmd:COMMAND" or "openai:MODEL": a second, advisory opinion
                               on each node the Critic approves (never deciding); recorded
                               in the run and reused by --resume */
    int hidden;               /* hidden shapes per check (-1: the task's) */
    int min_runs, max_runs;   /* bench rounds (0: the defaults) */
    double min_time_s;
    double precision;        /* bench_precision of the loop's evaluations (-1: 0.01; 0: off) */
    int jobs;                /* evaluations at once, 1..KF_RUN_MAX_JOBS (0: 1, or on resume
                                the run's own) */
    const char *lessons;     /* a lessons database (docs/lessons.md): for agents' context packs
                                (NULL: the default one when it exists) and, when named, as the
                                builtin's prior (docs/run.md "Lessons"); "none": no lessons;
                                "default": the default one, named. Not a new one with resume:
                                a resumed run keeps what its start recorded. */
    int64_t pack_tokens;     /* each context pack's token budget (0: 18000) */
    int screen;              /* submit: the full check and one short timing, recorded as
                                `screened` (never kept); run: every proposal screened first,
                                only the promising ones evaluated in full (recorded, --resume) */
    const char *description; /* submit: a one-line description of the change (its first
                               line, at most 200 bytes, is kept), shown by tree and
                               carried into lessons; NULL: none */
    /* scale-out (docs/scale.md): evaluations on workers instead of in this process; none
     * of these is recorded in the run (a resume says again where it evaluates) */
    const char *listen;   /* "unix:PATH" or "tcp:HOST:PORT" where workers may join */
    const char *devices;  /* "all" or "0,2,5": one local worker per GPU */
    int workers;          /* local CPU workers, or with launcher "slurm" Slurm jobs */
    const char *launcher; /* "local" (NULL) or "slurm" */
    const char *slurm[8]; /* sbatch arguments (--partition P, --gres G, ...) */
    int nslurm;
    const char *secret_file; /* the run's secret (NULL: the keys directory's
                                scale-HASH.secret, HASH of the run directory's path) */
} kf_run_opts;

#define KF_RUN_MAX_JOBS 64

KF_API void kf_run_opts_init(kf_run_opts *o);
/* Run (or resume) the loop. KF_OK when it stopped by a rule (summary: one JSON object,
 * caller frees); another status when it could not run (detail on ctx). Every finished
 * evaluation is in the run's store whatever happens to this process. */
KF_API kf_status kf_run(kf_ctx *ctx, const kf_run_opts *o, char **summary);
/* kforge worker (docs/scale.md): join the coordinator at connect and evaluate what it
 * sends, one request at a time, until it says leave (KF_OK) or no coordinator is reached
 * for wait_s seconds (KF_EENV when it never joined). KF_EUSAGE for bad options, an
 * unreadable secret or a coordinator that refuses it. */
typedef struct kf_scale_worker_opts {
    const char *connect;     /* "unix:PATH" or "tcp:HOST:PORT" */
    const char *secret_file; /* the run's secret (NULL: $KFORGE_SCALE_SECRET_FILE) */
    const char *name;        /* NULL: HOST-PID */
    const char *device;      /* "cuda:K": bound to GPU K (CUDA_VISIBLE_DEVICES=K); NULL: none */
    const char *cpus;        /* "0-3,6": the CPUs it runs on; NULL: its affinity as started */
    double wait_s;           /* how long to keep trying to (re)join (0: 60) */
} kf_scale_worker_opts;
KF_API kf_status kf_worker_serve(kf_ctx *ctx, const kf_scale_worker_opts *o);
/* kforge drain: ask the coordinator of run directory target (its scale.json), or at the
 * address target, to finish what is in flight and stop. *json: its answer (caller frees). */
KF_API kf_status kf_scale_drain(kf_ctx *ctx, const char *target, const char *secret_file, char **json);
/* The run's lineage as an indented tree (json 0) or one JSON object; caller frees. */
KF_API kf_status kf_run_tree(kf_ctx *ctx, const char *run_dir, int json, char **out);
/* The best verified node per visible shape; caller frees. */
KF_API kf_status kf_run_best(kf_ctx *ctx, const char *run_dir, int json, char **out);
/* The run's lineage report (docs/report.md): format "html" (or NULL) one self-contained
 * HTML page, "md" the same sections as Markdown. A system run's directory (it holds
 * system.json, from `kforge system run`) gets its pipeline report, and format "json" its
 * record with the counts and the integrity (`kforge system report --json`). *out is
 * the caller's (free()), *len (may be NULL) its bytes. Read-only. KF_EUSAGE for another
 * format; the store's errors (no such run: KF_EIO) otherwise. */
KF_API kf_status kf_report_run(kf_ctx *ctx, const char *run_dir, const char *format, char **out, size_t *len);
/* A system run's record (docs/system.md "The record"): json (one JSON object) written to
 * dir/system.json whole (beside it, then renamed), with "pipeline_file" (the pipeline's
 * absolute path) and "pipeline_sha256" (its bytes' digest) added, then sealed under the
 * run's key in the keys directory (a new one at the first save; dir/system.seal: the key id
 * and the HMAC of system.json's bytes, and the previous save's as "prev_mac"), so that
 * `kforge report` shows a record changed by hand. Both files are replaced atomically
 * (seal first), so a save may be repeated as the run goes and a kill leaves a sealed
 * record. KF_EUSAGE for text that is not an object, KF_EIO when a file cannot be written
 * (the seal's key missing included). */
KF_API kf_status kf_sysrun_save(kf_ctx *ctx, const char *dir, const char *json);
/* `kforge system run --resume`: the record of the unfinished system run in dir as one JSON
 * object (*json, caller frees), once it is sealed, records its "state" and was started
 * on the pipeline file's exact bytes (its sha256). KF_EUSAGE with the reason otherwise (a
 * tampered or unsealed record, another pipeline, a finished run); KF_EIO without one. */
KF_API kf_status kf_sysrun_resume(kf_ctx *ctx, const char *dir, const char *pipeline, char **json);
/* `kforge system run`'s hold on dir, for as long as it runs (dir/lock, a loop run's
 * writer's lock: docs/run.md "One writer at a time"), so that two system runs, or two
 * resumes, never work in one directory at once. command: "system run" or "system run
 * --resume" (the holder's line names it). KF_OK and *out (kf_sysrun_unlock); KF_EBUSY when
 * another holds it ("DIR is in use by kforge system run (pid N on HOST since TIME)");
 * KF_EIO when the lock file cannot be made. dir must exist. */
typedef struct kf_store_lock kf_sysrun_lock; /* the store's writer's lock, opaque */
KF_API kf_status kf_sysrun_lock_take(kf_ctx *ctx, const char *dir, const char *command, kf_sysrun_lock **out);
KF_API void kf_sysrun_unlock(kf_sysrun_lock *l); /* accepts NULL */
/* Tool mode (docs/agents.md): the context pack of the best-scoring action for the "tool"
 * proposer in o->run_dir (o's search and bench fields apply), recorded as a pending
 * action; while it is pending (not submitted, under 30 minutes old) later calls offer
 * other actions. *out: text or one JSON object, caller frees. KF_EUSAGE when no action
 * is left. */
KF_API kf_status kf_run_next(kf_ctx *ctx, const kf_run_opts *o, int json, char **out);
/* Tool mode: evaluate the file at path as a child of node parent (0: the root) in
 * o->run_dir, with the loop's check, timing and Critic, and record it (proposer "tool";
 * category NULL: the pending action's for this parent, else "other"). *outcome: 0 the
 * candidate passed the check (measured, kept or reverted), 1 it was rejected or did not
 * build, 2 the evaluation itself failed (recorded as crashed). *out as kf_run_next.
 * KF_EUSAGE for an unknown parent, a parent that did not pass the check, an unreadable
 * file, an unknown category, or a file that contradicts its category (a kforge:when in
 * anything but a specialisation, a specialisation without one): nothing recorded, nothing
 * compiled or timed. A text the run already evaluated is not evaluated again: *outcome 1,
 * *out says which node it is the same source as, and no node is recorded. */
KF_API kf_status kf_run_submit(kf_ctx *ctx, const kf_run_opts *o, int64_t parent, const char *path,
                               const char *category, int json, char **out, int *outcome);
/* Tool mode: a full evaluation (check, timing, the Critic) of screened node `node` of
 * o->run_dir, recorded as a new node with its source, parent and category and a
 * `promoted_from` in its submit event; the screened node stays as it was. *outcome and
 * *out as kf_run_submit's (a text the run has already evaluated in full is pruned).
 * KF_EUSAGE for a node that is not screened (nothing recorded). */
KF_API kf_status kf_run_promote(kf_ctx *ctx, const kf_run_opts *o, int64_t node, int json, char **out,
                                int *outcome);
/* kforge export (docs/run.md): write the run's per-shape winners to out_dir as
 * <task>_<node>.<ext>, and for C tasks <task>_dispatch.c, one file that calls the right
 * winner by shape (else the best all-shape node), checked and timed (kf_bench with opts;
 * NULL: the defaults) before it is written; EXPORT.json describes it all and *json gets
 * its text (caller frees). KF_OK also when the dispatcher was rejected: it is then not
 * written, and EXPORT.json has "dispatcher": null and the verification's reasons.
 * KF_EUSAGE: no verified node, out_dir is a file or a foreign non-empty directory;
 * KF_EIO, KF_ETASK (the task changed since the run): nothing is written. */
KF_API kf_status kf_run_export(kf_ctx *ctx, const char *run_dir, const char *out_dir, char **json);
KF_API kf_status kf_run_export_opts(kf_ctx *ctx, const char *run_dir, const char *out_dir,
                                    const kf_opts *opts, char **json);
/* `kforge export RUN --torch -o DIR` (docs/torch.md), after kf_run_export into out_dir:
 * DIR/torch, a Python package that makes the accepted dispatcher the PyTorch custom op
 * torch.ops.kforge.<entry> (torch.library, built through torch.utils.cpp_extension), its
 * test against the task's reference and a README; with run_test, the test runs once
 * (building the package). KF_OK with *json (caller frees) {"package", "op", "test":
 * "passed" | "failed" | "not run", "output"}; KF_EUSAGE when the export has no accepted
 * dispatcher or the task cannot be an op (inout buffers), KF_ETASK without python3 and
 * torch. */
KF_API kf_status kf_run_export_torch(kf_ctx *ctx, const char *out_dir, int run_test, char **json);

/* Lessons (docs/lessons.md): scoped advice distilled from runs or written by an agent or a
 * person, kept in a lessons database (SQLite + FTS5) and retrieved for a context pack in
 * three stages: a hard filter by scope and tags, a hybrid ranking (BM25 and an embedding,
 * fused by reciprocal rank), a trust threshold. Lessons travel as JSON objects (one per
 * line in export/import); the format is in docs/lessons.md. */
typedef struct kf_lessons kf_lessons;

typedef struct kf_lessons_opts {
    const char *embed_url;   /* NULL: the built-in offline embedding; else the base URL of an
                                OpenAI-compatible server: POST {embed_url}/embeddings */
    const char *embed_model; /* the model named in that request (required with embed_url) */
    const char *api_key_env; /* the variable holding its key (NULL: OPENAI_API_KEY; unset: none) */
    double timeout_s;        /* one embeddings request (default 30) */
} kf_lessons_opts;

KF_API void kf_lessons_opts_init(kf_lessons_opts *o);
/* The shared lessons database: $XDG_DATA_HOME/kforge/lessons.db, else
 * ~/.local/share/kforge/lessons.db (written to out, n bytes). */
KF_API void kf_lessons_default_path(char *out, size_t n);
/* Open (creating it and its directory when missing) the lessons database at path; o NULL:
 * the defaults. When the database was embedded by another embedding than o's, every
 * lesson is embedded again (one transaction). KF_EIO with the path and SQLite's message,
 * KF_EBACKEND when the embeddings endpoint fails, KF_EUSAGE for bad options. On KF_OK
 * *out is the caller's: kf_lessons_close. ctx must outlive it (errors go there). */
KF_API kf_status kf_lessons_open(kf_ctx *ctx, const char *path, const kf_lessons_opts *o, kf_lessons **out);
KF_API void kf_lessons_close(kf_lessons *db); /* accepts NULL */
/* The embedding in use ("hashgram-v2-512" or "openai:MODEL@URL"); owned by db. */
KF_API const char *kf_lessons_embedding(const kf_lessons *db);

/* Add one lesson given as a JSON object (docs/lessons.md). KF_EUSAGE, naming the field,
 * when it has no situation or no action or a field is malformed (nothing stored). A
 * lesson whose "id" exists already replaces it. id (64 bytes, may be NULL) receives the
 * lesson's id. */
KF_API kf_status kf_lessons_add_json(kf_lessons *db, const char *json, char id[64]);
/* The same; *replaced (may be NULL) is 1 when a lesson of that id existed and was
 * replaced, else 0. */
KF_API kf_status kf_lessons_add_json_ex(kf_lessons *db, const char *json, char id[64], int *replaced);
/* What kf_lessons_add_json and kf_lessons_import would refuse, without a database: the
 * same KF_EUSAGE and message (NAME:LINE for JSON Lines), errors on ctx. */
KF_API kf_status kf_lessons_check_json(kf_ctx *ctx, const char *json);
KF_API kf_status kf_lessons_check_jsonl(kf_ctx *ctx, const char *text, size_t len, const char *name);
/* One lesson as a JSON object (caller frees). KF_EUSAGE for an unknown id. */
KF_API kf_status kf_lessons_get_json(kf_lessons *db, const char *id, char **json);
/* Every lesson (retired ones too when all), matching every tag filter of tags (a filter
 * matches the tag and its descendants: "cuda/memory" matches "cuda/memory/coalescing"),
 * as one JSON array in id order (caller frees). */
KF_API kf_status kf_lessons_list_json(kf_lessons *db, const char *const *tags, int ntags, int all,
                                      char **json);
/* Export every lesson as JSON Lines (caller frees *jsonl). */
KF_API kf_status kf_lessons_export(kf_lessons *db, char **jsonl);
/* Import JSON Lines text (blank lines skipped): all lines or none. A malformed line is
 * KF_EUSAGE "NAME:LINE: field 'F': ..." (name: what to call the input in messages). An
 * existing id is replaced (counted in *updated). added/updated may be NULL. */
KF_API kf_status kf_lessons_import(kf_lessons *db, const char *jsonl, size_t len, const char *name,
                                   int *added, int *updated);

/* What a context pack is about: every field may be left empty (NULL / 0), which does not
 * constrain (docs/lessons.md, "Retrieval"). */
typedef struct kf_lesson_query {
    const char *backend;    /* "c", "cuda" */
    const char *arch;       /* "sm_90", "x86_64" */
    const char *const *ops; /* the task's operation tags, e.g. "op/norm/rmsnorm" */
    int nops;
    const char *const *tags; /* tag filters: a lesson must match each (or a descendant) */
    int ntags;
    const char *const *shape_names; /* the size names of the task's shapes ("rows", "cols") */
    int nshape_names;
    const int64_t *shapes; /* nshapes rows of nshape_names values each */
    int nshapes;
    const char *text; /* free text: the task, the parent's idea, its feedback */
    int rank;         /* KF_LESSON_RANK_* */
} kf_lesson_query;

enum { KF_LESSON_RANK_HYBRID = 0, KF_LESSON_RANK_KEYWORD = 1, KF_LESSON_RANK_VECTOR = 2 };

typedef struct kf_lesson_hit {
    char id[64];
    double score;                  /* hybrid: the RRF sum; keyword: -bm25; vector: cosine; no text: trust */
    double trust;                  /* (confirmations + 1) / (confirmations + refutations + 2) */
    int keyword_rank, vector_rank; /* 1-based ranks in each list; 0: not in that list */
} kf_lesson_hit;

/* Retrieve the best k lessons for q whose trust is at least min_trust into hits (room for
 * k), best first; *nhits gets how many. A query without text (NULL, empty or blanks)
 * gives every lesson that passes the filters, most trusted first (score = trust, both
 * ranks 0); text whose words are all too common or too short can give none. KF_EUSAGE
 * for k < 1 or a bad query, KF_EBACKEND when the embeddings endpoint fails. */
KF_API kf_status kf_lessons_retrieve(kf_lessons *db, const kf_lesson_query *q, int k, double min_trust,
                                     kf_lesson_hit *hits, int *nhits);
/* Render hits (in their order) as the lessons section of a context pack, adding whole
 * lessons while the text stays within max_tokens estimated tokens (bytes / 4, as
 * packs count). *text is the caller's (empty when none fits); *tokens (may be NULL) its
 * estimate; *used (may be NULL) the number of lessons rendered. */
KF_API kf_status kf_lessons_render(kf_lessons *db, const kf_lesson_hit *hits, int nhits, int64_t max_tokens,
                                   char **text, int64_t *tokens, int *used);
/* ---- the system gate: a pipeline of tasks judged end to end (docs/system.md) ---- */

#define KF_SYSTEM_MAX_SLOTS 32
typedef struct kf_system_opts {
    kf_opts check;                          /* seed, timeouts, bench rounds (check.bench_*) */
    const char *slots[KF_SYSTEM_MAX_SLOTS]; /* "SLOT=FILE": a candidate for every stage of SLOT */
    int nslots;
    const char *vs[KF_SYSTEM_MAX_SLOTS]; /* bench: the baseline configuration's "SLOT=FILE"
                                            (none: the reference pipeline) */
    int nvs;
    const char *knobs[16]; /* "KNOB=VALUE" selections of the pipeline's knobs */
    int nknobs;
    int steps, layers; /* > 0: override the pipeline's */
    int task_checks;   /* 1 (default): every slot candidate also gets
                          kf_check on its own task */
    int local_bench;   /* bench: every slot candidate also timed alone on
                          its task (kf_bench), for "outcome"
                          local_win_global_loss */
    const char *cand_knobs[16]; /* "KNOB=VALUE" of the candidate configuration only,
                                   over knobs (the reference pipeline and the baseline
                                   keep knobs): a tuning knob judged in the step; a knob
                                   named after a dim is refused (it sets the workload) */
    int ncand_knobs;
} kf_system_opts;

KF_API void kf_system_opts_init(kf_system_opts *o);
/* Check a pipeline with its slot candidates: each candidate's task check, the end-to-end
 * outputs of every step against the reference pipeline's within the outputs' tolerance,
 * each candidate on the tensors its stages receive in the reference pipeline (captured
 * I/O), and its call count (engagement). *json (caller frees) is the report
 * (docs/cli.md "system"); *accepted 1 or 0. KF_OK whatever the verdict; KF_ETASK for a
 * bad pipeline (FILE:LINE on ctx), KF_EUSAGE for bad options. */
KF_API kf_status kf_system_check(kf_ctx *ctx, const char *pipeline, const kf_system_opts *o, char **json,
                                 int *accepted);
/* The check, then the whole step timed A/B interleaved against the reference pipeline (or
 * o->vs): per-stage times in place, the end-to-end gain with its interval, the roofline
 * fraction (a step faster than its roofline is refused). *accepted: the check passed and
 * the timing was sound (a loss is accepted and reported: "slower"). */
KF_API kf_status kf_system_bench(kf_ctx *ctx, const char *pipeline, const kf_system_opts *o, char **json,
                                 int *accepted);

/* Distil the run in run_dir into lessons (docs/lessons.md, "Distillation"): merge them
 * with those already in db, raise or lower trust, retire refuted ones. *summary (may be
 * NULL; caller frees) is a JSON object listing what changed. Never changes the run. */
KF_API kf_status kf_lessons_distill(kf_lessons *db, const char *run_dir, char **summary);

KF_API kf_verdict kf_result_verdict(const kf_result *r);
/* Number of rejection reasons and the code of the i-th. */
KF_API int kf_result_nreasons(const kf_result *r);
KF_API kf_reason kf_result_reason(const kf_result *r, int i);
/* Geometric-mean speedup over the timed shapes (bench), or 0 when not timed. */
KF_API double kf_result_speedup(const kf_result *r);
/* The result as one JSON object (docs/cli.md). Caller frees with free(). NULL on OOM. */
KF_API char *kf_result_json(const kf_result *r);
/* A short human-readable report, lines ending in '\n'. Caller frees with free(). */
KF_API char *kf_result_text(const kf_result *r);
KF_API void kf_result_free(kf_result *r);

#ifdef __cplusplus
}
#endif
#endif /* KFORGE_H */
