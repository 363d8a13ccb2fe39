/*
 * verdict.h - the verdict as a C type: what check and bench decided (accepted or
 * rejected, the reasons) and the per-shape records behind it (sizes, kind, status and
 * errors of the check; speedup, interval, win, times, roofline and fairness of the
 * timing). The loop, the Critic, diagnosis, export and distillation read its fields.
 *
 * JSON stays at the edges: the CLI's document (docs/cli.md), the store's verdict_json
 * and shapes_json columns, EXPORT.json. verdict.c alone knows the key names: the
 * document and the columns become a struct kf_verdict through kf_verdict_from_json, and
 * the columns and summaries are written by the kf_verdict_*_json functions.
 *
 * The struct holds the fields those readers use, not the whole document: the sandbox,
 * build, resource and ceiling reports stay in the document. Its name is the struct tag
 * (kf_verdict alone is the accepted/rejected enum of kforge.h).
 */
#ifndef KF_VERDICT_H
#define KF_VERDICT_H

#include "kforge.h"

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define KF_VERDICT_MAX_SIZES 16

/* A shape's sizes in the document's order ({"rows": 64, "cols": 8}). The names are
 * borrowed from the verdict that holds the sizes (its pool): a kf_verdict_sizes does
 * not outlive its verdict. */
typedef struct {
    int n;
    const char *name[KF_VERDICT_MAX_SIZES];
    int64_t v[KF_VERDICT_MAX_SIZES];
} kf_verdict_sizes;

/* A shape record's kind and status in the check ("kind", "status"; a timed record has
 * neither). A kind this build does not know reads as edge. */
typedef enum { KF_VSHAPE_NO_KIND, KF_VSHAPE_VISIBLE, KF_VSHAPE_HIDDEN, KF_VSHAPE_EDGE } kf_vshape_kind;
typedef enum {
    KF_VSHAPE_NO_STATUS,
    KF_VSHAPE_PASSED,
    KF_VSHAPE_FAILED,
    KF_VSHAPE_SKIPPED,
    KF_VSHAPE_OTHER /* not_run, or a status this build does not know */
} kf_vshape_status;

/* Which optional fields of a shape record are present (kf_verdict_shape.has). */
enum {
    KF_VS_SPEEDUP = 1u << 0,
    KF_VS_CI95 = 1u << 1,
    KF_VS_WIN = 1u << 2,
    KF_VS_CANDIDATE_NS = 1u << 3,
    KF_VS_BASELINE_NS = 1u << 4,
    KF_VS_ROOFLINE = 1u << 5,
    KF_VS_FAIR = 1u << 6,
    KF_VS_SPEEDUP_FIRST = 1u << 7,
    KF_VS_CI95_FIRST = 1u << 8,
    KF_VS_MAX_ABS_ERR = 1u << 9,
    KF_VS_PLAIN_ABS_ERR = 1u << 10,
};

/* One shape record: of the check (kind, status, errors) or of the timing (speedup and
 * the rest, present when has says so; a timed record has KF_VS_SPEEDUP). */
typedef struct {
    kf_verdict_sizes sizes;
    kf_vshape_kind kind;
    kf_vshape_status status;
    int maximum;  /* the maximum-sizes shape (spiked or extreme inputs) */
    unsigned has; /* KF_VS_* */
    double max_abs_err, plain_abs_err;
    double speedup; /* median paired ratio, baseline over candidate */
    double ci95[2]; /* its 95% interval */
    int win;        /* the interval clears 1 and the win floor */
    double candidate_ns, baseline_ns;
    double roofline_fraction;
    int fair;                /* 0: the comparison was not fair (fair_reason says why) */
    const char *fair_reason; /* NULL when none; from the pool */
    double speedup_first;    /* a kept node's first timing, when the Critic's was lower */
    double ci95_first[2];
} kf_verdict_shape;

typedef struct {
    kf_reason code;      /* KF_REASON_COUNT: a name this build does not know */
    const char *message; /* NULL when none; from the pool */
    int has_shape;
    kf_verdict_sizes shape; /* where it was first seen (has_shape) */
    int count;              /* how many times it was seen */
} kf_verdict_reason;

struct kf_verdict {
    kf_verdict verdict; /* accepted, or rejected (any other word too) */
    int nreasons;
    kf_verdict_reason *reasons;
    /* "shapes": a check's records, or a bench's timed ones (the check's are then in
     * checked, has_check) */
    int nshapes;
    kf_verdict_shape *shapes;
    int has_check;
    int nchecked;
    kf_verdict_shape *checked;
    int nuntimed; /* visible shapes outside the candidate's kforge:when */
    kf_verdict_sizes *untimed;
    int has_speedup;
    double speedup;                                      /* geometric mean over the timed shapes */
    const char *task, *fingerprint, *when, *compile_log; /* NULL when absent; from the pool */
    char **pool;                                         /* the strings above point into it */
    int npool, cappool;
};

/* A verdict from its document: a `kforge check --json` or `bench --json` object, or an
 * array of shape records (a node's shapes_json column: into shapes). *v is always
 * initialised (free it with kf_verdict_free); 0, or -1 when doc is NULL or neither an
 * object nor an array, or out of memory (*v then holds what was read). */
int kf_verdict_from_json(const json_t *doc, struct kf_verdict *v);
/* The same from JSON text (a store column; NULL: -1 with an empty verdict). */
int kf_verdict_from_text(const char *text, struct kf_verdict *v);
/* An empty verdict (rejected, nothing in it), as kf_verdict_free leaves one. */
void kf_verdict_init(struct kf_verdict *v);
void kf_verdict_free(struct kf_verdict *v);

/* Every real of v as a reader of its document written with `digits` significant digits
 * sees it (kf_result_json writes six). */
void kf_verdict_round(struct kf_verdict *v, int digits);
double kf_verdict_real(double x, int digits);

/* v as a verdict document: the fields the struct holds, in the order and under the
 * keys of the CLI's (caller decrefs; NULL when out of memory). */
json_t *kf_verdict_to_json(const struct kf_verdict *v);
/* The timed records of v (those with a speedup) as a node's shapes_json keeps them:
 * sizes, speedup, ci95, win, candidate_ns, baseline_ns, roofline_fraction, fair,
 * speedup_first, ci95_first, each when present: the array (caller decrefs), or its
 * compact text (caller frees). NULL when out of memory. */
json_t *kf_verdict_shapes_json(const struct kf_verdict *v);
char *kf_verdict_shapes_text(const struct kf_verdict *v);
/* The verdict as EXPORT.json's verification keeps it: verdict, reasons (code and
 * message), the timed shapes (sizes, speedup, ci95, win) and the speedup (null when
 * none). Caller decrefs. */
json_t *kf_verdict_summary_json(const struct kf_verdict *v);
/* {"sizes": ..., "speedup": ...}: one timed shape as the Critic's re-timings list it. */
json_t *kf_verdict_retimed_json(const kf_verdict_shape *s);

/* The check's records: checked for a bench verdict, else shapes. *n gets their count. */
const kf_verdict_shape *kf_verdict_check_shapes(const struct kf_verdict *v, int *n);
/* The first shape record of v with these sizes, or NULL. */
const kf_verdict_shape *kf_verdict_find(const struct kf_verdict *v, const kf_verdict_sizes *sizes);
/* 1 when a and b name the same sizes with the same values (in any order). */
int kf_verdict_sizes_equal(const kf_verdict_sizes *a, const kf_verdict_sizes *b);
/* The value of the size called name, or 0 when there is none. */
int64_t kf_verdict_size(const kf_verdict_sizes *s, const char *name);
/* The sizes as a document object (caller decrefs). */
json_t *kf_verdict_sizes_json(const kf_verdict_sizes *s);
/* The sizes as "n=64<sep>m=8" into out, cut at a whole item. */
void kf_verdict_sizes_text(const kf_verdict_sizes *s, const char *sep, char *out, size_t n);

#endif
