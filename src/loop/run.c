/*
 * run.c - kforge run: the optimisation loop's driver (docs/run.md). It adds memory and
 * choice around the checker and never judges a kernel itself:
 *
 *   search picks an action -> a proposer records a candidate (proposers.c)
 *   -> the scheduler has it checked, timed and judged (sched.c, evaluate.c, the Critic)
 *   -> the tally records the outcome (tally.c) -> search observes it.
 *
 * A run is set up in order: the options in effect (the command's, else on --resume the
 * run's recorded ones, config.c), the Critic's settings, the proposers (the builtin over
 * the task's template, an agent), the store (created, or reopened with its seals
 * checked), the lessons; then the run's recorded nodes are replayed into search and the
 * proposers, and the interrupted ones evaluated again. Stop rules (budget, wall time,
 * tokens, target, patience) stop the issuing of new work; what is in flight is waited for
 * and recorded after the loop, and the summary says why it stopped.
 */
#include "config.h"
#include "eval.h"
#include "loop.h"
#include "memory.h"
#include "proposer.h"
#include "sched.h"
#include "tally.h"
#include "../backend/registry.h"
#include "../bench/bench.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct {
    kf_eval ev;              /* the main thread's evaluation context */
    kf_run_opts eo;          /* the options in effect: the command's, else the run's */
    const kf_run_opts *cmd;  /* the command's own */
    const char *cmd_lessons; /* the command's --lessons, not the run's recorded one */
    const char *task_dir;
    json_t *rcfg;            /* the run's recorded config, on resume */
    char lessons_path[4096]; /* --lessons default, named */
    char task_path[4096];    /* the run's task directory, on resume */
    int agent;               /* an agent proposes */
    kf_agent *ag;            /* until its proposer takes it */
    kf_tally tally;
    kf_sched sched;
    kf_proposer_env env;
    kf_loop_memory *mem;
    int64_t *unfinished; /* interrupted nodes, evaluated again */
    size_t nun, nredo;   /* how many, and how many of them the budget lets run again */
    json_t *split;       /* the split of prompt tokens over the run's packs */
    kf_store_lock *lock; /* one writer at a time: held from before create or open to the end */
    kf_pool *pool;       /* scale-out: the workers that evaluate (docs/scale.md); NULL: here */
} run;

void kf_run_opts_init(kf_run_opts *o) {
    memset(o, 0, sizeof *o);
    o->agent = NULL;
    o->budget = 20;
    o->hidden = -1;
    o->precision = -1;
    o->keep_margin = 0.0;
    o->patience = 0;
}

/* The options in effect: the command's, and on resume what the command does not say
 * from the run, whose task it is too. */
static kf_status options(run *r) {
    kf_ctx *ctx = r->ev.ctx;
    const kf_run_opts *o = r->cmd;
    kf_status st = KF_OK;
    if (r->cmd_lessons && !strcmp(r->cmd_lessons, "default")) { /* the shared database, named */
        kf_lessons_default_path(r->lessons_path, sizeof r->lessons_path);
        r->eo.lessons = r->cmd_lessons = r->lessons_path;
    }
    if (o->resume) {
        kf_store *peek = NULL;
        if ((st = kf_store_open(ctx, o->run_dir, NULL, &peek))) return st;
        snprintf(r->task_path, sizeof r->task_path, "%s", kf_store_task_dir(peek));
        r->rcfg = kf_store_config(peek) ? json_loads(kf_store_config(peek), 0, NULL) : NULL;
        kf_store_close(peek);
        if (!r->task_dir) r->task_dir = r->task_path;
        kf_config_resume(&r->eo, r->rcfg);
    }
    if (r->eo.jobs < 1) r->eo.jobs = 1;
    if (r->eo.jobs > KF_RUN_MAX_JOBS)
        return kf__err(ctx, KF_EUSAGE, "--jobs %d: at most %d", r->eo.jobs, KF_RUN_MAX_JOBS);
    r->ev.o = &r->eo;
    r->ev.screen = r->eo.screen ? KF_EVAL_SCREEN_FIRST : KF_EVAL_FULL;
    if ((st = kf_eval_setup(&r->ev))) return st;
    r->agent = strcmp(r->eo.agent ? r->eo.agent : "builtin", "builtin") != 0;
    if (r->cmd_lessons && o->resume)
        return kf__err(ctx, KF_EUSAGE,
                       "--lessons with --resume: a run takes its lessons when it starts, and "
                       "--resume applies the ones it recorded then");
    if (r->cmd_lessons && strcmp(r->cmd_lessons, "none") && (st = kf_loop_lessons_check(ctx, r->cmd_lessons)))
        return st;
    if (!r->task_dir)
        return kf__err(ctx, KF_EUSAGE, "kforge run: no task (kforge run TASK, or --resume RUN)");
    return KF_OK;
}

/* The agent the run's proposer asks, when there is one. */
static kf_status new_agent(run *r) {
    const kf_run_opts *o = &r->eo;
    kf_agent_opts ao;
    kf_agent_opts_init(&ao);
    if (o->agent_timeout_s > 0) ao.timeout_s = o->agent_timeout_s;
    ao.base_url = o->base_url;
    if (o->api_key_env && !(ao.api_key = getenv(o->api_key_env)))
        return kf__err(r->ev.ctx, KF_EUSAGE, "--api-key-env %s: %s is not set", o->api_key_env,
                       o->api_key_env);
    return kf_agent_new(r->ev.ctx, o->agent, &ao, &r->ag);
}

/* runs/<task>-<date>, unless --run names it. */
static void run_dir(run *r) {
    if (r->eo.run_dir) {
        snprintf(r->ev.run_dir, sizeof r->ev.run_dir, "%s", r->eo.run_dir);
        return;
    }
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    char stamp[32];
    strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
    snprintf(r->ev.run_dir, sizeof r->ev.run_dir, "runs/%s-%s", kf_task_name(r->ev.t), stamp);
    kf__mkdirs("runs");
}

/* The task, the lessons, the run's store (created, or reopened on resume), the
 * proposers. */
static kf_status open_run(run *r) {
    kf_ctx *ctx = r->ev.ctx;
    const kf_run_opts *o = &r->eo;
    kf_status st = KF_OK;
    if (r->agent && (st = new_agent(r))) return st;
    if ((st = kf_task_load(ctx, r->task_dir, &r->ev.t))) return st;
    /* lessons fill agents' packs; a named database is checked whoever proposes */
    if ((r->agent || o->lessons) && (st = kf_loop_memory_open(ctx, o->lessons, &r->mem))) return st;
    r->env.mem = r->mem;
    run_dir(r);
    char tpath[4200];
    int ti = kf_proposer_template(r->ev.t, tpath, sizeof tpath);
    if (!r->agent && ti < 0 && o->budget > 0) {
        char names[256] = "";
        kf_backend *b;
        for (int i = 0; (b = kf_backend_at(i)); i++)
            snprintf(names + strlen(names), sizeof names - strlen(names), "%s%sparam.%s", i ? " or " : "",
                     i ? "" : "candidates/", kf_backend_ext(b));
        return kf__err(ctx, KF_EUSAGE,
                       "%s: no template candidate (%s) for the "
                       "builtin proposer: give the task one with kforge:param lines (docs/tasks.md), "
                       "use --agent, or create an empty run for tool mode with --budget 0",
                       r->ev.t->dir, names);
    }
    if ((st = kf_store_lock_take(ctx, r->ev.run_dir, o->resume ? "run --resume" : "run",
                                 o->resume ? 0 : KF_STORE_LOCK_CREATE, &r->lock)))
        return st;
    if (o->resume) {
        st = kf_store_open(ctx, r->ev.run_dir, r->ev.t, &r->ev.st);
        if (!st) st = kf_record_seals_usable(ctx, r->ev.run_dir, r->ev.st);
    } else {
        char *cs = kf_config_json(o);
        st = kf_store_create(ctx, r->ev.run_dir, r->ev.t, cs, &r->ev.st);
        free(cs);
        if (!st && kf_store_replaced(r->ev.st))
            fprintf(stderr, "kforge run: %s held an interrupted creation (an empty run.db): replaced\n",
                    r->ev.run_dir);
    }
    if (st) return st;
    r->tally.st = r->ev.st;
    kf_proposer **p = r->tally.p;
    if (ti >= 0 && (!r->agent || o->with_builtin)) {
        if ((st = kf_proposer_builtin_new(&r->env, tpath, ti, o->has_seed ? o->seed : kf__secret_u64(),
                                          &p[KF_PROPOSER_BUILTIN])))
            return st;
        st = kf_proposer_builtin_prior(p[KF_PROPOSER_BUILTIN], r->cmd_lessons, o->resume,
                                       json_string_value(json_object_get(r->rcfg, "lessons")));
        if (st) return st;
    }
    if (r->ag) {
        kf_agent *ag = r->ag;
        r->ag = NULL;
        if ((st = kf_proposer_agent_new(&r->env, ag, &p[KF_PROPOSER_AGENT]))) return st;
    }
    return KF_OK;
}

/* Search over the proposers, and what the run already knows. */
static kf_status replay(run *r) {
    kf_tally *tl = &r->tally;
    kf_status st = kf_proposer_search(r->ev.ctx, &r->eo, &tl->se);
    if (st) return st;
    for (int k = 0; k < KF_PROPOSER_COUNT; k++)
        if (tl->p[k]) kf_search_offer(tl->se, k, tl->p[k]->categories);
    if ((st = kf_tally_replay(tl, &r->unfinished, &r->nun))) return st;
    tl->trips = kf_search_trips(tl->se); /* the breaker's trips, relearnt from the replay: already stored */
    /* the budget counts evaluations started: an interrupted node evaluated again is one
     * of them, and those past the budget wait, unfinished, for a resume with more */
    size_t room = r->eo.budget > tl->evals ? (size_t)(r->eo.budget - tl->evals) : 0;
    r->nredo = r->nun < room ? r->nun : room;
    if (r->nredo < r->nun)
        fprintf(stderr,
                "kforge run: resuming %s: %d evaluation%s recorded, %zu interrupted: %zu evaluated again, "
                "%zu left unfinished (--budget %d; a resume with a larger budget evaluates them)\n",
                r->ev.run_dir, tl->evals, tl->evals == 1 ? "" : "s", r->nun, r->nredo, r->nun - r->nredo,
                r->eo.budget);
    else if (tl->evals || r->nun)
        fprintf(stderr,
                "kforge run: resuming %s: %d evaluation%s recorded, %zu interrupted (evaluated again)\n",
                r->ev.run_dir, tl->evals, tl->evals == 1 ? "" : "s", r->nun);
    return KF_OK;
}

/* The stop rule that holds now, or NULL. The budget counts evaluations in flight. */
static const char *stop_rule(const run *r) {
    const kf_run_opts *o = &r->eo;
    const kf_tally *tl = &r->tally;
    if (tl->evals + r->sched.n >= o->budget) return "budget spent";
    if (r->pool && kf_pool_draining(r->pool)) return "drained";
    if (o->wall_s > 0 && (double)(kf__now_ns() - tl->t0) / 1e9 >= o->wall_s) return "wall time spent";
    if (o->tokens > 0 && tl->tokens >= o->tokens) return "token budget spent";
    if (o->target > 0 && tl->best >= o->target) return "target reached";
    if (o->patience > 0 && tl->since_improve >= o->patience)
        return "no improvement in the last --patience evaluations";
    return NULL;
}

/* 1 when a proposer other than the one numbered k is in the run. */
static int another(const run *r, int k) {
    for (int i = 0; i < KF_PROPOSER_COUNT; i++)
        if (i != k && r->tally.p[i]) return 1;
    return 0;
}

/* One turn of the loop: the next outcome when every evaluator is busy, else a proposal
 * (a proposer's own first, then search's pick) handed to the scheduler. *why: the reason
 * the loop stops, when it does. */
static kf_status turn(run *r, const char **why) {
    kf_sched *sc = &r->sched;
    kf_tally *tl = &r->tally;
    if (sc->n == sc->jobs) return kf_sched_wait(sc); /* every evaluator busy: the next outcome first */
    kf_proposed m;
    for (int k = 0; k < KF_PROPOSER_COUNT; k++) { /* measurements that call for a specialisation come first */
        kf_status st = kf_proposer_unprompted(tl->p[k], &m);
        if (st || m.id) return st ? st : kf_sched_put(sc, m.id);
    }
    kf_action a;
    if (kf_search_pick(tl->se, &a)) {
        if (sc->n) return kf_sched_wait(sc); /* what is in flight may open new actions */
        *why = "every action scores under the floor";
        return KF_OK;
    }
    kf_status st = kf_proposer_propose(tl->p[a.proposer], &a, &m);
    if (m.spent && another(r, a.proposer)) { /* another proposer may still have something to say */
        kf_search_offer(tl->se, a.proposer, 0);
        return st;
    }
    if (m.stop) *why = m.stop;
    else if (!st && m.id && m.evaluate) st = kf_sched_put(sc, m.id);
    return st;
}

/* The loop: the interrupted nodes first, then turns until a stop rule holds; what is in
 * flight is recorded, whatever stopped it. */
/* Scale-out (docs/scale.md): the pool of workers, started when the command names any;
 * --jobs defaults to one evaluation per launched worker. */
static kf_status scale_out(run *r) {
    const kf_run_opts *o = r->cmd;
    if (!o->listen && !o->devices && !o->workers && !o->launcher) return KF_OK;
    kf_pool_opts po = {.listen = o->listen,
                       .secret_file = o->secret_file,
                       .devices = o->devices,
                       .workers = o->workers,
                       .launcher = o->launcher,
                       .nslurm = o->nslurm,
                       .status_dir = r->ev.run_dir};
    for (int i = 0; i < o->nslurm && i < 8; i++) po.slurm[i] = o->slurm[i];
    kf_status st = kf_pool_start(r->ev.ctx, &po, &r->pool);
    if (st) return st;
    int n = kf_pool_launched(r->pool);
    if (!o->jobs && n > r->eo.jobs) r->eo.jobs = n > KF_RUN_MAX_JOBS ? KF_RUN_MAX_JOBS : n;
    r->ev.pool = r->pool;
    return KF_OK;
}

static kf_status loop(run *r, const char **why) {
    kf_sched *sc = &r->sched;
    kf_status st = scale_out(r);
    if (st) return st;
    st = kf_sched_start(sc, &r->ev, &r->tally, r->eo.jobs);
    if (st) return st;
    for (size_t i = 0; i < r->nredo && !st; i++) {
        /* a new attempt: what the Critic decided in an interrupted one no longer counts */
        if (!(st = kf_store_event(r->ev.st, r->unfinished[i], "attempt", "{\"resumed\":true}")))
            st = kf_sched_put(sc, r->unfinished[i]);
    }
    const char *stop = NULL;
    while (!st && !stop && !(stop = stop_rule(r))) st = turn(r, &stop);
    *why = stop;
    while (sc->n) {
        kf_status ws = kf_sched_wait(sc);
        if (!st) st = ws;
    }
    kf_sched_stop(sc);
    if (r->tally.tty) fputc('\n', stderr);
    return st;
}

/* The line on stderr that ends a run. */
static void summary_line(const run *r, const char *why) {
    const kf_tally *tl = &r->tally;
    const kf_run_opts *o = &r->eo;
    if (o->budget == 0 && !tl->evals && !o->resume) {
        fprintf(stderr,
                "kforge run: created %s, empty (--budget 0): `kforge next %s` gives the first action\n",
                r->ev.run_dir, r->ev.run_dir);
        return;
    }
    char tok[64] = "", best[64] = "none kept";
    if (tl->p[KF_PROPOSER_AGENT]) snprintf(tok, sizeof tok, ", %lld tokens", (long long)tl->tokens);
    if (tl->best_id)
        snprintf(best, sizeof best, "best %.3fx geomean (node %lld)", tl->best, (long long)tl->best_id);
    char split[512] = "";
    if (r->split) {
        split[0] = ';', split[1] = ' ';
        kf_loop_pack_split_text(r->split, split + 2, sizeof split - 2);
    }
    char trips[64] = "";
    if (kf_search_trips(tl->se))
        snprintf(trips, sizeof trips, ", circuit breaker tripped %d time%s", kf_search_trips(tl->se),
                 kf_search_trips(tl->se) == 1 ? "" : "s");
    fprintf(stderr, "kforge run: %s: %d evaluations, %d kept, %s%s%s; %s%s\n", r->ev.run_dir, tl->evals,
            tl->kept, best, tok, trips, why, split);
}

/* The run marked done, the line on stderr, and *summary (when asked for). KF_ENOMEM when
 * the summary could not be made (the run itself is recorded whole). */
static kf_status finish(run *r, const char *why, char **summary) {
    const kf_tally *tl = &r->tally;
    const kf_run_opts *o = &r->eo;
    kf_store_set_status(r->ev.st, "done");
    kf_loop_pack_split(r->ev.st, &r->split); /* the split of prompt tokens over the run's packs */
    summary_line(r, why);
    /* the loop's own cost: everything but kf_bench (compile, check, timing) */
    /* --jobs N: the main thread's time outside waiting for outcomes */
    uint64_t inside = o->jobs > 1 ? r->sched.wait_ns : r->ev.bench_ns;
    double over_ms = tl->fresh ? ((double)(kf__now_ns() - tl->t0 - inside) / 1e6) / tl->fresh : 0;
    if (!summary) return KF_OK;
    json_t *j =
        json_pack("{s:s, s:i, s:i, s:f, s:I, s:I, s:s, s:f, s:i, s:i}", "run", r->ev.run_dir, "evaluations",
                  tl->evals, "kept", tl->kept, "best_speedup", tl->best, "best_node", (json_int_t)tl->best_id,
                  "tokens", (json_int_t)tl->tokens, "stopped", why, "overhead_ms_per_evaluation", over_ms,
                  "jobs", o->jobs, "max_concurrent_timing", kf_bench_timing_max());
    if (j && r->split) json_object_set(j, "pack_tokens", r->split);
    char *lev = NULL; /* the builtin's prior, when lessons made one */
    kf_loop_lessons_event(r->ev.st, &lev);
    json_t *lj = lev ? json_loads(lev, 0, NULL) : NULL;
    free(lev);
    if (j && lj) json_object_set_new(j, "lessons", lj);
    else json_decref(lj);
    if (j) json_object_set_new(j, "breaker_trips", json_integer(kf_search_trips(tl->se)));
    if (j && r->pool) json_object_set_new(j, "scale", kf_pool_report(r->pool));
    *summary = j ? kf__json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    return *summary ? KF_OK
                    : kf__err(r->ev.ctx, KF_ENOMEM, "out of memory (the run's summary; the run is recorded)");
}

kf_status kf_run(kf_ctx *ctx, const kf_run_opts *o, char **summary) {
    if (summary) *summary = NULL;
    run *r = calloc(1, sizeof *r);
    if (!r) return kf__err(ctx, KF_ENOMEM, "out of memory");
    r->ev.ctx = ctx;
    r->ev.o = o;
    r->cmd = o;
    r->eo = *o;
    r->cmd_lessons = o->lessons;
    r->task_dir = o->task_dir;
    r->tally.t0 = kf__now_ns();
    r->tally.tty = isatty(2);
    r->tally.budget = o->budget;
    r->env = (kf_proposer_env){&r->ev, &r->tally, &r->sched, NULL};
    const char *why = NULL;
    kf_status st = options(r);
    if (!st) st = open_run(r);
    if (!st) st = replay(r);
    if (!st) st = loop(r, &why);
    if (!st) st = finish(r, why, summary);
    kf_sched_stop(&r->sched);
    kf_pool_stop(r->pool);
    json_decref(r->split);
    kf_loop_memory_close(r->mem);
    free(r->unfinished);
    kf_search_free(r->tally.se);
    for (int k = 0; k < KF_PROPOSER_COUNT; k++) kf_proposer_free(r->tally.p[k]);
    kf_agent_free(r->ag);
    kf_advisor_free(r->ev.advisor);
    kf_store_close(r->ev.st);
    kf_store_unlock(r->lock);
    kf_task_free(r->ev.t);
    json_decref(r->rcfg);
    free(r);
    return st;
}
