/*
 * candidate.c - read a candidate file and parse its kforge: directives.
 *
 * Directives live in comments; each runs to the end of its line or to a closing "*\/".
 * Expressions in require/when are parsed here so errors point at the line; names in
 * `when` may be sizes or integer parameters, names in `require` only parameters.
 */
#define _GNU_SOURCE
#include "candidate.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define CAND_MAX (1u << 20)

static char *trim(char *s) {
    while (isspace((unsigned char)*s)) s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1])) *--e = 0;
    return s;
}

static int parse_int(const char *s, int64_t *v) {
    char *end;
    errno = 0;
    long long x = strtoll(s, &end, 0);
    if (errno || end == s || *end) return -1;
    *v = x;
    return 0;
}

void kf_candidate_free(kf_candidate *c) {
    if (!c) return;
    for (int i = 0; i < c->nparams; i++) {
        free(c->params[i].name);
        free(c->params[i].category);
        for (int j = 0; j < c->params[i].nvalues; j++) free(c->params[i].values[j]);
        free(c->params[i].values);
    }
    for (int i = 0; i < c->nrequire; i++) kf_expr_free(c->require[i]);
    kf_expr_free(c->when);
    free(c->text);
    free(c->path);
    free(c);
}

static kf_status directive(kf_ctx *ctx, kf_candidate *c, const char *kind, char *body, int line) {
    char err[256];
    if (!strcmp(kind, "param")) {
        char *eq = strchr(body, '=');
        if (!eq)
            return kf__err(ctx, KF_EUSAGE, "%s:%d: kforge:param needs NAME = v1, v2, ...", c->path, line);
        *eq = 0;
        char *name = trim(body);
        int ok = *name && (isalpha((unsigned char)*name) || *name == '_');
        for (char *p = name; *p; p++) ok &= isalnum((unsigned char)*p) || *p == '_';
        if (!ok)
            return kf__err(ctx, KF_EUSAGE, "%s:%d: kforge:param: '%s' is not an identifier", c->path, line,
                           name);
        for (int i = 0; i < c->nparams; i++)
            if (!strcmp(c->params[i].name, name))
                return kf__err(ctx, KF_EUSAGE, "%s:%d: kforge:param %s declared twice", c->path, line, name);
        for (int i = 0; i < c->task->nsizes; i++)
            if (!strcmp(c->task->size_names[i], name))
                return kf__err(ctx, KF_EUSAGE, "%s:%d: kforge:param %s: the task has a size of that name",
                               c->path, line, name);
        for (int i = 0; i < c->task->nargs; i++)
            if (!strcmp(c->task->args[i].name, name) || !strcmp(c->task->entry, name))
                return kf__err(ctx, KF_EUSAGE,
                               "%s:%d: kforge:param %s: the task has an argument or entry of that name",
                               c->path, line, name);
        if (c->nparams == KF_MAX_PARAMS)
            return kf__err(ctx, KF_EUSAGE, "%s:%d: more than %d parameters", c->path, line, KF_MAX_PARAMS);
        kf_param *p = &c->params[c->nparams];
        if (!(p->name = kf__strdup(name))) return kf__err(ctx, KF_ENOMEM, "out of memory");
        p->line = line;
        c->nparams++;
        /* "v1, v2 # category": the search category of moves along this parameter */
        char *hash = strchr(eq + 1, '#');
        if (hash) {
            *hash = 0;
            char *cat = trim(hash + 1);
            int cok = *cat != 0;
            for (char *q = cat; *q; q++) cok &= islower((unsigned char)*q) || *q == '_';
            if (!cok)
                return kf__err(ctx, KF_EUSAGE, "%s:%d: kforge:param %s: '# %s' is not a category name",
                               c->path, line, name, cat);
            if (!(p->category = kf__strdup(cat))) return kf__err(ctx, KF_ENOMEM, "out of memory");
        }
        char *save = NULL;
        for (char *v = strtok_r(eq + 1, ",", &save); v; v = strtok_r(NULL, ",", &save)) {
            v = trim(v);
            if (!*v) continue;
            if (strlen(v) > 256)
                return kf__err(ctx, KF_EUSAGE, "%s:%d: kforge:param %s: a value longer than 256 characters",
                               c->path, line, name);
            for (char *q = v; *q; q++)
                if (isspace((unsigned char)*q) || *q == '"' || *q == '\\' || *q == '\'')
                    return kf__err(ctx, KF_EUSAGE, "%s:%d: kforge:param %s: bad value '%s'", c->path, line,
                                   name, v);
            char **nv = realloc(p->values, (size_t)(p->nvalues + 1) * sizeof *nv);
            if (!nv || !(nv[p->nvalues] = kf__strdup(v))) {
                if (nv) p->values = nv;
                return kf__err(ctx, KF_ENOMEM, "out of memory");
            }
            p->values = nv;
            p->nvalues++;
        }
        if (!p->nvalues)
            return kf__err(ctx, KF_EUSAGE, "%s:%d: kforge:param %s has no values", c->path, line, name);
        p->selected = p->values[0];
        return KF_OK;
    }
    kf_expr *e = kf_expr_parse(body, err, sizeof err);
    if (!e) return kf__err(ctx, KF_EUSAGE, "%s:%d: kforge:%s \"%s\": %s", c->path, line, kind, body, err);
    if (!strcmp(kind, "require")) {
        if (c->nrequire == 8) {
            kf_expr_free(e);
            return kf__err(ctx, KF_EUSAGE, "%s:%d: more than 8 kforge:require lines", c->path, line);
        }
        c->require_line[c->nrequire] = line;
        c->require[c->nrequire++] = e;
    } else {
        if (c->when) {
            kf_expr_free(e);
            return kf__err(ctx, KF_EUSAGE, "%s:%d: a second kforge:when (combine them with &&)", c->path,
                           line);
        }
        c->when = e;
        c->when_line = line;
    }
    return KF_OK;
}

kf_status kf_candidate_load(kf_ctx *ctx, const kf_task *t, const char *path, const char **sel, int nsel,
                            kf_candidate **out) {
    *out = NULL;
    kf_candidate *c = calloc(1, sizeof *c);
    if (c) c->task = t;
    if (!c || !(c->path = kf__strdup(path))) {
        free(c);
        return kf__err(ctx, KF_ENOMEM, "out of memory");
    }
    kf_status st;
    if (kf__read_file(path, CAND_MAX, &c->text, &c->len)) {
        int e = errno;
        st = kf__err(ctx, e == EFBIG || e == EINVAL ? KF_EUSAGE : kf__io_status(e), "%s: %s", path,
                     e == EFBIG    ? "larger than 1 MiB"
                     : e == EINVAL ? "not a regular file"
                                   : strerror(e));
        goto fail;
    }
    if (memchr(c->text, 0, c->len)) {
        st = kf__err(ctx, KF_EUSAGE, "%s: contains NUL bytes (not a source file)", path);
        goto fail;
    }
    /* scan directives line by line */
    int line = 1;
    for (const char *p = c->text; *p; line++) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        const char *d = memmem(p, n, "kforge:", 7);
        if (d) {
            char buf[1024];
            size_t m = n - (size_t)(d - p);
            if (m >= sizeof buf) m = sizeof buf - 1;
            memcpy(buf, d + 7, m - 7 < sizeof buf ? m - 7 : 0);
            buf[m - 7] = 0;
            char *close = strstr(buf, "*/");
            if (close) *close = 0;
            char *kind = buf, *body = buf;
            while (*body && !isspace((unsigned char)*body)) body++;
            if (*body) *body++ = 0;
            if (!strcmp(kind, "param") || !strcmp(kind, "require") || !strcmp(kind, "when")) {
                if ((st = directive(ctx, c, kind, trim(body), line))) goto fail;
            } else if (strcmp(kind, "test") && strcmp(kind, "launch") && strcmp(kind, "host") &&
                       strcmp(kind, "link")) {
                st = kf__err(ctx, KF_EUSAGE, "%s:%d: unknown directive kforge:%s (param, require, when)",
                             path, line, kind);
                goto fail;
            }
        }
        p += n + (nl ? 1 : 0);
    }
    /* selections */
    for (int i = 0; i < nsel; i++) {
        const char *eq = strchr(sel[i], '=');
        int k = -1;
        for (int j = 0; eq && j < c->nparams; j++)
            if (strlen(c->params[j].name) == (size_t)(eq - sel[i]) &&
                !strncmp(c->params[j].name, sel[i], (size_t)(eq - sel[i])))
                k = j;
        if (!eq) {
            st = kf__err(ctx, KF_EUSAGE, "--param %s: expected NAME=VALUE", sel[i]);
            goto fail;
        }
        if (k < 0) {
            st = kf__err(ctx, KF_EUSAGE, "--param %s: %s declares no such parameter", sel[i], path);
            goto fail;
        }
        int found = 0;
        for (int j = 0; j < c->params[k].nvalues; j++)
            if (!strcmp(c->params[k].values[j], eq + 1)) {
                c->params[k].selected = c->params[k].values[j];
                found = 1;
            }
        if (!found) {
            st = kf__err(ctx, KF_EUSAGE, "--param %s: not one of the declared values of %s", sel[i],
                         c->params[k].name);
            goto fail;
        }
    }
    for (int i = 0; i < c->nparams; i++) {
        kf_param *p = &c->params[i];
        p->is_int = !parse_int(p->selected, &p->ival);
        if (p->is_int) {
            c->pnames[c->pvars.n] = p->name;
            c->pvals[c->pvars.n] = p->ival;
            c->pvars.n++;
        }
    }
    c->pvars.names = c->pnames;
    c->pvars.values = c->pvals;
    for (int i = 0; i < c->nrequire; i++) {
        int64_t v;
        char err[256];
        if (kf_expr_eval(c->require[i], &c->pvars, &v, err, sizeof err)) {
            st = kf__err(ctx, KF_EUSAGE, "%s:%d: kforge:require \"%s\": %s", path, c->require_line[i],
                         kf_expr_src(c->require[i]), err);
            goto fail;
        }
        if (!v) {
            char sels[512] = "";
            size_t off = 0;
            for (int j = 0; j < c->nparams && off < sizeof sels; j++)
                off += (size_t)snprintf(sels + off, sizeof sels - off, "%s%s=%s", j ? " " : "",
                                        c->params[j].name, c->params[j].selected);
            st = kf__err(ctx, KF_EUSAGE, "%s:%d: kforge:require \"%s\" fails for %s", path,
                         c->require_line[i], kf_expr_src(c->require[i]), sels);
            goto fail;
        }
    }
    if (c->when) {
        /* names must be sizes or integer parameters */
        const char *known[64];
        int n = 0;
        char err[256];
        for (int i = 0; i < t->nsizes; i++) known[n++] = t->size_names[i];
        for (int i = 0; i < c->pvars.n; i++) known[n++] = c->pnames[i];
        if (kf_expr_check_names(c->when, known, n, err, sizeof err)) {
            st = kf__err(ctx, KF_EUSAGE, "%s:%d: kforge:when \"%s\": %s", path, c->when_line,
                         kf_expr_src(c->when), err);
            goto fail;
        }
    }
    *out = c;
    return KF_OK;
fail:
    kf_candidate_free(c);
    return st;
}

char *kf_candidate_when_text(const char *s) {
    const char *d = s ? strstr(s, "kforge:when") : NULL;
    if (!d) return NULL;
    d += 11;
    const char *e = d;
    while (*e && *e != '\n' && strncmp(e, "*/", 2)) e++;
    while (d < e && isspace((unsigned char)*d)) d++;
    while (e > d && isspace((unsigned char)e[-1])) e--;
    return kf__asprintf("%.*s", (int)(e - d), d);
}
