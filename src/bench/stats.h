/*
 * stats.h - robust statistics for timing: medians, quantiles, and a distribution-free
 * confidence interval for the median of paired log-ratios.
 */
#ifndef KF_STATS_H
#define KF_STATS_H

#include <stddef.h>

double kf_stats_quantile(const double *x, size_t n, double q); /* x need not be sorted */
double kf_stats_median(const double *x, size_t n);

typedef struct {
    double speedup; /* exp(median(log(base/cand))) */
    double lo, hi;  /* ~95% interval of that median (order statistics) */
    double noise;   /* (hi - lo) / 2, relative */
    int win;        /* lo > 1 and speedup > 1 + floor, from at least 6 pairs */
    int slower;     /* hi < 1 and speedup < 1 - floor, from at least 6 pairs */
} kf_ratio;

/* Paired comparison of n rounds: base[i] and cand[i] were timed back to back. */
void kf_stats_ratio(const double *cand, const double *base, size_t n, double floor_, kf_ratio *out);

#endif
