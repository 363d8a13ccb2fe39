/*
 * replay.c - search efficiency by replay: how many evaluations a strategy needs to reach
 * within 5% of the best point of a recorded parameter space.
 *
 * Usage: kf-replay TABLE.json [--seeds N (1..4096)] [--within F]
 *
 * TABLE.json (bench/record_space.py, bench/synth_space.py) holds every point of a
 * template's space: per visible shape times, or a failure. Strategies, each over seeds
 * 1..N (10), each evaluation looked up in the table instead of run:
 *   builtin   the builtin proposer's own walk (kf_builtin_next with no parent)
 *   search    Arbor's selection (kf_search_pick) choosing parent and category, the builtin
 *             proposing a neighbour there (a restart for the root, the template's defaults,
 *             or when every action is exhausted); a node is kept when it beats its parent
 *             by 2% (a stand-in for the Critic)
 *   random    uniform sampling without replacement among the points kforge:require allows
 *             (and its exact median and mean, which 10 seeds only estimate)
 * The objective is the geometric mean of the shapes' times; a failed point costs one
 * evaluation. Prints per strategy the median (min, max) evaluations to reach the target.
 * KF_REPLAY_TRACE=SEED prints the builtin's and search's evaluations at that seed.
 */
#define _GNU_SOURCE
#include "kforge.h"
#include "search/builtin.h"
#include "search/search.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int state; /* 0 unknown, 1 ok, 2 require, 3 failed (compile/crash), 4 rejected */
    double geo;
    double ns[16], rel[16];
} entry;

static kf_builtin *proto;
static entry *tab;
static uint64_t space;
static int nshapes;
static double best_geo;

static uint64_t code_of(const kf_point *p) {
    uint64_t c = 0, r = 1;
    for (int i = 0; i < kf_builtin_nparams(proto); i++) {
        c += (uint64_t)p->v[i] * r;
        r *= (uint64_t)kf_builtin_param_nvalues(proto, i);
    }
    return c;
}

static void point_of(uint64_t c, kf_point *p) {
    memset(p, 0, sizeof *p);
    for (int i = 0; i < kf_builtin_nparams(proto); i++) {
        uint64_t n = (uint64_t)kf_builtin_param_nvalues(proto, i);
        p->v[i] = (int)(c % n);
        c /= n;
    }
}

/* Evaluate p against the table into b (and return the entry). */
static const entry *eval(kf_builtin *b, const kf_point *p) {
    const entry *e = &tab[code_of(p)];
    kf_shape_time t[16];
    for (int s = 0; s < nshapes; s++) t[s] = (kf_shape_time){e->ns[s], e->rel[s]};
    kf_builtin_outcome o = e->state == 1   ? KF_BUILTIN_OK
                           : e->state == 4 ? KF_BUILTIN_REJECTED
                                           : KF_BUILTIN_COMPILE_FAILED;
    if (b && kf_builtin_observe(b, p, o, t, nshapes)) {
        fprintf(stderr, "observe failed\n");
        exit(2);
    }
    return e;
}

static int reached(const entry *e, double within) {
    return e->state == 1 && e->geo <= best_geo * (1 + within);
}

static int run_builtin(kf_ctx *ctx, const kf_task *t, const char *tmpl, uint64_t seed, double within) {
    kf_builtin *b;
    if (kf_builtin_new(ctx, t, tmpl, seed, &b)) return -1;
    kf_point p;
    int n = 0, hit = -1;
    kf_move mv;
    while (hit < 0 && kf_builtin_next(b, NULL, -1, &p, &mv, NULL) == 0) {
        n++;
        const entry *e = eval(b, &p);
        if (getenv("KF_REPLAY_TRACE") && seed == (uint64_t)atoll(getenv("KF_REPLAY_TRACE"))) {
            char buf[256];
            fprintf(stderr, "builtin %d %s %s %.4g\n", n,
                    mv == KF_MOVE_RESTART   ? "restart"
                    : mv == KF_MOVE_DEFAULT ? "default"
                                            : "neighbour",
                    kf_builtin_json(b, &p, buf, sizeof buf), e->state == 1 ? e->geo / best_geo : 0);
        }
        if (reached(e, within)) hit = n;
    }
    kf_builtin_free(b);
    return hit;
}

static int run_random(uint64_t seed, double within) {
    uint64_t *order = malloc(space * sizeof *order), x = seed * 0x9e3779b97f4a7c15ULL + 1, m = 0;
    for (uint64_t c = 0; c < space; c++)
        if (tab[c].state != 2) order[m++] = c;
    int hit = -1;
    for (uint64_t i = 0; i < m && hit < 0; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        uint64_t j = i + x % (m - i), tmp = order[i];
        order[i] = order[j];
        order[j] = tmp;
        if (reached(&tab[order[i]], within)) hit = (int)i + 1;
    }
    free(order);
    return hit;
}

/* Arbor's selection over the tree, the builtin proposing at the picked parent. The root is
 * the template's defaults (evaluated first, speedup 1 by definition). */
/* Arbor's selection driving the builtin, as kforge run does (loop.c): the root is the
 * reference (speedup 1); the first node is the template's default, a child of the root,
 * at the table's default_speedup over the reference; an action on the root is a restart;
 * the search's target is the loop's when no --target is given (1e6: the gap never
 * closes). Speedups are the reference's geomean time over a point's. */
static double default_speedup = 1;

static int run_search(kf_ctx *ctx, const kf_task *t, const char *tmpl, uint64_t seed, double within) {
    kf_builtin *b;
    if (kf_builtin_new(ctx, t, tmpl, seed, &b)) return -1;
    kf_search_cfg cfg;
    kf_search_defaults(&cfg);
    cfg.target = 1e6;
    kf_search *s = kf_search_new(&cfg);
    kf_search_offer(s, 0, kf_builtin_categories(b));
    size_t cap = 1024, n = 1;
    kf_point *pts = calloc(cap, sizeof *pts);
    double *sp = calloc(cap, sizeof *sp);
    double ref = 0; /* the reference's geomean time */
    sp[0] = 1;
    int evals = 0, hit = -1;
    kf_action a;
    kf_point p;
    for (;;) {
        int mcat = -1;
        if (evals == 0) { /* the loop's first node: the defaults, from the root */
            a = (kf_action){.parent = 0, .category = KF_CAT_OTHER};
            if (kf_builtin_next(b, NULL, -1, &p, NULL, &mcat)) break;
        } else if (kf_search_pick(s, &a)) {
            break; /* every action under the floor: the loop stops too */
        } else if (a.parent == 0) {
            if (kf_builtin_restart(b, &p)) {
                kf_search_exhaust(s, 0, a.category, 0);
                continue;
            }
        } else if (kf_builtin_next(b, &pts[a.parent], a.category, &p, NULL, &mcat)) {
            kf_search_exhaust(s, a.parent, a.category, 0);
            continue;
        }
        const entry *e = eval(b, &p);
        evals++;
        if (evals == 1) {
            if (e->state != 1) { /* a failing default: nothing to compare with */
                hit = -2;
                break;
            }
            ref = e->geo * default_speedup;
        }
        if (n == cap) {
            cap *= 2;
            pts = realloc(pts, cap * sizeof *pts);
            sp = realloc(sp, cap * sizeof *sp);
        }
        pts[n] = p;
        sp[n] = e->state == 1 ? ref / e->geo : 0;
        int cat = mcat >= 0 ? mcat : a.category; /* the move's own category, as the loop records it */
        if (getenv("KF_REPLAY_TRACE") && seed == (uint64_t)atoll(getenv("KF_REPLAY_TRACE"))) {
            char buf[512];
            fprintf(stderr, "%d sp(parent)=%.3f -> %.3f %s\n", evals, sp[a.parent], sp[n],
                    kf_search_explain(&a, buf, sizeof buf));
        }
        kf_search_obs o = {(int64_t)n,
                           a.parent,
                           cat,
                           0,
                           e->state == 1   ? (sp[n] > sp[a.parent] * 1.02 ? KF_SOBS_KEPT : KF_SOBS_MEASURED)
                           : e->state == 4 ? KF_SOBS_REJECTED
                                           : KF_SOBS_COMPILE_FAILED,
                           sp[n],
                           1};
        if (kf_search_observe(s, &o)) {
            fprintf(stderr, "search observe failed\n");
            exit(2);
        }
        n++;
        if (reached(e, within)) {
            hit = evals;
            break;
        }
    }
    kf_builtin_free(b);
    kf_search_free(s);
    free(pts);
    free(sp);
    return hit;
}

static int cmp_int(const void *x, const void *y) { return *(const int *)x - *(const int *)y; }

static void report(const char *name, int *v, int n, uint64_t allowed) {
    int ok = 0, *sorted = malloc((size_t)n * sizeof *sorted);
    for (int i = 0; i < n; i++)
        if (v[i] > 0) sorted[ok++] = v[i];
    qsort(sorted, (size_t)ok, sizeof(int), cmp_int);
    printf("  %-8s median %5.1f  min %4d  max %4d  (%d/%d seeds reached; %.1f%% of %llu allowed points)  [",
           name, ok ? (ok % 2 ? sorted[ok / 2] : (sorted[ok / 2 - 1] + sorted[ok / 2]) / 2.0) : -1,
           ok ? sorted[0] : -1, ok ? sorted[ok - 1] : -1, ok, n,
           ok ? 100.0 * (ok % 2 ? sorted[ok / 2] : (sorted[ok / 2 - 1] + sorted[ok / 2]) / 2.0) /
                    (double)allowed
              : 0,
           (unsigned long long)allowed);
    for (int i = 0; i < n; i++) printf("%s%d", i ? " " : "", v[i]);
    printf("]\n");
    free(sorted);
}

int main(int argc, char **argv) {
    const char *path = NULL;
    int seeds = 10;
    double within = 0.05;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--seeds") && i + 1 < argc) seeds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--within") && i + 1 < argc) within = atof(argv[++i]);
        else path = argv[i];
    }
    if (!path || seeds < 1 || seeds > 4096) {
        fprintf(stderr, "usage: kf-replay TABLE.json [--seeds N<=4096] [--within F]\n");
        return 2;
    }
    json_error_t jerr;
    json_t *root = json_load_file(path, 0, &jerr);
    if (!root) {
        fprintf(stderr, "%s: %s\n", path, jerr.text);
        return 2;
    }
    json_t *meta = json_object_get(root, "meta");
    const char *task_dir = json_string_value(json_object_get(meta, "task"));
    const char *tmpl = json_string_value(json_object_get(meta, "template"));
    json_t *dsp = json_object_get(meta, "default_speedup");
    default_speedup = json_is_number(dsp) && json_number_value(dsp) > 0 ? json_number_value(dsp) : 2;
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = NULL;
    if (!task_dir || !tmpl || kf_task_load(ctx, task_dir, &t) || kf_builtin_new(ctx, t, tmpl, 1, &proto)) {
        fprintf(stderr, "%s: %s\n", path, kf_errmsg(ctx));
        return 2;
    }
    space = kf_builtin_space(proto);
    tab = calloc(space, sizeof *tab);
    size_t i;
    json_t *row;
    json_array_foreach(json_object_get(root, "points"), i, row) {
        json_t *pt = json_object_get(row, "point");
        kf_point p = {{0}};
        for (int k = 0; k < kf_builtin_nparams(proto); k++) {
            const char *v = json_string_value(json_object_get(pt, kf_builtin_param_name(proto, k)));
            int j = 0;
            while (v && j < kf_builtin_param_nvalues(proto, k) &&
                   strcmp(kf_builtin_param_value(proto, k, j), v))
                j++;
            if (!v || j == kf_builtin_param_nvalues(proto, k)) {
                fprintf(stderr, "%s: row %zu: no value of %s\n", path, i, kf_builtin_param_name(proto, k));
                return 2;
            }
            p.v[k] = j;
        }
        entry *e = &tab[code_of(&p)];
        const char *fail = json_string_value(json_object_get(row, "failure"));
        if (fail) {
            e->state = !strcmp(fail, "require")                           ? 2
                       : strstr(fail, "compile") || strstr(fail, "crash") ? 3
                                                                          : 4;
            continue;
        }
        json_t *shapes = json_object_get(row, "shapes"), *sh;
        size_t s;
        double lg = 0;
        nshapes = (int)json_array_size(shapes);
        if (nshapes < 1 || nshapes > 16) return 2;
        json_array_foreach(shapes, s, sh) {
            e->ns[s] = json_number_value(json_object_get(sh, "ns"));
            e->rel[s] = json_number_value(json_object_get(sh, "rel_noise"));
            lg += log(e->ns[s]);
        }
        e->geo = exp(lg / nshapes);
        e->state = 1;
    }
    uint64_t allowed = 0, missing = 0, within_n = 0;
    best_geo = INFINITY;
    for (uint64_t c = 0; c < space; c++) {
        kf_point p;
        point_of(c, &p);
        if (!tab[c].state) missing++;
        if (!kf_builtin_allowed(proto, &p)) tab[c].state = 2; /* what the checker would refuse */
        allowed += tab[c].state != 2;
        if (tab[c].state == 1 && tab[c].geo < best_geo) best_geo = tab[c].geo;
    }
    for (uint64_t c = 0; c < space; c++)
        within_n += tab[c].state == 1 && tab[c].geo <= best_geo * (1 + within);
    if (missing) {
        fprintf(stderr, "%s: %llu points missing from the table\n", path, (unsigned long long)missing);
        return 2;
    }
    printf("%s: %llu points, %llu allowed by kforge:require, %llu within %.0f%% of the best (%.6g ns "
           "geomean), %d seeds\n",
           path, (unsigned long long)space, (unsigned long long)allowed, (unsigned long long)within_n,
           within * 100, best_geo, seeds);
    int *vb = malloc((size_t)seeds * sizeof *vb), *vs = malloc((size_t)seeds * sizeof *vs),
        *vr = malloc((size_t)seeds * sizeof *vr);
    if (!vb || !vs || !vr) return 2;
    for (int k = 0; k < seeds; k++) {
        vb[k] = run_builtin(ctx, t, tmpl, (uint64_t)k + 1, within);
        vs[k] = run_search(ctx, t, tmpl, (uint64_t)k + 1, within);
        vr[k] = run_random((uint64_t)k + 1, within);
    }
    report("builtin", vb, seeds, allowed);
    report("search", vs, seeds, allowed);
    report("random", vr, seeds, allowed);
    /* Random search's exact distribution, without the spread of 10 seeds: the first of K
     * targets among M points drawn without replacement comes after n draws with
     * probability 1 - prod_{i<n} (M-K-i)/(M-i); its mean is (M+1)/(K+1). */
    double miss = 1;
    uint64_t med = 0;
    while (miss > 0.5 && med < allowed) {
        miss *= (double)(allowed - within_n - med) / (double)(allowed - med);
        med++;
    }
    printf("  random, exact: median %llu, mean %.1f\n", (unsigned long long)med,
           (double)(allowed + 1) / (double)(within_n + 1));
    free(vb);
    free(vs);
    free(vr);
    kf_builtin_free(proto);
    free(tab);
    kf_task_free(t);
    kf_ctx_free(ctx);
    json_decref(root);
    return 0;
}
