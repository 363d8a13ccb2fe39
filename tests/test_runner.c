/*
 * test_runner.c - kf-tests itself, run as a command: names are GROUP/NAME and unique,
 * --list and the fast tier, exact names, patterns and substrings as filters, a filter
 * that matches nothing as an error (exit 2), --in-process running a test in the runner's
 * own process, and the verdict of a forked test that passes, fails, skips, crashes or
 * hangs past its timeout.
 *
 * The last cases need tests that misbehave on purpose: with KFT_FIXTURE set (in the
 * environment of the kf-tests these tests start, never in a normal run) this suite also
 * registers runner/fixture, which does what KFT_FIXTURE says (pass, fail, skip, crash,
 * hang, pid), under KFT_FIXTURE_TIMEOUT seconds, and runner/fixture_b, which passes.
 */
#define _GNU_SOURCE
#include "kft.h"

#include <limits.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

static char out[1 << 20];

/* Run this kf-tests binary with args (a shell fragment), the environment prefix env
 * (may be ""), stderr into the captured output. */
static int self(const char *env, const char *args) {
    char exe[PATH_MAX], cmd[PATH_MAX + 1024];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    CHECK(n > 0);
    exe[n] = 0;
    snprintf(cmd, sizeof cmd, "%s '%s' %s 2>&1", env, exe, args);
    return kft_run(cmd, out, sizeof out);
}

static int count_lines(const char *s) {
    int n = 0;
    for (; *s; s++) n += *s == '\n';
    return n;
}

/* The last line of the captured output (the summary line of a run). */
static const char *last_line(void) {
    size_t n = strlen(out);
    while (n && out[n - 1] == '\n') out[--n] = 0;
    const char *nl = strrchr(out, '\n');
    return nl ? nl + 1 : out;
}

static void t_fixture(const void *arg) {
    (void)arg;
    const char *what = getenv("KFT_FIXTURE");
    if (!what || !strcmp(what, "pass")) return;
    if (!strcmp(what, "fail")) kft_fail_at(__FILE__, __LINE__, "the fixture fails on purpose");
    if (!strcmp(what, "skip")) kft_skip("the fixture skips on purpose");
    if (!strcmp(what, "crash")) abort();
    if (!strcmp(what, "hang"))
        for (;;) pause();
    if (!strcmp(what, "pid")) {
        printf("fixture pid %d\n", (int)getpid());
        return;
    }
    kft_fail_at(__FILE__, __LINE__, "unknown KFT_FIXTURE '%s'", what);
}

static void t_pass(const void *arg) { (void)arg; }

static void t_list(const void *arg) {
    (void)arg;
    CHECK(self("", "--list") == 0);
    CHECKF(!strstr(out, "kf-tests: "), "%.2000s", out); /* no tier rule without a test */
    static char all[1 << 20];
    snprintf(all, sizeof all, "%s", out);
    int n = count_lines(all);
    CHECKF(n > 100, "%d tests listed", n);
    /* every line a GROUP/NAME, and no name twice */
    char **names = calloc((size_t)n, sizeof *names), *save = NULL;
    CHECK(names);
    int k = 0;
    for (char *l = strtok_r(out, "\n", &save); l && k < n; l = strtok_r(NULL, "\n", &save)) {
        CHECKF(strchr(l, '/') && !strchr(l, ' '), "listed: '%s'", l);
        for (int j = 0; j < k; j++) CHECKF(strcmp(names[j], l), "'%s' is listed twice", l);
        names[k++] = l;
    }
    CHECK(k == n);
    free(names);
    CHECK(strstr(all, "runner/list\n") && strstr(all, "unit/rng\n") && strstr(all, "lessons/cli\n"));
    CHECK(!strstr(all, "runner/fixture")); /* only with KFT_FIXTURE */
    /* the fast tier: a part of the whole, with this test in it and the slow groups not */
    CHECK(self("", "--list --fast") == 0);
    int nfast = count_lines(out);
    CHECKF(nfast > 20 && nfast < n, "%d fast of %d", nfast, n);
    CHECK(strstr(out, "runner/list\n") && strstr(out, "check/seeds\n"));
    CHECK(!strstr(out, "loop/") && !strstr(out, "export/") && !strstr(out, "run_agents/"));
    /* -v: the tier and the timeout */
    CHECK(self("", "--list -v unit/rng") == 0);
    CHECKF(strstr(out, "unit/rng") && strstr(out, " fast ") && strstr(out, " s\n") && count_lines(out) == 1,
           "%s", out);
    CHECK(self("", "--list -v loop/kill_resume") == 0 && strstr(out, " slow "));
    CHECK(self("", "--help") == 0 && strstr(out, "usage: kf-tests") && strstr(out, "Exit status"));
}

static void t_filters(const void *arg) {
    (void)arg;
    const char *fx = "KFT_FIXTURE=pass";
    /* an exact name alone, a substring all that contain it, a pattern whole names */
    CHECK(self(fx, "--list runner/fixture") == 0 && !strcmp(out, "runner/fixture\n"));
    CHECK(self(fx, "--list runner/fixt") == 0 && count_lines(out) == 2);
    CHECK(self(fx, "--list 'runner/fixture*'") == 0 && count_lines(out) == 2);
    CHECK(self(fx, "--list 'runner/fix?ure_b'") == 0 && !strcmp(out, "runner/fixture_b\n"));
    CHECK(self(fx, "--list 'runner/fix'") == 0 && count_lines(out) == 2);
    CHECK(self("", "--list 'runner/fix'") == 2); /* no fixtures without KFT_FIXTURE */
    /* filters add up */
    CHECK(self(fx, "--list runner/fixture_b unit/rng") == 0 && count_lines(out) == 2);
    /* a filter that matches nothing stops the run, even beside one that matches */
    CHECK(self("", "no_such_test_zz") == 2);
    CHECKF(strstr(out, "no test matches 'no_such_test_zz'") && !strstr(out, "passed"), "%s", out);
    CHECK(self("", "unit/rng no_such_test_zz") == 2 && !strstr(out, "pass unit/rng"));
    CHECK(self("", "'no_such_*'") == 2);
    CHECK(self("", "--fast loop/") == 2 && strstr(out, "no test selected"));
    /* the names before GROUP/NAME still find their tests, with a note */
    CHECK(self("", "--list lessons_cli") == 0 && strstr(out, "'lessons_cli' is now 'lessons/cli'") &&
          strstr(out, "\nlessons/cli\n"));
    /* bad usage */
    CHECK(self("", "-j 0 unit/rng") == 2 && strstr(out, "-j wants"));
    CHECK(self("", "-j x unit/rng") == 2);
    CHECK(self("", "--frobnicate") == 2 && strstr(out, "unknown option"));
    CHECK(self("", "--in-process") == 2);
}

static void t_in_process(const void *arg) {
    (void)arg;
    /* in the runner's own process: the pid the runner names is the test's */
    CHECK(self("KFT_FIXTURE=pid", "--in-process runner/fixture") == 0);
    int runner_pid = 0, test_pid = -1;
    const char *p = strstr(out, "in process ");
    CHECKF(p && sscanf(p, "in process %d", &runner_pid) == 1, "%s", out);
    CHECKF((p = strstr(out, "fixture pid ")) && sscanf(p, "fixture pid %d", &test_pid) == 1, "%s", out);
    CHECKF(runner_pid == test_pid, "runner %d, test %d: %s", runner_pid, test_pid, out);
    CHECK(strstr(out, "pass runner/fixture"));
    /* exit codes: 0 passed, 1 failed, 77 skipped, 2 no such test or several */
    CHECK(self("KFT_FIXTURE=fail", "--in-process runner/fixture") == 1 && strstr(out, "fails on purpose"));
    CHECK(self("KFT_FIXTURE=skip", "--in-process runner/fixture") == 77 && strstr(out, "skips on purpose"));
    CHECK(self("", "--in-process no_such_test_zz") == 2);
    CHECK(self("KFT_FIXTURE=pass", "--in-process runner/fixt") == 2 && strstr(out, "selects 2 tests"));
    CHECK(self("KFT_FIXTURE=pass", "--in-process fixture_b") == 0 && strstr(out, "pass runner/fixture_b"));
    CHECK(self("", "--in-process unit/rng") == 0);
}

static void t_verdicts(const void *arg) {
    (void)arg;
    CHECK(self("KFT_FIXTURE=pass", "runner/fixture") == 0);
    CHECKF(!strcmp(last_line(), "1 passed, 0 failed, 0 skipped"), "%s", out);
    CHECK(self("KFT_FIXTURE=fail", "runner/fixture") == 1);
    CHECK(strstr(out, "FAIL runner/fixture") && strstr(out, "fails on purpose"));
    CHECKF(!strcmp(last_line(), "0 passed, 1 failed, 0 skipped"), "%s", out);
    CHECK(self("KFT_FIXTURE=skip", "runner/fixture") == 0);
    CHECK(strstr(out, "skip runner/fixture") && strstr(out, "skips on purpose"));
    CHECKF(!strcmp(last_line(), "0 passed, 0 failed, 1 skipped"), "%s", out);
    CHECK(self("KFT_FIXTURE=crash", "runner/fixture") == 1);
    CHECKF(strstr(out, "FAIL runner/fixture") && strstr(out, "killed by signal"), "%s", out);
    CHECK(self("KFT_FIXTURE=hang KFT_FIXTURE_TIMEOUT=1", "runner/fixture") == 1);
    CHECKF(strstr(out, "FAIL runner/fixture") && strstr(out, "(timed out)"), "%s", out);
    /* -v shows a passing test's output, which is otherwise kept back */
    CHECK(self("KFT_FIXTURE=pid", "runner/fixture") == 0 && !strstr(out, "fixture pid"));
    CHECK(self("KFT_FIXTURE=pid", "-v -j 1 runner/fixture") == 0 && strstr(out, "fixture pid"));
    /* two at once, both counted */
    CHECK(self("KFT_FIXTURE=pass", "-j 2 runner/fixt") == 0);
    CHECKF(!strcmp(last_line(), "2 passed, 0 failed, 0 skipped"), "%s", out);
}

void kft_register_runner(void) {
    kft_add("runner/list", t_list, NULL, 120);
    kft_add("runner/filters", t_filters, NULL, 120);
    kft_add("runner/in_process", t_in_process, NULL, 120);
    kft_add("runner/verdicts", t_verdicts, NULL, 120);
    if (getenv("KFT_FIXTURE")) {
        const char *to = getenv("KFT_FIXTURE_TIMEOUT");
        kft_add("runner/fixture", t_fixture, NULL, to ? atof(to) : 30);
        kft_add("runner/fixture_b", t_pass, NULL, 30);
    }
}
