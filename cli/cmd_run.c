/*
 * cmd_run.c - `kforge run`, `kforge tree`, `kforge best` (docs/run.md): the optimisation
 * loop over a run directory, and its lineage and winners.
 */
#include "cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int number(const char *opt, const char *s, double lo, double hi, double *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || v < lo || v > hi) {
        fprintf(stderr, "kforge: error: %s %s: expected a number in [%g, %g]\n", opt, s, lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

int kf_cli_run(int argc, char **argv) {
    kf_run_opts o;
    kf_run_opts_init(&o);
    int json = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        double v;
        int more = i + 1 < argc;
        if (!strcmp(a, "--json")) json = 1;
        else if (!strcmp(a, "--resume")) o.resume = 1;
        else if (!strcmp(a, "--agent") && more) o.agent = argv[++i];
        else if (!strcmp(a, "--run") && more) o.run_dir = argv[++i];
        else if (!strcmp(a, "--budget") && more) {
            if (number(a, argv[++i], 1, 1e7, &v)) return KF_EXIT_USAGE;
            o.budget = (int)v;
        } else if (!strcmp(a, "--wall") && more) {
            if (number(a, argv[++i], 1, 1e7, &o.wall_s)) return KF_EXIT_USAGE;
        } else if (!strcmp(a, "--seed") && more) {
            if (number(a, argv[++i], 0, 1.8e19, &v)) return KF_EXIT_USAGE;
            o.seed = (uint64_t)v;
            o.has_seed = 1;
        } else if (!strcmp(a, "--target") && more) {
            if (number(a, argv[++i], 1, 1e6, &o.target)) return KF_EXIT_USAGE;
        } else if (!strcmp(a, "--patience") && more) {
            if (number(a, argv[++i], 1, 1e7, &v)) return KF_EXIT_USAGE;
            o.patience = (int)v;
        } else if (!strcmp(a, "--search") && more) {
            if (o.nsearch == 16) return kf_cli_fail(json, "--search: at most 16 settings");
            o.search[o.nsearch++] = argv[++i];
        } else if (!strcmp(a, "--hidden") && more) {
            if (number(a, argv[++i], 0, 1000, &v)) return KF_EXIT_USAGE;
            o.hidden = (int)v;
        } else if (!strcmp(a, "--min-runs") && more) {
            if (number(a, argv[++i], 1, 1e6, &v)) return KF_EXIT_USAGE;
            o.min_runs = (int)v;
        } else if (!strcmp(a, "--max-runs") && more) {
            if (number(a, argv[++i], 1, 1e6, &v)) return KF_EXIT_USAGE;
            o.max_runs = (int)v;
        } else if (!strcmp(a, "--min-time") && more) {
            if (number(a, argv[++i], 0, 600, &o.min_time_s)) return KF_EXIT_USAGE;
        } else if (a[0] == '-') {
            return kf_cli_fail(json, "kforge run: unknown option %s", a);
        } else if (!o.task_dir && !o.resume) {
            o.task_dir = a;
        } else if (o.resume && !o.run_dir) {
            o.run_dir = a; /* kforge run --resume RUN */
        } else {
            return kf_cli_fail(json, "kforge run: unexpected argument %s", a);
        }
    }
    if (o.resume && !o.run_dir) return kf_cli_fail(json, "kforge run --resume RUN: which run?");
    if (!o.resume && !o.task_dir) return kf_cli_fail(json, "usage: kforge run TASK [options] (docs/cli.md)");
    kf_ctx *ctx = kf_ctx_new();
    char *summary = NULL;
    kf_status st = kf_run(ctx, &o, &summary);
    int rc = KF_EXIT_OK;
    if (st) rc = kf_cli_fail(json, "%s", kf_errmsg(ctx));
    else if (json && summary) printf("%s\n", summary);
    free(summary);
    kf_ctx_free(ctx);
    return rc;
}

/* kforge tree RUN [--json], kforge best RUN [--json] */
int kf_cli_tree(int argc, char **argv, int best) {
    int json = 0;
    const char *dir = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json")) json = 1;
        else if (argv[i][0] == '-') return kf_cli_fail(json, "kforge %s: unknown option %s", argv[0], argv[i]);
        else if (!dir) dir = argv[i];
        else return kf_cli_fail(json, "kforge %s: unexpected argument %s", argv[0], argv[i]);
    }
    if (!dir) return kf_cli_fail(json, "usage: kforge %s RUN [--json]", argv[0]);
    kf_ctx *ctx = kf_ctx_new();
    char *out = NULL;
    kf_status st = best ? kf_run_best(ctx, dir, json, &out) : kf_run_tree(ctx, dir, json, &out);
    int rc = KF_EXIT_OK;
    if (st) rc = kf_cli_fail(json, "%s", kf_errmsg(ctx));
    else fputs(out, stdout), json ? fputc('\n', stdout) : 0;
    free(out);
    kf_ctx_free(ctx);
    return rc;
}
