/*
 * export.c - kforge export (docs/run.md, docs/cli.md): a run's winning kernels and one
 * dispatcher that picks among them by shape.
 *
 * Winners: per visible shape, the kept node (accepted by the checker on visible, hidden
 * and edge shapes, and confirmed by the Critic) with the highest speedup there
 * (kf_record_best_shapes, which `kforge best` uses too: export reads the run through
 * src/record/, and calls nothing of the loop, which never calls export). Fallback: the kept node with
 * the best geometric mean over the visible shapes, among the nodes without a kforge:when
 * when there is one (a node with one is timed on its domain only); every shape no
 * predicate claims goes to it.
 *
 * The dispatcher is the task backend's to write (its dispatcher slot, backend.h): it takes
 * the best node per shape as kf_best_shape records and says what it routed in a
 * kf_dispatch_out, which export alone writes as EXPORT.json's routes and notes. The C
 * one (src/backend/c/dispatch.c) is one file: each winner's text with its kforge:
 * directives neutralised, its parameters as #define before it and #undef after (with
 * every macro it defines), and every name it defines at file scope (functions, the entry,
 * static helpers, typedefs, variables, struct/union/enum tags, enumerators) prefixed with
 * kf_n<ID>_, so two winners' helpers cannot collide. The names come from a small
 * tokenizer and declaration scanner (src/backend/ctok.c), not a C parser: names made by macros at
 * file scope (DEFINE_KERNEL(x)) are not seen. The entry tests the shape predicates
 * (integer scalar arguments equal to their values at the winner's shape), then each
 * winner's kforge:when domain, and calls the winner, else the fallback. Whatever the scanner misses, the
 * dispatcher is checked and timed like any candidate before it is written; a rejected dispatcher is never
 * written.
 *
 * Every file is written into DIR.tmp-XXXXXX and renamed onto DIR at the end: a failed
 * export leaves nothing half-written. An existing DIR is replaced only when it is empty
 * or holds an earlier export (EXPORT.json).
 *
 * The CUDA dispatcher (src/backend/cuda/dispatch.c) is a host-mode file (docs/cuda.md "Host mode"):
 * each routed winner's kernel-mode text renamed apart as for C, then a launcher per
 * winner that makes its kforge:launch launches, and kforge_launch choosing by the same
 * predicates.
 * Without a GPU it cannot be checked: it is then built with nvcc only (host mode's build
 * path) and written as <task>_dispatch.unverified.cu, never under the dispatcher's name
 * (EXPORT.json: "dispatcher": null, "dispatcher_unverified"; the CLI exits 3); one that
 * does not build is rejected and not written. A backend without a dispatcher slot has its
 * winners exported without one, and EXPORT.json's "why" says so.
 */
#define _GNU_SOURCE
#include "../backend/backend.h"
#include "../backend/dispatch.h"
#include "../backend/registry.h"
#include "../check/result.h"
#include "../critic/critic.h"
#include "../record/record.h"
#include "../store/store.h"
#include "../task/candidate.h"
#include "../task/task.h"
#include "../util/util.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* What may win or fall back: only what the Critic kept (re-timed against its parent in
 * fresh workers). A node measured once and not kept is not a winner: the largest of many
 * single measurements is biased upwards (identical code "wins" 1.04x that way). */
static int verified(kf_node_state s) { return s == KF_NODE_KEPT; }

/* ---- files ----------------------------------------------------------------------------- */

static kf_status write_file(kf_ctx *ctx, const char *dir, const char *name, const char *data, size_t len) {
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return kf__err(ctx, KF_EIO, "%s: %s", path, strerror(errno));
    size_t at = 0;
    while (at < len) {
        ssize_t w = write(fd, data + at, len - at);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            int e = errno;
            close(fd);
            return kf__err(ctx, KF_EIO, "%s: %s", path, strerror(e));
        }
        at += (size_t)w;
    }
    if (fsync(fd) || close(fd)) return kf__err(ctx, KF_EIO, "%s: %s", path, strerror(errno));
    return KF_OK;
}

/* DIR may be replaced: it does not exist, or is an empty directory or an earlier export. */
static kf_status out_ok(kf_ctx *ctx, const char *out, int *exists, char **prev_run) {
    struct stat sb;
    *exists = 0;
    if (stat(out, &sb)) {
        if (errno == ENOENT) return KF_OK;
        if (errno == ENOTDIR)
            return kf__err(ctx, KF_EUSAGE, "-o %s: a part of the path is a file, not a directory", out);
        return kf__err(ctx, KF_EIO, "%s: %s", out, strerror(errno));
    }
    if (!S_ISDIR(sb.st_mode)) return kf__err(ctx, KF_EUSAGE, "%s exists and is not a directory", out);
    *exists = 1;
    char p[4400];
    snprintf(p, sizeof p, "%s/EXPORT.json", out);
    if (!access(p, F_OK)) {
        /* whose export it was: replacing another run's is worth a warning */
        json_t *prev = json_load_file(p, 0, NULL);
        const char *pr = json_string_value(json_object_get(prev, "run"));
        if (pr && prev_run) *prev_run = strdup(pr);
        json_decref(prev);
        return KF_OK;
    }
    DIR *d = opendir(out);
    if (!d) return kf__err(ctx, KF_EIO, "%s: %s", out, strerror(errno));
    struct dirent *de;
    int empty = 1;
    while ((de = readdir(d)))
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) empty = 0;
    closedir(d);
    if (!empty)
        return kf__err(ctx, KF_EUSAGE,
                       "%s is a directory that holds files and no EXPORT.json: not replaced "
                       "(choose another -o)",
                       out);
    return KF_OK;
}

/* kf_bench of the dispatcher at path against the reference: its verdict into *v (the
 * caller's either way: kf_verdict_free). */
static kf_status bench_verify(kf_ctx *ctx, const kf_task *t, const char *path, const kf_opts *o,
                              struct kf_verdict *v) {
    kf_verdict_init(v);
    kf_result *res = NULL;
    kf_status s = kf_bench(ctx, t, path, o, &res);
    if (s) return s;
    int rc = kf_result_verdict_typed(res, v);
    kf_result_free(res);
    return rc ? kf__err(ctx, KF_ENOMEM, "out of memory") : KF_OK;
}

/* No device here (kf_bench said KF_EBACKEND, whose message is on ctx): build the
 * dispatcher at path with the task's backend only (CUDA: nvcc, as host mode does). *ver:
 * verdict "unverified" (it builds; error: why it could not be run), or "rejected" with
 * compile_error and the compiler's message. KF_OK, or KF_ENOMEM. When the compiler itself
 * is missing it is "unverified" too, with compiled false. */
static kf_status compile_only(kf_ctx *ctx, const kf_task *t, const char *path, const char *text, size_t len,
                              json_t **ver) {
    char why[1024], bdir[4400];
    snprintf(why, sizeof why, "%s", kf_errmsg(ctx));
    snprintf(bdir, sizeof bdir, "%s.build-XXXXXX", path);
    kf_build bd;
    memset(&bd, 0, sizeof bd);
    kf_status cs = mkdtemp(bdir) ? kf_backend_compile(kf_backend_get(t->backend), ctx, t, path, text, len,
                                                      NULL, 0, bdir, 300, &bd)
                                 : kf__err(ctx, KF_EIO, "%s: %s", bdir, strerror(errno));
    if (!cs && !bd.ok) {
        *ver = json_pack("{s:s, s:[{s:s, s:s?}], s:[], s:n, s:b}", "verdict", "rejected", "reasons", "code",
                         "compile_error", "message", bd.message, "shapes", "speedup", "compiled", 0);
    } else {
        *ver = json_pack("{s:s, s:[], s:[], s:n, s:s, s:b}", "verdict", "unverified", "reasons", "shapes",
                         "speedup", "error", why, "compiled", !cs);
        if (cs && *ver) json_object_set_new(*ver, "compile_error", json_string(kf_errmsg(ctx)));
    }
    kf_build_free(&bd);
    if (bdir[0]) kf__rmtree(bdir);
    return *ver ? KF_OK : kf__err(ctx, KF_ENOMEM, "out of memory");
}

/* ---- the export ------------------------------------------------------------------------ */

/* One export in progress: what it read from the run, the winners, the document and the
 * private directory it writes into. */
typedef struct {
    kf_ctx *ctx;
    const char *run_dir;
    char out_dir[4096];
    kf_store *st;
    kf_task *t;
    kf_node_vec a;
    kf_winner *w;
    int nw, fallback, exists;
    json_t *best, *doc, *routes, *notes, *files;
    char tmp[4400], old[4400];
    char *prev_run; /* the run of the export DIR holds, when another run's */
    kf_buf disp;
} export_job;

/* The run, its task as it is now (refused when changed since the run), its nodes and
 * the best kept node per visible shape. */
static kf_status read_run(export_job *x) {
    kf_ctx *ctx = x->ctx;
    kf_status s = kf_store_open(ctx, x->run_dir, NULL, &x->st);
    if (s) return s;
    if ((s = kf_task_load(ctx, kf_store_task_dir(x->st), &x->t))) return s;
    if (strcmp(x->t->fingerprint, kf_store_task_fingerprint(x->st)))
        return kf__err(ctx, KF_ETASK,
                       "%s: the task changed since this run started (fingerprint %.12s, now %.12s): "
                       "its verdicts do not hold for the task as it is",
                       x->run_dir, kf_store_task_fingerprint(x->st), x->t->fingerprint);
    if ((s = kf_store_each_node(x->st, kf_record_collect, &x->a))) return s;
    x->best = kf_record_best_shapes(x->a.v, x->a.n);
    return KF_OK;
}

/* The fallback: the best geometric mean among the nodes that claim every shape (no
 * kforge:when; a node with one is timed on its domain only), else the best of all. */
static kf_status pick_fallback(export_job *x, int64_t *fb_id) {
    kf_status s = KF_OK;
    const kf_node_vec *a = &x->a;
    *fb_id = 0;
    for (int pass = 0; pass < 2 && !*fb_id && !s; pass++) {
        double fb = -1;
        for (size_t i = 0; i < a->n && !s; i++) {
            if (!verified(a->v[i].state) || a->v[i].speedup <= fb) continue;
            if (pass == 0) {
                char *txt = NULL;
                size_t tl = 0;
                if ((s = kf_store_read_source(x->st, a->v[i].src_hash, a->v[i].ext, &txt, &tl))) break;
                char *wh = kf_candidate_when_text(txt);
                free(txt);
                if (wh) {
                    free(wh);
                    continue;
                }
            }
            fb = a->v[i].speedup, *fb_id = a->v[i].id;
        }
    }
    return s;
}

/* DIR may be replaced (out_ok); replacing another run's export is worth a warning. */
static kf_status check_out(export_job *x) {
    kf_status s = out_ok(x->ctx, x->out_dir, &x->exists, &x->prev_run);
    if (s || !x->prev_run) return s;
    char ra[PATH_MAX], rb[PATH_MAX];
    int same = realpath(x->prev_run, ra) && realpath(x->run_dir, rb) ? !strcmp(ra, rb)
                                                                     : !strcmp(x->prev_run, x->run_dir);
    if (same) {
        free(x->prev_run);
        x->prev_run = NULL;
    } else {
        fprintf(stderr,
                "kforge export: warning: %s holds the export of another run (%s); it is replaced by "
                "run %s's\n",
                x->out_dir, x->prev_run, x->run_dir);
    }
    return KF_OK;
}

/* The winners: the fallback first, then each shape's in shape order, with their texts. */
static kf_status gather_winners(export_job *x, int64_t fb_id) {
    kf_ctx *ctx = x->ctx;
    kf_status s = KF_OK;
    json_t *best = x->best;
    x->w = calloc(json_array_size(best) + 1, sizeof *x->w);
    if (!x->w) return kf__err(ctx, KF_ENOMEM, "out of memory");
    for (size_t j = 0; j <= json_array_size(best) && !s; j++) {
        int64_t id =
            j == 0 ? fb_id : json_integer_value(json_object_get(json_array_get(best, j - 1), "node"));
        int dup = 0;
        for (int k = 0; k < x->nw; k++) dup |= x->w[k].id == id;
        if (dup) continue;
        const kf_node *nd = NULL;
        for (size_t k = 0; k < x->a.n; k++)
            if (x->a.v[k].id == id) nd = &x->a.v[k];
        if (!nd) continue;
        kf_winner *w = &x->w[x->nw++];
        w->id = id;
        w->speedup = nd->speedup;
        w->params_json = nd->params_json;
        w->shapes_json = nd->shapes_json;
        snprintf(w->ext, sizeof w->ext, "%s", nd->ext);
        snprintf(w->hash, sizeof w->hash, "%s", nd->src_hash);
        s = kf_store_read_source(x->st, nd->src_hash, nd->ext, &w->text, &w->len);
    }
    if (!s) x->fallback = 0;
    return s;
}

/* Each winner as <task>_<node>.<ext> into the private directory, with a comment that says
 * what it is, and its entry in x->files. */
static kf_status write_winners(export_job *x) {
    kf_ctx *ctx = x->ctx;
    const kf_task *t = x->t;
    const char *run_dir = x->run_dir, *out_dir = x->out_dir;
    kf_winner *w = x->w;
    kf_status s = KF_OK;
    for (int i = 0; i < x->nw && !s; i++) {
        char name[256];
        snprintf(name, sizeof name, "%s_%lld.%s", t->name, (long long)w[i].id, w[i].ext);
        kf_buf f;
        kf_buf_init(&f, 64u << 20);
        /* no "kforge" followed by a colon in this comment: it would read as a directive */
        kf_buf_printf(&f,
                      "/* %s - node %lld of run %s (kforge export).\n * Speedups over the reference:", name,
                      (long long)w[i].id, run_dir);
        /* the column goes into EXPORT.json as stored; its fields are read from it */
        json_t *shj = w[i].shapes_json ? json_loads(w[i].shapes_json, 0, NULL) : NULL;
        struct kf_verdict sh;
        kf_verdict_from_json(shj, &sh);
        json_t *wins = json_array();
        size_t k;
        json_t *e;
        for (int j = 0; j < sh.nshapes; j++) {
            char sz[512];
            kf_verdict_sizes_text(&sh.shapes[j].sizes, ", ", sz, sizeof sz);
            kf_buf_printf(&f, " [%s] %.3fx%s", sz, sh.shapes[j].speedup,
                          (sh.shapes[j].has & KF_VS_WIN) && sh.shapes[j].win ? " (a win)" : "");
        }
        json_array_foreach(x->best, k, e) if (json_integer_value(json_object_get(e, "node")) == w[i].id)
            json_array_append(wins, json_object_get(e, "sizes"));
        kf_buf_printf(&f, "; geometric mean %.3fx.\n * Check it again: kforge check %s %s/%s\n */\n",
                      w[i].speedup, t->dir, out_dir, name);
        kf_dispatch_pinned(&f, w[i].params_json);
        kf_buf_append(&f, w[i].text, w[i].len);
        if (f.dropped || !f.p) s = kf__err(ctx, KF_ENOMEM, "out of memory");
        else s = write_file(ctx, x->tmp, name, f.p, f.len);
        kf_buf_free(&f);
        json_t *pj = w[i].params_json ? json_loads(w[i].params_json, 0, NULL) : json_null();
        char srcp[4400];
        snprintf(srcp, sizeof srcp, "%s/src/%s.%s", run_dir, w[i].hash, w[i].ext);
        json_array_append_new(x->files, json_pack("{s:I, s:s, s:s, s:o, s:f, s:o, s:o, s:b}", "node",
                                                  (json_int_t)w[i].id, "file", name, "source", srcp, "params",
                                                  pj ? pj : json_null(), "speedup", w[i].speedup, "shapes",
                                                  shj ? shj : json_array(), "wins", wins, "fallback",
                                                  i == x->fallback));
        kf_verdict_free(&sh);
    }
    return s;
}

/* EXPORT.json's head: the run, the task, the winners, the run's seals (said on stderr
 * too when they warn). */
static kf_status start_doc(export_job *x) {
    const kf_task *t = x->t;
    x->doc = json_pack("{s:s, s:s, s:s, s:s, s:s, s:o, s:I}", "run", x->run_dir, "task", t->dir, "task_name",
                       t->name, "backend", t->backend, "fingerprint", t->fingerprint, "winners",
                       json_incref(x->files), "fallback", (json_int_t)x->w[x->fallback].id);
    if (!x->doc) return kf__err(x->ctx, KF_ENOMEM, "out of memory");
    json_object_set_new(x->doc, "replaced_run", x->prev_run ? json_string(x->prev_run) : json_null());
    kf_buf iw;
    kf_buf_init(&iw, 1u << 16);
    json_object_set_new(x->doc, "integrity", kf_record_integrity(x->st, x->a.v, x->a.n, &iw));
    if (iw.p && iw.p[0]) fprintf(stderr, "kforge export: %s", iw.p);
    kf_buf_free(&iw);
    return KF_OK;
}

/* Check and time the dispatcher at dpath (kf_bench with opts): *ver as EXPORT.json keeps
 * it. A refused timing alone (timing_mismatch: the clocks disagreed, which a loaded
 * machine can cause too) is measured once more in fresh workers; the verdict that counts
 * is the last one, and `attempts` says how many were made. Without a GPU a CUDA
 * dispatcher is only built (*unverified then, when it builds). */
static kf_status verify_dispatcher(export_job *x, const kf_opts *opts, const char *dpath, kf_backend *be,
                                   json_t **ver, int *unverified) {
    kf_ctx *ctx = x->ctx;
    const kf_task *t = x->t;
    kf_opts o;
    if (opts) o = *opts;
    else kf_opts_init(&o);
    o.vs_path = NULL;
    kf_status s;
    int attempt = 0, compiled = 0;
    struct kf_verdict v;
    kf_verdict_init(&v);
    do {
        kf_verdict_free(&v);
        s = bench_verify(ctx, t, dpath, &o, &v);
        if (s == KF_EBACKEND && kf_backend_has(be, KF_BACKEND_DEVICE)) {
            /* no device here: the compiler can still say whether it builds; never
             * written as verified */
            json_decref(*ver);
            *ver = NULL;
            s = compile_only(ctx, t, dpath, x->disp.p, x->disp.len, ver);
            *unverified = !s && !strcmp(json_string_value(json_object_get(*ver, "verdict")), "unverified");
            compiled = 1;
            break;
        }
        if (s) break;
        attempt++;
    } while (attempt < 2 && kf_critic_timing_only(&v));
    if (!s && !compiled) {
        json_decref(*ver);
        if (!(*ver = kf_verdict_summary_json(&v))) s = kf__err(ctx, KF_ENOMEM, "out of memory");
    }
    kf_verdict_free(&v);
    if (s) return s;
    json_object_set_new(*ver, "attempts", json_integer(attempt));
    return KF_OK;
}

/* What the verification means for the dispatcher at dpath (named dname): rejected, it is
 * removed; unverified, it is renamed to say so; else it is the dispatcher. EXPORT.json
 * says which, with the verification (taken) and the command that checks it again. */
static kf_status settle_dispatcher(export_job *x, json_t *ver, int unverified, char *dname, size_t dlen,
                                   const char *dpath, const char *ext, const char *title) {
    const kf_task *t = x->t;
    json_t *doc = x->doc;
    const char *out_dir = x->out_dir;
    int rejected = !unverified && strcmp(json_string_value(json_object_get(ver, "verdict")), "accepted") != 0;
    if (rejected) {
        unlink(dpath);
        json_object_set_new(doc, "dispatcher", json_null());
        json_object_set_new(doc, "why",
                            json_string("the dispatcher was rejected by the checker (see "
                                        "verification.reasons); it was not written"));
        size_t i;
        json_t *e;
        fprintf(stderr, "kforge export: the dispatcher was rejected and not written:\n");
        json_array_foreach(json_object_get(ver, "reasons"), i, e)
            fprintf(stderr, "  %s: %s\n", json_string_value(json_object_get(e, "code")),
                    json_string_value(json_object_get(e, "message")));
    } else if (unverified) {
        /* written under a name that says so, and not as "dispatcher" */
        char uname[256], upath[4700];
        snprintf(uname, sizeof uname, "%s_dispatch.unverified.%s", t->name, ext);
        snprintf(upath, sizeof upath, "%s/%s", x->tmp, uname);
        if (rename(dpath, upath)) {
            kf_status s = kf__err(x->ctx, KF_EIO, "%s: %s", upath, strerror(errno));
            json_decref(ver);
            return s;
        }
        snprintf(dname, dlen, "%s", uname);
        json_object_set_new(doc, "dispatcher", json_null());
        json_object_set_new(doc, "dispatcher_unverified", json_string(uname));
        json_object_set_new(
            doc, "why",
            json_sprintf("the %s dispatcher could not be verified here (%s); it builds with nvcc and was "
                         "written as %s, unverified: check it on a GPU with kforge bench %s %s/%s",
                         title, json_string_value(json_object_get(ver, "error")), uname, t->dir, out_dir,
                         uname));
        fprintf(stderr,
                "kforge export: the %s dispatcher could not be verified here (%s): written as %s/%s, "
                "UNVERIFIED; the winners are verified\n",
                title, json_string_value(json_object_get(ver, "error")), out_dir, uname);
    } else {
        json_object_set_new(doc, "dispatcher", json_string(dname));
        json_object_set_new(doc, "why", json_null());
    }
    json_object_set_new(doc, "verification", ver);
    char cmd[4800];
    snprintf(cmd, sizeof cmd, "kforge bench %s %s/%s", t->dir, out_dir, dname);
    json_object_set_new(doc, "command", json_string(cmd));
    return KF_OK;
}

/* The best node per visible shape (x->best) as the dispatcher slot takes them, one for
 * one (the names borrowed from x->best). NULL when out of memory. */
static kf_best_shape *best_shapes(const export_job *x) {
    size_t n = json_array_size(x->best), j;
    kf_best_shape *bs = calloc(n ? n : 1, sizeof *bs);
    json_t *e;
    json_array_foreach(bs ? x->best : NULL, j, e) {
        const char *k;
        json_t *v;
        bs[j].node = json_integer_value(json_object_get(e, "node"));
        json_object_foreach(json_object_get(e, "sizes"), k, v) {
            if (bs[j].nsizes == KF_MAX_SIZES) break;
            bs[j].name[bs[j].nsizes] = k;
            bs[j].v[bs[j].nsizes++] = json_integer_value(v);
        }
    }
    return bs;
}

/* The dispatcher slot's tests and notes as EXPORT.json's routes ({sizes, node, predicate}
 * at a shape, {domain, node, predicate} over a kforge:when) and notes. */
static void routes_json(export_job *x, const kf_dispatch_out *d) {
    for (int i = 0; i < d->nroutes; i++) {
        const kf_dispatch_route *r = &d->routes[i];
        json_array_append_new(
            x->routes, r->shape >= 0
                           ? json_pack("{s:O, s:I, s:s}", "sizes",
                                       json_object_get(json_array_get(x->best, (size_t)r->shape), "sizes"),
                                       "node", (json_int_t)r->node, "predicate", r->predicate)
                           : json_pack("{s:s?, s:I, s:s}", "domain", r->domain, "node", (json_int_t)r->node,
                                       "predicate", r->predicate));
    }
    for (int i = 0; i < d->nnotes; i++) json_array_append_new(x->notes, json_string(d->notes[i]));
}

/* The dispatcher: built, written into the private directory, checked and timed, and what
 * came of it said in EXPORT.json. A task that cannot have one (a soft emitter's refusal)
 * still exports its winners. */
static kf_status dispatcher(export_job *x, const kf_opts *opts) {
    kf_ctx *ctx = x->ctx;
    const kf_task *t = x->t;
    json_t *doc = x->doc;
    kf_backend *be = kf_backend_get(t->backend);
    if (!be) return kf__err(ctx, KF_EBACKEND, "backend %s is not in this build", t->backend);
    /* "the C dispatcher", "the CUDA dispatcher": the language of the backend's sources */
    char dname[256], dpath[4700], title[32];
    const char *ext = kf_backend_ext(be);
    int has = kf_backend_has_dispatcher(be);
    snprintf(title, sizeof title, "%s", has ? kf_backend_lang(be) : t->backend);
    for (char *c = title; has && *c; c++) *c = (char)toupper((unsigned char)*c);
    snprintf(dname, sizeof dname, "%s_dispatch.%s", t->name, ext);
    int alone = 0;
    kf_best_shape *bs = best_shapes(x);
    if (!bs) return kf__err(ctx, KF_ENOMEM, "out of memory");
    kf_dispatch_out d;
    kf_status s = kf_backend_dispatcher(be, ctx, t, x->run_dir, x->w, x->nw, x->fallback, bs,
                                        (int)json_array_size(x->best), &x->disp, &d, &alone);
    /* what it routed, said even when it refused the task after planning */
    routes_json(x, &d);
    kf_dispatch_out_free(&d);
    free(bs);
    if (s == KF_EUSAGE && alone) {
        /* this task cannot have a dispatcher: the winners are still exported */
        json_object_set_new(doc, "dispatcher", json_null());
        json_object_set_new(doc, "why", json_sprintf("no %s dispatcher: %s", title, kf_errmsg(ctx)));
        fprintf(stderr, "kforge export: no %s dispatcher (%s); the winners are in %s\n", title,
                kf_errmsg(ctx), x->out_dir);
        return KF_OK;
    }
    if (s) return s;
    snprintf(dpath, sizeof dpath, "%s/%s", x->tmp, dname);
    if ((s = write_file(ctx, x->tmp, dname, x->disp.p, x->disp.len))) return s;
    json_t *ver = NULL;
    int unverified = 0;
    if ((s = verify_dispatcher(x, opts, dpath, be, &ver, &unverified))) {
        json_decref(ver);
        unlink(dpath);
        return s;
    }
    return settle_dispatcher(x, ver, unverified, dname, sizeof dname, dpath, ext, title);
}

/* The private directory onto DIR: an earlier export is moved aside first, then removed. */
static kf_status into_place(export_job *x) {
    kf_status s = KF_OK;
    const char *out_dir = x->out_dir;
    if (x->exists) {
        snprintf(x->old, sizeof x->old, "%s.old-XXXXXX", out_dir);
        if (!mkdtemp(x->old) || rename(out_dir, x->old)) {
            s = kf__err(x->ctx, KF_EIO, "%s: cannot move the earlier export aside (%s)", out_dir,
                        strerror(errno));
            x->old[0] = 0;
        } else {
            /* mkdtemp made old; rename over an empty directory replaced it */
        }
    }
    if (!s && rename(x->tmp, out_dir)) {
        s = kf__err(x->ctx, KF_EIO, "%s: %s", out_dir, strerror(errno));
        if (x->old[0]) rename(x->old, out_dir);
    } else if (!s) {
        x->tmp[0] = 0;
    }
    if (x->old[0] && !s) kf__rmtree(x->old);
    return s;
}

/* The export as the run's `export` event; a failure to record it is only a warning. */
static void record_export(export_job *x) {
    json_t *doc = x->doc;
    json_t *ev =
        json_pack("{s:s, s:O, s:O, s:O}", "out", x->out_dir, "dispatcher", json_object_get(doc, "dispatcher"),
                  "fallback", json_object_get(doc, "fallback"), "routes", x->routes);
    json_t *ver = json_object_get(doc, "verification");
    if (ver) json_object_set(ev, "verification", ver);
    char *evs = kf__json_dumps(ev, JSON_COMPACT);
    if (!evs || kf_store_event(x->st, 0, "export", evs))
        fprintf(stderr, "kforge export: warning: the export was written but not recorded in %s: %s\n",
                x->run_dir, evs ? kf_errmsg(x->ctx) : "out of memory");
    free(evs);
    json_decref(ev);
}

/* Everything after reading the run, into x->tmp and then onto DIR; *json as
 * kf_run_export_opts. */
static kf_status export_run(export_job *x, const kf_opts *opts, char **json) {
    kf_ctx *ctx = x->ctx;
    int64_t fb_id = 0;
    kf_status s = read_run(x);
    if (!s) s = pick_fallback(x, &fb_id);
    if (s) return s;
    if (!x->best || !fb_id || !json_array_size(x->best))
        return kf__err(ctx, KF_EUSAGE,
                       "%s: no kept node (none was accepted and confirmed by the Critic): nothing to export",
                       x->run_dir);
    if ((s = check_out(x)) || (s = gather_winners(x, fb_id))) return s;
    /* a private directory beside DIR, renamed onto it at the end */
    snprintf(x->tmp, sizeof x->tmp, "%s.tmp-XXXXXX", x->out_dir);
    if (!mkdtemp(x->tmp)) {
        int e = errno;
        char parent[4400];
        snprintf(parent, sizeof parent, "%s", x->out_dir);
        char *sl = strrchr(parent, '/');
        if (sl && sl > parent) *sl = 0;
        else snprintf(parent, sizeof parent, ".");
        struct stat sb;
        /* the usual cause, said as such: -o a/b where a does not exist */
        if (e == ENOENT)
            s = kf__err(
                ctx, KF_EUSAGE,
                "-o %s: its parent directory %s does not exist (create it first, or choose another -o)",
                x->out_dir, parent);
        else if (!stat(parent, &sb) && !S_ISDIR(sb.st_mode))
            s = kf__err(ctx, KF_EUSAGE, "-o %s: %s is not a directory", x->out_dir, parent);
        else
            s = kf__err(ctx, KF_EIO, "-o %s: cannot create a directory in %s (%s)", x->out_dir, parent,
                        strerror(e));
        x->tmp[0] = 0;
        return s;
    }
    chmod(x->tmp, 0755);
    if ((s = write_winners(x)) || (s = start_doc(x)) || (s = dispatcher(x, opts))) return s;
    json_object_set(x->doc, "routes", x->routes);
    json_object_set(x->doc, "notes", x->notes);
    char *txt = kf__json_dumps(x->doc, JSON_INDENT(1));
    if (!txt) return kf__err(ctx, KF_ENOMEM, "out of memory");
    s = write_file(ctx, x->tmp, "EXPORT.json", txt, strlen(txt));
    if (!s) s = into_place(x);
    if (!s) {
        record_export(x);
        if (json) *json = txt, txt = NULL;
    }
    free(txt);
    return s;
}

kf_status kf_run_export_opts(kf_ctx *ctx, const char *run_dir, const char *out_arg, const kf_opts *opts,
                             char **json) {
    export_job x;
    memset(&x, 0, sizeof x);
    x.ctx = ctx;
    x.run_dir = run_dir;
    /* DIR without trailing slashes: DIR.tmp-XXXXXX must lie beside it, not inside */
    snprintf(x.out_dir, sizeof x.out_dir, "%s", out_arg ? out_arg : "");
    for (size_t l = strlen(x.out_dir); l > 1 && x.out_dir[l - 1] == '/'; l--) x.out_dir[l - 1] = 0;
    if (json) *json = NULL;
    if (!run_dir || !*x.out_dir) return kf__err(ctx, KF_EUSAGE, "kforge export RUN -o DIR");
    x.fallback = -1;
    x.routes = json_array();
    x.notes = json_array();
    x.files = json_array();
    kf_buf_init(&x.disp, 64u << 20);
    kf_status s = export_run(&x, opts, json);
    free(x.prev_run);
    if (x.tmp[0]) kf__rmtree(x.tmp);
    for (int i = 0; i < x.nw; i++) free(x.w[i].text);
    free(x.w);
    kf_record_vec_free(&x.a);
    kf_buf_free(&x.disp);
    json_decref(x.best);
    json_decref(x.doc);
    json_decref(x.routes);
    json_decref(x.notes);
    json_decref(x.files);
    kf_task_free(x.t);
    kf_store_close(x.st);
    return s;
}

kf_status kf_run_export(kf_ctx *ctx, const char *run_dir, const char *out_dir, char **json) {
    return kf_run_export_opts(ctx, run_dir, out_dir, NULL, json);
}
