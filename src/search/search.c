/*
 * search.c - Arbor's selection score over the run's tree (docs/run.md "Selection").
 *
 * Data: a statistics cell per (proposer, category) - tries, rejections, crashes, measured
 * gains, costs, the current failure streak - and a hash table of nodes (id -> speedup,
 * children kept, exhausted actions).
 * Candidate parents are the root, the best kept nodes (max_parents) and the best measured
 * nodes of each category (parents_per_cat), maintained on observe, so a pick costs
 * O(candidate parents x categories x proposers) whatever the tree's size.
 *
 * Guarantees: deterministic (ties go to the earlier parent, category, proposer); every term
 * of the chosen action is reported. It does not decide what is kept (the Critic does), nor
 * propose text (the proposers do), nor persist anything (the store does: resume replays
 * the observations in order).
 */
#define _GNU_SOURCE
#include "search.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const cat_names[KF_CAT_COUNT] = {"tiling",         "vectorisation", "unrolling",
                                                    "memory_layout",  "launch_config", "algorithm",
                                                    "specialisation", "precision",     "other"};

const char *kf_search_category_name(int cat) {
    return cat >= 0 && cat < KF_CAT_COUNT ? cat_names[cat] : NULL;
}

int kf_search_category_parse(const char *s) {
    for (int i = 0; i < KF_CAT_COUNT; i++)
        if (s && !strcmp(s, cat_names[i])) return i;
    return -1;
}

int kf_search_category_of_param(const char *name) {
    /* Exact names first (the bundled templates' short names), then substrings. */
    static const struct {
        const char *name;
        int cat;
    } exact[] = {{"BM", KF_CAT_TILING},          {"BN", KF_CAT_TILING},     {"BK", KF_CAT_TILING},
                 {"TM", KF_CAT_TILING},          {"TN", KF_CAT_TILING},     {"WM", KF_CAT_TILING},
                 {"WN", KF_CAT_TILING},          {"JB", KF_CAT_TILING},     {"RG", KF_CAT_TILING},
                 {"W", KF_CAT_VECTORISATION},    {"ACC", KF_CAT_UNROLLING}, {"RES", KF_CAT_LAUNCH_CONFIG},
                 {"BROWS", KF_CAT_LAUNCH_CONFIG}};
    static const struct {
        const char *sub;
        int cat;
    } subs[] = {
        {"TILE", KF_CAT_TILING},          {"UNROLL", KF_CAT_UNROLLING},     {"VEC", KF_CAT_VECTORISATION},
        {"LANE", KF_CAT_VECTORISATION},   {"WIDTH", KF_CAT_VECTORISATION},  {"SIMD", KF_CAT_VECTORISATION},
        {"BLOCK", KF_CAT_LAUNCH_CONFIG},  {"THREAD", KF_CAT_LAUNCH_CONFIG}, {"WARP", KF_CAT_LAUNCH_CONFIG},
        {"GRID", KF_CAT_LAUNCH_CONFIG},   {"LAYOUT", KF_CAT_MEMORY_LAYOUT}, {"PAD", KF_CAT_MEMORY_LAYOUT},
        {"STRIDE", KF_CAT_MEMORY_LAYOUT}, {"PREC", KF_CAT_PRECISION},       {"HALF", KF_CAT_PRECISION},
        {"FP", KF_CAT_PRECISION},         {"ALGO", KF_CAT_ALGORITHM},       {"METHOD", KF_CAT_ALGORITHM}};
    char up[64];
    size_t n = 0;
    for (; name && name[n] && n < sizeof up - 1; n++) up[n] = (char)toupper((unsigned char)name[n]);
    up[n] = 0;
    for (size_t i = 0; i < sizeof exact / sizeof exact[0]; i++)
        if (!strcmp(up, exact[i].name)) return exact[i].cat;
    for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++)
        if (strstr(up, subs[i].sub)) return subs[i].cat;
    return KF_CAT_OTHER;
}

void kf_search_defaults(kf_search_cfg *cfg) {
    memset(cfg, 0, sizeof *cfg);
    cfg->C = 0.6;
    cfg->aging = 0.05;
    cfg->keep_decay = 0.7;
    cfg->fail_penalty = 0.85;
    cfg->fail_streak = 3;
    cfg->k0 = 2;
    cfg->floor = 0.01;
    cfg->target = 2;
    for (int i = 0; i < KF_CAT_COUNT; i++) {
        cfg->gain_prior[i] = 1.2;
        cfg->cost_prior[i] = 1;
    }
    cfg->gain_prior[KF_CAT_SPECIALISATION] = 1.3;
    cfg->gain_prior[KF_CAT_OTHER] = 1.1;
    cfg->max_parents = 64;
    cfg->parents_per_cat = 2;
    cfg->nproposers = 1;
    cfg->breaker_k = 4;
    cfg->breaker_pause = 8;
}

int kf_search_cfg_set(kf_search_cfg *cfg, const char *kv, char *err, size_t errlen) {
    const char *eq = strchr(kv, '=');
    if (!eq || eq == kv) {
        snprintf(err, errlen, "--search %s: expected KEY=VALUE", kv);
        return -1;
    }
    char key[64];
    size_t kl = (size_t)(eq - kv);
    if (kl >= sizeof key) kl = sizeof key - 1;
    memcpy(key, kv, kl);
    key[kl] = 0;
    char *end;
    errno = 0;
    double v = strtod(eq + 1, &end);
    if (errno || end == eq + 1 || *end || !isfinite(v)) {
        snprintf(err, errlen, "--search %s: '%s' is not a number", key, eq + 1);
        return -1;
    }
    struct {
        const char *k;
        double *d;
        int *i;
        double lo, hi;
    } f[] = {{"C", &cfg->C, NULL, 0, 1e6},
             {"aging", &cfg->aging, NULL, 0, 1e6},
             {"keep_decay", &cfg->keep_decay, NULL, 1e-9, 1},
             {"fail_penalty", &cfg->fail_penalty, NULL, 1e-9, 1},
             {"fail_streak", NULL, &cfg->fail_streak, 1, 1e6},
             {"k0", &cfg->k0, NULL, 0, 1e6},
             {"floor", &cfg->floor, NULL, -1e9, 1e9},
             {"target", &cfg->target, NULL, 1e-9, 1e9},
             {"max_parents", NULL, &cfg->max_parents, 1, 4096},
             {"parents_per_cat", NULL, &cfg->parents_per_cat, 0, 64},
             {"nproposers", NULL, &cfg->nproposers, 1, KF_SEARCH_MAX_PROPOSERS},
             {"breaker_k", NULL, &cfg->breaker_k, 0, 1e6},
             {"breaker_pause", NULL, &cfg->breaker_pause, 1, 1e6}};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        if (strcmp(key, f[i].k)) continue;
        if (v < f[i].lo || v > f[i].hi || (f[i].i && v != floor(v))) {
            snprintf(err, errlen, "--search %s=%s: out of range [%g, %g]%s", key, eq + 1, f[i].lo, f[i].hi,
                     f[i].i ? " (an integer)" : "");
            return -1;
        }
        if (f[i].d) *f[i].d = v;
        else *f[i].i = (int)v;
        return 0;
    }
    int cat = -1, is_gain = !strncmp(key, "gain.", 5), is_cost = !strncmp(key, "cost.", 5);
    if (is_gain || is_cost) cat = kf_search_category_parse(key + 5);
    if (cat < 0) {
        snprintf(err, errlen,
                 "--search %s: unknown key (C, aging, keep_decay, fail_penalty, "
                 "fail_streak, k0, floor, target, max_parents, parents_per_cat, nproposers, "
                 "breaker_k, breaker_pause, gain.CATEGORY, cost.CATEGORY)",
                 key);
        return -1;
    }
    if (v <= 0) {
        snprintf(err, errlen, "--search %s: must be > 0", key);
        return -1;
    }
    (is_gain ? cfg->gain_prior : cfg->cost_prior)[cat] = v;
    return 0;
}

typedef struct {
    double tries, fails, crashes, measured, gain_sum, cost_sum, cost_n;
    int streak;
    uint32_t last_pick;  /* s->picks when this (proposer, category) last ran */
    int pending;         /* tries issued and not yet observed (kforge run --jobs N) */
    int fails_in_row;    /* circuit breaker: failures since its last measured outcome */
    double paused_until; /* circuit breaker: paused while s->n_actions < this */
} cell;

typedef struct {
    int64_t id;     /* 0 in an empty slot is told apart by used */
    double speedup; /* 0: not measured (cannot be a parent) */
    int kept_children;
    int used;
    uint16_t exhausted[KF_SEARCH_MAX_PROPOSERS]; /* bit per category */
} node;

struct kf_search {
    kf_search_cfg cfg;
    cell cells[KF_SEARCH_MAX_PROPOSERS][KF_CAT_COUNT];
    unsigned offer[KF_SEARCH_MAX_PROPOSERS];
    node *tab;
    size_t cap, count;
    double n_actions, best, cost_sum, cost_n;
    int n_pending; /* the cells' pending tries, in all */
    uint32_t picks;
    int64_t *kept; /* best kept nodes, by speedup descending, at most max_parents */
    int nkept;
    int64_t *cat_top; /* [category][parents_per_cat], by speedup descending, 0 = empty */
    int trips, trip_prop, trip_cat, trip_fails; /* the circuit breaker's record */
};

static size_t hash64(int64_t id) {
    uint64_t x = (uint64_t)id;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return (size_t)x;
}

static node *find(const kf_search *s, int64_t id) {
    for (size_t i = hash64(id) & (s->cap - 1);; i = (i + 1) & (s->cap - 1)) {
        if (!s->tab[i].used) return NULL;
        if (s->tab[i].id == id) return &s->tab[i];
    }
}

static node *insert(kf_search *s, int64_t id) {
    if (2 * (s->count + 1) > s->cap) {
        size_t ncap = s->cap * 2;
        node *nt = calloc(ncap, sizeof *nt);
        if (!nt) return NULL;
        for (size_t i = 0; i < s->cap; i++) {
            if (!s->tab[i].used) continue;
            size_t j = hash64(s->tab[i].id) & (ncap - 1);
            while (nt[j].used) j = (j + 1) & (ncap - 1);
            nt[j] = s->tab[i];
        }
        free(s->tab);
        s->tab = nt;
        s->cap = ncap;
    }
    size_t i = hash64(id) & (s->cap - 1);
    while (s->tab[i].used) {
        if (s->tab[i].id == id) return &s->tab[i];
        i = (i + 1) & (s->cap - 1);
    }
    memset(&s->tab[i], 0, sizeof s->tab[i]);
    s->tab[i].used = 1;
    s->tab[i].id = id;
    s->count++;
    return &s->tab[i];
}

kf_search *kf_search_new(const kf_search_cfg *cfg) {
    kf_search *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    if (cfg) s->cfg = *cfg;
    else kf_search_defaults(&s->cfg);
    if (s->cfg.nproposers < 1 || s->cfg.nproposers > KF_SEARCH_MAX_PROPOSERS) s->cfg.nproposers = 1;
    if (s->cfg.max_parents < 1) s->cfg.max_parents = 1;
    if (s->cfg.parents_per_cat < 0) s->cfg.parents_per_cat = 0;
    for (int p = 0; p < KF_SEARCH_MAX_PROPOSERS; p++) s->offer[p] = (1u << KF_CAT_COUNT) - 1;
    s->cap = 1024;
    s->tab = calloc(s->cap, sizeof *s->tab);
    s->kept = calloc((size_t)s->cfg.max_parents, sizeof *s->kept);
    s->cat_top = calloc((size_t)KF_CAT_COUNT * (size_t)(s->cfg.parents_per_cat + 1), sizeof *s->cat_top);
    s->best = 1;
    node *root = s->tab && s->kept && s->cat_top ? insert(s, 0) : NULL;
    if (!root) {
        kf_search_free(s);
        return NULL;
    }
    root->speedup = 1;
    return s;
}

void kf_search_free(kf_search *s) {
    if (!s) return;
    free(s->tab);
    free(s->kept);
    free(s->cat_top);
    free(s);
}

/* Insert id into a list sorted by speedup descending, capped at cap entries. */
static void top_insert(kf_search *s, int64_t *list, int *n, int cap, int64_t id, double sp) {
    int i = *n < cap ? (*n)++ : cap;
    if (i == cap) {
        if (cap == 0) return;
        node *last = find(s, list[cap - 1]);
        if (last && last->speedup >= sp) return;
        i = cap - 1;
    }
    while (i > 0) {
        node *prev = find(s, list[i - 1]);
        if (prev && prev->speedup >= sp) break;
        list[i] = list[i - 1];
        i--;
    }
    list[i] = id;
}

/* The circuit breaker: cfg.breaker_k failures in a row of one (proposer, category) pause
 * it for cfg.breaker_pause outcomes; a measured kernel from any action lifts every
 * pause (the tree changed: what failed may work from the new parent). Counted in
 * observations, not picks, so replaying a run's outcomes on resume pauses the same. */
static void breaker(kf_search *s, cell *c, const kf_search_obs *o, int measured) {
    if (measured) {
        c->fails_in_row = 0;
        for (int p = 0; p < KF_SEARCH_MAX_PROPOSERS; p++)
            for (int k = 0; k < KF_CAT_COUNT; k++) s->cells[p][k].paused_until = 0;
        return;
    }
    if (o->state != KF_SOBS_REJECTED && o->state != KF_SOBS_COMPILE_FAILED && o->state != KF_SOBS_CRASHED)
        return;
    if (++c->fails_in_row < s->cfg.breaker_k || s->cfg.breaker_k <= 0) return;
    c->paused_until = s->n_actions + s->cfg.breaker_pause;
    s->trips++;
    s->trip_prop = o->proposer;
    s->trip_cat = o->category;
    s->trip_fails = c->fails_in_row;
    c->fails_in_row = 0;
}

int kf_search_trips(const kf_search *s) { return s->trips; }

void kf_search_last_trip(const kf_search *s, int *proposer, int *category, int *failures) {
    if (proposer) *proposer = s->trip_prop;
    if (category) *category = s->trip_cat;
    if (failures) *failures = s->trip_fails;
}

int kf_search_paused(const kf_search *s, int proposer, int category) {
    if (proposer < 0 || proposer >= KF_SEARCH_MAX_PROPOSERS || category < 0 || category >= KF_CAT_COUNT)
        return 0;
    double left = s->cells[proposer][category].paused_until - s->n_actions;
    return left > 0 ? (int)left : 0;
}

int kf_search_observe(kf_search *s, const kf_search_obs *o) {
    const kf_search_cfg *cfg = &s->cfg;
    if (o->id <= 0 || o->category < 0 || o->category >= KF_CAT_COUNT || o->proposer < 0 ||
        o->proposer >= cfg->nproposers || find(s, o->id))
        return -1;
    node *par = find(s, o->parent);
    if (!par) return -1;
    double psp = par->speedup > 0 ? par->speedup : 1;
    node *n = insert(s, o->id);
    if (!n) return -1;
    par = find(s, o->parent); /* the table may have moved */
    if (o->state == KF_SOBS_PRUNED) return 0;
    cell *c = &s->cells[o->proposer][o->category];
    c->tries++;
    s->n_actions++;
    if (o->cost_s > 0 && isfinite(o->cost_s)) {
        c->cost_sum += o->cost_s;
        c->cost_n++;
        s->cost_sum += o->cost_s;
        s->cost_n++;
    }
    int measured =
        (o->state == KF_SOBS_KEPT || o->state == KF_SOBS_MEASURED) && o->speedup > 0 && isfinite(o->speedup);
    if (o->state == KF_SOBS_REJECTED || o->state == KF_SOBS_COMPILE_FAILED) c->fails++;
    if (o->state == KF_SOBS_CRASHED) c->crashes++;
    /* A try that is not kept continues the category's streak: slower-but-valid moves are
     * diminishing returns as much as failures are. */
    c->streak = o->state == KF_SOBS_KEPT ? 0 : c->streak + 1;
    breaker(s, c, o, measured);
    if (!measured) return 0;
    double gain = o->speedup / psp - 1;
    c->measured++;
    c->gain_sum += gain > 0 ? gain : 0;
    n->speedup = o->speedup;
    if (o->speedup > s->best) s->best = o->speedup;
    if (o->state == KF_SOBS_KEPT) {
        par->kept_children++;
        top_insert(s, s->kept, &s->nkept, cfg->max_parents, o->id, o->speedup);
    }
    int k = cfg->parents_per_cat, cnt = 0;
    int64_t *list = s->cat_top + (size_t)o->category * (size_t)(k + 1);
    while (cnt < k && list[cnt]) cnt++;
    top_insert(s, list, &cnt, k, o->id, o->speedup);
    return 0;
}

void kf_search_exhaust(kf_search *s, int64_t parent, int category, int proposer) {
    node *n = find(s, parent);
    if (n && category >= 0 && category < KF_CAT_COUNT && proposer >= 0 && proposer < KF_SEARCH_MAX_PROPOSERS)
        n->exhausted[proposer] |= (uint16_t)(1u << category);
}

void kf_search_pending(kf_search *s, int category, int proposer, int delta) {
    if (category < 0 || category >= KF_CAT_COUNT || proposer < 0 || proposer >= KF_SEARCH_MAX_PROPOSERS)
        return;
    cell *c = &s->cells[proposer][category];
    if (c->pending + delta < 0) return;
    c->pending += delta;
    s->n_pending += delta;
}

void kf_search_offer(kf_search *s, int proposer, unsigned mask) {
    if (proposer >= 0 && proposer < KF_SEARCH_MAX_PROPOSERS) s->offer[proposer] = mask;
}

static void score(const kf_search *s, const node *par, int cat, int prop, kf_action *a) {
    const kf_search_cfg *cfg = &s->cfg;
    const cell *c = &s->cells[prop][cat];
    memset(a, 0, sizeof *a);
    a->parent = par->id;
    a->category = cat;
    a->proposer = prop;
    double w = c->measured + cfg->k0 > 0 ? c->measured / (c->measured + cfg->k0) : 1;
    double mean = c->measured > 0 ? c->gain_sum / c->measured : 0;
    a->gain = (1 - w) * (cfg->gain_prior[cat] - 1) + w * mean;
    /* Arbor applies every action to the current baseline. Here a parent is chosen too, so
     * the share is the incumbent's (the best time so far above the target) and each parent
     * is weighted by its speed relative to the incumbent: with the parent's own share, the
     * slowest parents scored highest and the replay wandered (docs/run.md "Search efficiency"). */
    double share = 1 - s->best / cfg->target;
    a->share = share > 0.05 ? share : 0.05;
    a->quality = par->speedup / s->best;
    a->g = a->gain * a->share * a->quality;
    /* Cost relative to the mean over all measured tries: seconds would make the
     * exploitation term's scale (against C) depend on how long one evaluation takes. */
    if (c->cost_n > 0 && s->cost_n > 0 && s->cost_sum > 0)
        a->c = (c->cost_sum / c->cost_n) / (s->cost_sum / s->cost_n);
    else a->c = cfg->cost_prior[cat];
    if (a->c < 1e-6) a->c = 1e-6;
    a->r_fail = (c->fails + 1) / (c->tries + 2);
    a->r_crash = (c->crashes + 1) / (c->tries + 2);
    double g0 = 1 - 1 / cfg->target, gap = 1 / s->best - 1 / cfg->target;
    a->m_gap = g0 > 0 ? 1 + fmin(1, fmax(0, gap) / g0) : 1;
    /* N and n_cat count the tries in flight too: with several evaluations at once, an
     * action already running does not keep the bonus that drew it (no pile-up on one) */
    double n_all = s->n_actions + s->n_pending;
    a->bonus = n_all > 1 ? cfg->C * sqrt(log(n_all) / (1 + c->tries + c->pending)) : 0;
    a->decay = pow(cfg->keep_decay, par->kept_children);
    if (c->streak >= cfg->fail_streak) a->decay *= pow(cfg->fail_penalty, c->streak - cfg->fail_streak + 1);
    /* Aging is per (proposer, category): what must not starve is a kind of move. Per
     * (parent, category) it forces a round-robin over every candidate parent (hundreds of
     * actions), which the replay showed to be slower than random search. */
    a->age = cfg->aging * (double)(s->picks - c->last_pick);
    a->h = (a->g / a->c * (1 - a->r_fail) * (1 - a->r_crash) * a->m_gap + a->bonus) * a->decay + a->age;
    a->paused = kf_search_paused(s, prop, cat);
}

int kf_search_score(kf_search *s, int64_t parent, int category, int proposer, kf_action *out) {
    node *n = find(s, parent);
    if (!n || n->speedup <= 0 || category < 0 || category >= KF_CAT_COUNT || proposer < 0 ||
        proposer >= s->cfg.nproposers)
        return -1;
    score(s, n, category, proposer, out);
    return 0;
}

int kf_search_pick(kf_search *s, kf_action *out) {
    int64_t cand[4096 + 1 + KF_CAT_COUNT * 64];
    int nc = 0, k = s->cfg.parents_per_cat;
    cand[nc++] = 0;
    for (int i = 0; i < s->nkept; i++) cand[nc++] = s->kept[i];
    for (int c = 0; c < KF_CAT_COUNT; c++)
        for (int j = 0; j < k; j++) {
            int64_t id = s->cat_top[(size_t)c * (size_t)(k + 1) + (size_t)j];
            int dup = !id;
            for (int i = 0; i < nc && !dup; i++) dup = cand[i] == id;
            if (!dup) cand[nc++] = id;
        }
    kf_action best;
    int found = 0;
    /* first pass: what the circuit breaker has not paused; second: anything */
    for (int pass = 0; pass < 2 && !found; pass++)
        for (int i = 0; i < nc; i++) {
            node *n = find(s, cand[i]);
            if (!n || n->speedup <= 0) continue;
            for (int c = 0; c < KF_CAT_COUNT; c++)
                for (int p = 0; p < s->cfg.nproposers; p++) {
                    if (!(s->offer[p] >> c & 1) || (n->exhausted[p] >> c & 1)) continue;
                    if (!pass && kf_search_paused(s, p, c)) continue;
                    kf_action a;
                    score(s, n, c, p, &a);
                    if (a.h >= s->cfg.floor && (!found || a.h > best.h)) {
                        best = a;
                        found = 1;
                    }
                }
        }
    if (!found) return -1;
    s->picks++;
    s->cells[best.proposer][best.category].last_pick = s->picks;
    *out = best;
    return 0;
}

char *kf_search_explain(const kf_action *a, char *buf, size_t n) {
    if (!n) return buf;
    snprintf(buf, n,
             "{\"parent\":%lld,\"category\":\"%s\",\"proposer\":%d,\"h\":%.6g,\"g\":%.6g,"
             "\"gain\":%.6g,\"share\":%.6g,\"c\":%.6g,\"r_fail\":%.6g,\"r_crash\":%.6g,"
             "\"m_gap\":%.6g,\"bonus\":%.6g,\"decay\":%.6g,\"age\":%.6g,\"quality\":%.6g,\"paused\":%d}",
             (long long)a->parent,
             kf_search_category_name(a->category) ? kf_search_category_name(a->category) : "?", a->proposer,
             a->h, a->g, a->gain, a->share, a->c, a->r_fail, a->r_crash, a->m_gap, a->bonus, a->decay, a->age,
             a->quality, a->paused);
    return buf;
}
