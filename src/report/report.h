/*
 * report.h - the lineage report (docs/report.md): what report.c reads of a run, once, for
 * both renderers (html.c, and the Markdown of report.c), and the one escaper every text
 * of a run goes through on its way into either.
 */
#ifndef KF_REPORT_H
#define KF_REPORT_H

#include "kforge.h"
#include "../loop/tree.h"
#include "../util/util.h"

#include <jansson.h>
#include <stddef.h>

/* Limits that keep a large run's report small and quick (docs/report.md "Large runs"). */
#define KF_REPORT_DETAIL_MAX 150   /* node sections with source, verdict, timings and diff */
#define KF_REPORT_TREE_MAX 400     /* tree lines before whole subtrees collapse into one */
#define KF_REPORT_BINS 600         /* timeline marks before evaluations are binned */
#define KF_REPORT_DISTILL_MAX 3000 /* nodes up to which the run's lessons are distilled */
#define KF_REPORT_SHAPES_MAX 8     /* shapes with a colour of their own */

/* One node as the report shows it; index i is a.v[i] of the tree data. */
typedef struct {
    json_t *j;       /* kf_tree_node_json, with its diagnosis (owned) */
    int first, next; /* first child, next sibling (indices, -1: none) */
    int size;        /* nodes in its subtree, itself included */
    int path;        /* on the way from the root to a winner (has_path: in its subtree) */
    int has_path;
    int winner;      /* the best kept node at some visible shape */
    int vetoed;      /* the Critic refused it for what it is */
    int detail;      /* 1 + its position among the node sections; 0: none */
    char *src;       /* detail nodes: the source (NULL: unreadable) */
    char *diff;      /* detail nodes: the diff against the parent, lines " ", "+", "-", "@" */
    json_t *verdict; /* detail nodes: the verdict document (NULL: none) */
} kf_rep_node;

typedef struct {
    const char *dir;
    kf_tree_data d;
    kf_rep_node *n; /* d.a.n of them */
    int *roots;     /* indices of the root's children, nroots */
    int nroots;
    json_t *integrity;    /* kf_record_integrity */
    char *warnings;       /* its lines (NULL: none) */
    json_t *best;         /* kf_record_best_shapes */
    json_t *shapes;       /* the visible shapes seen, [sizes] in order of first sight */
    json_t *ceilings;     /* the backend's ceilings report of a verdict (NULL: none) */
    json_t *roof;         /* [{node, shape, ai, gflops, fraction}] of the detail nodes */
    json_t *constraints;  /* [{node, text, category}] */
    char *breakers;       /* the circuit breaker's trips, one line each (NULL: none) */
    json_t *lessons_used; /* the run's lessons event (NULL: none) */
    json_t *lessons_made; /* the lessons distilled from the run (NULL: not distilled) */
    char distill_note[256];
    int ndetail;
    double t0, t1;     /* the first node's creation, the last one's end (Unix seconds) */
    char made_on[300]; /* the machine the report is written on */
    double written;    /* when (Unix seconds) */
} kf_rep;

/* The state's name as the report shows it: a node's state, "vetoed" for a reverted node
 * the Critic refused for what it is, "tampered" for a row that does not match its seal. */
const char *kf_report_state(const kf_rep *r, int i);

/* Text into b made safe for HTML text and attribute values (& < > " ' as entities,
 * control bytes but tab and newline dropped), or, md 1, for one Markdown table cell
 * (also | escaped, newlines as spaces). n: bytes of s (s need not end there). The one
 * escaper of the report: every text read from a run goes through it. */
void kf_report_esc(kf_buf *b, const char *s, size_t n, int md);
/* The same for a formatted text. */
void kf_report_escf(kf_buf *b, int md, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* The ceilings a verdict carries ("bytes_per_s", "flops_per_s", and "cores" or a GPU's
 * "device"), as "14.61 GB/s copy, 248.05 GFLOP/s, 2 cores", into b (escaped for md or not). */
void kf_report_ceilings(kf_buf *b, const json_t *c, int md);

/* The page (html.c) and the Markdown (report.c) of a read run, into b. */
void kf_report_html(kf_buf *b, const kf_rep *r);
void kf_report_md(kf_buf *b, const kf_rep *r);

#endif
