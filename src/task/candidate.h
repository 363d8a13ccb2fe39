/*
 * candidate.h - a candidate source file and its directives:
 *   kforge:param NAME = v1, v2, v3   template parameter (-DNAME=v; first is default)
 *   kforge:param NAME = v1, v2 # cat  ... whose moves are of search category cat
 *   kforge:require EXPR              constraint over the parameters
 *   kforge:when EXPR                 the shapes the candidate claims (sizes + params)
 */
#ifndef KF_CANDIDATE_H
#define KF_CANDIDATE_H

#include "task.h"

#define KF_MAX_PARAMS 16

typedef struct {
    char *name;
    char **values;
    int nvalues;
    const char *selected; /* points into values[] or the --param text */
    int64_t ival;         /* selected value as an integer, when it is one */
    int is_int;
    char *category; /* "# category" after the values, or NULL */
    int line;       /* its line in the file, for messages */
} kf_param;

typedef struct {
    const kf_task *task; /* borrowed */
    char *path;
    char *text;
    size_t len;
    int nparams;
    kf_param params[KF_MAX_PARAMS];
    int nrequire;
    kf_expr *require[8];
    int require_line[8]; /* each one's line in the file */
    kf_expr *when;
    int when_line; /* its line (0: no when) */
    /* expression view of the selected integer parameters */
    const char *pnames[KF_MAX_PARAMS];
    int64_t pvals[KF_MAX_PARAMS];
    kf_vars pvars;
} kf_candidate;

/* Read path, parse its directives (every error about one is "PATH:LINE: ..."), apply selections
 * ("NAME=VALUE"), check the requirements. KF_EIO (missing file), KF_EUSAGE (bad directive, unknown parameter,
 * value not declared, a failed kforge:require) with detail on ctx. */
kf_status kf_candidate_load(kf_ctx *ctx, const kf_task *t, const char *path, const char **sel, int nsel,
                            kf_candidate **out);
void kf_candidate_free(kf_candidate *c);

/* The expression of the first kforge:when in the text s, unparsed, or NULL (caller frees):
 * what export and tree read of a stored node without loading it as a candidate. */
char *kf_candidate_when_text(const char *s);

#endif
