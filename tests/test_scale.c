/*
 * test_scale.c - evaluations spread over workers (docs/scale.md): the frames' MACs
 * refuse a tampered, replayed or foreign frame; a verdict that arrives twice is recorded
 * once; a verdict for an evaluation its sender does not hold is refused, and so is a
 * worker without the run's secret; an evaluation whose worker dies is requeued once,
 * then given up as lost; a worker SIGKILLed mid-evaluation in a real run costs nothing
 * (requeued, recorded once); a coordinator SIGKILLed while its workers run is resumed
 * and the same workers join it again; --devices splits the GPUs of the stand-in driver
 * one worker each, and every verdict records the model of the device that timed it.
 */
#define _GNU_SOURCE
#include "kft.h"

#include "scale/scale.h"
#include "store/store.h"
#include "util/util.h"

#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char quick[] = "--min-runs 5 --max-runs 8 --min-time 0.01 --hidden 1";

static void nap_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

/* ---- frames ---- */

static void t_frames(const void *arg) {
    (void)arg;
    int sv[2];
    CHECK(!socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
    kf_scale_conn a = {.fd = sv[0]}, b = {.fd = sv[1]};
    memset(a.key, 7, 32), memset(b.key, 7, 32);
    json_t *m = json_pack("{s:s, s:i}", "t", "x", "n", 1);
    int why = -1;
    CHECK(!kf_scale_send(&a, m));
    json_t *r = kf_scale_recv(&b, &why);
    CHECK(r && json_integer_value(json_object_get(r, "n")) == 1);
    json_decref(r);
    /* a frame under another key: refused as forged */
    kf_scale_conn x = {.fd = sv[0], .seq_out = a.seq_out};
    memset(x.key, 8, 32);
    CHECK(!kf_scale_send(&x, m));
    CHECK(!kf_scale_recv(&b, &why) && why == 2);
    /* a replayed frame (its sequence number was used): refused */
    kf_scale_conn y = a;
    y.seq_out = 0;
    b.seq_in = 1;
    CHECK(!kf_scale_send(&y, m));
    CHECK(!kf_scale_recv(&b, &why) && why == 2);
    /* the end of the stream */
    close(sv[0]);
    CHECK(!kf_scale_recv(&b, &why) && why == 0);
    close(sv[1]);
    /* a join cut off after a good challenge is a lost connection (-2: the worker tries
     * again), not a refusal (-1: a challenge without the secret's MAC) */
    for (int bad = 0; bad < 2; bad++) {
        CHECK(!socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
        kf_scale_conn co = {.fd = sv[0]}, wk = {.fd = sv[1]};
        memset(co.key, 5, 32), memset(wk.key, bad ? 6 : 5, 32);
        json_t *ch = json_pack("{s:s, s:s}", "t", "challenge", "nonce", "00");
        CHECK(!kf_scale_send(&co, ch));
        json_decref(ch);
        close(sv[0]);
        char err[300];
        int jr = kf_scale_join(&wk, "worker", NULL, err, sizeof err);
        CHECKF(jr == (bad ? -1 : -2), "join %d: %s", jr, err);
        close(sv[1]);
    }
    json_decref(m);
}

static pid_t start(const char *args, const char *out_path);
static int wait_exit(pid_t pid, int secs);

/* ---- an in-process pool and workers that speak the protocol by hand ---- */

typedef struct {
    char dir[64], addr[128], secret[128];
    kf_pool *p;
} fixture;

static void fixture_start(fixture *f, double wait_s) {
    snprintf(f->dir, sizeof f->dir, "/tmp/kft-scale-XXXXXX");
    CHECK(mkdtemp(f->dir));
    snprintf(f->addr, sizeof f->addr, "unix:%s/s", f->dir);
    snprintf(f->secret, sizeof f->secret, "%s/secret", f->dir);
    kf_ctx *ctx = kf_ctx_new();
    kf_pool_opts o = {.listen = f->addr, .secret_file = f->secret, .wait_s = wait_s, .status_dir = f->dir};
    CHECKF(!kf_pool_start(ctx, &o, &f->p), "%s", kf_errmsg(ctx));
    kf_ctx_free(ctx);
}

static void fixture_stop(fixture *f) {
    kf_pool_stop(f->p);
    kf__rmtree(f->dir);
}

/* A hand-made worker joined to f (with the run's secret, or a wrong one): 0 or -1. */
static int hand_join(fixture *f, const char *name, int wrong, kf_scale_conn *c) {
    char err[512];
    unsigned char key[32];
    CHECK(!kf_scale_secret(f->secret, 0, key, err, sizeof err));
    if (wrong) key[0] ^= 1;
    memset(c, 0, sizeof *c);
    c->fd = kf_scale_connect(f->addr, err, sizeof err);
    CHECKF(c->fd >= 0, "%s", err);
    memcpy(c->key, key, 32);
    json_t *ex = json_pack("{s:s, s:i, s:{s:s}}", "name", name, "pid", 1, "device", "model", "hand");
    int rc = kf_scale_join(c, "worker", ex, err, sizeof err);
    json_decref(ex);
    return rc;
}

static long counter(fixture *f, const char *k) {
    json_t *j = kf_pool_report(f->p);
    long v = (long)json_integer_value(json_object_get(j, k));
    json_decref(j);
    return v;
}

static int wait_counter(fixture *f, const char *k, long want) {
    for (int i = 0; i < 500; i++) {
        if (counter(f, k) >= want) return 1;
        nap_ms(10);
    }
    return 0;
}

static int alive_workers(fixture *f) {
    json_t *j = kf_pool_report(f->p);
    size_t i;
    json_t *w;
    int n = 0;
    json_array_foreach(json_object_get(j, "workers"), i, w) n +=
        !strcmp(json_string_value(json_object_get(w, "state")), "gone") == 0;
    json_decref(j);
    return n;
}

typedef struct {
    fixture *f;
    int rc;
    char *stored;
    kf_status bst;
    char err[1500];
} bench_call;

static void *bench_thread(void *arg) {
    bench_call *b = arg;
    json_t *o = json_object();
    kf_pool_req rq = {"tasks/c/saxpy", NULL, "c.c", "int x;", 6, NULL, NULL, 0, o, "7.1"};
    b->rc = kf_pool_bench(b->f->p, &rq, &b->stored, &b->bst, b->err, sizeof b->err);
    json_decref(o);
    return NULL;
}

static json_t *verdict_for(json_t *ev, const char *ticket, const char *doc) {
    return json_pack("{s:s, s:O, s:s, s:i, s:s}", "t", "verdict", "id", json_object_get(ev, "id"), "ticket",
                     ticket ? ticket : json_string_value(json_object_get(ev, "ticket")), "status", 0,
                     "result", doc);
}

/* A verdict that arrives twice is recorded once: the second copy is a duplicate. */
static void t_duplicate(const void *arg) {
    (void)arg;
    fixture f;
    fixture_start(&f, 10);
    kf_scale_conn c;
    CHECK(!hand_join(&f, "dup", 0, &c));
    bench_call b = {.f = &f};
    pthread_t th;
    CHECK(!pthread_create(&th, NULL, bench_thread, &b));
    int why = 0;
    json_t *ev = kf_scale_recv(&c, &why);
    CHECKF(ev && !strcmp(json_string_value(json_object_get(ev, "t")), "eval"), "why %d", why);
    CHECK(!strcmp(json_string_value(json_object_get(ev, "id")), "7.1"));
    json_t *v = verdict_for(ev, NULL, "{\"verdict\":\"accepted\",\"n\":1}");
    CHECK(!kf_scale_send(&c, v));
    CHECK(!kf_scale_send(&c, v)); /* the same verdict again */
    pthread_join(th, NULL);
    CHECKF(b.rc == 0 && b.stored && strstr(b.stored, "\"n\":1") && strstr(b.stored, "\"worker\":\"dup\""),
           "rc %d %s %s", b.rc, b.stored ? b.stored : "", b.err);
    CHECK(wait_counter(&f, "duplicates", 1));
    CHECK(counter(&f, "verdicts") == 1 && counter(&f, "refused") == 0);
    free(b.stored);
    json_decref(v);
    json_decref(ev);
    close(c.fd);
    fixture_stop(&f);
}

/* A worker cannot answer for an evaluation it was not given (not with a guessed ticket,
 * not with the ticket itself), and one without the run's secret cannot join. */
static void t_forged(const void *arg) {
    (void)arg;
    fixture f;
    fixture_start(&f, 10);
    kf_scale_conn a, bad, c;
    CHECK(!hand_join(&f, "honest", 0, &a));
    CHECK(hand_join(&f, "stranger", 1, &bad) == -1); /* the wrong secret: refused at the door */
    close(bad.fd);
    bench_call b = {.f = &f};
    pthread_t th;
    CHECK(!pthread_create(&th, NULL, bench_thread, &b));
    int why = 0;
    json_t *ev = kf_scale_recv(&a, &why);
    CHECK(ev);
    CHECK(!hand_join(&f, "forger", 0, &c)); /* joined after the evaluation went to "honest" */
    json_t *g =
        verdict_for(ev, "00000000000000000000000000000000", "{\"verdict\":\"accepted\",\"forged\":1}");
    CHECK(!kf_scale_send(&c, g));
    json_t *g2 = verdict_for(ev, NULL, "{\"verdict\":\"accepted\",\"forged\":2}");
    CHECK(!kf_scale_send(&c, g2));
    CHECK(wait_counter(&f, "refused", 2));
    json_t *v = verdict_for(ev, NULL, "{\"verdict\":\"rejected\",\"honest\":1}");
    CHECK(!kf_scale_send(&a, v));
    pthread_join(th, NULL);
    CHECKF(b.rc == 0 && strstr(b.stored, "\"honest\":1") && !strstr(b.stored, "forged"), "rc %d %s", b.rc,
           b.stored ? b.stored : b.err);
    CHECK(counter(&f, "verdicts") == 1);
    free(b.stored);
    json_decref(g), json_decref(g2), json_decref(v), json_decref(ev);
    close(a.fd), close(c.fd);
    fixture_stop(&f);
}

/* A request whose worker dies is requeued once to another; when that one dies too it is
 * given up, saying so (the loop records the node as crashed). */
static void t_lost_twice(const void *arg) {
    (void)arg;
    fixture f;
    fixture_start(&f, 10);
    kf_scale_conn a, c;
    CHECK(!hand_join(&f, "first", 0, &a));
    CHECK(!hand_join(&f, "second", 0, &c));
    bench_call b = {.f = &f};
    pthread_t th;
    CHECK(!pthread_create(&th, NULL, bench_thread, &b));
    /* whichever got it dies; the other gets it next, and dies too */
    int why = 0;
    struct timeval tv = {0, 300000};
    setsockopt(a.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(c.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    json_t *ev = kf_scale_recv(&a, &why);
    kf_scale_conn *first = ev ? &a : &c, *second = ev ? &c : &a;
    if (!ev) ev = kf_scale_recv(&c, &why);
    CHECK(ev);
    json_decref(ev);
    close(first->fd);
    CHECK(wait_counter(&f, "requeued", 1));
    tv.tv_sec = 5;
    setsockopt(second->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ev = kf_scale_recv(second, &why);
    CHECKF(ev && !strcmp(json_string_value(json_object_get(ev, "id")), "7.1"),
           "the requeued request (why %d)", why);
    json_decref(ev);
    close(second->fd);
    pthread_join(th, NULL);
    CHECKF(b.rc == -1 && strstr(b.err, "lost twice") && strstr(b.err, "first") && strstr(b.err, "second"),
           "rc %d: %s", b.rc, b.err);
    CHECK(counter(&f, "lost") == 1 && counter(&f, "requeued") == 1);
    fixture_stop(&f);
}

/* A pool stopped with many workers joined: each reader rewrites the status file, which
 * reads every worker, as it ends; none may read one already freed (a coordinator with 64
 * workers crashed at the end of its run). */
static void t_stop_many(const void *arg) {
    (void)arg;
    for (int round = 0; round < 4; round++) {
        fixture f;
        fixture_start(&f, 10);
        kf_scale_conn c[48];
        for (int i = 0; i < 48; i++) {
            char nm[16];
            snprintf(nm, sizeof nm, "w%d", i);
            CHECK(!hand_join(&f, nm, 0, &c[i]));
        }
        fixture_stop(&f);
        for (int i = 0; i < 48; i++) close(c[i].fd);
    }
}

/* No worker at all within the wait: the machine's failure, not the candidate's. */
static void t_no_worker(const void *arg) {
    (void)arg;
    fixture f;
    fixture_start(&f, 0.5);
    bench_call b = {.f = &f};
    bench_thread(&b);
    CHECKF(b.rc == -2 && strstr(b.err, "no worker joined"), "rc %d: %s", b.rc, b.err);
    CHECK(alive_workers(&f) == 0);
    fixture_stop(&f);
}

/* ---- real runs ---- */

static int cli(const char *args, char *out, size_t n) {
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "cd %s && %s %s", kft_src("."), kft_bin("kforge"), args);
    return kft_run(cmd, out, n);
}

/* kforge ARGS in the background (from the source tree), stdout to out_path. */
static pid_t start(const char *args, const char *out_path) {
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "cd %s && exec %s %s > %s 2>>%s.err", kft_src("."), kft_bin("kforge"), args,
             out_path, out_path);
    pid_t pid = fork();
    if (!pid) {
        setpgid(0, 0);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    return pid;
}

static int wait_exit(pid_t pid, int secs) {
    for (int i = 0; i < secs * 50; i++) {
        int st;
        if (waitpid(pid, &st, WNOHANG) == pid) return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        nap_ms(20);
    }
    kill(-pid, SIGKILL);
    waitpid(pid, NULL, 0);
    return -1;
}

static json_t *scale_json(const char *run) {
    char p[400];
    snprintf(p, sizeof p, "%s/scale.json", run);
    return json_load_file(p, 0, NULL);
}

/* The first crashed node's note of the last node_counts (why, for a failure's message). */
static char crash_note[600];

/* The run's nodes: how many, how many finished (not proposed), how many crashed. */
static void node_counts(const char *run, int *all, int *finished, int *crashed) {
    char args[600], out[1 << 17];
    snprintf(args, sizeof args, "tree %s --json", run);
    *all = *finished = *crashed = 0;
    crash_note[0] = 0;
    CHECK(cli(args, out, sizeof out) == 0);
    json_t *j = json_loads(out, 0, NULL);
    size_t i;
    json_t *nd;
    json_array_foreach(json_object_get(j, "nodes"), i, nd) {
        const char *s = json_string_value(json_object_get(nd, "state"));
        if (!s) continue;
        (*all)++;
        *finished += strcmp(s, "proposed") != 0;
        *crashed += !strcmp(s, "crashed");
        const char *note = json_string_value(json_object_get(nd, "note"));
        if (!strcmp(s, "crashed") && !crash_note[0])
            snprintf(crash_note, sizeof crash_note, "node %lld: %s", (long long)json_integer_value(json_object_get(nd, "id")),
                     note ? note : "(no note)");
    }
    json_decref(j);
}

static json_t *summary(const char *path) {
    json_t *j = json_load_file(path, 0, NULL);
    return j;
}

/* A worker SIGKILLed in the middle of an evaluation: its evaluation is requeued once to
 * the other worker and recorded once; nothing is lost, nothing crashed. */
static void t_worker_killed(const void *arg) {
    (void)arg;
    char dir[] = "/tmp/kft-scalek-XXXXXX", run[128], out[160], args[1024];
    CHECK(mkdtemp(dir));
    snprintf(run, sizeof run, "%s/run", dir);
    snprintf(out, sizeof out, "%s/out.json", dir);
    snprintf(args, sizeof args,
             "run tasks/c/transpose --run %s --budget 5 --workers 2 --secret-file %s/secret %s --json", run,
             dir, quick);
    pid_t pid = start(args, out);
    int killed = 0;
    for (int i = 0; i < 3000 && !killed; i++) {
        json_t *s = scale_json(run);
        size_t k;
        json_t *w;
        json_array_foreach(json_object_get(s, "workers"), k, w) {
            if (!killed && !strcmp(json_string_value(json_object_get(w, "state")), "busy") &&
                json_integer_value(json_object_get(w, "evaluations")) >= 1) {
                kill((pid_t)json_integer_value(json_object_get(w, "pid")), SIGKILL);
                killed = 1;
            }
        }
        json_decref(s);
        if (!killed) nap_ms(10);
    }
    CHECKF(killed, "no worker was seen busy");
    int rc = wait_exit(pid, 150);
    CHECKF(rc == 0, "kforge run exit %d", rc);
    json_t *sm = summary(out);
    json_t *sc = json_object_get(sm, "scale");
    CHECKF(json_integer_value(json_object_get(sc, "requeued")) == 1 &&
               json_integer_value(json_object_get(sc, "lost")) == 0,
           "scale: %s", json_dumps(sc, 0));
    CHECK(json_integer_value(json_object_get(sm, "evaluations")) == 5);
    int all, fin, cr;
    node_counts(run, &all, &fin, &cr);
    CHECKF(all == 5 && fin == 5 && cr == 0, "%d nodes, %d finished, %d crashed (%s)", all, fin, cr, crash_note);
    json_decref(sm);
    kf__rmtree(dir);
}

/* The coordinator SIGKILLed while its workers run: the workers wait, the resumed
 * coordinator at the same address takes them back, and the run ends with its budget,
 * every node recorded once; told to leave, the workers exit 0. */
static void t_coordinator_resume(const void *arg) {
    (void)arg;
    char dir[] = "/tmp/kft-scalec-XXXXXX", run[128], out[160], args[1024], wo[2][160];
    CHECK(mkdtemp(dir));
    snprintf(run, sizeof run, "%s/run", dir);
    snprintf(out, sizeof out, "%s/out.json", dir);
    pid_t w[2];
    const char *common = "--listen unix:%s/sock --secret-file %s/secret";
    char lst[400];
    snprintf(lst, sizeof lst, common, dir, dir);
    snprintf(args, sizeof args, "run tasks/c/transpose --run %s --budget 6 --jobs 2 %s %s --json", run, lst,
             quick);
    pid_t pid = start(args, out);
    for (int i = 0; i < 2; i++) {
        char wa[700];
        /* the secret exists once the coordinator made it */
        for (int k = 0; k < 500; k++) {
            char sp[200];
            snprintf(sp, sizeof sp, "%s/secret", dir);
            if (!access(sp, R_OK)) break;
            nap_ms(10);
        }
        snprintf(wa, sizeof wa,
                 "worker --connect unix:%s/sock --secret-file %s/secret --name hand-%d --wait 15", dir, dir,
                 i);
        snprintf(wo[i], sizeof wo[i], "%s/w%d.out", dir, i);
        w[i] = start(wa, wo[i]);
    }
    int seen = 0;
    for (int i = 0; i < 3000 && !seen; i++) {
        json_t *s = scale_json(run);
        seen = json_integer_value(json_object_get(s, "verdicts")) >= 3;
        json_decref(s);
        if (!seen) nap_ms(10);
    }
    CHECKF(seen, "no verdicts before the kill");
    kill(-pid, SIGKILL);
    waitpid(pid, NULL, 0);
    /* both workers notice (one busy in an evaluation notices when it ends) and wait */
    int gone = 0;
    for (int i = 0; i < 3000 && gone < 2; i++) {
        gone = 0;
        for (int k = 0; k < 2; k++) {
            char ep[200], *text = NULL;
            size_t len = 0;
            snprintf(ep, sizeof ep, "%s.err", wo[k]);
            if (!kf__read_file(ep, 1 << 20, &text, &len)) gone += strstr(text, "is gone") != NULL;
            free(text);
        }
        if (gone < 2) nap_ms(20);
    }
    CHECKF(gone == 2, "the workers did not see the coordinator go");
    snprintf(args, sizeof args, "run --resume %s --budget 6 --jobs 2 %s %s --json", run, lst, quick);
    pid = start(args, out);
    int rc = wait_exit(pid, 150);
    CHECKF(rc == 0, "the resumed run: exit %d", rc);
    json_t *sm = summary(out);
    CHECKF(json_integer_value(json_object_get(sm, "evaluations")) == 6, "%s", json_dumps(sm, 0));
    json_t *ws = json_object_get(json_object_get(sm, "scale"), "workers");
    /* the workers that were waiting joined it (on a loaded machine the last evaluations
     * may all be done before the second gets in) */
    size_t k;
    json_t *wk;
    CHECKF(json_array_size(ws) >= 1, "no worker joined the resumed run");
    json_array_foreach(ws, k, wk) {
        const char *nm = json_string_value(json_object_get(wk, "name"));
        CHECKF(nm && !strncmp(nm, "hand-", 5), "a worker of the first coordinator joined again: %s", nm);
    }
    int all, fin, cr;
    node_counts(run, &all, &fin, &cr);
    CHECKF(all == 6 && fin == 6, "%d nodes, %d finished", all, fin);
    for (int i = 0; i < 2; i++) {
        int wr = wait_exit(w[i], 40);
        char ep[200], *text = NULL;
        size_t len = 0;
        snprintf(ep, sizeof ep, "%s.err", wo[i]);
        if (kf__read_file(ep, 1 << 20, &text, &len)) text = NULL;
        CHECKF(wr == 0, "worker %d left (told to, or after its --wait): exit %d: %s", i, wr,
               text ? text : "");
        free(text);
    }
    json_decref(sm);
    kf__rmtree(dir);
}

/* --devices all on the stand-in driver with three GPUs of two models: one worker per
 * GPU, each bound to its own (CUDA_VISIBLE_DEVICES), each verdict with the model of the
 * GPU that timed it, and the models reported; a GPU the machine lacks is refused. */
static void t_devices(const void *arg) {
    (void)arg;
    char dir[] = "/tmp/kft-scaled-XXXXXX", run[128], args[1400], out[1 << 17], env[900];
    CHECK(mkdtemp(dir));
    snprintf(run, sizeof run, "%s/run", dir);
    snprintf(env, sizeof env,
             "env KFORGE_LIBCUDA=%s KFORGE_CACHE_DIR=%s/cache FAKECUDA_COUNT=3 "
             "FAKECUDA_MODELS='Fake H200,Fake H200,Fake H100'",
             kft_bin("libkft_fakecuda.so"), dir);
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "cd %s && %s %s run tasks/c/saxpy --run %s/bad --devices 0,5 --budget 1 2>&1",
             kft_src("."), env, kft_bin("kforge"), dir);
    int rc = kft_run(cmd, out, sizeof out);
    CHECKF(rc == 2 && strstr(out, "GPU 5: this machine has 3"), "exit %d: %s", rc, out);
    snprintf(cmd, sizeof cmd,
             "cd %s && %s %s run tasks/c/saxpy --run %s --devices all --budget 3 --secret-file %s/secret %s "
             "--json "
             "2>/dev/null",
             kft_src("."), env, kft_bin("kforge"), run, dir, quick);
    rc = kft_run(cmd, out, sizeof out);
    CHECKF(rc == 0, "exit %d: %s", rc, out);
    json_t *sm = json_loads(out, 0, NULL);
    json_t *sc = json_object_get(sm, "scale");
    json_t *ws = json_object_get(sc, "workers");
    CHECKF(json_array_size(ws) == 3 && json_integer_value(json_object_get(sm, "jobs")) == 3, "%s", out);
    int seen[3] = {0, 0, 0};
    size_t i;
    json_t *w;
    json_array_foreach(ws, i, w) {
        json_t *d = json_object_get(w, "device");
        int k = (int)json_integer_value(json_object_get(d, "index"));
        const char *m = json_string_value(json_object_get(d, "model"));
        CHECKF(k >= 0 && k < 3 && !seen[k] && !strcmp(json_string_value(json_object_get(d, "kind")), "cuda"),
               "%s", out);
        seen[k] = 1;
        CHECKF(m && !strcmp(m, k == 2 ? "Fake H100" : "Fake H200"), "GPU %d reported %s", k,
               m ? m : "nothing");
    }
    CHECKF(json_array_size(json_object_get(sc, "models")) == 2, "%s", out);
    /* each verdict names the device that timed it */
    kf_ctx *ctx = kf_ctx_new();
    kf_store *st = NULL;
    CHECKF(!kf_store_open(ctx, run, NULL, &st), "%s", kf_errmsg(ctx));
    int measured = 0;
    for (int64_t id = 1; id <= 3; id++) {
        kf_node n;
        CHECK(!kf_store_get_node(st, id, &n));
        json_t *v = n.verdict_json ? json_loads(n.verdict_json, 0, NULL) : NULL;
        json_t *d = json_object_get(v, "device");
        const char *m = json_string_value(json_object_get(d, "model"));
        int k = (int)json_integer_value(json_object_get(d, "index"));
        if (v) {
            CHECKF(m && !strcmp(m, k == 2 ? "Fake H100" : "Fake H200") && json_object_get(v, "worker"),
                   "node %lld: %s", (long long)id, n.verdict_json);
            measured++;
        }
        json_decref(v);
        kf_node_free(&n);
    }
    CHECK(measured == 3);
    kf_store_close(st);
    kf_ctx_free(ctx);
    (void)args;
    json_decref(sm);
    kf__rmtree(dir);
}

/* kforge drain RUN: the run finishes what is in flight, records it, and stops with
 * "drained" before its budget; its workers leave. */
static void t_drain(const void *arg) {
    (void)arg;
    char dir[] = "/tmp/kft-scaler-XXXXXX", run[128], out[160], args[1024], o2[4096];
    CHECK(mkdtemp(dir));
    snprintf(run, sizeof run, "%s/run", dir);
    snprintf(out, sizeof out, "%s/out.json", dir);
    snprintf(args, sizeof args,
             "run tasks/c/transpose --run %s --budget 14 --workers 2 --secret-file %s/secret %s --json", run,
             dir, quick);
    pid_t pid = start(args, out);
    int seen = 0;
    for (int i = 0; i < 3000 && !seen; i++) {
        json_t *s = scale_json(run);
        seen = json_integer_value(json_object_get(s, "verdicts")) >= 1;
        json_decref(s);
        if (!seen) nap_ms(10);
    }
    CHECK(seen);
    snprintf(args, sizeof args, "drain %s --json", run);
    int rc = cli(args, o2, sizeof o2);
    CHECKF(rc == 0 && strstr(o2, "\"draining\":true"), "drain: exit %d: %s", rc, o2);
    rc = wait_exit(pid, 120);
    CHECKF(rc == 0, "kforge run exit %d", rc);
    json_t *sm = summary(out);
    int ev = (int)json_integer_value(json_object_get(sm, "evaluations"));
    CHECKF(!strcmp(json_string_value(json_object_get(sm, "stopped")), "drained") && ev >= 1 && ev < 14, "%s",
           json_dumps(sm, 0));
    int all, fin, cr;
    node_counts(run, &all, &fin, &cr);
    CHECKF(all == ev && fin == ev, "%d nodes, %d finished, %d evaluations", all, fin, ev);
    /* no coordinator now: drain says so */
    CHECK(cli(args, o2, sizeof o2) == 2);
    json_decref(sm);
    kf__rmtree(dir);
}

/* Local workers' CPU groups (docs/scale.md "Devices"): even groups of two or more, as
 * ranges where the CPUs run on; none below two a worker; a big host's whole set fits. */
#define CHECKEQ(got, want) CHECKF(!strcmp(got, want), "got \"%s\", expected \"%s\"", got, want)
static void t_cpu_group(const void *arg) {
    (void)arg;
    cpu_set_t s;
    char out[1024];
    CPU_ZERO(&s);
    for (int c = 0; c < 8; c++) CPU_SET(c, &s);
    kf_scale_cpu_group(&s, 0, 2, out, sizeof out);
    CHECKEQ(out, "0-3");
    kf_scale_cpu_group(&s, 1, 2, out, sizeof out);
    CHECKEQ(out, "4-7");
    kf_scale_cpu_group(&s, 2, 3, out, sizeof out); /* 8 / 3: two each, two left over */
    CHECKEQ(out, "4-5");
    kf_scale_cpu_group(&s, 0, 5, out, sizeof out); /* one each: they share */
    CHECKEQ(out, "");
    CPU_ZERO(&s);
    for (int c = 0; c < 16; c += 2) CPU_SET(c, &s); /* every other CPU (one per core) */
    kf_scale_cpu_group(&s, 1, 2, out, sizeof out);
    CHECKEQ(out, "8,10,12,14");
    CPU_ZERO(&s);
    for (int c = 0; c < 384; c++) CPU_SET(c, &s);
    CPU_CLR(200, &s);
    kf_scale_cpu_group(&s, 0, 1, out, sizeof out); /* listed one by one it was 1,500 bytes */
    CHECKEQ(out, "0-199,201-383");
    kf_scale_cpu_group(&s, 0, 1, out, 6); /* no room: share rather than a cut list */
    CHECKEQ(out, "");
}

/* A Slurm cluster on loopback (tests/slurm/cluster.sh: slurmctld and three slurmd
 * "nodes"): kforge run --launcher slurm starts its workers as Slurm jobs, which connect
 * back over TCP; one is scancelled in the middle of an evaluation, which is requeued
 * once and recorded once; the run ends with its budget and its jobs are cancelled. Skips,
 * saying why, where Slurm cannot start. */
static void t_slurm(const void *arg) {
    (void)arg;
    char dir[] = "/tmp/kft-slurm-XXXXXX", cl[128], run[128], out[160], args[1400], o2[4096], cmd[1024];
    CHECK(mkdtemp(dir));
    snprintf(cl, sizeof cl, "%s/cluster", dir);
    snprintf(cmd, sizeof cmd, "%s start %s 3 %d 2>&1", kft_src("tests/slurm/cluster.sh"), cl,
             17817 + (int)(getpid() % 200) * 8);
    int rc = kft_run(cmd, o2, sizeof o2);
    if (rc == 77) {
        kf__rmtree(dir);
        o2[strcspn(o2, "\n")] = 0;
        kft_skip("%s", o2[0] ? o2 : "Slurm cannot start here");
    }
    CHECKF(rc == 0, "cluster.sh: exit %d: %s", rc, o2);
    char conf[200];
    snprintf(conf, sizeof conf, "%s/slurm.conf", cl);
    setenv("SLURM_CONF", conf, 1);
    snprintf(run, sizeof run, "%s/run", dir);
    snprintf(out, sizeof out, "%s/out.json", dir);
    snprintf(args, sizeof args,
             "run tasks/c/transpose --run %s --budget 6 --launcher slurm --workers 2 --partition cpu "
             "--secret-file %s/secret %s --json",
             run, dir, quick);
    pid_t pid = start(args, out);
    char job[64] = "";
    for (int i = 0; i < 6000 && !job[0]; i++) {
        json_t *s = scale_json(run);
        size_t k;
        json_t *w;
        json_array_foreach(json_object_get(s, "workers"), k, w) {
            const char *j = json_string_value(json_object_get(json_object_get(w, "device"), "slurm_job"));
            if (!job[0] && j && !strcmp(json_string_value(json_object_get(w, "state")), "busy") &&
                json_integer_value(json_object_get(w, "evaluations")) >= 1)
                snprintf(job, sizeof job, "%s", j);
        }
        json_decref(s);
        if (!job[0]) nap_ms(10);
    }
    if (job[0]) {
        snprintf(cmd, sizeof cmd, "scancel %s", job);
        CHECK(kft_run(cmd, NULL, 0) == 0);
    }
    rc = wait_exit(pid, 200);
    snprintf(cmd, sizeof cmd, "%s stop %s", kft_src("tests/slurm/cluster.sh"), cl);
    kft_run(cmd, NULL, 0);
    CHECKF(job[0], "no Slurm worker was seen busy");
    CHECKF(rc == 0, "kforge run exit %d", rc);
    json_t *sm = summary(out);
    json_t *sc = json_object_get(sm, "scale");
    CHECKF(json_integer_value(json_object_get(sm, "evaluations")) == 6 &&
               json_integer_value(json_object_get(sc, "requeued")) == 1 &&
               json_integer_value(json_object_get(sc, "lost")) == 0 &&
               json_array_size(json_object_get(sc, "slurm_jobs")) == 2,
           "%s", json_dumps(sm, 0));
    int all, fin, cr;
    node_counts(run, &all, &fin, &cr);
    CHECKF(all == 6 && fin == 6 && cr == 0, "%d nodes, %d finished, %d crashed (%s)", all, fin, cr, crash_note);
    json_decref(sm);
    kf__rmtree(dir);
}

/* A real worker given a candidate and a baseline of the same file name (a node timed
 * against a parent of the same name): both are written, the baseline apart, and the
 * verdict is reached. */
static void t_same_names(const void *arg) {
    (void)arg;
    fixture f;
    fixture_start(&f, 30);
    char wa[700], wo[200];
    snprintf(wa, sizeof wa, "worker --connect %s --secret-file %s --name real --wait 5", f.addr, f.secret);
    snprintf(wo, sizeof wo, "%s/w.out", f.dir);
    pid_t w = start(wa, wo);
    char *text = NULL, src[4300];
    size_t len = 0;
    snprintf(src, sizeof src, "%s", kft_src("tasks/c/saxpy/candidates/fast.c"));
    CHECK(!kf__read_file(src, 1 << 20, &text, &len));
    json_t *o =
        json_pack("{s:i, s:i, s:i, s:f}", "hidden", 1, "min_runs", 5, "max_runs", 8, "min_time_s", 0.01);
    char tdir[4300];
    snprintf(tdir, sizeof tdir, "%s", kft_src("tasks/c/saxpy"));
    kf_pool_req rq = {tdir, NULL, "fast.c", text, len, "fast.c", text, len, o, "3.1"};
    char *stored = NULL, err[1500];
    kf_status bst;
    int rc = kf_pool_bench(f.p, &rq, &stored, &bst, err, sizeof err);
    CHECKF(rc == 0 && strstr(stored, "\"verdict\":\"accepted\""), "rc %d status %d: %s", rc, bst,
           stored ? stored : err);
    free(stored);
    free(text);
    json_decref(o);
    fixture_stop(&f);
    CHECK(wait_exit(w, 20) == 0);
}

/* Each run directory has a secret of its own, which a resume (the same directory) finds
 * again. */
static void t_secret_per_run(const void *arg) {
    (void)arg;
    char dir[] = "/tmp/kft-scales-XXXXXX", d[3][200], files[3][4300];
    CHECK(mkdtemp(dir));
    for (int i = 0; i < 3; i++) {
        snprintf(d[i], sizeof d[i], "%s/run%d", dir, i == 2 ? 0 : i);
        CHECK(!kf__mkdirs(d[i]));
        kf_ctx *ctx = kf_ctx_new();
        kf_pool *p = NULL;
        kf_pool_opts o = {.status_dir = d[i], .wait_s = 1};
        CHECKF(!kf_pool_start(ctx, &o, &p), "%s", kf_errmsg(ctx));
        json_t *r = kf_pool_report(p);
        snprintf(files[i], sizeof files[i], "%s", json_string_value(json_object_get(r, "secret_file")));
        json_decref(r);
        kf_pool_stop(p);
        kf_ctx_free(ctx);
    }
    CHECKF(strcmp(files[0], files[1]) && !strcmp(files[0], files[2]), "%s %s %s", files[0], files[1],
           files[2]);
    unsigned char k0[32], k1[32];
    char err[300];
    CHECK(!kf_scale_secret(files[0], 0, k0, err, sizeof err) &&
          !kf_scale_secret(files[1], 0, k1, err, sizeof err));
    CHECK(memcmp(k0, k1, 32));
    unlink(files[0]), unlink(files[1]);
    kf__rmtree(dir);
}

/* ---- tool mode ---- */

/* A run for tool mode in dir/NAME (with workers: "--workers 2", or ""). */
static void tool_run_new(const char *dir, const char *name, const char *workers) {
    char args[1024], out[8192];
    snprintf(args, sizeof args, "run tasks/c/saxpy --budget 0 --run %s/%s %s %s", dir, name, workers, quick);
    CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
}

/* kforge submit RUN --parent 0 FILE --json: its exit status, its answer into *j. */
static int tool_submit(const char *run, const char *file, json_t **j) {
    char args[1024], out[1 << 17];
    snprintf(args, sizeof args, "submit %s --parent 0 %s --json 2>/dev/null", run, file);
    int rc = cli(args, out, sizeof out);
    *j = json_loads(out, 0, NULL);
    return rc;
}

/* saxpy's fast candidate with a line of its own (another text), and one that forgets
 * the tail (rejected: unwritten_output), in dir. */
static void tool_files(const char *dir) {
    char *fast = NULL, p[300];
    size_t len = 0;
    CHECK(!kf__read_file(kft_src("tasks/c/saxpy/candidates/fast.c"), 1 << 20, &fast, &len));
    for (int i = 0; i < 2; i++) {
        snprintf(p, sizeof p, "%s/fast%d.c", dir, i);
        FILE *f = fopen(p, "w");
        CHECK(f && fprintf(f, "%s\n/* copy %d */\n", fast, i) > 0 && !fclose(f));
    }
    free(fast);
    snprintf(p, sizeof p, "%s/bad.c", dir);
    FILE *f = fopen(p, "w");
    CHECK(f);
    fputs("#include <stdint.h>\nvoid saxpy(const float *x, const float *y, float *z, int64_t n, float a)\n"
          "{\n    for (int64_t i = 0; i + 8 <= n; i += 8)\n"
          "        for (int k = 0; k < 8; k++) z[i + k] = a * x[i + k] + y[i + k];\n}\n",
          f);
    CHECK(!fclose(f));
}

static int passed_state(const char *s) {
    return s && (!strcmp(s, "kept") || !strcmp(s, "reverted") || !strcmp(s, "measured"));
}

/* A tool-mode submit on a run created with --workers is evaluated by a worker, and its
 * verdict is a local submit's: the same rejection and reason for a wrong file, a pass
 * for a right one; the answer names the worker, and the pool's counters say one
 * evaluation went out per kf_bench call. */
static void t_tool_submit(const void *arg) {
    (void)arg;
    char dir[] = "/tmp/kft-scalet-XXXXXX", lr[200], wr[200], f[3][200];
    CHECK(mkdtemp(dir));
    tool_run_new(dir, "local", "");
    tool_run_new(dir, "workers", "--workers 2");
    tool_files(dir);
    snprintf(lr, sizeof lr, "%s/local", dir);
    snprintf(wr, sizeof wr, "%s/workers", dir);
    snprintf(f[0], sizeof f[0], "%s/bad.c", dir);
    snprintf(f[1], sizeof f[1], "%s/fast0.c", dir);
    for (int k = 0; k < 2; k++) {
        json_t *a, *b;
        int ra = tool_submit(lr, f[k], &a), rb = tool_submit(wr, f[k], &b);
        const char *sa = json_string_value(json_object_get(a, "state"));
        const char *sb = json_string_value(json_object_get(b, "state"));
        CHECKF(ra == rb && ra == (k ? 0 : 1), "%s: exit %d here, %d on a worker", f[k], ra, rb);
        if (!k) {
            CHECKF(sa && sb && !strcmp(sa, "rejected") && !strcmp(sb, "rejected"), "%s, %s", sa, sb);
            const char *ja = json_string_value(json_object_get(a, "reasons"));
            const char *jb = json_string_value(json_object_get(b, "reasons"));
            CHECKF(ja && jb && !strcmp(ja, jb) && strstr(ja, "unwritten_output"), "reasons %s, %s", ja, jb);
        } else {
            CHECKF(passed_state(sa) && passed_state(sb), "%s, %s", sa, sb);
        }
        const char *w = json_string_value(json_object_get(b, "worker"));
        json_t *sc = json_object_get(b, "scale");
        CHECKF(w && !strncmp(w, "local-", 6), "worker %s", w ? w : "(none)");
        CHECKF(json_integer_value(json_object_get(sc, "verdicts")) >= 1 &&
                   json_integer_value(json_object_get(sc, "verdicts")) ==
                       json_integer_value(json_object_get(sc, "dispatched")) &&
                   json_integer_value(json_object_get(sc, "lost")) == 0,
               "scale %s", sc ? json_dumps(sc, 0) : "(none)");
        CHECK(!json_object_get(a, "worker") && !json_object_get(a, "scale"));
        json_decref(a);
        json_decref(b);
    }
    int all, fin, cr;
    node_counts(wr, &all, &fin, &cr);
    CHECKF(all == 2 && fin == 2 && cr == 0, "%d nodes, %d finished, %d crashed (%s)", all, fin, cr, crash_note);
    kf__rmtree(dir);
}

/* A worker SIGKILLed in the middle of a submit's evaluation: the request is requeued
 * once on the other worker, and the submit gets one verdict, recorded once. */
static void t_tool_killed(const void *arg) {
    (void)arg;
    char dir[] = "/tmp/kft-scaletk-XXXXXX", run[200], out[200], args[1024], f[200];
    CHECK(mkdtemp(dir));
    tool_run_new(dir, "run", "--workers 2");
    tool_files(dir);
    snprintf(run, sizeof run, "%s/run", dir);
    snprintf(out, sizeof out, "%s/out.json", dir);
    snprintf(f, sizeof f, "%s/fast0.c", dir);
    snprintf(args, sizeof args, "submit %s --parent 0 %s --json", run, f);
    pid_t pid = start(args, out);
    int killed = 0;
    for (int i = 0; i < 3000 && !killed; i++) {
        json_t *s = scale_json(run);
        size_t k;
        json_t *w;
        json_array_foreach(json_object_get(s, "workers"), k, w) {
            if (!killed && !strcmp(json_string_value(json_object_get(w, "state")), "busy")) {
                kill((pid_t)json_integer_value(json_object_get(w, "pid")), SIGKILL);
                killed = 1;
            }
        }
        json_decref(s);
        if (!killed) nap_ms(10);
    }
    CHECKF(killed, "no worker was seen busy");
    int rc = wait_exit(pid, 150);
    json_t *j = summary(out);
    const char *st = json_string_value(json_object_get(j, "state"));
    json_t *sc = json_object_get(j, "scale");
    CHECKF(rc == 0 && passed_state(st), "exit %d, state %s", rc, st ? st : "(none)");
    CHECKF(json_integer_value(json_object_get(sc, "requeued")) == 1 &&
               json_integer_value(json_object_get(sc, "lost")) == 0,
           "scale: %s", sc ? json_dumps(sc, 0) : "(none)");
    int all, fin, cr;
    node_counts(run, &all, &fin, &cr);
    CHECKF(all == 1 && fin == 1 && cr == 0, "%d nodes, %d finished, %d crashed (%s)", all, fin, cr, crash_note);
    json_decref(j);
    kf__rmtree(dir);
}

/* Two agents submit at once to a run with two workers: each submit gets its own
 * verdict, evaluated on a worker, and each node is recorded once. */
static void t_tool_concurrent(const void *arg) {
    (void)arg;
    char dir[] = "/tmp/kft-scaletc-XXXXXX", run[200], out[2][200], args[1024];
    CHECK(mkdtemp(dir));
    tool_run_new(dir, "run", "--workers 2");
    tool_files(dir);
    snprintf(run, sizeof run, "%s/run", dir);
    pid_t pid[2];
    for (int i = 0; i < 2; i++) {
        snprintf(out[i], sizeof out[i], "%s/out%d.json", dir, i);
        snprintf(args, sizeof args, "submit %s --parent 0 %s/fast%d.c --json", run, dir, i);
        pid[i] = start(args, out[i]);
    }
    int64_t ids[2] = {0, 0};
    for (int i = 0; i < 2; i++) {
        int rc = wait_exit(pid[i], 200);
        json_t *j = summary(out[i]);
        const char *st = json_string_value(json_object_get(j, "state"));
        CHECKF(rc == 0 && passed_state(st), "submit %d: exit %d, state %s", i, rc, st ? st : "(none)");
        CHECKF(json_string_value(json_object_get(j, "worker")), "submit %d: no worker", i);
        ids[i] = json_integer_value(json_object_get(j, "id"));
        json_decref(j);
    }
    CHECKF(ids[0] > 0 && ids[1] > 0 && ids[0] != ids[1], "ids %lld %lld", (long long)ids[0],
           (long long)ids[1]);
    int all, fin, cr;
    node_counts(run, &all, &fin, &cr);
    CHECKF(all == 2 && fin == 2 && cr == 0, "%d nodes, %d finished, %d crashed (%s)", all, fin, cr, crash_note);
    kf__rmtree(dir);
}

/* ---- concurrent tool-mode submits (docs/run.md "One writer at a time") ---- */

typedef struct {
    double created[8], finished[8];
    int n, unfinished;
} spans;

static int collect_span(void *arg, const kf_node *n) {
    spans *sp = arg;
    if (n->finished <= 0) sp->unfinished++;
    else if (sp->n < 8) sp->created[sp->n] = n->created, sp->finished[sp->n++] = n->finished;
    return 0;
}

/* The run's finished nodes' spans (recorded, then finished: the evaluation between). */
static void run_spans(const char *run, spans *sp) {
    memset(sp, 0, sizeof *sp);
    kf_ctx *ctx = kf_ctx_new();
    kf_store *st = NULL;
    CHECKF(!kf_store_open(ctx, run, NULL, &st), "%s", kf_errmsg(ctx));
    CHECK(!kf_store_each_node(st, collect_span, sp));
    kf_store_close(st);
    kf_ctx_free(ctx);
}

/* The most spans in progress at one instant: 1 when the evaluations took turns. */
static int max_overlap(const spans *sp) {
    int best = 0;
    for (int i = 0; i < sp->n; i++) {
        int k = 0; /* the spans in progress just after span i began */
        for (int j = 0; j < sp->n; j++)
            k += sp->created[j] <= sp->created[i] && sp->finished[j] > sp->created[i];
        if (k > best) best = k;
    }
    return best;
}

static int integrity_ok(const char *run) {
    char args[600], out[1 << 17];
    snprintf(args, sizeof args, "tree %s --json", run);
    CHECK(cli(args, out, sizeof out) == 0);
    json_t *t = json_loads(out, 0, NULL), *ig = json_object_get(t, "integrity");
    const char *seals = json_string_value(json_object_get(ig, "seals"));
    int ok = seals && !strcmp(seals, "sealed") && json_array_size(json_object_get(ig, "tampered")) == 0;
    if (!ok) fprintf(stderr, "integrity: %s\n", ig ? json_dumps(ig, 0) : "(none)");
    json_decref(t);
    return ok;
}

/* saxpy's fast candidate as n different texts, dir/fastK.c */
static void fast_files(const char *dir, int n) {
    char *fast = NULL, p[300];
    size_t len = 0;
    CHECK(!kf__read_file(kft_src("tasks/c/saxpy/candidates/fast.c"), 1 << 20, &fast, &len));
    for (int i = 0; i < n; i++) {
        snprintf(p, sizeof p, "%s/fast%d.c", dir, i);
        FILE *f = fopen(p, "w");
        CHECK(f && fprintf(f, "%s\n/* copy %d */\n", fast, i) > 0 && !fclose(f));
    }
    free(fast);
}

/* n submits started together on a run (workers: its kforge run options): each exits 0
 * with a pass, every node is recorded once and finished, the seals hold, and the
 * evaluations ran at the same time: the spans the run records overlap (at least `want`
 * in progress at once). Before, each submit held the run's lock for its whole
 * evaluation, so one span ended before the next began. */
static void parallel_submits(const char *name, const char *workers, int n, int want) {
    char dir[] = "/tmp/kft-scalepar-XXXXXX", run[200], out[8][200], args[1024];
    CHECK(mkdtemp(dir));
    tool_run_new(dir, "run", workers);
    fast_files(dir, n);
    snprintf(run, sizeof run, "%s/run", dir);
    pid_t pid[8];
    for (int i = 0; i < n; i++) {
        snprintf(out[i], sizeof out[i], "%s/out%d.json", dir, i);
        snprintf(args, sizeof args, "submit %s --parent 0 %s/fast%d.c --json", run, dir, i);
        pid[i] = start(args, out[i]);
    }
    int64_t seen[8];
    for (int i = 0; i < n; i++) {
        int rc = wait_exit(pid[i], 280);
        json_t *j = summary(out[i]);
        const char *st = json_string_value(json_object_get(j, "state"));
        CHECKF(rc == 0 && passed_state(st), "%s: submit %d: exit %d, state %s", name, i, rc,
               st ? st : "(none)");
        seen[i] = json_integer_value(json_object_get(j, "id"));
        for (int k = 0; k < i; k++)
            CHECKF(seen[k] != seen[i], "%s: two submits answered node %lld", name, (long long)seen[i]);
        json_decref(j);
    }
    spans sp;
    run_spans(run, &sp);
    CHECKF(sp.n == n && sp.unfinished == 0, "%s: %d nodes finished, %d not", name, sp.n, sp.unfinished);
    int k = max_overlap(&sp);
    CHECKF(k >= want, "%s: at most %d of %d evaluations in progress at once", name, k, n);
    CHECK(integrity_ok(run));
    kf__rmtree(dir);
}

static void t_tool_parallel(const void *arg) {
    (void)arg;
    parallel_submits("two, here", "", 2, 2);
    parallel_submits("four, here", "", 4, 3);
    parallel_submits("two, on workers", "--workers 2", 2, 2);
}

/* One of two concurrent submits SIGKILLed mid-evaluation: the other's verdict is recorded
 * whole; while they evaluate, kforge run --resume is refused (exit 4); the killed one's
 * node is left unfinished, and the same text submitted again is evaluated (a node no one
 * evaluates is not taken for one in flight); a text submitted while another submit of it
 * is evaluating is pruned, naming that node; the seals hold. */
static void t_tool_parallel_kill(const void *arg) {
    (void)arg;
    char dir[] = "/tmp/kft-scalepk-XXXXXX", run[200], out[3][200], args[1024], o[1 << 16];
    CHECK(mkdtemp(dir));
    tool_run_new(dir, "run", "");
    fast_files(dir, 2);
    /* submit 0's kernel is slow (a spin in every call), so it is still evaluating when
     * it is killed */
    char slow[300];
    snprintf(slow, sizeof slow, "%s/fast0.c", dir);
    FILE *f = fopen(slow, "w");
    CHECK(f);
    fputs("#include <stdint.h>\nvoid saxpy(const float *x, const float *y, float *z, int64_t n, float a)\n"
          "{\n    for (volatile long k = 0; k < 200000000; k++) {\n    }\n"
          "    for (int64_t i = 0; i < n; i++) z[i] = a * x[i] + y[i];\n}\n",
          f);
    CHECK(!fclose(f));
    snprintf(run, sizeof run, "%s/run", dir);
    pid_t pid[2];
    for (int i = 0; i < 2; i++) {
        snprintf(out[i], sizeof out[i], "%s/out%d.json", dir, i);
        snprintf(args, sizeof args, "submit %s --parent 0 %s/fast%d.c --json", run, dir, i);
        pid[i] = start(args, out[i]);
    }
    spans sp;
    for (int i = 0; i < 3000; i++) {
        run_spans(run, &sp);
        if (sp.unfinished + sp.n == 2) break;
        nap_ms(20);
    }
    CHECKF(sp.unfinished + sp.n == 2, "%d nodes recorded", sp.unfinished + sp.n);
    /* a run's writer waits for no evaluation */
    snprintf(args, sizeof args, "run --resume %s --budget 5 2>&1", run);
    int rc = cli(args, o, sizeof o);
    CHECKF(rc == 4 && strstr(o, "still evaluating"), "resume while submits evaluate: exit %d: %s", rc, o);
    /* the same text as submit 0, which is evaluating: pruned, no node */
    json_t *j = NULL;
    snprintf(args, sizeof args, "%s/fast0.c", dir);
    rc = tool_submit(run, args, &j);
    const char *st = json_string_value(json_object_get(j, "state"));
    const char *note = json_string_value(json_object_get(j, "note"));
    CHECKF(st && !strcmp(st, "pruned") && note && strstr(note, "another submit is evaluating"),
           "exit %d, %s, %s", rc, st ? st : "(none)", note ? note : "");
    json_decref(j);
    kill(pid[0], SIGKILL);
    int r0 = wait_exit(pid[0], 60), r1 = wait_exit(pid[1], 200);
    CHECKF(r0 == 128 + SIGKILL, "submit 0 ended %d", r0);
    j = summary(out[1]);
    st = json_string_value(json_object_get(j, "state"));
    CHECKF(r1 == 0 && passed_state(st), "submit 1: exit %d, state %s", r1, st ? st : "(none)");
    json_decref(j);
    run_spans(run, &sp);
    CHECKF(sp.n == 1 && sp.unfinished == 1, "%d finished, %d unfinished", sp.n, sp.unfinished);
    CHECK(integrity_ok(run));
    /* the killed submit's text again: no one evaluates its node, so it is evaluated */
    snprintf(args, sizeof args, "%s/fast0.c", dir);
    rc = tool_submit(run, args, &j);
    st = json_string_value(json_object_get(j, "state"));
    CHECKF(rc == 0 && passed_state(st), "resubmitted: exit %d, state %s", rc, st ? st : "(none)");
    json_decref(j);
    run_spans(run, &sp);
    CHECKF(sp.n == 2 && sp.unfinished == 1, "%d finished, %d unfinished", sp.n, sp.unfinished);
    CHECK(integrity_ok(run));
    kf__rmtree(dir);
}

/* Concurrent submits' timings take the run's timing lock, RUN/timing.lock (a lock per
 * CPU): while this test holds the lock of every CPU, a submit is checked but not timed,
 * and it finishes once the lock is let go. */
static void t_tool_timing_lock(const void *arg) {
    (void)arg;
    char dir[] = "/tmp/kft-scaletl-XXXXXX", run[200], out[200], args[1024], p[300];
    CHECK(mkdtemp(dir));
    tool_run_new(dir, "run", "");
    fast_files(dir, 1);
    snprintf(run, sizeof run, "%s/run", dir);
    snprintf(p, sizeof p, "%s/timing.lock", run);
    int fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = CPU_SETSIZE};
    CHECK(fd >= 0 && !fcntl(fd, F_OFD_SETLK, &fl));
    snprintf(out, sizeof out, "%s/out.json", dir);
    snprintf(args, sizeof args, "submit %s --parent 0 %s/fast0.c --json", run, dir);
    pid_t pid = start(args, out);
    spans sp;
    for (int i = 0; i < 400; i++) { /* 8 s: a check takes well under that; a timing waits */
        int st;
        CHECKF(waitpid(pid, &st, WNOHANG) == 0, "the submit ended while the timing lock was held");
        nap_ms(20);
    }
    run_spans(run, &sp);
    CHECKF(sp.n == 0 && sp.unfinished == 1, "%d finished, %d unfinished", sp.n, sp.unfinished);
    close(fd);
    int rc = wait_exit(pid, 120);
    json_t *j = summary(out);
    const char *st = json_string_value(json_object_get(j, "state"));
    CHECKF(rc == 0 && passed_state(st), "exit %d, state %s", rc, st ? st : "(none)");
    json_decref(j);
    kf__rmtree(dir);
}

void kft_register_scale(void) {
    kft_add("scale/tool_submit", t_tool_submit, NULL, 240);
    kft_add("scale/tool_killed", t_tool_killed, NULL, 240);
    kft_add("scale/tool_concurrent", t_tool_concurrent, NULL, 300);
    kft_add("scale/tool_parallel", t_tool_parallel, NULL, 600);
    kft_add("scale/tool_parallel_kill", t_tool_parallel_kill, NULL, 400);
    kft_add("scale/tool_timing_lock", t_tool_timing_lock, NULL, 200);
    kft_add("scale/secret_per_run", t_secret_per_run, NULL, 30);
    kft_add("scale/same_names", t_same_names, NULL, 120);
    kft_add("scale/slurm", t_slurm, NULL, 300);
    kft_add("scale/drain", t_drain, NULL, 240);
    kft_add("scale/frames", t_frames, NULL, 30);
    kft_add("scale/duplicate_verdict", t_duplicate, NULL, 60);
    kft_add("scale/forged_verdict", t_forged, NULL, 60);
    kft_add("scale/lost_twice", t_lost_twice, NULL, 60);
    kft_add("scale/no_worker", t_no_worker, NULL, 30);
    kft_add("scale/stop_many", t_stop_many, NULL, 60);
    kft_add("scale/worker_killed", t_worker_killed, NULL, 240);
    kft_add("scale/cpu_group", t_cpu_group, NULL, 10);
    kft_add("scale/coordinator_resume", t_coordinator_resume, NULL, 240);
    kft_add("scale/devices", t_devices, NULL, 240);
}
