/*
 * cmd_system.c - `kforge system check|bench PIPELINE`: a pipeline of tasks judged end
 * to end (docs/system.md). Parses the options, runs, prints the JSON report or a short
 * summary, and maps the verdict to the exit code (0 accepted, 1 rejected, 2 usage or
 * pipeline error). `system run` works on the slots in turn through the public API and
 * keeps its record with kf_sysrun_save (sealed, saved again at every slot iteration, so
 * `--resume` continues a killed run from it: kf_sysrun_resume) and its page with the
 * report's writer; after the slot iterations it searches the tuning knobs the same way
 * (each other value judged in the step against the configuration kept, with
 * kf_system_opts.cand_knobs), the trials saved and resumed as the iterations are;
 * `system report` is `kforge report` on a system run's directory (one renderer, the
 * library's), with --json the record and its counts. `kforge export` of a system run's
 * directory is kf_cli_system_export: the kept dispatchers and a full system check of them.
 */
#include "cli.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

static void usage(FILE *f) {
    fprintf(
        f,
        "usage: kforge system check PIPELINE [--slot SLOT=FILE]... [options]\n"
        "       kforge system bench PIPELINE [--slot SLOT=FILE]... [--vs SLOT=FILE]... [options]\n"
        "       kforge system run PIPELINE --run DIR [--budget N] [--slots K] [--agent A] [--lessons PATH]\n"
        "                         [--knob NAME=VALUE]...\n"
        "       kforge system run PIPELINE --run DIR --resume [--budget N] [--slots K]\n"
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
        "         --lessons); K slots in turn, re-profiled after every keep; the record is\n"
        "         saved at every slot iteration and --resume continues a killed run; then\n"
        "         each other value of each tuning knob judged in the step the same way\n"
        "         (--slots 0: the knobs alone; --knob fixes the workload or a knob)\n"
        "  report: the run's report (as `kforge report DIR`, Markdown on stdout by default):\n"
        "         shares before and after, the end-to-end speedup, every local-win/global-loss\n"
        "         case and the run's rate beside Arbor's 39%%, the seals\n"
        "  run --workers N | --devices all|0,2,5: the slot runs evaluate on local workers (as\n"
        "         kforge run's)\n"
        "options: --knob NAME=VALUE, --cand-knob NAME=VALUE (the candidate configuration's\n"
        "         tuning knob only), --steps N, --layers N, --seed N, --no-task-check,\n"
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

/* A system run's state: its options, the configuration kept so far (one SLOT=FILE per
 * slot, in the order kept), the profile the next slot is chosen from, and the record. */
typedef struct {
    kf_ctx *ctx;
    const char *pipeline, *dir, *lessons, *agent, *devices;
    int budget, rounds, json, workers;
    double min_time;
    kf_system_opts o;
    char kept_sel[KF_SYSTEM_MAX_SLOTS][4400];
    int nkept;
    const char *given[16]; /* --knob NAME=VALUE: the workload, or a tuning knob held fixed */
    int ngiven;
    char knob_sel[16][512]; /* o.knobs: the run's --knob ones, then each tuning knob's kept value */
    json_t *rec, *prof;     /* prof: {"slots": [{name, task_dir}], "stages": [...]} of a bench */
    kf_sysrun_lock *lock;   /* DIR/lock, held while the run works */
    char dir_abs[PATH_MAX], pipeline_abs[PATH_MAX];
} sysrun;

/* s->o.knobs from the record: its --knob selections, then the kept value of every tuning
 * knob (rec "knobs"), so every bench of the run judges the configuration kept. */
static void sysrun_knobs(sysrun *s) {
    size_t i;
    json_t *v;
    const char *k;
    s->o.nknobs = 0;
    json_array_foreach(json_object_get(json_object_get(s->rec, "options"), "knobs"), i, v) {
        if (s->o.nknobs == 16 || !json_is_string(v)) continue;
        snprintf(s->knob_sel[s->o.nknobs], sizeof s->knob_sel[0], "%s", json_string_value(v));
        s->o.knobs[s->o.nknobs] = s->knob_sel[s->o.nknobs], s->o.nknobs++;
    }
    json_object_foreach(json_object_get(s->rec, "knobs"), k, v) {
        if (s->o.nknobs == 16 || !json_is_string(v)) continue;
        snprintf(s->knob_sel[s->o.nknobs], sizeof s->knob_sel[0], "%s=%s", k, json_string_value(v));
        s->o.knobs[s->o.nknobs] = s->knob_sel[s->o.nknobs], s->o.nknobs++;
    }
}

/* The parts of a bench that choose the next slot: its slots' names and task folders, and
 * its stages with their shares. A new reference; NULL when out of memory. */
static json_t *profile_of(json_t *bench) {
    json_t *slots = json_array(), *v;
    size_t i;
    json_array_foreach(json_object_get(bench, "slots"), i, v) {
        json_array_append_new(slots, json_pack("{s:O,s:O}", "name", json_object_get(v, "name"), "task_dir",
                                               json_object_get(v, "task_dir")));
    }
    return json_pack("{s:o,s:O}", "slots", slots, "stages", json_object_get(bench, "stages"));
}

/* The record as it stands, kept configuration and profile included, saved and sealed
 * (kf_sysrun_save: atomic, so a kill leaves the last one whole). 0, or the exit code. */
static int sysrun_save(sysrun *s, const char *state) {
    json_t *kept = json_object();
    for (int k = 0; k < s->nkept; k++) {
        char *eq = strchr(s->kept_sel[k], '=');
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)(eq - s->kept_sel[k]), s->kept_sel[k]);
        json_object_set_new(kept, name, json_string(eq + 1));
    }
    json_object_set_new(s->rec, "kept", kept);
    json_object_set_new(s->rec, "state", json_string(state));
    json_object_set(s->rec, "profile", s->prof);
    char *text = json_dumps(s->rec, JSON_COMPACT);
    int rc = KF_EXIT_OK;
    if (!text || kf_sysrun_save(s->ctx, s->dir, text))
        rc = kf_cli_fail(s->json, "%s", text ? kf_errmsg(s->ctx) : "out of memory");
    free(text);
    return rc;
}

/* One slot iteration, it ({"slot", "score"} in the record): the kernel loop on the slot's
 * task in DIR/slot-NAME (continued with kforge run --resume semantics when a killed run
 * left it there), its export re-judged in the step against the configuration kept, the
 * outcome into it. 0, or the exit code when the step could not be benched. */
static int sysrun_iterate(sysrun *s, json_t *it) {
    const char *best = json_string_value(json_object_get(it, "slot")), *best_dir = NULL;
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(s->prof, "slots"), i, v) {
        if (!strcmp(json_string_value(json_object_get(v, "name")), best))
            best_dir = json_string_value(json_object_get(v, "task_dir"));
    }
    char rdir[4300], edir[4400], db[4400];
    snprintf(rdir, sizeof rdir, "%s/slot-%s", s->dir, best);
    snprintf(edir, sizeof edir, "%s/export", rdir);
    snprintf(db, sizeof db, "%s/run.db", rdir);
    kf_run_opts ro;
    kf_run_opts_init(&ro);
    ro.resume = !access(db, F_OK);
    ro.task_dir = ro.resume ? NULL : best_dir;
    ro.run_dir = rdir;
    ro.budget = s->budget;
    ro.min_time_s = s->min_time;
    if (!ro.resume) ro.lessons = "none"; /* a resumed run keeps what its start recorded */
    if (s->agent) ro.agent = s->agent;
    /* the slot run's evaluations on local workers, as kforge run --workers/--devices */
    ro.workers = s->workers;
    ro.devices = s->devices;
    if (ro.resume) fprintf(stderr, "kforge: system run: slot %s: resuming its run %s\n", best, rdir);
    char *sum = NULL, *ej = NULL;
    kf_status st = kf_run(s->ctx, &ro, &sum);
    json_t *sj = sum ? json_loads(sum, 0, NULL) : NULL, *pool = json_object_get(sj, "scale");
    free(sum);
    if (sj) json_object_set(it, "evaluations", json_object_get(sj, "evaluations"));
    if (json_is_object(pool)) {
        /* where the slot run's evaluations ran: each worker's name, device model and count */
        json_t *ws = json_array();
        json_array_foreach(json_object_get(pool, "workers"), i, v) {
            json_array_append_new(ws, json_pack("{s:O,s:O?,s:O}", "name", json_object_get(v, "name"), "model",
                                                json_object_get(json_object_get(v, "device"), "model"),
                                                "evaluations", json_object_get(v, "evaluations")));
        }
        json_object_set_new(
            it, "scale",
            json_pack("{s:o,s:O,s:O,s:O,s:O}", "workers", ws, "dispatched",
                      json_object_get(pool, "dispatched"), "verdicts", json_object_get(pool, "verdicts"),
                      "requeued", json_object_get(pool, "requeued"), "lost", json_object_get(pool, "lost")));
    }
    json_decref(sj);
    if (st) {
        json_object_set_new(it, "outcome", json_string("run_failed"));
        json_object_set_new(it, "error", json_string(kf_errmsg(s->ctx)));
        return KF_EXIT_OK;
    }
    json_object_set_new(it, "run", json_string(rdir));
    st = kf_run_export(s->ctx, rdir, edir, &ej);
    json_t *ex = ej ? json_loads(ej, 0, NULL) : NULL;
    free(ej);
    const char *disp = json_string_value(json_object_get(ex, "dispatcher"));
    if (st || !disp) {
        json_object_set_new(it, "outcome", json_string("no_local_win"));
        json_object_set_new(it, "error", json_string(st ? kf_errmsg(s->ctx) : "no dispatcher"));
        json_decref(ex);
        return KF_EXIT_OK;
    }
    char cand[4800];
    snprintf(cand, sizeof cand, "%s/%s", edir, disp);
    json_decref(ex);
    json_object_set_new(it, "candidate", json_string(cand));
    /* re-judged in the pipeline against the kept configuration */
    kf_system_opts so = s->o;
    so.nslots = so.nvs = 0;
    for (int k = 0; k < s->nkept; k++) so.slots[so.nslots++] = so.vs[so.nvs++] = s->kept_sel[k];
    static char sel[4900];
    snprintf(sel, sizeof sel, "%s=%s", best, cand);
    so.slots[so.nslots++] = sel;
    so.local_bench = 1;
    json_t *r = sys_bench_json(s->ctx, s->pipeline, &so);
    if (!r) return KF_EXIT_USAGE;
    json_t *loc = NULL;
    json_array_foreach(json_object_get(r, "local"), i, v) {
        if (!strcmp(json_string_value(json_object_get(v, "slot")), best)) loc = v;
    }
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
    if (!strcmp(oc, "local_win_global_loss") && s->lessons) add_lesson(s->lessons, it, best, s->pipeline);
    if (keep && s->nkept < KF_SYSTEM_MAX_SLOTS) {
        memcpy(s->kept_sel[s->nkept++], sel, strlen(sel) + 1);
        /* re-profiled: the kept configuration's own shares; a kept slot may be worked on
         * again after the others */
        json_t *p = profile_of(r);
        if (p) json_decref(s->prof), s->prof = p;
    }
    json_decref(r);
    return KF_EXIT_OK;
}

/* The slot to work on next: the largest share times headroom among the slots the record
 * has no iteration of; NULL when every slot had its turn. */
static const char *sysrun_choose(sysrun *s, double *score) {
    const char *best = NULL;
    double g = -1;
    size_t i, k;
    json_t *v, *it;
    json_array_foreach(json_object_get(s->prof, "slots"), i, v) {
        const char *n = json_string_value(json_object_get(v, "name"));
        int tried = 0;
        json_array_foreach(json_object_get(s->rec, "iterations"), k, it) {
            tried |= !strcmp(json_string_value(json_object_get(it, "slot")), n);
        }
        if (tried) continue;
        double sc = slot_score(s->prof, n);
        if (sc > g) g = sc, best = n;
    }
    *score = g;
    return best;
}

/* --resume: the state back from the record (kf_sysrun_resume checked its seal and the
 * pipeline's sha256), the options it recorded where the command line gives none. */
static int sysrun_restore(sysrun *s, const int given[3]) {
    char *text = NULL;
    if (kf_sysrun_resume(s->ctx, s->dir, s->pipeline, &text))
        return kf_cli_fail(s->json, "system run --resume: %s", kf_errmsg(s->ctx));
    s->rec = json_loads(text, 0, NULL);
    free(text);
    json_t *opt = json_object_get(s->rec, "options"), *p = json_object_get(s->rec, "profile");
    if (!json_is_object(opt) || !json_is_object(p) || !json_is_array(json_object_get(s->rec, "iterations")))
        return kf_cli_fail(
            s->json, "%s/system.json: no options, profile or iterations recorded: not resumable", s->dir);
    if (!given[0]) s->budget = (int)json_integer_value(json_object_get(s->rec, "budget"));
    if (!given[1]) s->rounds = (int)json_integer_value(json_object_get(opt, "slots"));
    if (!given[2]) s->min_time = json_number_value(json_object_get(opt, "min_time"));
    if (!s->agent) s->agent = json_string_value(json_object_get(opt, "agent"));
    if (!s->lessons) s->lessons = json_string_value(json_object_get(opt, "lessons"));
    /* where to evaluate is said again on resume, as kforge run --resume; else as recorded */
    if (!s->workers && !s->devices) {
        s->workers = (int)json_integer_value(json_object_get(opt, "workers"));
        s->devices = json_string_value(json_object_get(opt, "devices"));
    }
    if (s->workers) json_object_set_new(opt, "workers", json_integer(s->workers));
    else json_object_del(opt, "workers");
    if (s->devices) json_object_set_new(opt, "devices", json_string(s->devices));
    else json_object_del(opt, "devices");
    json_object_set_new(s->rec, "budget", json_integer(s->budget));
    json_object_set_new(opt, "slots", json_integer(s->rounds));
    json_object_set_new(opt, "min_time", json_real(s->min_time));
    s->prof = json_incref(p);
    const char *key;
    json_t *v;
    json_object_foreach(json_object_get(s->rec, "kept"), key, v) {
        const char *f = json_string_value(v);
        if (!f || s->nkept == KF_SYSTEM_MAX_SLOTS) continue;
        if (access(f, R_OK))
            return kf_cli_fail(
                s->json,
                "%s: the kept %s file is not there (%s): resume from the directory the run was "
                "started in",
                f, key, strerror(errno));
        snprintf(s->kept_sel[s->nkept++], sizeof s->kept_sel[0], "%s=%s", key, f);
    }
    sysrun_knobs(s);
    return KF_EXIT_OK;
}

/* ---- the knob search: after the slot iterations, each other value of each tuning knob
 * judged in the step against the configuration kept ---- */

/* The record's knobs from the first bench: the declared ones, the workload (knobs named
 * after a dim: the run is for that one workload, never searched), the tuning knobs'
 * starting values, no trials yet. 0, or -1 when out of memory. */
static int sysrun_knobs_start(sysrun *s, json_t *first) {
    json_t *given = json_array(), *work = json_object(), *tune = json_object(), *trials = json_array(), *v;
    size_t i;
    for (int k = 0; given && k < s->ngiven; k++) json_array_append_new(given, json_string(s->given[k]));
    json_array_foreach(json_object_get(first, "knobs_declared"), i, v) {
        const char *n = json_string_value(json_object_get(v, "name"));
        json_t *val = json_object_get(json_object_get(first, "knobs"), n);
        if (!n || !json_is_string(val)) continue;
        int w = !strcmp(json_string_value(json_object_get(v, "kind")) ?: "", "workload");
        json_object_set(w ? work : tune, n, val);
    }
    if (!given || !work || !tune || !trials) {
        json_decref(given), json_decref(work), json_decref(tune), json_decref(trials);
        return -1;
    }
    json_object_set_new(json_object_get(s->rec, "options"), "knobs", given);
    json_object_set(s->rec, "knobs_declared", json_object_get(first, "knobs_declared"));
    json_object_set_new(s->rec, "workload", work);
    json_object_set_new(s->rec, "knobs", tune);
    json_object_set_new(s->rec, "knob_trials", trials);
    sysrun_knobs(s);
    return 0;
}

/* Whether the selection sel ("NAME=VALUE") names a knob a trial of the run kept. */
static int knob_tuned(sysrun *s, const char *sel) {
    const char *eq = strchr(sel, '=');
    size_t i;
    json_t *t;
    json_array_foreach(json_object_get(s->rec, "knob_trials"), i, t) {
        const char *n = json_string_value(json_object_get(t, "knob"));
        if (n && strlen(n) == (size_t)(eq - sel) && !strncmp(n, sel, eq - sel) &&
            !strcmp(json_string_value(json_object_get(t, "outcome")) ?: "", "knob_keep"))
            return 1;
    }
    return 0;
}

/* One knob trial, it ({"knob", "value", "against"}): the kept slots on both sides (the
 * same files), the candidate configuration with the knob at its value, the baseline at
 * the kept one (a system bench with cand_knobs), the outcome into it: knob_keep (the
 * step faster, its interval clear of zero), no_system_gain, rejected (the value changes
 * the step's outputs, or a call fails) or refused (the pipeline or the backend does not
 * take the value: the reason recorded; not a loss). 0, or the exit code. */
static int sysrun_knob_trial(sysrun *s, json_t *it) {
    const char *name = json_string_value(json_object_get(it, "knob"));
    const char *val = json_string_value(json_object_get(it, "value"));
    kf_system_opts so = s->o;
    so.nslots = so.nvs = 0;
    for (int k = 0; k < s->nkept; k++) so.slots[so.nslots++] = so.vs[so.nvs++] = s->kept_sel[k];
    char sel[600];
    snprintf(sel, sizeof sel, "%s=%s", name, val);
    so.cand_knobs[0] = sel;
    so.ncand_knobs = 1;
    so.local_bench = 0;
    char *out = NULL;
    int acc = 0;
    fprintf(stderr, "kforge: system run: knob %s=%s against %s\n", name, val,
            json_string_value(json_object_get(it, "against")));
    kf_status st = kf_system_bench(s->ctx, s->pipeline, &so, &out, &acc);
    if (st == KF_EUSAGE || st == KF_ETASK) {
        json_object_set_new(it, "outcome", json_string("refused"));
        json_object_set_new(it, "reason", json_string(kf_errmsg(s->ctx)));
        fprintf(stderr, "kforge: system run: knob %s=%s: refused: %s\n", name, val, kf_errmsg(s->ctx));
        return KF_EXIT_OK;
    }
    if (st) return kf_cli_fail(s->json, "system run: knob %s: %s", sel, kf_errmsg(s->ctx));
    json_t *r = json_loads(out, 0, NULL);
    free(out);
    if (!r) return kf_cli_fail(s->json, "out of memory");
    json_object_set(it, "system_gain", json_object_get(r, "gain"));
    json_object_set(it, "system_gain_ci95", json_object_get(r, "gain_ci95"));
    json_object_set(it, "verdict", json_object_get(r, "verdict"));
    json_object_set(it, "step_ns", json_object_get(r, "step_ns"));
    json_object_set(it, "keep", json_object_get(r, "keep"));
    json_object_set(it, "noise", json_object_get(r, "noise"));
    json_object_set(it, "reasons", json_object_get(r, "reasons"));
    json_object_set(it, "stages", json_object_get(r, "stages"));
    int accepted = !strcmp(json_string_value(json_object_get(r, "verdict")) ?: "", "accepted");
    int keep = accepted && json_is_true(json_object_get(r, "keep"));
    const char *oc = keep ? "knob_keep" : accepted ? "no_system_gain" : "rejected";
    json_object_set_new(it, "outcome", json_string(oc));
    fprintf(stderr, "kforge: system run: knob %s=%s: %s (in the step %+.1f%%)\n", name, val, oc,
            100 * json_number_value(json_object_get(r, "gain")));
    if (keep) {
        json_object_set_new(json_object_get(s->rec, "knobs"), name, json_string(val));
        sysrun_knobs(s);
        json_t *p = profile_of(r);
        if (p) json_decref(s->prof), s->prof = p;
    }
    json_decref(r);
    return KF_EXIT_OK;
}

/* The knob search, from the record: the trial a kill interrupted finished first, then
 * each value of each tuning knob not given with --knob, in the declared order, that is
 * neither the kept value nor judged already (a trial's value or its baseline). Saved
 * before and after every trial. 0, or the exit code. */
static int sysrun_knob_search(sysrun *s) {
    json_t *trials = json_object_get(s->rec, "knob_trials"), *kd, *v, *t;
    if (!json_is_array(trials)) return KF_EXIT_OK; /* a record from before the knob search */
    size_t n = json_array_size(trials), i, j, q;
    json_t *last = json_array_get(trials, n - 1);
    int rc;
    if (last && !json_object_get(last, "outcome")) {
        fprintf(stderr, "kforge: system run: resuming the knob trial %s=%s\n",
                json_string_value(json_object_get(last, "knob")),
                json_string_value(json_object_get(last, "value")));
        if ((rc = sysrun_knob_trial(s, last)) || (rc = sysrun_save(s, "running"))) return rc;
    }
    json_array_foreach(json_object_get(s->rec, "knobs_declared"), i, kd) {
        const char *name = json_string_value(json_object_get(kd, "name"));
        if (!name || strcmp(json_string_value(json_object_get(kd, "kind")) ?: "", "tuning")) continue;
        int fixed = 0;
        json_array_foreach(json_object_get(json_object_get(s->rec, "options"), "knobs"), q, v) {
            const char *g = json_string_value(v), *eq = g ? strchr(g, '=') : NULL;
            fixed |= eq && strlen(name) == (size_t)(eq - g) && !strncmp(name, g, eq - g);
        }
        if (fixed) continue;
        json_array_foreach(json_object_get(kd, "values"), j, v) {
            const char *val = json_string_value(v);
            const char *kept = json_string_value(json_object_get(json_object_get(s->rec, "knobs"), name));
            if (!val || !kept || !strcmp(val, kept)) continue;
            int judged = 0;
            json_array_foreach(trials, q, t) {
                if (strcmp(json_string_value(json_object_get(t, "knob")) ?: "", name)) continue;
                judged |= !strcmp(json_string_value(json_object_get(t, "value")) ?: "", val) ||
                          !strcmp(json_string_value(json_object_get(t, "against")) ?: "", val);
            }
            if (judged) continue;
            json_t *it = json_pack("{s:s,s:s,s:s}", "knob", name, "value", val, "against", kept);
            if (!it) return kf_cli_fail(s->json, "out of memory");
            json_array_append_new(trials, it);
            if ((rc = sysrun_save(s, "running")) || (rc = sysrun_knob_trial(s, it)) ||
                (rc = sysrun_save(s, "running")))
                return rc;
        }
    }
    return KF_EXIT_OK;
}

static int cmd_run(int argc, char **argv) {
    sysrun *s = calloc(1, sizeof *s);
    if (!s) return kf_cli_fail(0, "out of memory");
    s->budget = 4, s->rounds = 2, s->min_time = 0.1;
    int resume = 0, given[3] = {0, 0, 0}, rc = KF_EXIT_OK;
    double d;
    for (int i = 2; i < argc && !rc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--json")) s->json = 1;
        else if (!strcmp(a, "--resume")) resume = 1;
        else if (!strcmp(a, "--run") && i + 1 < argc) s->dir = argv[++i];
        else if (!strcmp(a, "--lessons") && i + 1 < argc) s->lessons = argv[++i];
        else if (!strcmp(a, "--agent") && i + 1 < argc) s->agent = argv[++i];
        else if (!strcmp(a, "--devices") && i + 1 < argc) s->devices = argv[++i];
        else if (!strcmp(a, "--workers") && i + 1 < argc) {
            rc = kf_cli_number(a, argv[++i], 1, KF_RUN_MAX_JOBS, &d);
            s->workers = (int)d;
        } else if (!strcmp(a, "--budget") && i + 1 < argc) {
            rc = kf_cli_number(a, argv[++i], 1, 10000, &d);
            s->budget = (int)d, given[0] = 1;
        } else if (!strcmp(a, "--slots") && i + 1 < argc) {
            rc = kf_cli_number(a, argv[++i], 0, 64, &d);
            s->rounds = (int)d, given[1] = 1;
        } else if (!strcmp(a, "--knob") && i + 1 < argc) {
            if (s->ngiven == 16) rc = kf_cli_fail(s->json, "too many --knob");
            else s->given[s->ngiven++] = argv[++i];
        } else if (!strcmp(a, "--min-time") && i + 1 < argc) {
            rc = kf_cli_number(a, argv[++i], 0, 3600, &s->min_time);
            given[2] = 1;
        } else if (a[0] == '-')
            rc = kf_cli_fail(s->json, "system run: unknown option %s (or it lacks its value)", a);
        else if (!s->pipeline) s->pipeline = a;
        else rc = kf_cli_fail(s->json, "system run: one PIPELINE only (%s)", a);
    }
    if (rc) goto done;
    if (!s->pipeline || !s->dir) {
        rc = kf_cli_fail(s->json, "system run: expected PIPELINE and --run DIR");
        goto done;
    }
    if (resume && s->ngiven) {
        rc = kf_cli_fail(s->json, "system run --resume: the knobs are the run's start's (--knob is refused)");
        goto done;
    }
    if (!(s->ctx = kf_ctx_new())) {
        rc = kf_cli_fail(s->json, "out of memory");
        goto done;
    }
    if (!resume && mkdir(s->dir, 0755) && errno != EEXIST) {
        rc = kf_cli_fail(s->json, "%s: %s", s->dir, strerror(errno));
        goto done;
    }
    /* absolute from here: the record's paths (the slot runs, the kept files, the
     * pipeline's tasks in the profile) then resolve from whatever directory a resume is
     * started in */
    if (!realpath(s->dir, s->dir_abs)) {
        rc = kf_cli_fail(s->json, "%s: %s%s", s->dir, strerror(errno),
                         resume ? " (no system run to resume there)" : "");
        goto done;
    }
    s->dir = s->dir_abs;
    if (realpath(s->pipeline, s->pipeline_abs)) s->pipeline = s->pipeline_abs; /* else its own error */
    /* one system run at a time in DIR: a second start or a second resume is refused, exit 4 */
    kf_status lst = kf_sysrun_lock_take(s->ctx, s->dir, resume ? "system run --resume" : "system run", &s->lock);
    if (lst) {
        kf_cli_fail(s->json, "%s", kf_errmsg(s->ctx));
        rc = lst == KF_EBUSY ? KF_EXIT_BUSY : KF_EXIT_USAGE;
        goto done;
    }
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/system.json", s->dir);
    kf_system_opts_init(&s->o);
    s->o.task_checks = 0;
    if (resume) {
        if ((rc = sysrun_restore(s, given))) goto done;
        s->o.check.bench_min_time_s = s->min_time;
    } else {
        if (!access(path, F_OK)) {
            rc = kf_cli_fail(s->json, "%s: a system run is already there (--resume continues it)", s->dir);
            goto done;
        }
        s->o.check.bench_min_time_s = s->min_time;
        for (int k = 0; k < s->ngiven; k++) s->o.knobs[s->o.nknobs++] = s->given[k];
        json_t *first = sys_bench_json(s->ctx, s->pipeline, &s->o);
        if (!first) {
            rc = KF_EXIT_USAGE;
            goto done;
        }
        s->rec = json_pack("{s:s,s:i,s:{s:i,s:f,s:s*,s:s*,s:s*},s:[]}", "pipeline", s->pipeline, "budget",
                           s->budget, "options", "slots", s->rounds, "min_time", s->min_time, "agent",
                           s->agent, "lessons", s->lessons, "devices", s->devices, "iterations");
        if (s->rec && s->workers)
            json_object_set_new(json_object_get(s->rec, "options"), "workers", json_integer(s->workers));
        if (s->rec && sysrun_knobs_start(s, first)) {
            json_decref(first);
            rc = kf_cli_fail(s->json, "out of memory");
            goto done;
        }
        json_object_set(s->rec, "profile_before", json_object_get(first, "stages"));
        json_object_set_new(
            s->rec, "baseline_step_ns",
            json_real(json_number_value(json_object_get(json_object_get(first, "step_ns"), "baseline"))));
        s->prof = profile_of(first);
        json_decref(first);
        if (!s->rec || !s->prof) {
            rc = kf_cli_fail(s->json, "out of memory");
            goto done;
        }
        if ((rc = sysrun_save(s, "running"))) goto done;
    }
    /* a slot iteration a kill interrupted: the last one, without its outcome */
    json_t *its = json_object_get(s->rec, "iterations");
    json_t *last = json_array_get(its, json_array_size(its) - 1);
    if (last && !json_object_get(last, "outcome")) {
        if ((rc = sysrun_iterate(s, last)) || (rc = sysrun_save(s, "running"))) goto done;
    }
    /* the slot iterations end where the knob search begins */
    while ((int)json_array_size(its) < s->rounds &&
           !json_array_size(json_object_get(s->rec, "knob_trials"))) {
        double g;
        const char *best = sysrun_choose(s, &g);
        if (!best) break;
        fprintf(stderr, "kforge: system run: slot %s (share x headroom %.3f)\n", best, g);
        json_t *it = json_pack("{s:s,s:f}", "slot", best, "score", g);
        json_array_append_new(its, it);
        if ((rc = sysrun_save(s, "running")) || (rc = sysrun_iterate(s, it)) ||
            (rc = sysrun_save(s, "running")))
            goto done;
    }
    if ((rc = sysrun_knob_search(s))) goto done;
    /* the final configuration (the kept slots and knobs) against the reference pipeline
     * (the run's --knob selections, every other knob its first value) */
    kf_system_opts fo = s->o;
    fo.nslots = 0;
    for (int k = 0; k < s->nkept; k++) fo.slots[fo.nslots++] = s->kept_sel[k];
    fo.nknobs = 0;
    for (int k = 0; k < s->o.nknobs; k++)
        if (!strchr(s->o.knobs[k], '=') || !knob_tuned(s, s->o.knobs[k]))
            fo.knobs[fo.nknobs++] = s->o.knobs[k];
        else fo.cand_knobs[fo.ncand_knobs++] = s->o.knobs[k];
    int tuned = fo.ncand_knobs > 0;
    json_t *fin = s->nkept || tuned ? sys_bench_json(s->ctx, s->pipeline, &fo) : NULL;
    /* nothing kept: the reference pipeline itself, no gain */
    json_object_set(s->rec, "profile_after",
                    fin ? json_object_get(fin, "stages") : json_object_get(s->rec, "profile_before"));
    if (fin || (!s->nkept && !tuned)) {
        json_object_set_new(s->rec, "end_to_end_speedup",
                            fin ? json_incref(json_object_get(fin, "speedup")) : json_real(1));
        json_object_set_new(s->rec, "end_to_end_gain_ci95",
                            fin ? json_incref(json_object_get(fin, "gain_ci95"))
                                : json_pack("[f,f]", 0.0, 0.0));
    }
    json_decref(fin);
    if ((rc = sysrun_save(s, "finished"))) goto done;
    if (s->json) {
        char *t = json_dumps(s->rec, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(6));
        if (t) puts(t);
        free(t);
    } else {
        printf("system run %s: %d slots kept; the record is %s (kforge system report %s)\n", s->pipeline,
               s->nkept, path, s->dir);
    }
    kf_cli_report_write(s->dir, "html", NULL, "system run");
done:
    kf_sysrun_unlock(s->lock);
    json_decref(s->prof);
    json_decref(s->rec);
    kf_ctx_free(s->ctx);
    free(s);
    return rc;
}

/* src's bytes into dst: 0, or -1 with errno. */
static int copy_file(const char *src, const char *dst) {
    FILE *in = src ? fopen(src, "rb") : NULL, *o = in ? fopen(dst, "wb") : NULL;
    char b[65536];
    size_t n;
    int bad = !in || !o;
    while (!bad && (n = fread(b, 1, sizeof b, in)) > 0) bad = fwrite(b, 1, n, o) != n;
    bad |= in && ferror(in);
    if (in) fclose(in);
    if (o && fclose(o)) bad = 1;
    return bad ? -1 : 0;
}

/* kforge export of a system run: each kept slot's dispatcher copied to out/SLOT.c, the
 * configuration in out/EXPORT.json ({"kind": "system_export", "run", "pipeline",
 * "pipeline_sha256", "slots": {SLOT: FILE}, "knobs" (the run's workload and kept tuning
 * knobs, as the check took them), "check": the command that re-verifies it with them, "verification":
 * {verdict, reasons, steps_passed, seconds}}), verified by a full system check of the exported files (exit 0
 * accepted, 1 rejected). A record that is not sealed, or whose pipeline file changed, is refused (exit 2,
 * nothing written), and so is a non-empty out that is not an earlier export. */
int kf_cli_system_export(const char *dir, const char *out, int json) {
    kf_ctx *ctx = kf_ctx_new();
    char *doc = NULL;
    int rc = KF_EXIT_OK;
    json_t *rec = NULL, *exp = NULL, *rep = NULL;
    static char sel[KF_SYSTEM_MAX_SLOTS][4400];
    if (!ctx) return kf_cli_fail(json, "out of memory");
    if (kf_report_run(ctx, dir, "json", &doc, NULL)) {
        rc = kf_cli_fail(json, "kforge export: %s", kf_errmsg(ctx));
        goto done;
    }
    rec = json_loads(doc, 0, NULL);
    free(doc), doc = NULL;
    json_t *in = json_object_get(rec, "integrity");
    const char *seals = json_string_value(json_object_get(in, "seals"));
    const char *pf = json_string_value(json_object_get(rec, "pipeline_file"));
    if (!seals || strcmp(seals, "sealed") || !pf) {
        rc = kf_cli_fail(json, "kforge export: %s/system.json: %s: only a sealed record is exported", dir,
                         seals ? seals : "unreadable");
        goto done;
    }
    if (!json_is_true(json_object_get(in, "pipeline_matches"))) {
        rc = kf_cli_fail(json,
                         "kforge export: %s: the pipeline file changed since the run (its sha256 is not %s)",
                         pf, json_string_value(json_object_get(rec, "pipeline_sha256")));
        goto done;
    }
    char ej[4300];
    snprintf(ej, sizeof ej, "%s/EXPORT.json", out);
    if (mkdir(out, 0755) && errno != EEXIST) {
        rc = kf_cli_fail(json, "kforge export: %s: %s", out, strerror(errno));
        goto done;
    }
    json_t *prev = json_load_file(ej, 0, NULL);
    int ours = prev && !strcmp(json_string_value(json_object_get(prev, "kind")) ?: "", "system_export");
    json_decref(prev);
    int used = 0;
    DIR *dd = opendir(out);
    for (struct dirent *de; dd && (de = readdir(dd));)
        used |= strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
    if (dd) closedir(dd);
    if (used && !ours) {
        rc = kf_cli_fail(json, "kforge export: %s is not empty and holds no earlier export", out);
        goto done;
    }
    kf_system_opts o;
    kf_system_opts_init(&o);
    json_t *slots = json_object();
    char cmd[16384];
    size_t cn = (size_t)snprintf(cmd, sizeof cmd, "kforge system check %s", pf);
    const char *key;
    json_t *v;
    json_object_foreach(json_object_get(rec, "kept"), key, v) {
        char dst[4300];
        snprintf(dst, sizeof dst, "%s/%s.c", out, key);
        if (o.nslots == KF_SYSTEM_MAX_SLOTS || copy_file(json_string_value(v), dst)) {
            rc = kf_cli_fail(json, "kforge export: %s -> %s: %s", json_string_value(v), dst, strerror(errno));
            json_decref(slots);
            goto done;
        }
        snprintf(sel[o.nslots], sizeof sel[0], "%s=%s", key, dst);
        o.slots[o.nslots] = sel[o.nslots];
        o.nslots++;
        json_object_set_new(slots, key, json_string(strrchr(dst, '/') + 1));
        if (cn < sizeof cmd)
            cn += (size_t)snprintf(cmd + cn, sizeof cmd - cn, " --slot %s", sel[o.nslots - 1]);
    }
    /* the knobs the run chose: its workload and every tuning knob's kept value */
    static char ksel[32][512];
    static const char *const groups[] = {"workload", "knobs"};
    for (int g = 0; g < 2; g++) json_object_foreach(json_object_get(rec, groups[g]), key, v) {
            if (o.nknobs == 16 || !json_is_string(v)) continue;
            snprintf(ksel[o.nknobs], sizeof ksel[0], "%s=%s", key, json_string_value(v));
            o.knobs[o.nknobs] = ksel[o.nknobs];
            if (cn < sizeof cmd)
                cn += (size_t)snprintf(cmd + cn, sizeof cmd - cn, " --knob %s", ksel[o.nknobs]);
            o.nknobs++;
        }
    char *out_json = NULL;
    int acc = 0;
    if (kf_system_check(ctx, pf, &o, &out_json, &acc)) {
        rc = kf_cli_fail(json, "kforge export: %s", kf_errmsg(ctx));
        json_decref(slots);
        goto done;
    }
    rep = json_loads(out_json, 0, NULL);
    free(out_json);
    exp =
        json_pack("{s:s,s:s,s:s,s:O,s:o,s:O,s:s,s:{s:O,s:O,s:O,s:O}}", "kind", "system_export", "run", dir,
                  "pipeline", pf, "pipeline_sha256", json_object_get(rec, "pipeline_sha256"), "slots", slots,
                  "knobs", json_object_get(rep, "knobs"), "check", cmd, "verification", "verdict",
                  json_object_get(rep, "verdict"), "reasons", json_object_get(rep, "reasons"), "steps_passed",
                  json_object_get(rep, "steps_passed"), "seconds", json_object_get(rep, "seconds"));
    if (!exp || json_dump_file(exp, ej, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(6))) {
        rc = kf_cli_fail(json, "kforge export: %s: cannot be written", ej);
        goto done;
    }
    rc = acc ? KF_EXIT_OK : KF_EXIT_REJECTED;
    if (json) {
        char *t = json_dumps(exp, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(6));
        if (t) puts(t);
        free(t);
    } else {
        printf("%s: %zu slot%s of %s exported, %s end to end (%s)\n", out, json_object_size(slots),
               json_object_size(slots) == 1 ? "" : "s", pf, acc ? "accepted" : "REJECTED", ej);
    }
done:
    json_decref(rec), json_decref(exp), json_decref(rep);
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
        } else if (!strcmp(s, "--cand-knob") && i + 1 < argc) {
            if (o.ncand_knobs == 16) return kf_cli_fail(json, "too many --cand-knob");
            o.cand_knobs[o.ncand_knobs++] = argv[++i];
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
