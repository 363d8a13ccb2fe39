/*
 * test_screen.c - the screening path (docs/agents.md "Screening", docs/run.md): `kforge
 * submit --screen` (the full check, one short timing, recorded as `screened`, never
 * kept), `kforge submit --promote N` (a full evaluation of a screened node as a new node)
 * and `kforge run --screen-first` (every proposal screened, the promising ones evaluated
 * in full). A screened figure is labelled wherever it is printed and never counts as a
 * speedup: not in tree's "speedup", not in best, not as a parent for search.
 */
#define _GNU_SOURCE
#include "kft.h"

#include "util/util.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

static const char quick[] = "--min-runs 5 --max-runs 8 --min-time 0.01 --hidden 1";

static int cli(const char *args, char *out, size_t n) {
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "cd %s && %s %s", kft_src("."), kft_bin("kforge"), args);
    return kft_run(cmd, out, n);
}

static json_t *tree(const char *run) {
    char args[512], out[1 << 17];
    snprintf(args, sizeof args, "tree %s --json", run);
    CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
    json_t *j = json_loads(out, 0, NULL);
    CHECKF(j, "%s", out);
    return j;
}

static const char *sget(json_t *o, const char *k) {
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

static int passed(const char *state) {
    return !strcmp(state, "kept") || !strcmp(state, "reverted") || !strcmp(state, "measured");
}

/* submit --screen: screened (exit 0) with its figures under screened_* and none under
 * speedup; no Critic; no best; not a parent (for submit nor for next); the same text
 * screened again is pruned; a wrong kernel is still rejected by the full check;
 * --promote evaluates it in full as a new node (promoted_from), once. */
static void t_submit(const void *arg) {
    (void)arg;
    char dir[] = "/tmp/kft-scr-XXXXXX", args[2048], out[1 << 17], run[256], wrong[512];
    CHECK(mkdtemp(dir));
    snprintf(run, sizeof run, "%s/r", dir);
    snprintf(args, sizeof args, "run tasks/c/saxpy --budget 0 --run %s %s 2>&1", run, quick);
    CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
    char fast[512];
    snprintf(fast, sizeof fast, "%s", kft_src("tasks/c/saxpy/candidates/fast.c"));
    snprintf(args, sizeof args, "submit %s --parent 0 %s --screen --json", run, fast);
    CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
    json_t *s1 = json_loads(out, 0, NULL);
    CHECKF(s1 && !strcmp(sget(s1, "state"), "screened"), "%s", out);
    CHECK(json_number_value(json_object_get(s1, "speedup")) == 0);
    CHECKF(json_number_value(json_object_get(s1, "screened_speedup")) > 0, "%s", out);
    CHECK(!json_object_get(s1, "shapes") && json_array_size(json_object_get(s1, "screened_shapes")) == 2);
    CHECK(!json_object_get(s1, "critic"));
    CHECK(json_is_string(json_object_get(s1, "safe_for"))); /* it passed the full check */
    int64_t id = json_integer_value(json_object_get(s1, "id"));
    /* the one short timing: at most KF_SCREEN_RUNS (8) rounds a shape, whatever the run says */
    json_t *sh0 = json_array_get(json_object_get(s1, "screened_shapes"), 0);
    CHECK(json_object_get(sh0, "candidate_ns"));
    json_decref(s1);

    /* the text says so */
    snprintf(args, sizeof args, "tree %s", run);
    CHECKF(cli(args, out, sizeof out) == 0 && strstr(out, "screened") && strstr(out, "not confirmed") &&
               !strstr(out, "x*"),
           "%s", out);
    /* not a best, not a parent */
    snprintf(args, sizeof args, "best %s", run);
    CHECKF(cli(args, out, sizeof out) == 0 && strstr(out, "no node kept yet"), "%s", out);
    snprintf(args, sizeof args, "submit %s --parent %lld %s 2>&1", run, (long long)id, fast);
    CHECKF(cli(args, out, sizeof out) == 2 && strstr(out, "--promote"), "%s", out);
    for (int k = 0; k < 3; k++) {
        snprintf(args, sizeof args, "next %s --json", run);
        CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
        json_t *a = json_loads(out, 0, NULL);
        CHECKF(a && json_integer_value(json_object_get(a, "parent")) == 0,
               "a screened node offered as a parent: %s", out);
        json_decref(a);
    }
    /* the same text screened again: pruned, naming the screened node */
    snprintf(args, sizeof args, "submit %s --parent 0 %s --screen 2>&1", run, fast);
    CHECKF(cli(args, out, sizeof out) == 1 && strstr(out, "pruned") && strstr(out, "already screened"), "%s",
           out);
    /* the full check still runs */
    snprintf(wrong, sizeof wrong, "%s/wrong.c", dir);
    FILE *f = fopen(wrong, "w");
    CHECK(f);
    fputs("#include <stdint.h>\n"
          "void saxpy(const float *x, const float *y, float *z, int64_t n, float a) {\n"
          "    for (int64_t i = 0; i < n; i++) z[i] = a * x[i];\n}\n",
          f);
    fclose(f);
    snprintf(args, sizeof args, "submit %s --parent 0 %s --screen --json", run, wrong);
    CHECKF(cli(args, out, sizeof out) == 1, "%s", out);
    json_t *s2 = json_loads(out, 0, NULL);
    CHECKF(s2 && !strcmp(sget(s2, "state"), "rejected") && strstr(sget(s2, "reasons"), "wrong_result"), "%s",
           out);
    int64_t rej = json_integer_value(json_object_get(s2, "id"));
    json_decref(s2);

    /* promotion: not of a rejected node, nor with a file */
    snprintf(args, sizeof args, "submit %s --promote %lld 2>&1", run, (long long)rej);
    CHECKF(cli(args, out, sizeof out) == 2 && strstr(out, "only a screened node"), "%s", out);
    snprintf(args, sizeof args, "submit %s --promote %lld --parent 0 %s 2>&1", run, (long long)id, fast);
    CHECKF(cli(args, out, sizeof out) == 2, "%s", out);
    snprintf(args, sizeof args, "submit %s --promote %lld --json", run, (long long)id);
    CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
    json_t *p = json_loads(out, 0, NULL);
    CHECKF(p && passed(sget(p, "state")), "%s", out);
    CHECK(json_integer_value(json_object_get(p, "promoted_from")) == id);
    CHECK(json_integer_value(json_object_get(p, "parent")) == 0);
    CHECK(json_number_value(json_object_get(p, "speedup")) > 0 && json_object_get(p, "shapes"));
    CHECK(!json_object_get(p, "screened_speedup"));
    int64_t pid = json_integer_value(json_object_get(p, "id"));
    CHECK(pid != id);
    json_decref(p);
    /* promoted once: the second is pruned */
    snprintf(args, sizeof args, "submit %s --promote %lld 2>&1", run, (long long)id);
    CHECKF(cli(args, out, sizeof out) == 1 && strstr(out, "pruned"), "%s", out);
    /* the screened node stays as it was */
    json_t *t = tree(run);
    json_t *nodes = json_object_get(t, "nodes");
    size_t i;
    json_t *n;
    int seen = 0;
    json_array_foreach(nodes, i, n) {
        if (json_integer_value(json_object_get(n, "id")) != id) continue;
        seen = 1;
        CHECK(!strcmp(sget(n, "state"), "screened"));
    }
    CHECK(seen);
    json_decref(t);
    kf__rmtree(dir);
}

/* run --screen-first: every evaluated node was screened first; each is either left
 * `screened` (not promising) or evaluated in full with its screening's figures as
 * "screen"; the run records the option and a resume keeps it. */
static void t_run_first(const void *arg) {
    (void)arg;
    char dir[] = "/tmp/kft-scr-XXXXXX", args[2048], out[1 << 17], run[256];
    CHECK(mkdtemp(dir));
    snprintf(run, sizeof run, "%s/r", dir);
    snprintf(args, sizeof args, "run tasks/c/sum --budget 3 --run %s --screen-first %s 2>&1", run, quick);
    CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
    snprintf(args, sizeof args, "run --resume %s --budget 4 2>&1", run);
    CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
    json_t *t = tree(run);
    json_t *nodes = json_object_get(t, "nodes");
    size_t i;
    json_t *n;
    int screened = 0, full = 0;
    json_array_foreach(nodes, i, n) {
        const char *st = sget(n, "state");
        if (!strcmp(st, "screened")) {
            screened++;
            CHECK(json_number_value(json_object_get(n, "speedup")) == 0);
        } else if (passed(st)) {
            full++;
            /* screened first, and promising: its screening beat the parent somewhere */
            json_t *sc = json_object_get(n, "screen");
            CHECKF(sc && json_number_value(json_object_get(sc, "speedup")) > 0, "node %lld: no screening",
                   (long long)json_integer_value(json_object_get(n, "id")));
        }
    }
    CHECKF(json_array_size(nodes) == 4 && screened + full > 0, "%zu nodes, %d screened, %d in full",
           json_array_size(nodes), screened, full);
    json_decref(t);
    kf__rmtree(dir);
}

/* validate reports the reference's time per shape and its slowest; a reference that
 * takes over 100 ms a call at its slowest shape is warned about (still VALID, exit 0). */
static void t_reference_time(const void *arg) {
    (void)arg;
    char dir[] = "/tmp/kft-scr-XXXXXX", path[512], args[1024], out[1 << 17];
    CHECK(mkdtemp(dir));
    /* saxpy's task, with a reference that spins at its largest sizes (volatile: kept) */
    char *tj = NULL;
    size_t tl = 0;
    CHECK(!kf__read_file(kft_src("tasks/c/saxpy/task.json"), 1 << 20, &tj, &tl));
    snprintf(path, sizeof path, "%s/task.json", dir);
    FILE *f = fopen(path, "w");
    CHECK(f);
    fputs(tj, f);
    fclose(f);
    free(tj);
    snprintf(path, sizeof path, "%s/reference.c", dir);
    CHECK(f = fopen(path, "w"));
    fputs("#include <stdint.h>\n"
          "void saxpy(const float *x, const float *y, float *z, int64_t n, float a) {\n"
          "    volatile float sink = 0;\n"
          "    int64_t reps = n > 900000 ? 200 : 1;\n"
          "    for (int64_t r = 0; r < reps; r++)\n"
          "        for (int64_t i = 0; i < n; i++) sink += x[i];\n"
          "    for (int64_t i = 0; i < n; i++) z[i] = a * x[i] + y[i];\n"
          "}\n",
          f);
    fclose(f);
    snprintf(args, sizeof args, "validate %s --json", dir);
    CHECKF(cli(args, out, sizeof out) == 0, "%s", out);
    json_t *j = json_loads(out, 0, NULL);
    CHECKF(j, "%s", out);
    json_t *rt = json_object_get(j, "reference_time");
    CHECKF(json_is_true(json_object_get(rt, "slow")) &&
               json_number_value(json_object_get(rt, "slowest_ms")) > 100,
           "%s", out);
    CHECK(json_integer_value(json_object_get(json_object_get(rt, "at"), "n")) > 900000);
    CHECK(strstr(sget(rt, "warning"), "over 100 ms"));
    size_t i;
    json_t *o;
    json_array_foreach(json_object_get(j, "shapes"), i, o)
        CHECK(json_number_value(json_object_get(o, "reference_ms")) > 0);
    json_decref(j);
    snprintf(args, sizeof args, "validate %s", dir);
    CHECKF(cli(args, out, sizeof out) == 0 && strstr(out, "reference per call:") &&
               strstr(out, "warning: the reference takes"),
           "%s", out);
    /* the bundled saxpy: fast, no warning */
    CHECKF(cli("validate tasks/c/saxpy --json", out, sizeof out) == 0, "%s", out);
    CHECK(j = json_loads(out, 0, NULL));
    rt = json_object_get(j, "reference_time");
    CHECKF(json_is_false(json_object_get(rt, "slow")) && !json_object_get(rt, "warning"), "%s", out);
    json_decref(j);
    kf__rmtree(dir);
}

void kft_register_screen(void) {
    kft_add("validate/reference_time", t_reference_time, NULL, 120);
    kft_add("screen/submit", t_submit, NULL, 240);
    kft_add("screen/run_first", t_run_first, NULL, 240);
}
