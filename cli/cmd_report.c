/*
 * cmd_report.c - `kforge report RUN [-o FILE] [--format html|md]` (docs/report.md): the
 * run's lineage as one self-contained HTML page (RUN/report.html unless -o says
 * otherwise) or as Markdown (stdout unless -o says otherwise), and the page `kforge run`
 * and `kforge system run` leave in their run directories when they end. A system run's
 * directory gets its pipeline report: the same renderer, chosen by the library.
 */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* text into path, whole or not at all: written beside it, then renamed over it. */
static int write_whole(const char *path, const char *text, size_t len) {
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp-%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) return -1;
    int bad = fwrite(text, 1, len, f) != len;
    bad |= fclose(f) != 0;
    if (bad || rename(tmp, path)) {
        unlink(tmp);
        return -1;
    }
    return 0;
}

int kf_cli_report_write(const char *run_dir, const char *format, const char *path, const char *from_run) {
    kf_ctx *ctx = kf_ctx_new();
    char *out = NULL, def[4200];
    size_t len = 0;
    int md = format && !strcmp(format, "md");
    if (!path) {
        snprintf(def, sizeof def, "%s/report.%s", run_dir, md ? "md" : "html");
        path = md ? "-" : def;
    }
    kf_status st = kf_report_run(ctx, run_dir, format, &out, &len);
    int rc = KF_EXIT_OK;
    if (st && from_run) {
        fprintf(stderr, "kforge %s: no report written: %s\n", from_run, kf_errmsg(ctx));
    } else if (st) {
        rc = kf_cli_fail(0, "%s", kf_errmsg(ctx));
    } else if (!strcmp(path, "-")) {
        fwrite(out, 1, len, stdout);
    } else if (write_whole(path, out, len)) {
        if (from_run) fprintf(stderr, "kforge %s: no report written: cannot write %s\n", from_run, path);
        else rc = kf_cli_fail(0, "kforge report: cannot write %s", path);
    } else {
        fprintf(stderr, "kforge %s: the report: %s (%zu KiB)\n", from_run ? from_run : "report", path,
                (len + 1023) / 1024);
    }
    free(out);
    kf_ctx_free(ctx);
    return rc;
}

int kf_cli_report(int argc, char **argv) {
    const char *dir = NULL, *path = NULL, *format = "html";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if ((!strcmp(a, "-o") || !strcmp(a, "--output")) && i + 1 < argc) path = argv[++i];
        else if (!strcmp(a, "--format") && i + 1 < argc) format = argv[++i];
        else if (!strncmp(a, "--format=", 9)) format = a + 9;
        else if (a[0] == '-' && a[1]) return kf_cli_fail(0, "kforge report: unknown option %s", a);
        else if (!dir) dir = a;
        else return kf_cli_fail(0, "kforge report: unexpected argument %s", a);
    }
    if (!dir) return kf_cli_fail(0, "usage: kforge report RUN [-o FILE] [--format html|md]");
    if (strcmp(format, "html") && strcmp(format, "md"))
        return kf_cli_fail(0, "kforge report --format %s: expected html or md", format);
    return kf_cli_report_write(dir, format, path, NULL);
}
