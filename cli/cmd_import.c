/*
 * cmd_import.c - `kforge import kernelbench PROBLEM.py -o TASKDIR` and `kforge import
 * kernelbench DIR [-o OUTDIR]` (docs/torch.md, docs/cli.md): KernelBench-format problems
 * as C tasks with a PyTorch reference, each validated. One problem: exit 0 validated, 1
 * imported but refused by validate, 2 refused by the importer or an error. A folder:
 * every *.py in it (not _*.py) into OUTDIR/<name> (default kernelbench-tasks), a table
 * of what was imported, validated and refused with the reason; exit 0 when every
 * problem validated, 1 otherwise, 2 on an error that stops the import.
 */
#include "cli.h"

#include <dirent.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* One problem into out; its document appended to all. 0 validated, 1 invalid, 2 refused,
 * -1 an error (reported). */
static int import_one(kf_ctx *ctx, const char *problem, const char *out, double lo, double hi,
                      const kf_opts *o, json_t *all, int json) {
    char *doc = NULL;
    kf_status st = kf_import_kernelbench(ctx, problem, out, lo, hi, o, &doc);
    if (st) {
        kf_cli_fail(json, "%s", kf_errmsg(ctx));
        return -1;
    }
    json_t *j = json_loads(doc, 0, NULL);
    free(doc);
    if (!j) return -1;
    const char *s = json_string_value(json_object_get(j, "status"));
    int rc = s && !strcmp(s, "validated") ? 0 : s && !strcmp(s, "invalid") ? 1 : 2;
    json_array_append_new(all, j);
    return rc;
}

static void print_row(json_t *j) {
    const char *p = json_string_value(json_object_get(j, "problem"));
    const char *base = p ? strrchr(p, '/') : NULL;
    const char *s = json_string_value(json_object_get(j, "status"));
    const char *why = json_string_value(json_object_get(j, "reason"));
    const char *dir = json_string_value(json_object_get(j, "dir"));
    printf("%-32s %-10s %s\n", base ? base + 1 : p, s ? s : "?",
           s && !strcmp(s, "validated") ? (dir ? dir : "")
           : why                        ? why
                                        : "");
    size_t i;
    json_t *n;
    json_array_foreach(json_object_get(j, "notes"), i, n)
        printf("%-32s %-10s note: %s\n", "", "", json_string_value(n));
}

int kf_cli_import(int argc, char **argv) {
    int json = 0;
    const char *src = NULL, *out = NULL;
    double lo = 0.25, hi = 1.0;
    kf_opts o;
    kf_opts_init(&o);
    if (argc < 2 || strcmp(argv[1], "kernelbench"))
        return kf_cli_fail(0, "usage: kforge import kernelbench PROBLEM.py -o TASKDIR | DIR [-o OUTDIR] "
                              "[--scale LO,HI] [--json] (docs/torch.md)");
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        int more = i + 1 < argc;
        if (!strcmp(a, "--json")) json = 1;
        else if ((!strcmp(a, "-o") || !strcmp(a, "--out")) && more) out = argv[++i];
        else if (!strcmp(a, "--scale") && more) {
            char *end;
            const char *v = argv[++i];
            lo = strtod(v, &end);
            if (*end != ',' || (hi = strtod(end + 1, &end), *end) ||
                !(lo > 0 && lo <= 1 && hi >= 1 && hi <= 64))
                return kf_cli_fail(json, "--scale %s: expected LO,HI with 0 < LO <= 1 <= HI <= 64", v);
        } else if (a[0] == '-') return kf_cli_fail(json, "kforge import: unknown option %s", a);
        else if (!src) src = a;
        else return kf_cli_fail(json, "kforge import: unexpected argument %s", a);
    }
    if (!src)
        return kf_cli_fail(json, "usage: kforge import kernelbench PROBLEM.py -o TASKDIR | DIR [-o OUTDIR]");
    struct stat sb;
    if (stat(src, &sb)) return kf_cli_fail(json, "%s: no such file or directory", src);
    kf_ctx *ctx = kf_ctx_new();
    json_t *all = json_array();
    int rc = 0;
    if (!S_ISDIR(sb.st_mode)) {
        if (!out) {
            kf_ctx_free(ctx);
            json_decref(all);
            return kf_cli_fail(json, "kforge import kernelbench %s: -o TASKDIR is needed", src);
        }
        rc = import_one(ctx, src, out, lo, hi, &o, all, json);
    } else {
        if (!out) out = "kernelbench-tasks";
        DIR *d = opendir(src);
        char **names = NULL;
        size_t n = 0;
        struct dirent *e;
        while (d && (e = readdir(d))) {
            size_t k = strlen(e->d_name);
            if (k > 3 && !strcmp(e->d_name + k - 3, ".py") && e->d_name[0] != '_' && e->d_name[0] != '.') {
                char **nn = realloc(names, (n + 1) * sizeof *names);
                if (!nn) break;
                names = nn;
                names[n++] = strdup(e->d_name);
            }
        }
        if (d) closedir(d);
        qsort(names, n, sizeof *names, by_name);
        if (!json) printf("%-32s %-10s %s\n", "problem", "status", "task or reason");
        for (size_t i = 0; i < n; i++) {
            char problem[PATH_MAX], dir[PATH_MAX];
            snprintf(problem, sizeof problem, "%s/%s", src, names[i]);
            snprintf(dir, sizeof dir, "%s/%.*s", out, (int)(strlen(names[i]) - 3), names[i]);
            int r = rc < 0 ? -1 : import_one(ctx, problem, dir, lo, hi, &o, all, json);
            if (r < 0) rc = -1;
            else if (r && rc >= 0) rc = 1;
            if (r >= 0 && !json) print_row(json_array_get(all, json_array_size(all) - 1));
            fflush(stdout);
        }
        for (size_t i = 0; i < n; i++) free(names[i]);
        free(names);
        if (!n && !json) printf("(no *.py problem in %s)\n", src);
    }
    if (rc >= 0 && json) {
        char *s = json_dumps(S_ISDIR(sb.st_mode) ? all : json_array_get(all, 0), JSON_COMPACT);
        if (s) printf("%s\n", s);
        free(s);
    } else if (rc >= 0 && !S_ISDIR(sb.st_mode)) {
        print_row(json_array_get(all, 0));
    }
    json_decref(all);
    kf_ctx_free(ctx);
    if (rc < 0) return KF_EXIT_USAGE;
    return rc;
}
