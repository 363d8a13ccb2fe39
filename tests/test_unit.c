/*
 * test_unit.c - expressions, RNG, statistics, comparison, layouts and guards.
 */
#define _GNU_SOURCE
#include "kft.h"

#include "bench/stats.h"
#include "data/data.h"
#include "util/util.h"

#include <math.h>
#include <stdlib.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

static int64_t ev(const char *src, const char *const *names, const int64_t *vals, int n, int *ok) {
    char err[256];
    kf_expr *e = kf_expr_parse(src, err, sizeof err);
    if (!e) {
        *ok = 0;
        return 0;
    }
    kf_vars v = {names, vals, n};
    int64_t out = 0;
    *ok = kf_expr_eval(e, &v, &out, err, sizeof err) == 0;
    kf_expr_free(e);
    return out;
}

static void t_expr_values(const void *arg) {
    (void)arg;
    const char *names[] = {"rows", "cols"};
    int64_t vals[] = {7, 12};
    int ok;
    CHECK(ev("1 + 2 * 3", NULL, NULL, 0, &ok) == 7 && ok);
    CHECK(ev("(1 + 2) * 3", NULL, NULL, 0, &ok) == 9 && ok);
    CHECK(ev("rows * cols", names, vals, 2, &ok) == 84 && ok);
    CHECK(ev("cols % 4 == 0", names, vals, 2, &ok) == 1 && ok);
    CHECK(ev("rows % 4 == 0 || cols < 3", names, vals, 2, &ok) == 0 && ok);
    CHECK(ev("-rows + 10", names, vals, 2, &ok) == 3 && ok);
    CHECK(ev("!(rows > 3) ? 1 : 2", names, vals, 2, &ok) == 2 && ok);
    CHECK(ev("min(rows, cols) + max(rows, cols)", names, vals, 2, &ok) == 19 && ok);
    CHECK(ev("rows <= 7 && cols >= 12 && rows != cols", names, vals, 2, &ok) == 1 && ok);
    CHECK(ev("17 / 5 * 5 + 17 % 5", NULL, NULL, 0, &ok) == 17 && ok);
}

static void t_expr_errors(const void *arg) {
    (void)arg;
    char err[256];
    CHECK(kf_expr_parse("1 +", err, sizeof err) == NULL);
    CHECK(strstr(err, "position") != NULL);
    CHECK(kf_expr_parse("rows * (cols", err, sizeof err) == NULL);
    CHECK(kf_expr_parse("foo(1, 2)", err, sizeof err) == NULL && strstr(err, "unknown function"));
    CHECK(kf_expr_parse("1.5 * rows", err, sizeof err) == NULL);
    CHECK(kf_expr_parse("rows $ 2", err, sizeof err) == NULL);
    int ok;
    ev("1 / 0", NULL, NULL, 0, &ok);
    CHECK(!ok);
    ev("9223372036854775807 + 1", NULL, NULL, 0, &ok);
    CHECK(!ok);
    ev("nosuch + 1", NULL, NULL, 0, &ok);
    CHECK(!ok);
    /* deep nesting is refused, not a stack overflow */
    char deep[2100];
    memset(deep, '(', 1000);
    deep[1000] = '1';
    memset(deep + 1001, ')', 1000);
    deep[2001] = 0;
    CHECK(kf_expr_parse(deep, err, sizeof err) == NULL);
}

static void t_rng(const void *arg) {
    (void)arg;
    kf_rng a, b;
    kf_rng_seed(&a, 42);
    kf_rng_seed(&b, 42);
    for (int i = 0; i < 100; i++) CHECK(kf_rng_next(&a) == kf_rng_next(&b));
    kf_rng_free(&b);
    kf_rng_seed(&b, 43);
    CHECK(kf_rng_next(&a) != kf_rng_next(&b));
    kf_rng_free(&b);
    /* two secret keys give different streams */
    kf_rng_seed_secret(&b);
    kf_rng c;
    kf_rng_seed_secret(&c);
    CHECK(kf_rng_next(&b) != kf_rng_next(&c));
    kf_rng_free(&b);
    kf_rng_free(&c);
    double s = 0, s2 = 0;
    int n = 200000;
    for (int i = 0; i < n; i++) {
        double x = kf_rng_normal(&a);
        s += x;
        s2 += x * x;
    }
    CHECK(fabs(s / n) < 0.02);
    CHECK(fabs(s2 / n - 1.0) < 0.02);
    /* the bulk path: the right variance, kurtosis and tails (a wrong ziggurat slow
     * path once gave kurtosis 2.8 and a tenth of the tail beyond 3.5) */
    int m = 2000000;
    float *x = malloc((size_t)m * sizeof *x);
    kf_rng_fill_normal_f32(&a, x, m, 1.0, 2.0);
    double var = 0, k4 = 0;
    int tail = 0;
    for (int i = 0; i < m; i++) {
        double z = (x[i] - 1.0) / 2.0;
        var += z * z;
        k4 += z * z * z * z;
        tail += fabs(z) > 3.5;
    }
    CHECKF(fabs(var / m - 1.0) < 0.01, "variance %g", var / m);
    CHECKF(fabs(k4 / m - 3.0) < 0.06, "kurtosis %g", k4 / m);
    CHECKF(tail > 0.0003 * m && tail < 0.0007 * m, "tail fraction %g", (double)tail / m);
    free(x);
    for (int i = 0; i < 1000; i++) {
        int64_t v = kf_rng_range(&a, -3, 5);
        CHECK(v >= -3 && v <= 5);
    }
    CHECK(kf__secret_u64() != kf__secret_u64());
    kf_rng_free(&a);
}

static void t_stats(const void *arg) {
    (void)arg;
    double base[41], cand[41];
    for (int i = 0; i < 41; i++) {
        base[i] = 2000 + (i % 7) * 3;
        cand[i] = 1000 + (i % 5) * 2;
    }
    kf_ratio q;
    kf_stats_ratio(cand, base, 41, 0.02, &q);
    CHECK(q.speedup > 1.9 && q.speedup < 2.1);
    CHECK(q.lo <= q.speedup && q.hi >= q.speedup && q.win);
    /* identical sides: no win, speedup 1 */
    kf_stats_ratio(base, base, 41, 0.02, &q);
    CHECK(fabs(q.speedup - 1) < 1e-12 && !q.win);
    /* a 1% gain does not clear a 2% floor */
    for (int i = 0; i < 41; i++) cand[i] = base[i] / 1.01;
    kf_stats_ratio(cand, base, 41, 0.02, &q);
    CHECK(!q.win);
    double x[] = {5, 1, 4, 2, 3};
    CHECK(kf_stats_median(x, 5) == 3);
}

static void t_compare(const void *arg) {
    (void)arg;
    float want[6] = {1, 2, 3, NAN, INFINITY, 0};
    float got[6] = {1, 2.0001f, 3, NAN, INFINITY, 0};
    kf_cmp c;
    kf_data_compare(KF_T_F32, got, want, 6, 1e-4, 1e-5, NULL, &c);
    CHECK(c.first_bad < 0);
    got[1] = 2.1f;
    kf_data_compare(KF_T_F32, got, want, 6, 1e-4, 1e-5, NULL, &c);
    CHECK(c.wrong == 1 && c.first_bad == 1);
    got[1] = 2;
    got[3] = 1; /* reference NaN: the candidate must be NaN too */
    kf_data_compare(KF_T_F32, got, want, 6, 1e-4, 1e-5, NULL, &c);
    CHECK(c.wrong == 1 && c.first_bad == 3);
    got[3] = NAN;
    got[0] = NAN; /* NaN where the reference is finite */
    kf_data_compare(KF_T_F32, got, want, 6, 1e-4, 1e-5, NULL, &c);
    CHECK(c.nonfinite == 1);
    got[0] = 1;
    uint64_t sent = 0;
    float sv = 3.0e38f;
    memcpy(&sent, &sv, 4);
    got[5] = sv;
    kf_data_compare(KF_T_F32, got, want, 6, 1e-4, 1e-5, &sent, &c);
    CHECK(c.unwritten == 1 && c.first_bad == 5);
    int32_t wi[3] = {1, 2, 3}, gi[3] = {1, 2, 4};
    kf_data_compare(KF_T_I32, gi, wi, 3, 0, 0, NULL, &c);
    CHECK(c.wrong == 1);
    /* a right answer that equals the sentinel is not "unwritten" (INT32_MIN from a
     * saturating add); the sentinel where the answer differs is */
    int32_t wmin[2] = {INT32_MIN, 5}, gmin[2] = {INT32_MIN, INT32_MIN};
    uint64_t s32 = (uint32_t)INT32_MIN;
    kf_data_compare(KF_T_I32, gmin, wmin, 2, 0, 0, &s32, &c);
    CHECK(c.unwritten == 1 && c.first[KF_CMP_UNWRITTEN] == 1 && c.wrong == 0);
    int64_t w64 = INT64_MAX - 3, g64 = INT64_MAX - 2; /* exact, beyond 2^53 */
    kf_data_compare(KF_T_I64, &g64, &w64, 1, 0, 0, NULL, &c);
    CHECK(c.wrong == 1 && c.igot == INT64_MAX - 2 && c.iwant == INT64_MAX - 3);
}

/* Large buffers: a marginal element (inside the tolerance, outside half of it) does not
 * hide later failures, the per-chunk results on several threads merge into the
 * single-pass answer, and 16-bit types take the same path. */
static void t_compare_large(const void *arg) {
    (void)arg;
    const int64_t n = 3 * (1 << 20) + 17;
    float *w = malloc((size_t)n * 4), *g = malloc((size_t)n * 4);
    uint16_t *w16 = malloc((size_t)n * 2), *g16 = malloc((size_t)n * 2);
    CHECK(w && g && w16 && g16);
    for (int64_t i = 0; i < n; i++) w[i] = (float)((i % 1000) - 500) * 0.25f + 0.125f;
    memcpy(g, w, (size_t)n * 4);
    g[10] = w[10] * (1 + 0.8e-4f); /* marginal: right */
    g[2500001] = w[2500001] + 1;   /* wrong */
    g[2600000] = NAN;              /* nonfinite */
    uint64_t sent = 0;
    float sv = 3.0e38f;
    memcpy(&sent, &sv, 4);
    g[n - 5] = sv; /* unwritten */
    for (int threads = 1; threads <= 4; threads += 3) {
        kf__set_nthreads(threads);
        kf_cmp c;
        kf_data_compare(KF_T_F32, g, w, n, 1e-4, 1e-6, &sent, &c);
        CHECKF(c.wrong == 1 && c.first[KF_CMP_WRONG] == 2500001, "threads %d: wrong %lld at %lld", threads,
               (long long)c.wrong, (long long)c.first[KF_CMP_WRONG]);
        CHECK(c.nonfinite == 1 && c.first[KF_CMP_NONFINITE] == 2600000);
        CHECK(c.unwritten == 1 && c.first[KF_CMP_UNWRITTEN] == n - 5);
        CHECK(c.first_bad == 2500001 && c.got[KF_CMP_WRONG] == w[2500001] + 1);
    }
    /* bf16 and f16: the same values are exact in both (multiples of 1/8 below 64) */
    for (int ty = 0; ty < 2; ty++) {
        kf_dtype dt = ty ? KF_T_F16 : KF_T_BF16;
        for (int64_t i = 0; i < n; i++) {
            float v = (float)((i % 200) - 100) * 0.125f;
            uint32_t b;
            memcpy(&b, &v, 4);
            w16[i] = ty ? (uint16_t)(((b >> 16) & 0x8000) |
                                     (v == 0 ? 0 : ((((b >> 23) & 0xff) - 112) << 10) | ((b >> 13) & 0x3ff)))
                        : (uint16_t)(b >> 16);
        }
        memcpy(g16, w16, (size_t)n * 2);
        g16[3000000] ^= 0x0200; /* wrong */
        uint64_t s16 = 0x7bff;  /* f16 max / a large bf16: never a right answer here */
        g16[7] = (uint16_t)s16; /* unwritten, early */
        for (int threads = 1; threads <= 4; threads += 3) {
            kf__set_nthreads(threads);
            kf_cmp c;
            kf_data_compare(dt, g16, w16, n, 1e-2, 1e-3, &s16, &c);
            CHECKF(c.unwritten == 1 && c.first[KF_CMP_UNWRITTEN] == 7, "%s: unwritten %lld",
                   ty ? "f16" : "bf16", (long long)c.unwritten);
            CHECKF(c.wrong == 1 && c.first[KF_CMP_WRONG] == 3000000, "%s: wrong %lld at %lld",
                   ty ? "f16" : "bf16", (long long)c.wrong, (long long)c.first[KF_CMP_WRONG]);
            CHECK(kf_data_get(dt, w16, 3000000) == (float)((3000000 % 200) - 100) * 0.125f);
        }
    }
    kf__set_nthreads(0);
    free(w);
    free(g);
    free(w16);
    free(g16);
}

/* Where the reference is +-Inf, only the same Inf is right: the fast path must not let
 * 0, a finite value or the opposite Inf through (found by a red-team review: a block of
 * 256 with Inf in the reference passed "|g - w| <= atol + rtol*|w|" as Inf <= Inf). */
static void t_compare_inf(const void *arg) {
    (void)arg;
    const int64_t n = 1024;
    float w[1024], g[1024];
    uint16_t w16[1024], g16[1024];
    for (int64_t i = 0; i < n; i++) w[i] = g[i] = 1.0f + (float)(i % 7);
    const float bad[3] = {0.0f, 123.0f, -INFINITY};
    for (int b = 0; b < 3; b++) {
        memcpy(g, w, sizeof g);
        w[300] = INFINITY, g[300] = bad[b];
        w[800] = -INFINITY, g[800] = -INFINITY; /* right (another block) */
        kf_cmp c;
        kf_data_compare(KF_T_F32, g, w, n, 1e-4, 1e-5, NULL, &c);
        CHECKF(c.wrong == 1 && c.first[KF_CMP_WRONG] == 300, "f32, candidate %g: wrong %lld", bad[b],
               (long long)c.wrong);
        CHECK(kf_data_same(KF_T_F32, g, w, n, 0, 1e-4, 1e-5) == 0);
        w[300] = 1.0f;
        w[800] = 1.0f;
    }
    /* bf16 and f16: +Inf is 0x7f80 / 0x7c00 */
    for (int ty = 0; ty < 2; ty++) {
        kf_dtype dt = ty ? KF_T_F16 : KF_T_BF16;
        uint16_t one = ty ? 0x3c00 : 0x3f80, inf = ty ? 0x7c00 : 0x7f80;
        for (int64_t i = 0; i < n; i++) w16[i] = g16[i] = one;
        w16[700] = inf;
        g16[700] = 0; /* zero where the reference is +Inf */
        kf_cmp c;
        kf_data_compare(dt, g16, w16, n, 1e-2, 1e-3, NULL, &c);
        CHECKF(c.wrong == 1 && c.first[KF_CMP_WRONG] == 700, "%s: wrong %lld", ty ? "f16" : "bf16",
               (long long)c.wrong);
    }
}

/* Under an exact tolerance a float output is compared bit for bit: -0.0 for +0.0 and
 * another NaN are wrong (0 == -0 and "both NaN" passed before), on the fast blocks and the
 * tail alike; with any tolerance they are not. */
static void t_compare_bits(const void *arg) {
    (void)arg;
    enum { N = 1000 }; /* three full blocks and a tail */
    float w[N], g[N];
    for (int i = 0; i < N; i++) w[i] = (float)(i % 13) - 6.0f;
    w[100] = -0.0f, w[990] = -0.0f;
    uint32_t qnan = 0xffc00000u, cnan = 0x7fc00000u;
    memcpy(&w[500], &qnan, 4);
    memcpy(g, w, sizeof g);
    kf_cmp c;
    kf_data_compare(KF_T_F32, g, w, N, 0, 0, NULL, &c);
    CHECK(c.first_bad < 0 && c.bitwise);
    for (int at = 0; at < 2; at++) {
        memcpy(g, w, sizeof g);
        int k = at ? 990 : 100; /* a full block, then the tail */
        g[k] = 0.0f;
        kf_data_compare(KF_T_F32, g, w, N, 0, 0, NULL, &c);
        CHECKF(c.wrong == 1 && c.first[KF_CMP_WRONG] == k && c.gbits == 0 && c.wbits == 0x80000000u,
               "+0 for -0 at %d: wrong %lld", k, (long long)c.wrong);
        kf_data_compare(KF_T_F32, g, w, N, 1e-6, 0, NULL, &c);
        CHECK(c.first_bad < 0 && !c.bitwise); /* a tolerance: values, not bits */
    }
    memcpy(g, w, sizeof g);
    memcpy(&g[500], &cnan, 4);
    kf_data_compare(KF_T_F32, g, w, N, 0, 0, NULL, &c);
    CHECK(c.wrong == 1 && c.first[KF_CMP_WRONG] == 500 && c.gbits == cnan && c.wbits == qnan);
    CHECK(kf_data_same(KF_T_F32, g, w, N, 0, 0, 0) == 0);
    double wd[2] = {1.5, -0.0}, gd[2] = {1.5, 0.0};
    kf_data_compare(KF_T_F64, gd, wd, 2, 0, 0, NULL, &c);
    CHECK(c.wrong == 1 && c.wbits == 0x8000000000000000ull);
    uint16_t wb[300], gb[300]; /* bf16: -0 is 0x8000 */
    for (int i = 0; i < 300; i++) wb[i] = gb[i] = 0x3f80;
    wb[7] = 0x8000, gb[7] = 0x0000;
    kf_data_compare(KF_T_BF16, gb, wb, 300, 0, 0, NULL, &c);
    CHECK(c.wrong == 1 && c.first[KF_CMP_WRONG] == 7 && c.wbits == 0x8000);
    /* the sentinel is still "unwritten", not a bit difference */
    uint64_t sent = 0;
    float sv = 3.0e38f;
    memcpy(&sent, &sv, 4);
    memcpy(g, w, sizeof g);
    g[3] = sv;
    kf_data_compare(KF_T_F32, g, w, N, 0, 0, &sent, &c);
    CHECK(c.unwritten == 1 && c.wrong == 0);
}

/* The magnitude term, on a constructed cancellation: each output sums 256 terms of size
 * ~1 to nearly nothing. A float sum in another order than the reference's (honest) is
 * off by ~1e-6 of the terms' magnitude M: far outside atol + rtol*|ref| where |ref| is
 * tiny, inside mtol*M. A sum that drops one term (wrong) stays outside. */
static void t_compare_magnitude(const void *arg) {
    (void)arg;
    enum { N = 1000, K = 256 };
    static float want[N], got[N], bad[N], mag[N];
    kf_rng r;
    CHECK(kf_rng_seed(&r, 11) == 0);
    for (int i = 0; i < N; i++) {
        float t[K];
        double s = 0, m = 0;
        for (int j = 0; j < K - 1; j++) t[j] = (float)kf_rng_normal(&r), s += t[j];
        t[K - 1] = (float)(-s + 1e-4 * kf_rng_normal(&r)); /* cancels the rest */
        s = 0;
        for (int j = 0; j < K; j++) s += t[j], m += fabs(t[j]);
        float f = 0, fb = 0;
        for (int j = K - 1; j >= 0; j--) f += t[j];
        for (int j = 0; j < K - 1; j++) fb += t[j]; /* one term dropped */
        want[i] = (float)s, got[i] = f, bad[i] = fb, mag[i] = (float)m;
    }
    kf_rng_free(&r);
    kf_cmp c;
    kf_data_compare(KF_T_F32, got, want, N, 1e-4, 1e-7, NULL, &c);
    CHECKF(c.wrong > N / 10, "the honest sum passed |ref|'s bound: %lld wrong", (long long)c.wrong);
    for (int threads = 1; threads <= 4; threads += 3) {
        kf__set_nthreads(threads);
        kf_data_compare_mag(KF_T_F32, got, want, mag, N, 1e-4, 1e-7, 1e-5, NULL, &c);
        CHECKF(c.first_bad < 0,
               "honest sum rejected under the magnitude bound: %lld wrong, first %lld: %g vs %g",
               (long long)c.wrong, (long long)c.first_bad, c.got[KF_CMP_WRONG], c.want[KF_CMP_WRONG]);
        kf_data_compare_mag(KF_T_F32, bad, want, mag, N, 1e-4, 1e-7, 1e-5, NULL, &c);
        CHECKF(c.wrong == N, "a dropped term passed: %lld of %d wrong", (long long)c.wrong, N);
    }
    kf__set_nthreads(0);
    CHECK(kf_data_same_mag(KF_T_F32, got, want, mag, N, 0, 1e-4, 1e-7, 1e-5) == 1);
    CHECK(kf_data_same_mag(KF_T_F32, got, want, mag, N, 0, 1e-4, 1e-7, 0) == 0);
    /* a non-finite magnitude counts as 0, never as an infinite bound */
    float inf = INFINITY;
    float m1[N];
    for (int i = 0; i < N; i++) m1[i] = inf;
    kf_data_compare_mag(KF_T_F32, bad, want, m1, N, 1e-4, 1e-7, 1e-5, NULL, &c);
    CHECK(c.wrong == N);
    /* the magnitude run's inputs: |x| exactly for floats, integers as they are */
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = kft_task(ctx, "tasks/c/sgemm");
    kf_shape sh = t->shapes[1];
    kf_extents ex;
    char err[256];
    CHECK(kf_data_extents(t, &sh, &ex, err, sizeof err) == 0);
    kf_inputs in, ab;
    CHECK(kf_rng_seed(&r, 5) == 0);
    CHECK(kf_data_gen_inputs(t, &ex, &r, 1, &in) == 0);
    CHECK(kf_data_abs_inputs(t, &ex, &in, &ab) == 0);
    int neg = 0;
    for (int64_t k = 0; k < ex.count[0]; k++) {
        float x = ((float *)in.buf[0])[k], y = ((float *)ab.buf[0])[k];
        neg += signbit(x) != 0;
        CHECK(!signbit(y) && fabsf(x) == y);
    }
    CHECK(neg > 0);
    CHECK(kf_task_has_mtol(t) && kf_task_mtol(t, &t->args[2]) == 1e-5);
    kf_data_free_inputs(t, &in);
    kf_data_free_inputs(t, &ab);
    kf_rng_free(&r);
    kf_task_free(t);
    kf_ctx_free(ctx);
}

/* A determinism pair's second poison differs from the first in every mantissa bit of
 * the sentinel and every guard byte, and stays a huge finite sentinel: a kernel branching
 * on any one bit of its output's leftover value takes both branches across the pair. */
static void t_flip_poison(const void *arg) {
    (void)arg;
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = kft_task(ctx, "tasks/c/softmax");
    int out = -1;
    for (int i = 0; i < t->nargs; i++)
        if (t->args[i].is_buffer && t->args[i].io == KF_IO_OUT) out = i;
    CHECK(out >= 0 && t->args[out].type == KF_T_F32);
    kf_rng r;
    kf_rng_seed(&r, 7);
    for (int k = 0; k < 200; k++) {
        kf_poison a, b;
        kf_data_make_poison(t, &r, &a);
        kf_data_flip_poison(t, &a, &b);
        uint32_t x = (uint32_t)a.sentinel[out], y = (uint32_t)b.sentinel[out];
        CHECKF((x ^ y) == 0x7FFFFFu, "%08x vs %08x", x, y);
        float fy;
        memcpy(&fy, &y, 4);
        CHECKF(isfinite(fy) && fabsf(fy) >= 0x1p124f, "%g", (double)fy);
        for (size_t g = 0; g < sizeof a.guard; g++) CHECK((unsigned char)(a.guard[g] ^ b.guard[g]) == 0xFF);
    }
    kf_rng_free(&r);
    kf_task_free(t);
    kf_ctx_free(ctx);
}

/* The data path's helper threads run on every CPU the process may use, even when the
 * calling thread is pinned to one (bench pins its coordinating thread while timing). */
static _Atomic int widest;
static void note_cpus(void *arg, int64_t i) {
    (void)arg;
    (void)i;
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int c = CPU_COUNT(&set), w = atomic_load(&widest);
        while (c > w && !atomic_compare_exchange_weak(&widest, &w, c)) {
        }
    }
    usleep(1000);
}

static void t_parallel_unpinned(const void *arg) {
    (void)arg;
    cpu_set_t all, one;
    CHECK(sched_getaffinity(0, sizeof all, &all) == 0);
    if (CPU_COUNT(&all) < 2) kft_skip("needs 2 CPUs");
    int first = -1;
    for (int c = 0; c < CPU_SETSIZE && first < 0; c++)
        if (CPU_ISSET(c, &all)) first = c;
    CPU_ZERO(&one);
    CPU_SET(first, &one);
    CHECK(sched_setaffinity(0, sizeof one, &one) == 0);
    kf__set_nthreads(2);
    atomic_store(&widest, 0);
    kf__parallel(16, note_cpus, NULL);
    kf__set_nthreads(0);
    sched_setaffinity(0, sizeof all, &all);
    CHECKF(atomic_load(&widest) == CPU_COUNT(&all), "helper threads ran on %d of %d CPUs",
           atomic_load(&widest), CPU_COUNT(&all));
}

/* Inputs drawn from one seed are the same whatever the number of threads. */
static void t_inputs_threads(const void *arg) {
    (void)arg;
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = kft_task(ctx, "tasks/c/sum");
    kf_shape sh = {(int64_t[]){3 * (1 << 20) + 5}, KF_SHAPE_VISIBLE, 0};
    kf_extents ex;
    char err[256];
    CHECK(kf_data_extents(t, &sh, &ex, err, sizeof err) == 0);
    kf_inputs a, b;
    kf_rng r;
    kf__set_nthreads(1);
    kf_rng_seed(&r, 42);
    CHECK(kf_data_gen_inputs(t, &ex, &r, 1, &a) == 0);
    kf_rng_free(&r);
    kf__set_nthreads(4);
    kf_rng_seed(&r, 42);
    CHECK(kf_data_gen_inputs(t, &ex, &r, 1, &b) == 0);
    kf_rng_free(&r);
    kf__set_nthreads(0);
    CHECK(memcmp(a.buf[0], b.buf[0], ex.bytes[0]) == 0);
    /* and the chunks are not copies of each other */
    CHECK(memcmp(a.buf[0], (char *)a.buf[0] + (4 << 20), 4096) != 0);
    kf_data_free_inputs(t, &a);
    kf_data_free_inputs(t, &b);
    kf_task_free(t);
    kf_ctx_free(ctx);
}

/* The sentinel is finite, out of range, and changes between calls. */
static void t_poison(const void *arg) {
    (void)arg;
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = kft_task(ctx, "tasks/c/saxpy");
    kf_rng r;
    kf_rng_seed(&r, 1);
    kf_poison p1, p2;
    kf_data_make_poison(t, &r, &p1);
    kf_data_make_poison(t, &r, &p2);
    float f1, f2;
    memcpy(&f1, &p1.sentinel[2], 4);
    memcpy(&f2, &p2.sentinel[2], 4);
    CHECK(isfinite(f1) && isfinite(f2) && fabsf(f1) > 1e36f && fabsf(f2) > 1e36f);
    CHECK(f1 != f2);
    CHECK(memcmp(p1.guard, p2.guard, KF_GUARD_BYTES) != 0);
    kf_rng_free(&r);
    kf_task_free(t);
    kf_ctx_free(ctx);
}

/* The split layout puts inputs in the read-only region with guards of their own; what
 * an earlier call used outside the current span is poisoned and a change to it is found,
 * whether a later staging reuses it or the final verification reads it; bytes the next
 * call stages are forgotten, not reported; many small calls coalesce without losing any
 * byte. */
/* Ranges of tens of megabytes are poisoned and checked in chunks on several threads:
 * every byte gets the pattern, and of two changes the lower one is reported, whichever
 * chunk finishes first. */
static void t_spent_large(const void *arg) {
    (void)arg;
    size_t bytes = ((size_t)40 << 20) + 12345;
    unsigned char *arena = malloc(bytes);
    CHECK(arena != NULL);
    if (!arena) return;
    kf_spent sp;
    CHECK(kf_data_spent_init(&sp) == 0);
    kf_data_spent_unused(&sp, arena, bytes);
    int bad = 0;
    for (size_t i = 0; i < bytes; i++) bad |= arena[i] != sp.pat[i % KF_SPENT_PAT];
    CHECK(bad == 0);
    CHECK(kf_data_spent_check(&sp, arena) == 0);
    size_t lo = (size_t)13 << 20, late = (size_t)37 << 20;
    arena[late] ^= 1;
    arena[lo + 5] ^= 0x40;
    CHECK(kf_data_spent_check(&sp, arena) == 1 && sp.bad_at == lo + 5 && sp.bad_range.arg == -3);
    kf_spent s2;
    CHECK(kf_data_spent_init(&s2) == 0);
    kf_data_spent_unused(&s2, arena, bytes);
    arena[bytes - 1] ^= 1; /* the last byte of the last, short chunk */
    CHECK(kf_data_spent_check(&s2, arena) == 1 && s2.bad_at == bytes - 1);
    free(arena);
}

/* The input check compares large buffers in chunks on several threads: a change in any
 * chunk, the last short one included, is found; an untouched copy passes. */
static void t_inputs_check_large(const void *arg) {
    (void)arg;
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = kft_task(ctx, "tasks/c/sum");
    kf_shape sh = {(int64_t[]){(1 << 23) + 77}, KF_SHAPE_VISIBLE, 0};
    kf_extents ex;
    char err[256];
    CHECK(kf_data_extents(t, &sh, &ex, err, sizeof err) == 0);
    kf_rng r;
    kf_rng_seed(&r, 3);
    kf_inputs in;
    CHECK(kf_data_gen_inputs(t, &ex, &r, 0, &in) == 0);
    kf_layout lay;
    kf_data_layout(t, &ex, 0, &lay);
    unsigned char *arena = malloc(kf_data_layout_size(t, &ex));
    kf_poison p;
    kf_data_make_poison(t, &r, &p);
    kf_data_stage(t, &ex, &lay, &in, &p, arena);
    CHECK(kf_data_check_inputs(t, &ex, &lay, &in, arena) == -1);
    size_t at[] = {0, (size_t)5 << 20, ex.bytes[0] - 1};
    for (int k = 0; k < 3; k++) {
        arena[lay.off[0] + at[k]] ^= 0x01;
        CHECK(kf_data_check_inputs(t, &ex, &lay, &in, arena) == 0);
        arena[lay.off[0] + at[k]] ^= 0x01;
    }
    CHECK(kf_data_check_inputs(t, &ex, &lay, &in, arena) == -1);
    free(arena);
    kf_data_free_inputs(t, &in);
    kf_rng_free(&r);
    kf_task_free(t);
    kf_ctx_free(ctx);
}

static void t_spent_regions(const void *arg) {
    (void)arg;
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = kft_task(ctx, "tasks/c/saxpy");
    kf_shape sh = {(int64_t[]){1001}, KF_SHAPE_VISIBLE, 0};
    kf_extents ex;
    char err[256];
    CHECK(kf_data_extents(t, &sh, &ex, err, sizeof err) == 0);
    size_t half = kf_data_layout_size(t, &ex) + 4096, A = 4 * half;
    unsigned char *arena = calloc(1, 2 * A);
    kf_layout l0, l1, l2;
    kf_data_layout_split(t, &ex, 0, A, &l0);
    kf_data_layout_split(t, &ex, half, A, &l1);
    CHECK(l0.off[0] >= A && l0.off[1] >= A && l0.off[2] < A); /* x, y read-only; z not */
    CHECK(l0.nguards == 2 && l0.nro_guards == 3 && l0.end <= half && l0.ro_lo == A);
    kf_spent sp;
    CHECK(kf_data_spent_init(&sp) == 0);
    kf_data_spent_retire(&sp, &l0, arena); /* call 1 in half 0 */
    kf_data_spent_retire(&sp, &l1, arena); /* call 2 in half 1: half 0 poisoned */
    CHECK(sp.n >= 3 && kf_data_spent_check(&sp, arena) == 0);
    arena[l0.off[2] + 40] ^= 1;               /* z[10] of call 1, during call 2 */
    kf_data_layout_split(t, &ex, 64, A, &l2); /* call 3 back in half 0: found as it is reused */
    kf_data_spent_retire(&sp, &l2, arena);
    CHECK(sp.bad == 1 && sp.bad_range.arg == 2 && sp.bad_range.call == 1 && sp.bad_at == l0.off[2] + 40);
    CHECK(sp.bad_at - sp.bad_range.base == 40);
    /* a change in what the next call stages over, found, not lost; one outside, at the end */
    kf_spent s2;
    CHECK(kf_data_spent_init(&s2) == 0);
    kf_data_spent_retire(&s2, &l0, arena);
    kf_data_spent_retire(&s2, &l1, arena);
    arena[l0.lo + 3] ^= 0x10; /* the first guard of call 1 */
    CHECK(kf_data_spent_check(&s2, arena) == 1 && s2.bad_range.arg == -1);
    /* a byte outside every earlier span is not covered (and not reported) */
    kf_spent s3;
    CHECK(kf_data_spent_init(&s3) == 0);
    kf_data_spent_retire(&s3, &l0, arena);
    kf_data_spent_retire(&s3, &l1, arena);
    arena[3 * half + 5] ^= 1;
    CHECK(kf_data_spent_check(&s3, arena) == 0);
    /* 300 tiny calls on disjoint islands: the ranges coalesce (closest gaps poisoned
     * too), and every earlier call's bytes stay covered */
    kf_shape one = {(int64_t[]){1}, KF_SHAPE_VISIBLE, 0};
    kf_extents e1;
    CHECK(kf_data_extents(t, &one, &e1, err, sizeof err) == 0);
    size_t B = 301 * 4096;
    unsigned char *big = calloc(1, 2 * B);
    kf_spent s4;
    CHECK(kf_data_spent_init(&s4) == 0);
    size_t zoff[300];
    for (int k = 0; k < 300; k++) {
        kf_layout lk;
        kf_data_layout_split(t, &e1, (size_t)(k * 37 % 300) * 4096, B, &lk);
        zoff[k] = lk.off[2];
        kf_data_spent_retire(&s4, &lk, big);
    }
    CHECK(s4.n <= KF_SPENT_MAX && s4.bad == 0 && kf_data_spent_check(&s4, big) == 0);
    int missed = 0;
    for (int k = 0; k < 299; k++) {
        int in = 0;
        for (int i = 0; i < s4.n; i++) in |= s4.r[i].lo <= zoff[k] && zoff[k] + 4 <= s4.r[i].hi;
        missed += !in;
    }
    CHECK(missed == 0);
    big[zoff[10]] ^= 1;
    CHECK(kf_data_spent_check(&s4, big) == 1);
    free(big);
    free(arena);
    kf_task_free(t);
    kf_ctx_free(ctx);
}

/* Guards detect a one-element overrun and underrun; inputs detect one changed bit. */
static void t_guards(const void *arg) {
    (void)arg;
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = kft_task(ctx, "tasks/c/saxpy");
    kf_shape sh = {(int64_t[]){1001}, KF_SHAPE_VISIBLE, 0};
    kf_extents ex;
    char err[256];
    CHECK(kf_data_extents(t, &sh, &ex, err, sizeof err) == 0);
    CHECK(ex.count[0] == 1001 && ex.bytes[2] == 4004);
    size_t size = kf_data_layout_size(t, &ex);
    unsigned char *arena = calloc(1, size + 4096);
    kf_layout lay;
    kf_data_layout(t, &ex, 64, &lay);
    CHECK(lay.off[0] % KF_ALIGN == 0 && lay.end <= size + 64);
    kf_rng r;
    kf_rng_seed(&r, 7);
    kf_inputs in;
    CHECK(kf_data_gen_inputs(t, &ex, &r, 1, &in) == 0);
    kf_poison p;
    kf_data_make_poison(t, &r, &p);
    kf_data_stage(t, &ex, &lay, &in, &p, arena);
    CHECK(kf_data_check_guards(t, &lay, &p, arena) == -1);
    CHECK(kf_data_check_inputs(t, &ex, &lay, &in, arena) == -1);
    arena[lay.off[2] + 4004] ^= 1; /* z[n] */
    CHECK(kf_data_check_guards(t, &lay, &p, arena) == t->nargs);
    arena[lay.off[2] + 4004] ^= 1;
    arena[lay.off[2] - 1] ^= 0x80; /* z[-1] */
    CHECK(kf_data_check_guards(t, &lay, &p, arena) == 2);
    arena[lay.off[2] - 1] ^= 0x80;
    arena[lay.off[1] + 17] ^= 4; /* one bit of y */
    CHECK(kf_data_check_inputs(t, &ex, &lay, &in, arena) == 1);
    kf_data_free_inputs(t, &in);
    kf_rng_free(&r);
    free(arena);
    kf_task_free(t);
    kf_ctx_free(ctx);
}

/* Fresh inputs are never all zero, and differ between calls. */
static void t_inputs_fresh(const void *arg) {
    (void)arg;
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = kft_task(ctx, "tasks/c/sum");
    kf_shape sh = {(int64_t[]){4096}, KF_SHAPE_VISIBLE, 0};
    kf_extents ex;
    char err[256];
    CHECK(kf_data_extents(t, &sh, &ex, err, sizeof err) == 0);
    kf_rng r;
    kf_rng_seed_secret(&r);
    kf_inputs a, b;
    CHECK(kf_data_gen_inputs(t, &ex, &r, 0, &a) == 0 && kf_data_gen_inputs(t, &ex, &r, 0, &b) == 0);
    CHECK(memcmp(a.buf[0], b.buf[0], ex.bytes[0]) != 0);
    int nonzero = 0;
    for (int i = 0; i < 4096; i++) nonzero += ((float *)a.buf[0])[i] != 0;
    CHECK(nonzero > 4000);
    kf_data_free_inputs(t, &a);
    kf_data_free_inputs(t, &b);
    kf_rng_free(&r);
    kf_task_free(t);
    kf_ctx_free(ctx);
}

/* A draw into the buffers of an earlier one (bench's rounds) gives the bytes a fresh
 * draw gives, every variant and flavour, whatever the buffers held: nothing of the
 * earlier round survives. */
static void t_inputs_regen(const void *arg) {
    (void)arg;
    kf_ctx *ctx = kf_ctx_new();
    const char *tasks[] = {"tasks/c/softmax", "tasks/cuda/bgemm", "tasks/c/sum"};
    for (int ti = 0; ti < 3; ti++) {
        kf_task *t = kft_task(ctx, tasks[ti]);
        if (!t) continue;
        kf_extents ex;
        char err[256];
        CHECK(kf_data_extents(t, &t->shapes[t->nshapes - 1], &ex, err, sizeof err) == 0);
        kf_rng r1, r2;
        kf_rng_seed(&r1, 11);
        kf_rng_seed(&r2, 11);
        kf_inputs keep;
        memset(&keep, 0, sizeof keep);
        for (int r = 0; r < 18; r++) {
            static const int flav[3] = {0, KF_DATA_OFFSET, KF_DATA_MIXED};
            int variant = r % 3 | flav[(r / 3) % 3] | KF_DATA_CLASS((r / 9) % 4);
            kf_inputs fresh;
            CHECK(kf_data_gen_inputs(t, &ex, &r1, variant, &fresh) == 0);
            for (int i = 0; i < t->nargs; i++)
                if (keep.buf[i]) memset(keep.buf[i], 0x5a, ex.bytes[i]);
            CHECK(kf_data_regen_inputs(t, &ex, &r2, variant, &keep) == 0);
            for (int i = 0; i < t->nargs; i++) {
                CHECK((fresh.buf[i] == NULL) == (keep.buf[i] == NULL));
                if (fresh.buf[i] && keep.buf[i]) CHECK(memcmp(fresh.buf[i], keep.buf[i], ex.bytes[i]) == 0);
            }
            kf_data_free_inputs(t, &fresh);
        }
        kf_data_free_inputs(t, &keep);
        kf_rng_free(&r1);
        kf_rng_free(&r2);
        kf_task_free(t);
    }
    kf_ctx_free(ctx);
}

/* Uniform inputs never leave [lo, hi], in any variant (a kernel may rely on its
 * domain); normal inputs do get spikes. */
/* The flavours: an offset moves a normal input's mean into its class's band of standard
 * deviations (either sign) and leaves bounded inputs alone; mixed scales give each row and
 * column its own power of two (rows far apart in size, every element a power-of-two
 * multiple of a plain draw's spread); neither touches a uniform input. */
static void t_inputs_flavours(const void *arg) {
    (void)arg;
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = kft_task(ctx, "tasks/c/rmsnorm"); /* x normal(0,3), w uniform(0.5,1.5) */
    kf_shape sh = {(int64_t[]){64, 1000}, KF_SHAPE_VISIBLE, 0};
    kf_extents ex;
    char err[256];
    CHECK(kf_data_extents(t, &sh, &ex, err, sizeof err) == 0);
    kf_rng r;
    kf_rng_seed_secret(&r);
    int signs[2] = {0, 0};
    for (int cls = 0; cls < 4; cls++)
        for (int rep = 0; rep < 8; rep++) {
            kf_inputs in;
            CHECK(kf_data_gen_inputs(t, &ex, &r, 0 | KF_DATA_OFFSET | KF_DATA_CLASS(cls), &in) == 0);
            const float *x = in.buf[0], *w = in.buf[1];
            double sum = 0, sq = 0;
            for (int k = 0; k < 64000; k++) sum += x[k];
            double mean = sum / 64000;
            for (int k = 0; k < 64000; k++) sq += (x[k] - mean) * (x[k] - mean);
            double sd = sqrt(sq / 64000), m = fabs(mean) / 3;
            CHECKF(fabs(sd - 3) < 0.1, "class %d: std %g", cls, sd);
            CHECKF(m >= ldexp(1, 3 + cls) * 0.99 && m <= ldexp(1, 4 + cls) * 1.01, "class %d: mean %g std",
                   cls, m);
            signs[mean > 0]++;
            for (int k = 0; k < 1000; k++) CHECKF(w[k] >= 0.5f && w[k] <= 1.5f, "w = %g", w[k]);
            kf_data_free_inputs(t, &in);
        }
    CHECK(signs[0] > 0 && signs[1] > 0);
    for (int rep = 0; rep < 8; rep++) {
        kf_inputs in;
        CHECK(kf_data_gen_inputs(t, &ex, &r, 2 | KF_DATA_MIXED, &in) == 0);
        const float *x = in.buf[0], *w = in.buf[1];
        double lo = INFINITY, hi = 0;
        for (int row = 0; row < 64; row++) {
            double ss = 0;
            for (int c = 0; c < 1000; c++) ss += (double)x[row * 1000 + c] * x[row * 1000 + c];
            if (ss > 0) lo = fmin(lo, ss), hi = fmax(hi, ss);
        }
        CHECKF(hi / lo > 256, "row energies within %g of each other", hi / lo); /* 2^4 in scale */
        double cmax = 0, cmin = INFINITY; /* per column: the largest |x| down the column */
        for (int c = 0; c < 1000; c++) {
            double m = 0;
            for (int row = 0; row < 64; row++) m = fmax(m, fabs(x[row * 1000 + c]));
            if (m > 0) cmin = fmin(cmin, m), cmax = fmax(cmax, m);
        }
        CHECKF(cmax / cmin > 64, "column maxima within %g of each other", cmax / cmin);
        for (int k = 0; k < 1000; k++) CHECKF(w[k] >= 0.5f && w[k] <= 1.5f, "w = %g", w[k]);
        kf_data_free_inputs(t, &in);
    }
    kf_rng_free(&r);
    kf_task_free(t);
    kf_ctx_free(ctx);
}

static void t_inputs_bounds(const void *arg) {
    (void)arg;
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = kft_task(ctx, "tasks/c/rmsnorm"); /* x normal(0,3), w uniform(0.5,1.5) */
    kf_shape sh = {(int64_t[]){64, 1000}, KF_SHAPE_VISIBLE, 0};
    kf_extents ex;
    char err[256];
    CHECK(kf_data_extents(t, &sh, &ex, err, sizeof err) == 0);
    kf_rng r;
    kf_rng_seed_secret(&r);
    double xmax[3] = {0, 0, 0};
    for (int variant = 0; variant < 3; variant++)
        for (int rep = 0; rep < 20; rep++) {
            kf_inputs in;
            CHECK(kf_data_gen_inputs(t, &ex, &r, variant, &in) == 0);
            const float *w = in.buf[1], *x = in.buf[0];
            for (int k = 0; k < 1000; k++) CHECKF(w[k] >= 0.5f && w[k] <= 1.5f, "w = %g", w[k]);
            for (int k = 0; k < 64000; k++) xmax[variant] = fmax(xmax[variant], fabs(x[k]));
            kf_data_free_inputs(t, &in);
        }
    CHECK(xmax[1] > 3 * 3 * 8); /* spikes: well beyond 8 sigma */
    /* variant 2 has exact zeros (a whole row of x), never an all-zero buffer */
    for (int rep = 0; rep < 5; rep++) {
        kf_inputs in;
        CHECK(kf_data_gen_inputs(t, &ex, &r, 2, &in) == 0);
        const float *x = in.buf[0];
        int zeros = 0, zrow = 0;
        for (int k = 0; k < 64000; k++) zeros += x[k] == 0.0f;
        for (int row = 0; row < 64 && !zrow; row++) {
            int all = 1;
            for (int c = 0; c < 1000; c++) all &= x[row * 1000 + c] == 0.0f;
            zrow |= all;
        }
        CHECK(zrow && zeros < 64000);
        kf_data_free_inputs(t, &in);
    }
    kf_shape one = {(int64_t[]){1, 1}, KF_SHAPE_VISIBLE, 0};
    kf_extents ex1;
    CHECK(kf_data_extents(t, &one, &ex1, err, sizeof err) == 0);
    for (int rep = 0; rep < 50; rep++) {
        kf_inputs in;
        CHECK(kf_data_gen_inputs(t, &ex1, &r, 2, &in) == 0);
        CHECK(((float *)in.buf[0])[0] != 0.0f);
        kf_data_free_inputs(t, &in);
    }
    kf_rng_free(&r);
    kf_task_free(t);
    kf_ctx_free(ctx);
}

void kft_register_unit(void) {
    kft_add("unit/inputs_bounds", t_inputs_bounds, NULL, 10);
    kft_add("unit/inputs_flavours", t_inputs_flavours, NULL, 20);
    kft_add("unit/expr_values", t_expr_values, NULL, 10);
    kft_add("unit/expr_errors", t_expr_errors, NULL, 10);
    kft_add("unit/rng", t_rng, NULL, 10);
    kft_add("unit/stats", t_stats, NULL, 10);
    kft_add("unit/compare", t_compare, NULL, 10);
    kft_add("unit/compare_large", t_compare_large, NULL, 30);
    kft_add("unit/compare_inf", t_compare_inf, NULL, 10);
    kft_add("unit/compare_bits", t_compare_bits, NULL, 10);
    kft_add("unit/compare_magnitude", t_compare_magnitude, NULL, 10);
    kft_add("unit/inputs_threads", t_inputs_threads, NULL, 30);
    kft_add("unit/parallel_unpinned", t_parallel_unpinned, NULL, 30);
    kft_add("unit/flip_poison", t_flip_poison, NULL, 30);
    kft_add("unit/poison", t_poison, NULL, 10);
    kft_add("unit/guards", t_guards, NULL, 10);
    kft_add("unit/spent_regions", t_spent_regions, NULL, 10);
    kft_add("unit/spent_large", t_spent_large, NULL, 20);
    kft_add("unit/inputs_check_large", t_inputs_check_large, NULL, 20);
    kft_add("unit/inputs_fresh", t_inputs_fresh, NULL, 10);
    kft_add("unit/inputs_regen", t_inputs_regen, NULL, 60);
}
