/*
 * cmd_export.c - `kforge export RUN -o DIR [--json]` (docs/cli.md): a run's winners and
 * a re-verified dispatcher by shape. Exit 0 written (dispatcher accepted, or a CUDA task
 * with its winners only), 1 the dispatcher was rejected (winners written, dispatcher not),
 * 2 bad usage, no verified node, a run or DIR that cannot be used (nothing written).
 * A system run's directory is exported by kf_cli_system_export (cmd_system.c).
 */
#include "cli.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int kf_cli_export(int argc, char **argv) {
    int json = 0, torch = 0;
    const char *run = NULL, *out = NULL;
    kf_opts o;
    kf_opts_init(&o);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int more = i + 1 < argc;
        double v;
        if (!strcmp(a, "--json")) json = 1;
        else if (!strcmp(a, "--torch")) torch = 1;
        else if ((!strcmp(a, "-o") || !strcmp(a, "--out")) && more) out = argv[++i];
        else if (!strcmp(a, "--hidden") && more) {
            if (kf_cli_number(a, argv[++i], 0, 1000, &v)) return KF_EXIT_USAGE;
            o.hidden_count = (int)v;
        } else if (!strcmp(a, "--min-runs") && more) {
            if (kf_cli_number(a, argv[++i], 1, 1e6, &v)) return KF_EXIT_USAGE;
            o.bench_min_runs = (int)v;
        } else if (!strcmp(a, "--max-runs") && more) {
            if (kf_cli_number(a, argv[++i], 1, 1e6, &v)) return KF_EXIT_USAGE;
            o.bench_max_runs = (int)v;
        } else if (!strcmp(a, "--min-time") && more) {
            if (kf_cli_number(a, argv[++i], 0, 600, &o.bench_min_time_s)) return KF_EXIT_USAGE;
        } else if (!strcmp(a, "--seed") && more) {
            if (kf_cli_number(a, argv[++i], 0, 1.8e19, &v)) return KF_EXIT_USAGE;
            o.seed = (uint64_t)v;
            o.has_seed = 1;
        } else if (a[0] == '-') return kf_cli_fail(json, "kforge export: unknown option %s", a);
        else if (!run) run = a;
        else return kf_cli_fail(json, "kforge export: unexpected argument %s", a);
    }
    if (!run || !out)
        return kf_cli_fail(json, "usage: kforge export RUN -o DIR [--torch] [--json] (docs/cli.md)");
    char sys[4200];
    snprintf(sys, sizeof sys, "%s/system.json", run);
    if (!access(sys, F_OK)) {
        if (torch)
            return kf_cli_fail(json, "kforge export --torch: %s is a system run, not a kernel run", run);
        return kf_cli_system_export(run, out, json);
    }
    kf_ctx *ctx = kf_ctx_new();
    char *doc = NULL;
    kf_status st = kf_run_export_opts(ctx, run, out, &o, &doc);
    int rc = KF_EXIT_OK;
    if (st) {
        rc = kf_cli_fail(json, "%s", kf_errmsg(ctx));
    } else {
        json_t *j = json_loads(doc, 0, NULL);
        json_t *ver = json_object_get(j, "verification");
        const char *v = json_string_value(json_object_get(ver, "verdict"));
        if (v && !strcmp(v, "unverified")) rc = KF_EXIT_UNVERIFIED;
        else if (v && strcmp(v, "accepted")) rc = KF_EXIT_REJECTED;
        if (json) {
            printf("%s\n", doc);
        } else {
            size_t i;
            json_t *x;
            json_array_foreach(json_object_get(j, "winners"), i, x)
                printf("%s/%s: node %lld, %.3fx geomean over the %zu visible shape%s it was timed on%s\n",
                       out, json_string_value(json_object_get(x, "file")),
                       (long long)json_integer_value(json_object_get(x, "node")),
                       json_number_value(json_object_get(x, "speedup")),
                       json_array_size(json_object_get(x, "shapes")),
                       json_array_size(json_object_get(x, "shapes")) == 1 ? "" : "s",
                       json_is_true(json_object_get(x, "fallback")) ? " (the fallback)" : "");
            const char *d = json_string_value(json_object_get(j, "dispatcher"));
            const char *u = json_string_value(json_object_get(j, "dispatcher_unverified"));
            if (u) {
                printf("%s/%s: UNVERIFIED: %s\n", out, u, json_string_value(json_object_get(j, "why")));
            } else if (d) {
                printf("%s/%s: accepted by the checker, %.3fx over the reference\n", out, d,
                       json_number_value(json_object_get(ver, "speedup")));
            } else {
                printf("no dispatcher: %s\n", json_string_value(json_object_get(j, "why")));
            }
        }
        json_decref(j);
    }
    free(doc);
    /* --torch: the accepted dispatcher as a PyTorch op, its test run once (docs/torch.md) */
    if (torch && rc == KF_EXIT_OK) {
        char *tdoc = NULL;
        if ((st = kf_run_export_torch(ctx, out, 1, &tdoc))) {
            rc = kf_cli_fail(json, "kforge export --torch: %s", kf_errmsg(ctx));
        } else {
            json_t *j = json_loads(tdoc, 0, NULL);
            const char *test = json_string_value(json_object_get(j, "test"));
            if (test && strcmp(test, "passed")) rc = KF_EXIT_REJECTED;
            if (json) {
                printf("%s\n", tdoc);
            } else {
                printf("%s: %s, a PyTorch op (README.md there: `import kforge_...`); its test %s\n",
                       json_string_value(json_object_get(j, "package")),
                       json_string_value(json_object_get(j, "op")), test ? test : "?");
                if (rc) printf("%s", json_string_value(json_object_get(j, "output")));
            }
            json_decref(j);
        }
        free(tdoc);
    }
    kf_ctx_free(ctx);
    return rc;
}
