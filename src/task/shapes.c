/*
 * shapes.c - concrete shapes: evaluating buffer extents and scalar values at a shape,
 * constraint checks, and drawing hidden and edge shapes.
 *
 * Hidden shapes are drawn log-uniformly in each size's range (small sizes, where tails
 * and boundary bugs live, get as much weight as large ones). Edge shapes add the
 * minimum sizes, primes, 2^k +/- 1 (non-multiples of every power-of-two tile), the
 * maximum sizes, and (with several sizes) all sizes equal.
 * Every drawn shape satisfies the task's constraints, the candidate's `when` domain and
 * the buffer cap; a draw that cannot satisfy them after many tries is skipped, and only
 * when no shape at all can be found is it an error.
 */
#include "task.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

kf_vars kf_task_vars(const kf_task *t, const kf_shape *s) {
    kf_vars v = {(const char *const *)t->size_names, s->v, t->nsizes};
    return v;
}

int kf_task_eval_shape(const kf_task *t, const kf_shape *s, int64_t *counts, int64_t *ivals,
                       double *fvals, char *err, size_t errlen) {
    kf_vars v = kf_task_vars(t, s);
    for (int i = 0; i < t->nargs; i++) {
        const kf_arg *a = &t->args[i];
        char e[256];
        if (a->is_buffer) {
            int64_t n = 1;
            for (int d = 0; d < a->ndim; d++) {
                int64_t x;
                if (kf_expr_eval(a->shape[d], &v, &x, e, sizeof e)) {
                    snprintf(err, errlen, "args[%d] (%s) shape[%d] \"%s\": %s", i, a->name, d,
                             kf_expr_src(a->shape[d]), e);
                    return -1;
                }
                if (x < 0) {
                    snprintf(err, errlen, "args[%d] (%s) shape[%d] \"%s\" is negative (%lld)",
                             i, a->name, d, kf_expr_src(a->shape[d]), (long long)x);
                    return -1;
                }
                if (__builtin_mul_overflow(n, x, &n)) {
                    snprintf(err, errlen, "args[%d] (%s): element count overflows", i, a->name);
                    return -1;
                }
            }
            counts[i] = n;
        } else if (a->value_expr) {
            int64_t x;
            if (kf_expr_eval(a->value_expr, &v, &x, e, sizeof e)) {
                snprintf(err, errlen, "args[%d] (%s) value \"%s\": %s", i, a->name,
                         kf_expr_src(a->value_expr), e);
                return -1;
            }
            ivals[i] = x;
            fvals[i] = (double)x;
        } else {
            ivals[i] = (int64_t)a->value_num;
            fvals[i] = a->value_num;
        }
    }
    return 0;
}

uint64_t kf_task_shape_bytes(const kf_task *t, const kf_shape *s) {
    int64_t counts[KF_MAX_ARGS], iv[KF_MAX_ARGS];
    double fv[KF_MAX_ARGS];
    char err[256];
    if (kf_task_eval_shape(t, s, counts, iv, fv, err, sizeof err)) return UINT64_MAX;
    uint64_t total = 0;
    for (int i = 0; i < t->nargs; i++) {
        if (!t->args[i].is_buffer) continue;
        uint64_t b;
        if (__builtin_mul_overflow((uint64_t)counts[i], kf_dtype_size(t->args[i].type), &b) ||
            __builtin_add_overflow(total, b, &total))
            return UINT64_MAX;
    }
    return total;
}

int kf_task_shape_ok(const kf_task *t, const kf_shape *s, const kf_expr *when,
                     const kf_vars *params, char *err, size_t errlen) {
    kf_vars v = kf_task_vars(t, s);
    for (int i = 0; i < t->ncons; i++) {
        int64_t x;
        char e[256];
        if (kf_expr_eval(t->cons[i], &v, &x, e, sizeof e)) {
            snprintf(err, errlen, "constraint \"%s\": %s", kf_expr_src(t->cons[i]), e);
            return -1;
        }
        if (!x) return 0;
    }
    if (when) {
        /* `when` may name sizes and template parameters */
        const char *names[64];
        int64_t vals[64];
        int n = 0;
        for (int i = 0; i < t->nsizes && n < 64; i++, n++) {
            names[n] = t->size_names[i];
            vals[n] = s->v[i];
        }
        for (int i = 0; params && i < params->n && n < 64; i++, n++) {
            names[n] = params->names[i];
            vals[n] = params->values[i];
        }
        kf_vars all = {names, vals, n};
        int64_t x;
        char e[256];
        if (kf_expr_eval(when, &all, &x, e, sizeof e)) {
            snprintf(err, errlen, "kforge:when \"%s\": %s", kf_expr_src(when), e);
            return -1;
        }
        if (!x) return 0;
    }
    return 1;
}

void kf_shape_format(const kf_task *t, const kf_shape *s, char *buf, size_t n) {
    size_t off = 0;
    buf[0] = 0;
    for (int i = 0; i < t->nsizes && off < n; i++)
        off += (size_t)snprintf(buf + off, n - off, "%s%s=%lld", i ? ", " : "", t->size_names[i],
                                (long long)s->v[i]);
}

void kf_shapes_free(kf_shape *s, int n) {
    if (!s) return;
    for (int i = 0; i < n; i++) free(s[i].v);
    free(s);
}

static int is_prime(int64_t x) {
    if (x < 2) return 0;
    for (int64_t d = 2; d * d <= x; d++)
        if (x % d == 0) return 0;
    return 1;
}

static int64_t log_uniform(kf_rng *r, int64_t lo, int64_t hi) {
    if (hi <= lo) return lo;
    double a = log((double)lo + 1.0), b = log((double)hi + 1.0);
    int64_t x = (int64_t)floor(exp(a + (b - a) * kf_rng_uniform(r)) - 1.0);
    return x < lo ? lo : x > hi ? hi : x;
}

/* A value of size i for one of the edge families. */
static int64_t edge_value(const kf_task *t, int i, int family, kf_rng *r) {
    int64_t lo = t->size_min[i], hi = t->size_max[i];
    int64_t x = log_uniform(r, lo, hi);
    switch (family) {
    case 0: return lo;
    case 1: /* a prime at or above a log-uniform draw (or the draw, if none fits) */
        for (int64_t p = x; p <= hi && p < x + 10000; p++)
            if (is_prime(p)) return p;
        return x;
    case 4: /* equal sizes (square matrices): filled in by the caller */
        return x;
    default: { /* 2^k - 1 or 2^k + 1 */
        int64_t p = 1;
        while (p * 2 <= x && p < (INT64_C(1) << 61)) p *= 2;
        int64_t c = (kf_rng_next(r) & 1) ? p + 1 : p - 1;
        if (c < lo || c > hi) c = (c < lo) ? lo : hi;
        return c;
    }
    }
}

/* Narrow domains (cols % 8 == 0, m == n && n == k) are rarely hit by independent
 * draws: after 100 misses, some sizes copy an earlier size, round down to a multiple
 * of a power of two, or take a visible shape's value. */
static void structured(const kf_task *t, kf_rng *rng, int64_t *v, int i) {
    int64_t lo = t->size_min[i], hi = t->size_max[i];
    switch (kf_rng_next(rng) % 4) {
    case 0: break;
    case 1:
        if (i > 0) {
            int64_t c = v[kf_rng_range(rng, 0, i - 1)];
            if (c >= lo && c <= hi) v[i] = c;
        }
        break;
    case 2: {
        int64_t m = INT64_C(1) << kf_rng_range(rng, 1, 7);
        int64_t c = v[i] / m * m;
        if (c >= lo && c <= hi && c > 0) v[i] = c;
        break;
    }
    default:
        if (t->nshapes) v[i] = t->shapes[kf_rng_range(rng, 0, t->nshapes - 1)].v[i];
        break;
    }
}

/* The edge shape "minimum sizes": the all-minimum shape when it is valid, otherwise the
 * smallest valid shape (fewest buffer bytes) found among small values: min .. min+15,
 * the smallest multiple of each power of two up to 1024, equal sizes, and the visible
 * shapes' values. A domain such as `cols % 8 == 0` thus gets cols = 8, not a random
 * multiple. Returns 1 with v filled, 0 when none was found. */
static int smallest_shape(const kf_task *t, kf_rng *rng, const kf_expr *when,
                          const kf_vars *params, uint64_t cap, int64_t *v) {
    int64_t *cand = calloc((size_t)t->nsizes, sizeof *cand);
    uint64_t best = UINT64_MAX;
    char err[256];
    if (!cand) return 0;
    for (int tries = 0; tries < 3000; tries++) {
        for (int i = 0; i < t->nsizes; i++) {
            int64_t lo = t->size_min[i], hi = t->size_max[i], x = lo;
            double u = kf_rng_uniform(rng);
            switch (tries ? kf_rng_next(rng) % 4 : 0) {
            case 0: x = tries ? lo + (int64_t)(u * u * u * 16) : lo; break;
            case 1: {
                int64_t m = INT64_C(1) << kf_rng_range(rng, 1, 10);
                x = (lo + m - 1) / m * m;
                break;
            }
            case 2: x = i ? cand[kf_rng_range(rng, 0, i - 1)] : lo; break;
            default: x = t->nshapes ? t->shapes[kf_rng_range(rng, 0, t->nshapes - 1)].v[i] : lo; break;
            }
            cand[i] = x < lo ? lo : x > hi ? hi : x;
        }
        kf_shape s = {cand, KF_SHAPE_EDGE, 0};
        if (kf_task_shape_ok(t, &s, when, params, err, sizeof err) != 1) continue;
        uint64_t b = kf_task_shape_bytes(t, &s);
        if (b > cap || b >= best) continue;
        best = b;
        memcpy(v, cand, (size_t)t->nsizes * sizeof *v);
        if (tries == 0) break; /* the all-minimum shape itself */
    }
    free(cand);
    return best != UINT64_MAX;
}

/* The edge shape "maximum sizes": the all-maximum shape when it is valid and under the
 * cap, otherwise the largest valid shape (most buffer bytes) found near the top of each
 * range: max, max - 1 .. - 15, the largest multiple of each power of two, equal sizes.
 * Bugs that start above some size (a fixed buffer, an index overflow, a blocking path)
 * live here, and log-uniform draws reach the top octave of a range rarely. */
static int largest_shape(const kf_task *t, kf_rng *rng, const kf_expr *when,
                         const kf_vars *params, uint64_t cap, int64_t *v) {
    int64_t *cand = calloc((size_t)t->nsizes, sizeof *cand);
    uint64_t best = 0;
    int found = 0;
    char err[256];
    if (!cand) return 0;
    for (int tries = 0; tries < 3000; tries++) {
        for (int i = 0; i < t->nsizes; i++) {
            int64_t lo = t->size_min[i], hi = t->size_max[i], x = hi;
            double u = kf_rng_uniform(rng);
            switch (tries ? kf_rng_next(rng) % 4 : 0) {
            case 0: x = tries ? hi - (int64_t)(u * u * u * 16) : hi; break;
            case 1: {
                int64_t m = INT64_C(1) << kf_rng_range(rng, 1, 10);
                x = hi / m * m;
                break;
            }
            case 2: x = i ? cand[kf_rng_range(rng, 0, i - 1)] : hi; break;
            default: x = hi - (int64_t)((double)(hi - lo) * u * u * 0.5); break;
            }
            cand[i] = x < lo ? lo : x > hi ? hi : x;
        }
        kf_shape s = {cand, KF_SHAPE_EDGE, 0};
        if (kf_task_shape_ok(t, &s, when, params, err, sizeof err) != 1) continue;
        uint64_t b = kf_task_shape_bytes(t, &s);
        if (b > cap || (found && b <= best)) continue;
        best = b;
        found = 1;
        memcpy(v, cand, (size_t)t->nsizes * sizeof *v);
        if (tries == 0) break; /* the all-maximum shape itself */
    }
    free(cand);
    return found;
}

int kf_task_draw_hidden(const kf_task *t, kf_rng *rng, int count, const kf_expr *when,
                        const kf_vars *params, uint64_t buffer_cap, kf_shape **out,
                        int *nout, char *err, size_t errlen) {
    int nedge = t->nsizes > 1 ? 5 : 4; /* min, primes, 2^k +/- 1, max, equal sizes */
    int want = count + nedge, n = 0;
    kf_shape *sh = calloc((size_t)want, sizeof *sh);
    if (!sh) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (int slot = 0; slot < want; slot++) {
        int family = slot < count ? -1 : slot - count; /* -1: plain hidden draw */
        int64_t *v = calloc((size_t)t->nsizes, sizeof *v);
        if (!v) {
            kf_shapes_free(sh, n);
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        int found = (family == 0 && smallest_shape(t, rng, when, params, buffer_cap, v)) ||
                    (family == 3 && largest_shape(t, rng, when, params, buffer_cap, v));
        for (int tries = 0; tries < 2000 && !found; tries++) {
            for (int i = 0; i < t->nsizes; i++) {
                /* after many failures, mix edge values with free draws per size */
                int fam = family;
                if (fam >= 0 && tries > 200 && (kf_rng_next(rng) & 1)) fam = -1;
                v[i] = fam < 0 ? log_uniform(rng, t->size_min[i], t->size_max[i])
                               : edge_value(t, i, fam, rng);
                if (fam == 4 && i > 0 && v[0] >= t->size_min[i] && v[0] <= t->size_max[i])
                    v[i] = v[0]; /* every size equal to the first */
                if (tries >= 100) structured(t, rng, v, i);
            }
            kf_shape s = {v, family < 0 ? KF_SHAPE_HIDDEN : KF_SHAPE_EDGE, 0};
            int ok = kf_task_shape_ok(t, &s, when, params, err, errlen);
            if (ok < 0) {
                free(v);
                kf_shapes_free(sh, n);
                return -1;
            }
            if (!ok || kf_task_shape_bytes(t, &s) > buffer_cap) continue;
            /* a shape that repeats a visible one, or an earlier edge, adds nothing */
            int dup = 0;
            for (int j = 0; j < n && family >= 0; j++)
                dup |= !memcmp(sh[j].v, v, (size_t)t->nsizes * sizeof *v);
            for (int j = 0; j < t->nshapes; j++) /* hidden means not visible */
                dup |= !memcmp(t->shapes[j].v, v, (size_t)t->nsizes * sizeof *v);
            if (dup && tries < 1000) continue;
            found = 1;
        }
        if (!found) {
            free(v);
            continue;
        }
        sh[n].v = v;
        sh[n].kind = family < 0 ? KF_SHAPE_HIDDEN : KF_SHAPE_EDGE;
        sh[n].light = family == 3;
        n++;
    }
    if (n == 0 && want > nedge) {
        free(sh);
        snprintf(err, errlen, "no shape satisfies the constraints%s within the buffer cap",
                 when ? " and the candidate's kforge:when domain" : "");
        return -1;
    }
    *out = sh;
    *nout = n;
    return 0;
}
