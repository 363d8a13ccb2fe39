/*
 * test_lessons.c - the lessons module (docs/lessons.md): refusal of a lesson without a
 * situation or an action, the scope filter (tags, ops, backend, shape predicates), the
 * trust threshold, reciprocal rank fusion, export -> import, malformed imports,
 * distillation of a synthetic run store, and an embeddings endpoint (a stub server).
 */
#define _GNU_SOURCE
#include "kft.h"
#include "kft_http.h"
#include "lessons/lessons.h"
#include "store/store.h"

#include <errno.h>
#include <math.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Scratch directories, removed when the test passes (a failure leaves them to look at). */
static char dirs[8][64];
static int ndirs;

static void remove_dirs(void) {
    for (int i = 0; i < ndirs; i++) kf__rmtree(dirs[i]);
}

static char *scratch(void) {
    CHECK(ndirs < 8);
    char *dir = dirs[ndirs];
    snprintf(dir, sizeof dirs[0], "/tmp/kft-lessons-XXXXXX");
    CHECK(mkdtemp(dir));
    if (!ndirs++) atexit(remove_dirs);
    return dir;
}

static kf_lessons *open_db(kf_ctx *ctx, const char *dir, const char *name) {
    char p[256];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    kf_lessons *db = NULL;
    CHECKF(kf_lessons_open(ctx, p, NULL, &db) == KF_OK, "%s", kf_errmsg(ctx));
    return db;
}

static void add(kf_lessons *db, kf_ctx *ctx, const char *json) {
    CHECKF(kf_lessons_add_json(db, json, NULL) == KF_OK, "%s: %s", json, kf_errmsg(ctx));
}

/* The ids retrieved for q (k 50, min_trust), space-separated, in order. */
static const char *ids(kf_lessons *db, kf_ctx *ctx, const kf_lesson_query *q, double min_trust) {
    static char out[4096];
    kf_lesson_hit h[50];
    int n = 0;
    CHECKF(kf_lessons_retrieve(db, q, 50, min_trust, h, &n) == KF_OK, "%s", kf_errmsg(ctx));
    out[0] = 0;
    for (int i = 0; i < n; i++)
        snprintf(out + strlen(out), sizeof out - strlen(out), "%s%s", i ? " " : "", h[i].id);
    return out;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The same, sorted by id (when the filter, not the order, is under test). */
static const char *sorted_ids(kf_lessons *db, kf_ctx *ctx, const kf_lesson_query *q) {
    static char out[4096];
    char buf[4096], *v[64];
    int n = 0;
    snprintf(buf, sizeof buf, "%s", ids(db, ctx, q, 0));
    for (char *save = NULL, *t = strtok_r(buf, " ", &save); t && n < 64; t = strtok_r(NULL, " ", &save))
        v[n++] = t;
    qsort(v, (size_t)n, sizeof *v, cmp_str);
    out[0] = 0;
    for (int i = 0; i < n; i++)
        snprintf(out + strlen(out), sizeof out - strlen(out), "%s%s", i ? " " : "", v[i]);
    return out;
}

static int count_lessons(kf_lessons *db, int all) {
    char *j = NULL;
    CHECK(kf_lessons_list_json(db, NULL, 0, all, &j) == KF_OK);
    json_t *a = json_loads(j, 0, NULL);
    int n = (int)json_array_size(a);
    json_decref(a);
    free(j);
    return n;
}

/* ---- refusal -------------------------------------------------------------------------- */

static void t_refuse(const void *arg) {
    (void)arg;
    kf_ctx *ctx = kf_ctx_new();
    kf_lessons *db = open_db(ctx, scratch(), "l.db");
    static const struct {
        const char *json, *field;
    } bad[] = {
        {"{\"action\": \"use float4 loads\"}", "field 'situation': missing"},
        {"{\"situation\": {\"backend\": \"cuda\", \"ops\": [\"op/softmax\"]}, \"action\": \"x\"}",
         "field 'situation.text': missing"},
        {"{\"situation\": \"long rows\", \"action\": \"  \\t \"}", "field 'action': only blanks"},

        {"{\"situation\": \"t\", \"action\": \"a\", \"tags\": [\"ok/tag\", \"Bad Tag\"]}",
         "\"Bad Tag\" (tag 2)"},
        {"{\"situation\": \"long rows\"}", "field 'action': missing"},
        {"{\"situation\": \"long rows\", \"action\": \"\"}", "field 'action': missing"},
        {"{\"situation\": {\"text\": \"t\", \"shape\": \"rows >= \"}, \"action\": \"a\"}",
         "field 'situation.shape'"},
        {"{\"situation\": \"t\", \"action\": \"a\", \"tags\": [\"Cuda//x\"]}", "field 'tags'"},
        {"{\"situation\": \"t\", \"action\": \"a\", \"source\": \"oracle\"}", "field 'source'"},
        {"{\"situation\": \"t\", \"action\": \"a\", \"acton\": \"typo\"}", "field 'acton': unknown"},
        {"{\"situation\": \"t\", \"action\": \"a\", \"trust\": {\"confirmations\": -1}}",
         "trust.confirmations"},
        {"[1, 2]", "a JSON object"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        kf_status st = kf_lessons_add_json(db, bad[i].json, NULL);
        CHECKF(st == KF_EUSAGE, "%s: accepted", bad[i].json);
        CHECKF(strstr(kf_errmsg(ctx), bad[i].field), "%s: %s", bad[i].json, kf_errmsg(ctx));
    }
    CHECK(count_lessons(db, 1) == 0);
    char id[64];
    CHECK(kf_lessons_add_json(db, "{\"situation\": \"long rows\", \"action\": \"one warp per row\"}", id) ==
          KF_OK);
    CHECK(!strncmp(id, "L-", 2) && count_lessons(db, 1) == 1);
    /* the same situation and action again is the same lesson, and says it replaced one */
    int replaced = -1;
    char id2[64];
    CHECK(kf_lessons_add_json_ex(db, "{\"situation\": \"long rows\", \"action\": \"one warp per row\"}", id2,
                                 &replaced) == KF_OK);
    CHECK(count_lessons(db, 1) == 1 && replaced == 1 && !strcmp(id, id2));
    /* the same words for another scope are another lesson (they replaced the unscoped one) */
    CHECK(kf_lessons_add_json_ex(db,
                                 "{\"situation\": {\"text\": \"long rows\", \"ops\": [\"op/softmax\"]},"
                                 " \"action\": \"one warp per row\"}",
                                 id2, &replaced) == KF_OK);
    CHECK(count_lessons(db, 1) == 2 && replaced == 0 && strcmp(id, id2));
    /* the ops are a set: their order names no other lesson */
    char id3[64];
    CHECK(kf_lessons_add_json_ex(
              db,
              "{\"situation\": {\"text\": \"long rows\", \"ops\": [\"op/rowwise\", \"op/softmax\"]},"
              " \"action\": \"x\"}",
              id2, &replaced) == KF_OK &&
          !replaced);
    CHECK(kf_lessons_add_json_ex(
              db,
              "{\"situation\": {\"text\": \"long rows\", \"ops\": [\"op/softmax\", \"op/rowwise\"]},"
              " \"action\": \"x\"}",
              id3, &replaced) == KF_OK &&
          replaced && !strcmp(id2, id3));
    /* a lesson without an id but with a stored lesson's key is that lesson (an older
     * export, its ids computed differently, the id removed); a blank optional field is
     * absent (older exports have some), a blank action is refused */
    CHECK(
        kf_lessons_add_json(db,
                            "{\"id\": \"orig\", \"key\": \"distill|c|op/x|win|A=1|*\", \"situation\": \"s\","
                            " \"action\": \"Set A=1\", \"source\": \"distilled\"}",
                            NULL) == KF_OK);
    int before = count_lessons(db, 1);
    CHECK(kf_lessons_add_json_ex(
              db,
              "{\"key\": \"distill|c|op/x|win|A=1|*\", \"situation\": \"s2\","
              " \"action\": \"Set A=1 (newer)\", \"source\": \"distilled\", \"boundaries\": \"  \"}",
              id3, &replaced) == KF_OK);
    CHECKF(replaced && !strcmp(id3, "orig") && count_lessons(db, 1) == before, "%s %d", id3, replaced);
    kf_lessons_close(db);
    kf_ctx_free(ctx);
}

/* ---- the filter ----------------------------------------------------------------------- */

static void t_tags(const void *arg) {
    (void)arg;
    kf_ctx *ctx = kf_ctx_new();
    kf_lessons *db = open_db(ctx, scratch(), "l.db");
    add(db, ctx,
        "{\"id\": \"a\", \"situation\": \"s\", \"action\": \"coalesce loads\", \"tags\": "
        "[\"cuda/memory/coalescing\"]}");
    add(db, ctx,
        "{\"id\": \"b\", \"situation\": \"s\", \"action\": \"pad shared memory\", \"tags\": "
        "[\"cuda/memory\"]}");
    add(db, ctx,
        "{\"id\": \"c\", \"situation\": \"s\", \"action\": \"warp shuffles\", \"tags\": [\"cuda/warp\", "
        "\"op/reduce\"]}");
    add(db, ctx,
        "{\"id\": \"d\", \"situation\": \"s\", \"action\": \"memory pool\", \"tags\": [\"cuda/memoryx\"]}");
    add(db, ctx, "{\"id\": \"e\", \"situation\": \"s\", \"action\": \"no tags\"}");
    kf_lesson_query q = {0};
    q.text = "loads memory shuffles pool shared tags";
    const char *f1[] = {"cuda/memory"};
    q.tags = f1;
    q.ntags = 1;
    const char *got = ids(db, ctx, &q, 0);
    CHECKF(!strcmp(got, "a b") || !strcmp(got, "b a"), "cuda/memory -> %s", got); /* not cuda/memoryx */
    const char *f2[] = {"cuda"};
    q.tags = f2;
    got = ids(db, ctx, &q, 0);
    CHECKF(strlen(got) == 7 && !strstr(got, "e"), "cuda -> %s", got);
    const char *f3[] = {"cuda", "op/reduce"}; /* every filter must match */
    q.tags = f3;
    q.ntags = 2;
    CHECK(!strcmp(ids(db, ctx, &q, 0), "c"));
    const char *f4[] = {"cuda/memory/coalescing/deeper"};
    q.tags = f4;
    q.ntags = 1;
    CHECK(!strcmp(ids(db, ctx, &q, 0), ""));
    /* list filters the same way */
    char *j = NULL;
    CHECK(kf_lessons_list_json(db, f1, 1, 0, &j) == KF_OK);
    CHECK(strstr(j, "\"a\"") && strstr(j, "\"b\"") && !strstr(j, "\"d\"") && !strstr(j, "\"c\""));
    free(j);
    kf_lessons_close(db);
    kf_ctx_free(ctx);
}

static void t_scope(const void *arg) {
    (void)arg;
    kf_ctx *ctx = kf_ctx_new();
    kf_lessons *db = open_db(ctx, scratch(), "l.db");
    add(db, ctx,
        "{\"id\": \"long\", \"situation\": {\"text\": \"long rows\", \"shape\": \"cols >= 1024\"}, "
        "\"action\": \"apply\"}");
    add(db, ctx,
        "{\"id\": \"short8\", \"situation\": {\"text\": \"short rows\", \"shape\": \"rows % 8 == 0 && cols < "
        "1024\"},"
        " \"action\": \"apply\"}");
    add(db, ctx,
        "{\"id\": \"batch1\", \"situation\": {\"text\": \"decode\", \"shape\": \"batch == 1\"}, \"action\": "
        "\"apply\"}");
    add(db, ctx, "{\"id\": \"any\", \"situation\": \"any shape\", \"action\": \"apply\"}");
    add(db, ctx,
        "{\"id\": \"norm\", \"situation\": {\"text\": \"norms\", \"ops\": [\"op/norm\"], \"backend\": "
        "\"cuda\"},"
        " \"action\": \"apply\"}");
    add(db, ctx,
        "{\"id\": \"rms\", \"situation\": {\"text\": \"rmsnorm\", \"ops\": [\"op/norm/rmsnorm\"],"
        " \"arch\": \"sm_90\"}, \"action\": \"apply\"}");
    kf_lesson_query q = {0};
    q.text = "apply"; /* every lesson matches; the filter decides */
    const char *names[] = {"rows", "cols"};
    int64_t one[] = {64, 512}, two[] = {64, 512, 64, 4096};
    q.shape_names = names;
    q.nshape_names = 2;
    q.shapes = one;
    q.nshapes = 1;
    q.rank = KF_LESSON_RANK_KEYWORD;
    /* batch is not a size of this task: its predicate cannot hold, the lesson is out */
    CHECKF(!strcmp(sorted_ids(db, ctx, &q), "any norm rms short8"), "%s", sorted_ids(db, ctx, &q));
    q.shapes = two;
    q.nshapes = 2; /* a predicate true for one of the shapes is enough */
    CHECKF(!strcmp(sorted_ids(db, ctx, &q), "any long norm rms short8"), "%s", sorted_ids(db, ctx, &q));
    q.nshapes = 0; /* no shapes known: no predicate is evaluated */
    CHECK(!strcmp(sorted_ids(db, ctx, &q), "any batch1 long norm rms short8"));
    const char *rms[] = {"op/norm/rmsnorm"}, *ln[] = {"op/norm/layernorm"}, *sm[] = {"op/softmax"};
    q.ops = rms;
    q.nops = 1;
    q.backend = "cuda";
    q.arch = "sm_90";
    CHECK(!strcmp(sorted_ids(db, ctx, &q), "any batch1 long norm rms short8")); /* op/norm covers rmsnorm */
    q.ops = ln;
    CHECK(!strcmp(sorted_ids(db, ctx, &q), "any batch1 long norm short8"));
    q.ops = sm;
    q.arch = "sm_80";
    CHECK(!strcmp(sorted_ids(db, ctx, &q), "any batch1 long short8"));
    q.ops = rms;
    q.backend = "c";
    CHECK(!strcmp(sorted_ids(db, ctx, &q), "any batch1 long short8"));
    kf_lessons_close(db);
    kf_ctx_free(ctx);
}

static void t_trust(const void *arg) {
    (void)arg;
    kf_ctx *ctx = kf_ctx_new();
    kf_lessons *db = open_db(ctx, scratch(), "l.db");
    add(db, ctx,
        "{\"id\": \"refuted\", \"situation\": \"tile\", \"action\": \"tile 64\", \"trust\": "
        "{\"confirmations\": 0,"
        " \"refutations\": 3}}");
    add(db, ctx,
        "{\"id\": \"trusted\", \"situation\": \"tile\", \"action\": \"tile 128\", \"trust\": "
        "{\"confirmations\": 3,"
        " \"refutations\": 0}}");
    add(db, ctx, "{\"id\": \"new\", \"situation\": \"tile\", \"action\": \"tile 32\"}");
    add(db, ctx,
        "{\"id\": \"retired\", \"situation\": \"tile\", \"action\": \"tile 16\", \"status\": \"retired\","
        " \"trust\": {\"confirmations\": 9}}");
    kf_lesson_query q = {0};
    q.text = "tile";
    kf_lesson_hit h[8];
    int n;
    CHECK(kf_lessons_retrieve(db, &q, 8, 0.0, h, &n) == KF_OK && n == 3); /* never the retired one */
    CHECK(kf_lessons_retrieve(db, &q, 8, 0.5, h, &n) == KF_OK && n == 2);
    CHECK(strcmp(h[0].id, "refuted") && strcmp(h[1].id, "refuted"));
    CHECK(kf_lessons_retrieve(db, &q, 8, 0.6, h, &n) == KF_OK && n == 1 && !strcmp(h[0].id, "trusted"));
    CHECK(fabs(h[0].trust - 0.8) < 1e-12); /* (3 + 1) / (3 + 0 + 2) */
    CHECK(kf_lessons_retrieve(db, &q, 8, 0.81, h, &n) == KF_OK && n == 0);
    CHECK(kf_lessons_retrieve(db, &q, 1, 0.0, h, &n) == KF_OK && n == 1); /* k caps */
    CHECK(kf_lessons_retrieve(db, &q, 0, 0.0, h, &n) == KF_EUSAGE);
    kf_lessons_close(db);
    kf_ctx_free(ctx);
}

/* ---- the built-in embedding ------------------------------------------------------------ */

static double cosine(const char *a, const char *b) {
    float va[KF_LESSONS_HASH_DIM], vb[KF_LESSONS_HASH_DIM];
    kf_lessons__hash_embed(a, va);
    kf_lessons__hash_embed(b, vb);
    double d = 0;
    for (int i = 0; i < KF_LESSONS_HASH_DIM; i++) d += (double)va[i] * vb[i];
    return d;
}

static void t_embed(const void *arg) {
    (void)arg;
    /* synonyms of the built-in table meet; unrelated advice does not */
    double syn = cosine("coalesced global loads", "contiguous global loads");
    double none = cosine("coalesced global loads", "tensor core fragments");
    CHECKF(syn > 0.5 && none < 0.2, "%f %f", syn, none);
    CHECKF(cosine("stage the tile in smem", "stage the tile in shared memory") > 0.6, "%f",
           cosine("stage the tile in smem", "stage the tile in shared memory"));
    /* stems: inflections are the same word */
    CHECKF(cosine("tiling", "tiles") > 0.6, "%f", cosine("tiling", "tiles"));
    CHECKF(cosine("vectorised loads", "vectorization of loads") > 0.6, "%f",
           cosine("vectorised loads", "vectorization of loads"));
    /* identifiers: camelCase, snake_case and letter-digit runs give their parts */
    CHECKF(cosine("blockDim", "block dim") > 0.4, "%f", cosine("blockDim", "block dim"));
    CHECKF(cosine("__shfl_xor_sync", "shfl xor sync") > 0.4, "%f",
           cosine("__shfl_xor_sync", "shfl xor sync"));
    CHECKF(cosine("use float4 loads", "use float loads") > 0.4, "%f",
           cosine("use float4 loads", "use float loads"));
    /* sublinear term frequency: repeating a word does not make it dominate */
    double once = cosine("warp shuffle reduction", "warp"),
           many = cosine("warp warp warp warp shuffle reduction", "warp");
    CHECKF(many > once && many < 0.9, "%f %f", once, many);
    /* deterministic and normalised */
    CHECK(fabs(cosine("rows of 4096 floats", "rows of 4096 floats") - 1) < 1e-5);

    /* a database written under the first built-in embedding is embedded again on open */
    kf_ctx *ctx = kf_ctx_new();
    char *dir = scratch(), path[256];
    kf_lessons *db = open_db(ctx, dir, "v1.db");
    add(db, ctx,
        "{\"id\": \"c\", \"situation\": \"strided loads\", \"action\": \"make accesses contiguous\"}");
    add(db, ctx, "{\"id\": \"g\", \"situation\": \"gemm\", \"action\": \"tensor cores\"}");
    kf_lessons_close(db);
    snprintf(path, sizeof path, "%s/v1.db", dir);
    sqlite3 *s = NULL;
    CHECK(sqlite3_open(path, &s) == SQLITE_OK);
    CHECK(sqlite3_exec(s,
                       "UPDATE meta SET value = 'hashgram-v1-512' WHERE key = 'embedding';"
                       "UPDATE lessons SET embed = zeroblob(2048)",
                       NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(s);
    db = open_db(ctx, dir, "v1.db");
    CHECK(!strcmp(kf_lessons_embedding(db), KF_LESSONS_HASH_NAME));
    kf_lesson_query q = {0};
    q.rank = KF_LESSON_RANK_VECTOR;
    q.text = "coalesced accesses";
    CHECKF(!strncmp(ids(db, ctx, &q, 0), "c", 1), "%s", ids(db, ctx, &q, 0)); /* zero vectors: nothing */
    kf_lessons_close(db);
    kf_ctx_free(ctx);
}

/* ---- fusion ----------------------------------------------------------------------------- */

static void t_rrf(const void *arg) {
    (void)arg;
    /* keyword: 7, 3, 9; vector: 3, 5, 7. By hand, with k = 10, keyword weight 1 and
     * vector weight 0.5 (the built-in fusion):
     *   7: 1/11 + 0.5/13 = 0.129371   3: 1/12 + 0.5/11 = 0.128788
     *   9: 1/13 = 0.076923            5: 0.5/12 = 0.041667 */
    CHECK(kf_lessons__fusion.k == 10 && kf_lessons__fusion.w_keyword == 1 &&
          kf_lessons__fusion.w_vector == 0.5);
    size_t kw[] = {7, 3, 9}, vec[] = {3, 5, 7}, out[6];
    double sc[6];
    int m = kf_lessons__rrf(kw, 3, vec, 3, NULL, out, sc);
    CHECK(m == 4);
    CHECKF(out[0] == 7 && out[1] == 3 && out[2] == 9 && out[3] == 5, "%zu %zu %zu %zu", out[0], out[1],
           out[2], out[3]);
    CHECK(fabs(sc[0] - (1.0 / 11 + 0.5 / 13)) < 1e-15 && fabs(sc[3] - 0.5 / 12) < 1e-15);
    /* a tie (rank 1 in one list each, equal weights) goes to the more trusted, then the
     * smaller item */
    kf_lessons__fusion.w_vector = 1;
    size_t a[] = {4}, b[] = {2};
    double trust[8] = {0};
    trust[4] = 0.5;
    trust[2] = 0.9;
    m = kf_lessons__rrf(a, 1, b, 1, trust, out, sc);
    CHECK(m == 2 && out[0] == 2 && out[1] == 4 && sc[0] == sc[1]);
    trust[2] = 0.5;
    m = kf_lessons__rrf(a, 1, b, 1, trust, out, sc);
    CHECK(m == 2 && out[0] == 2 && out[1] == 4);
    m = kf_lessons__rrf(b, 1, a, 1, NULL, out, sc);
    CHECK(m == 2 && out[0] == 2 && out[1] == 4);
    kf_lessons__fusion.w_vector = 0.5;

    /* end to end: a lesson that both rankings place high beats one that only keyword
     * search finds first */
    kf_ctx *ctx = kf_ctx_new();
    kf_lessons *db = open_db(ctx, scratch(), "l.db");
    add(db, ctx, "{\"id\": \"kw\", \"situation\": \"softmax\", \"action\": \"coalesce coalesce coalesce\"}");
    add(db, ctx,
        "{\"id\": \"both\", \"situation\": \"softmax rows coalescing\", \"action\": \"coalesced row "
        "loads\"}");
    add(db, ctx, "{\"id\": \"other\", \"situation\": \"gemm\", \"action\": \"tensor cores\"}");
    kf_lesson_query q = {0};
    q.text = "coalesced row loads";
    kf_lesson_hit h[4];
    int n;
    CHECK(kf_lessons_retrieve(db, &q, 4, 0, h, &n) == KF_OK && n >= 2);
    CHECKF(!strcmp(h[0].id, "both") && h[0].keyword_rank && h[0].vector_rank, "%s", h[0].id);
    double want = 1.0 / (10 + h[0].keyword_rank) + 0.5 / (10 + h[0].vector_rank);
    CHECK(fabs(h[0].score - want) < 1e-12);
    kf_lessons_close(db);
    kf_ctx_free(ctx);
}

/* ---- export, import ------------------------------------------------------------------------ */

static void t_roundtrip(const void *arg) {
    (void)arg;
    kf_ctx *ctx = kf_ctx_new();
    char *dir = scratch();
    kf_lessons *db = open_db(ctx, dir, "a.db");
    add(db, ctx,
        "{\"id\": \"sm-warp\", \"situation\": {\"text\": \"row softmax, long rows\", \"backend\": \"cuda\","
        " \"arch\": \"sm_90\", \"ops\": [\"op/softmax\"], \"shape\": \"cols >= 1024\"},"
        " \"action\": \"one warp per row, __shfl_xor_sync\", \"boundaries\": \"cols < 32\","
        " \"evidence\": {\"nodes\": [\"runs/sm#4\"], \"effects\": [{\"speedup\": 2.5}]},"
        " \"trust\": {\"confirmations\": 2, \"refutations\": 1}, \"source\": \"agent\","
        " \"tags\": [\"cuda/warp/shuffle\", \"shape/cols=4096\"]}");
    add(db, ctx,
        "{\"situation\": \"unicode \\u00e9 and \\\"quotes\\\"\\nnewline\", \"action\": \"keep\", \"status\": "
        "\"retired\"}");
    char *a = NULL, *b = NULL;
    CHECK(kf_lessons_export(db, &a) == KF_OK);
    CHECK(strchr(a, '\n') && strchr(strchr(a, '\n') + 1, '\n')); /* two lines */
    kf_lessons *db2 = open_db(ctx, dir, "b.db");
    int added = -1, updated = -1;
    CHECKF(kf_lessons_import(db2, a, strlen(a), "x.jsonl", &added, &updated) == KF_OK, "%s", kf_errmsg(ctx));
    CHECK(added == 2 && updated == 0);
    CHECK(kf_lessons_export(db2, &b) == KF_OK);
    CHECKF(!strcmp(a, b), "\n%s\n%s", a, b);
    free(b);
    CHECK(kf_lessons_import(db2, a, strlen(a), "x.jsonl", &added, &updated) == KF_OK && added == 0 &&
          updated == 2);
    CHECK(kf_lessons_export(db2, &b) == KF_OK && !strcmp(a, b));
    /* the imported lesson is retrievable with its scope */
    kf_lesson_query q = {0};
    q.text = "warp shuffle softmax";
    const char *names[] = {"rows", "cols"};
    int64_t sh[] = {8, 4096};
    q.shape_names = names;
    q.nshape_names = 2;
    q.shapes = sh;
    q.nshapes = 1;
    CHECK(!strcmp(ids(db2, ctx, &q, 0.5), "sm-warp"));
    free(a);
    free(b);
    kf_lessons_close(db);
    kf_lessons_close(db2);
    kf_ctx_free(ctx);
}

static void t_import_bad(const void *arg) {
    (void)arg;
    kf_ctx *ctx = kf_ctx_new();
    kf_lessons *db = open_db(ctx, scratch(), "l.db");
    static const struct {
        const char *text, *msg;
    } bad[] = {
        {"{\"situation\": \"s\", \"action\": \"a\"}\n\n{\"situation\": \"s2\"}\n",
         "in.jsonl:3: field 'action': missing"},
        {"{\"situation\": \"s\", \"action\": \"a\"}\n{\"situation\": \"s\", \"action\": \n",
         "in.jsonl:2: not a JSON object"},
        {"{\"situation\": \"s\", \"action\": \"a\", \"tags\": \"cuda\"}\n", "in.jsonl:1: field 'tags'"},
        {"{\"situation\": {\"text\": \"s\", \"shape\": \"rows >>\"}, \"action\": \"a\"}",
         "in.jsonl:1: field 'situation.shape'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        int added = -1;
        CHECK(kf_lessons_import(db, bad[i].text, strlen(bad[i].text), "in.jsonl", &added, NULL) == KF_EUSAGE);
        CHECKF(strstr(kf_errmsg(ctx), bad[i].msg), "%s", kf_errmsg(ctx));
        CHECK(added == -1);
        CHECK(count_lessons(db, 1) == 0); /* all or nothing */
    }
    kf_lessons_close(db);
    kf_ctx_free(ctx);
    /* the command line names the line and exits 2 */
    char *dir = scratch(), cmd[1024], out[4096];
    snprintf(
        cmd, sizeof cmd,
        "cd %s && printf '{\"situation\": \"s\", \"action\": \"a\"}\\n{\"action\": \"b\"}\\n' > in.jsonl && "
        "%s lessons import in.jsonl --lessons %s/l.db 2>&1",
        dir, kft_bin("kforge"), dir);
    int rc = kft_run(cmd, out, sizeof out);
    CHECKF(rc == 2 && strstr(out, "in.jsonl:2: field 'situation': missing"), "rc %d: %s", rc, out);
}

/* ---- distill -------------------------------------------------------------------------------- */

static const char task_json[] =
    "{\"name\":\"twice\",\"backend\":\"c\",\"entry\":\"twice\",\n"
    " \"sizes\":{\"n\":[1,8192]},\n"
    " \"args\":[{\"name\":\"x\",\"type\":\"f32\",\"shape\":[\"n\"],\"io\":\"in\"},\n"
    "          {\"name\":\"y\",\"type\":\"f32\",\"shape\":[\"n\"],\"io\":\"out\"},\n"
    "          {\"name\":\"n\",\"type\":\"i64\",\"value\":\"n\"}],\n"
    " \"shapes\":[{\"n\":1000},{\"n\":4000}],\"hidden\":{\"count\":3}}\n";
static const char task_ref[] =
    "#include <stdint.h>\n"
    "void twice(const float *x, float *y, int64_t n) { for (int64_t i = 0; i < n; i++) y[i] = 2 * x[i]; }\n";

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    CHECKF(f, "%s: %s", path, strerror(errno));
    fputs(text, f);
    CHECK(fclose(f) == 0);
}

/* Record a finished node: params, state, and (sp1000, win1000, sp4000, win4000). */
static int64_t node_as(kf_store *s, const char *category, int64_t parent, const char *params,
                       kf_node_state state, double s1, int w1, double s4, int w4, const char *reasons) {
    static int serial;
    char text[128], h[65];
    snprintf(text, sizeof text, "/* node %d */\n", ++serial);
    CHECK(kf_store_put_source(s, text, strlen(text), "c", h) == KF_OK);
    kf_node n = {0};
    memcpy(n.src_hash, h, 65);
    strcpy(n.ext, "c");
    strcpy(n.proposer, "builtin");
    snprintf(n.category, sizeof n.category, "%s", category);
    n.parent = parent;
    n.params_json = (char *)params;
    CHECK(kf_store_add_node(s, &n) == KF_OK);
    n.state = state;
    char shapes[512];
    if (s1 > 0) {
        snprintf(shapes, sizeof shapes,
                 "[{\"sizes\": {\"n\": 1000}, \"speedup\": %g, \"win\": %s}, {\"sizes\": {\"n\": 4000}, "
                 "\"speedup\": %g,"
                 " \"win\": %s}]",
                 s1, w1 ? "true" : "false", s4, w4 ? "true" : "false");
        n.shapes_json = shapes;
        n.speedup = sqrt(s1 * s4);
    }
    n.reasons = (char *)reasons;
    CHECK(kft_finish_node(s, &n) == KF_OK);
    return n.id;
}

static int64_t node(kf_store *s, int64_t parent, const char *params, kf_node_state state, double s1, int w1,
                    double s4, int w4, const char *reasons) {
    return node_as(s, "tiling", parent, params, state, s1, w1, s4, w4, reasons);
}

static json_t *lesson_with(kf_lessons *db, const char *needle) {
    char *j = NULL;
    CHECK(kf_lessons_list_json(db, NULL, 0, 1, &j) == KF_OK);
    json_t *a = json_loads(j, 0, NULL), *found = NULL;
    free(j);
    size_t i;
    json_t *l;
    json_array_foreach(a, i, l) {
        char *s = json_dumps(l, JSON_COMPACT);
        if (strstr(s, needle)) {
            CHECKF(!found, "two lessons with %s", needle);
            found = json_incref(l);
        }
        free(s);
    }
    json_decref(a);
    CHECKF(found, "no lesson with %s", needle);
    return found;
}

static int64_t conf(json_t *l, const char *which) {
    return json_integer_value(json_object_get(json_object_get(l, "trust"), which));
}

static void distill(kf_lessons *db, kf_ctx *ctx, const char *run, const char *expect) {
    char *sum = NULL;
    CHECKF(kf_lessons_distill(db, run, &sum) == KF_OK, "%s", kf_errmsg(ctx));
    json_t *j = json_loads(sum, 0, NULL);
    char got[256];
    snprintf(got, sizeof got, "added %zu confirmed %zu unchanged %zu refuted %zu retired %zu",
             json_array_size(json_object_get(j, "added")), json_array_size(json_object_get(j, "confirmed")),
             json_array_size(json_object_get(j, "unchanged")), json_array_size(json_object_get(j, "refuted")),
             json_array_size(json_object_get(j, "retired")));
    CHECKF(!strcmp(got, expect), "distill: %s, expected %s\n%s", got, expect, sum);
    json_decref(j);
    free(sum);
}

/* The small task distill tests run over ("DIR/twice": task_json, task_ref), loaded. */
static kf_task *twice_task(kf_ctx *ctx, const char *dir) {
    char task[128], p[256];
    snprintf(task, sizeof task, "%s/twice", dir);
    CHECK(mkdir(task, 0755) == 0);
    snprintf(p, sizeof p, "%s/task.json", task);
    write_file(p, task_json);
    snprintf(p, sizeof p, "%s/reference.c", task);
    write_file(p, task_ref);
    kf_task *t = NULL;
    CHECKF(kf_task_load(ctx, task, &t) == KF_OK, "%s", kf_errmsg(ctx));
    return t;
}

static void t_distill(const void *arg) {
    (void)arg;
    kf_ctx *ctx = kf_ctx_new();
    char *dir = scratch(), run[128];
    snprintf(run, sizeof run, "%s/run", dir);
    kf_task *t = twice_task(ctx, dir);
    kf_store *s = NULL;
    CHECKF(kf_store_create(ctx, run, t, NULL, &s) == KF_OK, "%s", kf_errmsg(ctx));
    /* A setting is credited with what changing to it did: the node's speedup over its
     * parent's at each shape. The root's child (the defaults) changed nothing from a
     * measured point and teaches no setting lesson. */
    int64_t n1 = node(s, 0, "{\"BLOCK\": 256}", KF_NODE_KEPT, 1.5, 1, 1.8, 1, NULL);
    /* UNROLL=4 is this node's change (BLOCK is its parent's): 1.4/1.5 and 2.2/1.8, a gain
     * at n=4000 only */
    node(s, n1, "{\"BLOCK\": 256, \"UNROLL\": 4}", KF_NODE_KEPT, 1.4, 0, 2.2, 1, NULL);
    node(s, n1, "{\"BLOCK\": 256, \"UNROLL\": 16}", KF_NODE_COMPILE_FAILED, 0, 0, 0, 0, "compile_error");
    int64_t n4 = node(s, n1, "{\"BLOCK\": 32}", KF_NODE_REVERTED, 0.9, 0, 0.8, 0, NULL);
    /* the move back to BLOCK=256 from n4: 1.5/0.9 and 1.9/0.8 over the parent */
    int64_t n5 = node(s, n4, "{\"BLOCK\": 256}", KF_NODE_KEPT, 1.5, 1, 1.9, 1, NULL);
    /* a restart under the root at BLOCK=32: no lesson, although it beats the reference */
    node(s, 0, "{\"BLOCK\": 32}", KF_NODE_KEPT, 1.2, 1, 1.3, 1, NULL);
    /* kept, but under 5% over its parent at every shape (1.52/1.5, 1.85/1.8): a lost move */
    node(s, n1, "{\"BLOCK\": 256, \"UNROLL\": 8}", KF_NODE_KEPT, 1.52, 1, 1.85, 1, NULL);
    /* vetoed for what it is: no evidence, and no parent to measure its child against */
    int64_t nv = node(s, n1, "{\"BLOCK\": 256, \"UNROLL\": 32}", KF_NODE_REVERTED, 3.0, 1, 3.0, 1, NULL);
    CHECK(kf_store_event(
              s, nv, "critic",
              "{\"decision\":\"reject\",\"checks\":[{\"check\":\"integrity\",\"outcome\":\"fail\"}]}") ==
          KF_OK);
    node(s, nv, "{\"BLOCK\": 256, \"UNROLL\": 64}", KF_NODE_KEPT, 3.5, 1, 3.9, 1, NULL);
    kf_store_close(s);
    kf_lessons *db = open_db(ctx, dir, "l.db");
    distill(db, ctx, run, "added 4 confirmed 0 unchanged 0 refuted 0 retired 0");
    json_t *win = lesson_with(db, "BLOCK=256");
    json_t *sit = json_object_get(win, "situation");
    CHECKF(!strcmp(json_string_value(json_object_get(sit, "shape")), "n >= 1000 && n <= 4000"), "%s",
           json_string_value(json_object_get(sit, "shape")));
    CHECK(!strcmp(json_string_value(json_object_get(sit, "backend")), "c"));
    CHECK(!strcmp(json_string_value(json_array_get(json_object_get(sit, "ops"), 0)), "op/twice"));
    CHECK(!strcmp(json_string_value(json_object_get(win, "source")), "distilled") &&
          conf(win, "confirmations") == 1);
    const char *act = json_string_value(json_object_get(win, "action"));
    CHECKF(
        strstr(act,
               "Set BLOCK=256: moving to it beat the parent at 2 shapes, 1.67x to 2.37x over the parent") &&
            strstr(act, "1 of 1 moves") && !strstr(act, "reference"),
        "%s", act);
    char *tags = json_dumps(json_object_get(win, "tags"), JSON_COMPACT);
    CHECKF(strstr(tags, "\"param/block=256\"") && strstr(tags, "\"c/tuning/win\""), "%s", tags);
    free(tags);
    /* the evidence is the move (node 5), not the root's child (node 1) */
    char *ev = json_dumps(json_object_get(win, "evidence"), JSON_COMPACT);
    CHECKF(strstr(ev, "#5\"") && !strstr(ev, "#1\"") && strstr(ev, t->fingerprint) &&
               strstr(ev, "gain_over_parent") && strstr(ev, "2.37"),
           "%s", ev);
    free(ev);
    json_decref(win);
    json_t *shape = lesson_with(db, "UNROLL=4");
    CHECK(!strcmp(json_string_value(json_object_get(json_object_get(shape, "situation"), "shape")),
                  "n == 4000"));
    act = json_string_value(json_object_get(shape, "action"));
    CHECKF(
        strstr(act, "Set UNROLL=4 for this shape: moving to it beat the parent there, 1.22x over the parent"),
        "%s", act);
    tags = json_dumps(json_object_get(shape, "tags"), 0);
    CHECKF(strstr(tags, "\"shape/n=4000\""), "%s", tags);
    free(tags);
    json_decref(shape);
    json_t *fail = lesson_with(db, "UNROLL=16");
    CHECK(strstr(json_string_value(json_object_get(fail, "action")), "Avoid UNROLL=16"));
    CHECK(strstr(json_string_value(json_object_get(fail, "action")), "compile_error"));
    json_decref(fail);
    /* BLOCK=32: its one move lost (the root's BLOCK=32 child is no move); no win lesson */
    json_t *lose = lesson_with(db, "BLOCK=32");
    act = json_string_value(json_object_get(lose, "action"));
    CHECKF(strstr(act, "Do not expect BLOCK=32 to help: 1 of 1 moves to it did not beat its parent") &&
               strstr(act, "0.60x over the parent") && strstr(act, "nodes [4]"),
           "%s", act);
    json_decref(lose);
    /* UNROLL=8: one move, 1.03x over its parent: noise, not a "do not" lesson (one lost move
     * teaches that only at 0.90x or less, as BLOCK=32's 0.60x does) */
    {
        char *all = NULL;
        CHECK(kf_lessons_list_json(db, NULL, 0, 1, &all) == KF_OK);
        CHECKF(!strstr(all, "UNROLL=8"), "a single noisy move became a lesson: %s", all);
        free(all);
    }
    {
        char *all = NULL;
        CHECK(kf_lessons_list_json(db, NULL, 0, 1, &all) == KF_OK);
        CHECKF(!strstr(all, "UNROLL=32") && !strstr(all, "UNROLL=64") && !strstr(all, "#6\""),
               "a vetoed node, its child or a root's child became evidence: %s", all);
        free(all);
    }

    /* the same run again: nothing new; nor under another spelling of its path, nor from
     * a copy of its directory (a docs-only user raised a lesson's trust 0.67 -> 0.83 by
     * distilling "runs/sm", "./runs/sm/" and the absolute path in turn) */
    distill(db, ctx, run, "added 0 confirmed 0 unchanged 4 refuted 0 retired 0");
    {
        char alias[300], copy[300], cmd[800];
        snprintf(alias, sizeof alias, "%s/./run/", dir);
        distill(db, ctx, alias, "added 0 confirmed 0 unchanged 4 refuted 0 retired 0");
        snprintf(copy, sizeof copy, "%s/run-copy", dir);
        snprintf(cmd, sizeof cmd, "cp -a '%s' '%s'", run, copy);
        CHECK(system(cmd) == 0);
        distill(db, ctx, copy, "added 0 confirmed 0 unchanged 4 refuted 0 retired 0");
    }
    CHECK(count_lessons(db, 1) == 4);

    /* new evidence: a move to BLOCK=256 wins again (confirmed, merged); two moves to
     * BLOCK=32 win (2 won against 1 lost): a new win lesson, and the lose lesson is
     * refuted */
    CHECK(kf_store_open(ctx, run, NULL, &s) == KF_OK);
    int64_t n8 = node(s, n4, "{\"BLOCK\": 256}", KF_NODE_KEPT, 1.6, 1, 1.7, 1, NULL);
    int64_t n9 = node(s, n1, "{\"BLOCK\": 32}", KF_NODE_KEPT, 1.7, 1, 2.0, 1, NULL);
    node(s, n5, "{\"BLOCK\": 32}", KF_NODE_KEPT, 1.8, 1, 2.1, 1, NULL);
    kf_store_close(s);
    distill(db, ctx, run, "added 1 confirmed 1 unchanged 2 refuted 1 retired 0");
    CHECK(count_lessons(db, 1) == 5);
    win = lesson_with(db, "Set BLOCK=256");
    CHECK(conf(win, "confirmations") == 2 && conf(win, "refutations") == 0);
    ev = json_dumps(json_object_get(win, "evidence"), JSON_COMPACT);
    CHECKF(strstr(ev, "#5\"") && strstr(ev, "#10\""), "%s", ev);
    free(ev);
    json_decref(win);
    win = lesson_with(db, "Set BLOCK=32");
    act = json_string_value(json_object_get(win, "action"));
    CHECKF(strstr(act, "2 of 3 moves to it won"), "%s", act);
    json_decref(win);
    lose = lesson_with(db, "Do not expect BLOCK=32");
    CHECK(conf(lose, "refutations") == 1 &&
          !strcmp(json_string_value(json_object_get(lose, "status")), "active"));
    json_decref(lose);
    /* once more: refuted more often than confirmed, it is retired and no longer retrieved */
    CHECK(kf_store_open(ctx, run, NULL, &s) == KF_OK);
    node(s, n9, "{\"BLOCK\": 32, \"UNROLL\": 2}", KF_NODE_REVERTED, 1.6, 0, 1.9, 0, NULL);
    node(s, n8, "{\"BLOCK\": 32}", KF_NODE_KEPT, 1.9, 1, 2.0, 1, NULL);
    kf_store_close(s);
    /* (UNROLL=2's one move, 0.95x its parent, is noise: no lesson) */
    distill(db, ctx, run, "added 0 confirmed 1 unchanged 3 refuted 0 retired 1");
    lose = lesson_with(db, "Do not expect BLOCK=32");
    CHECK(!strcmp(json_string_value(json_object_get(lose, "status")), "retired"));
    kf_lesson_query q = {0};
    q.text = "BLOCK 32 did not beat";
    kf_lesson_hit h[10];
    int n;
    CHECK(kf_lessons_retrieve(db, &q, 10, 0, h, &n) == KF_OK);
    for (int i = 0; i < n; i++) CHECK(strcmp(h[i].id, json_string_value(json_object_get(lose, "id"))));
    json_decref(lose);
    /* an agent's rewrite (no template parameters) that won: a lesson about its technique,
     * measured against its parent; a rewrite under the root against the reference */
    CHECK(kf_store_open(ctx, run, NULL, &s) == KF_OK);
    node_as(s, "vectorisation", n1, NULL, KF_NODE_KEPT, 1.9, 1, 2.4, 1, NULL);
    node_as(s, "other", n1, NULL, KF_NODE_KEPT, 1.9, 1, 2.4, 1, NULL); /* no technique named */
    node_as(s, "unrolling", 0, NULL, KF_NODE_KEPT, 1.3, 1, 1.4, 1, NULL);
    kf_store_close(s);
    distill(db, ctx, run, "added 2 confirmed 0 unchanged 4 refuted 0 retired 0");
    json_t *tech = lesson_with(db, "Use vectorisation");
    CHECKF(strstr(json_string_value(json_object_get(json_object_get(tech, "situation"), "text")),
                  "the technique vectorisation"),
           "%s", json_string_value(json_object_get(json_object_get(tech, "situation"), "text")));
    CHECKF(strstr(json_string_value(json_object_get(tech, "action")), "1.27x to 1.33x over the parent"), "%s",
           json_string_value(json_object_get(tech, "action")));
    tags = json_dumps(json_object_get(tech, "tags"), JSON_COMPACT);
    CHECKF(strstr(tags, "\"technique/vectorisation\""), "%s", tags);
    free(tags);
    json_decref(tech);
    tech = lesson_with(db, "Use unrolling");
    CHECKF(strstr(json_string_value(json_object_get(tech, "action")), "1.30x to 1.40x over the parent"), "%s",
           json_string_value(json_object_get(tech, "action")));
    json_decref(tech);
    /* a setting that won once and lost twice is no "Set": UNROLL=4 gets a lose lesson,
     * which refutes its shape lesson once */
    CHECK(kf_store_open(ctx, run, NULL, &s) == KF_OK);
    node(s, n5, "{\"BLOCK\": 256, \"UNROLL\": 4}", KF_NODE_REVERTED, 1.4, 0, 1.8, 0, NULL);
    node(s, n8, "{\"BLOCK\": 256, \"UNROLL\": 4}", KF_NODE_REVERTED, 1.5, 0, 1.6, 0, NULL);
    kf_store_close(s);
    distill(db, ctx, run, "added 1 confirmed 0 unchanged 5 refuted 1 retired 0");
    lose = lesson_with(db, "Do not expect UNROLL=4");
    act = json_string_value(json_object_get(lose, "action"));
    CHECKF(strstr(act, "2 of 3 moves to it did not beat"), "%s", act);
    json_decref(lose);
    shape = lesson_with(db, "Set UNROLL=4");
    CHECK(conf(shape, "refutations") == 1 && conf(shape, "confirmations") == 1);
    json_decref(shape);
    /* a directory that is not a run */
    CHECK(kf_lessons_distill(db, dir, NULL) != KF_OK);
    kf_lessons_close(db);
    kf_task_free(t);
    kf_ctx_free(ctx);
}

/* A finished node with its own text: (sp1000, sp4000), both wins. */
static int64_t node_text(kf_store *s, const char *category, int64_t parent, const char *params,
                         const char *text, double s1, double s4) {
    char h[65], shapes[512];
    CHECK(kf_store_put_source(s, text, strlen(text), "c", h) == KF_OK);
    kf_node n = {0};
    memcpy(n.src_hash, h, 65);
    strcpy(n.ext, "c");
    strcpy(n.proposer, "tool");
    snprintf(n.category, sizeof n.category, "%s", category);
    n.parent = parent;
    n.params_json = (char *)params;
    CHECK(kf_store_add_node(s, &n) == KF_OK);
    n.state = KF_NODE_KEPT;
    snprintf(shapes, sizeof shapes,
             "[{\"sizes\": {\"n\": 1000}, \"speedup\": %g, \"win\": true}, {\"sizes\": {\"n\": 4000}, "
             "\"speedup\": %g,"
             " \"win\": true}]",
             s1, s4);
    n.shapes_json = shapes;
    n.speedup = sqrt(s1 * s4);
    CHECK(kft_finish_node(s, &n) == KF_OK);
    return n.id;
}

/* A lesson says what changed: the template parameter's own comment (on its kforge:param
 * line, or the template's words for it), what a rewrite's diff added and its submitter's
 * description, and where it held (the shapes, the node's kforge:when). A rewrite is
 * labelled by what its diff shows, not by its claimed category alone: a vectorisation
 * proposed as a specialisation (no kforge:when) teaches vectorisation. ("Use
 * memory_layout", "Set NT=1" said nothing of what NT is.) */
static void t_distill_content(const void *arg) {
    (void)arg;
    kf_ctx *ctx = kf_ctx_new();
    char *dir = scratch(), run[128];
    snprintf(run, sizeof run, "%s/run", dir);
    kf_task *t = twice_task(ctx, dir);
    kf_store *s = NULL;
    CHECKF(kf_store_create(ctx, run, t, NULL, &s) == KF_OK, "%s", kf_errmsg(ctx));
    static const char tmpl[] = "/* Template twice: BLOCK picks the elements per step, scalar tail. */\n"
                               "/* kforge:param BLOCK = %d */\n"
                               "/* kforge:param NT = %d */ // threads per row\n"
                               "%s"
                               "#include <stdint.h>\n"
                               "void twice(const float *x, float *y, int64_t n) {\n"
                               "    for (int64_t i = 0; i < n; i++) y[i] = 2 * x[i];\n"
                               "}\n";
    char *t1 = kf__asprintf(tmpl, 256, 1, ""),
         *t2 = kf__asprintf(tmpl, 256, 2, "/* kforge:when n >= 1000 */\n"),
         *t3 = kf__asprintf(tmpl, 512, 1, "");
    int64_t n1 = node_text(s, "other", 0, "{\"BLOCK\": 256, \"NT\": 1}", t1, 1.5, 1.8);
    node_text(s, "launch_config", n1, "{\"BLOCK\": 256, \"NT\": 2}", t2, 1.8, 2.2);
    node_text(s, "tiling", n1, "{\"BLOCK\": 512, \"NT\": 1}", t3, 1.7, 2.1);
    /* rewrites of node 1: GCC vectors proposed as a specialisation; an unroll pragma with a
     * description */
    char *vec = kf__asprintf("%s%s", t1, "typedef float vf __attribute__((vector_size(32)));\n");
    int64_t nv = node_text(s, "specialisation", n1, NULL, vec, 1.9, 2.4);
    char *unr = kf__asprintf("%s%s", t1, "#pragma GCC unroll 4\n");
    int64_t nu = node_text(s, "unrolling", n1, NULL, unr, 1.8, 2.3);
    CHECK(kf_store_event(s, nu, "description", "{\"text\": \"unrolled by four\"}") == KF_OK);
    (void)nv;
    kf_store_close(s);
    kf_lessons *db = open_db(ctx, dir, "l.db");
    char *sum = NULL;
    CHECKF(kf_lessons_distill(db, run, &sum) == KF_OK, "%s", kf_errmsg(ctx));
    free(sum);
    json_t *l = lesson_with(db, "Set NT=2");
    const char *act = json_string_value(json_object_get(l, "action"));
    const char *sit = json_string_value(json_object_get(json_object_get(l, "situation"), "text"));
    CHECKF(strstr(act, "Set NT=2 (NT: threads per row)"), "%s", act);
    CHECKF(strstr(sit, "n >= 1000 && n <= 4000, within its kforge:when (n >= 1000)"), "%s", sit);
    json_decref(l);
    l = lesson_with(db, "Set BLOCK=512");
    act = json_string_value(json_object_get(l, "action"));
    CHECKF(strstr(act, "Set BLOCK=512 (BLOCK picks the elements per step)"), "%s", act);
    json_decref(l);
    l = lesson_with(db, "Use vectorisation");
    act = json_string_value(json_object_get(l, "action"));
    CHECKF(strstr(act, "added GCC vector types; proposed as specialisation; 1 line changed"), "%s", act);
    char *tags = json_dumps(json_object_get(l, "tags"), JSON_COMPACT);
    CHECKF(strstr(tags, "technique/vectorisation"), "%s", tags);
    free(tags);
    json_decref(l);
    l = lesson_with(db, "Use unrolling");
    act = json_string_value(json_object_get(l, "action"));
    CHECKF(strstr(act, "(\"unrolled by four\"; added an unroll pragma; 1 line changed)"), "%s", act);
    json_decref(l);
    char *all = NULL;
    CHECK(kf_lessons_list_json(db, NULL, 0, 1, &all) == KF_OK);
    CHECKF(!strstr(all, "technique/specialisation") && !strstr(all, "Use specialisation"),
           "a vectorisation win was labelled a specialisation: %s", all);
    free(all);
    free(t1), free(t2), free(t3), free(vec), free(unr);
    kf_lessons_close(db);
    kf_task_free(t);
    kf_ctx_free(ctx);
}

/* ---- an embeddings endpoint ----------------------------------------------------------------- */

/* A 3-dimensional embedding: (count of "warp", count of "tile", 0.1), per input. */
static char *embed_reply(kft_http *s, const char *req, char *status, size_t n) {
    (void)s;
    const char *body = strstr(req, "\r\n\r\n");
    json_t *j = body ? json_loads(body + 4, 0, NULL) : NULL;
    json_t *in = json_object_get(j, "input");
    if (!strstr(req, "POST /v1/embeddings ") || !json_is_array(in)) {
        snprintf(status, n, "404 Not Found");
        json_decref(j);
        return strdup("{\"error\": {\"message\": \"no such route\"}}");
    }
    json_t *data = json_array();
    size_t i;
    json_t *x;
    json_array_foreach(in, i, x) {
        const char *t = json_string_value(x);
        int w = 0, tl = 0;
        for (const char *p = t; (p = strstr(p, "warp")); p++) w++;
        for (const char *p = t; (p = strstr(p, "tile")); p++) tl++;
        json_array_append_new(data, json_pack("{s:s, s:i, s:[f, f, f]}", "object", "embedding", "index",
                                              (int)i, "embedding", (double)w, (double)tl, 0.1));
    }
    json_t *r = json_pack("{s:s, s:o, s:s}", "object", "list", "data", data, "model", "stub-embed");
    char *out = json_dumps(r, JSON_COMPACT);
    json_decref(r);
    json_decref(j);
    return out;
}

/* What a distilled lesson has counted survives the evidence display's cap, older
 * databases' naming, and copies: a lesson with more than 64 nodes is not re-confirmed by a
 * copy of its run; a copy resumed apart adds its own new node; a lesson distilled before
 * the `distilled` table (evidence naming the run as typed) is not re-confirmed by the same
 * run (each of these broke an earlier version of the rule). */
static void t_distill_identity(const void *arg) {
    (void)arg;
    kf_ctx *ctx = kf_ctx_new();
    char *dir = scratch(), run[128], copy[160], cmd[600];
    snprintf(run, sizeof run, "%s/run", dir);
    snprintf(copy, sizeof copy, "%s/copy", dir);
    kf_task *t = twice_task(ctx, dir);
    kf_store *s = NULL;
    CHECKF(kf_store_create(ctx, run, t, NULL, &s) == KF_OK, "%s", kf_errmsg(ctx));
    /* 70 won moves to BLOCK=256 and 70 lost moves to BLOCK=32: lessons of 70 nodes each */
    int64_t n1 = node(s, 0, "{\"BLOCK\": 256}", KF_NODE_KEPT, 1.5, 1, 1.8, 1, NULL);
    for (int i = 0; i < 70; i++) {
        int64_t lo = node(s, n1, "{\"BLOCK\": 32}", KF_NODE_REVERTED, 0.9, 0, 0.8, 0, NULL);
        node(s, lo, "{\"BLOCK\": 256}", KF_NODE_KEPT, 1.5, 1, 1.9, 1, NULL);
    }
    kf_store_close(s);
    kf_lessons *db = open_db(ctx, dir, "l.db");
    distill(db, ctx, run, "added 2 confirmed 0 unchanged 0 refuted 0 retired 0");
    distill(db, ctx, run, "added 0 confirmed 0 unchanged 2 refuted 0 retired 0");
    snprintf(cmd, sizeof cmd, "cp -a '%s' '%s'", run, copy);
    CHECK(system(cmd) == 0);
    distill(db, ctx, copy, "added 0 confirmed 0 unchanged 2 refuted 0 retired 0");
    /* the copy resumed apart: its next node (another source under an id the original may
     * also use later) is new evidence */
    CHECK(kf_store_open(ctx, copy, NULL, &s) == KF_OK);
    int64_t lo = node(s, n1, "{\"BLOCK\": 32}", KF_NODE_REVERTED, 0.9, 0, 0.8, 0, NULL);
    node(s, lo, "{\"BLOCK\": 256}", KF_NODE_KEPT, 1.5, 1, 1.9, 1, NULL);
    kf_store_close(s);
    CHECK(kf_store_open(ctx, run, NULL, &s) == KF_OK);
    lo = node(s, n1, "{\"BLOCK\": 32}", KF_NODE_REVERTED, 0.9, 0, 0.8, 0, NULL);
    node(s, lo, "{\"BLOCK\": 256}", KF_NODE_KEPT, 1.5, 1, 1.9, 1, NULL);
    kf_store_close(s);
    distill(db, ctx, copy, "added 0 confirmed 2 unchanged 0 refuted 0 retired 0");
    distill(db, ctx, run, "added 0 confirmed 2 unchanged 0 refuted 0 retired 0");
    distill(db, ctx, run, "added 0 confirmed 0 unchanged 2 refuted 0 retired 0");
    json_t *win = lesson_with(db, "Set BLOCK=256");
    CHECK(conf(win, "confirmations") == 3);
    CHECK(json_array_size(json_object_get(json_object_get(win, "evidence"), "nodes")) <= 64);
    json_decref(win);
    kf_lessons_close(db);

    /* a database distilled before the table: its rows gone, its evidence naming the run as
     * typed ("small"; every node listed, as the old format did up to 64); the same run
     * again, from its directory, changes nothing */
    char small[160];
    snprintf(small, sizeof small, "%s/small", dir);
    CHECKF(kf_store_create(ctx, small, t, NULL, &s) == KF_OK, "%s", kf_errmsg(ctx));
    n1 = node(s, 0, "{\"BLOCK\": 256}", KF_NODE_KEPT, 1.5, 1, 1.8, 1, NULL);
    for (int i = 0; i < 3; i++) {
        lo = node(s, n1, "{\"BLOCK\": 32}", KF_NODE_REVERTED, 0.9, 0, 0.8, 0, NULL);
        node(s, lo, "{\"BLOCK\": 256}", KF_NODE_KEPT, 1.5, 1, 1.9, 1, NULL);
    }
    kf_store_close(s);
    kf_lessons *db2 = open_db(ctx, dir, "old.db");
    char cwd[4096];
    CHECK(getcwd(cwd, sizeof cwd) != NULL);
    CHECK(chdir(dir) == 0);
    distill(db2, ctx, "small", "added 2 confirmed 0 unchanged 0 refuted 0 retired 0");
    kf_lessons_close(db2);
    { /* make it look like the old format: no rows, nodes named "run#N" as typed */
        sqlite3 *raw = NULL;
        CHECK(sqlite3_open("old.db", &raw) == SQLITE_OK);
        CHECK(sqlite3_exec(raw, "DELETE FROM distilled", NULL, NULL, NULL) == SQLITE_OK);
        char *real = realpath("small", NULL);
        char sql[1024];
        snprintf(sql, sizeof sql, "UPDATE lessons SET evidence = replace(evidence, '%s#', 'small#')", real);
        free(real);
        CHECK(sqlite3_exec(raw, sql, NULL, NULL, NULL) == SQLITE_OK);
        sqlite3_close(raw);
    }
    db2 = open_db(ctx, dir, "old.db");
    distill(db2, ctx, "small", "added 0 confirmed 0 unchanged 2 refuted 0 retired 0");
    distill(db2, ctx, "./small/", "added 0 confirmed 0 unchanged 2 refuted 0 retired 0");
    CHECK(chdir(cwd) == 0);
    kf_lessons_close(db2);
    kf_task_free(t);
    kf_ctx_free(ctx);
}

static void t_endpoint(const void *arg) {
    (void)arg;
    kft_http_no_proxy();
    static kft_http srv;
    kft_http_start(&srv, embed_reply, NULL);
    char url[128], path[256];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/v1/", srv.port);
    char *dir = scratch();
    snprintf(path, sizeof path, "%s/l.db", dir);
    kf_ctx *ctx = kf_ctx_new();
    /* a database made with the built-in embedding is embedded again on open */
    kf_lessons *db = open_db(ctx, dir, "l.db");
    add(db, ctx, "{\"id\": \"w\", \"situation\": \"reductions\", \"action\": \"warp warp shuffle\"}");
    CHECK(!strcmp(kf_lessons_embedding(db), "hashgram-v2-512"));
    kf_lessons_close(db);
    setenv("KFT_EMBED_KEY", "sk-embed-SECRET", 1);
    kf_lessons_opts o;
    kf_lessons_opts_init(&o);
    o.embed_url = url;
    o.embed_model = "stub-embed";
    o.api_key_env = "KFT_EMBED_KEY";
    o.timeout_s = 5;
    CHECKF(kf_lessons_open(ctx, path, &o, &db) == KF_OK, "%s", kf_errmsg(ctx));
    CHECK(atomic_load(&srv.requests) == 1); /* the one lesson, embedded again */
    CHECKF(strstr(srv.first, "\"model\":\"stub-embed\"") && strstr(srv.first, "Bearer sk-embed-SECRET"), "%s",
           srv.first);
    CHECK(strstr(kf_lessons_embedding(db), "openai:stub-embed@http://127.0.0.1:"));
    add(db, ctx, "{\"id\": \"t\", \"situation\": \"gemm\", \"action\": \"tile tile tile\"}");
    add(db, ctx, "{\"id\": \"wt\", \"situation\": \"mixed\", \"action\": \"warp tile\"}");
    kf_lesson_query q = {0};
    q.rank = KF_LESSON_RANK_VECTOR;
    q.text = "tile";
    CHECKF(!strcmp(ids(db, ctx, &q, 0), "t wt w"), "%s", ids(db, ctx, &q, 0)); /* by the stub's vectors */
    q.text = "warp";
    CHECKF(!strcmp(ids(db, ctx, &q, 0), "w wt t"), "%s", ids(db, ctx, &q, 0));
    kf_lessons_close(db);
    /* a dead endpoint: opening a database embedded by it needs no request; adding does,
     * and fails with the URL in the message */
    char dead[128];
    snprintf(dead, sizeof dead, "http://127.0.0.1:%d/v1", kft_http_dead_port());
    o.embed_url = dead;
    char path2[256];
    snprintf(path2, sizeof path2, "%s/dead.db", dir);
    CHECKF(kf_lessons_open(ctx, path2, &o, &db) == KF_OK, "%s", kf_errmsg(ctx));
    CHECK(kf_lessons_add_json(db, "{\"situation\": \"s\", \"action\": \"a\"}", NULL) == KF_EBACKEND);
    CHECKF(strstr(kf_errmsg(ctx), "embeddings endpoint") && strstr(kf_errmsg(ctx), dead) &&
               !strstr(kf_errmsg(ctx), "SECRET"),
           "%s", kf_errmsg(ctx));
    CHECK(count_lessons(db, 1) == 0);
    kf_lessons_close(db);
    /* the database embedded by the live stub cannot be opened with the dead one */
    CHECK(kf_lessons_open(ctx, path, &o, &db) == KF_EBACKEND);
    CHECK(strstr(kf_errmsg(ctx), "embeddings endpoint"));
    kf_ctx_free(ctx);
}

/* ---- rendering ---------------------------------------------------------------------------- */

static void t_render(const void *arg) {
    (void)arg;
    kf_ctx *ctx = kf_ctx_new();
    kf_lessons *db = open_db(ctx, scratch(), "l.db");
    add(db, ctx,
        "{\"id\": \"a\", \"situation\": \"long rows\", \"action\": \"one warp per row\", \"boundaries\": "
        "\"cols < 32\"}");
    add(db, ctx,
        "{\"id\": \"b\", \"situation\": \"rows\", \"action\": \"a very long action about rows that takes "
        "many tokens"
        " to say, more than the allowance left after the first lesson, by a long way, yes indeed\"}");
    add(db, ctx, "{\"id\": \"c\", \"situation\": \"rows\", \"action\": \"short\"}");
    kf_lesson_hit h[3] = {{.id = "a"}, {.id = "b"}, {.id = "c"}};
    char *text = NULL;
    int64_t tokens = 0;
    int used = 0;
    CHECK(kf_lessons_render(db, h, 3, 10000, &text, &tokens, &used) == KF_OK && used == 3);
    CHECK(strstr(text,
                 "[a, trust 0.50: 0+ 0-] When: long rows\n  Do: one warp per row\n  Not when: cols < 32\n"));
    free(text);
    CHECK(kf_lessons_render(db, h, 3, 70, &text, &tokens, &used) == KF_OK);
    CHECKF(used == 2 && tokens <= 70 && strstr(text, "[a,") && !strstr(text, "[b,") && strstr(text, "[c,"),
           "%d %lld\n%s", used, (long long)tokens, text);
    CHECK(tokens == (int64_t)((strlen(text) + 3) / 4));
    free(text);
    CHECK(kf_lessons_render(db, h, 3, 5, &text, &tokens, &used) == KF_OK && used == 0 && !*text &&
          tokens == 0);
    free(text);
    kf_lessons_close(db);
    kf_ctx_free(ctx);
}

/* ---- the command line ------------------------------------------------------------------------ */

static int cli(const char *dir, const char *args, char *out, size_t n) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "cd %s && %s lessons %s --lessons %s/l.db 2>&1", dir, kft_bin("kforge"), args,
             dir);
    return kft_run(cmd, out, n);
}

static void t_cli(const void *arg) {
    (void)arg;
    char *dir = scratch(), out[16384];
    int rc = cli(dir, "add --action 'use float4'", out, sizeof out);
    CHECKF(rc == 2 && strstr(out, "field 'situation': missing"), "rc %d: %s", rc, out);
    rc = cli(dir,
             "add --situation 'long rows' --action 'one block per row' --backend cuda --op op/softmax"
             " --shape 'cols > 1024' --tag cuda/block --id sm-long",
             out, sizeof out);
    CHECKF(rc == 0 && strstr(out, "added sm-long"), "rc %d: %s", rc, out);
    rc = cli(dir, "add --situation s --action a --shape 'cols >' ", out, sizeof out);
    CHECKF(rc == 2 && strstr(out, "situation.shape"), "rc %d: %s", rc, out);
    /* scope: the shape decides */
    rc = cli(dir, "search long rows --backend cuda --op op/softmax --shape rows=8,cols=512 --json", out,
             sizeof out);
    CHECKF(rc == 0 && !strstr(out, "sm-long"), "rc %d: %s", rc, out);
    rc = cli(dir,
             "search long rows --backend cuda --op op/softmax --shape rows=8,cols=512 --shape "
             "rows=8,cols=4096 --json",
             out, sizeof out);
    CHECKF(rc == 0 && strstr(out, "\"sm-long\"") && strstr(out, "\"keyword_rank\": 1"), "rc %d: %s", rc, out);
    rc = cli(dir, "search long rows --shape rows=8 --shape cols=1", out, sizeof out);
    CHECKF(rc == 2 && strstr(out, "in its order"), "rc %d: %s", rc, out);
    rc = cli(dir, "search long --tokens 200", out, sizeof out);
    CHECKF(rc == 0 && strstr(out, "[sm-long, trust 0.50: 0+ 0-] When: long rows"), "rc %d: %s", rc, out);
    rc = cli(dir, "show sm-long", out, sizeof out);
    CHECKF(rc == 0 && strstr(out, "shape: cols > 1024"), "rc %d: %s", rc, out);
    rc = cli(dir, "show nope", out, sizeof out);
    CHECKF(rc == 2 && strstr(out, "no lesson 'nope'"), "rc %d: %s", rc, out);
    rc = cli(dir, "export -o ex.jsonl", out, sizeof out);
    CHECK(rc == 0);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "cd %s && %s lessons import ex.jsonl --lessons %s/two.db --json 2>&1", dir,
             kft_bin("kforge"), dir);
    rc = kft_run(cmd, out, sizeof out);
    CHECKF(rc == 0 && strstr(out, "{\"added\": 1, \"updated\": 0}"), "rc %d: %s", rc, out);
    rc = cli(dir, "distill /nonexistent-run", out, sizeof out);
    CHECKF(rc == 2 && strstr(out, "nonexistent-run"), "rc %d: %s", rc, out);
    rc = cli(dir, "frobnicate", out, sizeof out);
    CHECKF(rc == 2 && strstr(out, "unknown command 'frobnicate'"), "rc %d: %s", rc, out);
    rc = cli(dir, "list --json", out, sizeof out);
    CHECKF(rc == 0 && strstr(out, "\"sm-long\""), "rc %d: %s", rc, out);
    /* reading commands never create a database on a mistyped path; a failed import
     * leaves none behind */
    snprintf(cmd, sizeof cmd, "cd %s && %s lessons list --lessons %s/nodir/x.db 2>&1", dir, kft_bin("kforge"),
             dir);
    rc = kft_run(cmd, out, sizeof out);
    CHECKF(rc == 2 && strstr(out, "no lessons database there"), "rc %d: %s", rc, out);
    char p[512];
    snprintf(p, sizeof p, "%s/nodir", dir);
    CHECKF(access(p, F_OK) != 0, "list created %s", p);
    snprintf(p, sizeof p, "%s/bad.jsonl", dir);
    FILE *f = fopen(p, "w");
    CHECK(f && fputs("{\"bad\": 1}\n", f) >= 0 && fclose(f) == 0);
    snprintf(cmd, sizeof cmd, "cd %s && %s lessons import bad.jsonl --lessons %s/three.db 2>&1", dir,
             kft_bin("kforge"), dir);
    rc = kft_run(cmd, out, sizeof out);
    snprintf(p, sizeof p, "%s/three.db", dir);
    CHECKF(rc == 2 && strstr(out, "bad.jsonl:1") && access(p, F_OK) != 0, "rc %d: %s", rc, out);
    /* add says when it replaced a lesson; --source is agent or person; --help works */
    rc = cli(dir,
             "add --situation 'long rows' --action 'one block per row' --backend cuda --op op/softmax"
             " --shape 'cols > 1024' --tag cuda/block --id sm-long",
             out, sizeof out);
    CHECKF(rc == 0 && strstr(out, "replaced sm-long"), "rc %d: %s", rc, out);
    rc = cli(dir, "add --situation s --action a --source distilled", out, sizeof out);
    CHECKF(rc == 2 && strstr(out, "agent or person"), "rc %d: %s", rc, out);
    rc = cli(dir, "add --situation s --action a --backend gpu", out, sizeof out);
    CHECKF(rc == 2 && strstr(out, "c or cuda"), "rc %d: %s", rc, out);
    rc = cli(dir, "search --help", out, sizeof out);
    CHECKF(rc == 0 && strstr(out, "usage: kforge lessons"), "rc %d: %s", rc, out);
    /* search without words lists what is in scope; a one-letter parameter is found */
    rc = cli(dir, "search --backend cuda --op op/softmax --shape rows=8,cols=4096", out, sizeof out);
    CHECKF(rc == 0 && strstr(out, "sm-long") && strstr(out, "ranked by trust"), "rc %d: %s", rc, out);
    rc = cli(dir, "add --situation 'softmax rows' --action 'Set W=16: wider rows' --id w16", out, sizeof out);
    CHECK(rc == 0);
    rc = cli(dir, "search W --rank keyword --json", out, sizeof out);
    CHECKF(rc == 0 && strstr(out, "\"w16\"") && !strstr(out, "sm-long"), "rc %d: %s", rc, out);
}

void kft_register_lessons(void) {
    kft_add("lessons/cli", t_cli, NULL, 60);
    kft_add("lessons/refuse", t_refuse, NULL, 30);
    kft_add("lessons/tags", t_tags, NULL, 30);
    kft_add("lessons/scope", t_scope, NULL, 30);
    kft_add("lessons/trust", t_trust, NULL, 30);
    kft_add("lessons/embed", t_embed, NULL, 30);
    kft_add("lessons/rrf", t_rrf, NULL, 30);
    kft_add("lessons/roundtrip", t_roundtrip, NULL, 30);
    kft_add("lessons/import_bad", t_import_bad, NULL, 30);
    kft_add("lessons/distill", t_distill, NULL, 60);
    kft_add("lessons/distill_content", t_distill_content, NULL, 60);
    kft_add("lessons/distill_identity", t_distill_identity, NULL, 60);
    kft_add("lessons/endpoint", t_endpoint, NULL, 60);
    kft_add("lessons/render", t_render, NULL, 30);
}
