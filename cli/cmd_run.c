/*
 * cmd_run.c - `kforge run`, `kforge tree`, `kforge best` (docs/run.md): the optimisation
 * loop over a run directory, and its lineage and winners; `kforge next` and `kforge
 * submit`, the loop driven from outside (docs/agents.md).
 */
#include "cli.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int kf_cli_run_exit(kf_status st) {
    return st == KF_EBUSY ? KF_EXIT_BUSY : st == KF_EENV ? KF_EXIT_ENV : KF_EXIT_USAGE;
}

/* Options shared by run, next and submit: search, bench and seed settings. 1: argv[*i]
 * (and its value) taken; 0: not one of them; -1: a bad value (reported). */
static int common_opt(kf_run_opts *o, int argc, char **argv, int *i, int json) {
    const char *a = argv[*i];
    double v;
    if (*i + 1 >= argc) return 0;
    const char *val = argv[*i + 1];
    if (!strcmp(a, "--seed")) {
        if (kf_cli_number(a, val, 0, 1.8e19, &v)) return -1;
        o->seed = (uint64_t)v;
        o->has_seed = 1;
    } else if (!strcmp(a, "--target")) {
        if (kf_cli_number(a, val, 1, 1e6, &o->target)) return -1;
    } else if (!strcmp(a, "--search")) {
        if (o->nsearch == 16) return kf_cli_fail(json, "--search: at most 16 settings"), -1;
        o->search[o->nsearch++] = val;
    } else if (!strcmp(a, "--critic-agent")) {
        o->critic_agent = val;
    } else if (!strcmp(a, "--critic")) {
        if (o->ncritic == 8) return kf_cli_fail(json, "--critic: at most 8 settings"), -1;
        o->critic[o->ncritic++] = val;
    } else if (!strcmp(a, "--hidden")) {
        if (kf_cli_number(a, val, 0, 1000, &v)) return -1;
        o->hidden = (int)v;
    } else if (!strcmp(a, "--min-runs")) {
        if (kf_cli_number(a, val, 1, 1e6, &v)) return -1;
        o->min_runs = (int)v;
    } else if (!strcmp(a, "--max-runs")) {
        if (kf_cli_number(a, val, 1, 1e6, &v)) return -1;
        o->max_runs = (int)v;
    } else if (!strcmp(a, "--min-time")) {
        if (kf_cli_number(a, val, 0, 600, &o->min_time_s)) return -1;
    } else if (!strcmp(a, "--precision")) {
        if (kf_cli_number(a, val, 0, 1, &o->precision)) return -1;
    } else if (!strcmp(a, "--lessons")) {
        o->lessons = val;
    } else if (!strcmp(a, "--pack-tokens")) {
        if (kf_cli_number(a, val, 1000, 1e9, &v)) return -1;
        o->pack_tokens = (int64_t)v;
    } else {
        return 0;
    }
    (*i)++;
    return 1;
}

static const char run_usage[] =
    "usage: kforge run TASK [options] | kforge run --resume RUN [options]   (docs/cli.md, docs/run.md)\n"
    "  --budget N        evaluations in all, the run's earlier ones included (20)\n"
    "  --run DIR         the run directory (runs/<task>-<date>)\n"
    "  --jobs N          evaluations at once, 1 to 64 (1; --resume: the run's): compiles and\n"
    "                    checks overlap, timed phases run one at a time\n"
    "  --seed N          the builtin proposer's walk (with --jobs 1: the same proposals)\n"
    "  --target X        stop at this geometric-mean speedup over the reference\n"
    "  --patience K      stop after K evaluations without a better one\n"
    "  --wall S          stop issuing work after S seconds\n"
    "  --search KEY=VALUE  a search setting (docs/run.md \"Selection\")\n"
    "  --critic KEY=VALUE  a setting of the Critic (docs/run.md \"The Critic\"); the run's,\n"
    "                    kept for --resume and tool mode\n"
    "  --critic-agent cmd:'COMMAND' | openai:MODEL   an advisory reviewer of every keep\n"
    "  --hidden N, --min-runs N, --max-runs N, --min-time S, --precision F\n"
    "                    check and timing settings\n"
    "                    (recorded: --resume and submit use them unless given)\n"
    "  --agent cmd:'COMMAND' | openai:MODEL, --with-builtin, --base-url URL,\n"
    "  --api-key-env NAME, --agent-timeout S, --tokens N      agents (docs/agents.md)\n"
    "  --pack-tokens N   each context pack's token budget (18000)\n"
    "  --screen-first    screen every proposal (the check, one short timing) and evaluate\n"
    "                    only those that beat their parent there in full (recorded)\n"
    "  --lessons PATH    a lessons database: for the packs (not given: the shared one if it\n"
    "                    exists) and, named, as the builtin's prior (docs/run.md \"Lessons\");\n"
    "                    \"default\": the shared one, named; \"none\": no lessons\n"
    "  --listen ADDR     let workers join at unix:PATH or tcp:HOST:PORT (docs/scale.md)\n"
    "  --devices all|0,2,5  one local worker per GPU;  --workers N  N local CPU workers\n"
    "  --launcher slurm  --workers N Slurm jobs (sbatch/srun), with --partition P, --gres G,\n"
    "                    --slurm-arg ARG; --secret-file F the run's secret (in the keys directory)\n"
    "  --json            print a summary object at the end\n";

int kf_cli_run(int argc, char **argv) {
    kf_run_opts o;
    kf_run_opts_init(&o);
    int json = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        double v;
        int more = i + 1 < argc, c;
        if (!strcmp(a, "--json")) json = 1;
        else if ((c = common_opt(&o, argc, argv, &i, json))) {
            if (c < 0) return KF_EXIT_USAGE;
        } else if (!strcmp(a, "--resume")) o.resume = 1;
        else if (!strcmp(a, "--with-builtin")) o.with_builtin = 1;
        else if (!strcmp(a, "--screen-first")) o.screen = 1;
        else if (!strcmp(a, "--agent") && more) o.agent = argv[++i];
        else if (!strcmp(a, "--base-url") && more) o.base_url = argv[++i];
        else if (!strcmp(a, "--api-key-env") && more) o.api_key_env = argv[++i];
        else if (!strcmp(a, "--run") && more) o.run_dir = argv[++i];
        else if (!strcmp(a, "--listen") && more) o.listen = argv[++i];
        else if (!strcmp(a, "--devices") && more) o.devices = argv[++i];
        else if (!strcmp(a, "--launcher") && more) o.launcher = argv[++i];
        else if (!strcmp(a, "--secret-file") && more) o.secret_file = argv[++i];
        else if ((!strcmp(a, "--partition") || !strcmp(a, "--gres") || !strcmp(a, "--slurm-arg")) && more) {
            static char sl[8][512];
            if (o.nslurm == 8) return kf_cli_fail(json, "%s: at most 8 Slurm arguments", a);
            if (!strcmp(a, "--slurm-arg")) snprintf(sl[o.nslurm], sizeof sl[0], "%s", argv[++i]);
            else snprintf(sl[o.nslurm], sizeof sl[0], "%s=%s", a, argv[++i]);
            o.slurm[o.nslurm] = sl[o.nslurm];
            o.nslurm++;
        } else if (!strcmp(a, "--workers") && more) {
            if (kf_cli_number(a, argv[++i], 1, KF_RUN_MAX_JOBS, &v)) return KF_EXIT_USAGE;
            o.workers = (int)v;
        } else if (!strcmp(a, "--lessons") && more) {
            static char def[4096];
            o.lessons = argv[++i];
            if (!strcmp(o.lessons, "default")) { /* the shared database, by name */
                kf_lessons_default_path(def, sizeof def);
                o.lessons = def;
            }
        } else if (!strcmp(a, "--budget") && more) {
            if (kf_cli_number(a, argv[++i], 0, 1e7, &v)) return KF_EXIT_USAGE;
            o.budget = (int)v;
        } else if (!strcmp(a, "--tokens") && more) {
            if (kf_cli_number(a, argv[++i], 1, 1e15, &v)) return KF_EXIT_USAGE;
            o.tokens = (int64_t)v;
        } else if (!strcmp(a, "--agent-timeout") && more) {
            if (kf_cli_number(a, argv[++i], 1, 86400, &o.agent_timeout_s)) return KF_EXIT_USAGE;
        } else if (!strcmp(a, "--wall") && more) {
            if (kf_cli_number(a, argv[++i], 1, 1e7, &o.wall_s)) return KF_EXIT_USAGE;
        } else if (!strcmp(a, "--jobs") && more) {
            const char *val = argv[++i];
            char *end;
            errno = 0;
            long j = strtol(val, &end, 10);
            if (errno || end == val || *end || j < 1 || j > KF_RUN_MAX_JOBS)
                return kf_cli_fail(json, "--jobs %s: expected a whole number of evaluations at once, 1 to %d",
                                   val, KF_RUN_MAX_JOBS);
            o.jobs = (int)j;
        } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(run_usage, stdout);
            return KF_EXIT_OK;
        } else if (!strcmp(a, "--patience") && more) {
            if (kf_cli_number(a, argv[++i], 1, 1e7, &v)) return KF_EXIT_USAGE;
            o.patience = (int)v;
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
    if (st) {
        kf_cli_fail(json, "%s", kf_errmsg(ctx));
        rc = kf_cli_run_exit(st);
    } else {
        /* the run's page, left in its directory (docs/report.md) */
        json_t *sj = summary ? json_loads(summary, 0, NULL) : NULL;
        const char *rd = json_string_value(json_object_get(sj, "run"));
        if (rd) kf_cli_report_write(rd, "html", NULL, "run");
        json_decref(sj);
        if (json && summary) printf("%s\n", summary);
    }
    free(summary);
    kf_ctx_free(ctx);
    return rc;
}

/* kforge next RUN [--json] [search and bench options]
 * kforge submit RUN --parent N FILE [--category C] [--description TEXT] [--screen] [--json] [bench options]
 *               [--workers N | --devices all|0,2,5]   (docs/scale.md "Tool mode")
 * kforge submit RUN --promote N [--json] [bench options] (docs/agents.md) */
int kf_cli_tool(int argc, char **argv, int submit) {
    kf_run_opts o;
    kf_run_opts_init(&o);
    int json = 0, c;
    const char *file = NULL, *category = NULL;
    double parent = -1, promote = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int more = i + 1 < argc;
        if (!strcmp(a, "--json")) json = 1;
        else if ((c = common_opt(&o, argc, argv, &i, json))) {
            if (c < 0) return KF_EXIT_USAGE;
        } else if (submit && !strcmp(a, "--parent") && more) {
            if (kf_cli_number(a, argv[++i], 0, 9e15, &parent)) return KF_EXIT_USAGE;
        } else if (submit && !strcmp(a, "--promote") && more) {
            if (kf_cli_number(a, argv[++i], 1, 9e15, &promote)) return KF_EXIT_USAGE;
        } else if (submit && !strcmp(a, "--screen")) o.screen = 1;
        else if (submit && !strcmp(a, "--category") && more) category = argv[++i];
        else if (submit && !strcmp(a, "--description") && more) o.description = argv[++i];
        else if (submit && !strcmp(a, "--devices") && more) o.devices = argv[++i];
        else if (submit && !strcmp(a, "--workers") && more) {
            double w;
            if (kf_cli_number(a, argv[++i], 1, KF_RUN_MAX_JOBS, &w)) return KF_EXIT_USAGE;
            o.workers = (int)w;
        } else if (a[0] == '-') return kf_cli_fail(json, "kforge %s: unknown option %s", argv[0], a);
        else if (!o.run_dir) o.run_dir = a;
        else if (submit && !file) file = a;
        else return kf_cli_fail(json, "kforge %s: unexpected argument %s", argv[0], a);
    }
    if (promote > 0 && (file || parent >= 0 || category || o.screen))
        return kf_cli_fail(json,
                           "kforge submit --promote N: the screened node's own text, parent and category "
                           "are evaluated in full (no FILE, --parent, --category or --screen)");
    if (!o.run_dir || (submit && promote < 0 && (!file || parent < 0)))
        return kf_cli_fail(
            json, submit ? "usage: kforge submit RUN --parent N FILE [--category C] [--description TEXT] "
                           "[--screen] "
                           "[--json] | kforge submit RUN --promote N [--json]"
                         : "usage: kforge next RUN [--json]");
    kf_ctx *ctx = kf_ctx_new();
    char *out = NULL;
    int outcome = 0;
    kf_status st = !submit ? kf_run_next(ctx, &o, json, &out)
                   : promote > 0
                       ? kf_run_promote(ctx, &o, (int64_t)promote, json, &out, &outcome)
                       : kf_run_submit(ctx, &o, (int64_t)parent, file, category, json, &out, &outcome);
    int rc = KF_EXIT_OK;
    if (st) {
        kf_cli_fail(json, "%s", kf_errmsg(ctx));
        rc = kf_cli_run_exit(st);
    } else {
        fputs(out, stdout);
        if (json) fputc('\n', stdout);
        rc = outcome == 0 ? KF_EXIT_OK : outcome == 1 ? KF_EXIT_REJECTED : KF_EXIT_USAGE;
    }
    free(out);
    kf_ctx_free(ctx);
    return rc;
}

/* kforge tree RUN [--json], kforge best RUN [--json] */
int kf_cli_tree(int argc, char **argv, int best) {
    int json = 0;
    const char *dir = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json")) json = 1;
        else if (argv[i][0] == '-')
            return kf_cli_fail(json, "kforge %s: unknown option %s", argv[0], argv[i]);
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
