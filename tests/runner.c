/*
 * runner.c - kf-tests, the test runner. The suites of test-list.h register their tests
 * into one table; the run selects from it (filters, the fast tier), starts every
 * selected test in its own forked child and process group, up to -j at a time, each
 * under its wall-clock timeout, prints one line per test and ends with the summary line
 * "N passed, N failed, N skipped" that scripts/test.sh and CI read. `--in-process NAME`
 * runs one test in this process instead (no fork, no timeout), for a debugger.
 *
 * A test passes by returning, fails through kft_fail_at (exit 1), skips through kft_skip
 * (exit 77); anything else (a signal, another exit code, its timeout) is a failure. A
 * filter that selects nothing is an error, not an empty success. `kf-tests --help` has
 * the options and exit codes, tests/README.md the habits.
 */
#define _GNU_SOURCE
#include "kft.h"
#include "backend/cuda/cuda_api.h"
#include "check/check.h"

#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <jansson.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SKIP_CODE 77
#define USAGE_CODE 2
#define MAX_JOBS 64
/* -j's default is the CPU count up to this: a test keeps a CPU or two busy itself
 * (workers, compilers), and the timing tests measure under the load the others make */
#define DEFAULT_JOBS_MAX 8
#define OUTPUT_CAP (256u << 10)

typedef struct {
    char *name;
    kft_fn fn;
    const void *arg;
    double timeout;
    int fast;     /* in the fast tier (KFT_TIERS) */
    int selected; /* by the filters and --fast */
    pid_t pid;
    double start;
    int outfd;
    char *out;
    size_t outlen;
} test;

static test *tests;
static int ntests, cap_tests;

/* Names tests had before the GROUP/NAME rule: a filter that matches nothing is tried
 * again with `old` replaced by `now` (with a note), so an old command still finds its
 * test. */
static const struct { const char *old, *now; } renamed[] = {{"lessons_", "lessons/"}, {"param ", "param:"}};

/* This run's directory of seal keys (docs/run.md "Seals"), removed by the process
 * that made it: at the end of a run, or when an in-process test ends */
static char keys[64];
static pid_t keys_owner;

static void remove_keys(void) {
    if (keys[0] && getpid() == keys_owner) kf__rmtree(keys);
    keys[0] = 0;
}

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "kf-tests: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
    remove_keys();
    exit(USAGE_CODE);
}

/* GROUP/NAME: GROUP of [a-z0-9_], NAME non-empty; no spaces, controls or glob
 * characters anywhere, so every name can be typed, listed and matched as it is. */
static int good_name(const char *name) {
    const char *slash = strchr(name, '/');
    if (!slash || slash == name || !slash[1]) return 0;
    for (const char *p = name; p < slash; p++)
        if (!(islower((unsigned char)*p) || isdigit((unsigned char)*p) || *p == '_')) return 0;
    for (const char *p = slash; *p; p++)
        if (!isgraph((unsigned char)*p) || strchr("*?[]", *p)) return 0;
    return 1;
}

void kft_add(const char *name, kft_fn fn, const void *arg, double timeout_s) {
    if (!good_name(name)) die("bad test name '%s': names are GROUP/NAME (tests/test-list.h)", name);
    for (int i = 0; i < ntests; i++)
        if (!strcmp(tests[i].name, name)) die("two tests are named '%s'", name);
    if (ntests == cap_tests) {
        cap_tests = cap_tests ? 2 * cap_tests : 1024;
        if (!(tests = realloc(tests, (size_t)cap_tests * sizeof *tests))) die("out of memory");
    }
    test *t = &tests[ntests++];
    memset(t, 0, sizeof *t);
    if (!(t->name = strdup(name))) die("out of memory");
    t->fn = fn;
    t->arg = arg;
    t->timeout = timeout_s > 0 ? timeout_s : 120;
}

void kft_fail_at(const char *file, int line, const char *fmt, ...) {
    va_list ap;
    fflush(stdout);
    fprintf(stderr, "    FAIL at %s:%d: ", file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
    fflush(stderr);
    remove_keys(); /* in-process only: a forked test is not the keys' owner */
    _exit(1);
}

void kft_skip(const char *fmt, ...) {
    va_list ap;
    fflush(stdout);
    fprintf(stderr, "    skipped: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
    fflush(stderr);
    remove_keys();
    _exit(SKIP_CODE);
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void usage(FILE *f) {
    fputs("usage: kf-tests [-j N] [-v] [--fast] [FILTER...]\n"
          "       kf-tests --list [-v] [--fast] [FILTER...]\n"
          "       kf-tests --in-process NAME\n"
          "\n"
          "Run kforge's tests, each in a forked child under its own timeout; print one line per\n"
          "test (pass, FAIL or skip, its name and seconds; a failure's or skip's output below it)\n"
          "and then \"N passed, N failed, N skipped\". Test names are GROUP/NAME (cli/exit_codes).\n"
          "\n"
          "  FILTER             which tests: a test's exact name selects that test alone; a\n"
          "                     pattern with * ? or [ is matched against whole names (fnmatch);\n"
          "                     other text selects every name that contains it. Several\n"
          "                     filters add up. None: every test.\n"
          "  --fast             only the fast tier (tests/test-list.h; make test-fast)\n"
          "  -j N, --jobs N     run N tests at a time (default: the CPUs this process may use,\n"
          "                     at most 8; at most 64)\n"
          "  -v                 print every test's output, passing ones' too; with --list, each\n"
          "                     test's tier and timeout\n"
          "  --list             print the selected tests' names, one per line, and run nothing\n"
          "  --in-process NAME  run test NAME (or the one test a filter selects) in this process:\n"
          "                     no fork, no timeout; for gdb (break kft_fail_at)\n"
          "  -h, --help         this text\n"
          "\n"
          "Exit status: 0 every selected test passed or skipped; 1 a test failed (or timed out);\n"
          "2 bad usage, a FILTER that matches no test, or nothing selected.\n"
          "With --in-process: 0 passed, 1 failed, 77 skipped, 2 bad usage or no such test.\n"
          "\n"
          "Environment: KFT_SOURCE_DIR and KFT_BINARY_DIR point the tests at a copied tree;\n"
          "KFORGE_KEYS (default: a directory made for the run) holds runs' seal keys.\n",
          f);
}

static int default_jobs(void) {
    cpu_set_t set;
    long n = sched_getaffinity(0, sizeof set, &set) ? sysconf(_SC_NPROCESSORS_ONLN) : CPU_COUNT(&set);
    return n < 1 ? 1 : n > DEFAULT_JOBS_MAX ? DEFAULT_JOBS_MAX : (int)n;
}

static int parse_jobs(const char *s) {
    char *end;
    errno = 0;
    long n = s ? strtol(s, &end, 10) : 0;
    if (!s || errno || end == s || *end || n < 1) die("-j wants a positive number, not '%s'", s ? s : "");
    return n > MAX_JOBS ? MAX_JOBS : (int)n;
}

static int has_name(const char *name) {
    for (int i = 0; i < ntests; i++)
        if (!strcmp(tests[i].name, name)) return 1;
    return 0;
}

/* Does filter f select name? exact: f is some test's whole name. */
static int selects(const char *f, int exact, const char *name) {
    if (exact) return !strcmp(f, name);
    if (strpbrk(f, "*?[")) return !fnmatch(f, name, 0);
    return strstr(name, f) != NULL;
}

/* The tests filter f selects: 0 none. */
static int count_selected(const char *f) {
    int exact = has_name(f), hits = 0;
    for (int i = 0; i < ntests; i++) hits += selects(f, exact, tests[i].name);
    return hits;
}

/* Mark the tests the filters (and --fast) select; a filter that matches no test at all
 * stops the run, after the renamed[] spellings were tried. Returns how many. */
static int select_tests(char **filters, int nf, int fast) {
    int *exact = calloc((size_t)nf + 1, sizeof *exact);
    if (!exact) die("out of memory");
    for (int k = 0; k < nf; k++) {
        int hits = count_selected(filters[k]);
        for (size_t r = 0; !hits && r < sizeof renamed / sizeof *renamed; r++) {
            const char *at = strstr(filters[k], renamed[r].old);
            if (!at) continue;
            char *now_f = kf__asprintf("%.*s%s%s", (int)(at - filters[k]), filters[k], renamed[r].now,
                                       at + strlen(renamed[r].old));
            if (!now_f) die("out of memory");
            if ((hits = count_selected(now_f))) {
                fprintf(stderr, "kf-tests: '%s' is now '%s'\n", filters[k], now_f);
                filters[k] = now_f; /* kept for the run's life */
            } else {
                free(now_f);
            }
        }
        if (!hits) die("no test matches '%s' (kf-tests --list prints the names)", filters[k]);
        exact[k] = has_name(filters[k]);
    }
    int n = 0;
    for (int i = 0; i < ntests; i++) {
        test *t = &tests[i];
        t->selected = !nf;
        for (int k = 0; k < nf && !t->selected; k++) t->selected = selects(filters[k], exact[k], t->name);
        if (fast && !t->fast) t->selected = 0;
        n += t->selected;
    }
    free(exact);
    return n;
}

static void set_tiers(void) {
    static const struct {
        const char *pattern;
        int fast;
    } tiers[] = {
#define KFT_TIER(pattern, fast) {pattern, fast},
        KFT_TIERS(KFT_TIER)
#undef KFT_TIER
    };
    for (size_t r = 0; r < sizeof tiers / sizeof *tiers; r++) {
        int hits = 0;
        for (int i = 0; i < ntests; i++)
            if (!fnmatch(tiers[r].pattern, tests[i].name, 0)) tests[i].fast = tiers[r].fast, hits++;
        /* a renamed or removed test: say so, or the tier shrinks unseen */
        if (!hits)
            fprintf(stderr, "kf-tests: the tier rule '%s' matches no test (tests/test-list.h)\n",
                    tiers[r].pattern);
    }
}

static void make_keys(void) {
    if (getenv("KFORGE_KEYS")) return;
    snprintf(keys, sizeof keys, "/tmp/kft-keys-XXXXXX");
    if (mkdtemp(keys)) {
        setenv("KFORGE_KEYS", keys, 1);
        keys_owner = getpid();
    } else {
        keys[0] = 0;
    }
}

/* --in-process: name[0], or the one test it selects as a filter */
static int run_in_process(char **name) {
    int n = select_tests(name, 1, 0);
    if (n != 1) {
        fprintf(stderr, "kf-tests: '%s' selects %d tests; --in-process runs one:\n", name[0], n);
        for (int i = 0, shown = 0; i < ntests && shown < 20; i++)
            if (tests[i].selected) fprintf(stderr, "  %s\n", tests[i].name), shown++;
        return USAGE_CODE;
    }
    test *t = NULL;
    for (int i = 0; i < ntests && !t; i++)
        if (tests[i].selected) t = &tests[i];
    make_keys();
    fprintf(stderr, "kf-tests: %s in process %d (no fork, no timeout)\n", t->name, (int)getpid());
    fflush(NULL);
    double t0 = now();
    t->fn(t->arg);
    fflush(NULL);
    printf("pass %-58s %6.2f s\n", t->name, now() - t0);
    remove_keys();
    return 0;
}

static volatile sig_atomic_t interrupted;
static void on_interrupt(int sig) { interrupted = sig; }

static void start(test *t) {
    int p[2];
    if (pipe(p)) {
        perror("pipe");
        exit(USAGE_CODE);
    }
    fflush(NULL);
    t->start = now();
    t->pid = fork();
    if (t->pid < 0) {
        perror("fork");
        exit(USAGE_CODE);
    }
    if (t->pid == 0) {
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
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
        if (t->outlen < OUTPUT_CAP) {
            char *grown = realloc(t->out, t->outlen + (size_t)n + 1);
            if (!grown) continue;
            t->out = grown;
            memcpy(t->out + t->outlen, buf, (size_t)n);
            t->outlen += (size_t)n;
            t->out[t->outlen] = 0;
        }
    }
}

int main(int argc, char **argv) {
    int jobs = default_jobs(), verbose = 0, list = 0, fast = 0, nf = 0;
    char *in_process = NULL;
    static char **filters; /* static: the run's life, with the renamed spellings put in it */
    filters = calloc((size_t)argc + 1, sizeof *filters);
    if (!filters) die("out of memory");
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "-j") || !strcmp(a, "--jobs")) {
            jobs = parse_jobs(i + 1 < argc ? argv[++i] : NULL);
        } else if (!strncmp(a, "-j", 2)) {
            jobs = parse_jobs(a + 2);
        } else if (!strcmp(a, "-v")) {
            verbose = 1;
        } else if (!strcmp(a, "--list")) {
            list = 1;
        } else if (!strcmp(a, "--fast")) {
            fast = 1;
        } else if (!strcmp(a, "--in-process")) {
            if (i + 1 >= argc) die("--in-process wants a test's name");
            in_process = argv[++i];
        } else if (a[0] == '-') {
            fprintf(stderr, "kf-tests: unknown option '%s'\n\n", a);
            usage(stderr);
            return USAGE_CODE;
        } else {
            filters[nf++] = argv[i];
        }
    }
    if (in_process && (nf || list || fast)) die("--in-process takes one test's name and no other selection");
    signal(SIGPIPE, SIG_IGN);
#define KFT_REGISTER(suite) kft_register_##suite();
    KFT_SUITES(KFT_REGISTER)
#undef KFT_REGISTER
    set_tiers();
    if (in_process) {
        filters[0] = in_process;
        return run_in_process(filters);
    }
    int nsel = select_tests(filters, nf, fast);
    if (!nsel) die("no test selected%s", fast ? " (the fast tier holds none of them)" : "");
    if (list) {
        for (int i = 0; i < ntests; i++) {
            const test *t = &tests[i];
            if (!t->selected) continue;
            if (verbose) printf("%-62s %s %5.0f s\n", t->name, t->fast ? "fast" : "slow", t->timeout);
            else printf("%s\n", t->name);
        }
        return 0;
    }
    make_keys();
    /* ^C: the tests run in process groups of their own, which the terminal's signal
     * does not reach; they are killed here */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_interrupt;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    int passed = 0, failed = 0, skipped = 0, next = 0, running = 0;
    test *run[MAX_JOBS] = {0};
    while (!interrupted) {
        while (running < jobs && next < ntests) {
            test *t = &tests[next++];
            if (!t->selected) continue;
            start(t);
            for (int k = 0; k < MAX_JOBS; k++)
                if (!run[k]) {
                    run[k] = t;
                    break;
                }
            running++;
        }
        if (!running) break;
        usleep(2000);
        for (int k = 0; k < MAX_JOBS; k++) {
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
            printf("%s %-58s %6.2f s%s\n", word, t->name, secs, timed_out ? "  (timed out)" : "");
            if (WIFSIGNALED(status) && !timed_out) printf("    killed by signal %d\n", WTERMSIG(status));
            else if (WIFEXITED(status) && !timed_out && WEXITSTATUS(status) != 0 &&
                     WEXITSTATUS(status) != 1 && WEXITSTATUS(status) != SKIP_CODE)
                printf("    exited with %d\n", WEXITSTATUS(status));
            if ((verbose || word[0] != 'p') && t->out) fputs(t->out, stdout);
            fflush(stdout);
            free(t->out);
            t->out = NULL;
            run[k] = NULL;
            running--;
        }
    }
    if (interrupted) {
        for (int k = 0; k < MAX_JOBS; k++)
            if (run[k]) {
                kill(-run[k]->pid, SIGKILL);
                kill(run[k]->pid, SIGKILL);
                waitpid(run[k]->pid, NULL, 0);
                printf("FAIL %-58s  (interrupted)\n", run[k]->name);
                failed++;
            }
    }
    printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
    remove_keys();
    if (interrupted) return 128 + interrupted;
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

const char *const kft_cuda_tasks[] = {"softmax", "rmsnorm", "sum",        "transpose",
                                      "sgemm",   "bgemm",   "gdn_decode", "linear", "rope", "attn_decode",
                                      "add",     "silu_mul", "rmsnorm_bf16", NULL};

void kft_need_torch(void) {
    kf_ctx *ctx = kf_ctx_new();
    char py[PATH_MAX], cmd[PATH_MAX + 64], out[256];
    if (kf_torch_python(ctx, py, sizeof py))
        kft_skip("no python3 for PyTorch references: %s", kf_errmsg(ctx));
    kf_ctx_free(ctx);
    snprintf(cmd, sizeof cmd, "'%s' -c 'import torch' 2>&1", py);
    if (kft_run(cmd, out, sizeof out)) kft_skip("%s has no torch (make deps installs it into .venv)", py);
}

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

int64_t kft_kept_node(kf_store *st, const kf_task *t, const char *src, size_t len, const char *ext,
                      double speedup) {
    kf_node nd;
    memset(&nd, 0, sizeof nd);
    snprintf(nd.ext, sizeof nd.ext, "%s", ext);
    snprintf(nd.proposer, sizeof nd.proposer, "builtin");
    snprintf(nd.category, sizeof nd.category, "other");
    CHECK(kf_store_put_source(st, src, len, nd.ext, nd.src_hash) == KF_OK &&
          kf_store_add_node(st, &nd) == KF_OK);
    nd.state = KF_NODE_KEPT;
    json_t *sh = json_array();
    for (int s = 0; s < t->nshapes; s++) {
        json_t *sz = json_object();
        for (int z = 0; z < t->nsizes; z++)
            json_object_set_new(sz, t->size_names[z], json_integer(t->shapes[s].v[z]));
        json_array_append_new(sh, json_pack("{s:o, s:f, s:b}", "sizes", sz, "speedup", speedup, "win", 1));
    }
    nd.shapes_json = json_dumps(sh, JSON_COMPACT);
    nd.speedup = speedup;
    json_decref(sh);
    CHECK(kft_finish_node(st, &nd) == KF_OK);
    int64_t id = nd.id;
    kf_node_free(&nd);
    return id;
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
