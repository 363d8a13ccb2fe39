/*
 * lessons.h - the lessons module's internals (docs/lessons.md): the database handle, a
 * lesson as a row, the embeddings and the retrieval cache. The public API is in kforge.h.
 */
#ifndef KF_LESSONS_H
#define KF_LESSONS_H

#include "../util/util.h"

#include <jansson.h>
#include <sqlite3.h>

#define KF_LESSONS_SCHEMA_VERSION 1
#define KF_LESSONS_RRF_K 10     /* reciprocal rank fusion: w / (10 + rank) */
#define KF_LESSONS_LIST_N 100   /* each ranked list is cut at this many lessons */
#define KF_LESSONS_HASH_DIM 512 /* the built-in embedding's dimensions */
#define KF_LESSONS_HASH_NAME "hashgram-v2-512"
#define KF_LESSONS_TEXT_MAX 16384 /* bytes of one text field of a lesson */
#define KF_LESSONS_MAX_DIM 65536  /* dimensions an endpoint may answer with */
#define KF_LESSONS_DF_SLOTS 8192  /* cached document frequencies of query words */

/* One lesson as stored. Strings are owned (kf_lesson_free); NULL for an empty field. */
typedef struct {
    int64_t rowid;
    char id[64];
    char *key;                    /* distill's merge key; NULL for added lessons */
    char *situation;              /* situation.text */
    char *backend, *arch, *shape; /* situation scope; shape is an expression (expr.c) */
    char *ops_json;               /* situation.ops: a JSON array of op tags, or NULL */
    char *action, *boundaries;
    char *evidence_json; /* a JSON object, or NULL */
    int64_t confirmations, refutations;
    char source[16]; /* distilled | agent | person */
    char *tags_json; /* a JSON array of tags, or NULL */
    int retired;
    double created, updated;
} kf_lesson;

/* The retrieval cache: what the filter and the vector ranking need, for every lesson,
 * loaded once and reloaded when the database changed (data_version or our own write). */
typedef struct {
    int64_t rowid;
    char id[64];
    char *backend, *arch;
    char **ops, **tags;
    int nops, ntags;
    kf_expr *shape;
    double trust;
    int retired;
} kf_lesson_entry;

struct kf_lessons {
    kf_ctx *ctx;
    sqlite3 *db;
    char *path;
    /* the embedding */
    char *embed_name; /* KF_LESSONS_HASH_NAME or "openai:MODEL@URL" */
    char *embed_url, *embed_model, *api_key;
    double timeout_s;
    int dim; /* 0: not known yet (an endpoint before its first answer) */
    /* the cache */
    kf_lesson_entry *ents;
    float *vecs; /* n x dim, L2-normalised */
    size_t n;
    int cache_ok;
    int64_t data_version;
    struct {
        char w[64];
        int64_t df;
    } * df; /* KF_LESSONS_DF_SLOTS, open addressing */
};

void kf_lesson_free(kf_lesson *l); /* the strings, not the struct; NULL ok */
/* trust = (c + 1) / (c + r + 2): the mean of Beta(c + 1, r + 1). */
double kf_lessons__trust(int64_t confirmations, int64_t refutations);

/* Parse and validate a lesson object into l (zeroed first). KF_EUSAGE with "field 'F':
 * ..." in err. */
kf_status kf_lessons__from_json(json_t *o, kf_lesson *l, char *err, size_t errlen);
json_t *kf_lessons__to_json(const kf_lesson *l);
/* Insert or replace l (by id), embedding it; sets l->rowid. Inside the caller's
 * transaction or alone. */
kf_status kf_lessons__put(kf_lessons *db, kf_lesson *l);
/* Read the lesson with this id (KF_EUSAGE when none) or this distill key (*found 0 when
 * none). */
kf_status kf_lessons__get(kf_lessons *db, const char *id, kf_lesson *l);
kf_status kf_lessons__get_by_key(kf_lessons *db, const char *key, kf_lesson *l, int *found);
/* Call fn for every lesson in rowid order (borrowed); non-zero stops. */
kf_status kf_lessons__each(kf_lessons *db, int (*fn)(void *arg, kf_lesson *l), void *arg);
kf_status kf_lessons__exec(kf_lessons *db, const char *sql);
/* 1 when tag is filter or one of its descendants ("a/b" matches "a/b" and "a/b/c"). */
int kf_lessons__tag_under(const char *tag, const char *filter);
/* The text a lesson is embedded and searched by (caller frees). */
char *kf_lessons__doc_text(const kf_lesson *l);

/* Embeddings (embed.c). Embed n texts into out (n x db->dim floats, L2-normalised);
 * an endpoint sets db->dim from its first answer. KF_EBACKEND with the endpoint's
 * error. */
kf_status kf_lessons__embed(kf_lessons *db, const char *const *texts, int n, float *out);
/* The built-in embedding's weights: a word's stem, a bigram of stems, a word's character
 * grams together, an identifier's parts, a concept of the synonym table (embed.c). One
 * setting per embedding name; the benchmark alone changes them (before opening). */
typedef struct {
    float word, bigram, grams, parts, concept;
} kf_lessons_hash_knobs;
extern kf_lessons_hash_knobs kf_lessons__knobs;
/* The built-in embedding of one text into v[KF_LESSONS_HASH_DIM]. 0, or -1 when memory
 * ran out (v then lacks some features). */
int kf_lessons__hash_embed(const char *text, float *v);
/* The words of text: lower-case [a-z0-9_] runs (at most 63 bytes) of 2+ characters
 * besides leading and trailing '_', not stop words; fn is called per word, in order. */
void kf_lessons__words(const char *text, void (*fn)(void *arg, const char *w, size_t n), void *arg);

/* The fusion's parameters: an item scores the sum over the lists it is in of
 * w_list / (k + rank). Fixed in retrieve.c (chosen on the tuning half of the labelled
 * queries, BENCHMARKS.md); the benchmark alone changes them. */
typedef struct {
    double k, w_keyword, w_vector;
    double alpha; /* > 0: a convex combination instead, alpha x the keyword score + (1 - alpha)
                   * x the cosine, each min-max normalised over its list (benchmark only) */
} kf_lessons_fusion;
extern kf_lessons_fusion kf_lessons__fusion;
/* Weighted reciprocal rank fusion (retrieve.c) of two ranked lists of items (a[0] best,
 * a the keyword list, b the vector list): each item scores the sum over the lists it is
 * in of w / (k + rank) with kf_lessons__fusion's weights, rank from 1. out (room for na + nb) gets the items
 * by score, ties by tie[item] (higher first; tie may be NULL), then by the smaller item; score their scores.
 * Returns how many. */
int kf_lessons__rrf(const size_t *a, int na, const size_t *b, int nb, const double *tie, size_t *out,
                    double *score);
/* The retrieval cache (retrieve.c). */
void kf_lessons__cache_drop(kf_lessons *db);

#endif
