/*
 * scale.h - evaluations spread over workers (docs/scale.md): the wire protocol
 * (proto.c), the coordinator's pool of workers (pool.c), the worker's loop (worker.c)
 * and the launchers that start workers (launch.c: one local worker per GPU or per CPU
 * set, Slurm jobs). The loop hands a pool each check-and-time of a candidate against a
 * baseline (kf_bench's work) and gets back the stored verdict document; the run store,
 * the Critic's decisions and every record stay with the coordinator.
 */
#ifndef KF_SCALE_H
#define KF_SCALE_H

#include "kforge.h"
#include "../util/util.h"

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* ---- the wire (proto.c) ---- */

#define KF_SCALE_SECRET_LEN 32
#define KF_SCALE_MAX_FRAME (48u << 20) /* a frame's body: candidate texts are at most 16 MiB each */

typedef struct kf_scale_conn {
    int fd;
    unsigned char key[32]; /* the frames' MAC key: the run's secret, then the session's */
    uint64_t seq_out, seq_in;
} kf_scale_conn;

/* The run's secret from path (64 hex digits), created (mode 0600, from RAND_bytes) when
 * create is 1 and the file is missing. 0, or -1 with err set. */
int kf_scale_secret(const char *path, int create, unsigned char key[KF_SCALE_SECRET_LEN], char *err,
                    size_t n);
/* An address: "unix:PATH" or "tcp:HOST:PORT". Listen (backlog 64; a unix path left by a
 * dead coordinator is replaced) or connect: the fd, or -1 with err set. For tcp with
 * port 0, *port (may be NULL) gets the port bound. */
int kf_scale_listen(const char *addr, int *port, char *err, size_t n);
int kf_scale_connect(const char *addr, char *err, size_t n);
/* One frame: "KFS1", the body's length (u32), the sender's sequence number (u64, from 0,
 * one more each frame), HMAC-SHA256 under c->key of all that and the body, the body (a
 * JSON object). Send: 0 or -1. Receive: the parsed object (caller json_decref), or NULL
 * with *why: 0 end of stream, 1 I/O error, 2 a bad MAC or sequence number (a forged or
 * replayed frame), 3 malformed. */
int kf_scale_send(kf_scale_conn *c, json_t *msg);
json_t *kf_scale_recv(kf_scale_conn *c, int *why);
/* The session key of a connection: HMAC(secret, "kforge-scale session" | nc | nw). */
void kf_scale_session_key(const unsigned char secret[KF_SCALE_SECRET_LEN], const char *nc, const char *nw,
                          unsigned char key[32]);
/* A fresh random token of 2 * bytes hex digits into out (bytes <= 32). */
void kf_scale_token(char *out, size_t bytes);
/* The joining side of the handshake over c (whose key is the secret): read the
 * challenge, send hello (role "worker" or "control", with the fields of extra, which is
 * borrowed), switch c to the session key. 0; -1 with err set when the coordinator does
 * not hold the run's secret or refused this side; -2 when the connection was lost
 * meanwhile (try again). */
int kf_scale_join(kf_scale_conn *c, const char *role, json_t *extra, char *err, size_t n);

/* ---- the coordinator's pool (pool.c) ---- */

typedef struct kf_pool kf_pool;

typedef struct {
    const char *listen;      /* "unix:PATH" or "tcp:HOST:PORT" where workers may join (NULL:
                                a private unix socket, for the launched workers alone) */
    const char *secret_file; /* the run's secret (NULL: scale-HASH.secret in the keys
                                directory, HASH of status_dir's real path) */
    const char *devices;     /* --devices: "all", "0,2,5" (one local worker per GPU) */
    int workers;             /* --workers N: local CPU workers, or Slurm jobs */
    const char *launcher;    /* "local" (NULL) or "slurm" */
    const char *slurm[8];    /* sbatch arguments: --partition P, --gres G, ... */
    int nslurm;
    const char *kforge;     /* the kforge executable workers run (NULL: /proc/self/exe) */
    double wait_s;          /* how long an evaluation waits for a worker to join (0: 300) */
    double eval_timeout_s;  /* an evaluation's longest time on one worker (0: 3600) */
    const char *status_dir; /* where scale.json is kept (the run directory; NULL: none) */
    const char *timing_dir; /* local workers' timing locks there (tool mode: the run
                               directory, shared by every submit's pool: timing.lock for
                               the CPUs, timing-cudaK.lock for GPU K); NULL: the pool's own,
                               for CPU workers that share every CPU */
} kf_pool_opts;

/* Start a pool: listen, start the launcher's workers. KF_EUSAGE for bad options (a
 * --devices list naming a GPU this machine lacks), KF_EENV when nothing could listen or
 * start. *out is the caller's: kf_pool_stop. */
kf_status kf_pool_start(kf_ctx *ctx, const kf_pool_opts *o, kf_pool **out);
/* The workers the launcher starts (what --jobs defaults to). */
int kf_pool_launched(const kf_pool *p);
/* One check-and-time on some worker: the request's fields (kf_pool_bench builds the
 * frame). 0 with the stored verdict document in *stored (caller frees; it carries the
 * worker's "device"), 1 the worker's kf_bench gave status *bst (message in err), -1 the
 * evaluation was lost twice (its worker died, hung or left: err says which; requeued once
 * before that), -2 no worker came within wait_s or the pool is draining (err). */
typedef struct {
    const char *task_dir, *fingerprint;
    const char *name, *text; /* the candidate: its file name and text */
    size_t len;
    const char *vs_name, *vs_text; /* the baseline (NULL: the reference) */
    size_t vs_len;
    json_t *opts; /* {"hidden", "min_runs", "max_runs", "min_time_s"}: borrowed */
    const char *eval_id;
} kf_pool_req;
int kf_pool_bench(kf_pool *p, const kf_pool_req *rq, char **stored, kf_status *bst, char *err, size_t n);
/* kf_pool_bench with the verdict document as parsed JSON in *doc (caller json_decref),
 * for a caller that reads it: one parse of the worker's document in all. */
int kf_pool_bench_doc(kf_pool *p, const kf_pool_req *rq, json_t **doc, kf_status *bst, char *err, size_t n);
/* 1 once a drain was asked for (kforge drain): no new work is started. */
int kf_pool_draining(kf_pool *p);
/* The pool's figures as JSON (workers, their devices and models, counters); caller
 * json_decref. */
json_t *kf_pool_report(kf_pool *p);
/* Tell the workers to leave, stop what was launched (scancel), free. Accepts NULL. */
void kf_pool_stop(kf_pool *p);

/* ---- launchers (launch.c) ---- */

/* The GPUs that --devices names: "all" (every device the CUDA driver lists) or a list
 * "0,2,5", into idx (at most max). The count, or minus the status with the message on ctx (KF_EUSAGE
 * for a device this machine lacks or a malformed list, KF_EBACKEND without a driver). */
int kf_scale_devices(kf_ctx *ctx, const char *spec, int *idx, int max);
/* Local worker i of n's CPUs, out of all, as a --cpus list ("0-3,8"): n even groups,
 * runs of consecutive CPUs as ranges; "" when a group would get fewer than two CPUs (a
 * timing needs one for the candidate and one for the clock: such workers share every
 * CPU) or the list does not fit in out. all: a cpu_set_t (void here: the header needs no
 * _GNU_SOURCE). */
void kf_scale_cpu_group(const void *all /* cpu_set_t */, int i, int n, char *out, size_t on);
/* The command line of a worker joining addr with the secret at secret_file (argv, NULL
 * terminated, into a, at most 16 entries; strings borrowed or in buf). */
int kf_scale_worker_argv(const char *kforge, const char *addr, const char *secret_file, const char *name,
                         const char *device, const char *cpus, char **a, char *buf, size_t bn);

#endif
