/*
 * dispatch.c - what the backends' dispatcher emitters (the dispatcher slot: c/dispatch.c,
 * cuda/dispatch.c) share: a winner's section of the file, with its kforge: directives
 * neutralised, its parameters as #define before it and #undef after (with every macro it
 * defines), and every name it defines at file scope prefixed with kf_n<ID>_ (ctok.c), so
 * two winners' helpers cannot collide; the shape predicates (integer scalar arguments
 * equal to their values at the winner's shape) and the plan of the entry's tests
 * (kf_dispatch_plan, the same for every emitter); a winner's kforge:when as a predicate
 * over the arguments (kf_dispatch_domain: it was checked on every shape there); the
 * fallback's kforge:when as the dispatcher's own. export checks and times a dispatcher
 * before it is written; nothing here reads a run.
 */
#include "dispatch.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* text with every identifier in ren prefixed and every "kforge:" directive neutralised. */
static int rewrite(kf_buf *b, const char *s, size_t n, const kf_toks *t, const kf_names *ren,
                   const char *prefix) {
    size_t at = 0;
    for (size_t i = 0; i < t->n; i++) {
        const kf_tok *k = &t->v[i];
        if (k->kind != KF_TOK_ID || k->include || !kf_ctok_has(ren, s + k->off, k->len)) continue;
        kf_buf_append(b, s + at, k->off - at);
        kf_buf_printf(b, "%s", prefix);
        kf_buf_append(b, s + k->off, k->len);
        at = k->off + k->len;
    }
    kf_buf_append(b, s + at, n - at);
    return 0;
}

static void neutralise(char *p) {
    for (char *q = p; (q = strstr(q, "kforge:")); q += 7) q[6] = ' ';
}

/* A node's parameter values as "NAME VALUE" pairs from its params_json. */
static void param_defs(kf_buf *b, const char *params_json, const char *prefix) {
    json_t *pj = params_json ? json_loads(params_json, 0, NULL) : NULL;
    const char *k;
    json_t *v;
    json_object_foreach(pj, k, v) {
        if (json_is_string(v)) kf_buf_printf(b, "%s%s %s\n", prefix, k, json_string_value(v));
        else if (json_is_integer(v))
            kf_buf_printf(b, "%s%s %lld\n", prefix, k, (long long)json_integer_value(v));
        else if (json_is_number(v)) kf_buf_printf(b, "%s%s %.17g\n", prefix, k, json_number_value(v));
    }
    json_decref(pj);
}

/* A node's parameters pinned for a plain compiler: kforge builds a template node with
 * -DK=V from its kforge:param lines, and the template's own "#ifndef K / #define K
 * <default>" would otherwise win under cc or nvcc (a docs-only user compiled an exported
 * ACC=16 kernel as ACC=1). The same definition twice (-D and this) is no redefinition. */
void kf_dispatch_pinned(kf_buf *b, const char *params_json) {
    json_t *pj = params_json ? json_loads(params_json, 0, NULL) : NULL;
    if (json_object_size(pj)) {
        kf_buf_printf(b, "/* the parameters this node was checked with, for any compiler */\n");
        param_defs(b, params_json, "#define ");
    }
    json_decref(pj);
}

const char *kf_dispatch_ctype(kf_dtype t) {
    switch (t) {
    case KF_T_F32: return "float";
    case KF_T_F64: return "double";
    case KF_T_I32: return "int32_t";
    case KF_T_I64: return "int64_t";
    case KF_T_U8: return "uint8_t";
    default: return NULL;
    }
}

/* The value of the size called name at the shape s, or 0 when it has none. */
static int64_t size_at(const kf_best_shape *s, const char *name) {
    for (int i = 0; i < s->nsizes; i++)
        if (!strcmp(s->name[i], name)) return s->v[i];
    return 0;
}

/* The predicate that picks the shape's sizes out of the entry's integer scalar
 * arguments, into b; *exact: every size is such an argument itself. 0, or -1 when no
 * argument tells shapes apart. */
int kf_dispatch_predicate(const kf_task *t, const kf_best_shape *sizes, kf_buf *b, int *exact) {
    int64_t vals[64];
    int ns = t->nsizes < 64 ? t->nsizes : 64, terms = 0;
    for (int i = 0; i < ns; i++) vals[i] = size_at(sizes, t->size_names[i]);
    kf_vars vars = {(const char *const *)t->size_names, vals, ns};
    int direct = 0;
    for (int i = 0; i < t->nargs; i++) {
        const kf_arg *a = &t->args[i];
        if (a->is_buffer || !a->value_expr ||
            !(a->type == KF_T_I32 || a->type == KF_T_I64 || a->type == KF_T_U8))
            continue;
        int64_t v;
        char err[128];
        if (kf_expr_eval(a->value_expr, &vars, &v, err, sizeof err)) continue;
        kf_buf_printf(b, "%s%s == %lld", terms++ ? " && " : "", a->name, (long long)v);
        for (int k = 0; k < ns; k++)
            if (!strcmp(kf_expr_src(a->value_expr), t->size_names[k])) direct++;
    }
    *exact = direct >= ns;
    return terms ? 0 : -1;
}

int kf_dispatch_domain(const kf_task *t, const kf_winner *w, kf_buf *b) {
    char *wh = kf_candidate_when_text(w->text);
    if (!wh || !*wh) {
        free(wh);
        return -1;
    }
    kf_toks tk = {0};
    json_t *pj = w->params_json ? json_loads(w->params_json, 0, NULL) : NULL;
    int rc = kf_ctok_tokenize(wh, strlen(wh), &tk) ? -1 : 0;
    int divide = 0; /* the previous token was / or % */
    kf_buf_printf(b, "(");
    size_t at = 0;
    for (size_t i = 0; i < tk.n && !rc; i++) {
        const kf_tok *k = &tk.v[i];
        const char *x = wh + k->off;
        int len = (int)k->len;
        kf_buf_append(b, wh + at, k->off - at); /* the spacing as written */
        at = k->off + k->len;
        if (k->kind == KF_TOK_ID) {
            json_t *pv = json_object_getn(pj, x, k->len);
            const kf_arg *arg = NULL;
            for (int a = 0; a < t->nargs && !pv && !arg; a++) {
                const kf_arg *c = &t->args[a];
                if (!c->is_buffer && c->value_expr && (c->type == KF_T_I32 || c->type == KF_T_I64) &&
                    strlen(kf_expr_src(c->value_expr)) == k->len &&
                    !strncmp(kf_expr_src(c->value_expr), x, k->len))
                    arg = c;
            }
            if (json_is_integer(pv) && !(divide && !json_integer_value(pv)))
                kf_buf_printf(b, "%lld", (long long)json_integer_value(pv));
            else if (arg && !divide) kf_buf_printf(b, "(int64_t)(%s)", arg->name);
            else rc = -1; /* a size no argument carries, min(), a string, a division by a size */
            divide = 0;
        } else if (k->kind == KF_TOK_NUM) {
            if (divide && strspn(x, "0") >= k->len) rc = -1;
            kf_buf_printf(b, "%.*s", len, x);
            divide = 0;
        } else if (k->kind == KF_TOK_PUNCT && strchr("()+-*/%<>=!&|?:", x[0])) {
            kf_buf_printf(b, "%.*s", len, x);
            divide = len == 1 && (x[0] == '/' || x[0] == '%');
        } else {
            rc = -1;
        }
    }
    kf_buf_printf(b, ")");
    if (b->dropped || !b->p) rc = -1;
    json_decref(pj);
    free(tk.v);
    free(wh);
    return rc;
}

static int route_add(kf_route **v, int *n, int wi, int domain, const char *pred, const char *label) {
    kf_route *g = realloc(*v, (size_t)(*n + 1) * sizeof **v);
    if (!g) return -1;
    *v = g;
    kf_route *r = &g[*n];
    r->wi = wi, r->domain = domain;
    r->pred = strdup(pred);
    r->label = strdup(label ? label : "");
    if (!r->pred || !r->label) {
        free(r->pred);
        free(r->label);
        return -1;
    }
    (*n)++;
    return 0;
}

/* Winner i's domain predicate (kf_dispatch_domain), made once: NULL when it has none.
 * *oom set when memory ran out. */
static const char *domain_of(const kf_task *t, const kf_winner *w, int i, char **dom, char *tried, int *oom) {
    if (!tried[i]) {
        tried[i] = 1;
        kf_buf d;
        kf_buf_init(&d, 1u << 16);
        if (!kf_dispatch_domain(t, &w[i], &d) && !(dom[i] = strdup(d.p))) *oom = 1;
        kf_buf_free(&d);
    }
    return dom[i];
}

void kf_dispatch_plan_free(kf_route *r, int n) {
    for (int i = 0; i < n; i++) free(r[i].pred), free(r[i].label);
    free(r);
}

void kf_dispatch_out_free(kf_dispatch_out *o) {
    for (int i = 0; i < o->nroutes; i++) free(o->routes[i].domain), free(o->routes[i].predicate);
    free(o->routes);
    for (int i = 0; i < o->nnotes; i++) free(o->notes[i]);
    free(o->notes);
    memset(o, 0, sizeof *o);
}

/* A record of the entry's tests into d (shape: an index of best, or -1 with domain). */
static void route_record(kf_dispatch_out *d, int64_t node, int shape, const char *domain, const char *pred) {
    if (d->nroutes == d->caproutes) {
        int cap = d->caproutes ? d->caproutes * 2 : 8;
        kf_dispatch_route *p = realloc(d->routes, (size_t)cap * sizeof *p);
        if (!p) {
            d->oom = 1;
            return;
        }
        d->routes = p, d->caproutes = cap;
    }
    kf_dispatch_route *r = &d->routes[d->nroutes];
    r->node = node, r->shape = shape;
    r->domain = domain ? strdup(domain) : NULL;
    r->predicate = strdup(pred);
    if ((domain && !r->domain) || !r->predicate) {
        free(r->domain), free(r->predicate);
        d->oom = 1;
        return;
    }
    d->nroutes++;
}

/* A shape the fallback runs at, and why (s, taken: NULL when it could not be made), into d. */
static void note(kf_dispatch_out *d, char *s) {
    if (s && d->nnotes == d->capnotes) {
        int cap = d->capnotes ? d->capnotes * 2 : 8;
        char **p = realloc(d->notes, (size_t)cap * sizeof *p);
        if (p) d->notes = p, d->capnotes = cap;
        else free(s), s = NULL;
    }
    if (s) d->notes[d->nnotes++] = s;
    else d->oom = 1;
}

int kf_dispatch_plan(const kf_task *t, const kf_winner *w, int nw, int fallback, const kf_best_shape *best,
                     int nbest, int *used, kf_route **out, int *nout, kf_dispatch_out *d) {
    kf_route *v = NULL;
    int n = 0, rc = 0;
    char **dom = calloc((size_t)nw + 1, sizeof *dom); /* each winner's domain predicate, */
    char *tried = calloc((size_t)nw + 1, 1);          /* once asked for */
    if (!dom || !tried) {
        free(dom);
        free(tried);
        return -1;
    }
    for (int j = 0; j < nbest; j++) {
        int64_t id = best[j].node;
        int wi = 0;
        while (wi < nw && w[wi].id != id) wi++;
        if (wi == nw || wi == fallback) continue;
        const kf_best_shape *sizes = &best[j];
        char st_[512];
        kf_dispatch_sizes_text(sizes, ", ", st_, sizeof st_);
        kf_buf pred;
        kf_buf_init(&pred, 1u << 16);
        int exact = 0;
        char *wh = NULL;
        if (kf_dispatch_predicate(t, sizes, &pred, &exact)) {
            note(d,
                 kf__asprintf("%s: no integer argument tells this shape apart; the fallback (node %lld) runs "
                              "there",
                              st_, (long long)w[fallback].id));
        } else if ((wh = kf_candidate_when_text(w[wi].text)) && !exact) {
            /* routed by its domain below, when its kforge:when can be written over the
             * arguments: it was checked on every shape there */
            if (domain_of(t, w, wi, dom, tried, &rc)) used[wi] = 1;
            else
                note(d,
                     kf__asprintf("%s: node %lld has a kforge:when and the arguments do not pin every size; "
                                  "the fallback runs there",
                                  st_, (long long)id));
        } else {
            if (route_add(&v, &n, wi, 0, pred.p, st_)) rc = 1;
            route_record(d, id, j, NULL, pred.p);
            used[wi] = 1;
        }
        free(wh);
        kf_buf_free(&pred);
    }
    /* then each routed winner with a kforge:when over the rest of its domain (the exact
     * shapes above came first) */
    for (int i = 0; i < nw && !rc; i++) {
        if (i == fallback || !used[i] || !domain_of(t, w, i, dom, tried, &rc)) continue;
        char *wh = kf_candidate_when_text(w[i].text);
        if (route_add(&v, &n, i, 1, dom[i], wh)) rc = 1;
        route_record(d, w[i].id, -1, wh, dom[i]);
        free(wh);
    }
    for (int i = 0; i < nw; i++) free(dom[i]);
    free(dom);
    free(tried);
    if (rc) {
        kf_dispatch_plan_free(v, n);
        v = NULL, n = 0;
    }
    *out = v;
    *nout = n;
    return rc ? -1 : 0;
}

/* The fallback's kforge:when, its parameters replaced by their values, as the
 * dispatcher's own (it claims what the fallback claims). */
void kf_dispatch_when_header(kf_buf *b, const kf_winner *fb) {
    char *fw = kf_candidate_when_text(fb->text);
    if (fw) {
        /* the fallback's domain is the dispatcher's; its parameters are fixed here */
        kf_buf wb;
        kf_buf_init(&wb, 1u << 16);
        kf_buf_printf(&wb, "%s", fw);
        kf_toks tw = {0};
        json_t *pj = fb->params_json ? json_loads(fb->params_json, 0, NULL) : NULL;
        kf_buf out;
        kf_buf_init(&out, 1u << 16);
        if (!kf_ctok_tokenize(wb.p, wb.len, &tw)) {
            size_t at = 0;
            for (size_t i = 0; i < tw.n; i++) {
                json_t *pv = json_object_getn(pj, wb.p + tw.v[i].off, tw.v[i].len);
                if (tw.v[i].kind != KF_TOK_ID || !pv) continue;
                kf_buf_append(&out, wb.p + at, tw.v[i].off - at);
                if (json_is_string(pv)) kf_buf_printf(&out, "%s", json_string_value(pv));
                else kf_buf_printf(&out, "%lld", (long long)json_integer_value(pv));
                at = tw.v[i].off + tw.v[i].len;
            }
            kf_buf_append(&out, wb.p + at, wb.len - at);
        }
        kf_buf_printf(b, "/* kforge:when %s */\n", out.p ? out.p : fw);
        kf_buf_free(&out);
        json_decref(pj);
        free(tw.v);
        kf_buf_free(&wb);
    }
    free(fw);
}

/* Winner x's text into b: its parameters as #define, its file-scope names prefixed
 * kf_n<ID>_, its kforge: directives neutralised, then (launcher: a CUDA winner) the
 * function that makes its launches, then the #undefs. */
kf_status kf_dispatch_section(kf_ctx *ctx, const kf_task *t, const char *run_dir, const kf_winner *x,
                              kf_buf *b, kf_dispatch_launcher launcher) {
    kf_status st = KF_OK;
    kf_toks tk = {0};
    kf_names ren = {0}, mac = {0};
    char prefix[64];
    snprintf(prefix, sizeof prefix, "kf_n%lld_", (long long)x->id);
    if (kf_ctok_tokenize(x->text, x->len, &tk) || kf_ctok_scan(x->text, &tk, &ren, &mac)) {
        st = kf__err(ctx, KF_ENOMEM, "out of memory");
    } else {
        if (!launcher) kf_ctok_add(&ren, t->entry, strlen(t->entry));
        kf_buf_printf(b, "\n/* ---- node %lld (%s/src/%s.%s) ---- */\n", (long long)x->id, run_dir, x->hash,
                      x->ext);
        param_defs(b, x->params_json, "#define ");
        size_t at = b->len;
        rewrite(b, x->text, x->len, &tk, &ren, prefix);
        if (b->p) neutralise(b->p + at);
        kf_buf_printf(b, "\n");
        if (launcher) st = launcher(ctx, t, x, &ren, b);
        json_t *pj = x->params_json ? json_loads(x->params_json, 0, NULL) : NULL;
        const char *k;
        json_t *v;
        json_object_foreach(pj, k, v) kf_buf_printf(b, "#undef %s\n", k);
        for (size_t m = 0; m < mac.n; m++)
            if (!(mac.v[m][0] == '_' && strstr(mac.v[m], "_SOURCE")) && !json_object_get(pj, mac.v[m]))
                kf_buf_printf(b, "#undef %s\n", mac.v[m]);
        json_decref(pj);
    }
    free(tk.v);
    kf_ctok_names_free(&ren);
    kf_ctok_names_free(&mac);
    return st;
}

void kf_dispatch_sizes_text(const kf_best_shape *sizes, const char *sep, char *out, size_t n) {
    size_t at = 0;
    if (n) out[0] = 0;
    for (int i = 0; i < sizes->nsizes; i++) {
        int w =
            snprintf(out + at, n - at, "%s%s=%lld", at ? sep : "", sizes->name[i], (long long)sizes->v[i]);
        if (w < 0 || (size_t)w >= n - at) {
            out[at] = 0; /* a whole item or none */
            break;
        }
        at += (size_t)w;
    }
}
