/*
 * builtin.c - the builtin proposer over a template's kforge:param space.
 *
 * The directives are parsed by kf_candidate_load (candidate.c); this file only walks the
 * space. A point is a value index per parameter, coded mixed-radix into a 64-bit number;
 * a hash set of codes holds every point proposed or observed, so nothing is proposed
 * twice. Each observation is kept (point, outcome, per-shape times).
 *
 * Learnt constraints: after a compile failure or crash at a point, the parameter values of
 * that point which have never been part of a successful build are the suspects; when
 * exactly one is left (now or after later successes clear the others), that value is
 * excluded for this template. A failure whose every value has also built fine is an
 * interaction: only that point is excluded (it was tried).
 *
 * Moves: of a point's untried neighbours (one parameter one value away, or two when a
 * kforge:require blocks the one), the builtin proposes one whose move was measured to help
 * most elsewhere in the space (random_neighbour has the details). Where no point was
 * observed beyond p's value of a parameter in a direction and three or more values lie
 * there, the first step that way goes to the middle of them (probe_step).
 *
 * A prior (kf_builtin_prior, from lessons): each parameter value may carry a weight. The
 * walk's first point takes, per parameter, the value of the greatest positive weight
 * (the template's default where none); restarts try the other favoured values first; and
 * a point with a value of negative weight is proposed only when no other candidate of the
 * same move is left. With no prior every choice is the one made without this code.
 *
 * Determinism: the random stream of each proposal is derived from the seed and the number
 * of points tried so far, so a run resumed by replaying its observations proposes what
 * the uninterrupted run would have. It does not build or time anything, nor persist state.
 */
#define _GNU_SOURCE
#include "builtin.h"

#include "search.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_VALUES 256
#define MAX_SHAPES 64

typedef struct {
    uint64_t code;
    kf_point p;
    kf_builtin_outcome o;
    double geo;       /* geometric mean of ns over shapes (OK only) */
    double *ns, *rel; /* [nshapes] (OK only) */
    int resolved;     /* failure: its lesson was drawn */
} record;

struct kf_builtin {
    kf_candidate *cand;
    int np;
    int nvals[KF_MAX_PARAMS];
    int cat[KF_MAX_PARAMS];
    int *order[KF_MAX_PARAMS]; /* rank -> value index (numeric order) */
    int *rank[KF_MAX_PARAMS];  /* value index -> rank */
    uint64_t radix[KF_MAX_PARAMS], space;
    uint64_t seed;
    uint64_t *set; /* codes + 1 (0 = empty) */
    size_t setcap, ntried;
    record *rec;
    size_t nrec, reccap;
    int nshapes;
    int *succ[KF_MAX_PARAMS]; /* successful builds per value */
    char *banned[KF_MAX_PARAMS];
    int learnt[KF_MAX_PARAMS * MAX_VALUES][2], nlearnt;
    double *prior[KF_MAX_PARAMS]; /* per value, from lessons; NULL: none for this parameter */
    int has_prior;
};

static uint64_t splitmix(uint64_t *x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static uint64_t below(uint64_t *x, uint64_t n) { return n ? splitmix(x) % n : 0; }

static uint64_t encode(const kf_builtin *b, const kf_point *p) {
    uint64_t c = 0;
    for (int i = 0; i < b->np; i++) c += (uint64_t)p->v[i] * b->radix[i];
    return c;
}

static void decode(const kf_builtin *b, uint64_t c, kf_point *p) {
    memset(p, 0, sizeof *p);
    for (int i = 0; i < b->np; i++) p->v[i] = (int)(c / b->radix[i] % (uint64_t)b->nvals[i]);
}

static int set_has(const kf_builtin *b, uint64_t code) {
    for (size_t i = (code * 0x9e3779b97f4a7c15ULL) & (b->setcap - 1);; i = (i + 1) & (b->setcap - 1)) {
        if (!b->set[i]) return 0;
        if (b->set[i] == code + 1) return 1;
    }
}

static int set_add(kf_builtin *b, uint64_t code) {
    if (set_has(b, code)) return 0;
    if (2 * (b->ntried + 1) > b->setcap) {
        size_t ncap = b->setcap * 2;
        uint64_t *ns = calloc(ncap, sizeof *ns);
        if (!ns) return -1;
        for (size_t i = 0; i < b->setcap; i++) {
            if (!b->set[i]) continue;
            size_t j = ((b->set[i] - 1) * 0x9e3779b97f4a7c15ULL) & (ncap - 1);
            while (ns[j]) j = (j + 1) & (ncap - 1);
            ns[j] = b->set[i];
        }
        free(b->set);
        b->set = ns;
        b->setcap = ncap;
    }
    size_t i = (code * 0x9e3779b97f4a7c15ULL) & (b->setcap - 1);
    while (b->set[i]) i = (i + 1) & (b->setcap - 1);
    b->set[i] = code + 1;
    b->ntried++;
    return 0;
}

void kf_builtin_free(kf_builtin *b) {
    if (!b) return;
    for (int i = 0; i < KF_MAX_PARAMS; i++) {
        free(b->order[i]);
        free(b->rank[i]);
        free(b->succ[i]);
        free(b->banned[i]);
        free(b->prior[i]);
    }
    for (size_t i = 0; i < b->nrec; i++) {
        free(b->rec[i].ns);
        free(b->rec[i].rel);
    }
    free(b->rec);
    free(b->set);
    kf_candidate_free(b->cand);
    free(b);
}

static int by_value(const void *x, const void *y, void *arg) {
    const kf_param *p = arg;
    int a = *(const int *)x, c = *(const int *)y;
    char *e1, *e2;
    double va = strtod(p->values[a], &e1), vc = strtod(p->values[c], &e2);
    if (va != vc) return va < vc ? -1 : 1;
    return a - c;
}

kf_status kf_builtin_new(kf_ctx *ctx, const kf_task *t, const char *path, uint64_t seed, kf_builtin **out) {
    *out = NULL;
    kf_builtin *b = calloc(1, sizeof *b);
    if (!b) return kf__err(ctx, KF_ENOMEM, "out of memory");
    kf_status st = kf_candidate_load(ctx, t, path, NULL, 0, &b->cand);
    if (st) goto fail;
    b->np = b->cand->nparams;
    if (!b->np) {
        st = kf__err(ctx, KF_EUSAGE, "%s: no kforge:param (the builtin proposer needs a template)", path);
        goto fail;
    }
    b->seed = seed;
    b->space = 1;
    for (int i = 0; i < b->np; i++) {
        const kf_param *p = &b->cand->params[i];
        b->nvals[i] = p->nvalues;
        if (p->nvalues > MAX_VALUES) {
            st = kf__err(ctx, KF_EUSAGE, "%s:%d: kforge:param %s has more than %d values", path, p->line,
                         p->name, MAX_VALUES);
            goto fail;
        }
        b->radix[i] = b->space;
        b->space *= (uint64_t)p->nvalues;
        if (b->space > (1ULL << 32)) {
            st = kf__err(ctx, KF_EUSAGE, "%s: the parameter space has more than 2^32 points", path);
            goto fail;
        }
        b->cat[i] =
            p->category ? kf_search_category_parse(p->category) : kf_search_category_of_param(p->name);
        if (b->cat[i] < 0) {
            st = kf__err(ctx, KF_EUSAGE, "%s:%d: kforge:param %s: unknown category '%s'", path, p->line,
                         p->name, p->category);
            goto fail;
        }
        b->order[i] = malloc((size_t)p->nvalues * sizeof(int));
        b->rank[i] = malloc((size_t)p->nvalues * sizeof(int));
        b->succ[i] = calloc((size_t)p->nvalues, sizeof(int));
        b->banned[i] = calloc((size_t)p->nvalues, 1);
        if (!b->order[i] || !b->rank[i] || !b->succ[i] || !b->banned[i]) {
            st = kf__err(ctx, KF_ENOMEM, "out of memory");
            goto fail;
        }
        int numeric = 1;
        for (int j = 0; j < p->nvalues; j++) {
            char *e;
            (void)strtod(p->values[j], &e);
            numeric &= *e == 0;
            b->order[i][j] = j;
        }
        if (numeric) qsort_r(b->order[i], (size_t)p->nvalues, sizeof(int), by_value, (void *)p);
        for (int r = 0; r < p->nvalues; r++) b->rank[i][b->order[i][r]] = r;
    }
    b->setcap = 64;
    if (!(b->set = calloc(b->setcap, sizeof *b->set))) {
        st = kf__err(ctx, KF_ENOMEM, "out of memory");
        goto fail;
    }
    *out = b;
    return KF_OK;
fail:
    kf_builtin_free(b);
    return st;
}

int kf_builtin_nparams(const kf_builtin *b) { return b->np; }
const char *kf_builtin_param_name(const kf_builtin *b, int i) {
    return i >= 0 && i < b->np ? b->cand->params[i].name : NULL;
}
int kf_builtin_param_nvalues(const kf_builtin *b, int i) { return i >= 0 && i < b->np ? b->nvals[i] : 0; }
const char *kf_builtin_param_value(const kf_builtin *b, int i, int j) {
    return i >= 0 && i < b->np && j >= 0 && j < b->nvals[i] ? b->cand->params[i].values[j] : NULL;
}
int kf_builtin_param_category(const kf_builtin *b, int i) { return i >= 0 && i < b->np ? b->cat[i] : -1; }
unsigned kf_builtin_categories(const kf_builtin *b) {
    unsigned m = 0;
    for (int i = 0; i < b->np; i++) m |= 1u << b->cat[i];
    return m;
}
uint64_t kf_builtin_space(const kf_builtin *b) { return b->space; }

int kf_builtin_allowed(const kf_builtin *b, const kf_point *p) {
    const char *names[KF_MAX_PARAMS];
    int64_t vals[KF_MAX_PARAMS];
    int n = 0;
    for (int i = 0; i < b->np; i++) {
        if (p->v[i] < 0 || p->v[i] >= b->nvals[i] || b->banned[i][p->v[i]]) return 0;
        const char *s = b->cand->params[i].values[p->v[i]];
        char *e;
        long long x = strtoll(s, &e, 0);
        if (*e) continue; /* not an integer: not a name in kforge:require */
        names[n] = b->cand->params[i].name;
        vals[n++] = x;
    }
    kf_vars vars = {names, vals, n};
    for (int i = 0; i < b->cand->nrequire; i++) {
        int64_t v;
        char err[128];
        /* an expression that cannot be evaluated at p (a division by zero, a name with a
         * non-integer value) is a violation, as the checker would refuse the selection */
        if (kf_expr_eval(b->cand->require[i], &vars, &v, err, sizeof err) || !v) return 0;
    }
    return 1;
}

int kf_builtin_tried(const kf_builtin *b, const kf_point *p) { return set_has(b, encode(b, p)); }

int kf_builtin_prior(kf_builtin *b, int i, int j, double weight) {
    if (i < 0 || i >= b->np || j < 0 || j >= b->nvals[i] || !isfinite(weight)) return -1;
    if (!b->prior[i] && !(b->prior[i] = calloc((size_t)b->nvals[i], sizeof(double)))) return -1;
    b->prior[i][j] += weight;
    b->has_prior = 1;
    return 0;
}

/* 1 when p has a value that the prior disfavours (negative weight). */
static int disfavoured(const kf_builtin *b, const kf_point *p) {
    for (int i = 0; b->has_prior && i < b->np; i++)
        if (b->prior[i] && b->prior[i][p->v[i]] < 0) return 1;
    return 0;
}

/* The prior's point: per parameter the value of the greatest positive weight (ties: the
 * earlier declared), else the template's default, unless the prior disfavours it: then
 * the first declared value it does not. */
int kf_builtin_prior_start(const kf_builtin *b, kf_point *out) {
    memset(out, 0, sizeof *out);
    int moved = 0;
    for (int i = 0; i < b->np; i++) {
        if (!b->prior[i]) continue;
        int best = -1;
        for (int j = 0; j < b->nvals[i]; j++)
            if (b->prior[i][j] > 0 && (best < 0 || b->prior[i][j] > b->prior[i][best])) best = j;
        if (best < 0 && b->prior[i][0] < 0) /* a disfavoured default: the first value not disfavoured */
            for (int j = 1; j < b->nvals[i] && best < 0; j++)
                if (b->prior[i][j] >= 0) best = j;
        if (best >= 0) {
            out->v[i] = best;
            moved |= best != 0;
        }
    }
    return moved;
}

/* The favoured points not tried yet, best first: the prior's point, then the prior's
 * point with one parameter moved to another favoured value (by weight). 0 and *out, or
 * -1 when none is left. */
static int favoured_untried(const kf_builtin *b, kf_point *out) {
    kf_point s;
    kf_builtin_prior_start(b, &s);
    if (kf_builtin_allowed(b, &s) && !kf_builtin_tried(b, &s) && !disfavoured(b, &s)) {
        *out = s;
        return 0;
    }
    double bw = 0;
    int found = -1;
    for (int i = 0; i < b->np; i++)
        for (int j = 0; b->prior[i] && j < b->nvals[i]; j++) {
            if (b->prior[i][j] <= 0 || j == s.v[i] || (found == 0 && b->prior[i][j] <= bw)) continue;
            kf_point q = s;
            q.v[i] = j;
            if (kf_builtin_allowed(b, &q) && !kf_builtin_tried(b, &q) && !disfavoured(b, &q)) {
                *out = q;
                bw = b->prior[i][j];
                found = 0;
            }
        }
    return found;
}

/* The allowed point adjacent to p along parameter i in direction d (+1/-1), stepping over
 * values that fail a constraint: 0 and *q when it exists and is untried, -1 when it was
 * tried, -2 when p is at the end of i's values, -3 when every further value fails. */
static int neighbour(const kf_builtin *b, const kf_point *p, int i, int d, kf_point *q) {
    *q = *p;
    int r0 = b->rank[i][p->v[i]] + d;
    if (r0 < 0 || r0 >= b->nvals[i]) return -2;
    for (int r = r0; r >= 0 && r < b->nvals[i]; r += d) {
        q->v[i] = b->order[i][r];
        if (kf_builtin_allowed(b, q)) return kf_builtin_tried(b, q) ? -1 : 0;
    }
    return -3;
}

/* The first step into an unexplored range: when no observed point has a value of parameter
 * i beyond p's in direction d and k >= 3 values lie there, the step goes to the middle of
 * them (rank + d * ceil(k / 2)), or the nearest allowed untried value on p's side of it
 * short of the adjacent one: 0 and *q, else -1 (the ordinary one-value step applies).
 * A binary-search probe: a monotone parameter (unrolling 1, 2, 4, 8 from 1) is crossed in
 * two steps instead of three, and the range whose probe did not help is then walked from
 * p one value at a time. Ranges of one or two values are stepped as before. */
static int probe_step(const kf_builtin *b, const kf_point *p, int i, int d, kf_point *q) {
    int rp = b->rank[i][p->v[i]], k = d > 0 ? b->nvals[i] - 1 - rp : rp;
    if (k < 3) return -1;
    for (size_t r = 0; r < b->nrec; r++) {
        int rr = b->rank[i][b->rec[r].p.v[i]];
        if (d > 0 ? rr > rp : rr < rp) return -1;
    }
    for (int r = rp + d * ((k + 1) / 2); r != rp + d; r -= d) {
        *q = *p;
        q->v[i] = b->order[i][r];
        if (kf_builtin_allowed(b, q) && !kf_builtin_tried(b, q)) return 0;
    }
    return -1;
}

typedef struct {
    uint64_t code;
    double lg; /* log of the geometric mean */
} measured;

static int by_code(const void *x, const void *y) {
    uint64_t a = ((const measured *)x)->code, c = ((const measured *)y)->code;
    return a < c ? -1 : a > c;
}

/* The mean log time ratio of moving parameter i from p's value to value index t, over
 * the measured pairs that differ only there (m: the measured points sorted by code),
 * each pair weighted by a quarter per other parameter in which it differs from p, so
 * that what was measured near p counts most; 0 when no such pair was measured. */
static double move_effect(const kf_builtin *b, const measured *m, size_t nm, const kf_point *p, int i,
                          int t) {
    double sum = 0, wsum = 0;
    int f = p->v[i];
    for (size_t k = 0; k < nm; k++) {
        if ((int)(m[k].code / b->radix[i] % (uint64_t)b->nvals[i]) != f) continue;
        measured key = {m[k].code - (uint64_t)f * b->radix[i] + (uint64_t)t * b->radix[i], 0};
        const measured *o = bsearch(&key, m, nm, sizeof *m, by_code);
        if (!o) continue;
        double w = 1;
        for (int j = 0; j < b->np; j++)
            if ((int)(m[k].code / b->radix[j] % (uint64_t)b->nvals[j]) != p->v[j]) w *= 0.25;
        sum += w * (o->lg - m[k].lg);
        wsum += w;
    }
    return wsum > 0 ? sum / wsum : 0;
}

/* An untried neighbour of p along a parameter of category cat (-1: any): of those whose
 * moves were measured elsewhere in the space to help most (or hurt least: an unmeasured
 * move counts as neither), one drawn at random. This assumes that a parameter's effect
 * varies little with the others (a separable model); where it does, the pairs measured
 * near p weigh most, and the restarts and the other centres keep the walk from trusting
 * the estimate for good.
 *
 * A step whose every further value fails a kforge:require (V up from 8 at UP = 8, under
 * UP * V <= 64) is taken with one other parameter stepped too, either way, where that is
 * allowed: such a constraint is usually a resource budget, the best trade-off often lies
 * on its edge, and one-parameter steps cannot follow an edge. Each blocked step offers one
 * of its repairs, drawn at random, as one candidate among the ordinary steps.
 *
 * A first step into an unexplored range of three or more values is probe_step's. */
static int random_neighbour(const kf_builtin *b, uint64_t *rng, const kf_point *p, int cat, kf_point *out,
                            int *move_cat) {
    kf_point cands[2 * KF_MAX_PARAMS];
    int cc[2 * KF_MAX_PARAMS], n = 0;
    for (int i = 0; i < b->np; i++) {
        if (cat >= 0 && b->cat[i] != cat) continue;
        for (int d = -1; d <= 1; d += 2) {
            if (!probe_step(b, p, i, d, &cands[n])) {
                cc[n++] = b->cat[i];
                continue;
            }
            int r = neighbour(b, p, i, d, &cands[n]);
            if (!r) {
                cc[n++] = b->cat[i];
                continue;
            }
            if (r != -3) continue;
            kf_point q = *p;
            q.v[i] = b->order[i][b->rank[i][p->v[i]] + d];
            int seen = 0;
            for (int j = 0; j < b->np; j++)
                for (int e = -1; e <= 1 && j != i; e += 2) {
                    int rj = b->rank[j][p->v[j]] + e;
                    if (rj < 0 || rj >= b->nvals[j]) continue;
                    kf_point x = q;
                    x.v[j] = b->order[j][rj];
                    if (!kf_builtin_allowed(b, &x) || kf_builtin_tried(b, &x)) continue;
                    if (below(rng, (uint64_t)++seen) == 0) cands[n] = x; /* reservoir of one */
                }
            if (seen) cc[n++] = b->cat[i];
        }
    }
    if (!n) return -1;
    if (b->has_prior) { /* what the lessons disfavour comes last */
        int kept = 0;
        for (int k = 0; k < n; k++)
            if (!disfavoured(b, &cands[k])) {
                cands[kept] = cands[k];
                cc[kept++] = cc[k];
            }
        if (kept) n = kept;
    }
    double est[2 * KF_MAX_PARAMS], lo = INFINITY;
    size_t nm = 0;
    measured *m = malloc((b->nrec + 1) * sizeof *m); /* without it, every move counts as unmeasured */
    if (m) {
        for (size_t r = 0; r < b->nrec; r++)
            if (b->rec[r].o == KF_BUILTIN_OK) m[nm++] = (measured){b->rec[r].code, log(b->rec[r].geo)};
        qsort(m, nm, sizeof *m, by_code);
    }
    for (int c = 0; c < n; c++) {
        est[c] = 0;
        for (int i = 0; m && i < b->np; i++)
            if (cands[c].v[i] != p->v[i]) est[c] += move_effect(b, m, nm, p, i, cands[c].v[i]);
        if (est[c] < lo) lo = est[c];
    }
    free(m);
    int best[2 * KF_MAX_PARAMS], nb = 0;
    for (int c = 0; c < n; c++)
        if (est[c] <= lo) best[nb++] = c;
    int k = best[below(rng, (uint64_t)nb)];
    *out = cands[k];
    if (move_cat) *move_cat = cc[k];
    return 0;
}

static int restart(const kf_builtin *b, uint64_t *rng, kf_point *out) {
    if (b->has_prior && !favoured_untried(b, out)) return 0;
    for (int t = 0; t < 64; t++) {
        decode(b, below(rng, b->space), out);
        if (kf_builtin_allowed(b, out) && !kf_builtin_tried(b, out) && !disfavoured(b, out)) return 0;
    }
    uint64_t start = below(rng, b->space);
    /* the prior's disfavoured points in a second pass (without a prior: one pass) */
    for (int pass = b->has_prior ? 0 : 1; pass < 2; pass++)
        for (uint64_t k = 0; k < b->space; k++) {
            decode(b, (start + k) % b->space, out);
            if (kf_builtin_allowed(b, out) && !kf_builtin_tried(b, out) && (pass || !disfavoured(b, out)))
                return 0;
        }
    return -1;
}

static int by_geo(const void *x, const void *y, void *arg) {
    const kf_builtin *b = arg;
    double a = b->rec[*(const size_t *)x].geo, c = b->rec[*(const size_t *)y].geo;
    if (a != c) return a < c ? -1 : 1;
    return *(const size_t *)x < *(const size_t *)y ? -1 : 1;
}

/* The walk's first point: the declared defaults (value 0 of each), or the prior's start. */
static void start_point(const kf_builtin *b, kf_point *p) {
    memset(p, 0, sizeof *p);
    kf_point ps;
    if (b->has_prior && kf_builtin_prior_start(b, &ps) && kf_builtin_allowed(b, &ps)) *p = ps; /* lessons */
}

int kf_builtin_start_untried(const kf_builtin *b) {
    kf_point p;
    start_point(b, &p);
    return kf_builtin_allowed(b, &p) && !kf_builtin_tried(b, &p);
}

int kf_builtin_next(kf_builtin *b, const kf_point *from, int category, kf_point *out, kf_move *move,
                    int *move_cat) {
    uint64_t rng = b->seed ^ (0xd1b54a32d192ed03ULL * (b->ntried + 1));
    kf_point p;
    kf_move mv = KF_MOVE_NEIGHBOUR;
    int mc = KF_CAT_OTHER, found = -1;
    if (from) {
        found = random_neighbour(b, &rng, from, category, &p, &mc);
    } else {
        start_point(b, &p);
        /* the defaults first, whenever they were never tried: also after a resume of a run
         * whose earlier nodes were other proposers' */
        if (kf_builtin_allowed(b, &p) && !kf_builtin_tried(b, &p)) {
            mv = KF_MOVE_DEFAULT;
            found = 0;
        } else if (below(&rng, 10) != 0) {
            /* centres: the overall best, each shape's best, then the rest by time */
            size_t *idx = malloc((b->nrec + MAX_SHAPES + 1) * sizeof *idx), n = 0;
            if (!idx) return -1;
            for (size_t i = 0; i < b->nrec; i++)
                if (b->rec[i].o == KF_BUILTIN_OK) idx[n++] = i;
            qsort_r(idx, n, sizeof *idx, by_geo, b);
            size_t m = n;
            for (int s = 0; s < b->nshapes && n; s++) {
                size_t w = idx[0];
                for (size_t i = 0; i < n; i++)
                    if (b->rec[idx[i]].ns[s] < b->rec[w].ns[s]) w = idx[i];
                idx[m++] = w;
            }
            /* order: idx[0], the shape winners idx[n..m), then idx[1..n) */
            for (size_t k = 0; k < m && found; k++) {
                size_t j = k == 0 ? 0 : k <= m - n ? n + k - 1 : k - (m - n);
                found = random_neighbour(b, &rng, &b->rec[idx[j]].p, category, &p, &mc);
            }
            free(idx);
        }
        if (found) {
            mv = KF_MOVE_RESTART;
            found = restart(b, &rng, &p);
        }
    }
    if (found) return -1;
    if (set_add(b, encode(b, &p))) return -1;
    *out = p;
    if (move) *move = mv;
    if (move_cat) *move_cat = mv == KF_MOVE_NEIGHBOUR ? mc : KF_CAT_OTHER;
    return 0;
}

int kf_builtin_restart(kf_builtin *b, kf_point *out) {
    uint64_t rng = b->seed ^ (0xd1b54a32d192ed03ULL * (b->ntried + 1));
    kf_point p;
    if (restart(b, &rng, &p) || set_add(b, encode(b, &p))) return -1;
    *out = p;
    return 0;
}

/* Draw what can be drawn from the unresolved failures (see the design note). */
static void learn(kf_builtin *b) {
    for (size_t r = 0; r < b->nrec; r++) {
        record *f = &b->rec[r];
        if (f->resolved || (f->o != KF_BUILTIN_COMPILE_FAILED && f->o != KF_BUILTIN_CRASHED)) continue;
        int suspects = 0, who = -1;
        for (int i = 0; i < b->np; i++) {
            if (b->banned[i][f->p.v[i]]) {
                suspects = -1;
                break;
            }
            if (!b->succ[i][f->p.v[i]]) {
                suspects++;
                who = i;
            }
        }
        if (suspects == -1 || suspects == 0) f->resolved = 1;
        if (suspects == 1) {
            f->resolved = 1;
            b->banned[who][f->p.v[who]] = 1;
            b->learnt[b->nlearnt][0] = who;
            b->learnt[b->nlearnt][1] = f->p.v[who];
            b->nlearnt++;
        }
    }
}

int kf_builtin_observe(kf_builtin *b, const kf_point *p, kf_builtin_outcome o, const kf_shape_time *times,
                       int nshapes) {
    for (int i = 0; i < b->np; i++)
        if (p->v[i] < 0 || p->v[i] >= b->nvals[i]) return -1;
    if (o == KF_BUILTIN_OK) {
        if (nshapes <= 0 || nshapes > MAX_SHAPES || !times || (b->nshapes && nshapes != b->nshapes))
            return -1;
        for (int s = 0; s < nshapes; s++)
            if (!(times[s].ns > 0) || !isfinite(times[s].ns)) return -1;
    }
    if (b->nrec == b->reccap) {
        size_t nc = b->reccap ? 2 * b->reccap : 16;
        record *nr = realloc(b->rec, nc * sizeof *nr);
        if (!nr) return -1;
        b->rec = nr;
        b->reccap = nc;
    }
    record *r = &b->rec[b->nrec];
    memset(r, 0, sizeof *r);
    r->p = *p;
    for (int i = b->np; i < KF_MAX_PARAMS; i++) r->p.v[i] = 0;
    r->code = encode(b, p);
    r->o = o;
    if (o == KF_BUILTIN_OK) {
        r->ns = malloc((size_t)nshapes * sizeof *r->ns);
        r->rel = malloc((size_t)nshapes * sizeof *r->rel);
        if (!r->ns || !r->rel) {
            free(r->ns);
            free(r->rel);
            return -1;
        }
        double lg = 0;
        for (int s = 0; s < nshapes; s++) {
            r->ns[s] = times[s].ns;
            r->rel[s] = times[s].rel_noise > 0 ? times[s].rel_noise : 0;
            lg += log(times[s].ns);
        }
        r->geo = exp(lg / nshapes);
        b->nshapes = nshapes;
    }
    if (set_add(b, r->code)) {
        free(r->ns);
        free(r->rel);
        return -1;
    }
    b->nrec++;
    if (o == KF_BUILTIN_OK || o == KF_BUILTIN_REJECTED) /* it built */
        for (int i = 0; i < b->np; i++) b->succ[i][p->v[i]]++;
    learn(b);
    return 0;
}

static const record *best_rec(const kf_builtin *b) {
    const record *w = NULL;
    for (size_t i = 0; i < b->nrec; i++)
        if (b->rec[i].o == KF_BUILTIN_OK && (!w || b->rec[i].geo < w->geo)) w = &b->rec[i];
    return w;
}

int kf_builtin_best(const kf_builtin *b, kf_point *out, double *geomean_ns) {
    const record *w = best_rec(b);
    if (!w) return -1;
    if (out) *out = w->p;
    if (geomean_ns) *geomean_ns = w->geo;
    return 0;
}

int kf_builtin_best_per_shape(const kf_builtin *b, double min_noise, kf_point *per_shape, double *gain,
                              int nshapes) {
    return kf_builtin_shape_winners(b, min_noise, per_shape, gain, NULL, nshapes);
}

int kf_builtin_shape_winners(const kf_builtin *b, double min_noise, kf_point *per_shape, double *gain,
                             int *beats, int nshapes) {
    const record *c = best_rec(b);
    if (!c || nshapes != b->nshapes) return -1;
    int differ = 0;
    for (int s = 0; s < nshapes; s++) {
        const record *w = c;
        for (size_t i = 0; i < b->nrec; i++)
            if (b->rec[i].o == KF_BUILTIN_OK && b->rec[i].ns[s] < w->ns[s]) w = &b->rec[i];
        double noise = c->rel[s] + w->rel[s];
        if (noise < min_noise) noise = min_noise;
        per_shape[s] = w->p;
        if (gain) gain[s] = c->ns[s] / w->ns[s];
        int d = w != c && c->ns[s] > w->ns[s] * (1 + noise);
        if (beats) beats[s] = d;
        differ += d;
    }
    return differ;
}

int kf_builtin_nlearnt(const kf_builtin *b) { return b->nlearnt; }

const char *kf_builtin_learnt(const kf_builtin *b, int i, char *buf, size_t n) {
    if (i < 0 || i >= b->nlearnt) return NULL;
    const kf_param *p = &b->cand->params[b->learnt[i][0]];
    snprintf(buf, n, "%s != %s", p->name, p->values[b->learnt[i][1]]);
    return buf;
}

int kf_builtin_sel(const kf_builtin *b, const kf_point *p, const char **sel, char *buf, size_t n) {
    size_t off = 0;
    int k = 0;
    for (int i = 0; i < b->np; i++) {
        const kf_param *q = &b->cand->params[i];
        int w = snprintf(buf + off, off < n ? n - off : 0, "%s=%s", q->name, q->values[p->v[i]]);
        if (w < 0 || off + (size_t)w + 1 > n) break;
        sel[k++] = buf + off;
        off += (size_t)w + 1;
    }
    return k;
}

char *kf_builtin_json(const kf_builtin *b, const kf_point *p, char *buf, size_t n) {
    size_t off = 0;
    if (!n) return buf;
    buf[0] = 0;
    for (int i = 0; i < b->np && off < n; i++) {
        const kf_param *q = &b->cand->params[i];
        const char *v = q->values[p->v[i]];
        char *e;
        (void)strtoll(v, &e, 10);
        /* values hold no quotes or backslashes (candidate.c refuses them) */
        off += (size_t)snprintf(buf + off, n - off, *e ? "%s\"%s\": \"%s\"" : "%s\"%s\": %s", i ? ", " : "{",
                                q->name, v);
    }
    if (off < n) snprintf(buf + off, n - off, "}");
    return buf;
}
