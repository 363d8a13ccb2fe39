/*
 * cmd_system.c - `kforge system check|bench PIPELINE`: a pipeline of tasks judged end
 * to end (docs/system.md). Parses the options, runs, prints the JSON report or a short
 * summary, and maps the verdict to the exit code (0 accepted, 1 rejected, 2 usage or
 * pipeline error). `system run` works on the slots in turn through the public API and
 * keeps its record with kf_sysrun_save (sealed) and its page with the report's writer;
 * `system report` is `kforge report` on a system run's directory (one renderer, the
 * library's), with --json the record and its counts.
 */
#include "cli.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

static void usage(FILE *f) {
    fprintf(
        f,
        "usage: kforge system check PIPELINE [--slot SLOT=FILE]... [options]\n"
        "       kforge system bench PIPELINE [--slot SLOT=FILE]... [--vs SLOT=FILE]... [options]\n"
        "       kforge system run PIPELINE --run DIR [--budget N] [--slots K] [--agent A] [--lessons PATH]\n"
        "       kforge system report DIR [--format md|html] [-o FILE] [--json]\n"
        "  check: every slot candidate on its own task, the end-to-end outputs of every step\n"
        "         against the reference pipeline's, each candidate on the tensors its stages\n"
        "         receive in the pipeline, and its call count\n"
        "  bench: the check, then the whole step timed A/B against the reference pipeline\n"
        "         (or the --vs configuration): per-stage shares, the end-to-end gain and its\n"
        "         interval, the roofline fraction\n"
        "  run:   profile the step, run the kernel loop (N evaluations) on the slot with the\n"
        "         largest share x headroom, re-judge its export in the step; kept only when the\n"
        "         gain's interval is above zero, else local_win_global_loss (a lesson with\n"
        "         --lessons); K slots in turn, re-profiled after every keep\n"
        "  report: the run's report (as `kforge report DIR`, Markdown on stdout by default):\n"
        "         shares before and after, the end-to-end speedup, every local-win/global-loss\n"
        "         case and the run's rate beside Arbor's 39%%, the seals\n"
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

/* ---- system run and system report: the loop over slots, from the public API ---- */

/* One system bench as parsed JSON; NULL after printing the error. */
static json_t *sys_bench_json(kf_ctx *ctx, const char *pipeline, kf_system_opts *o) {
    char *out = NULL;
    int acc = 0;
    kf_status st = kf_system_bench(ctx, pipeline, o, &out, &acc);
    if (st) {
        fprintf(stderr, "kforge: error: %s\n", kf_errmsg(ctx));
        return NULL;
    }
    json_t *r = json_loads(out, 0, NULL);
    free(out);
    return r;
}

/* The slot score of a profile: its stages' shares times their headroom to the roofline
 * (1 - roofline_fraction; 1 where there is no roofline), summed per slot. */
static double slot_score(json_t *prof, const char *slot) {
    double g = 0;
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(prof, "stages"), i, v) {
        if (strcmp(json_string_value(json_object_get(v, "slot")), slot)) continue;
        json_t *f = json_object_get(v, "candidate_roofline_fraction");
        double head = json_is_number(f) ? 1 - json_number_value(f) : 1;
        if (head < 0) head = 0;
        g += json_number_value(json_object_get(v, "candidate_share")) * head;
    }
    return g;
}

static void add_lesson(const char *lessons, json_t *it, const char *task, const char *pipeline) {
    kf_ctx *ctx = kf_ctx_new();
    kf_lessons *db = NULL;
    if (!ctx || kf_lessons_open(ctx, lessons, NULL, &db)) {
        fprintf(stderr, "kforge: warning: lessons %s: %s\n", lessons, ctx ? kf_errmsg(ctx) : "out of memory");
        kf_ctx_free(ctx);
        return;
    }
    char sit[1024], act[1024];
    snprintf(sit, sizeof sit, "A %s kernel that wins alone on its task (%.2fx) inside the pipeline %s", task,
             json_number_value(json_object_get(it, "local_speedup")), pipeline);
    snprintf(
        act, sizeof act,
        "Judge it in the step before keeping it: there it changed the step by %+.1f%% (interval [%+.1f%%, "
        "%+.1f%%]); its stage's real inputs or neighbours cost more than its own win",
        100 * json_number_value(json_object_get(it, "system_gain")),
        100 * json_number_value(json_array_get(json_object_get(it, "system_gain_ci95"), 0)),
        100 * json_number_value(json_array_get(json_object_get(it, "system_gain_ci95"), 1)));
    json_t *l = json_pack("{s:{s:s},s:s,s:s,s:[s]}", "situation", "text", sit, "action", act, "source",
                          "distilled", "tags", "system/local_win_global_loss");
    char *txt = l ? json_dumps(l, JSON_COMPACT) : NULL;
    char id[64];
    if (!txt || kf_lessons_add_json(db, txt, id))
        fprintf(stderr, "kforge: warning: lesson not recorded: %s\n", kf_errmsg(ctx));
    free(txt);
    json_decref(l);
    kf_lessons_close(db);
    kf_ctx_free(ctx);
}

static int cmd_run(int argc, char **argv) {
    const char *pipeline = NULL, *dir = NULL, *lessons = NULL, *agent = NULL;
    int budget = 4, rounds = 2, json = 0;
    double min_time = 0.1, d;
    for (int i = 2; i < argc; i++) {
        const char *s = argv[i];
        if (!strcmp(s, "--json")) json = 1;
        else if (!strcmp(s, "--run") && i + 1 < argc) dir = argv[++i];
        else if (!strcmp(s, "--lessons") && i + 1 < argc) lessons = argv[++i];
        else if (!strcmp(s, "--agent") && i + 1 < argc) agent = argv[++i];
        else if (!strcmp(s, "--budget") && i + 1 < argc) {
            if (kf_cli_number(s, argv[++i], 1, 10000, &d)) return KF_EXIT_USAGE;
            budget = (int)d;
        } else if (!strcmp(s, "--slots") && i + 1 < argc) {
            if (kf_cli_number(s, argv[++i], 1, 64, &d)) return KF_EXIT_USAGE;
            rounds = (int)d;
        } else if (!strcmp(s, "--min-time") && i + 1 < argc) {
            if (kf_cli_number(s, argv[++i], 0, 3600, &min_time)) return KF_EXIT_USAGE;
        } else if (s[0] == '-')
            return kf_cli_fail(json, "system run: unknown option %s (or it lacks its value)", s);
        else if (!pipeline) pipeline = s;
        else return kf_cli_fail(json, "system run: one PIPELINE only (%s)", s);
    }
    if (!pipeline || !dir) return kf_cli_fail(json, "system run: expected PIPELINE and --run DIR");
    if (mkdir(dir, 0755) && errno != EEXIST) return kf_cli_fail(json, "%s: %s", dir, strerror(errno));
    char path[4200];
    snprintf(path, sizeof path, "%s/system.json", dir);
    if (!access(path, F_OK)) return kf_cli_fail(json, "%s: a system run is already there", dir);
    kf_ctx *ctx = kf_ctx_new();
    if (!ctx) return kf_cli_fail(json, "out of memory");
    kf_system_opts o;
    kf_system_opts_init(&o);
    o.task_checks = 0;
    o.check.bench_min_time_s = min_time;
    /* the kept configuration: one file per slot */
    static char kept_sel[KF_SYSTEM_MAX_SLOTS][4400];
    int nkept = 0;
    json_t *rec = json_pack("{s:s,s:i,s:[]}", "pipeline", pipeline, "budget", budget, "iterations");
    json_t *prof = sys_bench_json(ctx, pipeline, &o), *first = prof ? json_incref(prof) : NULL;
    int rc = prof ? KF_EXIT_OK : KF_EXIT_USAGE;
    if (prof) json_object_set(rec, "profile_before", json_object_get(prof, "stages"));
    json_t *tried = json_object();
    double base_ns =
        prof ? json_number_value(json_object_get(json_object_get(prof, "step_ns"), "baseline")) : 0;
    for (int round = 0; prof && round < rounds; round++) {
        /* the slot: the largest share times headroom among the slots not tried yet */
        const char *best = NULL, *best_dir = NULL;
        double g = -1;
        size_t i;
        json_t *v;
        json_array_foreach(json_object_get(prof, "slots"), i, v) {
            const char *n = json_string_value(json_object_get(v, "name"));
            if (json_object_get(tried, n)) continue;
            double s = slot_score(prof, n);
            if (s > g) g = s, best = n, best_dir = json_string_value(json_object_get(v, "task_dir"));
        }
        if (!best) break;
        json_object_set_new(tried, best, json_true());
        fprintf(stderr, "kforge: system run: slot %s (share x headroom %.3f)\n", best, g);
        json_t *it = json_pack("{s:s,s:f}", "slot", best, "score", g);
        json_array_append_new(json_object_get(rec, "iterations"), it);
        /* the kernel loop on that slot's task */
        char rdir[4300], edir[4400];
        snprintf(rdir, sizeof rdir, "%s/slot-%s", dir, best);
        snprintf(edir, sizeof edir, "%s/export", rdir);
        kf_run_opts ro;
        kf_run_opts_init(&ro);
        ro.task_dir = best_dir;
        ro.run_dir = rdir;
        ro.budget = budget;
        ro.min_time_s = min_time;
        ro.lessons = "none";
        if (agent) ro.agent = agent;
        char *sum = NULL, *ej = NULL;
        kf_status st = kf_run(ctx, &ro, &sum);
        free(sum);
        if (st) {
            json_object_set_new(it, "outcome", json_string("run_failed"));
            json_object_set_new(it, "error", json_string(kf_errmsg(ctx)));
            continue;
        }
        json_object_set_new(it, "run", json_string(rdir));
        st = kf_run_export(ctx, rdir, edir, &ej);
        json_t *ex = ej ? json_loads(ej, 0, NULL) : NULL;
        free(ej);
        const char *disp = json_string_value(json_object_get(ex, "dispatcher"));
        if (st || !disp) {
            json_object_set_new(it, "outcome", json_string("no_local_win"));
            json_object_set_new(it, "error", json_string(st ? kf_errmsg(ctx) : "no dispatcher"));
            json_decref(ex);
            continue;
        }
        char cand[4800];
        snprintf(cand, sizeof cand, "%s/%s", edir, disp);
        json_decref(ex);
        json_object_set_new(it, "candidate", json_string(cand));
        /* re-judged in the pipeline against the kept configuration */
        kf_system_opts so = o;
        so.nslots = so.nvs = 0;
        for (int k = 0; k < nkept; k++) so.slots[so.nslots++] = so.vs[so.nvs++] = kept_sel[k];
        static char sel[4900];
        snprintf(sel, sizeof sel, "%s=%s", best, cand);
        so.slots[so.nslots++] = sel;
        so.local_bench = 1;
        json_t *r = sys_bench_json(ctx, pipeline, &so);
        if (!r) {
            rc = KF_EXIT_USAGE;
            break;
        }
        json_t *loc = json_array_get(json_object_get(r, "local"), so.nslots - 1 - 0);
        size_t li;
        json_t *lv;
        json_array_foreach(json_object_get(r, "local"), li,
                           lv) if (!strcmp(json_string_value(json_object_get(lv, "slot")), best)) loc = lv;
        json_object_set(it, "local_speedup", json_object_get(loc, "speedup"));
        json_object_set(it, "system_gain", json_object_get(r, "gain"));
        json_object_set(it, "system_gain_ci95", json_object_get(r, "gain_ci95"));
        json_object_set(it, "verdict", json_object_get(r, "verdict"));
        /* what the report shows beside the outcome: the local figures with their intervals,
         * the step's times and per-stage shares of this judgement, and why it was refused */
        if (loc) json_object_set(it, "local", loc);
        json_object_set(it, "step_ns", json_object_get(r, "step_ns"));
        json_object_set(it, "keep", json_object_get(r, "keep"));
        json_object_set(it, "noise", json_object_get(r, "noise"));
        json_object_set(it, "reasons", json_object_get(r, "reasons"));
        json_object_set(it, "stages", json_object_get(r, "stages"));
        int keep = json_is_true(json_object_get(r, "keep")) &&
                   !strcmp(json_string_value(json_object_get(r, "verdict")), "accepted");
        const char *oc = keep                                        ? "system_keep"
                         : json_is_true(json_object_get(loc, "win")) ? "local_win_global_loss"
                                                                     : "no_system_gain";
        json_object_set_new(it, "outcome", json_string(oc));
        fprintf(stderr, "kforge: system run: slot %s: %s (alone %.2fx, in the step %+.1f%%)\n", best, oc,
                json_number_value(json_object_get(loc, "speedup")),
                100 * json_number_value(json_object_get(r, "gain")));
        if (!strcmp(oc, "local_win_global_loss") && lessons) add_lesson(lessons, it, best, pipeline);
        if (keep && nkept < KF_SYSTEM_MAX_SLOTS) {
            memcpy(kept_sel[nkept++], sel, strlen(sel) + 1);
            json_decref(prof);
            prof = r; /* re-profiled: the kept configuration's own shares */
            /* a kept slot may be worked on again after the others */
        } else {
            json_decref(r);
        }
    }
    if (prof) {
        json_t *kept = json_object();
        for (int k = 0; k < nkept; k++) {
            char *eq = strchr(kept_sel[k], '=');
            char name[256];
            snprintf(name, sizeof name, "%.*s", (int)(eq - kept_sel[k]), kept_sel[k]);
            json_object_set_new(kept, name, json_string(eq + 1));
        }
        json_object_set_new(rec, "kept", kept);
        /* the final configuration against the reference pipeline */
        kf_system_opts fo = o;
        fo.nslots = 0;
        for (int k = 0; k < nkept; k++) fo.slots[fo.nslots++] = kept_sel[k];
        json_t *fin = nkept ? sys_bench_json(ctx, pipeline, &fo) : json_incref(first);
        if (fin) {
            json_object_set(rec, "profile_after", json_object_get(fin, "stages"));
            /* nothing kept: the reference pipeline itself, no gain */
            json_object_set_new(rec, "end_to_end_speedup",
                                nkept ? json_incref(json_object_get(fin, "speedup")) : json_real(1));
            json_object_set_new(rec, "end_to_end_gain_ci95",
                                nkept ? json_incref(json_object_get(fin, "gain_ci95"))
                                      : json_pack("[f,f]", 0.0, 0.0));
            json_decref(fin);
        }
        json_object_set_new(rec, "baseline_step_ns", json_real(base_ns));
        char *text = json_dumps(rec, JSON_COMPACT);
        if (!text || kf_sysrun_save(ctx, dir, text)) {
            rc = kf_cli_fail(json, "%s", text ? kf_errmsg(ctx) : "out of memory");
        } else if (json) {
            char *t = json_dumps(rec, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(6));
            if (t) puts(t);
            free(t);
        } else {
            printf("system run %s: %d slots kept; the record is %s (kforge system report %s)\n", pipeline,
                   nkept, path, dir);
        }
        free(text);
        if (rc == KF_EXIT_OK) kf_cli_report_write(dir, "html", NULL, "system run");
    }
    json_decref(prof);
    json_decref(first);
    json_decref(tried);
    json_decref(rec);
    kf_ctx_free(ctx);
    return rc;
}

/* system report: the same report as `kforge report DIR` (one renderer, the library's),
 * as Markdown on stdout by default; --json the record with its counts and integrity. */
static int cmd_report(int argc, char **argv) {
    const char *dir = NULL, *path = NULL, *format = "md";
    int json = 0;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--json")) json = 1;
        else if ((!strcmp(a, "-o") || !strcmp(a, "--output")) && i + 1 < argc) path = argv[++i];
        else if (!strcmp(a, "--format") && i + 1 < argc) format = argv[++i];
        else if (a[0] == '-' && a[1]) return kf_cli_fail(json, "system report: unknown option %s", a);
        else if (!dir) dir = a;
        else return kf_cli_fail(json, "system report: unexpected argument %s", a);
    }
    if (!dir) return kf_cli_fail(json, "system report: expected RUN (a system run's directory)");
    if (!json) {
        if (strcmp(format, "html") && strcmp(format, "md"))
            return kf_cli_fail(0, "system report --format %s: expected html or md", format);
        char sys[4200];
        snprintf(sys, sizeof sys, "%s/system.json", dir);
        if (access(sys, F_OK))
            return kf_cli_fail(0, "%s: not a system run's record (kforge report for a run)", sys);
        return kf_cli_report_write(dir, format, path, NULL);
    }
    kf_ctx *ctx = kf_ctx_new();
    char *out = NULL;
    kf_status st = ctx ? kf_report_run(ctx, dir, "json", &out, NULL) : KF_ENOMEM;
    int rc = st ? kf_cli_fail(1, "%s", ctx ? kf_errmsg(ctx) : "out of memory") : KF_EXIT_OK;
    if (!st) puts(out);
    free(out);
    kf_ctx_free(ctx);
    return rc;
}

int kf_cli_system(int argc, char **argv) {
    int json = 0;
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--json")) json = 1;
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? KF_EXIT_USAGE : KF_EXIT_OK;
    }
    if (!strcmp(argv[1], "run")) return cmd_run(argc, argv);
    if (!strcmp(argv[1], "report")) return cmd_report(argc, argv);
    int bench = !strcmp(argv[1], "bench");
    if (!bench && strcmp(argv[1], "check"))
        return kf_cli_fail(json, "system %s: expected check, bench, run or report (kforge system --help)",
                           argv[1]);
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
