/*
 * bench.h - kf_bench's timed phase, the statistics the timing protocol reports, and its
 * lock's witness. The ceilings a roofline is judged against are a backend's (its
 * ceilings slot).
 */
#ifndef KF_BENCH_H
#define KF_BENCH_H

#include "stats.h"
#include "../check/check.h"

/* The most timed phases seen running at once in this process (1 while the timing lock
 * works; 0 before any timing). */
int kf_bench_timing_max(void);
/* The timed phase of kf_bench on a session whose check accepted the candidate: the
 * baseline (the reference, or vs_path), every shape timed under the timing lock, the
 * speedup and its interval on s->res. */
kf_status kf_bench_timed(kf_sess *s, const char *vs_path);

#endif
