/*
 * test_fault.c - failure paths on purpose (docs/design.md "Failure seams"). Each public
 * entry point is called with its 1st, 2nd, 3rd... allocation, process or thread start,
 * or file write failing (tests/fault.h), until a call runs without meeting the fault;
 * then again with every such event from the Nth on failing, which reaches the cleanup
 * paths that allocate or write themselves. Every faulted call must either
 *  - return an error with a message on the context: KF_ENOMEM for a failed allocation
 *    (OpenSSL's excepted: see ok_status), an environment status (EIO, ENOMEM,
 *    EBACKEND, EINTERNAL) for a failed start or write, never one that blames the input;
 *    and leave nothing half-made behind: no object handed out, a run store or lessons
 *    database that opens and holds all of the call's work or none, no scratch
 *    directory left over;
 *  - or return KF_OK with a whole product: the same document as an unfaulted call's;
 * and leak nothing (LeakSanitizer, in the sanitizer build, after every call). Before the
 * allocation loop, one call runs with every successful allocation leaving ENOMEM in errno
 * (glibc's may): it must succeed, with the same product, as errno is no answer.
 *
 * Entry points: kf_task_load (saxpy); kf_check of saxpy's fast candidate, with a cold
 * build cache (both compiles, their processes and the cache's writes) and a warm one;
 * a run store's create, source, node and sealed outcome; opening a lessons database and
 * importing three lessons into it; kf_run (the builtin proposer on saxpy, a budget of 2);
 * distilling a small finished run into a new lessons database; exporting a run with one
 * kept node. One test per entry point and kind of fault it meets (a task load neither
 * starts a process nor writes, a store, an import or a distillation starts none).
 *
 * Cost: starts and writes are few, and each one fails in turn. Allocations are many: the
 * first `prefix` are each failed in turn, and past them a stride keeps the loop to about
 * `samples` more calls (the test's line says which it did); a case whose calls take
 * seconds (the run, the export) samples its starts and writes so too. The environment variable
 * KFT_FAULT_STRIDE=1 fails every allocation too (minutes); KFT_FAULT_SHOW=1 prints where
 * each fault was that a call absorbed (returned KF_OK with its whole product);
 * KFT_FAULT_FROM=N starts at the Nth event (to reproduce one failure).
 */
#define _GNU_SOURCE
#include "kft.h"
#include "fault.h"

#include "store/store.h"
#include "task/task.h"
#include "util/util.h"

#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct fcase fcase;
struct fcase {
    const char *name, *slug;                  /* "task load", "task_load" (the test's name) */
    unsigned kinds;                           /* 1 << KFT_FAULT_*: what the entry point does */
    int prefix, samples;                      /* see the file's note */
    void (*setup)(fcase *c);                  /* once, unfaulted */
    void (*prepare)(fcase *c);                /* before every call, unfaulted (may be NULL) */
    kf_status (*call)(fcase *c, kf_ctx *ctx); /* the entry point, faulted */
    /* after every call, unfaulted: on KF_OK the product is whole, else nothing is
     * half-made; frees what the call made. faulted 0: the reference call. */
    void (*verify)(fcase *c, kf_status st, int faulted);
    unsigned sampled; /* kinds sampled as allocations are (a slow call) */
};

static char where[256]; /* the call being verified, for messages */

/* A failed verification names the fault and prints where it was injected. */
#define FCHECK(c, ...)                                    \
    do {                                                  \
        if (!(c)) {                                       \
            fprintf(stderr, "    %s\n", where);           \
            kft_fault_print_stack();                      \
            kft_fail_at(__FILE__, __LINE__, __VA_ARGS__); \
        }                                                 \
    } while (0)

static char scratch_root[64];

static void scratch_remove(void) {
    if (scratch_root[0]) kf__rmtree(scratch_root);
}

/* ROOT/rel under this test's scratch directory (made on first use, removed at exit). */
static const char *scratch_path(const char *rel) {
    static char ring[8][256];
    static int k;
    if (!scratch_root[0]) {
        snprintf(scratch_root, sizeof scratch_root, "/tmp/kft-fault-XXXXXX");
        CHECK(mkdtemp(scratch_root));
        atexit(scratch_remove);
    }
    char *p = ring[k++ & 7];
    snprintf(p, sizeof ring[0], "%s/%s", scratch_root, rel);
    return p;
}

static int exists(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0;
}

/* Entries of directory path (0 when it is missing). */
static int entries(const char *path) {
    char cmd[512], out[64];
    snprintf(cmd, sizeof cmd, "ls -A '%s' 2>/dev/null | wc -l", path);
    kft_run(cmd, out, sizeof out);
    return (int)strtol(out, NULL, 10);
}

/* A crash inside a faulted call: say which fault, then let the signal take its course
 * (the sanitizer's handler, if it had one, reports it). */
static struct sigaction crash_old[32];

static void on_crash(int sig) {
    fprintf(stderr, "    crashed (signal %d) in %s\n", sig, where);
    kft_fault_print_stack();
    sigaction(sig, &crash_old[sig], NULL);
}

static void catch_crashes(void) {
    static const int sigs[] = {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_crash;
        sigaction(sigs[i], &sa, &crash_old[sigs[i]]);
    }
}

/* The status a failed event of kind may give. OpenSSL's errors do not say that memory
 * ran out: after a fault there, any error will do. */
static int ok_status(kft_fault_kind kind, kf_status st) {
    if (kind == KFT_FAULT_ALLOC && !strncmp(kft_fault_site(), "ossl_", 5))
        return st > KF_OK && st < KF_STATUS_COUNT;
    /* kf_run stops on a failure of the machine inside an evaluation (KF_EENV, exit 5),
     * whatever failed there: nothing is held against the candidate */
    if (st == KF_EENV) return 1;
    if (kind == KFT_FAULT_ALLOC) return st == KF_ENOMEM;
    return st == KF_EIO || st == KF_ENOMEM || st == KF_EBACKEND || st == KF_EINTERNAL;
}

/* One loop over the events: the nth fails (persist: the nth and every later one). */
static void fault_pass(fcase *c, kf_ctx *ctx, kft_fault_kind kind, long total, int persist);

static void fault_loop(const void *arg, kft_fault_kind kind) {
    fcase *c = (fcase *)arg;
    if (kft_fault_libs()) kft_fail_at(__FILE__, __LINE__, "the libraries' hooks could not be set");
    kf_ctx *ctx = kf_ctx_new();
    CHECK(ctx);
    catch_crashes();
    if (c->setup) c->setup(c);
    /* two calls without a fault: the first does the once-per-process work (the worker's
     * path, OpenSSL's and SQLite's set-up), which no later call repeats; the second
     * counts the events */
    long total = 0;
    kf_status st;
    snprintf(where, sizeof where, "%s: a call without a fault", c->name);
    for (int i = 0; i < 2; i++) {
        if (c->prepare) c->prepare(c);
        kft_fault_arm(kind, 0, 0);
        st = c->call(c, ctx);
        kft_fault_disarm();
        total = kft_fault_count(kind);
        CHECKF(st == KF_OK, "%s without a fault: %s: %s", c->name, kf_strstatus(st), kf_errmsg(ctx));
        c->verify(c, st, 0);
        CHECKF(!kft_fault_leaks(), "%s without a fault: leaked (LeakSanitizer's report above)", c->name);
    }
    /* a seam that counts nothing tests nothing (a wrap lost from the link) */
    CHECKF(total > 0, "%s: no %s event counted", c->name, kft_fault_name(kind));
    /* errno is no answer: with every successful allocation leaving ENOMEM there the call
     * must still succeed, with the same product */
    if (kind == KFT_FAULT_ALLOC) {
        snprintf(where, sizeof where, "%s: allocations leave ENOMEM in errno", c->name);
        if (c->prepare) c->prepare(c);
        kft_fault_stale_errno(1);
        st = c->call(c, ctx);
        kft_fault_stale_errno(0);
        CHECKF(st == KF_OK, "%s with ENOMEM left in errno by successful allocations: %s: %s", c->name,
               kf_strstatus(st), kf_errmsg(ctx));
        c->verify(c, st, 0);
        CHECKF(!kft_fault_leaks(), "%s: leaked (LeakSanitizer's report above)", c->name);
    }
    /* a single failure, then failure from there on: the second reaches the cleanup paths
     * that allocate or write themselves (SQLite's "transient" and "persistent" faults) */
    fault_pass(c, ctx, kind, total, 0);
    fault_pass(c, ctx, kind, total, 1);
    kf_ctx_free(ctx);
}

static void fault_pass(fcase *c, kf_ctx *ctx, kft_fault_kind kind, long total, int persist) {
    kf_status st;
    const char *env = getenv("KFT_FAULT_STRIDE");
    long stride = env && *env ? strtol(env, NULL, 10) : 0;
    /* starts and writes are few: every one fails in turn */
    long prefix = stride || (kind != KFT_FAULT_ALLOC && !(c->sampled & (1u << kind))) ? total : c->prefix;
    int show = getenv("KFT_FAULT_SHOW") != NULL;
    if (stride < 1) stride = total > prefix + c->samples ? (total - prefix) / c->samples : 1;
    long calls = 0, errors = 0, absorbed = 0;
    const char *from = getenv("KFT_FAULT_FROM"); /* reproduce one: KFT_FAULT_FROM=N KFT_FAULT_STRIDE=1 */
    for (long n = from && *from ? strtol(from, NULL, 10) : 1;; n += n < prefix ? 1 : stride) {
        if (c->prepare) c->prepare(c);
        ctx->err[0] = 0;
        ctx->last = KF_OK;
        snprintf(where, sizeof where, "%s: %s fault %ld%s of %ld", c->name, kft_fault_name(kind), n,
                 persist ? " on" : "", total);
        kft_fault_arm(kind, n, persist);
        st = c->call(c, ctx);
        kft_fault_disarm();
        long fired = kft_fault_fired();
        snprintf(where, sizeof where, "%s: %s fault %ld%s of %ld (%s): %s: %s", c->name, kft_fault_name(kind),
                 n, persist ? " on" : "", total, kft_fault_site(), kf_strstatus(st),
                 st ? kf_errmsg(ctx) : "");
        calls++;
        if (!fired) { /* past the last event: the call is whole again */
            FCHECK(st == KF_OK, "no fault met, yet %s", kf_strstatus(st));
            c->verify(c, st, 0);
            FCHECK(!kft_fault_leaks(), "leaked (LeakSanitizer's report above)");
            break;
        }
        if (st) {
            errors++;
            FCHECK(ctx->err[0], "an error without a message");
            FCHECK(ok_status(kind, st), "the wrong status for a failed %s", kft_fault_name(kind));
        } else {
            absorbed++;
            if (show) { /* what a call may shrug off: a cache, a helper thread */
                fprintf(stderr, "    absorbed: %s\n", where);
                kft_fault_print_stack();
            }
        }
        c->verify(c, st, 1);
        FCHECK(!kft_fault_leaks(), "leaked (LeakSanitizer's report above)");
        FCHECK(calls < 100000, "the loop does not end");
    }
    char how[96] = "each in turn";
    if (prefix < total && stride > 1)
        snprintf(how, sizeof how, "the first %ld, then a stride of %ld", prefix, stride);
    printf("    %s, %s faults (%ld events), %s: %ld calls (%s), %ld errors, %ld absorbed\n", c->name,
           kft_fault_name(kind), total, persist ? "from one on" : "one at a time", calls - 1, how, errors,
           absorbed);
}

static void t_alloc(const void *arg) { fault_loop(arg, KFT_FAULT_ALLOC); }
static void t_spawn(const void *arg) { fault_loop(arg, KFT_FAULT_SPAWN); }
static void t_write(const void *arg) { fault_loop(arg, KFT_FAULT_WRITE); }

/* ---- kf_task_load ------------------------------------------------------------------- */

static kf_task *task_out;
static char task_fp[65];

static kf_status task_call(fcase *c, kf_ctx *ctx) {
    task_out = NULL;
    return kf_task_load(ctx, kft_src("tasks/c/saxpy"), &task_out);
}

static void task_verify(fcase *c, kf_status st, int faulted) {
    if (st) {
        FCHECK(!task_out, "an error, yet a task was handed out");
        return;
    }
    FCHECK(task_out && !strcmp(kf_task_name(task_out), "saxpy"), "KF_OK without the task");
    if (!faulted) memcpy(task_fp, task_out->fingerprint, sizeof task_fp);
    FCHECK(!strcmp(task_out->fingerprint, task_fp), "KF_OK with another task (fingerprint %s, not %s)",
           task_out->fingerprint, task_fp);
    kf_task_free(task_out);
    task_out = NULL;
}

/* ---- kf_check ----------------------------------------------------------------------- */

static kf_task *check_task;
static kf_result *check_out;
static char *check_skel;
static int check_cold;

/* The result's document reduced to its keys, the types of its values and the lengths
 * of its arrays: what every call of the same check must share. */
static void skeleton(const json_t *j, kf_buf *b) {
    switch (json_typeof(j)) {
    case JSON_OBJECT: {
        const char *k;
        const json_t *v;
        kf_buf_printf(b, "{");
        /* sorted: a faulted call must have the same keys, not in the same order */
        json_t *keys = json_array();
        json_object_foreach((json_t *)j, k, v) json_array_append_new(keys, json_string(k));
        size_t n = json_array_size(keys);
        for (size_t i = 0; i < n; i++)
            for (size_t m = i + 1; m < n; m++)
                if (strcmp(json_string_value(json_array_get(keys, i)),
                           json_string_value(json_array_get(keys, m))) > 0) {
                    json_t *t = json_incref(json_array_get(keys, i));
                    json_array_set(keys, i, json_array_get(keys, m));
                    json_array_set_new(keys, m, t);
                }
        for (size_t i = 0; i < n; i++) {
            k = json_string_value(json_array_get(keys, i));
            kf_buf_printf(b, "%s:", k);
            skeleton(json_object_get(j, k), b);
            kf_buf_printf(b, ",");
        }
        json_decref(keys);
        kf_buf_printf(b, "}");
        break;
    }
    case JSON_ARRAY: {
        size_t i;
        const json_t *v;
        kf_buf_printf(b, "[%zu:", json_array_size(j));
        json_array_foreach((json_t *)j, i, v) {
            skeleton(v, b);
            kf_buf_printf(b, ",");
        }
        kf_buf_printf(b, "]");
        break;
    }
    case JSON_STRING: kf_buf_printf(b, "s"); break;
    case JSON_INTEGER:
    case JSON_REAL: kf_buf_printf(b, "n"); break; /* 0 and 0.5 are one kind here */
    case JSON_TRUE:
    case JSON_FALSE: kf_buf_printf(b, "b"); break;
    case JSON_NULL: kf_buf_printf(b, "z"); break;
    }
}

static void check_setup(fcase *c) {
    kf_ctx *ctx = kf_ctx_new();
    check_task = kft_task(ctx, "tasks/c/saxpy");
    kf_ctx_free(ctx);
    check_cold = !strcmp(c->slug, "check_cold");
    /* builds cached here, scratch files made here: both are looked at after every call */
    setenv("KFORGE_CACHE_DIR", scratch_path("cache"), 1);
    /* as /tmp: a worker started by root runs as a user of its own */
    CHECK(chmod(scratch_root, 0755) == 0 && mkdir(scratch_path("tmp"), 0700) == 0 &&
          chmod(scratch_path("tmp"), 01777) == 0);
    setenv("TMPDIR", scratch_path("tmp"), 1);
}

static void check_prepare(fcase *c) {
    if (check_cold) kf__rmtree(scratch_path("cache"));
}

static kf_status check_call(fcase *c, kf_ctx *ctx) {
    kf_opts o;
    kf_opts_init(&o);
    o.hidden_count = 1;
    o.has_seed = 1; /* the same shapes every call: a document's arrays keep their lengths */
    o.seed = 7;
    check_out = NULL;
    return kf_check(ctx, check_task, kft_src("tasks/c/saxpy/candidates/fast.c"), &o, &check_out);
}

static void check_verify(fcase *c, kf_status st, int faulted) {
    /* a worker's directory goes with its worker, the session's with the call */
    FCHECK(entries(scratch_path("tmp")) == 0, "scratch files left in %s", scratch_path("tmp"));
    if (st) {
        FCHECK(!check_out, "an error, yet a result was handed out");
        return;
    }
    FCHECK(check_out, "KF_OK without a result");
    FCHECK(kf_result_verdict(check_out) == KF_VERDICT_ACCEPTED, "a correct candidate rejected: %s",
           kft_reasons(check_out));
    char *text = kf_result_json(check_out);
    FCHECK(text, "kf_result_json: NULL");
    json_t *j = json_loads(text, 0, NULL);
    FCHECK(j, "kf_result_json is not JSON: %s", text);
    kf_buf b;
    kf_buf_init(&b, 1u << 20);
    skeleton(j, &b);
    json_decref(j);
    if (!faulted) {
        free(check_skel);
        check_skel = b.p;
        b.p = NULL;
    } else {
        FCHECK(!strcmp(b.p, check_skel), "KF_OK with another document:\n%s\nnot\n%s\n(%s)", b.p, check_skel,
               text);
    }
    kf_buf_free(&b);
    free(text);
    kf_result_free(check_out);
    check_out = NULL;
}

/* ---- the run store ------------------------------------------------------------------ */

static kf_task *store_task;
static const char store_src[] = "void saxpy(void) {}\n";
static const char store_verdict[] = "{\"verdict\": \"accepted\"}";
static const char store_shapes[] = "[{\"n\": 65536, \"speedup\": 1.5}]";

static void store_setup(fcase *c) {
    kf_ctx *ctx = kf_ctx_new();
    store_task = kft_task(ctx, "tasks/c/saxpy");
    kf_ctx_free(ctx);
}

static void store_prepare(fcase *c) { kf__rmtree(scratch_path("run")); }

/* What `kforge run` does first: the run, its first candidate's text, the node, its
 * outcome (sealed). */
static kf_status store_call(fcase *c, kf_ctx *ctx) {
    kf_store *s = NULL;
    kf_status st = kf_store_create(ctx, scratch_path("run"), store_task, "{\"seed\": 1}", &s);
    if (st) return st;
    kf_node n;
    memset(&n, 0, sizeof n);
    if ((st = kf_store_put_source(s, store_src, sizeof store_src - 1, "c", n.src_hash))) goto done;
    snprintf(n.ext, sizeof n.ext, "c");
    snprintf(n.proposer, sizeof n.proposer, "builtin");
    snprintf(n.category, sizeof n.category, "other");
    if ((st = kf_store_add_node(s, &n))) goto done;
    n.state = KF_NODE_MEASURED;
    n.verdict_json = (char *)store_verdict;
    n.shapes_json = (char *)store_shapes;
    n.speedup = 1.5;
    st = kf_store_finish_node(s, &n);
done:
    kf_store_close(s);
    return st;
}

static void store_verify(fcase *c, kf_status st, int faulted) {
    char db[300];
    snprintf(db, sizeof db, "%s/run.db", scratch_path("run"));
    /* a create that failed gives the directory back: a retry can create the run */
    if (st && !exists(db)) return;
    FCHECK(st == KF_OK || exists(db), "KF_OK without run.db");
    kf_ctx *ctx = kf_ctx_new();
    kf_store *s = NULL;
    kf_status o = kf_store_open(ctx, scratch_path("run"), store_task, &s);
    FCHECK(o == KF_OK, "the run does not open afterwards: %s: %s", kf_strstatus(o), kf_errmsg(ctx));
    FCHECK(kf_store_check(s) == KF_OK, "run.db is damaged: %s", kf_errmsg(ctx));
    FCHECK(!strcmp(kf_store_seal_state(s), "sealed"), "the run is %s", kf_store_seal_state(s));
    kf_node n;
    memset(&n, 0, sizeof n);
    o = kf_store_get_node(s, 1, &n);
    if (st) { /* all of a step or none: no node, or the node proposed, or its outcome whole */
        FCHECK(o == KF_OK || o == KF_EUSAGE, "reading the node: %s: %s", kf_strstatus(o), kf_errmsg(ctx));
    } else {
        FCHECK(o == KF_OK, "KF_OK, yet no node: %s", kf_errmsg(ctx));
        FCHECK(n.state == KF_NODE_MEASURED, "KF_OK, yet the node is %s", kf_node_state_name(n.state));
    }
    if (o == KF_OK) {
        FCHECK(!n.tampered, "the node reads as tampered");
        FCHECK(n.state == KF_NODE_PROPOSED || n.state == KF_NODE_MEASURED, "the node is %s",
               kf_node_state_name(n.state));
        if (n.state == KF_NODE_MEASURED)
            FCHECK(n.speedup == 1.5 && n.verdict_json && !strcmp(n.verdict_json, store_verdict) &&
                       n.shapes_json && !strcmp(n.shapes_json, store_shapes),
                   "the node's outcome is not what was recorded");
        char *text = NULL;
        size_t len = 0;
        o = kf_store_read_source(s, n.src_hash, n.ext, &text, &len);
        FCHECK(o == KF_OK && len == sizeof store_src - 1 && !memcmp(text, store_src, len),
               "the node's source does not read back: %s", kf_errmsg(ctx));
        free(text);
        kf_node_free(&n);
    }
    kf_store_close(s);
    kf_ctx_free(ctx);
}

/* ---- lessons import ----------------------------------------------------------------- */

static const char lessons_in[] =
    "{\"id\": \"fault-a\", \"situation\": {\"text\": \"row softmax, long rows\", \"backend\": \"cuda\","
    " \"ops\": [\"op/softmax\"]}, \"action\": \"one warp per row\", \"tags\": [\"cuda/warp/shuffle\"]}\n"
    "\n"
    "{\"id\": \"fault-b\", \"situation\": \"saxpy on short vectors\", \"action\": \"no threads below 4096\","
    " \"trust\": {\"confirmations\": 2, \"refutations\": 1}}\n"
    "{\"id\": \"fault-c\", \"situation\": \"unicode \\u00e9\", \"action\": \"keep\", \"status\": "
    "\"retired\"}\n";

static int lessons_added;

static void lessons_prepare(fcase *c) {
    const char *sfx[] = {"", "-wal", "-shm", "-journal"};
    for (int i = 0; i < 4; i++) {
        char p[300];
        snprintf(p, sizeof p, "%s%s", scratch_path("l/lessons.db"), sfx[i]);
        unlink(p);
    }
}

/* `kforge lessons import FILE`: open (create) the database, import, close. */
static kf_status lessons_call(fcase *c, kf_ctx *ctx) {
    kf_lessons *db = NULL;
    lessons_added = -1;
    kf_status st = kf_lessons_open(ctx, scratch_path("l/lessons.db"), NULL, &db);
    if (st) return st;
    st = kf_lessons_import(db, lessons_in, sizeof lessons_in - 1, "in.jsonl", &lessons_added, NULL);
    kf_lessons_close(db);
    return st;
}

static void lessons_verify(fcase *c, kf_status st, int faulted) {
    if (st && !exists(scratch_path("l/lessons.db"))) return;
    FCHECK(st || lessons_added == 3, "KF_OK, yet %d lessons added", lessons_added);
    kf_ctx *ctx = kf_ctx_new();
    kf_lessons *db = NULL;
    kf_status o = kf_lessons_open(ctx, scratch_path("l/lessons.db"), NULL, &db);
    FCHECK(o == KF_OK, "the database does not open afterwards: %s: %s", kf_strstatus(o), kf_errmsg(ctx));
    char *out = NULL;
    o = kf_lessons_export(db, &out);
    FCHECK(o == KF_OK, "export: %s", kf_errmsg(ctx));
    int lines = 0;
    for (const char *p = out; *p; p++) lines += *p == '\n';
    /* all lines or none */
    FCHECK(lines == (st ? 0 : 3), "%d lessons in the database after %s", lines, kf_strstatus(st));
    if (!st)
        FCHECK(strstr(out, "\"fault-a\"") && strstr(out, "\"fault-b\"") && strstr(out, "\"fault-c\""),
               "the lessons are not the ones imported:\n%s", out);
    free(out);
    kf_lessons_close(db);
    kf_ctx_free(ctx);
}

/* ---- kf_run, distill, export over a small run ----------------------------------------- */

/* A run's state as the fault loops compare it: its nodes' count, and whether each is
 * whole (proposed, or an outcome with its source readable). -1: it does not open or is
 * damaged (the message into why). */
static int run_nodes(const char *dir, int *finished, char *why, size_t n) {
    kf_ctx *ctx = kf_ctx_new();
    kf_store *s = NULL;
    int count = -1;
    *finished = 0;
    if (kf_store_open(ctx, dir, NULL, &s) || kf_store_check(s)) {
        snprintf(why, n, "%s", kf_errmsg(ctx));
        goto out;
    }
    count = 0;
    for (int64_t id = 1;; id++) {
        kf_node nd;
        memset(&nd, 0, sizeof nd);
        if (kf_store_get_node(s, id, &nd)) break;
        count++;
        char *text = NULL;
        size_t len = 0;
        if (nd.tampered || kf_store_read_source(s, nd.src_hash, nd.ext, &text, &len)) {
            snprintf(why, n, "node %lld %s", (long long)id,
                     nd.tampered ? "reads as tampered" : "has no source");
            count = -1;
        }
        if (nd.state != KF_NODE_PROPOSED) ++*finished;
        free(text);
        kf_node_free(&nd);
        if (count < 0) break;
    }
out:
    kf_store_close(s);
    kf_ctx_free(ctx);
    return count;
}

static void run_opts(kf_run_opts *o, const char *dir) {
    static const char *critic[] = {"retimes=1"};
    kf_run_opts_init(o);
    o->task_dir = kft_src("tasks/c/saxpy");
    o->run_dir = dir;
    o->budget = 2;
    o->seed = 3;
    o->has_seed = 1;
    o->hidden = 1;
    o->min_runs = 3;
    o->max_runs = 4;
    o->min_time_s = 0.01;
    o->lessons = "none";
    o->critic[0] = critic[0];
    o->ncritic = 1;
}

static void run_setup(fcase *c) {
    /* workers' scratch under a directory of the test's, as for check */
    setenv("KFORGE_CACHE_DIR", scratch_path("cache"), 1);
    CHECK(chmod(scratch_root, 0755) == 0 && mkdir(scratch_path("tmp"), 0700) == 0 &&
          chmod(scratch_path("tmp"), 01777) == 0);
    setenv("TMPDIR", scratch_path("tmp"), 1);
    setenv("KFORGE_KEYS", scratch_path("keys"), 1);
}

static void run_prepare(fcase *c) { kf__rmtree(scratch_path("run")); }

static char *run_summary;

static kf_status run_call(fcase *c, kf_ctx *ctx) {
    kf_run_opts o;
    run_opts(&o, scratch_path("run"));
    run_summary = NULL;
    return kf_run(ctx, &o, &run_summary);
}

static void run_verify(fcase *c, kf_status st, int faulted) {
    char why[512] = "";
    int fin = 0,
        n = exists(scratch_path("run/run.db")) ? run_nodes(scratch_path("run"), &fin, why, sizeof why) : 0;
    FCHECK(n >= 0, "the run store does not open whole afterwards: %s", why);
    FCHECK(entries(scratch_path("tmp")) == 0, "scratch files left in %s", scratch_path("tmp"));
    if (st) {
        FCHECK(!run_summary, "an error, yet a summary was handed out");
        /* every evaluation recorded is whole; none past the budget */
        FCHECK(fin <= 2 && n <= 3, "%d nodes (%d finished) after %s", n, fin, kf_strstatus(st));
        return;
    }
    json_t *j = run_summary ? json_loads(run_summary, 0, NULL) : NULL;
    FCHECK(j, "KF_OK without a summary: %s", run_summary ? run_summary : "(null)");
    FCHECK(fin == 2, "KF_OK, yet %d evaluations finished (budget 2): %s", fin, run_summary);
    json_decref(j);
    free(run_summary);
    run_summary = NULL;
}

/* distill and export read a run made once, unfaulted; export's has a kept node. */
static char distill_ref[1 << 14];

static void distill_setup(fcase *c) {
    run_setup(c);
    kf_ctx *ctx = kf_ctx_new();
    kf_run_opts o;
    run_opts(&o, scratch_path("drun"));
    char *sum = NULL;
    CHECKF(kf_run(ctx, &o, &sum) == KF_OK, "%s", kf_errmsg(ctx));
    free(sum);
    kf_ctx_free(ctx);
}

static void distill_prepare(fcase *c) {
    const char *sfx[] = {"", "-wal", "-shm", "-journal"};
    for (int i = 0; i < 4; i++) {
        char p[300];
        snprintf(p, sizeof p, "%s%s", scratch_path("d/lessons.db"), sfx[i]);
        unlink(p);
    }
}

static char *distill_summary;

/* `kforge lessons distill RUN`: open (create) the database, distil, close. */
static kf_status distill_call(fcase *c, kf_ctx *ctx) {
    kf_lessons *db = NULL;
    distill_summary = NULL;
    mkdir(scratch_path("d"), 0755);
    kf_status st = kf_lessons_open(ctx, scratch_path("d/lessons.db"), NULL, &db);
    if (st) return st;
    st = kf_lessons_distill(db, scratch_path("drun"), &distill_summary);
    kf_lessons_close(db);
    return st;
}

static void distill_verify(fcase *c, kf_status st, int faulted) {
    char why[512] = "";
    int fin = 0;
    FCHECK(run_nodes(scratch_path("drun"), &fin, why, sizeof why) >= 0 && fin == 2,
           "distill changed the run: %s", why);
    if (st) FCHECK(!distill_summary, "an error, yet a summary was handed out");
    if (st && !exists(scratch_path("d/lessons.db"))) return;
    kf_ctx *ctx = kf_ctx_new();
    kf_lessons *db = NULL;
    kf_status o = kf_lessons_open(ctx, scratch_path("d/lessons.db"), NULL, &db);
    FCHECK(o == KF_OK, "the database does not open afterwards: %s: %s", kf_strstatus(o), kf_errmsg(ctx));
    char *out = NULL;
    o = kf_lessons_export(db, &out);
    FCHECK(o == KF_OK, "export: %s", kf_errmsg(ctx));
    /* all of the run's lessons or none */
    if (st) {
        FCHECK(!out[0], "lessons in the database after %s:\n%s", kf_strstatus(st), out);
    } else {
        json_t *sj = distill_summary ? json_loads(distill_summary, 0, NULL) : NULL;
        FCHECK(sj && json_integer_value(json_object_get(sj, "nodes")) == 2,
               "KF_OK without a whole summary: %s", distill_summary ? distill_summary : "(null)");
        json_decref(sj);
        /* the same lessons as the reference call's, ids and all */
        kf_buf b;
        kf_buf_init(&b, 1u << 20);
        for (const char *p = out; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
            const char *e = !strncmp(p, "{\"id\":\"", 7) ? strchr(p + 7, '"') : NULL;
            if (e) kf_buf_printf(&b, "%.*s\n", (int)(e - p - 7), p + 7);
        }
        if (!faulted) snprintf(distill_ref, sizeof distill_ref, "%s", b.p ? b.p : "");
        FCHECK(!strcmp(b.p ? b.p : "", distill_ref), "KF_OK with other lessons:\n%s\nnot\n%s", b.p ? b.p : "",
               distill_ref);
        kf_buf_free(&b);
    }
    free(out);
    free(distill_summary);
    distill_summary = NULL;
    kf_lessons_close(db);
    kf_ctx_free(ctx);
}

static char *export_json;
static int64_t export_node;

static void export_setup(fcase *c) {
    run_setup(c);
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = kft_task(ctx, "tasks/c/saxpy");
    kf_store *st = NULL;
    CHECKF(kf_store_create(ctx, scratch_path("erun"), t, NULL, &st) == KF_OK, "%s", kf_errmsg(ctx));
    char *src = NULL;
    size_t len = 0;
    CHECK(kf__read_file(kft_src("tasks/c/saxpy/candidates/fast.c"), 1u << 20, &src, &len) == 0);
    export_node = kft_kept_node(st, t, src, len, "c", 1.5);
    free(src);
    kf_store_close(st);
    kf_task_free(t);
    kf_ctx_free(ctx);
    CHECK(mkdir(scratch_path("e"), 0755) == 0);
}

static void export_prepare(fcase *c) { kf__rmtree(scratch_path("e/out")); }

static kf_status export_call(fcase *c, kf_ctx *ctx) {
    kf_opts o;
    kf_opts_init(&o);
    o.bench_min_time_s = 0.01;
    o.bench_min_runs = 3;
    o.bench_max_runs = 4;
    o.hidden_count = 1;
    export_json = NULL;
    return kf_run_export_opts(ctx, scratch_path("erun"), scratch_path("e/out"), &o, &export_json);
}

static void export_verify(fcase *c, kf_status st, int faulted) {
    char why[512] = "";
    int fin = 0;
    FCHECK(run_nodes(scratch_path("erun"), &fin, why, sizeof why) == 1 && fin == 1,
           "the run is not whole: %s", why);
    FCHECK(entries(scratch_path("tmp")) == 0, "scratch files left in %s", scratch_path("tmp"));
    if (st) {
        FCHECK(!export_json, "an error, yet a document was handed out");
        /* nothing half-written: no DIR, nor DIR.tmp-* or DIR.old-* beside it */
        FCHECK(entries(scratch_path("e")) == 0, "%d files left in %s after %s", entries(scratch_path("e")),
               scratch_path("e"), kf_strstatus(st));
        return;
    }
    FCHECK(entries(scratch_path("e")) == 1, "more than DIR in %s", scratch_path("e"));
    json_t *j = export_json ? json_loads(export_json, 0, NULL) : NULL;
    FCHECK(j, "KF_OK without EXPORT.json's text");
    json_t *onfile = json_load_file(scratch_path("e/out/EXPORT.json"), 0, NULL);
    FCHECK(onfile && json_equal(j, onfile), "EXPORT.json on disk is not the document returned");
    /* the dispatcher written, or rejected by its verification (a loaded machine's timing
     * may refuse it) and said why */
    FCHECK(
        json_integer_value(json_object_get(j, "fallback")) == export_node &&
            (json_is_string(json_object_get(j, "dispatcher")) || json_is_string(json_object_get(j, "why"))),
        "KF_OK, yet no dispatcher and no why: %s", export_json);
    char path[600];
    snprintf(path, sizeof path, "%s/saxpy_%lld.c", scratch_path("e/out"), (long long)export_node);
    FCHECK(exists(path), "the winner's file is missing");
    if (json_is_string(json_object_get(j, "dispatcher"))) {
        snprintf(path, sizeof path, "%s/%s", scratch_path("e/out"),
                 json_string_value(json_object_get(j, "dispatcher")));
        FCHECK(exists(path), "the dispatcher's file is missing");
    }
    json_decref(onfile);
    json_decref(j);
    free(export_json);
    export_json = NULL;
}

/* ---- registration ------------------------------------------------------------------- */

#define ALL ((1u << KFT_FAULT_ALLOC) | (1u << KFT_FAULT_SPAWN) | (1u << KFT_FAULT_WRITE))
#define NO_SPAWN ((1u << KFT_FAULT_ALLOC) | (1u << KFT_FAULT_WRITE))

static fcase cases[] = {
    /* a task load only reads: no process, no write */
    {"task load", "task_load", 1u << KFT_FAULT_ALLOC, 64, 200, NULL, NULL, task_call, task_verify, 0},
    {"check (cold cache)", "check_cold", ALL, 8, 16, check_setup, check_prepare, check_call, check_verify, 0},
    {"check (warm cache)", "check_warm", ALL, 16, 32, check_setup, check_prepare, check_call, check_verify,
     0},
    {"store writes", "store", NO_SPAWN, 64, 200, store_setup, store_prepare, store_call, store_verify, 0},
    {"lessons import", "lessons_import", NO_SPAWN, 64, 120, NULL, lessons_prepare, lessons_call,
     lessons_verify, 0},
    /* a run, and an export's verification, take seconds: every kind is sampled */
    {"run (builtin, budget 2)", "run", ALL, 3, 4, run_setup, run_prepare, run_call, run_verify, ALL},
    {"distill", "distill", NO_SPAWN, 16, 40, distill_setup, distill_prepare, distill_call, distill_verify, 0},
    {"export", "export", ALL, 4, 10, export_setup, export_prepare, export_call, export_verify, ALL},
};

void kft_register_fault(void) {
    static const kft_fn fn[] = {t_alloc, t_spawn, t_write};
    const char *every = getenv("KFT_FAULT_STRIDE"); /* every event: an hour may be needed */
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (int k = 0; k < KFT_FAULT_KINDS; k++) {
            if (!(cases[i].kinds & (1u << k))) continue;
            char name[96];
            snprintf(name, sizeof name, "fault/%s/%s", cases[i].slug, kft_fault_name((kft_fault_kind)k));
            kft_add(name, fn[k], &cases[i], every && *every ? 3600 : 300);
        }
}
