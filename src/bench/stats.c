/*
 * stats.c - medians and paired-ratio intervals.
 *
 * The interval for the median uses order statistics of the sorted paired log-ratios:
 * ranks n/2 -/+ 1.96*sqrt(n)/2 (the normal approximation to the binomial), so it
 * assumes nothing about the shape of the timing distribution.
 */
#include "stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double kf_stats_quantile(const double *x, size_t n, double q) {
    if (n == 0) return 0;
    double *s = malloc(n * sizeof *s);
    if (!s) return x[0];
    memcpy(s, x, n * sizeof *s);
    qsort(s, n, sizeof *s, cmp_d);
    double pos = q * (double)(n - 1);
    size_t i = (size_t)pos;
    double f = pos - (double)i, v = i + 1 < n ? s[i] * (1 - f) + s[i + 1] * f : s[i];
    free(s);
    return v;
}

double kf_stats_median(const double *x, size_t n) { return kf_stats_quantile(x, n, 0.5); }

void kf_stats_ratio(const double *cand, const double *base, size_t n, double floor_, kf_ratio *out) {
    memset(out, 0, sizeof *out);
    if (n == 0) return;
    double *l = malloc(n * sizeof *l);
    if (!l) return;
    for (size_t i = 0; i < n; i++) l[i] = log(base[i] / (cand[i] > 0 ? cand[i] : 1));
    qsort(l, n, sizeof *l, cmp_d);
    double med = kf_stats_quantile(l, n, 0.5);
    double half = 1.96 * sqrt((double)n) / 2.0;
    long lo = (long)floor((double)n / 2.0 - half), hi = (long)ceil((double)n / 2.0 + half) - 1;
    if (lo < 0) lo = 0;
    if (hi > (long)n - 1) hi = (long)n - 1;
    out->speedup = exp(med);
    out->lo = exp(l[lo]);
    out->hi = exp(l[hi]);
    out->noise = (out->hi - out->lo) / 2.0;
    /* with fewer than 6 pairs the order-statistics interval degenerates: no verdict */
    out->win = n >= 6 && out->lo > 1.0 && out->speedup > 1.0 + floor_;
    out->slower = n >= 6 && out->hi < 1.0 && out->speedup < 1.0 - floor_;
    free(l);
}
