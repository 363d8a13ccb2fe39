/*
 * cmd_check.c - `kforge check`, `kforge bench` and `kforge validate`: parse options,
 * run, print JSON or a short report, and map the verdict to the exit code.
 */
#include "cli.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int json;
    const char *pos[2];
    int npos;
    const char *params[64];
    kf_opts o;
} args;

/* "memcheck,racecheck" -> KF_SANITIZE_* bits, 0 when a name is unknown or the list empty */
static unsigned sanitize_tools(const char *list) {
    static const struct {
        const char *name;
        unsigned bit;
    } t[] = {{"memcheck", KF_SANITIZE_MEMCHECK},
             {"racecheck", KF_SANITIZE_RACECHECK},
             {"initcheck", KF_SANITIZE_INITCHECK}};
    unsigned bits = 0;
    for (const char *p = list; *p;) {
        size_t n = strcspn(p, ","), k = 0;
        while (k < 3 && !(strlen(t[k].name) == n && !strncmp(p, t[k].name, n))) k++;
        if (k == 3) return 0;
        bits |= t[k].bit;
        p += n + (p[n] == ',');
    }
    return bits;
}

static int num(int json, const char *flag, const char *v, double lo, double hi, double *out) {
    char *end;
    errno = 0;
    double d = v ? strtod(v, &end) : 0;
    if (!v || errno || end == v || *end || d < lo || d > hi) {
        kf_cli_fail(json, "%s needs a number in [%g, %g], got '%s'", flag, lo, hi, v ? v : "");
        return -1;
    }
    *out = d;
    return 0;
}

/* 0 ok, else an exit code. */
static int parse(int argc, char **argv, int npos_want, int bench, args *a) {
    memset(a, 0, sizeof *a);
    kf_opts_init(&a->o);
    a->o.params = a->params;
    for (int i = 1; i < argc; i++) /* so that every error below is JSON too */
        if (!strcmp(argv[i], "--json")) a->json = 1;
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        double d;
        if (!strcmp(s, "--json")) a->json = 1;
        else if (!strcmp(s, "-v") || !strcmp(s, "--verbose")) a->o.verbose = 1;
        else if (!strcmp(s, "--seed") && i + 1 < argc) {
            char *end;
            errno = 0;
            unsigned long long v = strtoull(argv[++i], &end, 0);
            if (errno || *end || end == argv[i] || argv[i][0] == '-' || v > (unsigned long long)INT64_MAX)
                return kf_cli_fail(a->json, "--seed needs an integer in [0, 2^63 - 1]");
            a->o.seed = v;
            a->o.has_seed = 1;
        } else if (!strcmp(s, "--param") && i + 1 < argc && npos_want == 2) {
            if (a->o.nparams == 64) return kf_cli_fail(a->json, "too many --param");
            a->params[a->o.nparams++] = argv[++i];
        } else if (!strcmp(s, "--vs") && i + 1 < argc && bench) {
            a->o.vs_path = argv[++i];
        } else if (!strcmp(s, "--hidden") && i + 1 < argc) {
            if (num(a->json, s, argv[++i], 0, 1000, &d)) return KF_EXIT_USAGE;
            a->o.hidden_count = (int)d;
        } else if (!strcmp(s, "--timeout") && i + 1 < argc) {
            if (num(a->json, s, argv[++i], 0.01, 3600, &a->o.call_timeout_s)) return KF_EXIT_USAGE;
        } else if ((!strcmp(s, "--sanitize") || !strncmp(s, "--sanitize=", 11)) && npos_want == 2 && !bench) {
            a->o.sanitize = s[10] ? sanitize_tools(s + 11) : KF_SANITIZE_ALL;
            if (!a->o.sanitize)
                return kf_cli_fail(a->json,
                                   "--sanitize=%s: expected a comma-separated list of "
                                   "memcheck, racecheck, initcheck",
                                   s + 11);
        } else if (!strcmp(s, "--compile-timeout") && i + 1 < argc) {
            if (num(a->json, s, argv[++i], 0.01, 3600, &a->o.compile_timeout_s)) return KF_EXIT_USAGE;
        } else if (!strcmp(s, "--min-time") && i + 1 < argc && bench) {
            if (num(a->json, s, argv[++i], 0, 600, &a->o.bench_min_time_s)) return KF_EXIT_USAGE;
        } else if (!strcmp(s, "--precision") && i + 1 < argc && bench) {
            if (num(a->json, s, argv[++i], 0, 1, &a->o.bench_precision)) return KF_EXIT_USAGE;
        } else if (!strcmp(s, "--min-runs") && i + 1 < argc && bench) {
            if (num(a->json, s, argv[++i], 1, 100000, &d)) return KF_EXIT_USAGE;
            a->o.bench_min_runs = (int)d;
        } else if (!strcmp(s, "--max-runs") && i + 1 < argc && bench) {
            if (num(a->json, s, argv[++i], 1, 100000, &d)) return KF_EXIT_USAGE;
            a->o.bench_max_runs = (int)d;
        } else if (s[0] == '-' && s[1]) {
            return kf_cli_fail(a->json, "unknown or incomplete option '%s' (see kforge help)", s);
        } else if (a->npos < npos_want) {
            a->pos[a->npos++] = s;
        } else {
            return kf_cli_fail(a->json, "unexpected argument '%s'", s);
        }
    }
    if (a->npos != npos_want)
        return kf_cli_fail(a->json, "%s", npos_want == 2 ? "expected TASK and CANDIDATE" : "expected TASK");
    if (a->o.bench_max_runs < a->o.bench_min_runs) a->o.bench_max_runs = a->o.bench_min_runs;
    return 0;
}

static int report(kf_result *r, int json) {
    char *out = json ? kf_result_json(r) : kf_result_text(r);
    if (out) {
        fputs(out, stdout);
        if (json) fputc('\n', stdout);
    }
    free(out);
    int code = kf_result_verdict(r) == KF_VERDICT_ACCEPTED ? KF_EXIT_OK : KF_EXIT_REJECTED;
    kf_result_free(r);
    return code;
}

static int run(args *a, int kind) {
    kf_ctx *ctx = kf_ctx_new();
    if (!ctx) return kf_cli_fail(a->json, "out of memory");
    kf_task *task = NULL;
    kf_result *res = NULL;
    kf_status st = kf_task_load(ctx, a->pos[0], &task);
    if (!st) {
        if (kind == 0) st = kf_check(ctx, task, a->pos[1], &a->o, &res);
        else if (kind == 1) st = kf_bench(ctx, task, a->pos[1], &a->o, &res);
        else st = kf_validate(ctx, task, &a->o, &res);
    }
    /* a degenerate task (check.c's "degenerate task at" message) carries validate's code */
    int degenerate = st == KF_ETASK && strstr(kf_errmsg(ctx), ": degenerate task at ");
    int code = st && degenerate ? kf_cli_fail_code(a->json, "degenerate_task", kf_errmsg(ctx))
               : st             ? kf_cli_fail(a->json, "%s", kf_errmsg(ctx))
                                : report(res, a->json);
    kf_task_free(task);
    kf_ctx_free(ctx);
    return code;
}

int kf_cli_check(int argc, char **argv, int bench) {
    args a;
    int rc = parse(argc, argv, 2, bench, &a);
    return rc ? rc : run(&a, bench);
}

int kf_cli_validate(int argc, char **argv) {
    args a;
    int rc = parse(argc, argv, 1, 0, &a);
    if (rc) return rc;
    /* a refused (degenerate) task is a task error: exit 2 */
    kf_ctx *ctx = kf_ctx_new();
    kf_task *task = NULL;
    kf_result *res = NULL;
    kf_status st = ctx ? kf_task_load(ctx, a.pos[0], &task) : KF_ENOMEM;
    if (!st) st = kf_validate(ctx, task, &a.o, &res);
    int code;
    if (st) {
        code = kf_cli_fail(a.json, "%s", ctx ? kf_errmsg(ctx) : "out of memory");
    } else {
        code = report(res, a.json) == KF_EXIT_OK ? KF_EXIT_OK : KF_EXIT_USAGE;
    }
    kf_task_free(task);
    kf_ctx_free(ctx);
    return code;
}
