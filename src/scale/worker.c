/*
 * worker.c - `kforge worker` (docs/scale.md): a long-lived process bound to one device
 * (a GPU, through CUDA_VISIBLE_DEVICES, or a set of CPUs, through its affinity) that
 * joins a coordinator and does one evaluation at a time: the candidate and its baseline
 * written to a private directory, kf_bench on them (each candidate still in a sandboxed
 * kforge-worker process of its own, as on one machine), the stored verdict document
 * sent back. It keeps nothing between evaluations but the loaded task. When the
 * coordinator goes away it tries to join again for --wait seconds (a resumed coordinator
 * at the same address takes it back); `leave` ends it. kforge drain (kf_scale_drain) is
 * the same handshake in the role "control".
 */
#define _GNU_SOURCE
#include "scale.h"

#include "../check/result.h"
#include "../store/store.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <sched.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void nap(double s) {
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&ts, NULL);
}

static double now_s(void) { return (double)kf__now_ns() / 1e9; }

/* "0-3,6" into set: 0, or -1. */
static int parse_cpus(const char *s, cpu_set_t *set) {
    CPU_ZERO(set);
    while (*s) {
        char *e;
        long a = strtol(s, &e, 10), b = a;
        if (e == s || a < 0 || a >= CPU_SETSIZE) return -1;
        if (*e == '-') {
            s = e + 1;
            b = strtol(s, &e, 10);
            if (e == s || b < a || b >= CPU_SETSIZE) return -1;
        }
        for (long i = a; i <= b; i++) CPU_SET((int)i, set);
        if (*e && *e != ',') return -1;
        s = *e ? e + 1 : e;
    }
    return CPU_COUNT(set) ? 0 : -1;
}

/* What this worker runs on, as the coordinator records it. */
static json_t *describe(kf_ctx *ctx, const kf_scale_worker_opts *o) {
    json_t *d = json_object();
    if (o->device) {
        json_object_set_new(d, "kind", json_string("cuda"));
        json_object_set_new(d, "index", json_integer(strtol(o->device + 5, NULL, 10)));
        char *info = NULL;
        json_t *j = kf_device_info(ctx, 0, 0, &info) ? NULL : json_loads(info, 0, NULL);
        const char *name = json_string_value(json_object_get(j, "name"));
        json_object_set_new(d, "model", json_string(name ? name : "CUDA device (not described)"));
        if (!name) json_object_set_new(d, "why", json_string(kf_errmsg(ctx)));
        json_decref(j);
        free(info);
    } else {
        json_object_set_new(d, "kind", json_string("cpu"));
        char model[256] = "cpu", line[512];
        FILE *f = fopen("/proc/cpuinfo", "r");
        while (f && fgets(line, sizeof line, f))
            if (!strncmp(line, "model name", 10) && strchr(line, ':')) {
                const char *v = strchr(line, ':') + 1;
                v += strspn(v, " \t");
                snprintf(model, sizeof model, "%.*s", (int)strcspn(v, "\n"), v);
                break;
            }
        if (f) fclose(f);
        json_object_set_new(d, "model", json_string(model));
        json_object_set_new(d, "cpu_identity", json_string(kf__cpu_identity()));
    }
    if (o->cpus) json_object_set_new(d, "cpus", json_string(o->cpus));
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    json_object_set_new(d, "host", json_string(host));
    const char *sn = getenv("SLURMD_NODENAME"), *sj = getenv("SLURM_JOB_ID");
    if (sn) json_object_set_new(d, "slurm_node", json_string(sn));
    if (sj) json_object_set_new(d, "slurm_job", json_string(sj));
    json_object_set_new(d, "cpu_count", json_integer(kf__nthreads()));
    return d;
}

typedef struct {
    kf_ctx *ctx;
    kf_task *t;
    char dir[4096];
} worker;

static int write_text(const char *dir, const char *name, const char *text, size_t len, char *path,
                      size_t pn) {
    const char *b = strrchr(name, '/');
    b = b ? b + 1 : name;
    if (!*b || !strcmp(b, ".") || !strcmp(b, "..")) b = "candidate";
    snprintf(path, pn, "%s/%s", dir, b);
    FILE *f = fopen(path, "wbx");
    if (!f) return -1;
    int rc = fwrite(text, 1, len, f) == len ? 0 : -1;
    return fclose(f) || rc ? -1 : 0;
}

static double num(json_t *o, const char *k, double dflt) {
    json_t *v = json_object_get(o, k);
    return json_is_number(v) ? json_number_value(v) : dflt;
}

/* One evaluation request: the reply's fields into rep. */
static void evaluate(worker *w, json_t *rq, json_t *rep) {
    kf_status st = KF_OK;
    const char *tdir = json_string_value(json_object_get(rq, "task"));
    const char *fp = json_string_value(json_object_get(rq, "fingerprint"));
    const char *name = json_string_value(json_object_get(rq, "name"));
    const char *text = json_string_value(json_object_get(rq, "text"));
    const char *vsn = json_string_value(json_object_get(rq, "vs_name"));
    const char *vst = json_string_value(json_object_get(rq, "vs_text"));
    json_t *opts = json_object_get(rq, "opts");
    char err[2048] = "";
    if (!tdir || !name || !text) {
        st = kf__err(w->ctx, KF_EUSAGE, "a malformed request");
    } else if (!w->t || strcmp(w->dir, tdir)) {
        kf_task_free(w->t);
        w->t = NULL;
        snprintf(w->dir, sizeof w->dir, "%s", tdir);
        st = kf_task_load(w->ctx, tdir, &w->t);
    }
    char hex[65];
    if (!st && fp && !kf_store_fingerprint(w->ctx, w->t, hex) && strcmp(hex, fp))
        st = kf__err(w->ctx, KF_ETASK,
                     "the task at %s on this worker is not the run's (its fingerprint differs): every "
                     "worker must see the same task files",
                     tdir);
    char dir[4096] = "", path[4400], vpath[4400];
    if (!st) {
        const char *tmp = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/kforge-run-%d-XXXXXX", tmp && *tmp ? tmp : "/tmp", (int)getpid());
        if (!mkdtemp(dir))
            dir[0] = 0, st = kf__err(w->ctx, KF_EIO, "a private directory: %s", strerror(errno));
    }
    char vdir[4200];
    snprintf(vdir, sizeof vdir, "%s/vs", dir); /* the baseline apart: it may have the candidate's name */
    if (!st &&
        (write_text(dir, name, text, json_string_length(json_object_get(rq, "text")), path, sizeof path) ||
         (vst && (mkdir(vdir, 0700) ||
                  write_text(vdir, vsn ? vsn : "baseline", vst,
                             json_string_length(json_object_get(rq, "vs_text")), vpath, sizeof vpath)))))
        st = kf__err(w->ctx, KF_EIO, "the candidate's private copy in %s: %s", dir, strerror(errno));
    kf_result *res = NULL;
    if (!st) {
        kf_opts o;
        kf_opts_init(&o);
        o.vs_path = vst ? vpath : NULL;
        int h = (int)num(opts, "hidden", -1), mn = (int)num(opts, "min_runs", 0),
            mx = (int)num(opts, "max_runs", 0);
        double mt = num(opts, "min_time_s", -1);
        if (h >= 0) o.hidden_count = h;
        if (mn > 0) o.bench_min_runs = mn;
        if (mx > 0) o.bench_max_runs = mx;
        if (mt >= 0) o.bench_min_time_s = mt;
        st = kf_bench(w->ctx, w->t, path, &o, &res);
    }
    char *stored = !st ? kf_result_json_stored(res) : NULL;
    if (!st && !stored) st = kf__err(w->ctx, KF_ENOMEM, "out of memory");
    if (st) snprintf(err, sizeof err, "%s", kf_errmsg(w->ctx));
    json_object_set_new(rep, "status", json_integer(st));
    if (st) json_object_set_new(rep, "error", json_string(err));
    else json_object_set_new(rep, "result", json_string(stored));
    free(stored);
    kf_result_free(res);
    if (dir[0]) kf__rmtree(dir);
}

kf_status kf_worker_serve(kf_ctx *ctx, const kf_scale_worker_opts *o) {
    if (!o->connect) return kf__err(ctx, KF_EUSAGE, "kforge worker: --connect ADDRESS is required");
    if (o->device && (strncmp(o->device, "cuda:", 5) || !o->device[5] ||
                      strspn(o->device + 5, "0123456789") != strlen(o->device + 5)))
        return kf__err(ctx, KF_EUSAGE, "--device %s: expected cuda:INDEX", o->device);
    /* bound to its device before anything loads the driver: the GPU it sees as 0 */
    if (o->device) setenv("CUDA_VISIBLE_DEVICES", o->device + 5, 1);
    if (o->cpus) {
        cpu_set_t set;
        if (parse_cpus(o->cpus, &set))
            return kf__err(ctx, KF_EUSAGE, "--cpus %s: expected a list like 0-3,6", o->cpus);
        if (sched_setaffinity(0, sizeof set, &set))
            return kf__err(ctx, KF_EUSAGE, "--cpus %s: %s", o->cpus, strerror(errno));
    }
    unsigned char secret[KF_SCALE_SECRET_LEN];
    char err[1024];
    const char *sf = o->secret_file ? o->secret_file : getenv("KFORGE_SCALE_SECRET_FILE");
    if (!sf)
        return kf__err(ctx, KF_EUSAGE, "kforge worker: --secret-file FILE (the run's secret) is required");
    if (kf_scale_secret(sf, 0, secret, err, sizeof err)) return kf__err(ctx, KF_EUSAGE, "%s", err);
    char host[256] = "worker";
    gethostname(host, sizeof host - 1);
    char name[320];
    snprintf(name, sizeof name, "%s", o->name ? o->name : host);
    if (!o->name) snprintf(name + strlen(name), sizeof name - strlen(name), "-%d", (int)getpid());
    json_t *extra =
        json_pack("{s:s, s:i, s:o}", "name", name, "pid", (int)getpid(), "device", describe(ctx, o));
    worker w = {.ctx = ctx};
    double wait = o->wait_s > 0 ? o->wait_s : 60, deadline = now_s() + wait;
    int joined = 0, done = 0;
    kf_status st = KF_OK;
    while (!done) {
        int fd = kf_scale_connect(o->connect, err, sizeof err);
        if (fd < 0) {
            if (now_s() > deadline) {
                st = joined ? KF_OK
                            : kf__err(ctx, KF_EENV, "kforge worker: no coordinator at %s within %.0f s: %s",
                                      o->connect, wait, err);
                break;
            }
            nap(0.1);
            continue;
        }
        kf_scale_conn c = {.fd = fd};
        memcpy(c.key, secret, sizeof secret);
        int jr = kf_scale_join(&c, "worker", extra, err, sizeof err);
        if (jr == -2) { /* a coordinator going or coming: try again */
            close(fd);
            if (now_s() > deadline) {
                st = joined ? KF_OK : kf__err(ctx, KF_EENV, "kforge worker %s: %s", name, err);
                break;
            }
            nap(0.1);
            continue;
        }
        if (jr) {
            close(fd);
            st = kf__err(ctx, KF_EUSAGE, "kforge worker %s: %s", name, err);
            break;
        }
        fprintf(stderr, "kforge worker %s: joined %s\n", name, o->connect);
        joined = 1;
        for (;;) {
            int why = 0;
            json_t *m = kf_scale_recv(&c, &why);
            const char *t = json_string_value(json_object_get(m, "t"));
            if (!m) break; /* the coordinator went away: join again, maybe a resumed one */
            if (!strcmp(t ? t : "", "leave")) {
                done = 1;
                json_decref(m);
                break;
            }
            if (!strcmp(t ? t : "", "eval")) {
                json_t *rep = json_pack("{s:s, s:O, s:O}", "t", "verdict", "id", json_object_get(m, "id"),
                                        "ticket", json_object_get(m, "ticket"));
                evaluate(&w, m, rep);
                kf_scale_send(&c, rep); /* lost with the connection: the coordinator requeues it */
                json_decref(rep);
            }
            json_decref(m);
        }
        close(fd);
        OPENSSL_cleanse(c.key, sizeof c.key);
        if (!done)
            fprintf(stderr, "kforge worker %s: the coordinator at %s is gone; waiting %.0f s for it\n", name,
                    o->connect, wait);
        deadline = now_s() + wait;
    }
    if (done) fprintf(stderr, "kforge worker %s: left\n", name);
    OPENSSL_cleanse(secret, sizeof secret);
    json_decref(extra);
    kf_task_free(w.t);
    return st;
}

kf_status kf_scale_drain(kf_ctx *ctx, const char *target, const char *secret_file, char **out) {
    *out = NULL;
    char addr[4200], sfile[4200], err[1024];
    snprintf(addr, sizeof addr, "%s", target);
    snprintf(sfile, sizeof sfile, "%s", secret_file ? secret_file : "");
    if (strncmp(target, "unix:", 5) && strncmp(target, "tcp:", 4)) {
        /* a run directory: its coordinator's address and secret, from scale.json */
        char p[4200], *text = NULL;
        size_t len = 0;
        snprintf(p, sizeof p, "%s/scale.json", target);
        if (kf__read_file(p, 1u << 20, &text, &len))
            return kf__err(ctx, KF_EUSAGE, "%s: no coordinator is serving workers there (no scale.json)",
                           target);
        json_t *j = json_loads(text, 0, NULL);
        free(text);
        const char *a = json_string_value(json_object_get(j, "address"));
        const char *s = json_string_value(json_object_get(j, "secret_file"));
        if (a) snprintf(addr, sizeof addr, "%s", a);
        if (s && !secret_file) snprintf(sfile, sizeof sfile, "%s", s);
        json_decref(j);
        if (!a) return kf__err(ctx, KF_EUSAGE, "%s: scale.json names no address", p);
    }
    if (!sfile[0]) return kf__err(ctx, KF_EUSAGE, "kforge drain %s: --secret-file FILE is required", target);
    unsigned char secret[KF_SCALE_SECRET_LEN];
    if (kf_scale_secret(sfile, 0, secret, err, sizeof err)) return kf__err(ctx, KF_EUSAGE, "%s", err);
    int fd = kf_scale_connect(addr, err, sizeof err);
    if (fd < 0) return kf__err(ctx, KF_EUSAGE, "kforge drain: no coordinator at %s: %s", addr, err);
    kf_scale_conn c = {.fd = fd};
    memcpy(c.key, secret, sizeof secret);
    OPENSSL_cleanse(secret, sizeof secret);
    kf_status st = KF_OK;
    json_t *m = json_pack("{s:s}", "t", "drain"), *r = NULL;
    int why = 0;
    if (kf_scale_join(&c, "control", NULL, err, sizeof err)) st = kf__err(ctx, KF_EUSAGE, "%s", err);
    else if (kf_scale_send(&c, m) || !(r = kf_scale_recv(&c, &why)))
        st = kf__err(ctx, KF_EENV, "kforge drain: the coordinator at %s did not answer", addr);
    if (!st) json_object_del(r, "t"), *out = kf__json_dumps(r, JSON_COMPACT);
    json_decref(m);
    json_decref(r);
    close(fd);
    return st;
}
