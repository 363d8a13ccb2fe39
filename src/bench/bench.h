/*
 * bench.h - the statistics the timing protocol reports, and its lock's witness. The
 * ceilings a roofline is judged against are a backend's (its ceilings slot).
 */
#ifndef KF_BENCH_H
#define KF_BENCH_H

#include "stats.h"

/* The most timed phases seen running at once in this process (1 while the timing lock
 * works; 0 before any timing). */
int kf_bench_timing_max(void);

#endif
