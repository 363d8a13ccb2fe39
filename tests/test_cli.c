/*
 * test_cli.c - the command-line contract: exit codes (0 accepted, 1 rejected, 2 usage
 * or task error), the JSON fields scripts rely on, and clear errors on bad input.
 */
#define _GNU_SOURCE
#include "kft.h"

#include "util/util.h"

#include <dirent.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static int kforge(const char *args, char *out, size_t n) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "cd %s && %s %s", kft_src("."), kft_bin("kforge"), args);
    return kft_run(cmd, out, n);
}

static json_t *parse(const char *s) {
    json_error_t e;
    json_t *j = json_loads(s, 0, &e);
    CHECKF(j, "not JSON (%s): %.300s", e.text, s);
    return j;
}

/* The process groups of the processes whose command line holds `mark` (at most n). */
static int groups_of(const char *mark, pid_t *g, int n) {
    int k = 0;
    DIR *d = opendir("/proc");
    struct dirent *e;
    while (d && (e = readdir(d))) {
        char path[300], buf[4096];
        if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;
        snprintf(path, sizeof path, "/proc/%s/cmdline", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        size_t m = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        for (size_t i = 0; i < m; i++)
            if (!buf[i]) buf[i] = ' ';
        buf[m] = 0;
        if (!strstr(buf, mark)) continue;
        pid_t pg = getpgid((pid_t)strtol(e->d_name, NULL, 10));
        int seen = 0;
        for (int i = 0; i < k; i++) seen |= g[i] == pg;
        if (pg > 0 && !seen && k < n) g[k++] = pg;
    }
    if (d) closedir(d);
    return k;
}

/* A live (not zombie) process in process group pg, or 0. */
static pid_t alive_in(pid_t pg) {
    pid_t found = 0;
    DIR *d = opendir("/proc");
    struct dirent *e;
    while (d && (e = readdir(d)) && !found) {
        char path[300], buf[1024];
        if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;
        snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        size_t m = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[m] = 0;
        char *p = strrchr(buf, ')'), state;
        int ppid, pgrp;
        if (p && sscanf(p + 2, "%c %d %d", &state, &ppid, &pgrp) == 3 && pgrp == pg && state != 'Z' &&
            state != 'X')
            found = (pid_t)strtol(e->d_name, NULL, 10);
    }
    if (d) closedir(d);
    return found;
}

/* kill -9 of kforge during a compile: nothing of the compiler's process groups is left
 * (the driver's own children included: a stand-in compiler that starts one and waits). */
static void t_compile_dies_with_kforge(const void *arg) {
    (void)arg;
    char dir[] = "/tmp/kft-ccdie-XXXXXX", bin[300], cc[320], mark[32];
    CHECK(mkdtemp(dir));
    snprintf(bin, sizeof bin, "%s/bin", dir);
    CHECK(mkdir(bin, 0755) == 0);
    snprintf(cc, sizeof cc, "%s/cc", bin);
    snprintf(mark, sizeof mark, "%d.%d", 80 + (int)(getpid() % 17), (int)getpid());
    FILE *f = fopen(cc, "w");
    CHECK(f);
    fprintf(f, "#!/bin/sh\n/bin/sleep %s &\nwait\n", mark);
    fclose(f);
    CHECK(chmod(cc, 0755) == 0);
    pid_t k = fork();
    CHECK(k >= 0);
    if (k == 0) {
        setenv("CC", cc, 1);
        int dn = open("/dev/null", O_WRONLY);
        dup2(dn, 1);
        dup2(dn, 2);
        if (chdir(kft_src("."))) _exit(126);
        execl(kft_bin("kforge"), "kforge", "check", "tasks/c/saxpy", "tasks/c/saxpy/candidates/fast.c",
              (char *)NULL);
        _exit(127);
    }
    pid_t g[8];
    int n = 0;
    for (int i = 0; i < 400 && n < 1; i++) {
        usleep(25000);
        n = groups_of(mark, g, 8);
    }
    usleep(200000); /* both passes under way */
    n = groups_of(mark, g, 8);
    kill(k, SIGKILL);
    int status;
    waitpid(k, &status, 0);
    pid_t left = 0;
    for (int i = 0; i < 200; i++) {
        left = 0;
        for (int j = 0; j < n && !left; j++) left = alive_in(g[j]);
        if (!left) break;
        usleep(10000);
    }
    for (int j = 0; j < n; j++) kill(-g[j], SIGKILL);
    kf__rmtree(dir);
    CHECKF(n > 0, "the stand-in compiler never started");
    CHECKF(!left, "process %d of a compile's group outlived kforge", (int)left);
}

/* A `when` that leaves nothing to check or time, or that cannot be evaluated, is the
 * candidate's error and names its file and line, not the task. */
static void t_when_errors_at_line(const void *arg) {
    (void)arg;
    static char out[1 << 16];
    char dir[] = "/tmp/kft-whenline-XXXXXX", path[300], args[700];
    CHECK(mkdtemp(dir));
    static const struct {
        const char *cmd, *when, *want;
    } cases[] = {
        {"check", "n < 0", "kforge:when \"n < 0\": no shape satisfies"},
        {"check", "n / (n - n) > 1", "kforge:when \"n / (n - n) > 1\" cannot be evaluated at"},
        {"bench", "n == 7", "kforge:when \"n == 7\": no visible shape lies in the candidate's domain"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(path, sizeof path, "%s/w%zu.c", dir, i);
        FILE *f = fopen(path, "w");
        CHECK(f);
        fprintf(f,
                "#include <stdint.h>\n\n/* kforge:when %s */\nvoid reduce_sum(const float *x, float *out, "
                "int64_t n) { double s = 0; for (int64_t i = 0; i < n; i++) s += x[i]; *out = (float)s; }\n",
                cases[i].when);
        fclose(f);
        snprintf(args, sizeof args, "%s tasks/c/sum %s%s 2>&1", cases[i].cmd, path,
                 strcmp(cases[i].cmd, "bench") ? "" : " --min-runs 3 --max-runs 3 --min-time 0.001");
        int rc = kforge(args, out, sizeof out);
        char want[600];
        snprintf(want, sizeof want, "%s:3: %s", path, cases[i].want);
        CHECKF(rc != 0 && strstr(out, want), "%s: exit %d: %s (want %s)", cases[i].when, rc, out, want);
        CHECKF(!strstr(out, "tasks/c/sum:"), "%s", out);
    }
    kf__rmtree(dir);
}

static void t_exit_codes(const void *arg) {
    (void)arg;
    static char out[1 << 20];
    CHECK(kforge("", out, sizeof out) == 2);
    CHECK(kforge("frobnicate 2>&1", out, sizeof out) == 2 && strstr(out, "unknown command"));
    CHECK(kforge("check tasks/c/saxpy 2>&1", out, sizeof out) == 2);
    CHECK(kforge("check tasks/c/saxpy tasks/c/saxpy/candidates/fast.c --bogus 2>&1", out, sizeof out) == 2);
    CHECK(kforge("check tasks/c/saxpy tasks/c/saxpy/candidates/fast.c", out, sizeof out) == 0);
    CHECK(strstr(out, "ACCEPTED"));
    CHECK(kforge("check tasks/c/saxpy tests/redteam/01_write_nothing.c", out, sizeof out) == 1);
    CHECK(strstr(out, "REJECTED") && strstr(out, "unwritten_output"));
    CHECK(kforge("check tasks/c/saxpy /nonexistent.c 2>&1", out, sizeof out) == 2);
    CHECK(strstr(out, "/nonexistent.c"));
    CHECK(kforge("check /nonexistent tasks/c/saxpy/candidates/fast.c 2>&1", out, sizeof out) == 2);
    CHECK(kforge("validate tasks/c/sum", out, sizeof out) == 0 && strstr(out, "VALID"));
    CHECK(kforge("validate tests/redteam/tasks/degenerate_zero 2>&1", out, sizeof out) == 2);
    CHECK(strstr(out, "degenerate"));
    CHECK(kforge("validate tests/redteam/tasks/degenerate_empty --json 2>/dev/null", out, sizeof out) == 2);
    CHECKF(strstr(out, "\"code\":\"degenerate_task\"") && strstr(out, "every output is empty"), "%s", out);
    /* check and bench refuse it (exit 2) with the same code in their error object */
    CHECK(
        kforge("check tests/redteam/tasks/degenerate_const tests/redteam/tasks/degenerate_const/reference.c "
               "--json 2>/dev/null",
               out, sizeof out) == 2);
    CHECKF(strstr(out, "\"verdict\":\"error\"") && strstr(out, "\"code\":\"degenerate_task\""), "%s", out);
    CHECK(kforge("check tasks/c/sum tasks/c/sum/candidates/param.c --param LANES=7 2>&1", out, sizeof out) ==
          2);
    CHECK(strstr(out, "LANES"));
    CHECK(kforge("version", out, sizeof out) == 0 && strstr(out, "kforge"));
}

static void t_json_contract(const void *arg) {
    (void)arg;
    static char out[1 << 20];
    CHECK(kforge("check tasks/c/saxpy tests/redteam/09_write_past_end.c --json", out, sizeof out) == 1);
    json_t *j = parse(out);
    CHECK(!strcmp(json_string_value(json_object_get(j, "verdict")), "rejected"));
    json_t *r0 = json_array_get(json_object_get(j, "reasons"), 0);
    CHECK(!strcmp(json_string_value(json_object_get(r0, "code")), "out_of_bounds"));
    CHECK(json_is_string(json_object_get(r0, "message")) && json_is_object(json_object_get(r0, "shape")));
    CHECK(json_is_array(json_object_get(j, "shapes")) && json_is_number(json_object_get(j, "seconds")));
    json_decref(j);
    CHECK(kforge("check tasks/c/saxpy tasks/c/saxpy/candidates/param.c --param UNROLL=4 --json --seed 7", out,
                 sizeof out) == 0);
    j = parse(out);
    CHECK(!strcmp(json_string_value(json_object_get(j, "verdict")), "accepted"));
    CHECK(json_array_size(json_object_get(j, "reasons")) == 0);
    CHECK(json_integer_value(json_object_get(json_object_get(j, "params"), "UNROLL")) == 4);
    json_decref(j);
    CHECK(kforge("bench tasks/c/saxpy tasks/c/saxpy/candidates/fast.c --json --min-time 0.02 --min-runs 11 "
                 "--max-runs 31",
                 out, sizeof out) == 0);
    j = parse(out);
    json_t *s0 = json_array_get(json_object_get(j, "shapes"), 0);
    CHECK(json_is_object(json_object_get(s0, "sizes")) &&
          json_is_number(json_object_get(s0, "candidate_ns")) &&
          json_is_number(json_object_get(s0, "baseline_ns")) &&
          json_is_number(json_object_get(s0, "speedup")) && json_is_number(json_object_get(s0, "noise")));
    CHECK(json_is_number(json_object_get(j, "speedup")));
    json_decref(j);
    /* errors are JSON too under --json, with exit 2 */
    CHECK(kforge("check /nonexistent tasks/c/saxpy/candidates/fast.c --json 2>/dev/null", out, sizeof out) ==
          2);
    j = parse(out);
    CHECK(!strcmp(json_string_value(json_object_get(j, "verdict")), "error"));
    CHECK(strstr(json_string_value(json_object_get(j, "error")), "/nonexistent"));
    json_decref(j);
}

static void t_bad_task_message(const void *arg) {
    (void)arg;
    static char out[1 << 16];
    char dir[] = "/tmp/kft-cli-XXXXXX";
    CHECK(mkdtemp(dir));
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "printf '{\\n  \"name\": \"x\",\\n  \"backend\": \"c\" \"entry\": \"f\"\\n}\\n' > %s/task.json",
             dir);
    CHECK(system(cmd) == 0);
    snprintf(cmd, sizeof cmd, "validate %s 2>&1", dir);
    CHECK(kforge(cmd, out, sizeof out) == 2);
    CHECKF(strstr(out, "task.json:3:"), "no line:column in: %s", out);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
}

/* The human report cannot be forged by the candidate: one header line, no control or
 * C1 bytes, whatever text a constructor sends. */
static void t_report_injection(const void *arg) {
    (void)arg;
    static char out[1 << 16];
    CHECK(kforge("check tasks/c/saxpy tests/redteam/07_report_injection.c", out, sizeof out) == 1);
    int headers = 0;
    for (char *p = out; *p; p++) {
        unsigned char c = (unsigned char)*p;
        CHECKF(c >= 0x20 || c == '\n', "control byte 0x%02x in: %s", c, out);
        CHECKF(!(c == 0xc2 && (unsigned char)p[1] >= 0x80 && (unsigned char)p[1] <= 0x9f),
               "C1 control in: %s", out);
        if ((p == out || p[-1] == '\n') && !strncmp(p, "check ", 6)) headers++;
    }
    CHECKF(headers == 1, "%d report headers in: %s", headers, out);
}

/* bench/torch_compare.py --dry-run (no torch needed): every bundled CUDA task's launch
 * directives and kforge:param defaults parse, their expressions evaluate at the visible
 * shapes, and the load_inline wrappers generate. The GPU run itself is bench/gpu.sh torch. */
/* check -v's progress names hidden and edge shapes by index: their sizes appear only in
 * the verdict (docs/checker.md), not while the check runs. */
static void t_verbose_hides_hidden(const void *arg) {
    (void)arg;
    static char out[1 << 16], js[1 << 16];
    /* the same seed draws the same shapes: the JSON verdict says which were hidden */
    CHECK(kforge("check tasks/c/saxpy tasks/c/saxpy/candidates/fast.c --seed 11 --json 2>/dev/null", js,
                 sizeof js) == 0);
    CHECK(kforge("check tasks/c/saxpy tasks/c/saxpy/candidates/fast.c --seed 11 -v 2>&1 >/dev/null", out,
                 sizeof out) == 0);
    json_t *j = parse(js);
    size_t i;
    json_t *sh;
    int hidden = 0;
    json_array_foreach(json_object_get(j, "shapes"), i, sh) {
        if (!strcmp(json_string_value(json_object_get(sh, "kind")), "visible")) continue;
        char pat[64];
        snprintf(pat, sizeof pat, "n=%lld ",
                 (long long)json_integer_value(json_object_get(json_object_get(sh, "sizes"), "n")));
        CHECKF(!strstr(out, pat), "a %s shape's sizes (%s) in check -v's progress:\n%s",
               json_string_value(json_object_get(sh, "kind")), pat, out);
        hidden++;
    }
    CHECK(hidden >= 4 && strstr(out, "hidden shape"));
    json_decref(j);
}

/* A visible shape outside the candidate's kforge:when domain is named as skipped in the
 * text verdict (it was only in the JSON: a docs-only user read "8 of 8 passed" as the
 * whole task). */
static void t_when_skipped_text(const void *arg) {
    (void)arg;
    char path[] = "/tmp/kft-when-XXXXXX.c", out[1 << 14], args[256];
    int fd = mkstemps(path, 2);
    CHECK(fd >= 0);
    const char *src = "// kforge:when n >= 70000\n#include <stdint.h>\n"
                      "void saxpy(const float *x, const float *y, float *z, int64_t n, float a) {\n"
                      "    for (int64_t i = 0; i < n; i++) z[i] = a * x[i] + y[i];\n}\n";
    CHECK(write(fd, src, strlen(src)) == (ssize_t)strlen(src) && close(fd) == 0);
    snprintf(args, sizeof args, "check tasks/c/saxpy %s 2>&1", path);
    int rc = kforge(args, out, sizeof out);
    unlink(path);
    CHECKF(rc == 0 &&
               strstr(out, "skipped visible shape n=65536: outside the candidate's kforge:when domain"),
           "rc %d: %s", rc, out);
}

static void t_torch_compare_dry_run(const void *arg) {
    (void)arg;
    static char out[1 << 16];
    char cmd[4096];
    if (system("command -v python3 >/dev/null 2>&1") != 0) kft_skip("needs python3");
    snprintf(cmd, sizeof cmd, "cd %s && python3 bench/torch_compare.py --dry-run 2>&1", kft_src("."));
    CHECKF(kft_run(cmd, out, sizeof out) == 0, "dry run failed: %.2000s", out);
    CHECKF(strstr(out, "build shared:") && !strstr(out, "ERROR"), "%.2000s", out);
    snprintf(cmd, sizeof cmd, "cd %s && python3 bench/torch_compare.py --dry-run --candidate param.cu 2>&1",
             kft_src("."));
    CHECKF(kft_run(cmd, out, sizeof out) == 0, "dry run (param.cu) failed: %.2000s", out);
}

void kft_register_cli(void) {
    kft_add("cli/report_injection", t_report_injection, NULL, 30);
    kft_add("cli/verbose_hides_hidden", t_verbose_hides_hidden, NULL, 60);
    kft_add("cli/when_skipped_text", t_when_skipped_text, NULL, 60);
    kft_add("cli/exit_codes", t_exit_codes, NULL, 120);
    kft_add("cli/compile_dies_with_kforge", t_compile_dies_with_kforge, NULL, 60);
    kft_add("cli/when_errors_at_line", t_when_errors_at_line, NULL, 60);
    kft_add("cli/json_contract", t_json_contract, NULL, 120);
    kft_add("cli/bad_task_message", t_bad_task_message, NULL, 30);
    kft_add("cli/torch_compare_dry_run", t_torch_compare_dry_run, NULL, 60);
}
