/*
 * retrieve.c - retrieval of lessons for a context pack, in three stages
 * (docs/lessons.md, "Retrieval"):
 *
 *  1. hard filter: a lesson passes when its scope covers the query - same backend and
 *     architecture (or none given on either side), one of its op tags is one of the
 *     query's or an ancestor ("op/norm" covers "op/norm/rmsnorm"), it carries a tag at or
 *     under every tag filter, and its shape predicate holds for at least one query shape.
 *     A predicate that names a size the shape does not have is false for that shape (it
 *     cannot be shown to apply; lessons of other tasks use other names), never an error.
 *  2. ranking: BM25 over FTS5 (situation x2, action x1, boundaries x0.5, tags x1.5) and
 *     cosine similarity of embeddings, each list cut at KF_LESSONS_LIST_N, fused by
 *     weighted reciprocal rank: score = 1 / (10 + keyword rank) + 0.5 / (10 + vector
 *     rank) (kf_lessons__fusion, chosen on the tuning half of the labelled queries).
 *  3. trust: only lessons whose trust is at least min_trust pass (applied with stage 1,
 *     so a distrusted lesson takes no rank from another); retired lessons never do.
 *
 * Stage 1 and the vector ranking run over an in-memory cache of every lesson's scope and
 * vector, loaded once and reloaded when the database changes (PRAGMA data_version for
 * other connections, our own writes drop it). Ties are broken by trust, then by id.
 */
#define _GNU_SOURCE
#include "lessons.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TERMS 64

void kf_lessons__cache_drop(kf_lessons *db) {
    for (size_t i = 0; i < db->n; i++) {
        kf_lesson_entry *e = &db->ents[i];
        free(e->backend);
        free(e->arch);
        for (int k = 0; k < e->nops; k++) free(e->ops[k]);
        for (int k = 0; k < e->ntags; k++) free(e->tags[k]);
        free(e->ops);
        free(e->tags);
        kf_expr_free(e->shape);
    }
    free(db->ents);
    free(db->vecs);
    free(db->df);
    db->df = NULL;
    db->ents = NULL;
    db->vecs = NULL;
    db->n = 0;
    db->cache_ok = 0;
}

static int64_t data_version(kf_lessons *db) {
    sqlite3_stmt *q = NULL;
    int64_t v = -1;
    if (sqlite3_prepare_v2(db->db, "PRAGMA data_version", -1, &q, NULL) == SQLITE_OK &&
        sqlite3_step(q) == SQLITE_ROW)
        v = sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    return v;
}

static char **strings(const char *json, int *n) {
    *n = 0;
    if (!json) return NULL;
    json_t *a = json_loads(json, 0, NULL);
    size_t m = json_array_size(a);
    char **v = m ? calloc(m, sizeof *v) : NULL;
    for (size_t i = 0; v && i < m; i++) {
        const char *s = json_string_value(json_array_get(a, i));
        if (s) v[(*n)++] = strdup(s);
    }
    json_decref(a);
    return v;
}

static kf_status cache_load(kf_lessons *db) {
    int64_t dv = data_version(db);
    if (db->cache_ok && dv == db->data_version) return KF_OK;
    kf_lessons__cache_drop(db);
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(db->db,
                           "SELECT id, uid, backend, arch, ops, tags, shape, confirmations,"
                           " refutations, retired, embed FROM lessons ORDER BY id",
                           -1, &q, NULL) != SQLITE_OK)
        return kf__err(db->ctx, KF_EIO, "%s: reading lessons: %s", db->path, sqlite3_errmsg(db->db));
    size_t cap = 0;
    kf_status st = KF_OK;
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        if (db->n == cap) {
            cap = cap ? cap * 2 : 256;
            kf_lesson_entry *e = realloc(db->ents, cap * sizeof *e);
            float *v = e ? realloc(db->vecs, cap * (size_t)db->dim * sizeof *v) : NULL;
            if (e) db->ents = e;
            if (v) db->vecs = v;
            if (!e || !v) {
                st = kf__err(db->ctx, KF_ENOMEM, "out of memory");
                break;
            }
        }
        kf_lesson_entry *e = &db->ents[db->n];
        memset(e, 0, sizeof *e);
        e->rowid = sqlite3_column_int64(q, 0);
        snprintf(e->id, sizeof e->id, "%s", (const char *)sqlite3_column_text(q, 1));
        const char *t = (const char *)sqlite3_column_text(q, 2);
        e->backend = t ? strdup(t) : NULL;
        t = (const char *)sqlite3_column_text(q, 3);
        e->arch = t ? strdup(t) : NULL;
        e->ops = strings((const char *)sqlite3_column_text(q, 4), &e->nops);
        e->tags = strings((const char *)sqlite3_column_text(q, 5), &e->ntags);
        t = (const char *)sqlite3_column_text(q, 6);
        if (t) {
            char err[128];
            e->shape = kf_expr_parse(t, err, sizeof err);
            if (!e->shape) e->retired = 1; /* validated on the way in: a damaged row */
        }
        e->trust = kf_lessons__trust(sqlite3_column_int64(q, 7), sqlite3_column_int64(q, 8));
        e->retired |= sqlite3_column_int(q, 9);
        float *v = db->vecs + db->n * (size_t)db->dim;
        const void *blob = sqlite3_column_blob(q, 10);
        int bytes = sqlite3_column_bytes(q, 10);
        if (blob && bytes == (int)(sizeof(float) * (size_t)db->dim)) memcpy(v, blob, (size_t)bytes);
        else memset(v, 0, sizeof(float) * (size_t)db->dim); /* never embedded: no vector rank */
        db->n++;
    }
    if (!st && rc != SQLITE_DONE)
        st = kf__err(db->ctx, KF_EIO, "%s: reading lessons: %s", db->path, sqlite3_errmsg(db->db));
    sqlite3_finalize(q);
    if (st) {
        kf_lessons__cache_drop(db);
        return st;
    }
    db->cache_ok = 1;
    db->data_version = dv;
    return KF_OK;
}

/* Stage 1 and 3 for one lesson. */
static int passes(const kf_lesson_entry *e, const kf_lesson_query *q, double min_trust) {
    if (e->retired || e->trust < min_trust) return 0;
    if (e->backend && q->backend && strcmp(e->backend, q->backend)) return 0;
    if (e->arch && q->arch && strcmp(e->arch, q->arch)) return 0;
    if (e->nops && q->nops) {
        int hit = 0;
        for (int i = 0; i < e->nops && !hit; i++)
            for (int j = 0; j < q->nops && !hit; j++) hit = kf_lessons__tag_under(q->ops[j], e->ops[i]);
        if (!hit) return 0;
    }
    for (int f = 0; f < q->ntags; f++) {
        int hit = 0;
        for (int i = 0; i < e->ntags && !hit; i++) hit = kf_lessons__tag_under(e->tags[i], q->tags[f]);
        if (!hit) return 0;
    }
    if (e->shape && q->nshapes) {
        int hit = 0;
        for (int s = 0; s < q->nshapes && !hit; s++) {
            kf_vars vars = {q->shape_names, q->shapes + (size_t)s * (size_t)q->nshape_names, q->nshape_names};
            int64_t v;
            char err[128];
            hit = kf_expr_eval(e->shape, &vars, &v, err, sizeof err) == 0 && v != 0;
        }
        if (!hit) return 0;
    }
    return 1;
}

static size_t find(const kf_lessons *db, int64_t rowid) {
    size_t lo = 0, hi = db->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (db->ents[mid].rowid < rowid) lo = mid + 1;
        else hi = mid;
    }
    return lo < db->n && db->ents[lo].rowid == rowid ? lo : (size_t)-1;
}

typedef struct {
    size_t i;
    double s;
} scored;

static int by_score(const void *a, const void *b) {
    const scored *x = a, *y = b;
    if (x->s != y->s) return x->s < y->s ? 1 : -1;
    return x->i < y->i ? -1 : x->i > y->i;
}

/* The best KF_LESSONS_LIST_N of all[0..m) by score (then by index), into list/score. */
static void top(scored *all, size_t m, size_t *list, double *score, int *n) {
    qsort(all, m, sizeof *all, by_score);
    for (size_t k = 0; k < m && *n < KF_LESSONS_LIST_N; k++) {
        list[*n] = all[k].i;
        score[*n] = all[k].s;
        (*n)++;
    }
}

typedef struct {
    char w[MAX_TERMS][64];
    int n;
} terms;

static void term(terms *t, const char *w, size_t n) {
    if (t->n >= MAX_TERMS || n >= sizeof t->w[0]) return;
    for (int i = 0; i < t->n; i++)
        if (strlen(t->w[i]) == n && !memcmp(t->w[i], w, n)) return;
    memcpy(t->w[t->n], w, n);
    t->w[t->n++][n] = 0;
}

/* The word as written ("__syncthreads", one FTS token) and without its outer '_'. */
static void on_term(void *arg, const char *w, size_t n) {
    terms *t = arg;
    term(t, w, n);
    size_t s = 0;
    while (s < n && w[s] == '_') s++;
    while (n > s && w[n - 1] == '_') n--;
    if (s || n < strlen(w)) term(t, w + s, n - s);
}

/* How many lessons contain the word (FTS5 counts its posting list), cached until the
 * database changes. -1 on an error. */
static int64_t doc_freq(kf_lessons *db, const char *w) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (const char *p = w; *p; p++) h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
    size_t mask = KF_LESSONS_DF_SLOTS - 1, i = (size_t)(h ^ (h >> 31)) & mask;
    if (!db->df) db->df = calloc(KF_LESSONS_DF_SLOTS, sizeof *db->df);
    if (!db->df) return -1;
    for (size_t probe = 0; probe < 16; probe++, i = (i + 1) & mask) {
        if (db->df[i].w[0] && !strcmp(db->df[i].w, w)) return db->df[i].df;
        if (!db->df[i].w[0]) break;
    }
    char quoted[80];
    snprintf(quoted, sizeof quoted, "\"%s\"", w);
    sqlite3_stmt *q = NULL;
    int64_t df = -1;
    if (sqlite3_prepare_v2(db->db, "SELECT count(*) FROM lessons_fts WHERE lessons_fts MATCH ?1", -1, &q,
                           NULL) == SQLITE_OK) {
        sqlite3_bind_text(q, 1, quoted, -1, SQLITE_STATIC);
        if (sqlite3_step(q) == SQLITE_ROW) df = sqlite3_column_int64(q, 0);
    }
    sqlite3_finalize(q);
    if (df >= 0 && !db->df[i].w[0]) { /* a full neighbourhood is simply not cached */
        snprintf(db->df[i].w, sizeof db->df[i].w, "%s", w);
        db->df[i].df = df;
    }
    return df;
}

/* The keyword list: passing lessons matching any word of the text, by BM25.
 * Words in more than half the lessons are left out of the MATCH: BM25 gives them an idf
 * of about 0 (FTS5 clamps it to 1e-6), so the order is the same, but scoring every
 * lesson that has "memory" or "rows" cost 10 ms over 10,000 lessons. When every word is
 * that common, the three rarest are kept. */
static kf_status keyword_list(kf_lessons *db, const char *text, const unsigned char *pass, size_t *list,
                              double *score, int *n) {
    *n = 0;
    terms t = {.n = 0};
    kf_lessons__words(text ? text : "", on_term, &t);
    /* One-letter words are template parameters when an '=' follows ("V=16": always) or
     * when the text has no longer word ("W"): searched as written. */
    for (const char *p = text ? text : ""; *p;) {
        size_t len = 0;
        while (p[len] && (isalnum((unsigned char)p[len]) || p[len] == '_')) len++;
        if (len == 1 && (p[1] == '=' || !t.n)) {
            char w = (char)tolower((unsigned char)p[0]);
            term(&t, &w, 1);
        }
        p += len ? len : 1;
    }
    int64_t df[MAX_TERMS];
    int keep[MAX_TERMS], nkeep = 0;
    for (int i = 0; i < t.n; i++) {
        if ((df[i] = doc_freq(db, t.w[i])) < 0)
            return kf__err(db->ctx, KF_EIO, "%s: keyword search: %s", db->path, sqlite3_errmsg(db->db));
        if (df[i] > 0 && 2 * (size_t)df[i] <= db->n) keep[nkeep++] = i;
    }
    for (int round = 0; !nkeep && round < 3; round++) { /* only common words: the rarest */
        int best = -1;
        for (int i = 0; i < t.n; i++) {
            int taken = 0;
            for (int k = 0; k < nkeep; k++) taken |= keep[k] == i;
            if (df[i] > 0 && !taken && (best < 0 || df[i] < df[best])) best = i;
        }
        if (best < 0) break;
        keep[nkeep++] = best;
    }
    if (!nkeep) return KF_OK;
    kf_buf b;
    kf_buf_init(&b, 1 << 16);
    for (int k = 0; k < nkeep; k++) kf_buf_printf(&b, "%s\"%s\"", k ? " OR " : "", t.w[keep[k]]);
    /* scored rows come in index order and are ranked here: ORDER BY in SQL made SQLite
     * sort every matching row (8 ms over 10,000 lessons, against 1 ms to score them) */
    sqlite3_stmt *q = NULL;
    kf_status st = KF_OK;
    scored *all = malloc(sizeof *all * (db->n ? db->n : 1));
    if (!b.p || !all ||
        sqlite3_prepare_v2(
            db->db,
            "SELECT rowid, bm25(lessons_fts, 2.0, 1.0, 0.5, 1.5) FROM lessons_fts WHERE lessons_fts MATCH ?1",
            -1, &q, NULL) != SQLITE_OK) {
        free(all);
        kf_buf_free(&b);
        return kf__err(db->ctx, KF_EIO, "%s: keyword search: %s", db->path, sqlite3_errmsg(db->db));
    }
    sqlite3_bind_text(q, 1, b.p, -1, SQLITE_STATIC);
    int rc;
    size_t m = 0;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        size_t i = find(db, sqlite3_column_int64(q, 0));
        if (i == (size_t)-1 || !pass[i] || m == db->n) continue;
        all[m].i = i;
        all[m].s = -sqlite3_column_double(q, 1);
        m++;
    }
    if (rc != SQLITE_DONE)
        st = kf__err(db->ctx, KF_EIO, "%s: keyword search: %s", db->path, sqlite3_errmsg(db->db));
    sqlite3_finalize(q);
    kf_buf_free(&b);
    top(all, m, list, score, n);
    free(all);
    return st;
}

/* The vector list: passing lessons by cosine with the text's embedding. */
static kf_status vector_list(kf_lessons *db, const char *text, const unsigned char *pass, size_t *list,
                             double *score, int *n) {
    *n = 0;
    if (!text || !*text || !db->dim) return KF_OK;
    float *qv = malloc(sizeof(float) * (size_t)(db->embed_url ? KF_LESSONS_MAX_DIM : db->dim));
    scored *all = malloc(sizeof *all * (db->n ? db->n : 1));
    kf_status st = KF_OK;
    if (!qv || !all) {
        st = kf__err(db->ctx, KF_ENOMEM, "out of memory");
        goto out;
    }
    const char *t[1] = {text};
    if ((st = kf_lessons__embed(db, t, 1, qv))) goto out;
    size_t m = 0;
    int dim = db->dim;
    for (size_t i = 0; i < db->n; i++) {
        if (!pass[i]) continue;
        const float *v = db->vecs + i * (size_t)dim;
        float d = 0;
        for (int k = 0; k < dim; k++) d += v[k] * qv[k];
        if (d <= 0) continue; /* nothing in common */
        all[m].i = i;
        all[m].s = d;
        m++;
    }
    top(all, m, list, score, n);
out:
    free(qv);
    free(all);
    return st;
}

/* Fused items by score, then tie (trust; NULL: none), then item: a stable, explainable
 * order (insertion sort: a few hundred items at most). */
static void sort_fused(size_t *out, double *score, int m, const double *tie) {
    for (int i = 1; i < m; i++)
        for (int j = i; j > 0; j--) {
            double tx = tie ? tie[out[j - 1]] : 0, ty = tie ? tie[out[j]] : 0;
            int swap = score[j] > score[j - 1] ||
                       (score[j] == score[j - 1] && (ty > tx || (ty == tx && out[j] < out[j - 1])));
            if (!swap) break;
            size_t t = out[j];
            out[j] = out[j - 1];
            out[j - 1] = t;
            double u = score[j];
            score[j] = score[j - 1];
            score[j - 1] = u;
        }
}

kf_lessons_fusion kf_lessons__fusion = {.k = KF_LESSONS_RRF_K, .w_keyword = 1.0, .w_vector = 0.5};

int kf_lessons__rrf(const size_t *a, int na, const size_t *b, int nb, const double *tie, size_t *out,
                    double *score) {
    int m = 0;
    for (int list = 0; list < 2; list++) {
        const size_t *l = list ? b : a;
        int n = list ? nb : na;
        for (int r = 0; r < n; r++) {
            int at = 0;
            while (at < m && out[at] != l[r]) at++;
            if (at == m) {
                out[m] = l[r];
                score[m++] = 0;
            }
            score[at] += (list ? kf_lessons__fusion.w_vector : kf_lessons__fusion.w_keyword) /
                         (kf_lessons__fusion.k + r + 1);
        }
    }
    sort_fused(out, score, m, tie);
    return m;
}

/* The convex combination of min-max normalised scores (kf_lessons__fusion.alpha > 0),
 * into out/score by score, then trust, then item. Tried on the tuning half against
 * weighted RRF (BENCHMARKS.md); not the default. */
static int convex(const size_t *a, const double *as, int na, const size_t *b, const double *bs, int nb,
                  const double *tie, size_t *out, double *score) {
    double al = kf_lessons__fusion.alpha;
    int m = 0;
    for (int list = 0; list < 2; list++) {
        const size_t *l = list ? b : a;
        const double *s = list ? bs : as;
        int n = list ? nb : na;
        double lo = n ? s[n - 1] : 0, hi = n ? s[0] : 0;
        for (int r = 0; r < n; r++) {
            int at = 0;
            while (at < m && out[at] != l[r]) at++;
            if (at == m) {
                out[m] = l[r];
                score[m++] = 0;
            }
            double x = hi > lo ? (s[r] - lo) / (hi - lo) : 1;
            score[at] += (list ? 1 - al : al) * x;
        }
    }
    sort_fused(out, score, m, tie);
    return m;
}

static int rank_in(const size_t *l, int n, size_t i) {
    for (int r = 0; r < n; r++)
        if (l[r] == i) return r + 1;
    return 0;
}

kf_status kf_lessons_retrieve(kf_lessons *db, const kf_lesson_query *q, int k, double min_trust,
                              kf_lesson_hit *hits, int *nhits) {
    *nhits = 0;
    if (k < 1) return kf__err(db->ctx, KF_EUSAGE, "lessons: retrieve k must be at least 1");
    if (q->nshapes && q->nshape_names < 1)
        return kf__err(db->ctx, KF_EUSAGE, "lessons: query shapes without size names");
    if (q->rank < KF_LESSON_RANK_HYBRID || q->rank > KF_LESSON_RANK_VECTOR)
        return kf__err(db->ctx, KF_EUSAGE, "lessons: unknown rank mode %d", q->rank);
    kf_status st = cache_load(db);
    if (st) return st;
    unsigned char *pass = calloc(db->n ? db->n : 1, 1);
    double *trust = calloc(db->n ? db->n : 1, sizeof *trust);
    size_t kl[KF_LESSONS_LIST_N], vl[KF_LESSONS_LIST_N], fused[2 * KF_LESSONS_LIST_N];
    double ks[KF_LESSONS_LIST_N], vs[KF_LESSONS_LIST_N], fs[2 * KF_LESSONS_LIST_N];
    int nk = 0, nv = 0, m = 0;
    if (!pass || !trust) {
        st = kf__err(db->ctx, KF_ENOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < db->n; i++) {
        pass[i] = (unsigned char)passes(&db->ents[i], q, min_trust);
        trust[i] = db->ents[i].trust;
    }
    if (!q->text || !q->text[strspn(q->text, " \t\r\n")]) {
        /* no words: every lesson that passes the filters, by trust (then id order) */
        scored *all = malloc(sizeof *all * (db->n ? db->n : 1));
        if (!all) {
            st = kf__err(db->ctx, KF_ENOMEM, "out of memory");
            goto out;
        }
        size_t np = 0;
        for (size_t i = 0; i < db->n; i++)
            if (pass[i]) all[np].i = i, all[np].s = trust[i], np++;
        top(all, np, fused, fs, &m);
        free(all);
        goto hits;
    }
    if (q->rank != KF_LESSON_RANK_VECTOR && (st = keyword_list(db, q->text, pass, kl, ks, &nk))) goto out;
    if (q->rank != KF_LESSON_RANK_KEYWORD && (st = vector_list(db, q->text, pass, vl, vs, &nv))) goto out;
    if (q->rank == KF_LESSON_RANK_HYBRID && kf_lessons__fusion.alpha > 0) {
        m = convex(kl, ks, nk, vl, vs, nv, trust, fused, fs);
    } else if (q->rank == KF_LESSON_RANK_HYBRID) {
        m = kf_lessons__rrf(kl, nk, vl, nv, trust, fused, fs);
    } else { /* one list: its own order and scores */
        m = q->rank == KF_LESSON_RANK_KEYWORD ? nk : nv;
        memcpy(fused, q->rank == KF_LESSON_RANK_KEYWORD ? kl : vl, sizeof(size_t) * (size_t)m);
        memcpy(fs, q->rank == KF_LESSON_RANK_KEYWORD ? ks : vs, sizeof(double) * (size_t)m);
    }
hits:
    for (int r = 0; r < m && r < k; r++) {
        kf_lesson_hit *h = &hits[r];
        const kf_lesson_entry *e = &db->ents[fused[r]];
        snprintf(h->id, sizeof h->id, "%s", e->id);
        h->score = fs[r];
        h->trust = e->trust;
        h->keyword_rank = rank_in(kl, nk, fused[r]);
        h->vector_rank = rank_in(vl, nv, fused[r]);
        (*nhits)++;
    }
out:
    free(trust);
    free(pass);
    return st;
}

/* ---- rendering ------------------------------------------------------------------------ */

kf_status kf_lessons_render(kf_lessons *db, const kf_lesson_hit *hits, int nhits, int64_t max_tokens,
                            char **text, int64_t *tokens, int *used) {
    kf_buf b;
    kf_buf_init(&b, 16u << 20);
    static const char head[] =
        "Lessons from earlier runs (advice, not rules; trust = confirmations against refutations):\n";
    int u = 0;
    kf_status st = KF_OK;
    for (int i = 0; i < nhits; i++) {
        kf_lesson l;
        if ((st = kf_lessons__get(db, hits[i].id, &l))) break;
        char *item =
            kf__asprintf("- [%s, trust %.2f: %lld+ %lld-] When: %s\n  Do: %s\n%s%s%s", l.id,
                         kf_lessons__trust(l.confirmations, l.refutations), (long long)l.confirmations,
                         (long long)l.refutations, l.situation, l.action, l.boundaries ? "  Not when: " : "",
                         l.boundaries ? l.boundaries : "", l.boundaries ? "\n" : "");
        kf_lesson_free(&l);
        if (!item) {
            st = kf__err(db->ctx, KF_ENOMEM, "out of memory");
            break;
        }
        size_t len = b.len + (b.len ? 0 : sizeof head - 1) + strlen(item);
        if (kf_text_tokens(len) > max_tokens) { /* whole lessons only; a later shorter one may fit */
            free(item);
            continue;
        }
        if (!b.len) kf_buf_append(&b, head, sizeof head - 1);
        kf_buf_append(&b, item, strlen(item));
        free(item);
        u++;
    }
    if (!st && !b.p && kf_buf_append(&b, "", 0)) st = kf__err(db->ctx, KF_ENOMEM, "out of memory");
    if (st) {
        kf_buf_free(&b);
        return st;
    }
    *text = b.p;
    if (tokens) *tokens = kf_text_tokens(b.len);
    if (used) *used = u;
    return KF_OK;
}
