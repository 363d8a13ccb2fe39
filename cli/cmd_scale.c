/*
 * cmd_scale.c - `kforge worker` and `kforge drain` (docs/scale.md): a worker that joins a
 * coordinator and evaluates what it is sent, and the request that a coordinator finish
 * what is in flight and stop.
 */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char worker_usage[] =
    "usage: kforge worker --connect unix:PATH|tcp:HOST:PORT --secret-file FILE\n"
    "         [--device cuda:K | --cpus LIST] [--name NAME] [--wait S]   (docs/scale.md)\n";

int kf_cli_worker(int argc, char **argv) {
    kf_scale_worker_opts o;
    memset(&o, 0, sizeof o);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int more = i + 1 < argc;
        if (!strcmp(a, "--connect") && more) o.connect = argv[++i];
        else if (!strcmp(a, "--secret-file") && more) o.secret_file = argv[++i];
        else if (!strcmp(a, "--device") && more) o.device = argv[++i];
        else if (!strcmp(a, "--cpus") && more) o.cpus = argv[++i];
        else if (!strcmp(a, "--name") && more) o.name = argv[++i];
        else if (!strcmp(a, "--wait") && more) {
            if (kf_cli_number(a, argv[++i], 0.1, 1e7, &o.wait_s)) return KF_EXIT_USAGE;
        } else {
            fputs(worker_usage, stderr);
            return KF_EXIT_USAGE;
        }
    }
    kf_ctx *ctx = kf_ctx_new();
    if (!ctx) return KF_EXIT_USAGE;
    kf_status st = kf_worker_serve(ctx, &o);
    if (st) fprintf(stderr, "kforge: error: %s\n", kf_errmsg(ctx));
    kf_ctx_free(ctx);
    return st ? kf_cli_run_exit(st) : 0;
}

int kf_cli_drain(int argc, char **argv) {
    const char *target = NULL, *secret = NULL;
    int json = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--secret-file") && i + 1 < argc) secret = argv[++i];
        else if (!strcmp(argv[i], "--json")) json = 1;
        else if (!target && argv[i][0] != '-') target = argv[i];
        else return kf_cli_fail(json, "usage: kforge drain RUN|ADDRESS [--secret-file FILE] [--json]");
    }
    if (!target) return kf_cli_fail(json, "usage: kforge drain RUN|ADDRESS [--secret-file FILE] [--json]");
    kf_ctx *ctx = kf_ctx_new();
    if (!ctx) return KF_EXIT_USAGE;
    char *out = NULL;
    kf_status st = kf_scale_drain(ctx, target, secret, &out);
    int rc = 0;
    if (st) rc = kf_cli_fail(json, "%s", kf_errmsg(ctx));
    else if (json) printf("%s\n", out);
    else fprintf(stderr, "kforge drain: %s is finishing what is in flight, then stops\n", target);
    free(out);
    kf_ctx_free(ctx);
    return rc;
}
