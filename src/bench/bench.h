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

/* Called with the timing lock held (bench.c): the cache it fills is not locked itself. */
void kf_bench_ceilings(kf_ceilings *c);
/* The most timed phases seen running at once in this process (1 while the timing lock
 * works; 0 before any timing). */
int kf_bench_timing_max(void);

#endif
