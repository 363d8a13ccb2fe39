/*
 * lessons_bench.c - retrieval quality and latency of lessons (docs/lessons.md).
 *
 *   1. quality on the labelled set bench/data/lessons/ (lessons.jsonl: lessons written
 *      by hand about CUDA and C kernel optimisation; queries.jsonl: context-pack queries
 *      with their scope and the ids of the lessons that answer them): precision@5 and
 *      recall@10 for keyword only (FTS5 BM25), vector only (the built-in embedding) and
 *      hybrid (both, fused by reciprocal rank), all after the same scope filter;
 *   2. latency per pack over 10,000 lessons (the labelled ones plus synthetic lessons
 *      recombined from their sentences, scopes and tags): one kf_lessons_retrieve (k 5,
 *      hybrid) plus kf_lessons_render into 800 tokens, for every query, REPS times.
 *
 * Quality is reported on the held-out half of the queries (even ids: q02, q04, ...), on
 * the tuning half (odd ids), on which the built-in embedding's weights and the fusion's
 * were chosen, and on all of them.
 *
 * Then the same for queries_pack.jsonl when it is in DATA_DIR: queries in the form a
 * context pack asks them (src/loop/loop.c pack_for, src/loop/memory.c): text "<task
 * name> <category> <first reason message of the latest related failure, else the
 * parent's note>", scope the task's backend, the host's arch for C tasks, ops
 * ["op/<task name>"] plus the task's own "ops" (read from tasks/<backend>/<task>/task.json
 * when the bench runs from the repository's root, as memory.c adds them) and the visible
 * shapes. Same split (odd p-ids tune, even held out);
 * nothing was tuned on it. With the scope, each table's heading also gives the share of
 * expected lessons that pass the scope filter at all (the best possible recall@10).
 *
 * Usage: kf-lessons-bench [DATA_DIR] [-v] [--reps N] [--total N] [--keep]
 *                         [--tune] [--fuse WK,WV,K | --fuse convex,ALPHA]
 *                         [--knobs WORD,BIGRAM,GRAMS,PARTS,CONCEPT]
 * (-v: the misses of each ranking on stderr; --keep: leave the databases for a look;
 * --tune: only the tuning half's figures, one line per ranking, for a parameter sweep;
 * lines of the pack-style set start "pack-";
 * --fuse, --knobs: other fusion weights and embedding weights than the built-in ones)
 * Prints Markdown. Not a test: nothing is asserted.
 */
#define _GNU_SOURCE
#include "util/util.h"
#include "lessons/lessons.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static double ms(void) { return (double)kf__now_ns() / 1e6; }

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void die(kf_ctx *ctx, const char *what) {
    fprintf(stderr, "lessons_bench: %s: %s\n", what, kf_errmsg(ctx));
    exit(1);
}

static char *slurp(const char *path, size_t *len) {
    char *t = NULL;
    if (kf__read_file(path, 64u << 20, &t, len)) {
        fprintf(stderr, "lessons_bench: cannot read %s\n", path);
        exit(1);
    }
    return t;
}

typedef struct {
    json_t *j;
    const char *names[16];
    int64_t shapes[16 * 16];
    const char *ops[16];
    kf_lesson_query q;
} query;

static json_t *task_ops; /* the task.json "ops" strings added to queries, kept alive */

static void make_query(query *x, json_t *j) {
    if (!task_ops) task_ops = json_array();
    memset(x, 0, sizeof *x);
    x->j = j;
    x->q.text = json_string_value(json_object_get(j, "text"));
    x->q.backend = json_string_value(json_object_get(j, "backend"));
    x->q.arch = json_string_value(json_object_get(j, "arch"));
    size_t i, k;
    json_t *v, *w;
    json_array_foreach(json_object_get(j, "ops"), i, v) if (i < 16) x->ops[x->q.nops++] =
        json_string_value(v);
    /* a pack query names op/<task>: memory.c adds the task's own "ops" from its task.json
     * (tasks/<backend>/<task>/task.json, from where the bench runs); kept alive in task_ops */
    const char *op0 = x->q.nops ? x->ops[0] : NULL;
    if (op0 && !strncmp(op0, "op/", 3) && x->q.backend && !strchr(op0 + 3, '/')) {
        char path[512];
        snprintf(path, sizeof path, "tasks/%s/%s/task.json", x->q.backend, op0 + 3);
        json_t *tj = json_load_file(path, 0, NULL);
        json_t *o;
        json_array_foreach(json_object_get(tj, "ops"), i, o) {
            if (x->q.nops < 16 && json_string_value(o)) {
                json_array_append(task_ops, o);
                x->ops[x->q.nops++] =
                    json_string_value(json_array_get(task_ops, json_array_size(task_ops) - 1));
            }
        }
        json_decref(tj);
    }
    json_array_foreach(json_object_get(j, "shape_names"), i, v) if (i < 16) x->names[x->q.nshape_names++] =
        json_string_value(v);
    json_array_foreach(json_object_get(j, "shapes"), i, v) {
        if (i >= 16) break;
        json_array_foreach(v, k, w) if (k < 16) x->shapes[i * (size_t)x->q.nshape_names + k] =
            json_integer_value(w);
        x->q.nshapes++;
    }
    x->q.ops = x->ops;
    x->q.shape_names = x->names;
    x->q.shapes = x->shapes;
}

/* half 0: held out (even query number), 1: tuning (odd), 2: all */
static int in_half(const query *x, int half) {
    if (half == 2) return 1;
    const char *id = json_string_value(json_object_get(x->j, "id"));
    int num = id ? atoi(id + strspn(id, "abcdefghijklmnopqrstuvwxyz")) : 0;
    return (num % 2 == 1) == (half == 1);
}

static int expected(json_t *q, const char *id) {
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(q, "expected"), i, v) if (!strcmp(json_string_value(v), id)) return 1;
    return 0;
}

/* Synthetic lessons: sentences, scopes and tags of the labelled ones recombined. */
static char *synthetic(json_t *base, int total, unsigned seed) {
    size_t nb = json_array_size(base);
    kf_buf b;
    kf_buf_init(&b, (size_t)1 << 31);
    srand(seed);
    for (int i = 0; i < total; i++) {
        json_t *a = json_array_get(base, (size_t)rand() % nb), *c = json_array_get(base, (size_t)rand() % nb),
               *d = json_array_get(base, (size_t)rand() % nb);
        json_t *sit = json_deep_copy(json_object_get(a, "situation"));
        const char *t1 = json_string_value(json_object_get(sit, "text"));
        const char *t2 = json_string_value(json_object_get(json_object_get(d, "situation"), "text"));
        char *txt = kf__asprintf("%s Variant %d: %s", t1, i, t2);
        json_object_set_new(sit, "text", json_string(txt));
        free(txt);
        json_t *o =
            json_pack("{s:s++, s:o, s:O, s:s, s:O}", "id", "syn-",
                      json_string_value(json_object_get(a, "id")), "", "situation", sit, "action",
                      json_object_get(c, "action"), "source", "agent", "tags", json_object_get(d, "tags"));
        char id[64];
        snprintf(id, sizeof id, "syn-%05d", i);
        json_object_set_new(o, "id", json_string(id));
        if (json_object_get(c, "boundaries"))
            json_object_set(o, "boundaries", json_object_get(c, "boundaries"));
        char *s = json_dumps(o, JSON_COMPACT);
        kf_buf_printf(&b, "%s\n", s);
        free(s);
        json_decref(o);
    }
    return b.p;
}

/* Quality of the three rankings on the queries Q (prefix: "" for queries.jsonl, "pack-" for
 * queries_pack.jsonl; it starts every line --tune prints). With each query's scope the
 * table also says how many expected lessons pass the scope filter at all (reachable). */
static void quality(kf_ctx *ctx, kf_lessons *db, query *Q, size_t nq, const char *prefix, int quiet,
                    int verbose) {
    /* The fixed split: queries with an odd number (q01, q03, ...) are the tuning half, on
     * which the embedding's knobs and the fusion's weights were chosen; even ones are held
     * out and are the headline. */
    static const char *const half_name[] = {"held-out half (even query ids)", "tuning half (odd query ids)",
                                            "all queries"};
    for (int scoped = 1; scoped >= 0; scoped--)
        for (int half = 0; half < 3; half++) {
            if (quiet && half != 1) continue;
            if (!quiet && !scoped && half != 2 && !*prefix) continue; /* the pack set: every half */
            int nin = 0;
            double bestp = 0;
            for (size_t i = 0; i < nq; i++)
                if (in_half(&Q[i], half)) {
                    nin++;
                    size_t ne = json_array_size(json_object_get(Q[i].j, "expected"));
                    bestp += (double)(ne < 5 ? ne : 5) / 5.0;
                }
            /* expected lessons that pass the scope filter at all (the vector list ranks every
             * lesson that passes, up to KF_LESSONS_LIST_N) */
            double reach = 0;
            for (size_t i = 0; scoped && i < nq; i++) {
                if (!in_half(&Q[i], half)) continue;
                kf_lesson_query qq = Q[i].q;
                qq.rank = KF_LESSON_RANK_VECTOR;
                kf_lesson_hit all[100];
                int n = 0, got = 0;
                if (kf_lessons_retrieve(db, &qq, 100, 0.0, all, &n)) die(ctx, "retrieve");
                for (int r = 0; r < n; r++) got += expected(Q[i].j, all[r].id);
                reach += (double)got / (double)json_array_size(json_object_get(Q[i].j, "expected"));
            }
            if (!quiet) {
                if (scoped)
                    printf(
                        "%s, %s: %d queries, best possible P@5 %.3f, expected lessons that pass the scope"
                        " filter (best possible R@10) %.3f\n\n",
                        "With each query's scope (backend, arch, ops, shapes), as a context pack retrieves",
                        half_name[half], nin, bestp / nin, reach / nin);
                else
                    printf("%s, %s: %d queries, best possible P@5 %.3f\n\n",
                           scoped
                               ? "With each query's scope (backend, ops, shapes), as a context pack retrieves"
                               : "Ranking alone (no scope filter: every query against all the lessons)",
                           half_name[half], nin, bestp / nin);
                printf("| ranking | precision@5 | recall@10 | queries with nothing relevant in the top 10 |\n"
                       "|---|---|---|---|\n");
            }
            static const int order[] = {KF_LESSON_RANK_KEYWORD, KF_LESSON_RANK_VECTOR, KF_LESSON_RANK_HYBRID};
            for (int oi = 0; oi < 3; oi++) {
                int mode = order[oi];
                char name[96];
                if (mode == KF_LESSON_RANK_HYBRID)
                    snprintf(name, sizeof name, "%s",
                             kf_lessons__fusion.alpha > 0 ? "hybrid (convex combination)"
                                                          : "hybrid (weighted RRF)");
                else if (mode == KF_LESSON_RANK_KEYWORD)
                    snprintf(name, sizeof name, "keyword only (FTS5 BM25)");
                else snprintf(name, sizeof name, "vector only (%s)", kf_lessons_embedding(db));
                double p5 = 0, r10 = 0, mrr = 0;
                int misses = 0;
                kf_buf missed;
                kf_buf_init(&missed, 1 << 16);
                for (size_t i = 0; i < nq; i++) {
                    if (!in_half(&Q[i], half)) continue;
                    Q[i].q.rank = mode;
                    kf_lesson_query qq = Q[i].q;
                    if (!scoped) {
                        qq.backend = NULL;
                        qq.nops = 0;
                        qq.nshapes = 0;
                    }
                    kf_lesson_hit h[10];
                    int n = 0;
                    if (kf_lessons_retrieve(db, &qq, 10, 0.0, h, &n)) die(ctx, "retrieve");
                    int in5 = 0, in10 = 0;
                    for (int r = 0; r < n; r++)
                        if (expected(Q[i].j, h[r].id)) {
                            in10++;
                            if (r < 5) in5++;
                            if (in10 == 1) mrr += 1.0 / (r + 1);
                        }
                    size_t ne = json_array_size(json_object_get(Q[i].j, "expected"));
                    p5 += in5 / 5.0;
                    r10 += (double)in10 / (double)ne;
                    if (!in10) {
                        misses++;
                        kf_buf_printf(&missed, " %s", json_string_value(json_object_get(Q[i].j, "id")));
                    }
                    if (verbose && in10 < (int)ne) {
                        fprintf(stderr, "%s%s%s %s: %d of %zu in the top 10:", prefix,
                                scoped ? "" : "unscoped ", name,
                                json_string_value(json_object_get(Q[i].j, "id")), in10, ne);
                        for (int r = 0; r < n && r < 5; r++) fprintf(stderr, " %s", h[r].id);
                        fprintf(stderr, "\n");
                    }
                }
                if (quiet)
                    printf("%s%s%s %.4f %.4f %.4f\n", prefix, scoped ? "" : "u-",
                           mode == KF_LESSON_RANK_HYBRID    ? "hybrid"
                           : mode == KF_LESSON_RANK_KEYWORD ? "keyword"
                                                            : "vector",
                           p5 / nin, r10 / nin, mrr / nin);
                else
                    printf("| %s | %.3f | %.3f | %d%s%s |\n", name, p5 / nin, r10 / nin, misses,
                           misses ? ":" : "", missed.p ? missed.p : "");
                kf_buf_free(&missed);
            }
            if (!quiet) printf("\n");
        }
}

int main(int argc, char **argv) {
    const char *data = KF_SOURCE_DIR "/bench/data/lessons";
    int verbose = 0, reps = 20, total = 10000, keep = 0, quiet = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-v")) verbose = 1;
        else if (!strcmp(argv[i], "--tune")) quiet = 1;
        else if (!strcmp(argv[i], "--fuse") && i + 1 < argc) {
            kf_lessons_fusion *f = &kf_lessons__fusion;
            const char *v = argv[++i];
            if (!strncmp(v, "convex,", 7)) {
                if (sscanf(v + 7, "%lf", &f->alpha) != 1 || f->alpha <= 0 || f->alpha > 1) return 2;
            } else if (sscanf(v, "%lf,%lf,%lf", &f->w_keyword, &f->w_vector, &f->k) != 3) {
                return 2;
            }
        } else if (!strcmp(argv[i], "--knobs") && i + 1 < argc) {
            kf_lessons_hash_knobs *k = &kf_lessons__knobs;
            if (sscanf(argv[++i], "%f,%f,%f,%f,%f", &k->word, &k->bigram, &k->grams, &k->parts,
                       &k->concept) != 5)
                return 2;
        } else if (!strcmp(argv[i], "--keep")) keep = 1;
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--total") && i + 1 < argc) total = atoi(argv[++i]);
        else if (argv[i][0] == '-') {
            fprintf(stderr,
                    "usage: kf-lessons-bench [DATA_DIR] [-v] [--tune] [--fuse W,W,K] [--knobs ...] [--keep] "
                    "[--reps N] [--total N]\n");
            return strcmp(argv[i], "--help") && strcmp(argv[i], "-h") ? 2 : 0;
        } else data = argv[i];
    }
    char dir[] = "/tmp/kf-lessons-bench-XXXXXX", path[256], lpath[512], qpath[512];
    if (!mkdtemp(dir)) return 1;
    snprintf(lpath, sizeof lpath, "%s/lessons.jsonl", data);
    snprintf(qpath, sizeof qpath, "%s/queries.jsonl", data);
    size_t llen, qlen;
    char *ltext = slurp(lpath, &llen), *qtext = slurp(qpath, &qlen);
    kf_ctx *ctx = kf_ctx_new();
    kf_lessons *db = NULL;
    snprintf(path, sizeof path, "%s/set.db", dir);
    if (kf_lessons_open(ctx, path, NULL, &db) || kf_lessons_import(db, ltext, llen, lpath, NULL, NULL))
        die(ctx, "loading the labelled lessons");
    json_t *base = json_array(), *qs = json_array();
    for (char *save = NULL, *line = strtok_r(ltext, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
        json_array_append_new(base, json_loads(line, 0, NULL));
    for (char *save = NULL, *line = strtok_r(qtext, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
        json_array_append_new(qs, json_loads(line, 0, NULL));
    size_t nq = json_array_size(qs);
    query *Q = calloc(nq, sizeof *Q);
    for (size_t i = 0; i < nq; i++) make_query(&Q[i], json_array_get(qs, i));
    if (kf_lessons__fusion.alpha > 0)
        printf("## Lessons retrieval: %zu labelled lessons, %zu queries (embedding %s; fusion convex, alpha "
               "%.2f)\n\n",
               json_array_size(base), nq, kf_lessons_embedding(db), kf_lessons__fusion.alpha);
    else
        printf("## Lessons retrieval: %zu labelled lessons, %zu queries (embedding %s; fusion w_keyword %.2f,"
               " w_vector %.2f, k %.0f)\n\n",
               json_array_size(base), nq, kf_lessons_embedding(db), kf_lessons__fusion.w_keyword,
               kf_lessons__fusion.w_vector, kf_lessons__fusion.k);
    quality(ctx, db, Q, nq, "", quiet, verbose);
    /* the pack-style set: queries as src/loop/loop.c pack_for and memory.c build them */
    char ppath[512];
    snprintf(ppath, sizeof ppath, "%s/queries_pack.jsonl", data);
    size_t plen;
    char *ptext = NULL;
    if (!kf__read_file(ppath, 64u << 20, &ptext, &plen)) {
        json_t *ps = json_array();
        for (char *save = NULL, *line = strtok_r(ptext, "\n", &save); line;
             line = strtok_r(NULL, "\n", &save))
            json_array_append_new(ps, json_loads(line, 0, NULL));
        size_t np = json_array_size(ps);
        query *P = calloc(np, sizeof *P);
        for (size_t i = 0; i < np; i++) make_query(&P[i], json_array_get(ps, i));
        if (!quiet)
            printf("## Pack-style queries (%s): %zu queries as a context pack asks - text '<task> <category>"
                   " <latest failure's message>', scope backend, arch, [op/<task name>] + the task's "
                   "\"ops\", visible shapes\n\n",
                   ppath, np);
        quality(ctx, db, P, np, "pack-", quiet, verbose);
        free(P);
        json_decref(ps);
        free(ptext);
    }
    if (quiet) return 0;
    printf("precision@5 counts relevant lessons in the top 5 over 5 (with 1-3 expected lessons per query,\n"
           "1-4 in the pack-style set, it cannot reach 1); recall@10: relevant lessons in the top 10 over\n"
           "the expected ones.\n\n");
    kf_lessons_close(db);

    /* latency over `total` lessons */
    int nsyn = total - (int)json_array_size(base);
    char *syn = synthetic(base, nsyn > 0 ? nsyn : 0, 12345);
    snprintf(path, sizeof path, "%s/big.db", dir);
    double t0 = ms();
    if (kf_lessons_open(ctx, path, NULL, &db) ||
        kf_lessons_import(db, slurp(lpath, &llen), llen, lpath, NULL, NULL) ||
        (syn && kf_lessons_import(db, syn, strlen(syn), "synthetic", NULL, NULL)))
        die(ctx, "loading the synthetic lessons");
    double load = ms() - t0;
    kf_lessons_close(db);
    t0 = ms();
    if (kf_lessons_open(ctx, path, NULL, &db)) die(ctx, "open");
    kf_lesson_hit h[5];
    int n;
    Q[0].q.rank = KF_LESSON_RANK_HYBRID;
    if (kf_lessons_retrieve(db, &Q[0].q, 5, 0.4, h, &n)) die(ctx, "retrieve");
    double cold = ms() - t0;
    size_t nt = (size_t)reps * nq;
    double *lat = malloc(sizeof *lat * nt);
    size_t m = 0;
    long long tokens = 0;
    for (int r = 0; r < reps; r++)
        for (size_t i = 0; i < nq; i++) {
            Q[i].q.rank = KF_LESSON_RANK_HYBRID;
            double a = ms();
            char *txt = NULL;
            int64_t tk = 0;
            if (kf_lessons_retrieve(db, &Q[i].q, 5, 0.4, h, &n) ||
                kf_lessons_render(db, h, n, 800, &txt, &tk, NULL))
                die(ctx, "retrieve");
            lat[m++] = ms() - a;
            tokens += tk;
            free(txt);
        }
    qsort(lat, m, sizeof *lat, cmp_d);
    printf("## Lessons retrieval latency per pack: %d lessons, %zu packs (%d x %zu queries)\n\n", total, m,
           reps, nq);
    printf("| measure | ms |\n|---|---|\n");
    printf("| median | %.2f |\n| p10 | %.2f |\n| p90 | %.2f |\n| p99 | %.2f |\n| max | %.2f |\n", lat[m / 2],
           lat[m / 10], lat[m * 9 / 10], lat[m * 99 / 100], lat[m - 1]);
    printf("| first pack after open (loads the cache) | %.2f |\n", cold);
    for (int mode = KF_LESSON_RANK_KEYWORD; mode <= KF_LESSON_RANK_VECTOR; mode++) {
        size_t k = 0;
        for (int r = 0; r < reps / 4 + 1; r++)
            for (size_t i = 0; i < nq && k < nt; i++) {
                Q[i].q.rank = mode;
                double a = ms();
                if (kf_lessons_retrieve(db, &Q[i].q, 5, 0.4, h, &n)) die(ctx, "retrieve");
                lat[k++] = ms() - a;
            }
        qsort(lat, k, sizeof *lat, cmp_d);
        printf("| median, retrieval alone, %s only | %.2f |\n",
               mode == KF_LESSON_RANK_KEYWORD ? "keyword" : "vector", lat[k / 2]);
    }
    printf("| import of all %d lessons (one transaction, embedding each) | %.0f |\n", total, load);
    printf("\nEach pack: kf_lessons_retrieve (hybrid, k = 5, min_trust 0.4) + kf_lessons_render (800 tokens;"
           " mean %.0f tokens rendered).\n",
           (double)tokens / (double)m);
    kf_lessons_close(db);
    kf_ctx_free(ctx);
    if (keep) {
        fprintf(stderr, "lessons_bench: the databases are in %s\n", dir);
        return 0;
    }
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd)) return 1;
    return 0;
}
