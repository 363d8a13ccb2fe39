/*
 * cmd_system.c - `kforge system check|bench PIPELINE`: a pipeline of tasks judged end
 * to end (docs/system.md). Parses the options, runs, prints the JSON report or a short
 * summary, and maps the verdict to the exit code (0 accepted, 1 rejected, 2 usage or
 * pipeline error).
 */
#include "cli.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

static void usage(FILE *f) {
    fprintf(f, "usage: kforge system check PIPELINE [--slot SLOT=FILE]... [options]\n"
               "       kforge system bench PIPELINE [--slot SLOT=FILE]... [--vs SLOT=FILE]... [options]\n"
               "  check: every slot candidate on its own task, the end-to-end outputs of every step\n"
               "         against the reference pipeline's, each candidate on the tensors its stages\n"
               "         receive in the pipeline, and its call count\n"
               "  bench: the check, then the whole step timed A/B against the reference pipeline\n"
               "         (or the --vs configuration): per-stage shares, the end-to-end gain and its\n"
               "         interval, the roofline fraction\n"
               "options: --knob NAME=VALUE, --steps N, --layers N, --seed N, --no-task-check,\n"
               "         --local (bench: each slot candidate also timed alone on its task),\n"
               "         --min-time S, --min-runs N, --max-runs N, --timeout S, --json\n");
}

static void summary(const char *json, int bench) {
    json_t *r = json_loads(json, 0, NULL);
    if (!r) {
        puts(json);
        return;
    }
    printf("%s: %s (%s, %d steps, %d layers)\n", json_string_value(json_object_get(r, "pipeline")),
           json_string_value(json_object_get(r, "verdict")), json_string_value(json_object_get(r, "backend")),
           (int)json_integer_value(json_object_get(r, "steps")),
           (int)json_integer_value(json_object_get(r, "layers")));
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(r, "reasons"), i, v) {
        printf("  %s: %s\n", json_string_value(json_object_get(v, "code")),
               json_string_value(json_object_get(v, "message")));
    }
    json_array_foreach(json_object_get(r, "slots"), i, v) {
        json_t *c = json_object_get(v, "candidate"), *e = json_object_get(v, "engagement");
        if (!json_is_string(c)) continue;
        printf("  slot %s: %s, captured %s over %lld calls, engaged %lld/%lld\n",
               json_string_value(json_object_get(v, "name")), json_string_value(c),
               json_string_value(json_object_get(json_object_get(v, "captured"), "verdict")),
               (long long)json_integer_value(json_object_get(json_object_get(v, "captured"), "calls")),
               (long long)json_integer_value(json_object_get(e, "calls")),
               (long long)json_integer_value(json_object_get(e, "expected")));
    }
    if (bench && json_object_get(r, "speedup")) {
        json_t *ci = json_object_get(r, "gain_ci95");
        printf("  step: %.0f ns vs %.0f ns (%s), gain %+.1f%% [%+.1f%%, %+.1f%%] over %lld rounds%s\n",
               json_number_value(json_object_get(json_object_get(r, "step_ns"), "candidate")),
               json_number_value(json_object_get(json_object_get(r, "step_ns"), "baseline")),
               json_string_value(json_object_get(r, "baseline")),
               100 * json_number_value(json_object_get(r, "gain")),
               100 * json_number_value(json_array_get(ci, 0)), 100 * json_number_value(json_array_get(ci, 1)),
               (long long)json_integer_value(json_object_get(r, "rounds")),
               json_is_true(json_object_get(r, "win"))      ? ": a win"
               : json_is_true(json_object_get(r, "slower")) ? ": slower"
                                                            : "");
        json_array_foreach(json_object_get(r, "stages"), i, v) {
            printf("    %-12s %-10s %10.0f ns %5.1f%%   baseline %10.0f ns %5.1f%%\n",
                   json_string_value(json_object_get(v, "stage")),
                   json_string_value(json_object_get(v, "implementation")),
                   json_number_value(json_object_get(v, "candidate_ns")),
                   100 * json_number_value(json_object_get(v, "candidate_share")),
                   json_number_value(json_object_get(v, "baseline_ns")),
                   100 * json_number_value(json_object_get(v, "baseline_share")));
        }
        json_t *oc = json_object_get(r, "outcome");
        if (json_is_string(oc)) printf("  outcome: %s\n", json_string_value(oc));
        json_t *roof = json_object_get(r, "roofline");
        if (json_is_object(roof) && json_object_get(roof, "roofline_fraction"))
            printf("  roofline fraction %.3f\n",
                   json_number_value(json_object_get(roof, "roofline_fraction")));
    }
    json_decref(r);
}

int kf_cli_system(int argc, char **argv) {
    int json = 0;
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--json")) json = 1;
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? KF_EXIT_USAGE : KF_EXIT_OK;
    }
    int bench = !strcmp(argv[1], "bench");
    if (!bench && strcmp(argv[1], "check"))
        return kf_cli_fail(json, "system %s: expected check or bench (kforge system --help)", argv[1]);
    kf_system_opts o;
    kf_system_opts_init(&o);
    const char *pipeline = NULL;
    for (int i = 2; i < argc; i++) {
        const char *s = argv[i];
        double d;
        if (!strcmp(s, "--json")) continue;
        if (!strcmp(s, "--help") || !strcmp(s, "-h")) {
            usage(stdout);
            return KF_EXIT_OK;
        } else if (!strcmp(s, "--slot") && i + 1 < argc) {
            if (o.nslots == KF_SYSTEM_MAX_SLOTS) return kf_cli_fail(json, "too many --slot");
            o.slots[o.nslots++] = argv[++i];
        } else if (!strcmp(s, "--vs") && i + 1 < argc && bench) {
            if (o.nvs == KF_SYSTEM_MAX_SLOTS) return kf_cli_fail(json, "too many --vs");
            o.vs[o.nvs++] = argv[++i];
        } else if (!strcmp(s, "--knob") && i + 1 < argc) {
            if (o.nknobs == 16) return kf_cli_fail(json, "too many --knob");
            o.knobs[o.nknobs++] = argv[++i];
        } else if (!strcmp(s, "--steps") && i + 1 < argc) {
            if (kf_cli_number(s, argv[++i], 1, 4096, &d)) return KF_EXIT_USAGE;
            o.steps = (int)d;
        } else if (!strcmp(s, "--layers") && i + 1 < argc) {
            if (kf_cli_number(s, argv[++i], 1, 256, &d)) return KF_EXIT_USAGE;
            o.layers = (int)d;
        } else if (!strcmp(s, "--seed") && i + 1 < argc) {
            char *end;
            errno = 0;
            unsigned long long v = strtoull(argv[++i], &end, 0);
            if (errno || *end || end == argv[i] || argv[i][0] == '-' || v > (unsigned long long)INT64_MAX)
                return kf_cli_fail(json, "--seed needs an integer in [0, 2^63 - 1]");
            o.check.seed = v;
            o.check.has_seed = 1;
        } else if (!strcmp(s, "--local") && bench) {
            o.local_bench = 1;
        } else if (!strcmp(s, "--no-task-check")) {
            o.task_checks = 0;
        } else if (!strcmp(s, "--timeout") && i + 1 < argc) {
            if (kf_cli_number(s, argv[++i], 0.001, 86400, &d)) return KF_EXIT_USAGE;
            o.check.call_timeout_s = d;
        } else if (!strcmp(s, "--min-time") && i + 1 < argc && bench) {
            if (kf_cli_number(s, argv[++i], 0, 3600, &d)) return KF_EXIT_USAGE;
            o.check.bench_min_time_s = d;
        } else if (!strcmp(s, "--min-runs") && i + 1 < argc && bench) {
            if (kf_cli_number(s, argv[++i], 1, 100000, &d)) return KF_EXIT_USAGE;
            o.check.bench_min_runs = (int)d;
        } else if (!strcmp(s, "--max-runs") && i + 1 < argc && bench) {
            if (kf_cli_number(s, argv[++i], 1, 100000, &d)) return KF_EXIT_USAGE;
            o.check.bench_max_runs = (int)d;
        } else if (s[0] == '-') {
            return kf_cli_fail(json, "system %s: unknown option %s (or it lacks its value)", argv[1], s);
        } else if (!pipeline) {
            pipeline = s;
        } else {
            return kf_cli_fail(json, "system %s: one PIPELINE only (%s)", argv[1], s);
        }
    }
    if (!pipeline) return kf_cli_fail(json, "system %s: expected PIPELINE (a pipeline.json)", argv[1]);
    if (o.check.bench_min_runs > o.check.bench_max_runs) o.check.bench_max_runs = o.check.bench_min_runs;
    kf_ctx *ctx = kf_ctx_new();
    if (!ctx) return kf_cli_fail(json, "out of memory");
    char *out = NULL;
    int accepted = 0;
    kf_status st = bench ? kf_system_bench(ctx, pipeline, &o, &out, &accepted)
                         : kf_system_check(ctx, pipeline, &o, &out, &accepted);
    int rc;
    if (st) {
        rc = kf_cli_fail(json, "%s", kf_errmsg(ctx));
    } else {
        if (json) puts(out);
        else summary(out, bench);
        rc = accepted ? KF_EXIT_OK : KF_EXIT_REJECTED;
    }
    free(out);
    kf_ctx_free(ctx);
    return rc;
}
