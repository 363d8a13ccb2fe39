/*
 * cmd_lessons.c - `kforge lessons add|search|list|show|distill|export|import`
 * (docs/lessons.md). Every subcommand works on one lessons database: --lessons PATH, or
 * the shared one under the user's data directory. Exit 0 done, 2 bad usage, bad input
 * (named by line and field) or a database/endpoint error.
 */
#include "cli.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAXV 64
#define FILE_MAX (256u << 20)

typedef struct {
    int json, all, k, tokens_set;
    long long tokens;
    double min_trust;
    const char *path, *embed_url, *embed_model, *out, *rank;
    const char *situation, *action, *boundaries, *backend, *arch, *shape, *source, *id;
    const char *ops[MAXV], *tags[MAXV], *shapes[MAXV], *args[MAXV];
    int nops, ntags, nshapes, nargs;
} lopts;

static const char usage_text[] =
    "usage: kforge lessons <command> [--lessons PATH] [--embed-url URL --embed-model M] [--json]\n"
    "  add [FILE|-] | add --situation TEXT --action TEXT [--boundaries TEXT] [--backend B]\n"
    "      [--arch A] [--op TAG]... [--shape EXPR] [--tag TAG]... [--source agent|person] [--id ID]\n"
    "  search [TEXT...] [--backend B] [--arch A] [--op TAG]... [--tag TAG]... [--shape K=V,K=V]...\n"
    "      [--k N] [--min-trust X] [--rank hybrid|keyword|vector] [--tokens N]\n"
    "  list [--tag TAG]... [--all]      show ID      export [-o FILE]      import FILE|-\n"
    "  distill RUN                      (docs/lessons.md)";

static int push(const char **v, int *n, const char *s, const char *what) {
    if (*n == MAXV) {
        fprintf(stderr, "kforge: error: at most %d %s\n", MAXV, what);
        return -1;
    }
    v[(*n)++] = s;
    return 0;
}

/* 1 when name is a backend of this build (the library's registry says). */
static int known_backend(const char *name) {
    for (int i = 0; kf_backend_name_at(i); i++)
        if (!strcmp(kf_backend_name_at(i), name)) return 1;
    return 0;
}

/* The backends' names as "a, b or c" into out. */
static void backend_names(char *out, size_t n) {
    size_t at = 0;
    out[0] = 0;
    for (int i = 0; kf_backend_name_at(i) && at < n; i++) {
        int w = snprintf(out + at, n - at, "%s%s",
                         !i                          ? ""
                         : kf_backend_name_at(i + 1) ? ", "
                                                     : " or ",
                         kf_backend_name_at(i));
        if (w < 0) break;
        at += (size_t)w;
    }
}

static int parse(int argc, char **argv, lopts *o) {
    memset(o, 0, sizeof *o);
    o->k = 5;
    o->min_trust = 0.4;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        int more = i + 1 < argc;
        double v;
        if (!strcmp(a, "--json")) o->json = 1;
        else if (!strcmp(a, "--all")) o->all = 1;
        else if (!strcmp(a, "--lessons") && more) o->path = argv[++i];
        else if (!strcmp(a, "--embed-url") && more) o->embed_url = argv[++i];
        else if (!strcmp(a, "--embed-model") && more) o->embed_model = argv[++i];
        else if ((!strcmp(a, "-o") || !strcmp(a, "--out")) && more) o->out = argv[++i];
        else if (!strcmp(a, "--rank") && more) o->rank = argv[++i];
        else if (!strcmp(a, "--situation") && more) o->situation = argv[++i];
        else if (!strcmp(a, "--action") && more) o->action = argv[++i];
        else if (!strcmp(a, "--boundaries") && more) o->boundaries = argv[++i];
        else if (!strcmp(a, "--backend") && more) {
            o->backend = argv[++i]; /* a person's typo is refused; imports keep other backends' lessons */
            if (!known_backend(o->backend)) {
                char names[256];
                backend_names(names, sizeof names);
                fprintf(stderr, "kforge: error: --backend %s: %s (kforge's backends)\n", o->backend, names);
                return -1;
            }
        } else if (!strcmp(a, "--arch") && more) o->arch = argv[++i];
        else if (!strcmp(a, "--source") && more) {
            o->source = argv[++i];
            if (strcmp(o->source, "agent") && strcmp(o->source, "person")) {
                fprintf(stderr,
                        "kforge: error: --source %s: agent or person (distilled lessons come from "
                        "kforge lessons distill)\n",
                        o->source);
                return -1;
            }
        } else if (!strcmp(a, "--id") && more) o->id = argv[++i];
        else if (!strcmp(a, "--op") && more) {
            if (push(o->ops, &o->nops, argv[++i], "--op")) return -1;
        } else if (!strcmp(a, "--tag") && more) {
            if (push(o->tags, &o->ntags, argv[++i], "--tag")) return -1;
        } else if (!strcmp(a, "--shape") && more) {
            /* add: one predicate; search: one K=V,K=V shape per option */
            if (push(o->shapes, &o->nshapes, argv[++i], "--shape")) return -1;
        } else if (!strcmp(a, "--k") && more) {
            if (kf_cli_number(a, argv[++i], 1, 1000, &v)) return -1;
            o->k = (int)v;
        } else if (!strcmp(a, "--min-trust") && more) {
            if (kf_cli_number(a, argv[++i], 0, 1, &o->min_trust)) return -1;
        } else if (!strcmp(a, "--tokens") && more) {
            if (kf_cli_number(a, argv[++i], 1, 1e9, &v)) return -1;
            o->tokens = (long long)v;
            o->tokens_set = 1;
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "kforge: error: kforge lessons %s: unknown option %s (or a missing value)\n",
                    argv[1], a);
            return -1;
        } else if (push(o->args, &o->nargs, a, "arguments")) {
            return -1;
        }
    }
    return 0;
}

static int read_input(const char *path, char **text, size_t *len) {
    FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
    if (!f) {
        fprintf(stderr, "kforge: error: %s: %s\n", path, strerror(errno));
        return -1;
    }
    size_t cap = 1 << 16, n = 0;
    char *b = malloc(cap);
    for (;;) {
        if (!b) break;
        if (n + 1 >= cap) {
            if (cap >= FILE_MAX) {
                fprintf(stderr, "kforge: error: %s: larger than %u bytes\n", path, FILE_MAX);
                free(b);
                b = NULL;
                break;
            }
            char *nb = realloc(b, cap * 2);
            if (!nb) {
                free(b);
                b = NULL;
                break;
            }
            b = nb;
            cap *= 2;
        }
        size_t r = fread(b + n, 1, cap - 1 - n, f);
        n += r;
        if (!r) break;
    }
    int err = ferror(f);
    if (f != stdin) fclose(f);
    if (!b || err) {
        if (err) fprintf(stderr, "kforge: error: %s: read error\n", path);
        free(b);
        return -1;
    }
    b[n] = 0;
    *text = b;
    *len = n;
    return 0;
}

static void print_lesson_text(json_t *l, const kf_lesson_hit *h) {
    json_t *sit = json_object_get(l, "situation"), *tr = json_object_get(l, "trust");
    printf("%s  [%s, %s, trust %.2f: %lld+ %lld-]", json_string_value(json_object_get(l, "id")),
           json_string_value(json_object_get(l, "source")), json_string_value(json_object_get(l, "status")),
           json_number_value(json_object_get(tr, "value")),
           (long long)json_integer_value(json_object_get(tr, "confirmations")),
           (long long)json_integer_value(json_object_get(tr, "refutations")));
    if (h && !h->keyword_rank && !h->vector_rank) printf("  (no search words: in scope, ranked by trust)");
    else if (h)
        printf("  score %.4f (keyword #%d, vector #%d; 0: not in that list)", h->score, h->keyword_rank,
               h->vector_rank);
    printf("\n  when: %s\n", json_string_value(json_object_get(sit, "text")));
    const char *scope[] = {"backend", "arch", "shape"};
    for (int i = 0; i < 3; i++) {
        const char *s = json_string_value(json_object_get(sit, scope[i]));
        if (s) printf("  %s: %s\n", scope[i], s);
    }
    char *ops = json_object_get(sit, "ops") ? json_dumps(json_object_get(sit, "ops"), JSON_COMPACT) : NULL;
    if (ops) printf("  ops: %s\n", ops);
    free(ops);
    printf("  do: %s\n", json_string_value(json_object_get(l, "action")));
    const char *b = json_string_value(json_object_get(l, "boundaries"));
    if (b) printf("  not when: %s\n", b);
    char *tags = json_dumps(json_object_get(l, "tags"), JSON_COMPACT);
    printf("  tags: %s\n", tags ? tags : "[]");
    free(tags);
}

/* The lesson `add` stores, as JSON text into *text (the caller's): from FILE or the
 * options. An exit code. */
static int add_text(lopts *o, char **text_out) {
    char *text = NULL;
    size_t len;
    *text_out = NULL;
    if (o->nargs > 1) return kf_cli_fail(o->json, "kforge lessons add: one FILE at most");
    if (o->nargs == 1) {
        if (o->situation || o->action)
            return kf_cli_fail(o->json, "kforge lessons add: a FILE or --situation/--action, not both");
        if (read_input(o->args[0], &text, &len)) return KF_EXIT_USAGE;
    } else {
        if (o->nshapes > 1) return kf_cli_fail(o->json, "kforge lessons add: one --shape predicate");
        json_t *sit = json_object();
        if (o->situation) json_object_set_new(sit, "text", json_string(o->situation));
        if (o->backend) json_object_set_new(sit, "backend", json_string(o->backend));
        if (o->arch) json_object_set_new(sit, "arch", json_string(o->arch));
        if (o->nshapes) json_object_set_new(sit, "shape", json_string(o->shapes[0]));
        if (o->nops) {
            json_t *a = json_array();
            for (int i = 0; i < o->nops; i++) json_array_append_new(a, json_string(o->ops[i]));
            json_object_set_new(sit, "ops", a);
        }
        json_t *l = json_object();
        if (o->situation || json_object_size(sit)) json_object_set(l, "situation", sit);
        json_decref(sit);
        if (o->action) json_object_set_new(l, "action", json_string(o->action));
        if (o->boundaries) json_object_set_new(l, "boundaries", json_string(o->boundaries));
        json_object_set_new(l, "source", json_string(o->source ? o->source : "person"));
        if (o->id) json_object_set_new(l, "id", json_string(o->id));
        json_t *t = json_array();
        for (int i = 0; i < o->ntags; i++) json_array_append_new(t, json_string(o->tags[i]));
        json_object_set_new(l, "tags", t);
        text = json_dumps(l, JSON_COMPACT);
        json_decref(l);
    }
    *text_out = text;
    return text ? KF_EXIT_OK : kf_cli_fail(o->json, "out of memory");
}

static int cmd_add(kf_lessons *db, kf_ctx *ctx, lopts *o, const char *text) {
    char id[64];
    int replaced = 0;
    kf_status st = kf_lessons_add_json_ex(db, text, id, &replaced);
    if (st) return kf_cli_fail(o->json, "%s", kf_errmsg(ctx));
    if (o->json) printf("{\"id\": \"%s\", \"replaced\": %s}\n", id, replaced ? "true" : "false");
    else printf("%s %s\n", replaced ? "replaced" : "added", id);
    return KF_EXIT_OK;
}

static int cmd_search(kf_lessons *db, kf_ctx *ctx, lopts *o) {
    char text[16384] = "";
    size_t tl = 0;
    for (int i = 0; i < o->nargs; i++)
        tl += (size_t)snprintf(text + tl, tl < sizeof text ? sizeof text - tl : 0, "%s%s", i ? " " : "",
                               o->args[i]);
    if (tl >= sizeof text)
        return kf_cli_fail(o->json, "kforge lessons search: the text is longer than %zu bytes",
                           sizeof text - 1);
    kf_lesson_query q = {0};
    q.backend = o->backend;
    q.arch = o->arch;
    q.ops = o->ops;
    q.nops = o->nops;
    q.tags = o->tags;
    q.ntags = o->ntags;
    q.text = text;
    if (!o->rank || !strcmp(o->rank, "hybrid")) q.rank = KF_LESSON_RANK_HYBRID;
    else if (!strcmp(o->rank, "keyword")) q.rank = KF_LESSON_RANK_KEYWORD;
    else if (!strcmp(o->rank, "vector")) q.rank = KF_LESSON_RANK_VECTOR;
    else return kf_cli_fail(o->json, "kforge lessons search: --rank %s: hybrid, keyword or vector", o->rank);
    /* --shape rows=1024,cols=512: the first names the sizes, the others give the same */
    char names_buf[MAXV][64];
    const char *names[MAXV];
    int64_t values[MAXV * MAXV];
    int nn = 0;
    for (int s = 0; s < o->nshapes; s++) {
        char buf[1024];
        snprintf(buf, sizeof buf, "%s", o->shapes[s]);
        int k = 0;
        for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save), k++) {
            char *eq = strchr(t, '=');
            char *end = NULL;
            long long v = eq ? strtoll(eq + 1, &end, 10) : 0;
            if (!eq || eq == t || !end || *end || end == eq + 1 || k >= MAXV)
                return kf_cli_fail(o->json, "kforge lessons search: --shape %s: expected NAME=INT,NAME=INT",
                                   o->shapes[s]);
            *eq = 0;
            if (s == 0) {
                snprintf(names_buf[k], sizeof names_buf[k], "%s", t);
                names[k] = names_buf[k];
                nn = k + 1;
            } else if (k >= nn || strcmp(names[k], t)) {
                return kf_cli_fail(
                    o->json,
                    "kforge lessons search: --shape %s: give the sizes of the first --shape, in its order",
                    o->shapes[s]);
            }
            values[s * nn + k] = v;
        }
        if (s && k != nn)
            return kf_cli_fail(
                o->json,
                "kforge lessons search: --shape %s: give the sizes of the first --shape, in its order",
                o->shapes[s]);
    }
    q.shape_names = names;
    q.nshape_names = nn;
    q.shapes = values;
    q.nshapes = o->nshapes;
    kf_lesson_hit *hits = calloc((size_t)o->k, sizeof *hits);
    int n = 0;
    if (!hits) return kf_cli_fail(o->json, "out of memory");
    kf_status st = kf_lessons_retrieve(db, &q, o->k, o->min_trust, hits, &n);
    if (st) {
        free(hits);
        return kf_cli_fail(o->json, "%s", kf_errmsg(ctx));
    }
    if (o->tokens_set) { /* the pack's lessons section, as an agent would see it */
        char *txt = NULL;
        int64_t tokens = 0;
        int used = 0;
        st = kf_lessons_render(db, hits, n, o->tokens, &txt, &tokens, &used);
        if (st) {
            free(hits);
            return kf_cli_fail(o->json, "%s", kf_errmsg(ctx));
        }
        if (used < n) /* what the budget left out is said, not silently dropped */
            fprintf(stderr, "kforge: %d of the %d lessons found fit in %lld tokens\n", used, n,
                    (long long)o->tokens);
        if (o->json) {
            json_t *j = json_pack("{s:s, s:I, s:i, s:i}", "text", txt, "tokens", (json_int_t)tokens,
                                  "lessons", used, "found", n);
            char *s = json_dumps(j, JSON_INDENT(1));
            printf("%s\n", s);
            free(s);
            json_decref(j);
        } else {
            fputs(txt, stdout);
        }
        free(txt);
        free(hits);
        return KF_EXIT_OK;
    }
    json_t *arr = json_array();
    for (int i = 0; i < n; i++) {
        char *lj = NULL;
        if (kf_lessons_get_json(db, hits[i].id, &lj)) continue;
        json_t *l = json_loads(lj, 0, NULL);
        free(lj);
        if (o->json) {
            json_object_set_new(l, "score", json_real(hits[i].score));
            json_object_set_new(l, "keyword_rank", json_integer(hits[i].keyword_rank));
            json_object_set_new(l, "vector_rank", json_integer(hits[i].vector_rank));
            json_array_append_new(arr, l);
        } else {
            printf("%d. ", i + 1);
            print_lesson_text(l, &hits[i]);
            json_decref(l);
        }
    }
    if (o->json) {
        char *s = json_dumps(arr, JSON_INDENT(1));
        printf("%s\n", s);
        free(s);
    } else if (!n) {
        printf("no lesson passes the filters (scope, tags, trust >= %.2f) and matches\n", o->min_trust);
    }
    json_decref(arr);
    free(hits);
    return KF_EXIT_OK;
}

static int cmd_list(kf_lessons *db, kf_ctx *ctx, lopts *o, const char *id) {
    char *j = NULL;
    kf_status st =
        id ? kf_lessons_get_json(db, id, &j) : kf_lessons_list_json(db, o->tags, o->ntags, o->all, &j);
    if (st) return kf_cli_fail(o->json, "%s", kf_errmsg(ctx));
    if (o->json) {
        printf("%s\n", j);
    } else {
        json_t *v = json_loads(j, 0, NULL);
        if (id) {
            print_lesson_text(v, NULL);
            char *ev = json_object_get(v, "evidence")
                           ? json_dumps(json_object_get(v, "evidence"), JSON_COMPACT)
                           : NULL;
            if (ev) printf("  evidence: %s\n", ev);
            free(ev);
        } else {
            size_t i;
            json_t *l;
            json_array_foreach(v, i, l) {
                json_t *tr = json_object_get(l, "trust");
                printf("%-16s %-9s trust %.2f  %s\n", json_string_value(json_object_get(l, "id")),
                       json_string_value(json_object_get(l, "source")),
                       json_number_value(json_object_get(tr, "value")),
                       json_string_value(json_object_get(l, "action")));
            }
            if (!json_array_size(v)) printf("no lessons\n");
        }
        json_decref(v);
    }
    free(j);
    return KF_EXIT_OK;
}

int kf_cli_lessons(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "%s\n", usage_text);
        return KF_EXIT_USAGE;
    }
    for (int i = 1; i < argc; i++) /* kforge lessons [CMD] --help */
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("%s\n", usage_text);
            return KF_EXIT_OK;
        }
    const char *cmd = argv[1];
    lopts o;
    if (parse(argc, argv, &o)) return KF_EXIT_USAGE;
    static const char *const cmds[] = {"add", "search", "list", "show", "distill", "export", "import", NULL};
    int known = 0;
    for (int i = 0; cmds[i]; i++) known |= !strcmp(cmd, cmds[i]);
    if (!known) return kf_cli_fail(o.json, "kforge lessons: unknown command '%s'\n%s", cmd, usage_text);
    if ((!strcmp(cmd, "show") || !strcmp(cmd, "distill") || !strcmp(cmd, "import")) && o.nargs != 1)
        return kf_cli_fail(o.json, "usage: kforge lessons %s %s", cmd,
                           !strcmp(cmd, "show")      ? "ID"
                           : !strcmp(cmd, "distill") ? "RUN"
                                                     : "FILE|-");
    if ((!strcmp(cmd, "list") || !strcmp(cmd, "export")) && o.nargs)
        return kf_cli_fail(o.json, "kforge lessons %s: unexpected argument %s", cmd, o.args[0]);
    char path[4096];
    if (o.path) snprintf(path, sizeof path, "%s", o.path);
    else kf_lessons_default_path(path, sizeof path);
    kf_lessons_opts lo;
    kf_lessons_opts_init(&lo);
    lo.embed_url = o.embed_url;
    lo.embed_model = o.embed_model;
    /* Reading commands never create a database (a mistyped --lessons would otherwise
     * read as an empty one). The writing ones check their input before they open (and
     * so create) one: a refused lesson, a bad import line or a path that is no run
     * leaves nothing behind. */
    int writes = !strcmp(cmd, "add") || !strcmp(cmd, "import") || !strcmp(cmd, "distill");
    if (!writes && access(path, F_OK))
        return kf_cli_fail(
            o.json, "%s: no lessons database there (kforge lessons add, import or distill makes one)", path);
    kf_ctx *ctx = kf_ctx_new();
    kf_lessons *db = NULL;
    int rc = KF_EXIT_OK;
    char *input = NULL; /* add: the lesson; import: the file's text */
    size_t input_len = 0;
    if (!strcmp(cmd, "add")) {
        if ((rc = add_text(&o, &input))) goto out;
        if (kf_lessons_check_json(ctx, input)) {
            rc = kf_cli_fail(o.json, "%s", kf_errmsg(ctx));
            goto out;
        }
    } else if (!strcmp(cmd, "import")) {
        if (read_input(o.args[0], &input, &input_len)) {
            rc = KF_EXIT_USAGE;
            goto out;
        }
        if (kf_lessons_check_jsonl(ctx, input, input_len, o.args[0])) {
            rc = kf_cli_fail(o.json, "%s (nothing imported)", kf_errmsg(ctx));
            goto out;
        }
    } else if (!strcmp(cmd, "distill")) {
        char rdb[4200];
        snprintf(rdb, sizeof rdb, "%s/run.db", o.args[0]);
        if (access(rdb, F_OK)) {
            rc = kf_cli_fail(o.json, "%s: not a kforge run (no run.db there: kforge run --run DIR makes one)",
                             o.args[0]);
            goto out;
        }
    }
    if (kf_lessons_open(ctx, path, &lo, &db)) {
        rc = kf_cli_fail(o.json, "%s", kf_errmsg(ctx));
        goto out;
    }
    if (!strcmp(cmd, "add")) rc = cmd_add(db, ctx, &o, input);
    else if (!strcmp(cmd, "search")) rc = cmd_search(db, ctx, &o);
    else if (!strcmp(cmd, "list")) rc = cmd_list(db, ctx, &o, NULL);
    else if (!strcmp(cmd, "show")) rc = cmd_list(db, ctx, &o, o.args[0]);
    else if (!strcmp(cmd, "export")) {
        char *t = NULL;
        if (kf_lessons_export(db, &t)) {
            rc = kf_cli_fail(o.json, "%s", kf_errmsg(ctx));
        } else {
            FILE *f = o.out && strcmp(o.out, "-") ? fopen(o.out, "w") : stdout;
            if (!f || fputs(t, f) < 0 || (f != stdout && fclose(f))) {
                rc = kf_cli_fail(o.json, "%s: %s", o.out ? o.out : "stdout", strerror(errno));
            } else if (f != stdout) {
                fprintf(stderr, "kforge: exported to %s\n", o.out);
            }
        }
        free(t);
    } else if (!strcmp(cmd, "import")) {
        int added = 0, updated = 0;
        if (kf_lessons_import(db, input, input_len, o.args[0], &added, &updated))
            rc = kf_cli_fail(o.json, "%s (nothing imported)", kf_errmsg(ctx));
        else if (o.json) printf("{\"added\": %d, \"updated\": %d}\n", added, updated);
        else printf("imported %d lessons (%d new, %d replaced)\n", added + updated, added, updated);
    } else { /* distill */
        char *sum = NULL;
        if (kf_lessons_distill(db, o.args[0], &sum)) {
            rc = kf_cli_fail(o.json, "%s", kf_errmsg(ctx));
        } else if (o.json) {
            printf("%s\n", sum);
        } else {
            json_t *j = json_loads(sum, 0, NULL);
            printf("distilled %s (%lld nodes) into %s:", o.args[0],
                   (long long)json_integer_value(json_object_get(j, "nodes")), path);
            static const char *const keys[] = {"added", "confirmed", "refuted", "retired", "unchanged"};
            for (int i = 0; i < 5; i++)
                printf(" %zu %s%s", json_array_size(json_object_get(j, keys[i])), keys[i],
                       i < 4 ? "," : "\n");
            json_decref(j);
        }
        free(sum);
    }
out:
    free(input);
    kf_lessons_close(db);
    kf_ctx_free(ctx);
    return rc;
}
