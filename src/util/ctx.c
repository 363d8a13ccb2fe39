/*
 * ctx.c - the context: the error state every call reports into (kf_errmsg, as SQLite's
 * sqlite3_errmsg), and the text of the status codes (KF_STATUS_MAP in kforge.h).
 *
 * A context is a status and a fixed buffer of text, nothing else: making one cannot fail
 * but for memory, and writing an error never allocates. It is not locked: a context
 * belongs to one thread at a time (kforge.h).
 */
#include "util.h"

#include <stdlib.h>

static const char *const status_text[] = {
#define KF_X(n, s) s,
    KF_STATUS_MAP(KF_X)
#undef KF_X
};

kf_ctx *kf_ctx_new(void) {
    kf__json_init(); /* jansson allocates through kforge's counter (kf__json_failures) */
    return calloc(1, sizeof(kf_ctx));
}
void kf_ctx_free(kf_ctx *ctx) { free(ctx); }
const char *kf_errmsg(const kf_ctx *ctx) { return ctx && ctx->err[0] ? ctx->err : "no error"; }

const char *kf_strstatus(kf_status s) {
    return (unsigned)s < KF_STATUS_COUNT ? status_text[s] : "unknown status";
}

kf_status kf__err(kf_ctx *ctx, kf_status st, const char *fmt, ...) {
    if (ctx) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(ctx->err, sizeof ctx->err, fmt, ap);
        va_end(ap);
        ctx->last = st;
    }
    return st;
}
