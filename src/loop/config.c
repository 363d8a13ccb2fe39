/*
 * config.c - a run's configuration as one table of fields (docs/run.md "Resume").
 *
 * Each field of kf_run_opts that a run records names its key in the run's config_json,
 * its type, when it is recorded (always, or only when the command gave it) and which
 * readers take it back when their own command leaves it unset: --resume (the proposer,
 * its endpoint, the budgets of tokens and packs, the lessons, the Critic's settings, the
 * checks' and timings' settings, --jobs) and tool mode (the checks' and timings'
 * settings, and the local workers that evaluate; the Critic's are imposed there,
 * kf_config_tool). The table's order is the
 * order of the recorded object's keys. The seal over the run's row covers this text, so
 * the same options always record the same bytes.
 */
#include "config.h"

#include "../util/util.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

typedef enum {
    CF_STR,  /* const char *: recorded when given */
    CF_PATH, /* const char *, a file: recorded absolute ("none" as it is) */
    CF_INT,  /* int */
    CF_I64,  /* int64_t */
    CF_U64,  /* uint64_t */
    CF_REAL, /* double */
    CF_BOOL, /* int, 0 or 1: taken back as "either says so" */
    CF_LIST, /* critic[8] and its count ncritic */
} cf_type;

/* When a number is recorded, and when a command leaves it unset. */
enum {
    CF_ALWAYS = 1 << 0, /* recorded whatever it is (else: strings given, numbers > 0) */
    CF_NONNEG = 1 << 1, /* recorded when >= 0, unset when < 0 (and taken back only when
                           the run recorded an integer) */
    CF_NOTPOS = 1 << 2, /* unset when not > 0 (else: when 0) */
    CF_RESUME = 1 << 3, /* --resume takes it back */
    CF_TOOL = 1 << 4,   /* tool mode takes it back */
};

typedef struct {
    const char *key;
    cf_type type;
    size_t off;
    unsigned flags;
    const char *def; /* CF_STR with CF_ALWAYS: what is recorded when it is unset */
} cf_field;

#define F(name) offsetof(kf_run_opts, name)
static const cf_field fields[] = {
    {"agent", CF_STR, F(agent), CF_ALWAYS | CF_RESUME, "builtin"},
    {"budget", CF_INT, F(budget), CF_ALWAYS, NULL},
    {"seed", CF_U64, F(seed), CF_ALWAYS, NULL},
    {"with_builtin", CF_BOOL, F(with_builtin), CF_ALWAYS | CF_RESUME, NULL},
    {"base_url", CF_STR, F(base_url), CF_RESUME, NULL},
    {"api_key_env", CF_STR, F(api_key_env), CF_RESUME, NULL},
    {"agent_timeout_s", CF_REAL, F(agent_timeout_s), CF_RESUME, NULL},
    {"tokens", CF_I64, F(tokens), CF_RESUME, NULL},
    {"critic_agent", CF_STR, F(critic_agent), CF_RESUME | CF_TOOL, NULL},
    /* the checks' and timings' settings: tool mode and --resume use them when not given */
    {"hidden", CF_INT, F(hidden), CF_NONNEG | CF_RESUME | CF_TOOL, NULL},
    {"min_runs", CF_INT, F(min_runs), CF_RESUME | CF_TOOL, NULL},
    {"max_runs", CF_INT, F(max_runs), CF_RESUME | CF_TOOL, NULL},
    {"min_time_s", CF_REAL, F(min_time_s), CF_NOTPOS | CF_RESUME | CF_TOOL, NULL},
    {"precision", CF_REAL, F(precision), CF_NONNEG | CF_RESUME | CF_TOOL, NULL},
    {"critic", CF_LIST, F(critic), CF_RESUME | CF_TOOL, NULL},
    {"jobs", CF_INT, F(jobs), CF_ALWAYS | CF_RESUME, NULL}, /* kf_run has made it 1 or more */
    {"lessons", CF_PATH, F(lessons), CF_RESUME, NULL}, /* absolute, so a resume from elsewhere finds it */
    {"pack_tokens", CF_I64, F(pack_tokens), CF_RESUME, NULL},
    {"screen_first", CF_BOOL, F(screen), CF_RESUME, NULL}, /* recorded when given */
    /* scale-out's local workers (docs/scale.md "Tool mode"): each submit evaluates on
     * them unless it names its own; --resume starts only the workers its command names */
    {"workers", CF_INT, F(workers), CF_TOOL, NULL},
    {"devices", CF_STR, F(devices), CF_TOOL, NULL},
};
#undef F

#define AT(o, f, T) ((T *)((char *)(o) + (f)->off))
#define AT_C(o, f, T) ((const T *)((const char *)(o) + (f)->off))

/* The field's value as recorded, or NULL when it is not recorded. */
static json_t *recorded(const kf_run_opts *o, const cf_field *f) {
    int always = f->flags & CF_ALWAYS, nonneg = f->flags & CF_NONNEG;
    switch (f->type) {
    case CF_STR: {
        const char *v = *AT_C(o, f, const char *);
        return v ? json_string(v) : always ? json_string(f->def) : NULL;
    }
    case CF_PATH: {
        const char *v = *AT_C(o, f, const char *);
        if (!v) return NULL;
        char *abs = strcmp(v, "none") ? realpath(v, NULL) : NULL;
        json_t *j = json_string(abs ? abs : v);
        free(abs);
        return j;
    }
    case CF_INT: {
        int v = *AT_C(o, f, int);
        return always || (nonneg ? v >= 0 : v > 0) ? json_integer(v) : NULL;
    }
    case CF_I64: {
        int64_t v = *AT_C(o, f, int64_t);
        return always || v > 0 ? json_integer(v) : NULL;
    }
    case CF_U64: return json_integer((json_int_t)*AT_C(o, f, uint64_t));
    case CF_REAL: {
        double v = *AT_C(o, f, double);
        return always || (nonneg ? v >= 0 : v > 0) ? json_real(v) : NULL;
    }
    case CF_BOOL: return always || *AT_C(o, f, int) ? json_boolean(*AT_C(o, f, int)) : NULL;
    case CF_LIST:
        if (o->ncritic <= 0) return NULL;
        json_t *ca = json_array();
        for (int i = 0; i < o->ncritic; i++) json_array_append_new(ca, json_string(o->critic[i]));
        return ca;
    }
    return NULL;
}

char *kf_config_json(const kf_run_opts *o) {
    json_t *cfg = json_object();
    for (size_t i = 0; cfg && i < sizeof fields / sizeof *fields; i++) {
        json_t *v = recorded(o, &fields[i]);
        if (v) json_object_set_new(cfg, fields[i].key, v);
    }
    char *cs = cfg ? kf__json_dumps(cfg, JSON_COMPACT) : NULL;
    json_decref(cfg);
    return cs;
}

/* The field taken back from cfg when o leaves it unset. */
static void take(kf_run_opts *o, const cf_field *f, json_t *cfg) {
    json_t *v = json_object_get(cfg, f->key);
    switch (f->type) {
    case CF_STR:
    case CF_PATH:
        if (!*AT(o, f, const char *)) *AT(o, f, const char *) = json_string_value(v);
        break;
    case CF_INT:
        if (f->flags & CF_NONNEG) {
            if (*AT(o, f, int) < 0 && json_is_integer(v)) *AT(o, f, int) = (int)json_integer_value(v);
        } else if (!*AT(o, f, int)) {
            *AT(o, f, int) = (int)json_integer_value(v);
        }
        break;
    case CF_I64:
        if (!*AT(o, f, int64_t)) *AT(o, f, int64_t) = json_integer_value(v);
        break;
    case CF_REAL:
        if (f->flags & CF_NONNEG) {
            if (*AT(o, f, double) < 0 && json_is_number(v)) *AT(o, f, double) = json_number_value(v);
        } else if (f->flags & CF_NOTPOS ? !(*AT(o, f, double) > 0) : !*AT(o, f, double)) {
            *AT(o, f, double) = json_number_value(v);
        }
        break;
    case CF_BOOL: *AT(o, f, int) |= json_is_true(v); break;
    case CF_LIST:
        if (!o->ncritic) { /* the Critic judges a resumed run as it judged the rest */
            size_t ci;
            json_t *cv;
            json_array_foreach(v, ci, cv) {
                if (o->ncritic < 8 && json_string_value(cv)) o->critic[o->ncritic++] = json_string_value(cv);
            }
        }
        break;
    case CF_U64: break;
    }
}

static void take_all(kf_run_opts *o, json_t *cfg, unsigned which) {
    for (size_t i = 0; i < sizeof fields / sizeof *fields; i++)
        if (fields[i].flags & which) take(o, &fields[i], cfg);
}

void kf_config_resume(kf_run_opts *o, json_t *cfg) { take_all(o, cfg, CF_RESUME); }

kf_status kf_config_tool(kf_ctx *ctx, const char *run_dir, int hidden_count, const kf_run_opts *o,
                         json_t *cfg, kf_run_opts *own) {
    *own = *o;
    if (o->ncritic || o->critic_agent)
        return kf__err(ctx, KF_EUSAGE,
                       "%s: --critic%s: the Critic's settings are the run's (set by `kforge run`, "
                       "recorded when the run was created); a submitter does not choose its judge",
                       run_dir, o->ncritic ? "" : "-agent");
    json_t *h = json_object_get(cfg, "hidden");
    int floor_ = json_is_integer(h) ? (int)json_integer_value(h) : hidden_count;
    if (o->hidden >= 0 && o->hidden < floor_)
        return kf__err(ctx, KF_EUSAGE, "%s: --hidden %d: fewer hidden shapes than the run checks with (%d)",
                       run_dir, o->hidden, floor_);
    /* the Critic's: the run's, whatever the submitter's command says */
    own->ncritic = 0;
    own->critic_agent = NULL;
    take_all(own, cfg, CF_TOOL);
    return KF_OK;
}
