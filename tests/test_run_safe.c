/*
 * test_run_safe.c - a run neither loses nor doubles work, and never blames a candidate
 * for the machine (docs/run.md "One writer at a time", "Environment failures",
 * "Creation"): one writer at a time on a run directory, readers alongside, and no lock
 * left by a killed holder; an evaluation the environment failed records nothing and
 * stops the run (exit 5), resumable; a creation killed at any write leaves a directory
 * that resume or a new run accepts; a resume never evaluates past its budget; an
 * interrupted attempt's Critic approval does not count for the node's next attempt.
 */
#define _GNU_SOURCE
#include "kft.h"
#include "fault.h"

#include "store/store.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char quick[] = "--min-runs 5 --max-runs 8 --min-time 0.01 --hidden 1";

static int cli(const char *args, char *out, size_t n) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "cd %s && %s %s", kft_src("."), kft_bin("kforge"), args);
    return kft_run(cmd, out, n);
}

static json_t *tree_json(const char *run) {
    char args[600], out[1 << 16];
    snprintf(args, sizeof args, "tree %s --json", run);
    if (cli(args, out, sizeof out)) return NULL;
    return json_loads(out, 0, NULL);
}

/* A node of tree --json by id, borrowed from j. */
static json_t *tree_node(json_t *j, int64_t id) {
    size_t i;
    json_t *nd;
    json_array_foreach(json_object_get(j, "nodes"), i, nd) {
        if (json_integer_value(json_object_get(nd, "id")) == id) return nd;
    }
    return NULL;
}

/* One writer at a time: while a run holds the directory, a second run, a resume, next
 * and submit fail at once with exit 4 naming the holder; tree and best still read it. A
 * holder killed with SIGKILL leaves no lock: tool-mode commands work at once, one after
 * another. */
static void t_lock(const void *arg) {
    (void)arg;
    char dir[] = "/tmp/kft-lock-XXXXXX", run[256], args[1024], out[1 << 16], lock[300];
    CHECK(mkdtemp(dir));
    snprintf(run, sizeof run, "%s/r", dir);
    snprintf(args, sizeof args, "run tasks/c/sum --budget 1 --seed 3 --run %s %s 2>&1", run, quick);
    CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        int nul = open("/dev/null", 1);
        dup2(nul, 1);
        dup2(nul, 2);
        if (chdir(kft_src(".")) != 0) _exit(99);
        execl(kft_bin("kforge"), "kforge", "run", "--resume", run, "--budget", "60", "--min-runs", "5",
              "--min-time", "0.5", "--hidden", "1", (char *)NULL);
        _exit(98);
    }
    /* the holder has the lock once its line names it */
    snprintf(lock, sizeof lock, "%s/lock", run);
    char want[64];
    snprintf(want, sizeof want, "pid=%d ", (int)pid);
    int held = 0;
    for (int i = 0; i < 400 && !held; i++) {
        char *text = NULL;
        size_t len = 0;
        if (!kf__read_file(lock, 4096, &text, &len) && strstr(text, want)) held = 1;
        free(text);
        if (!held) usleep(50000);
    }
    CHECKF(held, "the resumed run never took the lock");
    char holder[64];
    snprintf(holder, sizeof holder, "(pid %d on ", (int)pid);
    static const char *const writers[] = {"run --resume %s --budget 60",
                                          "run tasks/c/sum --budget 2 --run %s", "next %s",
                                          "submit %s --parent 0 tasks/c/sum/candidates/fast.c"};
    for (size_t i = 0; i < sizeof writers / sizeof *writers; i++) {
        char cmd[600];
        snprintf(cmd, sizeof cmd, writers[i], run);
        snprintf(args, sizeof args, "%s 2>&1", cmd);
        double t0 = (double)kf__now_ns() / 1e9;
        int rc = cli(args, out, sizeof out);
        double took = (double)kf__now_ns() / 1e9 - t0;
        CHECKF(rc == 4 && strstr(out, "in use by kforge run --resume") && strstr(out, holder),
               "%s: exit %d: %s", cmd, rc, out);
        CHECKF(took < 5, "%s waited %.1f s for the lock", cmd, took);
    }
    snprintf(args, sizeof args, "next %s --json 2>&1", run);
    CHECKF(cli(args, out, sizeof out) == 4 && strstr(out, "\"error\""), "%s", out);
    /* readers read */
    snprintf(args, sizeof args, "tree %s 2>&1", run);
    CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
    snprintf(args, sizeof args, "best %s --json 2>&1", run);
    CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
    kill(pid, SIGKILL);
    int status;
    waitpid(pid, &status, 0);
    /* the kernel dropped the lock with its holder: an agent's commands work in turn */
    for (int k = 0; k < 2; k++) {
        snprintf(args, sizeof args, "next %s --json 2>&1", run);
        CHECKF(cli(args, out, sizeof out) == 0, "next after the holder was killed: %s", out);
    }
    snprintf(args, sizeof args, "run --resume %s --budget 2 %s 2>&1", run, quick);
    CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
    kf__rmtree(dir);
}

/* An evaluation the environment failed (a full TMPDIR; no compiler) is not the
 * candidate's: nothing recorded or learnt, the run stops with exit 5 saying what and
 * where, and resumes once the environment is back. */
static void t_env_failure(const void *arg) {
    (void)arg;
    char dir[] = "/tmp/kft-env-XXXXXX", run[256], tiny[256], args[1400], out[1 << 16];
    CHECK(mkdtemp(dir));
    snprintf(run, sizeof run, "%s/r", dir);
    snprintf(tiny, sizeof tiny, "%s/tiny", dir);
    CHECK(mkdir(tiny, 0755) == 0);
    /* a full file system where one can be mounted (root), else a TMPDIR that is not there;
     * in a mount namespace of this test's own, so that it goes with the test, failed or
     * not (the kforge commands below are its children and see it) */
    int mounted = unshare(CLONE_NEWNS) == 0 && mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0 &&
                  mount("tmpfs", tiny, "tmpfs", 0, "size=64k") == 0;
    const char *want = mounted ? "No space left on device" : "No such file or directory";
    if (!mounted) snprintf(tiny, sizeof tiny, "%s/missing", dir);
    printf("    TMPDIR: %s\n",
           mounted ? "a full 64 KiB tmpfs" : "a directory that does not exist (no tmpfs here)");
    snprintf(args, sizeof args, "TMPDIR=%s %s run tasks/c/saxpy --budget 3 --seed 2 --run %s %s 2>&1", tiny,
             kft_bin("kforge"), run, quick);
    char cmd[2000];
    snprintf(cmd, sizeof cmd, "cd %s && %s", kft_src("."), args);
    int rc = kft_run(cmd, out, sizeof out);
    CHECKF(rc == 5 && strstr(out, "the environment failed") && strstr(out, want) && strstr(out, tiny) &&
               strstr(out, "--resume"),
           "exit %d: %s", rc, out);
    json_t *j = tree_json(run);
    CHECK(j);
    json_t *nodes = json_object_get(j, "nodes");
    CHECKF(json_array_size(nodes) == 1 &&
               !strcmp(json_string_value(json_object_get(json_array_get(nodes, 0), "state")), "proposed"),
           "the failed evaluation was recorded against the candidate: %s", json_dumps(j, 0));
    CHECKF(json_array_size(json_object_get(j, "constraints")) == 0,
           "a constraint was learnt from the machine");
    CHECK(!json_object_get(json_array_get(nodes, 0), "diagnosis"));
    json_decref(j);
    /* a missing compiler is the machine's too; tool mode's submit says so the same way */
    snprintf(cmd, sizeof cmd, "cd %s && CC=%s/no-cc %s run --resume %s --budget 3 2>&1", kft_src("."), dir,
             kft_bin("kforge"), run);
    rc = kft_run(cmd, out, sizeof out);
    CHECKF(rc == 5 && strstr(out, "compiler"), "exit %d: %s", rc, out);
    /* a compiler that is there but cannot start (its interpreter is missing). Not under
     * ASan: there the compiler's child dies in ASan's runtime ("Failed to mmap", under
     * the compiler's address-space limit) before it can say that its exec failed */
#if !defined(__SANITIZE_ADDRESS__)
    char badcc[400];
    snprintf(badcc, sizeof badcc, "%s/badcc", dir);
    FILE *f = fopen(badcc, "w");
    CHECK(f && fputs("#!/nonexistent/interpreter\n", f) >= 0 && !fclose(f) && !chmod(badcc, 0755));
    snprintf(cmd, sizeof cmd, "cd %s && CC=%s %s run --resume %s --budget 3 2>&1", kft_src("."), badcc,
             kft_bin("kforge"), run);
    rc = kft_run(cmd, out, sizeof out);
    CHECKF(rc == 5 && strstr(out, "could not start"), "exit %d: %s", rc, out);
#endif
    snprintf(cmd, sizeof cmd,
             "cd %s && TMPDIR=%s %s submit %s --parent 0 tasks/c/saxpy/candidates/fast.c 2>&1", kft_src("."),
             tiny, kft_bin("kforge"), run);
    rc = kft_run(cmd, out, sizeof out);
    CHECKF(rc == 5 && strstr(out, "the environment failed"), "submit: exit %d: %s", rc, out);
    if (mounted) umount2(tiny, MNT_DETACH);
    /* the space is back: the interrupted nodes are evaluated, the run goes on */
    snprintf(args, sizeof args, "run --resume %s --budget 3 --json %s 2>&1", run, quick);
    CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
    j = tree_json(run);
    CHECK(j);
    size_t i;
    json_t *nd;
    int finished = 0;
    json_array_foreach(json_object_get(j, "nodes"), i, nd) {
        const char *s = json_string_value(json_object_get(nd, "state"));
        CHECKF(strcmp(s, "crashed"), "node %zu crashed: %s", i, json_dumps(nd, 0));
        finished += strcmp(s, "proposed") != 0;
    }
    CHECKF(finished == 3, "%d finished: %s", finished, json_dumps(j, 0));
    json_decref(j);
    kf__rmtree(dir);
}

/* Every state a kill during creation can leave, one write at a time (the fault seams
 * kill the creator just before its Nth write): a complete run, or a directory a new run
 * takes; resume says what happened. An empty run.db, as older kforge left it, is taken
 * too. */
static void t_create_kill(const void *arg) {
    (void)arg;
    char dir[] = "/tmp/kft-mk-XXXXXX", run[300];
    CHECK(mkdtemp(dir));
    CHECK(kft_fault_libs() == 0);
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = kft_task(ctx, "tasks/c/saxpy");
    kf_store *s = NULL;
    snprintf(run, sizeof run, "%s/count", dir);
    kft_fault_arm(KFT_FAULT_WRITE, 0, 0);
    kf_status st = kf_store_create(ctx, run, t, "{}", &s);
    kft_fault_disarm();
    long total = kft_fault_count(KFT_FAULT_WRITE);
    CHECKF(st == KF_OK, "%s", kf_errmsg(ctx));
    kf_store_close(s);
    CHECKF(total > 5, "%ld writes counted", total);
    int complete = 0, taken = 0;
    for (long n = 1; n <= total + 1; n++) {
        snprintf(run, sizeof run, "%s/k%ld", dir, n);
        pid_t pid = fork();
        CHECK(pid >= 0);
        if (pid == 0) {
            kf_ctx *c = kf_ctx_new();
            kf_store *cs = NULL;
            kft_fault_arm_kill(KFT_FAULT_WRITE, n);
            kf_status cst = kf_store_create(c, run, t, "{}", &cs);
            _exit(cst == KF_OK ? 0 : 1);
        }
        int status;
        waitpid(pid, &status, 0);
        CHECKF(n > total || (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL), "write %ld: not killed", n);
        if (kf_store_open(ctx, run, t, &s) == KF_OK) {
            CHECKF(kf_store_check(s) == KF_OK && !strcmp(kf_store_seal_state(s), "sealed"),
                   "killed at write %ld: a run that is not whole: %s", n, kf_store_seal_state(s));
            kf_store_close(s);
            complete++;
            continue;
        }
        struct stat sb;
        char src[400];
        snprintf(src, sizeof src, "%s/src", run);
        if (stat(src, &sb) == 0)
            CHECKF(strstr(kf_errmsg(ctx), "interrupted"), "killed at write %ld: resume says: %s", n,
                   kf_errmsg(ctx));
        /* a new run takes the directory */
        CHECKF(kf_store_create(ctx, run, t, "{}", &s) == KF_OK,
               "killed at write %ld: a new run is refused: %s", n, kf_errmsg(ctx));
        kf_store_close(s);
        CHECKF(kf_store_open(ctx, run, t, &s) == KF_OK, "%s", kf_errmsg(ctx));
        kf_store_close(s);
        taken++;
    }
    CHECKF(complete >= 1 && taken >= 1, "%d complete, %d taken over", complete, taken);
    printf("    killed before each of %ld writes, and after the last: %d whole runs, %d taken by a new run\n",
           total, complete, taken);
    /* what an interrupted creation by an older kforge left: an empty run.db */
    snprintf(run, sizeof run, "%s/old", dir);
    CHECK(mkdir(run, 0755) == 0);
    char db[400];
    snprintf(db, sizeof db, "%s/run.db", run);
    FILE *f = fopen(db, "w");
    CHECK(f && !fclose(f));
    CHECKF(kf_store_create(ctx, run, t, "{}", &s) == KF_OK, "%s", kf_errmsg(ctx));
    CHECK(kf_store_replaced(s) == 1);
    kf_store_close(s);
    /* a run that exists is never replaced */
    CHECK(kf_store_create(ctx, run, t, "{}", &s) == KF_EUSAGE &&
          strstr(kf_errmsg(ctx), "already holds a run"));
    kf_task_free(t);
    kf_ctx_free(ctx);
    kf__rmtree(dir);
}

/* Adds n interrupted nodes (proposed, never evaluated: what a kill with evaluations in
 * flight leaves) to run, each with a distinct text. */
static void add_interrupted(const char *run, int n, const char *src_rel) {
    kf_ctx *ctx = kf_ctx_new();
    kf_store *s = NULL;
    CHECKF(kf_store_open(ctx, run, NULL, &s) == KF_OK, "%s", kf_errmsg(ctx));
    char *text = NULL;
    size_t len = 0;
    CHECK(kf__read_file(kft_src(src_rel), 1 << 20, &text, &len) == 0);
    for (int i = 0; i < n; i++) {
        char *t2 = kf__asprintf("%s\n/* interrupted %d */\n", text, i);
        kf_node nd;
        memset(&nd, 0, sizeof nd);
        CHECK(kf_store_put_source(s, t2, strlen(t2), "c", nd.src_hash) == KF_OK);
        snprintf(nd.ext, sizeof nd.ext, "c");
        snprintf(nd.proposer, sizeof nd.proposer, "tool");
        snprintf(nd.category, sizeof nd.category, "other");
        CHECKF(kf_store_add_node(s, &nd) == KF_OK, "%s", kf_errmsg(ctx));
        free(t2);
    }
    free(text);
    kf_store_close(s);
    kf_ctx_free(ctx);
}

static size_t unfinished(const char *run) {
    kf_ctx *ctx = kf_ctx_new();
    kf_store *s = NULL;
    int64_t *ids = NULL;
    size_t n = 99;
    CHECK(kf_store_open(ctx, run, NULL, &s) == KF_OK && kf_store_unfinished(s, &ids, &n) == KF_OK);
    free(ids);
    kf_store_close(s);
    kf_ctx_free(ctx);
    return n;
}

/* The budget counts evaluations started: a resume whose interrupted nodes outnumber
 * what is left of its budget evaluates only as many as fit (never 5 of 4), and leaves
 * the rest for a resume with more. */
static void t_budget_resume(const void *arg) {
    (void)arg;
    char dir[] = "/tmp/kft-bud-XXXXXX", run[256], args[1024], out[1 << 16];
    CHECK(mkdtemp(dir));
    snprintf(run, sizeof run, "%s/r", dir);
    snprintf(args, sizeof args, "run tasks/c/saxpy --budget 2 --seed 4 --run %s %s 2>&1", run, quick);
    CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
    add_interrupted(run, 3, "tasks/c/saxpy/candidates/fast.c");
    for (int jobs = 2, budget = 4; budget <= 5; budget++) {
        snprintf(args, sizeof args, "run --resume %s --budget %d --jobs %d --json %s 2>/dev/null", run,
                 budget, jobs, quick);
        CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
        json_t *j = json_loads(out, 0, NULL);
        CHECKF(json_integer_value(json_object_get(j, "evaluations")) == budget, "--budget %d: %s", budget,
               out);
        json_decref(j);
        size_t left = unfinished(run);
        CHECKF(left == (size_t)(5 - budget), "--budget %d: %zu left unfinished", budget, left);
    }
    kf__rmtree(dir);
}

/* An approval belongs to one attempt of one node: a resumed node's evaluation needs its
 * own. The store refuses `kept` on an interrupted attempt's approval, and tree shows no
 * stale decision on the node's new outcome. */
static void t_attempt_approval(const void *arg) {
    (void)arg;
    char dir[] = "/tmp/kft-att-XXXXXX", run[256], args[1024], out[1 << 16];
    CHECK(mkdtemp(dir));
    snprintf(run, sizeof run, "%s/r", dir);
    snprintf(args, sizeof args, "run tasks/c/saxpy --budget 0 --run %s 2>&1", run);
    CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
    /* node 1: a wrong kernel; node 2: an honest one. Each had an attempt that the Critic
     * approved before the process was killed */
    add_interrupted(run, 1, "tests/redteam/01_first_half.c");
    add_interrupted(run, 1, "tasks/c/saxpy/candidates/fast.c");
    kf_ctx *ctx = kf_ctx_new();
    kf_store *s = NULL;
    CHECK(kf_store_open(ctx, run, NULL, &s) == KF_OK);
    static const char approve[] =
        "{\"decision\":\"approve\",\"why\":\"an interrupted attempt\",\"checks\":[]}";
    for (int64_t id = 1; id <= 2; id++) CHECK(kf_store_event(s, id, "critic", approve) == KF_OK);
    /* node 2's next attempt begins: the old approval does not make it kept */
    CHECK(kf_store_event(s, 2, "attempt", "{\"resumed\":true}") == KF_OK);
    kf_node n;
    CHECK(kf_store_get_node(s, 2, &n) == KF_OK);
    n.state = KF_NODE_KEPT;
    n.speedup = 1.5;
    n.finished = 0;
    kf_status st = kf_store_finish_node(s, &n);
    CHECKF(st == KF_EUSAGE && strstr(kf_errmsg(ctx), "only the Critic"),
           "kept on an interrupted attempt's approval: %s", kf_strstatus(st));
    /* its own approval does */
    CHECK(kf_store_event(s, 2, "critic", approve) == KF_OK);
    CHECKF(kf_store_finish_node(s, &n) == KF_OK, "%s", kf_errmsg(ctx));
    kf_node_free(&n);
    kf_store_close(s);
    kf_ctx_free(ctx);
    /* an unfinished node has no decision yet */
    json_t *j = tree_json(run);
    CHECKF(j && tree_node(j, 1) && !json_object_get(tree_node(j, 1), "critic"), "%s", json_dumps(j, 0));
    json_decref(j);
    /* the resume evaluates node 1 again (node 2 is the first evaluation of the budget):
     * rejected, with no Critic decision of its own */
    snprintf(args, sizeof args, "run --resume %s --budget 2 %s 2>&1", run, quick);
    CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
    j = tree_json(run);
    json_t *n1 = tree_node(j, 1);
    CHECKF(n1 && !strcmp(json_string_value(json_object_get(n1, "state")), "rejected"), "%s",
           json_dumps(j, 0));
    CHECKF(!json_object_get(n1, "critic"), "node 1 shows an interrupted attempt's decision: %s",
           json_dumps(n1, 0));
    json_t *n2 = tree_node(j, 2);
    CHECKF(n2 && json_object_get(n2, "critic"), "%s", json_dumps(j, 0));
    json_decref(j);
    kf__rmtree(dir);
}

/* The nodes of run that are unfinished, and whether every node's source reads back. */
static size_t run_state(const char *run, int *sources_ok, int *crashed) {
    kf_ctx *ctx = kf_ctx_new();
    kf_store *s = NULL;
    size_t left = 0;
    *sources_ok = 1;
    *crashed = 0;
    CHECKF(kf_store_open(ctx, run, NULL, &s) == KF_OK && kf_store_check(s) == KF_OK, "%s", kf_errmsg(ctx));
    for (int64_t id = 1;; id++) {
        kf_node nd;
        if (kf_store_get_node(s, id, &nd)) break;
        char *text = NULL;
        size_t len = 0;
        if (kf_store_read_source(s, nd.src_hash, nd.ext, &text, &len)) *sources_ok = 0;
        left += kf_node_state_unfinished(nd.state);
        *crashed += nd.state == KF_NODE_CRASHED;
        free(text);
        kf_node_free(&nd);
    }
    kf_store_close(s);
    kf_ctx_free(ctx);
    return left;
}

/* `kforge run --resume run --budget budget` in this process (the fsync seam sees it). */
static kf_status resume_here(kf_ctx *ctx, const char *run, int budget) {
    kf_run_opts o;
    kf_run_opts_init(&o);
    o.run_dir = run;
    o.resume = 1;
    o.budget = budget;
    o.hidden = 1;
    o.min_runs = 5;
    o.max_runs = 8;
    o.min_time_s = 0.01;
    char *sum = NULL;
    kf_status st = kf_run(ctx, &o, &sum);
    free(sum);
    return st;
}

/* A new source is synced on the store's syncer while its evaluation runs (docs/run.md
 * "Crash safety"). An fsync that fails there (a full disk) stops the run as a failed
 * write, with the system's message, before the outcome that names the source is
 * recorded: the node stays unfinished and a resume evaluates it. A kill at any of those
 * fsyncs (the text written and renamed, not yet synced) leaves a run that resumes
 * whole. */
static void t_source_sync(const void *arg) {
    (void)arg;
    char dir[] = "/tmp/kft-sync-XXXXXX", run[256], args[1024], out[1 << 16];
    CHECK(mkdtemp(dir));
    snprintf(run, sizeof run, "%s/full", dir);
    snprintf(args, sizeof args, "run tasks/c/saxpy --budget 0 --seed 5 --run %s 2>&1", run);
    CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
    CHECK(chdir(kft_src(".")) == 0);
    kf_ctx *ctx = kf_ctx_new();
    kft_fault_fsync(1, ENOSPC); /* a resume's first fsync: its first new source's */
    kf_status st = resume_here(ctx, run, 2);
    kft_fault_fsync(0, 0);
    CHECKF(st == KF_EIO && strstr(kf_errmsg(ctx), "fsync: No space left on device") &&
               strstr(kf_errmsg(ctx), "not recorded"),
           "%s: %s", kf_strstatus(st), kf_errmsg(ctx));
    int ok, crashed;
    CHECKF(run_state(run, &ok, &crashed) == 1 && ok && !crashed, "not one node left unfinished, whole");
    snprintf(args, sizeof args, "run --resume %s --budget 2 %s 2>&1", run, quick);
    CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
    CHECKF(run_state(run, &ok, &crashed) == 0 && ok && !crashed, "the resume left the run unfinished");
    for (long k = 1; k <= 3; k++) {
        snprintf(run, sizeof run, "%s/kill%ld", dir, k);
        snprintf(args, sizeof args, "run tasks/c/saxpy --budget 0 --seed 6 --run %s 2>&1", run);
        CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
        fflush(NULL);
        pid_t pid = fork();
        CHECK(pid >= 0);
        if (pid == 0) {
            int nul = open("/dev/null", O_WRONLY);
            dup2(nul, 1);
            dup2(nul, 2);
            kf_ctx *c = kf_ctx_new();
            kft_fault_fsync(k, 0);
            _exit(resume_here(c, run, 3) == KF_OK ? 0 : 1);
        }
        int status;
        CHECK(waitpid(pid, &status, 0) == pid);
        CHECKF(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "fsync %ld: not killed (status %d)", k,
               status);
        snprintf(args, sizeof args, "run --resume %s --budget 3 %s 2>&1", run, quick);
        CHECKF(cli(args, out, sizeof out) == 0, "killed at fsync %ld, the resume: %s", k, out);
        CHECKF(run_state(run, &ok, &crashed) == 0 && ok && !crashed,
               "killed at fsync %ld: after the resume, a node unfinished, crashed or without its text", k);
    }
    kf_ctx_free(ctx);
    kf__rmtree(dir);
}

void kft_register_run_safe(void) {
    kft_add("run_safe/lock", t_lock, NULL, 180);
    kft_add("run_safe/env_failure", t_env_failure, NULL, 180);
    kft_add("run_safe/create_kill", t_create_kill, NULL, 120);
    kft_add("run_safe/source_sync", t_source_sync, NULL, 240);
    kft_add("run_safe/budget_resume", t_budget_resume, NULL, 180);
    kft_add("run_safe/attempt_approval", t_attempt_approval, NULL, 120);
}
