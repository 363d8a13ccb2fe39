/*
 * pool.c - the coordinator's side of scale-out (docs/scale.md): a queue of evaluation
 * requests and the workers that joined. One thread accepts connections (and watches
 * the deadlines of evaluations in flight, and reaps local workers); each connection has
 * a reader thread that runs the handshake and then receives verdicts. Requests go to an
 * idle worker with a fresh ticket; a verdict counts only from the worker holding that
 * ticket for that evaluation id, once: a second copy is a duplicate (ignored), anything
 * else is refused as forged. A worker that dies, leaves or overruns the evaluation
 * deadline costs its request one attempt: requeued once at the head of the queue, then
 * given up as lost (the node is recorded as crashed with the reason). The pool decides
 * nothing about candidates: it carries kf_bench's work and brings back its document.
 */
#define _GNU_SOURCE
#include "scale.h"

#include "../store/store.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <openssl/crypto.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAXW 256
#define MAXKIDS 64
#define NDONE 4096

extern char **environ;

typedef struct wk wk;

typedef struct req {
    struct req *next;
    json_t *msg;
    char id[160], ticket[40];
    int attempts, done, result;
    json_t *verdict, *device; /* the verdict frame and the device of the worker that sent it */
    char worker[128];
    kf_status bst;
    char err[1400];
    char lost_on[300]; /* the first worker it was lost on */
    wk *on;
    double started;
    pthread_cond_t cv; /* its caller waits on it: one waiter woken per verdict, not all */
} req;

struct wk {
    kf_pool *p;
    kf_scale_conn c;
    pthread_t th;
    int alive, control, gone, evals;
    char name[128];
    int pid;
    json_t *device;
    req *cur;
};

struct kf_pool {
    pthread_mutex_t mu;
    int lfd, quit, draining;
    char addr[4200], secret_file[4200], status_dir[4096], sock_dir[4096];
    unsigned char secret[KF_SCALE_SECRET_LEN];
    pthread_t acc;
    int acc_started;
    wk *w[MAXW];
    int nw;
    req *head, *tail;
    char done[NDONE][40];
    int ndone;
    long dispatched, verdicts, duplicates, refused, requeued, lost, joins;
    pid_t kids[MAXKIDS];
    int nkids, launched;
    char jobs[MAXKIDS][32];
    int njobs;
    double wait_s, eval_timeout_s;
    double t0, first_verdict; /* when the pool started; its first verdict (0: none yet) */
    double status_at;         /* when scale.json was last written */
    int status_dirty;         /* a change since then, for the acceptor to write */
};

#define STATUS_EVERY_S 0.05 /* scale.json is rewritten at most this often for verdicts */

static double now_s(void) { return (double)kf__now_ns() / 1e9; }

/* ---- status file ---- */

static json_t *report_locked(kf_pool *p) {
    json_t *ws = json_array(), *models = json_array();
    for (int i = 0; i < p->nw; i++) {
        wk *w = p->w[i];
        if (w->control || !w->device) continue;
        json_array_append_new(ws, json_pack("{s:s, s:i, s:O, s:s, s:i}", "name", w->name, "pid", w->pid,
                                            "device", w->device, "state",
                                            !w->alive ? "gone"
                                            : w->cur  ? "busy"
                                                      : "idle",
                                            "evaluations", w->evals));
        const char *m = json_string_value(json_object_get(w->device, "model"));
        int seen = 0;
        for (size_t k = 0; m && k < json_array_size(models); k++)
            seen |= !strcmp(json_string_value(json_array_get(models, k)), m);
        if (m && !seen) json_array_append_new(models, json_string(m));
    }
    json_t *jobs = json_array();
    for (int i = 0; i < p->njobs; i++) json_array_append_new(jobs, json_string(p->jobs[i]));
    return json_pack("{s:s, s:s, s:i, s:o, s:o, s:o, s:f, s:I, s:I, s:I, s:I, s:I, s:I, s:b}", "address",
                     p->addr, "secret_file", p->secret_file, "pid", (int)getpid(), "workers", ws, "models",
                     models, "slurm_jobs", jobs, "first_verdict_s",
                     p->first_verdict ? p->first_verdict - p->t0 : -1.0, "dispatched",
                     (json_int_t)p->dispatched, "verdicts", (json_int_t)p->verdicts, "duplicates",
                     (json_int_t)p->duplicates, "refused", (json_int_t)p->refused, "requeued",
                     (json_int_t)p->requeued, "lost", (json_int_t)p->lost, "draining", p->draining);
}

static void status_now_locked(kf_pool *p) {
    p->status_dirty = 0;
    if (!p->status_dir[0]) return;
    p->status_at = now_s();
    json_t *j = report_locked(p);
    char path[4300], tmp[4400];
    snprintf(path, sizeof path, "%s/scale.json", p->status_dir);
    snprintf(tmp, sizeof tmp, "%s.%d.tmp", path, (int)getpid());
    if (j && !json_dump_file(j, tmp, JSON_COMPACT)) rename(tmp, path);
    json_decref(j);
}

/* scale.json after a change (a join, a dispatch, a verdict, a leave, a drain): written
 * at once when the last write is STATUS_EVERY_S old, else by the acceptor's next round
 * (at most about 100 ms later); once the pool is stopping, not at all (the file goes).
 * A file written per verdict and per join was the largest part of the coordinator's
 * cost with many workers. */
static void status_locked(kf_pool *p) {
    if (p->quit) return;
    if (now_s() - p->status_at >= STATUS_EVERY_S) status_now_locked(p);
    else p->status_dirty = 1;
}

json_t *kf_pool_report(kf_pool *p) {
    pthread_mutex_lock(&p->mu);
    json_t *j = report_locked(p);
    pthread_mutex_unlock(&p->mu);
    return j;
}

/* ---- dispatch ---- */

static void dispatch_locked(kf_pool *p) {
    while (p->head) {
        wk *w = NULL;
        for (int i = 0; i < p->nw && !w; i++)
            if (p->w[i]->alive && !p->w[i]->control && !p->w[i]->cur) w = p->w[i];
        if (!w) return;
        req *r = p->head;
        p->head = r->next;
        if (!p->head) p->tail = NULL;
        kf_scale_token(r->ticket, 16);
        json_object_set_new(r->msg, "ticket", json_string(r->ticket));
        r->on = w;
        r->started = now_s();
        w->cur = r;
        p->dispatched++;
        if (kf_scale_send(&w->c, r->msg)) shutdown(w->c.fd, SHUT_RDWR); /* its reader requeues it */
    }
}

static void remember_locked(kf_pool *p, const char *ticket) {
    snprintf(p->done[p->ndone % NDONE], sizeof p->done[0], "%s", ticket);
    p->ndone++;
}

static int known_locked(kf_pool *p, const char *ticket) {
    int n = p->ndone < NDONE ? p->ndone : NDONE;
    for (int i = 0; i < n; i++)
        if (!strcmp(p->done[i], ticket)) return 1;
    return 0;
}

static void verdict_locked(kf_pool *p, wk *w, json_t *m) {
    const char *id = json_string_value(json_object_get(m, "id"));
    const char *ticket = json_string_value(json_object_get(m, "ticket"));
    req *r = w->cur;
    if (!id || !ticket || !r || strcmp(r->id, id) || strcmp(r->ticket, ticket)) {
        if (ticket && known_locked(p, ticket)) {
            p->duplicates++; /* recorded once already */
        } else {
            p->refused++;
            fprintf(stderr,
                    "kforge run: refused a verdict for evaluation %s from worker %s: not an evaluation it "
                    "holds\n",
                    id ? id : "(none)", w->name);
        }
        return;
    }
    remember_locked(p, ticket);
    r->bst = (kf_status)json_integer_value(json_object_get(m, "status"));
    const char *res = json_string_value(json_object_get(m, "result"));
    const char *e = json_string_value(json_object_get(m, "error"));
    if (!r->bst && res) {
        /* the document is parsed and given its device by the caller, in its own thread:
         * not here, under the pool's lock, which every verdict and dispatch takes */
        r->verdict = json_incref(m);
        r->device = json_incref(w->device);
        snprintf(r->worker, sizeof r->worker, "%s", w->name);
        r->result = 0;
    } else {
        r->result = 1;
        if (!r->bst) r->bst = KF_EINTERNAL;
        snprintf(r->err, sizeof r->err, "worker %s: %s", w->name, e ? e : "no verdict");
    }
    r->done = 1;
    pthread_cond_signal(&r->cv);
    w->cur = NULL;
    w->evals++;
    if (!p->verdicts++) p->first_verdict = now_s();
}

/* w is gone (died, left, overran, sent garbage): its request's one requeue, or its loss. */
static void lost_locked(kf_pool *p, wk *w, const char *why) {
    if (w->alive) fprintf(stderr, "kforge run: worker %s left: %s\n", w->name, why);
    w->alive = 0;
    req *r = w->cur;
    w->cur = NULL;
    if (!r) return;
    r->on = NULL;
    if (++r->attempts >= 2) {
        snprintf(r->err, sizeof r->err,
                 "evaluation %s was lost twice: on worker %s, then on worker %s (%s); requeued once, then "
                 "recorded as crashed",
                 r->id, r->lost_on, w->name, why);
        r->result = -1;
        r->done = 1;
        pthread_cond_signal(&r->cv);
        p->lost++;
        return;
    }
    snprintf(r->lost_on, sizeof r->lost_on, "%s (%s)", w->name, why);
    p->requeued++;
    fprintf(stderr, "kforge run: evaluation %s requeued once (worker %s: %s)\n", r->id, w->name, why);
    r->next = p->head;
    p->head = r;
    if (!p->tail) p->tail = r;
}

static void *reader(void *arg) {
    wk *w = arg;
    kf_pool *p = w->p;
    char nc[65];
    kf_scale_token(nc, 16);
    struct timeval tv = {10, 0}; /* a handshake takes no longer */
    setsockopt(w->c.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    json_t *ch = json_pack("{s:s, s:s}", "t", "challenge", "nonce", nc);
    int why = 0, ok = !kf_scale_send(&w->c, ch);
    json_decref(ch);
    json_t *h = ok ? kf_scale_recv(&w->c, &why) : NULL;
    const char *role = json_string_value(json_object_get(h, "role"));
    const char *nw = json_string_value(json_object_get(h, "nonce"));
    const char *echo = json_string_value(json_object_get(h, "challenge"));
    if (!h || !role || !nw || !echo || strcmp(echo, nc) ||
        (strcmp(role, "worker") && strcmp(role, "control"))) {
        if (why == 2)
            fprintf(stderr, "kforge run: refused a connection whose hello does not carry the run's MAC\n");
        json_decref(h);
        pthread_mutex_lock(&p->mu);
        w->gone = 1;
        pthread_mutex_unlock(&p->mu);
        return NULL;
    }
    kf_scale_session_key(p->secret, nc, nw, w->c.key);
    tv.tv_sec = 0;
    setsockopt(w->c.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    pthread_mutex_lock(&p->mu);
    w->control = !strcmp(role, "control");
    const char *nm = json_string_value(json_object_get(h, "name"));
    snprintf(w->name, sizeof w->name, "%s", nm ? nm : "worker");
    w->pid = (int)json_integer_value(json_object_get(h, "pid"));
    json_t *dev = json_object_get(h, "device");
    w->device = json_is_object(dev) ? json_incref(dev) : json_pack("{s:s}", "model", "unknown");
    json_t *wel = json_pack("{s:s}", "t", "welcome");
    int sent = !kf_scale_send(&w->c, wel);
    json_decref(wel);
    w->alive = sent;
    if (sent && !w->control) {
        p->joins++;
        fprintf(stderr, "kforge run: worker %s joined (%s)\n", w->name,
                json_string_value(json_object_get(w->device, "model")) ?: "?");
        dispatch_locked(p);
        status_locked(p);
    }
    pthread_mutex_unlock(&p->mu);
    json_decref(h);
    const char *gone = "its connection closed";
    while (sent) {
        json_t *m = kf_scale_recv(&w->c, &why);
        if (!m) {
            gone = why == 2   ? "a frame with a bad MAC or sequence number (refused)"
                   : why == 3 ? "a malformed frame"
                              : "its connection closed";
            if (why == 2) {
                pthread_mutex_lock(&p->mu);
                p->refused++;
                pthread_mutex_unlock(&p->mu);
            }
            break;
        }
        const char *t = json_string_value(json_object_get(m, "t"));
        pthread_mutex_lock(&p->mu);
        if (t && !strcmp(t, "verdict") && !w->control) {
            verdict_locked(p, w, m);
            dispatch_locked(p);
            status_locked(p);
        } else if (t && !strcmp(t, "drain") && w->control) {
            p->draining = 1;
            fprintf(stderr, "kforge run: drain asked for: finishing what is in flight\n");
            json_t *a = report_locked(p);
            json_object_set_new(a, "t", json_string("draining"));
            kf_scale_send(&w->c, a);
            json_decref(a);
            status_locked(p);
        }
        pthread_mutex_unlock(&p->mu);
        json_decref(m);
    }
    pthread_mutex_lock(&p->mu);
    if (!w->control) lost_locked(p, w, gone);
    w->alive = 0;
    w->gone = 1;
    dispatch_locked(p);
    status_locked(p);
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

static void *acceptor(void *arg) {
    kf_pool *p = arg;
    for (;;) {
        pthread_mutex_lock(&p->mu);
        int quit = p->quit;
        /* an evaluation past its deadline: its worker is taken for hung and cut off */
        double t = now_s();
        for (int i = 0; i < p->nw; i++) {
            wk *w = p->w[i];
            if (w->alive && w->cur && t - w->cur->started > p->eval_timeout_s) {
                fprintf(stderr, "kforge run: worker %s overran the evaluation deadline (%.0f s): cut off\n",
                        w->name, p->eval_timeout_s);
                shutdown(w->c.fd, SHUT_RDWR);
            }
        }
        if (p->status_dirty && t - p->status_at >= STATUS_EVERY_S) status_now_locked(p);
        for (int i = 0; i < p->nkids; i++)
            if (p->kids[i] > 0 && waitpid(p->kids[i], NULL, WNOHANG) == p->kids[i]) p->kids[i] = -p->kids[i];
        pthread_mutex_unlock(&p->mu);
        if (quit) break;
        struct pollfd pf = {p->lfd, POLLIN, 0};
        if (poll(&pf, 1, 50) <= 0) continue;
        int fd = accept4(p->lfd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0) continue;
        wk *w = calloc(1, sizeof *w);
        pthread_mutex_lock(&p->mu);
        if (!w || p->nw == MAXW) {
            pthread_mutex_unlock(&p->mu);
            free(w);
            close(fd);
            continue;
        }
        w->p = p;
        w->c.fd = fd;
        memcpy(w->c.key, p->secret, sizeof p->secret);
        snprintf(w->name, sizeof w->name, "(joining)");
        p->w[p->nw++] = w;
        if (pthread_create(&w->th, NULL, reader, w)) {
            p->nw--;
            close(fd);
            free(w);
        }
        pthread_mutex_unlock(&p->mu);
    }
    return NULL;
}

/* ---- launchers ---- */

/* A local worker, given lock (NULL: none) as its KFORGE_TIMING_LOCK: the file under
 * whose per-CPU locks its timed phases run (bench.c), so workers that share CPUs, or a
 * device, time one at a time. */
static int spawn_argv(kf_pool *p, char **av, const char *lock) {
    pid_t pid;
    size_t ne = 0;
    while (environ[ne]) ne++;
    char **envp = calloc(ne + 2, sizeof *envp),
         *env = lock ? kf__asprintf("KFORGE_TIMING_LOCK=%s", lock) : NULL;
    if (!envp || (lock && !env)) {
        free(envp);
        free(env);
        return -1;
    }
    size_t k = 0;
    for (size_t i = 0; i < ne; i++)
        if (strncmp(environ[i], "KFORGE_TIMING_LOCK=", 19)) envp[k++] = environ[i];
    if (env) envp[k++] = env;
    envp[k] = NULL;
    int rc = posix_spawn(&pid, av[0], NULL, NULL, av, envp);
    free(envp);
    free(env);
    if (rc) return -1;
    if (p->nkids < MAXKIDS) p->kids[p->nkids++] = pid;
    return 0;
}

/* scale.h says what it makes; launch_local passes this process's CPUs */
void kf_scale_cpu_group(const void *all_, int i, int n, char *out, size_t on) {
    const cpu_set_t *all = all_;
    out[0] = 0;
    int cpus[CPU_SETSIZE], nc = 0;
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, all)) cpus[nc++] = c;
    int per = nc / (n ? n : 1);
    if (per < 2) return;
    /* runs of consecutive CPUs as ranges ("0-63,128-191"): a list of every CPU of a big
     * host's group would not fit in out */
    size_t len = 0;
    for (int k = i * per; k < (i + 1) * per && len < on;) {
        int e = k;
        while (e + 1 < (i + 1) * per && cpus[e + 1] == cpus[e] + 1) e++;
        int w = e > k ? snprintf(out + len, on - len, "%s%d-%d", len ? "," : "", cpus[k], cpus[e])
                      : snprintf(out + len, on - len, "%s%d", len ? "," : "", cpus[k]);
        if (w < 0 || (size_t)w >= on - len) { /* no room: share every CPU instead */
            out[0] = 0;
            return;
        }
        len += (size_t)w;
        k = e + 1;
    }
}

int kf_scale_worker_argv(const char *kforge, const char *addr, const char *secret_file, const char *name,
                         const char *device, const char *cpus, char **a, char *buf, size_t bn) {
    (void)buf, (void)bn;
    int k = 0;
    a[k++] = (char *)kforge;
    a[k++] = "worker";
    a[k++] = "--connect", a[k++] = (char *)addr;
    a[k++] = "--secret-file", a[k++] = (char *)secret_file;
    if (name) a[k++] = "--name", a[k++] = (char *)name;
    if (device) a[k++] = "--device", a[k++] = (char *)device;
    if (cpus && *cpus) a[k++] = "--cpus", a[k++] = (char *)cpus;
    a[k++] = "--wait", a[k++] = "10";
    a[k] = NULL;
    return k;
}

static kf_status launch_local(kf_ctx *ctx, kf_pool *p, const kf_pool_opts *o, const char *exe) {
    int idx[MAXKIDS], n = 0;
    if (o->devices && (n = kf_scale_devices(ctx, o->devices, idx, MAXKIDS)) < 0) return (kf_status)-n;
    int cpu_workers = !o->devices ? o->workers : 0, total = n + cpu_workers;
    for (int i = 0; i < total; i++) {
        char name[64], dev[32], cpus[1024], *av[20], buf[16];
        snprintf(name, sizeof name, "local-%d", i);
        if (i < n) snprintf(dev, sizeof dev, "cuda:%d", idx[i]);
        cpu_set_t all;
        if (sched_getaffinity(0, sizeof all, &all)) cpus[0] = 0;
        else kf_scale_cpu_group(&all, i, total, cpus, sizeof cpus);
        kf_scale_worker_argv(exe, p->addr, p->secret_file, name, i < n ? dev : NULL, cpus, av, buf,
                             sizeof buf);
        /* the timing locks: with a timing directory, the run's (a file per GPU, one for
         * the CPUs), which every pool on the run shares; else the pool's own, for CPU
         * workers that share every CPU */
        char lock[4200] = "";
        const char *tmp = getenv("TMPDIR");
        if (o->timing_dir && i < n)
            snprintf(lock, sizeof lock, "%s/timing-cuda%d.lock", o->timing_dir, idx[i]);
        else if (o->timing_dir) snprintf(lock, sizeof lock, "%s/timing.lock", o->timing_dir);
        else if (total > 1 && !cpus[0] && i >= n && p->sock_dir[0])
            snprintf(lock, sizeof lock, "%s/timing.lock", p->sock_dir);
        else if (total > 1 && !cpus[0] && i >= n)
            snprintf(lock, sizeof lock, "%s/kforge-timing.lock", tmp && *tmp ? tmp : "/tmp");
        if (spawn_argv(p, av, lock[0] ? lock : NULL))
            return kf__err(ctx, KF_EENV, "starting local worker %d (%s worker): %s", i, exe, strerror(errno));
        p->launched++;
    }
    return KF_OK;
}

/* sbatch's output (--parsable: the job id) into out. */
static int run_capture(char **av, char *out, size_t on) {
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC)) return -1;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, pfd[1], 1);
    pid_t pid;
    int rc = posix_spawnp(&pid, av[0], &fa, NULL, av, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(pfd[1]);
    size_t got = 0;
    ssize_t r;
    while (!rc && got + 1 < on && (r = read(pfd[0], out + got, on - 1 - got)) > 0) got += (size_t)r;
    out[got] = 0;
    close(pfd[0]);
    int status = 0;
    if (!rc && waitpid(pid, &status, 0) < 0) rc = -1;
    return rc || !WIFEXITED(status) || WEXITSTATUS(status) ? -1 : 0;
}

static kf_status launch_slurm(kf_ctx *ctx, kf_pool *p, const kf_pool_opts *o, const char *exe) {
    int n = o->workers > 0 ? o->workers : 1;
    for (int i = 0; i < n && i < MAXKIDS; i++) {
        char wrap[8192], name[64], out[256];
        snprintf(name, sizeof name, "kforge-worker-%d", i);
        snprintf(
            wrap, sizeof wrap,
            "exec srun --ntasks=1 '%s' worker --connect '%s' --secret-file '%s' --name slurm-$SLURM_JOB_ID "
            "--wait 30",
            exe, p->addr, p->secret_file);
        char *av[32];
        int k = 0;
        av[k++] = "sbatch", av[k++] = "--parsable", av[k++] = "--job-name", av[k++] = name;
        av[k++] = "--ntasks", av[k++] = "1", av[k++] = "--output", av[k++] = "/dev/null";
        for (int j = 0; j < o->nslurm && k < 28; j++) av[k++] = (char *)o->slurm[j];
        av[k++] = "--wrap", av[k++] = wrap;
        av[k] = NULL;
        if (run_capture(av, out, sizeof out))
            return kf__err(ctx, KF_EENV, "--launcher slurm: sbatch failed (is Slurm running here?)");
        out[strcspn(out, ";\n")] = 0;
        snprintf(p->jobs[p->njobs++], sizeof p->jobs[0], "%s", out);
        fprintf(stderr, "kforge run: Slurm job %s submitted (worker %d)\n", out, i);
        p->launched++;
    }
    return KF_OK;
}

/* ---- the pool ---- */

kf_status kf_pool_start(kf_ctx *ctx, const kf_pool_opts *o, kf_pool **out) {
    *out = NULL;
    int slurm = o->launcher && !strcmp(o->launcher, "slurm");
    if (o->launcher && !slurm && strcmp(o->launcher, "local"))
        return kf__err(ctx, KF_EUSAGE, "--launcher %s: expected local or slurm", o->launcher);
    if (slurm && o->devices)
        return kf__err(ctx, KF_EUSAGE,
                       "--launcher slurm starts --workers N jobs (--gres gpu:1 each), not --devices");
    kf_pool *p = calloc(1, sizeof *p);
    if (!p) return kf__err(ctx, KF_ENOMEM, "out of memory");
    pthread_mutex_init(&p->mu, NULL);
    p->lfd = -1;
    p->t0 = now_s();
    p->wait_s = o->wait_s > 0 ? o->wait_s : 300;
    p->eval_timeout_s = o->eval_timeout_s > 0 ? o->eval_timeout_s : 3600;
    if (o->status_dir) snprintf(p->status_dir, sizeof p->status_dir, "%s", o->status_dir);
    char err[1024];
    if (o->secret_file) {
        snprintf(p->secret_file, sizeof p->secret_file, "%s", o->secret_file);
    } else {
        /* the run's own: named by its directory's real path, so a resume finds it again */
        char kd[4096], rp[PATH_MAX];
        kf_store_keys_dir(kd, sizeof kd);
        uint64_t h = 1469598103934665603ull; /* FNV-1a */
        const char *d = o->status_dir && realpath(o->status_dir, rp) ? rp : o->status_dir;
        for (const char *c = d ? d : ""; *c; c++) h = (h ^ (unsigned char)*c) * 1099511628211ull;
        if (d)
            snprintf(p->secret_file, sizeof p->secret_file, "%s/scale-%016llx.secret", kd,
                     (unsigned long long)h);
        else snprintf(p->secret_file, sizeof p->secret_file, "%s/scale.secret", kd);
    }
    kf_status st = KF_OK;
    if (kf_scale_secret(p->secret_file, 1, p->secret, err, sizeof err))
        st = kf__err(ctx, KF_EUSAGE, "%s", err);
    const char *listen = o->listen;
    char lbuf[4200];
    if (!st && !listen && slurm) listen = "tcp:0.0.0.0:0";
    if (!st && !listen) {
        const char *tmp = getenv("TMPDIR");
        snprintf(p->sock_dir, sizeof p->sock_dir, "%s/kforge-scale-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(p->sock_dir)) {
            p->sock_dir[0] = 0;
            st = kf__err(ctx, KF_EENV, "a private socket directory: %s", strerror(errno));
        } else {
            snprintf(lbuf, sizeof lbuf, "unix:%s/sock", p->sock_dir);
            listen = lbuf;
        }
    }
    int port = 0;
    if (!st && (p->lfd = kf_scale_listen(listen, &port, err, sizeof err)) < 0)
        st = kf__err(ctx, strstr(err, "unix:PATH") ? KF_EUSAGE : KF_EENV, "--listen %s", err);
    if (!st) {
        snprintf(p->addr, sizeof p->addr, "%s", listen);
        if (!strncmp(listen, "tcp:", 4)) { /* what workers are told: this host's name, the bound port */
            char host[256] = "localhost", *c = strrchr(p->addr, ':');
            const char *h = listen + 4;
            int wild = !strncmp(h, "0.0.0.0:", 8) || !strncmp(h, ":", 1);
            if (wild) gethostname(host, sizeof host - 1);
            if (wild) snprintf(p->addr, sizeof p->addr, "tcp:%s:%d", host, port);
            else if (c) snprintf(c + 1, sizeof p->addr - (size_t)(c + 1 - p->addr), "%d", port);
        }
        if (pthread_create(&p->acc, NULL, acceptor, p)) st = kf__err(ctx, KF_EENV, "pthread_create failed");
        else p->acc_started = 1;
    }
    if (!st) {
        pthread_mutex_lock(&p->mu);
        status_now_locked(p);
        pthread_mutex_unlock(&p->mu);
        char exe[4096];
        const char *e = o->kforge ? o->kforge : getenv("KFORGE_EXE");
        ssize_t l = e ? 0 : readlink("/proc/self/exe", exe, sizeof exe - 1);
        if (!e && l > 0) exe[l] = 0, e = exe;
        if (!e) st = kf__err(ctx, KF_EENV, "the kforge executable for workers: /proc/self/exe unreadable");
        else st = slurm ? launch_slurm(ctx, p, o, e) : launch_local(ctx, p, o, e);
    }
    if (st) {
        kf_pool_stop(p);
        return st;
    }
    *out = p;
    return KF_OK;
}

int kf_pool_launched(const kf_pool *p) { return p ? p->launched : 0; }

int kf_pool_draining(kf_pool *p) {
    pthread_mutex_lock(&p->mu);
    int d = p->draining;
    pthread_mutex_unlock(&p->mu);
    return d;
}

static int alive_locked(kf_pool *p) {
    int n = 0;
    for (int i = 0; i < p->nw; i++) n += p->w[i]->alive && !p->w[i]->control;
    return n;
}

int kf_pool_bench_doc(kf_pool *p, const kf_pool_req *rq, json_t **out, kf_status *bst, char *err, size_t n) {
    *out = NULL;
    *bst = KF_OK;
    req *r = calloc(1, sizeof *r);
    if (!r) return snprintf(err, n, "out of memory"), *bst = KF_ENOMEM, 1;
    r->msg =
        json_pack("{s:s, s:s, s:s, s:s, s:s%, s:O}", "t", "eval", "id", rq->eval_id, "task", rq->task_dir,
                  "name", rq->name, "text", rq->text, rq->len, "opts", rq->opts ? rq->opts : json_null());
    if (r->msg && rq->fingerprint) json_object_set_new(r->msg, "fingerprint", json_string(rq->fingerprint));
    if (r->msg && rq->vs_text)
        json_object_set_new(r->msg, "vs_text", json_stringn(rq->vs_text, rq->vs_len)),
            json_object_set_new(r->msg, "vs_name", json_string(rq->vs_name ? rq->vs_name : "baseline"));
    if (!r->msg) {
        free(r);
        snprintf(err, n, "out of memory");
        *bst = KF_ENOMEM;
        return 1;
    }
    snprintf(r->id, sizeof r->id, "%s", rq->eval_id);
    pthread_cond_init(&r->cv, NULL);
    pthread_mutex_lock(&p->mu);
    if (p->tail) p->tail->next = r;
    else p->head = r;
    p->tail = r;
    dispatch_locked(p);
    status_locked(p); /* the worker it went to is busy */
    double since = now_s();
    while (!r->done) {
        if (alive_locked(p) || r->on) since = now_s();
        else if (now_s() - since > p->wait_s) { /* no worker at all for too long: the machine's failure */
            req **q = &p->head, *prev = NULL;
            while (*q && *q != r) prev = *q, q = &(*q)->next;
            if (*q) *q = r->next;
            if (p->tail == r) p->tail = prev;
            r->done = 1;
            r->result = -2;
            snprintf(r->err, sizeof r->err, "no worker joined %s within %.0f s", p->addr, p->wait_s);
            break;
        }
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 200000000;
        if (ts.tv_nsec >= 1000000000) ts.tv_sec++, ts.tv_nsec -= 1000000000;
        pthread_cond_timedwait(&r->cv, &p->mu, &ts); /* a verdict or a loss signals it */
    }
    pthread_mutex_unlock(&p->mu);
    int rc = r->result;
    *bst = r->bst;
    if (!rc) {
        /* the document, with the device that produced it and the worker's name */
        json_t *doc = json_loads(json_string_value(json_object_get(r->verdict, "result")), 0, NULL);
        if (doc && !json_object_set(doc, "device", r->device) &&
            !json_object_set_new(doc, "worker", json_string(r->worker)))
            *out = doc;
        else json_decref(doc), rc = 1, *bst = KF_ENOMEM, snprintf(r->err, sizeof r->err, "out of memory");
    }
    snprintf(err, n, "%s", r->err);
    json_decref(r->verdict);
    json_decref(r->device);
    json_decref(r->msg);
    pthread_cond_destroy(&r->cv);
    free(r);
    return rc;
}

int kf_pool_bench(kf_pool *p, const kf_pool_req *rq, char **stored, kf_status *bst, char *err, size_t n) {
    json_t *doc = NULL;
    *stored = NULL;
    int rc = kf_pool_bench_doc(p, rq, &doc, bst, err, n);
    if (!rc && !(*stored = kf__json_dumps(doc, JSON_COMPACT)))
        rc = 1, *bst = KF_ENOMEM, snprintf(err, n, "out of memory");
    json_decref(doc);
    return rc;
}

void kf_pool_stop(kf_pool *p) {
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    p->quit = 1;
    json_t *leave = json_pack("{s:s}", "t", "leave");
    for (int i = 0; i < p->nw; i++)
        if (p->w[i]->alive && !p->w[i]->control) kf_scale_send(&p->w[i]->c, leave);
    json_decref(leave);
    pthread_mutex_unlock(&p->mu);
    if (p->acc_started) pthread_join(p->acc, NULL);
    for (int i = 0; i < p->nw; i++) shutdown(p->w[i]->c.fd, SHUT_RDWR);
    /* every reader ended before any worker is freed: a reader still running writes the
     * status file, which reads every worker */
    for (int i = 0; i < p->nw; i++) pthread_join(p->w[i]->th, NULL);
    for (int i = 0; i < p->nw; i++) {
        close(p->w[i]->c.fd);
        json_decref(p->w[i]->device);
        OPENSSL_cleanse(p->w[i]->c.key, sizeof p->w[i]->c.key);
        free(p->w[i]);
    }
    /* local workers leave when told; one that does not within 5 s is killed */
    double t0 = now_s();
    for (int i = 0; i < p->nkids; i++) {
        if (p->kids[i] <= 0) continue;
        while (waitpid(p->kids[i], NULL, WNOHANG) == 0) {
            if (now_s() - t0 > 5) {
                kill(p->kids[i], SIGKILL);
                waitpid(p->kids[i], NULL, 0);
                break;
            }
            struct timespec ts = {0, 20000000};
            nanosleep(&ts, NULL);
        }
    }
    for (int i = 0; i < p->njobs; i++) {
        char *av[] = {"scancel", p->jobs[i], NULL};
        pid_t pid;
        if (!posix_spawnp(&pid, "scancel", NULL, NULL, av, environ)) waitpid(pid, NULL, 0);
    }
    if (p->lfd >= 0) close(p->lfd);
    if (!strncmp(p->addr, "unix:", 5)) unlink(p->addr + 5);
    if (p->sock_dir[0]) rmdir(p->sock_dir);
    if (p->status_dir[0]) {
        char path[4300];
        snprintf(path, sizeof path, "%s/scale.json", p->status_dir);
        unlink(path);
    }
    OPENSSL_cleanse(p->secret, sizeof p->secret);
    pthread_mutex_destroy(&p->mu);
    free(p);
}
