/*
 * sanitize.c - `kforge check --sanitize`: after a CUDA candidate has been accepted, run
 * it once more on every visible shape under compute-sanitizer (memcheck, racecheck,
 * initcheck), one GPU worker per tool, and turn the tools' findings into the rejection
 * reason `sanitizer`.
 *
 * Each tool runs the ordinary kforge-worker through the sandbox layer's wrapper option
 * (compute-sanitizer --tool T ... kforge-worker ARGS), with the report written to a file
 * in the session's private directory (the candidate's device printf goes to the worker's
 * stdout, never into the report). Calls are marked KF_RUN_PRECISE: every buffer is a
 * device allocation of its own, exactly its size, so memcheck sees a read one element
 * past an input (which the normal path's guard zones cannot see, reads being harmless
 * there) and initcheck sees output memory that was never written. Inputs are fresh,
 * staged as always.
 *
 * Guarantees: a finding once the worker is ready (an error count in the report, or the
 * tool's error exit code when the report has no summary) always rejects; a tool that
 * could not run or did not finish (no device support, a worker that failed to start, a
 * call past the scaled deadline without a finding) is reported as not run, with the
 * reason, and does not reject. Not done: synccheck, leak checks (the worker's own
 * allocations), hidden and edge shapes, and any defence against a kernel that behaves
 * well only under instrumentation (it can measure its own slowdown): a clean report is
 * evidence, not proof.
 */
#define _GNU_SOURCE
#include "check.h"

#include <errno.h>
#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SAN_EXIT 86            /* --error-exitcode: "the tool found errors" */
#define SAN_LOG_CAP (1u << 20) /* report bytes read back */
#define REPORT_LINES 40
#define REPORT_CAP 4096

static const struct {
    unsigned bit;
    const char *name;
} tools[] = {{KF_SANITIZE_MEMCHECK, "memcheck"},
             {KF_SANITIZE_RACECHECK, "racecheck"},
             {KF_SANITIZE_INITCHECK, "initcheck"}};

unsigned kf_sanitize_parse_tools(const char *list) {
    unsigned bits = 0;
    const char *p = list;
    while (p && *p) {
        size_t n = strcspn(p, ",");
        unsigned bit = 0;
        for (size_t i = 0; i < sizeof tools / sizeof tools[0]; i++)
            if (strlen(tools[i].name) == n && !strncmp(p, tools[i].name, n)) bit = tools[i].bit;
        if (!bit) return 0;
        bits |= bit;
        p += n;
        if (*p == ',') p++;
    }
    return bits;
}

static int is_exe(const char *path) {
    struct stat sb;
    return path && *path && !stat(path, &sb) && S_ISREG(sb.st_mode) && !access(path, X_OK);
}

int kf_sanitize_find(char *out, size_t n, char *why, size_t wn) {
    const char *env = getenv("KFORGE_SANITIZER");
    if (env && *env) {
        if (is_exe(env)) {
            snprintf(out, n, "%s", env);
            return 0;
        }
        snprintf(why, wn, "KFORGE_SANITIZER=%s is not an executable file", env);
        return -1;
    }
    char cand[PATH_MAX];
    const char *roots[] = {getenv("CUDA_HOME"), getenv("CUDA_PATH"), "/usr/local/cuda"};
    for (size_t i = 0; i < sizeof roots / sizeof roots[0]; i++) {
        if (!roots[i] || !*roots[i]) continue;
        snprintf(cand, sizeof cand, "%s/compute-sanitizer/compute-sanitizer", roots[i]);
        if (is_exe(cand)) goto found;
        snprintf(cand, sizeof cand, "%s/bin/compute-sanitizer", roots[i]);
        if (is_exe(cand)) goto found;
    }
    glob_t g;
    if (glob("/usr/local/cuda-*/compute-sanitizer/compute-sanitizer", 0, NULL, &g) == 0) {
        for (size_t i = g.gl_pathc; i-- > 0;) /* the newest toolkit first */
            if (is_exe(g.gl_pathv[i])) {
                snprintf(cand, sizeof cand, "%s", g.gl_pathv[i]);
                globfree(&g);
                goto found;
            }
        globfree(&g);
    }
    const char *path = getenv("PATH");
    char *dup = kf__strdup(path && *path ? path : "/usr/local/bin:/usr/bin:/bin"), *save = NULL;
    for (char *d = dup ? strtok_r(dup, ":", &save) : NULL; d; d = strtok_r(NULL, ":", &save)) {
        snprintf(cand, sizeof cand, "%s/compute-sanitizer", d);
        if (is_exe(cand)) {
            free(dup);
            goto found;
        }
    }
    free(dup);
    snprintf(why, wn,
             "looked in $CUDA_HOME, $CUDA_PATH, /usr/local/cuda and /usr/local/cuda-* "
             "(compute-sanitizer/ and bin/) and on PATH; set KFORGE_SANITIZER to its path");
    return -1;
found:
    snprintf(out, n, "%s", cand);
    return 0;
}

/* One line of the report without the "=========" prefix; *top = 1 for a headline (one
 * space after the prefix), 0 for a detail line (indented). */
static const char *strip(const char *line, size_t len, size_t *out_len, int *top) {
    size_t i = 0;
    while (i < len && line[i] == '=') i++;
    int prefixed = i >= 5;
    if (!prefixed) i = 0;
    size_t sp = 0;
    while (i < len && (line[i] == ' ' || line[i] == '\t')) i++, sp++;
    *top = prefixed && sp <= 1;
    *out_len = len - i;
    while (*out_len && (line[i + *out_len - 1] == '\r' || line[i + *out_len - 1] == ' ')) (*out_len)--;
    return line + i;
}

static int starts(const char *s, size_t n, const char *word) {
    size_t w = strlen(word);
    return n >= w && !strncmp(s, word, w);
}

void kf_sanitize_parse(const char *log, int exit_code, kf_san_report *r) {
    memset(r, 0, sizeof *r);
    int summary_errors = -1, race_errors = -1, lines = 0, want_at = 0;
    size_t ro = 0;
    for (const char *p = log ? log : ""; *p;) {
        const char *eol = strchr(p, '\n');
        size_t len = eol ? (size_t)(eol - p) : strlen(p), n;
        int top;
        const char *s = strip(p, len, &n, &top);
        if (lines < REPORT_LINES && ro + len + 2 < REPORT_CAP) {
            memcpy(r->report + ro, p, len);
            ro += len;
            r->report[ro++] = '\n';
            r->report[ro] = 0;
            lines++;
        }
        unsigned long a = 0, b = 0, c = 0;
        (void)a;
        const char *sum = memmem(s, n, "ERROR SUMMARY:", 14);
        const char *race = memmem(s, n, "RACECHECK SUMMARY:", 18);
        if (race) {
            r->summary = 1;
            /* "RACECHECK SUMMARY: 3 hazards displayed (2 errors, 1 warning)" */
            const char *paren = memchr(race, '(', n - (size_t)(race - s));
            const char *comma = paren ? memchr(paren, ',', n - (size_t)(paren - s)) : NULL;
            if (paren && sscanf(paren + 1, "%lu", &b) == 1) race_errors = (int)(b > 1000000 ? 1000000 : b);
            if (comma && sscanf(comma + 1, "%lu", &c) == 1) r->warnings = (int)(c > 1000000 ? 1000000 : c);
        } else if (sum) {
            r->summary = 1;
            if (sscanf(sum + 14, "%lu", &a) == 1 && summary_errors < 0)
                summary_errors = (int)(a > 1000000 ? 1000000 : a);
        } else if (top && n && !r->first[0] && !starts(s, n, "COMPUTE-SANITIZER") &&
                   !starts(s, n, "LEAK SUMMARY") && !starts(s, n, "Warning") &&
                   !starts(s, n, "Target application") && !starts(s, n, "This ")) {
            snprintf(r->first, sizeof r->first, "%.*s", (int)(n > 300 ? 300 : n), s);
            want_at = 1;
        } else if (want_at && !top && (starts(s, n, "at ") || starts(s, n, "and "))) {
            size_t fl = strlen(r->first);
            snprintf(r->first + fl, sizeof r->first - fl, " %.*s", (int)(n > 200 ? 200 : n), s);
            want_at = starts(s, n, "at ") ? 0 : want_at;
        } else if (want_at && top) {
            want_at = 0;
        }
        p = eol ? eol + 1 : p + len;
    }
    /* racecheck's own summary counts errors apart from warnings: it decides for racecheck */
    r->errors = race_errors >= 0 ? race_errors : summary_errors > 0 ? summary_errors : 0;
    if (!r->summary && exit_code == SAN_EXIT) {
        /* no summary, but the tool says it found errors: believed */
        r->errors = 1;
        if (!r->first[0])
            snprintf(r->first, sizeof r->first,
                     "compute-sanitizer exited with its error exit code "
                     "(%d) and no readable summary",
                     SAN_EXIT);
    }
    if (r->errors == 0) r->first[0] = 0;
}

kf_status kf_sanitize_prepare(kf_ctx *ctx, const kf_task *t, const kf_opts *o, char *path, size_t n) {
    if (!o->sanitize) return KF_OK;
    if (o->sanitize & ~KF_SANITIZE_ALL)
        return kf__err(ctx, KF_EUSAGE, "--sanitize: unknown tool bits 0x%x", o->sanitize);
    if (!kf_backend_has(kf_backend_get(t->backend), KF_BACKEND_SANITIZE))
        return kf__err(ctx, KF_EUSAGE,
                       "--sanitize runs compute-sanitizer, for CUDA tasks only; "
                       "%s is a %s task",
                       t->name, t->backend);
    char why[512];
    if (kf_sanitize_find(path, n, why, sizeof why))
        return kf__err(ctx, KF_EBACKEND, "compute-sanitizer not found: %s", why);
    return KF_OK;
}

/* One tool over every visible shape; the tool's JSON object on out. */
static kf_status run_tool(kf_sess *s, const char *san, int ti, const kf_shape *const *shapes, int nsh,
                          size_t arena, kf_verdict_tool *out) {
    const kf_task *t = s->t;
    const char *name = tools[ti].name;
    char logpath[PATH_MAX + 64], exitcode[16], note[700] = "";
    snprintf(logpath, sizeof logpath, "%s/sanitizer-%s.log", s->workdir, name);
    snprintf(exitcode, sizeof exitcode, "%d", SAN_EXIT);
    unlink(logpath);
    /* API errors are the worker's own business (it reports them); only device findings
     * count. --print-limit keeps a flood of one error short; --launch-timeout (default
     * 10 s for the worker to reach cuInit) is generous on a loaded host. */
    const char *wrap[16] = {san,      "--tool",           name, "--error-exitcode",
                            exitcode, "--print-limit",    "20", "--report-api-errors",
                            "no",     "--launch-timeout", "60"};
    int nw = 11;
    /* memcheck: a padding buffer after every allocation, so that an input whose size is a
     * multiple of the allocation granularity is not followed directly by another buffer
     * (a read past its end would land in valid memory) */
    if (tools[ti].bit == KF_SANITIZE_MEMCHECK) {
        wrap[nw++] = "--padding";
        wrap[nw++] = "4096";
    }
    wrap[nw++] = "--log-file";
    wrap[nw++] = logpath;
    double cpu = s->o->cpu_limit_s * 30 > 600 ? s->o->cpu_limit_s * 30 : 600;
    kf_worker_opts wo = {cpu, s->o->mem_limit, 300,  0,    NULL, 0,    wrap,
                         60,  s->t->entry,     NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
    kf_backend_worker_opts(s->be, &s->cbuild, &wo); /* the worker the build runs in */
    kf_side side;
    memset(&side, 0, sizeof side);
    side.b = &s->cbuild;
    kf_call_result fail;
    uint64_t t0 = kf__now_ns();
    int calls = 0, status = -1, started = 0;
    kf_status st = kf_worker_spawn(s->ctx, s->cbuild.so_path, arena, &wo, &side.w, &fail);
    if (st) {
        snprintf(note, sizeof note, "the worker did not start under compute-sanitizer: %s",
                 kf_errmsg(s->ctx));
        st = KF_OK; /* the tool's failure, not the check's */
    } else if (!side.w) {
        snprintf(note, sizeof note, "the worker did not start under compute-sanitizer: %s: %s",
                 kf_reason_name(fail.reason), fail.msg);
    } else {
        started = 1;
        for (int i = 0; i < nsh && !note[0]; i++) {
            kf_extents ex;
            char err[512], txt[256];
            kf_shape_format(t, shapes[i], txt, sizeof txt);
            if (kf_data_extents(t, shapes[i], &ex, err, sizeof err)) {
                snprintf(note, sizeof note, "at %s: %s", txt, err);
                break;
            }
            kf_inputs in;
            if (kf_data_gen_inputs(t, &ex, &s->rng, 0, &in)) {
                st = kf__err(s->ctx, KF_ENOMEM, "out of memory generating inputs");
                break;
            }
            kf_sess_place(s, &s->crng, &ex, 0, &side.lay);
            kf_poison p;
            kf_data_make_poison(t, &s->crng, &p);
            kf_call_result cr;
            kf_sess_call(s, &side, &ex, &in, &p, &cr);
            kf_data_free_inputs(t, &in);
            calls++;
            if (cr.st != KF_CALL_OK)
                snprintf(note, sizeof note, "the call at %s did not complete: %s: %s", txt,
                         kf_reason_name(cr.reason), cr.msg);
            if (s->o->verbose)
                fprintf(stderr, "kforge: [%.1f ms] %s: %s %s\n", (double)(kf__now_ns() - s->t0) / 1e6, name,
                        txt, cr.st == KF_CALL_OK ? "done" : "failed");
        }
        status = kf_worker_finish(side.w, 120);
    }
    kf_worker_close(side.w);
    char *log = NULL;
    size_t ll = 0;
    if (kf__read_file(logpath, SAN_LOG_CAP, &log, &ll)) log = NULL;
    kf_san_report r;
    kf_sanitize_parse(log, status, &r);
    free(log);
    /* no kernel ran before the worker was ready: whatever the tool counted then is its
     * own failure to start (an unsupported device...), not the candidate's */
    if (!started) r.errors = 0, r.first[0] = 0;
    /* after that, a finding counts whatever else happened; without one, a run that did
     * not finish (or left no summary) proves nothing */
    int ran = r.errors > 0 || (started && !note[0] && r.summary);
    if (!ran && !note[0])
        snprintf(note, sizeof note, "compute-sanitizer left no summary (exit status %d)", status);
    out->ran = ran;
    out->errors = r.errors;
    out->has_warnings = tools[ti].bit == KF_SANITIZE_RACECHECK;
    out->warnings = r.warnings;
    out->exit = status;
    out->calls = calls;
    out->seconds = (double)(kf__now_ns() - t0) / 1e9;
    if (note[0]) out->note = kf_verdict_str(&s->res->v, note);
    if (r.report[0]) out->report = kf_verdict_str(&s->res->v, r.report);
    if (r.errors > 0)
        kf_result_reject(s->res, KF_REASON_SANITIZER, NULL, "compute-sanitizer %s found %d error%s: %s", name,
                         r.errors, r.errors == 1 ? "" : "s", r.first);
    return st;
}

kf_status kf_sanitize_run(kf_sess *s, const char *san) {
    const kf_task *t = s->t;
    s->res->v.has_sanitizer = 1;
    const kf_shape **shapes = calloc((size_t)t->nshapes + 1, sizeof *shapes);
    if (!shapes) return kf__err(s->ctx, KF_ENOMEM, "out of memory");
    int nsh = 0;
    size_t arena = 0;
    for (int i = 0; i < t->nshapes; i++) {
        char err[512];
        kf_extents ex;
        if (kf_task_shape_ok(t, &t->shapes[i], s->cand->when, &s->cand->pvars, err, sizeof err) <= 0 ||
            kf_data_extents(t, &t->shapes[i], &ex, err, sizeof err))
            continue;
        shapes[nsh++] = &t->shapes[i];
        size_t b = kf_sess_arena_bytes(t, &ex);
        if (b > arena) arena = b;
    }
    s->precise = 1;
    /* instrumented kernels run 10-100x slower */
    s->call_timeout_s = s->o->call_timeout_s * 30 > 60 ? s->o->call_timeout_s * 30 : 60;
    kf_status st = KF_OK;
    for (size_t i = 0; i < sizeof tools / sizeof tools[0] && !st; i++) {
        if (!(s->o->sanitize & tools[i].bit)) continue;
        kf_verdict_tool *o = kf_verdict_add_tool(&s->res->v, tools[i].name);
        if (!o) {
            st = kf__err(s->ctx, KF_ENOMEM, "out of memory");
            break;
        }
        st = run_tool(s, san, (int)i, shapes, nsh, arena, o);
    }
    s->precise = 0;
    s->call_timeout_s = 0;
    free(shapes);
    return st;
}
