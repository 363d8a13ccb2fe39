/*
 * bench.h - machine ceilings and the statistics the timing protocol reports.
 */
#ifndef KF_BENCH_H
#define KF_BENCH_H

#include "stats.h"

typedef struct {
    double bytes_per_s; /* single-core copy bandwidth, read + write */
    double flops_per_s; /* single-core peak */
    int cores;
} kf_ceilings;

void kf_bench_ceilings(kf_ceilings *c);

#endif
