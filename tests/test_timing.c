/*
 * test_timing.c - the timing protocol under load: the gap cross-check (coordinator's
 * span minus the worker's report) must not read scheduler delay as hidden time; and the
 * determinism contract ("exact" at the same addresses, "bits" at any).
 *
 * Load is put on the machine deterministically: hog threads of this process, pinned to
 * every CPU it may use (three per CPU), spin for the whole bench, so whichever CPU the
 * coordinator keeps for itself is shared with them (as under `kforge run --jobs N`,
 * where other candidates' checks run beside a timing). The hogs stop before the
 * verdict is asserted. Faking the stamps stays caught: tests/redteam/07_channel_hijack.c
 * and 06_* in the corpus.
 */
#define _GNU_SOURCE
#include "kft.h"

#include "task/task.h"
#include "util/util.h"

#include <jansson.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>

#define HOGS_PER_CPU 3
#define MAX_HOGS 64

static atomic_int hog_stop;

static void *hog_main(void *arg) {
    (void)arg;
    volatile uint64_t x = 0;
    while (!atomic_load_explicit(&hog_stop, memory_order_relaxed)) x++;
    return NULL;
}

/* Start hog threads pinned to each CPU of this process; returns how many started. */
static int hogs_start(pthread_t *th) {
    cpu_set_t all;
    int n = 0;
    atomic_store(&hog_stop, 0);
    if (sched_getaffinity(0, sizeof all, &all)) return 0;
    for (int c = 0; c < CPU_SETSIZE && n + HOGS_PER_CPU <= MAX_HOGS; c++) {
        if (!CPU_ISSET(c, &all)) continue;
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(c, &one);
        for (int k = 0; k < HOGS_PER_CPU; k++) {
            pthread_attr_t at;
            pthread_attr_init(&at);
            pthread_attr_setaffinity_np(&at, sizeof one, &one);
            if (!pthread_create(&th[n], &at, hog_main, NULL)) n++;
            pthread_attr_destroy(&at);
        }
    }
    return n;
}

static void hogs_stop(pthread_t *th, int n) {
    atomic_store(&hog_stop, 1);
    for (int i = 0; i < n; i++) pthread_join(th[i], NULL);
}

/* An honest kernel whose calls take milliseconds (a 32 MiB scratch buffer per call)
 * against a reference taking microseconds, benched while every CPU is contended: the
 * coordinator is descheduled for whole slices, and a long call's answer often waits
 * for it. The gap must be measured to the answer's send (the kernel's stamp), not to
 * its receipt: before, the candidate's median gap grew by milliseconds and the honest
 * kernel was rejected as timing_mismatch. */
static void t_gap_under_load(const void *arg) {
    (void)arg;
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = kft_task(ctx, "tasks/c/sum");
    kf_opts o;
    kf_opts_init(&o);
    o.bench_min_time_s = 0.01;
    o.bench_min_runs = 25;
    o.bench_max_runs = 31;
    o.hidden_count = 1;
    o.call_timeout_s = 10;
    pthread_t th[MAX_HOGS];
    int nh = hogs_start(th);
    CHECK(nh > 0);
    kf_result *r = NULL;
    kf_status st = kf_bench(ctx, t, kft_src("tests/honest/sum_scratch_heavy.c"), &o, &r);
    hogs_stop(th, nh);
    CHECKF(st == KF_OK, "%s", kf_errmsg(ctx));
    char *js = kf_result_json(r);
    CHECKF(kf_result_verdict(r) == KF_VERDICT_ACCEPTED, "%s: %.2000s", kft_reasons(r), js);
    free(js);
    kf_result_free(r);
    kf_task_free(t);
    kf_ctx_free(ctx);
}

/* The determinism contract: a summation split on the input's page boundaries gives other
 * bits at other buffer addresses. The default ("exact": the same bits for the same inputs
 * at the same addresses) accepts it (tests/honest/sum_page_split.c in the corpus);
 * "determinism": "bits" keeps the strict rule and rejects it as nondeterministic. Both
 * verdicts are certain: the pair's second call is in the other half of the arena, whose
 * page offset differs at almost every shape, and each check has about ten shapes. */
static void t_determinism_bits(const void *arg) {
    (void)arg;
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = kft_task(ctx, "tests/tasks/sum_bits");
    CHECK(t->determinism_exact && t->determinism_bits);
    kf_result *r = kft_check(ctx, t, kft_src("tests/honest/sum_page_split.c"), NULL, 0);
    CHECKF(kf_result_verdict(r) == KF_VERDICT_REJECTED && !strcmp(kft_reasons(r), "nondeterministic"), "%s",
           kft_reasons(r));
    kf_result_free(r);
    kf_task_free(t);
    t = kft_task(ctx, "tasks/c/sum");
    CHECK(t->determinism_exact && !t->determinism_bits);
    r = kft_check(ctx, t, kft_src("tests/honest/sum_page_split.c"), NULL, 0);
    CHECKF(kf_result_verdict(r) == KF_VERDICT_ACCEPTED, "%s", kft_reasons(r));
    kf_result_free(r);
    kf_task_free(t);
    kf_ctx_free(ctx);
}

void kft_register_timing(void) {
    kft_add("timing/determinism_bits", t_determinism_bits, NULL, 60);
    kft_add("timing/gap_under_load", t_gap_under_load, NULL, 180);
}
