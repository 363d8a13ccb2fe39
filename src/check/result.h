/*
 * result.h - the outcome of check, bench and validate: the typed verdict (verdict.h) the
 * checker and bench fill, and the JSON document (jansson) made from it once, when the
 * result is complete (kf_result_seal), that is the machine contract (docs/cli.md).
 * In-process readers take the typed verdict as the document says it with
 * kf_result_verdict_typed.
 */
#ifndef KF_RESULT_H
#define KF_RESULT_H

#include "../util/util.h"
#include "verdict.h"

#include <jansson.h>

#define KF_MAX_REASONS 32
#define KF_RESULT_DIGITS 6 /* significant digits of the reals kf_result_json writes */

struct kf_result {
    struct kf_verdict v; /* what check, bench and validate found */
    json_t *root;        /* the whole document, made from v by kf_result_seal */
    char kind[16];       /* "check", "bench", "validate" */
};

kf_result *kf_result_new(const char *kind);
/* Record a rejection reason (the verdict becomes rejected). The first reason of each
 * code keeps its message; later ones only raise its count. shape may be NULL; it is
 * borrowed (copied). */
void kf_result_reject(kf_result *r, kf_reason code, const kf_verdict_sizes *shape, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* The result is complete: its document, from r->v (kf_verdict_to_json). 0, or -1 when
 * out of memory, now or in any of r->v's setters. */
int kf_result_seal(kf_result *r);
/* The verdict as the result's document says it (kf_result_json: its reals at
 * KF_RESULT_DIGITS), for in-process readers: into *v (kf_verdict_free). 0, or -1 when
 * out of memory. */
int kf_result_verdict_typed(const kf_result *r, struct kf_verdict *v);
/* The document as a run's store keeps it (a node's verdict_json): kf_result_json's
 * document, its reals written back at full precision. Caller frees; NULL on OOM. */
char *kf_result_json_stored(const kf_result *r);

#endif
