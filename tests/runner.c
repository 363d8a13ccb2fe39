/*
 * runner.c - run every registered test in its own forked child, up to -j at a time,
 * each under a wall-clock timeout; print one line per test and the summary line.
 * Usage: kf-tests [-j N] [-v] [FILTER...]   (FILTER: substrings of test names)
 */
#define _GNU_SOURCE
#include "kft.h"
#include "backend/cuda/cuda_api.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SKIP_CODE 77
#define MAX_TESTS 1024

typedef struct {
    char *name;
    kft_fn fn;
    const void *arg;
    double timeout;
    pid_t pid;
    double start;
    int outfd;
    char *out;
    size_t outlen;
} test;

static test tests[MAX_TESTS];
static int ntests;

void kft_add(const char *name, kft_fn fn, const void *arg, double timeout_s) {
    if (ntests == MAX_TESTS) {
        fprintf(stderr, "too many tests\n");
        exit(2);
    }
    tests[ntests].name = strdup(name);
    tests[ntests].fn = fn;
    tests[ntests].arg = arg;
    tests[ntests].timeout = timeout_s > 0 ? timeout_s : 120;
    ntests++;
}

void kft_fail_at(const char *file, int line, const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "    FAIL at %s:%d: ", file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
    fflush(stderr);
    _exit(1);
}

void kft_skip(const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "    skipped: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
    fflush(stderr);
    _exit(SKIP_CODE);
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int matches(const char *name, char **filters, int nf) {
    if (!nf) return 1;
    for (int i = 0; i < nf; i++)
        if (strstr(name, filters[i])) return 1;
    return 0;
}

static void start(test *t) {
    int p[2];
    if (pipe(p)) {
        perror("pipe");
        exit(2);
    }
    fflush(NULL);
    t->start = now();
    t->pid = fork();
    if (t->pid == 0) {
        close(p[0]);
        dup2(p[1], 1);
        dup2(p[1], 2);
        close(p[1]);
        setpgid(0, 0);
        t->fn(t->arg);
        fflush(NULL);
        exit(0); /* not _exit: LeakSanitizer checks at exit in the ASan build */
    }
    close(p[1]);
    t->outfd = p[0];
}

static void slurp(test *t) {
    char buf[4096];
    ssize_t n;
    while ((n = read(t->outfd, buf, sizeof buf)) > 0) {
        if (t->outlen < (256u << 10)) {
            t->out = realloc(t->out, t->outlen + (size_t)n + 1);
            memcpy(t->out + t->outlen, buf, (size_t)n);
            t->outlen += (size_t)n;
            t->out[t->outlen] = 0;
        }
    }
}

int main(int argc, char **argv) {
    int jobs = 2, verbose = 0, nf = 0;
    char *filters[64];
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-j") && i + 1 < argc) jobs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-v")) verbose = 1;
        else if (nf < 64) filters[nf++] = argv[i];
    }
    if (jobs < 1) jobs = 1;
    signal(SIGPIPE, SIG_IGN);
    /* runs' seal keys (docs/run.md "Seals") go to a directory of this test run's, not
     * the user's data directory; removed at the end */
    char keys[64] = "";
    if (!getenv("KFORGE_KEYS")) {
        snprintf(keys, sizeof keys, "/tmp/kft-keys-XXXXXX");
        if (mkdtemp(keys)) setenv("KFORGE_KEYS", keys, 1);
        else keys[0] = 0;
    }
    kft_register_unit();
    kft_register_task();
    kft_register_check();
    kft_register_corpus();
    kft_register_cli();
    kft_register_cuda();
    kft_register_cupti();
    kft_register_cupti_abi();
    kft_register_sanitize();
    kft_register_agent();
    kft_register_store();
    kft_register_search();
    kft_register_loop();
    kft_register_run_agents();
    kft_register_export();
    kft_register_lessons();
    kft_register_prior();
    kft_register_critic();
    kft_register_pack();
    kft_register_diagnose();
    kft_register_timing();
    kft_register_fault();
    int passed = 0, failed = 0, skipped = 0, next = 0, running = 0;
    test *run[64] = {0};
    for (;;) {
        while (running < jobs && next < ntests) {
            test *t = &tests[next++];
            if (!matches(t->name, filters, nf)) continue;
            start(t);
            for (int k = 0; k < 64; k++)
                if (!run[k]) {
                    run[k] = t;
                    break;
                }
            running++;
        }
        if (!running) break;
        usleep(2000);
        for (int k = 0; k < 64; k++) {
            test *t = run[k];
            if (!t) continue;
            int status;
            pid_t g = waitpid(t->pid, &status, WNOHANG);
            int timed_out = 0;
            if (g == 0 && now() - t->start > t->timeout) {
                kill(-t->pid, SIGKILL);
                kill(t->pid, SIGKILL);
                waitpid(t->pid, &status, 0);
                timed_out = 1;
                g = t->pid;
            }
            if (g != t->pid) continue;
            slurp(t);
            close(t->outfd);
            double secs = now() - t->start;
            const char *word;
            if (timed_out) word = "FAIL", failed++;
            else if (WIFEXITED(status) && WEXITSTATUS(status) == 0) word = "pass", passed++;
            else if (WIFEXITED(status) && WEXITSTATUS(status) == SKIP_CODE) word = "skip", skipped++;
            else word = "FAIL", failed++;
            printf("%s %-58s %6.2f s%s\n", word, t->name, secs,
                   timed_out ? "  (timed out)" : "");
            if (WIFSIGNALED(status) && !timed_out)
                printf("    killed by signal %d\n", WTERMSIG(status));
            if ((verbose || word[0] != 'p') && t->out) fputs(t->out, stdout);
            fflush(stdout);
            run[k] = NULL;
            running--;
        }
    }
    printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
    if (keys[0]) kf__rmtree(keys);
    return failed ? 1 : 0;
}

/* ---- shared helpers --------------------------------------------------------- */

static const char *join(const char *base, const char *rel) {
    static char ring[8][4096];
    static int k;
    char *b = ring[k++ & 7];
    snprintf(b, 4096, "%s/%s", base, rel);
    return b;
}
/* KFT_SOURCE_DIR / KFT_BINARY_DIR override the build-time paths (a copy of the tree
 * run on another machine). */
static const char *dir_of(const char *env, const char *dflt) {
    const char *e = getenv(env);
    return e && *e ? e : dflt;
}
const char *kft_src(const char *rel) { return join(dir_of("KFT_SOURCE_DIR", KF_SOURCE_DIR), rel); }
const char *kft_bin(const char *rel) { return join(dir_of("KFT_BINARY_DIR", KF_BINARY_DIR), rel); }

const char *const kft_cuda_tasks[] = {"softmax", "rmsnorm", "sum", "transpose", "sgemm",
                                      "bgemm", "gdn_decode", NULL};

int kft_have_gpu(char *why, size_t n) {
    const kf_cu_api *cu = kf_cu_load(why, n);
    if (!cu) return 0;
    int r = cu->Init(0), count = 0;
    if (r) {
        snprintf(why, n, "cuInit: %s", kf_cu_errname(cu, r));
        return 0;
    }
    if ((r = cu->DeviceGetCount(&count)) || count < 1) {
        snprintf(why, n, "no CUDA device (%s)", r ? kf_cu_errname(cu, r) : "count 0");
        return 0;
    }
    return 1;
}

kf_task *kft_task(kf_ctx *ctx, const char *rel) {
    kf_task *t = NULL;
    kf_status st = kf_task_load(ctx, kft_src(rel), &t);
    CHECKF(st == KF_OK, "loading %s: %s", rel, kf_errmsg(ctx));
    return t;
}

kf_result *kft_check(kf_ctx *ctx, kf_task *t, const char *cand, const char **params, int np) {
    kf_opts o;
    kf_opts_init(&o);
    o.params = params;
    o.nparams = np;
    kf_result *r = NULL;
    kf_status st = kf_check(ctx, t, cand, &o, &r);
    CHECKF(st == KF_OK, "check %s: %s: %s", cand, kf_strstatus(st), kf_errmsg(ctx));
    return r;
}

const char *kft_reasons(kf_result *r) {
    static char buf[1024];
    size_t off = 0;
    buf[0] = 0;
    for (int i = 0; i < kf_result_nreasons(r) && off < sizeof buf; i++)
        off += (size_t)snprintf(buf + off, sizeof buf - off, "%s%s", i ? "," : "",
                                kf_reason_name(kf_result_reason(r, i)));
    return buf;
}

int kft_run(const char *cmd, char *out, size_t n) {
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    size_t got = 0;
    if (out && n) {
        got = fread(out, 1, n - 1, p);
        out[got] = 0;
    }
    char junk[4096];
    while (fread(junk, 1, sizeof junk, p) > 0) {
    }
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}
