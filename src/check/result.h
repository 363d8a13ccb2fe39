/*
 * result.h - the outcome of check, bench and validate: a verdict, reason codes, and a
 * JSON document (jansson) that is the machine contract (docs/cli.md). In-process readers
 * take the typed verdict (verdict.h) from it with kf_result_verdict_typed.
 */
#ifndef KF_RESULT_H
#define KF_RESULT_H

#include "../util/util.h"
#include "verdict.h"

#include <jansson.h>

#define KF_MAX_REASONS 32
#define KF_RESULT_DIGITS 6 /* significant digits of the reals kf_result_json writes */

struct kf_result {
    kf_verdict verdict;
    int nreasons;
    kf_reason reasons[KF_MAX_REASONS];
    json_t *root;    /* the whole document */
    json_t *jreasons;
    double speedup;  /* geometric mean (bench) */
    char kind[16];   /* "check", "bench", "validate" */
};

kf_result *kf_result_new(const char *kind);
/* Record a rejection reason (the verdict becomes rejected). The first reason of each
 * code keeps its message; later ones only raise its count. shape may be NULL; it is
 * borrowed (copied). */
void kf_result_reject(kf_result *r, kf_reason code, json_t *shape, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* The verdict as the result's document says it (kf_result_json: its reals at
 * KF_RESULT_DIGITS), for in-process readers: into *v (kf_verdict_free). 0, or -1 when
 * out of memory. */
int kf_result_verdict_typed(const kf_result *r, struct kf_verdict *v);
/* The document as a run's store keeps it (a node's verdict_json): kf_result_json's
 * document, its reals written back at full precision. Caller frees; NULL on OOM. */
char *kf_result_json_stored(const kf_result *r);

#endif
