/*
 * main.c - the kforge command: dispatch to one file per subcommand.
 */
#include "cli.h"

#include <errno.h>
#include <jansson.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static void usage(FILE *f) {
    fprintf(f, "usage: kforge <command> [options]\n"
               "\n"
               "commands:\n"
               "  check TASK CANDIDATE [--json] [--seed N] [--param K=V]... [--sanitize[=TOOLS]]\n"
               "        check a candidate against the task's reference on visible, hidden and\n"
               "        edge shapes; exit 0 accepted, 1 rejected, 2 usage or task error.\n"
               "        --sanitize (CUDA): then run it under compute-sanitizer (memcheck,\n"
               "        racecheck, initcheck, or the comma-separated TOOLS)\n"
               "  bench TASK CANDIDATE [--vs FILE] [--json] [check options]\n"
               "        check, then time against the reference (or FILE) on the visible shapes\n"
               "  validate TASK [--json]\n"
               "        check the task itself: the reference runs and trivial outputs fail\n"
               "  device-info [--json] [--refresh] [--device N]\n"
               "        a CUDA device's attributes and measured ceilings (cached; --refresh\n"
               "        measures again)\n"
               "  run TASK [--budget N] [--run DIR] [--seed N] [--target X] [--patience K]\n"
               "      [--jobs N] [--search K=V]... [--critic K=V]... [--agent cmd:'COMMAND' | openai:MODEL]\n"
               "      [--tokens N]\n"
               "      | run --resume RUN\n"
               "        the optimisation loop (builtin proposer, or an agent): every evaluation\n"
               "        recorded in RUN's store, survives being killed (docs/run.md)\n"
               "  tree RUN [--json]    the run's lineage\n"
               "  best RUN [--json]    the best verified node per visible shape\n"
               "  next RUN [--json]    tool mode: the context pack of the next action (docs/agents.md)\n"
               "  submit RUN --parent N FILE [--category C] [--description TEXT] [--json]\n"
               "        tool mode: check, time and record FILE as a child of node N;\n"
               "        exit 0 passed, 1 rejected, 2 error; --workers N | --devices D: on\n"
               "        local workers (default: the run's, docs/scale.md)\n"
               "  export RUN -o DIR [--torch] [--json]\n"
               "        write the winners and a dispatcher by shape, re-verified first\n"
               "        (exit 1: the dispatcher was rejected and not written); --torch adds\n"
               "        DIR/torch, the dispatcher as a PyTorch op with its test (docs/torch.md)\n"
               "  import kernelbench PROBLEM.py -o TASKDIR | DIR [-o OUTDIR] [--scale LO,HI] [--json]\n"
               "        KernelBench-format problems as C tasks with a PyTorch reference, validated\n"
               "        (docs/torch.md; exit 0 validated, 1 not valid, 2 refused or error)\n"
               "  report RUN [-o FILE] [--format html|md]\n"
               "        the run's lineage as one self-contained HTML page (RUN/report.html) or\n"
               "        Markdown (stdout): timeline, tree, winners, roofline, failures, integrity\n"
               "  lessons add|search|list|show|distill|export|import [--lessons PATH] [--json]\n"
               "        scoped lessons from runs, agents and people, and their retrieval\n"
               "        (docs/lessons.md; `kforge lessons --help`)\n"
               "  system check|bench PIPELINE [--slot SLOT=FILE]... [--vs SLOT=FILE]... [--json]\n"
               "        a pipeline of tasks judged end to end (docs/system.md; `kforge system --help`)\n"
               "  worker --connect ADDR --secret-file F [--device cuda:K | --cpus LIST]\n"
               "        evaluate a coordinator's requests on this device (docs/scale.md)\n"
               "  drain RUN|ADDR    finish what is in flight on a run's workers, then stop\n"
               "  version\n"
               "\n"
               "options: --hidden N (hidden shapes to draw), --timeout S (per call),\n"
               "         --compile-timeout S (per compile, default 60),\n"
               "         --min-time S, --min-runs N, --max-runs N, --precision F (bench), -v (progress)\n"
               "docs: docs/cli.md, docs/tasks.md\n");
}

static int fail(int json, const char *code, const char *msg) {
    fprintf(stderr, "kforge: error: %s\n", msg);
    if (json) {
        json_t *o = json_pack("{s:s, s:s}", "verdict", "error", "error", msg);
        if (o && code) json_object_set_new(o, "code", json_string(code));
        char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
        if (s) printf("%s\n", s);
        free(s);
        json_decref(o);
    }
    return KF_EXIT_USAGE;
}

int kf_cli_fail(int json, const char *fmt, ...) {
    char msg[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return fail(json, NULL, msg);
}

int kf_cli_fail_code(int json, const char *code, const char *msg) { return fail(json, code, msg); }

int kf_cli_number(const char *opt, const char *s, double lo, double hi, double *out) {
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

int main(int argc, char **argv) {
    /* kforge allocates and frees many large buffers (inputs, outputs): keep them in the
     * heap instead of fresh mmaps, so each is not faulted in page by page again */
    mallopt(M_MMAP_THRESHOLD, 1 << 30);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
    if (argc < 2) {
        usage(stderr);
        return KF_EXIT_USAGE;
    }
    const char *cmd = argv[1];
    /* COMMAND --help: run and lessons have their own; the others print the synopsis */
    if (strcmp(cmd, "run") && strcmp(cmd, "lessons") && strcmp(cmd, "system"))
        for (int i = 2; i < argc; i++)
            if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
                usage(stdout);
                return 0;
            }
    if (!strcmp(cmd, "check")) return kf_cli_check(argc - 1, argv + 1, 0);
    if (!strcmp(cmd, "bench")) return kf_cli_check(argc - 1, argv + 1, 1);
    if (!strcmp(cmd, "validate")) return kf_cli_validate(argc - 1, argv + 1);
    if (!strcmp(cmd, "device-info")) return kf_cli_device_info(argc - 1, argv + 1);
    if (!strcmp(cmd, "run")) return kf_cli_run(argc - 1, argv + 1);
    if (!strcmp(cmd, "tree")) return kf_cli_tree(argc - 1, argv + 1, 0);
    if (!strcmp(cmd, "best")) return kf_cli_tree(argc - 1, argv + 1, 1);
    if (!strcmp(cmd, "next")) return kf_cli_tool(argc - 1, argv + 1, 0);
    if (!strcmp(cmd, "submit")) return kf_cli_tool(argc - 1, argv + 1, 1);
    if (!strcmp(cmd, "export")) return kf_cli_export(argc - 1, argv + 1);
    if (!strcmp(cmd, "lessons")) return kf_cli_lessons(argc - 1, argv + 1);
    if (!strcmp(cmd, "report")) return kf_cli_report(argc - 1, argv + 1);
    if (!strcmp(cmd, "system")) return kf_cli_system(argc - 1, argv + 1);
    if (!strcmp(cmd, "worker")) return kf_cli_worker(argc - 1, argv + 1);
    if (!strcmp(cmd, "drain")) return kf_cli_drain(argc - 1, argv + 1);
    if (!strcmp(cmd, "import")) return kf_cli_import(argc - 1, argv + 1);
    if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) {
        printf("kforge %s\n", KF_VERSION);
        return 0;
    }
    if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
        usage(stdout);
        return 0;
    }
    fprintf(stderr, "kforge: unknown command '%s'\n", cmd);
    usage(stderr);
    return KF_EXIT_USAGE;
}
