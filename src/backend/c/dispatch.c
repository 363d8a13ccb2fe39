/*
 * dispatch.c - the C backend's dispatcher slot (kforge export): one C file that holds each
 * routed winner's text renamed apart (../dispatch.c), then the entry, which tests the
 * shape predicates and calls the winner; then each winner with a kforge:when over its
 * whole domain (kf_dispatch_domain), else the fallback. A shape no argument tells apart,
 * or a winner whose kforge:when cannot be written over the arguments and whose arguments
 * do not pin every size, goes to the fallback (a note says so). One node winning
 * everywhere is the dispatcher as it is.
 */
#include "c.h"

#include "../dispatch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

kf_status kf__c_dispatcher(kf_backend *be, kf_ctx *ctx, const kf_task *t, const char *run_dir,
                           const kf_winner *w, int nw, int fallback, const kf_best_shape *best, int nbest,
                           kf_buf *b, kf_dispatch_out *d, int *alone) {
    (void)be;
    *alone = 0; /* an argument type C cannot declare fails the export */
    kf_buf sw;
    kf_buf_init(&sw, 1u << 20);
    kf_status st = KF_OK;
    /* the dispatch function's body: one test per routed shape */
    int *used = calloc((size_t)nw, sizeof *used);
    if (!used) return kf__err(ctx, KF_ENOMEM, "out of memory");
    used[fallback] = 1;
    kf_buf call;
    kf_buf_init(&call, 1u << 16);
    for (int i = 0; i < t->nargs; i++) kf_buf_printf(&call, "%s%s", i ? ", " : "", t->args[i].name);
    kf_route *rt = NULL;
    int nrt = 0;
    if (kf_dispatch_plan(t, w, nw, fallback, best, nbest, used, &rt, &nrt, d)) {
        free(used);
        kf_buf_free(&call);
        kf_buf_free(&sw);
        return kf__err(ctx, KF_ENOMEM, "out of memory");
    }
    for (int k = 0; k < nrt; k++) {
        const kf_route *r = &rt[k];
        if (r->domain)
            kf_buf_printf(&sw, "    if %s { /* node %lld's domain: %s */\n", r->pred, (long long)w[r->wi].id,
                          r->label);
        else kf_buf_printf(&sw, "    if (%s) { /* %s */\n", r->pred, r->label);
        kf_buf_printf(&sw, "        kf_n%lld_%s(%s);\n        return;\n    }\n", (long long)w[r->wi].id,
                      t->entry, call.p);
    }
    kf_dispatch_plan_free(rt, nrt);
    kf_buf_printf(&sw, "    kf_n%lld_%s(%s); /* the fallback */\n", (long long)w[fallback].id, t->entry,
                  call.p);
    kf_buf_free(&call);
    if (!d->nroutes) {
        /* one node wins everywhere (or no shape can be told apart): the dispatcher is
         * that kernel, as it was checked */
        kf_buf_printf(b,
                      "/* %s_dispatch.c - written by `kforge export` from run %s: node %lld runs on every "
                      "shape. */\n",
                      t->name, run_dir, (long long)w[fallback].id);
        kf_dispatch_pinned(b, w[fallback].params_json);
        kf_buf_append(b, w[fallback].text, w[fallback].len);
        free(used);
        kf_buf_free(&sw);
        return b->p && !b->dropped ? KF_OK : kf__err(ctx, KF_ENOMEM, "out of memory");
    }

    /* the header: what this is, the fallback's domain, feature macros first */
    kf_buf_printf(b,
                  "/* %s_dispatch.c - written by `kforge export` from run %s.\n"
                  " * Picks the fastest kept kernel of the run for each visible shape, else "
                  "node %lld (the\n"
                  " * best over all shapes). Each kernel below is its node's source with its "
                  "file-scope names\n"
                  " * prefixed kf_n<ID>_ and its parameters as #define. */\n",
                  t->name, run_dir, (long long)w[fallback].id);
    kf_dispatch_when_header(b, &w[fallback]);
    for (int i = 0; i < nw; i++) {
        if (!used[i]) continue;
        for (const char *p = w[i].text; (p = strstr(p, "#define _")); p++) {
            const char *q = p + 9;
            while (kf_ctok_idch(*q)) q++;
            if (q - p > 15 && !strncmp(q - 7, "_SOURCE", 7)) kf_buf_printf(b, "%.*s\n", (int)(q - p), p);
        }
    }
    kf_buf_printf(b, "#include <stdint.h>\n");
    for (int i = 0; i < nw && !st; i++)
        if (used[i]) st = kf_dispatch_section(ctx, t, run_dir, &w[i], b, NULL);
    /* the entry */
    kf_buf_printf(b, "\n/* ---- the dispatcher ---- */\nvoid %s(", t->entry);
    for (int i = 0; i < t->nargs; i++) {
        const kf_arg *a = &t->args[i];
        const char *ct = kf_dispatch_ctype(a->type);
        if (!ct) {
            st = kf__err(ctx, KF_EUSAGE, "argument %s: type not supported by the C dispatcher", a->name);
            break;
        }
        kf_buf_printf(b, "%s%s%s%s%s", i ? ", " : "", a->is_buffer && a->io == KF_IO_IN ? "const " : "", ct,
                      a->is_buffer ? " *" : " ", a->name);
    }
    kf_buf_printf(b, ")\n{\n%s}\n", sw.p ? sw.p : "");
    if (!st && (b->dropped || !b->p))
        st = kf__err(ctx, KF_ENOMEM, "the dispatcher is too large or out of memory");
    free(used);
    kf_buf_free(&sw);
    return st;
}
