/*
 * scale_bench.c - the coordinator's cost per evaluation with many workers (docs/scale.md,
 * BENCHMARKS.md "Scale-out"): `kforge run TASK --listen unix:... --jobs W` with W
 * simulated workers, threads of this program that join over the real protocol and answer
 * every request at once with a recorded verdict document (a replay: the same verdict for
 * every candidate and every Critic re-timing). What is left is the coordinator: the
 * search, the proposer, the store's transactions, the Critic's decisions and the pool.
 *
 *   kf-scale-bench KFORGE TASK VERDICT.json WORKERS BUDGET
 *   kf-scale-bench --pool VERDICT.json WORKERS REQUESTS   (the pool alone, in-process)
 *
 * Prints one JSON object: evaluations, requests served, wall seconds from the run's
 * start and from its first verdict, and milliseconds per evaluation: wall, and the
 * coordinator process's CPU time (user + system, all its threads), which a loaded
 * machine disturbs less.
 */
#define _GNU_SOURCE
#include "scale/scale.h"

#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char addr[300], secret[300];
static const char *doc;
static long served;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *worker(void *arg) {
    int i = (int)(long)arg;
    char err[512], name[32];
    unsigned char key[32];
    snprintf(name, sizeof name, "sim-%d", i);
    kf_scale_conn c;
    for (int k = 0; k < 600; k++) {
        memset(&c, 0, sizeof c);
        if (kf_scale_secret(secret, 0, key, err, sizeof err) == 0 &&
            (c.fd = kf_scale_connect(addr, err, sizeof err)) >= 0)
            break;
        c.fd = -1;
        usleep(50000);
    }
    if (c.fd < 0) return NULL;
    memcpy(c.key, key, 32);
    json_t *ex = json_pack("{s:s, s:i, s:{s:s, s:s}}", "name", name, "pid", (int)getpid(), "device", "kind",
                           "cpu", "model", "simulated");
    if (kf_scale_join(&c, "worker", ex, err, sizeof err)) {
        fprintf(stderr, "%s: %s\n", name, err);
        json_decref(ex);
        return NULL;
    }
    json_decref(ex);
    for (;;) {
        int why = 0;
        json_t *m = kf_scale_recv(&c, &why);
        const char *t = json_string_value(json_object_get(m, "t"));
        if (!m || !t || strcmp(t, "eval")) {
            json_decref(m);
            break;
        }
        json_t *v = json_pack("{s:s, s:O, s:O, s:i, s:s}", "t", "verdict", "id", json_object_get(m, "id"),
                              "ticket", json_object_get(m, "ticket"), "status", 0, "result", doc);
        kf_scale_send(&c, v);
        json_decref(v);
        json_decref(m);
        pthread_mutex_lock(&mu);
        served++;
        pthread_mutex_unlock(&mu);
    }
    close(c.fd);
    return NULL;
}

/* --pool: the pool alone, in this process: W callers of kf_pool_bench at once against W
 * simulated workers, N requests in all. */
static kf_pool *pool;
static long left;
static void *caller(void *arg) {
    (void)arg;
    json_t *o = json_object();
    for (;;) {
        pthread_mutex_lock(&mu);
        long k = left--;
        pthread_mutex_unlock(&mu);
        if (k <= 0) break;
        char id[32], *st = NULL, err[512];
        snprintf(id, sizeof id, "%ld.1", k);
        kf_status bs;
        kf_pool_req rq = {"tasks/c/linear", NULL, "c.c", "int x;", 6, NULL, NULL, 0, o, id};
        if (kf_pool_bench(pool, &rq, &st, &bs, err, sizeof err)) fprintf(stderr, "%s\n", err);
        free(st);
    }
    json_decref(o);
    return NULL;
}

static int pool_only(int nw, long n) {
    char dir[] = "/tmp/kf-scale-bench-XXXXXX";
    if (!mkdtemp(dir)) return 2;
    snprintf(addr, sizeof addr, "unix:%s/s", dir);
    snprintf(secret, sizeof secret, "%s/secret", dir);
    kf_ctx *ctx = kf_ctx_new();
    kf_pool_opts o = {.listen = addr, .secret_file = secret, .status_dir = dir};
    if (kf_pool_start(ctx, &o, &pool)) {
        fprintf(stderr, "%s\n", kf_errmsg(ctx));
        return 2;
    }
    pthread_t th[256], cl[256];
    for (int i = 0; i < nw; i++) pthread_create(&th[i], NULL, worker, (void *)(long)i);
    for (;;) { /* every worker joined */
        json_t *r = kf_pool_report(pool);
        size_t j = json_array_size(json_object_get(r, "workers"));
        json_decref(r);
        if ((int)j >= nw) break;
        usleep(10000);
    }
    left = n;
    double t0 = now();
    for (int i = 0; i < nw; i++) pthread_create(&cl[i], NULL, caller, NULL);
    for (int i = 0; i < nw; i++) pthread_join(cl[i], NULL);
    double wall = now() - t0;
    kf_pool_stop(pool);
    for (int i = 0; i < nw; i++) pthread_join(th[i], NULL);
    printf("{\"mode\": \"pool\", \"workers\": %d, \"requests\": %ld, \"wall_s\": %.3f, \"ms_per_request\": "
           "%.4f}\n",
           nw, n, wall, wall * 1e3 / (double)n);
    kf_ctx_free(ctx);
    kf__rmtree(dir);
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 5 && !strcmp(argv[1], "--pool")) {
        size_t len = 0;
        char *text = NULL;
        if (kf__read_file(argv[2], 1 << 24, &text, &len)) return 2;
        doc = text;
        int rc = pool_only(atoi(argv[3]), atol(argv[4]));
        free(text);
        return rc;
    }
    if (argc != 6) {
        fprintf(stderr, "usage: kf-scale-bench KFORGE TASK VERDICT.json WORKERS BUDGET\n");
        return 2;
    }
    size_t len = 0;
    char *text = NULL;
    if (kf__read_file(argv[3], 1 << 24, &text, &len)) {
        fprintf(stderr, "%s: unreadable\n", argv[3]);
        return 2;
    }
    doc = text;
    int nw = atoi(argv[4]);
    char dir[] = "/tmp/kf-scale-bench-XXXXXX", run[200], out[200];
    if (!mkdtemp(dir)) return 2;
    snprintf(addr, sizeof addr, "unix:%s/s", dir);
    snprintf(secret, sizeof secret, "%s/secret", dir);
    snprintf(run, sizeof run, "%s/run", dir);
    snprintf(out, sizeof out, "%s/out.json", dir);
    char jobs[16];
    snprintf(jobs, sizeof jobs, "%d", nw > 64 ? 64 : nw);
    double t0 = now();
    pid_t pid = fork();
    if (!pid) {
        if (!freopen(out, "w", stdout) ||
            !freopen(getenv("KF_SCALE_BENCH_ERR") ? getenv("KF_SCALE_BENCH_ERR") : "/dev/null", "w", stderr))
            _exit(127);
        execl(argv[1], "kforge", "run", argv[2], "--run", run, "--listen", addr, "--secret-file", secret,
              "--jobs", jobs, "--budget", argv[5], "--json", (char *)NULL);
        _exit(127);
    }
    pthread_t th[256];
    for (int i = 0; i < nw && i < 256; i++) pthread_create(&th[i], NULL, worker, (void *)(long)i);
    int st = 0;
    struct rusage ru;
    memset(&ru, 0, sizeof ru);
    wait4(pid, &st, 0, &ru);
    double cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
                 (double)ru.ru_stime.tv_usec / 1e6;
    double wall = now() - t0;
    for (int i = 0; i < nw && i < 256; i++) pthread_join(th[i], NULL);
    json_t *s = json_load_file(out, 0, NULL);
    long ev = (long)json_integer_value(json_object_get(s, "evaluations"));
    json_t *sc = json_object_get(s, "scale");
    double first = json_number_value(json_object_get(sc, "first_verdict_s"));
    printf("{\"exit\": %d, \"workers\": %d, \"evaluations\": %ld, \"requests\": %ld, \"wall_s\": %.3f, "
           "\"ms_per_evaluation\": %.3f, \"cpu_ms_per_evaluation\": %.3f, \"first_verdict_s\": %.3f, "
           "\"loop_overhead_ms_per_evaluation\": %.3f}\n",
           WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st), nw, ev, served, wall,
           ev ? wall * 1e3 / (double)ev : 0, ev ? cpu * 1e3 / (double)ev : 0, first,
           json_number_value(json_object_get(s, "overhead_ms_per_evaluation")));
    json_decref(s);
    kf__rmtree(dir);
    free(text);
    return 0;
}
