/*
 * report.h - the lineage report (docs/report.md): what report.c reads of a run, once, for
 * both renderers (html.c, and the Markdown of report.c), and the one escaper every text
 * of a run goes through on its way into either.
 */
#ifndef KF_REPORT_H
#define KF_REPORT_H

#include "kforge.h"
#include "../check/verdict.h"
#include "../loop/tree.h"
#include "../record/record.h"
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
    json_t *j;            /* kf_tree_node_json, with its diagnosis (owned): the tree's keys only */
    struct kf_verdict sh; /* its timed shapes (its shapes_json column; a screened node's too) */
    int first, next; /* first child, next sibling (indices, -1: none) */
    int size;        /* nodes in its subtree, itself included */
    int path;        /* on the way from the root to a winner (has_path: in its subtree) */
    int has_path;
    int winner;      /* the best kept node at some visible shape */
    int vetoed;      /* the Critic refused it for what it is */
    int detail;      /* 1 + its position among the node sections; 0: none */
    char *src;       /* detail nodes: the source (NULL: unreadable) */
    char *diff;      /* detail nodes: the diff against the parent, lines " ", "+", "-", "@" */
    int has_verdict; /* detail nodes: its verdict document was read into verdict */
    struct kf_verdict verdict; /* (its verdict_json column) */
} kf_rep_node;

/* A roofline point: a detail node's timed shape with a rate. */
typedef struct {
    int64_t node;
    const kf_verdict_sizes *sizes; /* borrowed from the node's verdict */
    double ai, gflops, fraction;
} kf_rep_roof;

typedef struct {
    const char *dir;
    kf_tree_data d;
    kf_rep_node *n; /* d.a.n of them */
    int *roots;     /* indices of the root's children, nroots */
    int nroots;
    json_t *integrity;    /* kf_record_integrity */
    char *warnings;       /* its lines (NULL: none) */
    json_t *best;         /* kf_record_best_shapes */
    const kf_verdict_sizes **shapes;     /* the visible shapes seen, in order of first sight (nshapes; */
    int nshapes, capshapes;              /* borrowed from the nodes' sh) */
    const kf_verdict_ceilings *ceilings; /* the backend's ceilings of a verdict (NULL: none; borrowed) */
    kf_rep_roof *roof;                   /* the detail nodes' roofline points (nroof) */
    int nroof, caproof;
    json_t *constraints;  /* [{node, text, category}] */
    char *breakers;       /* the circuit breaker's trips, one line each (NULL: none) */
    json_t *lessons_used; /* the run's lessons event (NULL: none) */
    json_t *lessons_made; /* the lessons distilled from the run (NULL: not distilled) */
    char distill_note[256];
    int ndetail;
    double t0, t1;     /* the first node's creation, the last one's end (Unix seconds) */
    char made_on[300]; /* the machine the report is written on */
    double written;    /* when (Unix seconds) */
    char anchor[32];   /* before "n-ID" in the nodes' anchors ("": none; a system run's slot runs) */
} kf_rep;

/* Read the run in dir for a report (light: the run's lessons are not distilled): KF_OK,
 * or the store's error (no such run: KF_EIO). kf_report_free frees what it holds, read
 * or not. */
kf_status kf_report_read(kf_ctx *ctx, const char *dir, int light, kf_rep *r);
void kf_report_free(kf_rep *r);

/* A system run (`kforge system run`, docs/report.md "A system run") as the report reads
 * it: its record (system.json) and seal, and the loop run of each slot it worked on. */
typedef struct {
    const char *dir;
    json_t *rec;       /* system.json */
    json_t *integrity; /* kf_sysrun_load's */
    char *warnings;    /* the record's and the slot runs' warnings, a line each (NULL: none) */
    int nit;           /* iterations */
    kf_rep *slot;      /* per iteration: its slot run, read (slot_ok[i]) or not */
    int *slot_ok;
    char **slot_dir;       /* per iteration: the slot run's directory */
    int keeps, wins, lwgl; /* system keeps, local wins (kept or not), local wins lost in the step */
    char made_on[300];
    double written;
} kf_sysrep;

/* The run's local-win/global-loss rate as Arbor reports it (39%). */
#define KF_REPORT_ARBOR_LWGL 0.39

/* Read the system run in dir: KF_OK, or kf_sysrun_load's error. kf_report_sys_free frees
 * what it holds, read or not. */
kf_status kf_report_sys_read(kf_ctx *ctx, const char *dir, kf_sysrep *s);
void kf_report_sys_free(kf_sysrep *s);
/* The system run's page, Markdown, and JSON (the record with the counts and integrity). */
void kf_report_sys_html(kf_buf *b, const kf_sysrep *s);
void kf_report_sys_md(kf_buf *b, const kf_sysrep *s);
char *kf_report_sys_json(const kf_sysrep *s);

/* Pieces of the page (html.c) the system run's page shares: the document's head (title
 * escaped, extra CSS appended to the page's own: a constant, not run text) up to the
 * header, its end (the one script), a node's section, a state's badge. */
void kf_report_page_head(kf_buf *b, const char *title, const char *extra_css);
void kf_report_page_tail(kf_buf *b);
void kf_report_node_html(kf_buf *b, const kf_rep *r, int i);
void kf_report_badge(kf_buf *b, const char *state);
/* A node's section in Markdown (report.c), as in the run's own report. */
void kf_report_node_md(kf_buf *b, const kf_rep *r, int i);

/* The state's name as the report shows it: a node's state, "vetoed" for a reverted node
 * the Critic refused for what it is, "tampered" for a row that does not match its seal. */
const char *kf_report_state(const kf_rep *r, int i);

/* Text into b made safe for HTML text and attribute values (& < > " ' as entities,
 * control bytes but tab and newline dropped), or, md 1, for one Markdown table cell
 * (also | escaped, newlines as spaces). n: bytes of s (s need not end there). The one
 * escaper of the report: every text read from a run goes through it. */
void kf_report_esc(kf_buf *b, const char *s, size_t n, int md);
/* Each line of text (NULL: none) escaped (kf_report_esc) between pre and post. */
void kf_report_lines(kf_buf *b, const char *text, const char *pre, const char *post, int md);
/* The same for a formatted text. */
void kf_report_escf(kf_buf *b, int md, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* The ceilings a verdict carries (copy bandwidth, FLOP rate, and the cores or a GPU's
 * device), as "14.61 GB/s copy, 248.05 GFLOP/s, 2 cores", into b (escaped for md or not). */
void kf_report_ceilings(kf_buf *b, const kf_verdict_ceilings *c, int md);
/* A shape's sizes as "rows=64,cols=8" into b (escaped for md or not). */
void kf_report_sizes(kf_buf *b, const kf_verdict_sizes *s, int md);
/* 1 when the sizes object of a record (kf_record_best_shapes, the tree's vs_parent) names
 * the same sizes as s. */
int kf_report_sizes_is(const json_t *sizes, const kf_verdict_sizes *s);

/* The page (html.c) and the Markdown (report.c) of a read run, into b. */
void kf_report_html(kf_buf *b, const kf_rep *r);
void kf_report_md(kf_buf *b, const kf_rep *r);

#endif
