/*
 * shapes.c - concrete shapes: evaluating buffer extents and scalar values at a shape,
 * constraint checks, and drawing hidden and edge shapes.
 *
 * A check's drawn shapes come in three groups (docs/tasks.md "Shapes kforge draws"):
 * - `hidden.count` plain draws, each size log-uniform in its range (small sizes, where
 *   tails and boundary bugs live, get as much weight as large ones);
 * - three family draws, the sizes real models use: "aligned" (every size a multiple of
 *   128, or of 64 where the range holds fewer than two multiples of 128 off its ends;
 *   sizes pairwise different), "model" (hidden sizes, head dimensions, vocabulary sizes,
 *   batch 1-64) and "mixed" (each size from multiples of 8-256, powers of two and near
 *   powers, or model dimensions), the last two non-square (not all sizes equal);
 * - edge shapes: the minimum sizes, primes, 2^k +/- 1, the large corner (every size in
 *   the top sixteenth of its range, at random, never the one all-maximum shape) and, with
 *   several sizes, all sizes equal to a realistic value.
 * No edge shape is recognisable from its sizes alone: the minimum, prime and 2^k +/- 1
 * shapes hold their edge value in a random non-empty subset of the sizes and realistic
 * values in the rest, and the aligned and corner draws, present in every check, look like
 * no edge. So a kernel right on whatever looks like an edge and wrong on the sizes models
 * use, on non-square shapes or near the maximum is caught by design, not by luck.
 * A check's time follows the bytes it stages and the work the reference does at each
 * shape, not the count of shapes. So family and edge shapes other than the corner are
 * kept, while draws allow, under a sixteenth of the all-maximum sizes' weight (buffer
 * bytes plus the task's cost.flops; the aligned shape, whose sizes are at least 64 each,
 * under an eighth): they test the values of the sizes, the corner their magnitude, and
 * the time stays dominated by the one large shape.
 * Every drawn shape satisfies the task's constraints, the candidate's `when` domain and
 * the buffer cap; a draw that cannot satisfy them after many tries is skipped, and only
 * when no shape at all can be found is it an error. A `when` that cannot be evaluated at
 * a shape inside the constraints (overflow, division by zero) is never read as "outside
 * the domain": it is reported (-2), with the expression and the shape, so that no
 * candidate can shrink the checked region by writing an expression that fails there.
 */
#include "task.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

kf_vars kf_task_vars(const kf_task *t, const kf_shape *s) {
    kf_vars v = {(const char *const *)t->size_names, s->v, t->nsizes};
    return v;
}

int kf_task_eval_shape(const kf_task *t, const kf_shape *s, int64_t *counts, int64_t *ivals, double *fvals,
                       char *err, size_t errlen) {
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
                    snprintf(err, errlen, "args[%d] (%s) shape[%d] \"%s\" is negative (%lld)", i, a->name, d,
                             kf_expr_src(a->shape[d]), (long long)x);
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

int kf_task_shape_ok(const kf_task *t, const kf_shape *s, const kf_expr *when, const kf_vars *params,
                     char *err, size_t errlen) {
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
            char at[256];
            kf_shape_format(t, s, at, sizeof at);
            snprintf(err, errlen, "kforge:when \"%s\" cannot be evaluated at %s: %s", kf_expr_src(when), at,
                     e);
            return -2;
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

/* log(x + 1) uniform over [lo, hi + 1), floored: every value in [lo, hi] can come out
 * (with log(hi + 1) as the top, hi itself could not). */
static int64_t log_uniform(kf_rng *r, int64_t lo, int64_t hi) {
    if (hi <= lo) return lo;
    double a = log((double)lo + 1.0), b = log((double)hi + 2.0);
    int64_t x = (int64_t)floor(exp(a + (b - a) * kf_rng_uniform(r)) - 1.0);
    return x < lo ? lo : x > hi ? hi : x;
}

/* ---- realistic families ------------------------------------------------------ */

/* Dimensions of common models: hidden and FFN sizes, head dimensions, vocabularies. */
static const int64_t hidden_dims[] = {768, 1024, 1536, 2048, 2560, 3072, 4096, 5120, 8192, 14336};
static const int64_t head_dims[] = {64, 80, 96, 128, 256};
static const int64_t vocab_sizes[] = {32000, 50257, 128256};

/* A multiple of m (not 0) in [lo, hi], log-uniform in magnitude; with `inner`, off the
 * range's ends where there is room (the minimum and maximum are edge values a kernel
 * could recognise). -1 when no multiple fits. */
static int64_t multiple_of(kf_rng *r, int64_t lo, int64_t hi, int64_t m, int inner) {
    int64_t first = (lo + m - 1) / m * m, last = hi / m * m;
    if (first < m) first = m;
    if (first > last) return -1;
    if (inner && first == lo && first + m <= last) first += m;
    if (inner && last == hi && last - m >= first) last -= m;
    return m * log_uniform(r, first / m, last / m);
}

/* 2^k, or 2^k + d with d in [-4, 4] half the time, k uniform among the powers near the
 * range. -1 when none lands in [lo, hi]. */
static int64_t near_pow2(kf_rng *r, int64_t lo, int64_t hi) {
    int klo = -1, khi = -1;
    for (int k = 0; k < 62; k++) {
        int64_t p = INT64_C(1) << k;
        if (p + 4 >= lo && p - 4 <= hi) {
            if (klo < 0) klo = k;
            khi = k;
        }
    }
    if (klo < 0) return -1;
    int64_t x = INT64_C(1) << kf_rng_range(r, klo, khi);
    if (kf_rng_next(r) & 1) x += kf_rng_range(r, -4, 4);
    return x >= lo && x <= hi ? x : -1;
}

/* A model dimension in [lo, hi]: a hidden size, a head dimension, a vocabulary size or a
 * batch in [1, 64], the family first chosen at random among those with a value in range.
 * -1 when none has one. */
static int64_t model_value(kf_rng *r, int64_t lo, int64_t hi) {
    const int64_t *lists[] = {hidden_dims, head_dims, vocab_sizes};
    const int nl[] = {(int)(sizeof hidden_dims / sizeof *hidden_dims),
                      (int)(sizeof head_dims / sizeof *head_dims),
                      (int)(sizeof vocab_sizes / sizeof *vocab_sizes)};
    int first = (int)kf_rng_range(r, 0, 3);
    for (int k = 0; k < 4; k++) {
        int f = (first + k) % 4;
        if (f == 3) { /* batch */
            int64_t a = lo > 1 ? lo : 1, b = hi < 64 ? hi : 64;
            if (a <= b) return kf_rng_range(r, a, b);
            continue;
        }
        int64_t in[16];
        int n = 0;
        for (int j = 0; j < nl[f]; j++)
            if (lists[f][j] >= lo && lists[f][j] <= hi) in[n++] = lists[f][j];
        if (n) return in[kf_rng_range(r, 0, n - 1)];
    }
    return -1;
}

/* A size from one of the realistic families: a multiple of 8 to 256, a power of two or
 * near one, or a model dimension; log-uniform when the range holds none. */
static int64_t realistic_value(kf_rng *r, int64_t lo, int64_t hi) {
    int64_t x = -1;
    switch (kf_rng_next(r) % 3) {
    case 0: x = multiple_of(r, lo, hi, INT64_C(8) << kf_rng_range(r, 0, 5), 0); break;
    case 1: x = near_pow2(r, lo, hi); break;
    default: x = model_value(r, lo, hi); break;
    }
    if (x < 0) x = multiple_of(r, lo, hi, 8, 0);
    return x >= 0 ? x : log_uniform(r, lo, hi);
}

/* A multiple of 128 off the range's ends (the sizes real models use, where a kernel's
 * "fast path" lives; also multiples of 64), or of 64 where the range holds fewer than two
 * such multiples of 128 (sgemm's [1, 256] holds only 128); a realistic value where it
 * holds no multiple of 64. */
static int64_t aligned_value(kf_rng *r, int64_t lo, int64_t hi) {
    int64_t first = (lo + 127) / 128 * 128, last = hi / 128 * 128;
    if (first < 128) first = 128;
    if (first == lo) first += 128;
    if (last == hi) last -= 128;
    int64_t x = multiple_of(r, lo, hi, last - first >= 128 ? 128 : 64, 1);
    if (x < 0) x = multiple_of(r, lo, hi, 64, 0);
    return x >= 0 ? x : realistic_value(r, lo, hi);
}

/* ---- edge values ------------------------------------------------------------- */

/* A prime at or above a log-uniform draw (or the draw, if none fits). */
static int64_t prime_value(kf_rng *r, int64_t lo, int64_t hi) {
    int64_t x = log_uniform(r, lo, hi);
    for (int64_t p = x; p <= hi && p < x + 10000; p++)
        if (is_prime(p)) return p;
    return x;
}

/* 2^k - 1 or 2^k + 1 below a log-uniform draw: a non-multiple of every power-of-two tile. */
static int64_t pow2_pm1(kf_rng *r, int64_t lo, int64_t hi) {
    int64_t x = log_uniform(r, lo, hi), p = 1;
    while (p * 2 <= x && p < (INT64_C(1) << 61)) p *= 2;
    int64_t c = (kf_rng_next(r) & 1) ? p + 1 : p - 1;
    return c < lo ? lo : c > hi ? hi : c;
}

/* Near the top of [lo, hi]: at most a sixteenth of the range below hi, biased toward hi
 * (u^2), so bugs that start above some size are inside, and no one value is the corner. */
static int64_t corner_value(kf_rng *r, int64_t lo, int64_t hi) {
    int64_t w = (hi - lo) / 16;
    if (w < 1) w = hi > lo;
    double u = kf_rng_uniform(r);
    int64_t x = hi - (int64_t)floor(u * u * (double)(w + 1));
    return x < lo ? lo : x;
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

/* ---- whole shapes ------------------------------------------------------------ */

static int is_visible(const kf_task *t, const int64_t *v) {
    for (int j = 0; j < t->nshapes; j++)
        if (!memcmp(t->shapes[j].v, v, (size_t)t->nsizes * sizeof *v)) return 1;
    return 0;
}

/* What a shape costs a check, roughly: its buffer bytes (staged, flushed, compared) plus
 * the task's cost.flops there (the reference's work: a GEMM's grows as m*n*k while its
 * bytes grow as the squares). */
static double shape_weight(const kf_task *t, const kf_shape *s) {
    double w = (double)kf_task_shape_bytes(t, s);
    int64_t f;
    char e[128];
    kf_vars v = kf_task_vars(t, s);
    if (t->cost_flops && !kf_expr_eval(t->cost_flops, &v, &f, e, sizeof e) && f > 0) w += (double)f;
    return w;
}

/* What a drawn shape is for (draw plans). */
// clang-format off
enum {
    D_PLAIN, D_ALIGNED, D_MODEL, D_MIXED,             /* hidden */
    D_MINIMUM, D_PRIME, D_POW2_PM1, D_CORNER, D_EQUAL /* edge */
};
// clang-format on
#define NFAMILY 3

/* The edge shape "minimum sizes": the all-minimum shape when it is valid, otherwise the
 * smallest valid shape (fewest buffer bytes) found among small values: min .. min+15,
 * the smallest multiple of each power of two up to 1024, equal sizes, and the visible
 * shapes' values. A domain such as `cols % 8 == 0` thus gets cols = 8, not a random
 * multiple. Returns 1 with v filled, 0 when none was found, -1 or -2 as
 * kf_task_shape_ok (err set), -3 when memory ran out. */
static int smallest_shape(const kf_task *t, kf_rng *rng, const kf_expr *when, const kf_vars *params,
                          uint64_t cap, int64_t *v, char *err, size_t errlen) {
    int64_t *cand = calloc((size_t)t->nsizes, sizeof *cand);
    uint64_t best = UINT64_MAX;
    int rc = 0;
    if (!cand) { /* not "none found": the minimum edge shape would go unchecked */
        snprintf(err, errlen, "out of memory");
        return -3;
    }
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
        int ok = kf_task_shape_ok(t, &s, when, params, err, errlen);
        if (ok < 0) {
            rc = ok;
            break;
        }
        if (!ok) continue;
        uint64_t b = kf_task_shape_bytes(t, &s);
        if (b > cap || b >= best) continue;
        best = b;
        rc = 1;
        memcpy(v, cand, (size_t)t->nsizes * sizeof *v);
        if (tries == 0) break; /* the all-minimum shape itself */
    }
    free(cand);
    return rc;
}

/* The largest valid shape (most buffer bytes) found near the top of each range: max,
 * max - 1 .. - 15, the largest multiple of each power of two, equal sizes. The large
 * corner's fallback, when its random draws all miss the constraints, the domain or the
 * cap (a cap below the all-maximum shape's bytes, a `when` that is false there). Returns
 * as smallest_shape. */
static int largest_shape(const kf_task *t, kf_rng *rng, const kf_expr *when, const kf_vars *params,
                         uint64_t cap, int64_t *v, char *err, size_t errlen) {
    int64_t *cand = calloc((size_t)t->nsizes, sizeof *cand);
    uint64_t best = 0;
    int rc = 0;
    if (!cand) {
        snprintf(err, errlen, "out of memory");
        return -3;
    }
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
        int ok = kf_task_shape_ok(t, &s, when, params, err, errlen);
        if (ok < 0) {
            rc = ok;
            break;
        }
        if (!ok) continue;
        uint64_t b = kf_task_shape_bytes(t, &s);
        if (b > cap || (rc && b <= best)) continue;
        best = b;
        rc = 1;
        memcpy(v, cand, (size_t)t->nsizes * sizeof *v);
    }
    free(cand);
    return rc;
}

/* The large corner where the top of every range is outside the constraints, the domain
 * or the cap: a random corner draw scaled toward the minimum by the largest factor (found
 * by bisection, 64 tries of a draw) at which it fits. Returns 1 with v filled, 0 when no
 * draw fits at any factor, -1 / -2 as kf_task_shape_ok. tmp: nsizes of scratch. */
static int shrunk_corner(const kf_task *t, kf_rng *rng, const kf_expr *when, const kf_vars *params,
                         uint64_t cap, int64_t *v, int64_t *tmp, char *err, size_t errlen) {
    size_t vb = (size_t)t->nsizes * sizeof *v;
    for (int d = 0; d < 64; d++) {
        for (int i = 0; i < t->nsizes; i++) v[i] = corner_value(rng, t->size_min[i], t->size_max[i]);
        double lo = 0, hi = 1;
        int found = 0;
        for (int step = 0; step < 40; step++) {
            double f = step == 0 ? 1e-9 : (lo + hi) / 2; /* first: does the bottom fit? */
            for (int i = 0; i < t->nsizes; i++) {
                int64_t m = t->size_min[i];
                tmp[i] = m + (int64_t)((double)(v[i] - m) * f);
            }
            kf_shape s = {tmp, KF_SHAPE_EDGE, 1};
            int ok = kf_task_shape_ok(t, &s, when, params, err, errlen);
            if (ok < 0) return ok;
            ok = ok && kf_task_shape_bytes(t, &s) <= cap && !is_visible(t, tmp);
            if (step == 0 && !ok) break;
            if (ok) { /* v keeps the ray; the fit at lo is made below */
                found = 1;
                lo = f;
            } else {
                hi = f;
            }
        }
        if (!found) continue;
        for (int i = 0; i < t->nsizes; i++) {
            int64_t m = t->size_min[i];
            tmp[i] = m + (int64_t)((double)(v[i] - m) * lo);
        }
        memcpy(v, tmp, vb);
        return 1;
    }
    return 0;
}

/* A `when` that fails to evaluate somewhere must be found even where no draw lands:
 * evaluate it at every corner of the size box (each size at its minimum or maximum;
 * the all-maximum one is where products overflow, the minimum where divisors vanish)
 * that satisfies the constraints. 0, or -1 / -2 as kf_task_shape_ok. */
static int probe_when(const kf_task *t, const kf_expr *when, const kf_vars *params, int64_t *v, char *err,
                      size_t errlen) {
    int nb = t->nsizes < 8 ? t->nsizes : 8; /* sizes past the eighth stay at their maximum */
    for (unsigned mask = 0; when && mask < (1u << nb); mask++) {
        for (int i = 0; i < t->nsizes; i++)
            v[i] = i < nb && (mask >> i & 1) ? t->size_min[i] : t->size_max[i];
        kf_shape s = {v, KF_SHAPE_EDGE, 0};
        int ok = kf_task_shape_ok(t, &s, when, params, err, errlen);
        if (ok < 0) return ok;
    }
    return 0;
}

/* One try of a draw plan into v. Edge plans keep their edge value in a random non-empty
 * subset of the sizes (base: the smallest shape's values for D_MINIMUM) and realistic
 * values in the others. After 200 misses half the sizes are drawn plainly, after 100
 * structured() narrows them toward small domains. */
static void draw_try(const kf_task *t, kf_rng *rng, int plan, const int64_t *base, int tries, int64_t *v) {
    int n = t->nsizes;
    uint64_t keep = kf_rng_next(rng);
    if (n < 64 && !(keep & ((UINT64_C(1) << n) - 1))) keep |= UINT64_C(1) << kf_rng_range(rng, 0, n - 1);
    int64_t common = -1; /* D_EQUAL: one realistic value inside every size's range */
    if (plan == D_EQUAL) {
        int64_t lo = 0, hi = INT64_MAX;
        for (int i = 0; i < n; i++) {
            if (t->size_min[i] > lo) lo = t->size_min[i];
            if (t->size_max[i] < hi) hi = t->size_max[i];
        }
        if (lo <= hi) common = realistic_value(rng, lo, hi);
    }
    /* the aligned shape keeps its multiples longest: it is the one a kernel wrong on the
     * sizes models use must meet in every check */
    int plain_at = plan == D_ALIGNED ? 1000 : 200, struct_at = plan == D_ALIGNED ? 1000 : 100;
    if (plan == D_CORNER) struct_at = INT32_MAX; /* its fallback is largest_shape's search */
    for (int i = 0; i < n; i++) {
        int64_t lo = t->size_min[i], hi = t->size_max[i];
        int p = plan, kept = i >= 64 || (keep >> i & 1);
        if (p != D_PLAIN && p != D_CORNER && tries > plain_at && (kf_rng_next(rng) & 1)) p = D_PLAIN;
        switch (p) {
        case D_PLAIN: v[i] = log_uniform(rng, lo, hi); break;
        case D_ALIGNED: v[i] = aligned_value(rng, lo, hi); break;
        case D_MODEL: {
            int64_t x = model_value(rng, lo, hi);
            v[i] = x >= 0 ? x : realistic_value(rng, lo, hi);
            break;
        }
        case D_MIXED: v[i] = realistic_value(rng, lo, hi); break;
        case D_MINIMUM: v[i] = kept ? base[i] : realistic_value(rng, lo, hi); break;
        case D_PRIME: v[i] = kept ? prime_value(rng, lo, hi) : realistic_value(rng, lo, hi); break;
        case D_POW2_PM1: v[i] = kept ? pow2_pm1(rng, lo, hi) : realistic_value(rng, lo, hi); break;
        case D_CORNER: v[i] = corner_value(rng, lo, hi); break;
        default: /* D_EQUAL */
            v[i] = common >= lo && common <= hi ? common : realistic_value(rng, lo, hi);
            break;
        }
        if (tries >= struct_at) structured(t, rng, v, i);
    }
}

/* Does v have the property its plan promises? Aligned: sizes pairwise different (after
 * 300 tries: not all equal); model, mixed: not all equal (non-square); corner: not the
 * one all-maximum shape, where the corner holds at least 16 shapes (gdn_decode's b in
 * [1, 8] gives it two: there the maximum is one of them). None after 600 tries. */
static int plan_holds(const kf_task *t, int plan, const int64_t *v, int tries) {
    if (tries >= 600) return 1;
    int n = t->nsizes, alleq = 1, distinct = 1, allmax = 1;
    double room = 1;
    for (int i = 0; i < n; i++) {
        int64_t w = (t->size_max[i] - t->size_min[i]) / 16;
        if (w < 1) w = t->size_max[i] > t->size_min[i];
        room *= (double)(w + 1);
        alleq &= v[i] == v[0];
        allmax &= v[i] == t->size_max[i];
        for (int j = 0; j < i; j++) distinct &= v[i] != v[j];
    }
    switch (plan) {
    case D_ALIGNED: return n < 2 || (tries < 300 ? distinct : !alleq);
    case D_MODEL:
    case D_MIXED: return n < 2 || !alleq;
    case D_CORNER: return !allmax || room < 16;
    default: return 1;
    }
}

int kf_task_draw_hidden(const kf_task *t, kf_rng *rng, int count, const kf_expr *when, const kf_vars *params,
                        uint64_t buffer_cap, kf_shape **out, int *nout, char *err, size_t errlen) {
    static const int edges[] = {D_MINIMUM, D_PRIME, D_POW2_PM1, D_CORNER, D_EQUAL};
    int nedge = t->nsizes > 1 ? 5 : 4;
    int want = count + NFAMILY + nedge, n = 0, rc = -1;
    size_t vb = (size_t)t->nsizes * sizeof(int64_t);
    kf_shape *sh = calloc((size_t)want, sizeof *sh);
    int64_t *v = NULL, *base = calloc((size_t)t->nsizes, sizeof *base),
            *corner = calloc((size_t)t->nsizes, sizeof *corner);
    if (!sh || !base || !corner) goto oom;
    int ok = probe_when(t, when, params, base, err, errlen);
    if (ok < 0) {
        rc = ok;
        goto fail;
    }
    /* the large corner first: it sets the scale the other family and edge shapes are kept
     * under */
    int have_corner = 0;
    for (int tries = 0; tries < 500 && !have_corner; tries++) {
        draw_try(t, rng, D_CORNER, NULL, tries, corner);
        kf_shape s = {corner, KF_SHAPE_EDGE, 1};
        if ((ok = kf_task_shape_ok(t, &s, when, params, err, errlen)) < 0) {
            rc = ok;
            goto fail;
        }
        if (!ok || !plan_holds(t, D_CORNER, corner, tries) || is_visible(t, corner)) continue;
        have_corner = kf_task_shape_bytes(t, &s) <= buffer_cap;
    }
    if (!have_corner) {
        /* the corner is outside the constraints (sgemm's m * n <= 2^22 on a GPU), the
         * domain or the cap: scale a random corner down toward the minimum until it fits,
         * which lands on the boundary of a bounded product at a random place */
        if ((ok = shrunk_corner(t, rng, when, params, buffer_cap, corner, base, err, errlen)) < 0) {
            rc = ok;
            goto fail;
        }
        have_corner = ok;
    }
    if (!have_corner) {
        /* not even that (a constraint that is not monotone, hv % hk == 0): the largest
         * shape found inside them, then a random one within a sixteenth below it in each
         * size, so that this corner is not one fixed shape either */
        if ((ok = largest_shape(t, rng, when, params, buffer_cap, corner, err, errlen)) < 0) {
            rc = ok;
            goto fail;
        }
        have_corner = ok;
        for (int tries = 0; have_corner && tries < 300; tries++) {
            int64_t *j = base, moved = 0; /* base is scratch until smallest_shape */
            /* every other try one offset for all sizes: a domain such as m == n && n == k
             * keeps only those */
            int64_t d = corner[0] - corner_value(rng, t->size_min[0], corner[0]);
            for (int i = 0; i < t->nsizes; i++) {
                j[i] = tries & 1 ? corner_value(rng, t->size_min[i], corner[i]) : corner[i] - d;
                moved |= j[i] != corner[i];
            }
            kf_shape s = {j, KF_SHAPE_EDGE, 1};
            if ((ok = kf_task_shape_ok(t, &s, when, params, err, errlen)) < 0) {
                rc = ok;
                goto fail;
            }
            if (ok && moved && !is_visible(t, j) && kf_task_shape_bytes(t, &s) <= buffer_cap) {
                memcpy(corner, j, vb);
                break;
            }
        }
    }
    /* the scale of "large": the all-maximum sizes' weight where that shape satisfies the
     * constraints and the cap (whatever the candidate's domain, which could otherwise
     * shrink it), or the corner's when larger */
    for (int i = 0; i < t->nsizes; i++) base[i] = t->size_max[i];
    kf_shape top = {base, KF_SHAPE_EDGE, 1}, cs = {corner, KF_SHAPE_EDGE, 1};
    double scale =
        kf_task_shape_ok(t, &top, NULL, NULL, err, errlen) == 1 && kf_task_shape_bytes(t, &top) <= buffer_cap
            ? shape_weight(t, &top)
            : 0;
    if (have_corner && shape_weight(t, &cs) > scale) scale = shape_weight(t, &cs);
    double small_cap = scale / 16, aligned_cap = scale / 8;
    int have_base = (ok = smallest_shape(t, rng, when, params, buffer_cap, base, err, errlen));
    if (ok < 0) {
        rc = ok;
        goto fail;
    }
    for (int slot = 0; slot < want; slot++) {
        int plan = slot < count             ? D_PLAIN
                   : slot < count + NFAMILY ? D_ALIGNED + (slot - count)
                                            : edges[slot - count - NFAMILY];
        if (!(v = calloc((size_t)t->nsizes, sizeof *v))) goto oom;
        int found = 0;
        if (plan == D_CORNER) {
            if ((found = have_corner)) memcpy(v, corner, vb);
        } else if (plan == D_MINIMUM && !have_base) {
            found = 0; /* no valid small shape at all */
        }
        for (int tries = 0; tries < 2000 && !found && plan != D_CORNER && (plan != D_MINIMUM || have_base);
             tries++) {
            draw_try(t, rng, plan, base, tries, v);
            kf_shape s = {v, plan <= D_MIXED ? KF_SHAPE_HIDDEN : KF_SHAPE_EDGE, 0};
            if ((ok = kf_task_shape_ok(t, &s, when, params, err, errlen)) < 0) {
                rc = ok;
                goto fail;
            }
            if (!ok) continue;
            uint64_t b = kf_task_shape_bytes(t, &s);
            double pcap = plan == D_ALIGNED ? aligned_cap : small_cap;
            if (b > buffer_cap || (plan != D_PLAIN && tries < 800 && scale > 0 && shape_weight(t, &s) > pcap))
                continue;
            if (!plan_holds(t, plan, v, tries)) continue;
            /* a shape that repeats a visible one, or an earlier family or edge shape,
             * adds nothing */
            int dup = 0;
            for (int j = 0; j < n && plan != D_PLAIN; j++) dup |= !memcmp(sh[j].v, v, vb);
            for (int j = 0; j < t->nshapes; j++) /* hidden means not visible */
                dup |= !memcmp(t->shapes[j].v, v, vb);
            if (dup && tries < 1000) continue;
            found = 1;
        }
        if (!found && plan == D_MINIMUM && have_base) { /* the smallest shape itself */
            memcpy(v, base, vb);
            found = 1;
        }
        if (!found) {
            free(v);
            v = NULL;
            continue;
        }
        sh[n].v = v;
        v = NULL;
        sh[n].kind = plan <= D_MIXED ? KF_SHAPE_HIDDEN : KF_SHAPE_EDGE;
        sh[n].light = plan == D_CORNER;
        n++;
    }
    if (n == 0) {
        snprintf(err, errlen, "no shape satisfies the constraints%s within the buffer cap",
                 when ? " and the candidate's kforge:when domain" : "");
        goto fail;
    }
    free(base);
    free(corner);
    *out = sh;
    *nout = n;
    return 0;
oom:
    snprintf(err, errlen, "out of memory");
    rc = -3;
fail:
    free(v);
    free(base);
    free(corner);
    kf_shapes_free(sh, n);
    return rc;
}
