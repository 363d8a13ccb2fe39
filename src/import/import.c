/*
 * import.c - `kforge import kernelbench` (docs/torch.md): a problem in the KernelBench
 * format becomes a C task whose reference is PyTorch. The reading is Python's
 * (src/import/kernelbench.py, embedded, run by the python3 of a PyTorch reference,
 * kf_torch_python): it runs the problem, which is the user's own code, under a deadline,
 * with Landlock letting it write the output directory and TMPDIR alone, and writes
 * task.json, reference.py and problem.py there. This side then loads the task and
 * validates it as `kforge validate` does, so what it reports as validated is a task
 * kforge can check candidates against. It judges nothing itself and writes nothing else.
 */
#define _GNU_SOURCE
#include "../check/check.h"
#include "kf_python.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define IMPORT_TIMEOUT_S 300
#define IMPORT_MARK "KFORGE-IMPORT "

extern char **environ;

/* The importer's verdict line in its output: a JSON object, or NULL. */
static json_t *import_line(const char *log) {
    const char *p = log, *last = NULL;
    while ((p = strstr(p, IMPORT_MARK))) last = p, p += strlen(IMPORT_MARK);
    if (!last) return NULL;
    last += strlen(IMPORT_MARK);
    const char *end = strchr(last, '\n');
    return json_loadb(last, end ? (size_t)(end - last) : strlen(last), 0, NULL);
}

kf_status kf_import_kernelbench(kf_ctx *ctx, const char *problem, const char *outdir, double scale_lo,
                                double scale_hi, const kf_opts *opts, char **json_out) {
    *json_out = NULL;
    if (!(scale_lo > 0 && scale_lo <= 1 && scale_hi >= 1 && scale_hi <= 64))
        return kf__err(ctx, KF_EUSAGE, "--scale LO,HI: need 0 < LO <= 1 <= HI <= 64");
    struct stat sb;
    if (stat(problem, &sb) || !S_ISREG(sb.st_mode))
        return kf__err(ctx, KF_EUSAGE, "%s: %s", problem, errno ? strerror(errno) : "not a file");
    char py[PATH_MAX], lo[32], hi[32], dir[PATH_MAX], prob[PATH_MAX];
    kf_status st = kf_torch_python(ctx, py, sizeof py);
    if (st) return st;
    if (kf__mkdirs(outdir) || !realpath(outdir, dir) || !realpath(problem, prob))
        return kf__err(ctx, kf__io_status(errno), "%s: %s", outdir, strerror(errno));
    snprintf(lo, sizeof lo, "%.17g", scale_lo);
    snprintf(hi, sizeof hi, "%.17g", scale_hi);
    char *argv[] = {py, "-c", (char *)kf__py_kernelbench, prob, dir, lo, hi, NULL};
    const char *tmp = getenv("TMPDIR");
    const char *ro[] = {"/"}, *rw[] = {dir, tmp && *tmp ? tmp : "/tmp", "/dev"};
    kf_limits lim = {IMPORT_TIMEOUT_S, 0, 1ull << 32, 4096};
    kf_buf log;
    kf_buf_init(&log, 1u << 20);
    int code = 0;
    st = kf_sandbox_exec(ctx, argv, dir, environ, &lim, ro, 1, rw, 3, IMPORT_TIMEOUT_S, &log, &code);
    json_t *r = st || log.oom ? NULL : import_line(log.p ? log.p : "");
    if (!st && !r) {
        const char *text = log.p ? log.p : "";
        size_t n = strlen(text);
        st = kf__err(ctx, KF_ETASK, "%s: the importer (%s) %s%s%s", problem, py,
                     code < 0 ? "ran past its deadline" : "gave no answer", n ? ": " : "",
                     n > 1500 ? text + n - 1500 : text);
    }
    kf_buf_free(&log);
    if (st) return st;
    json_object_set_new(r, "problem", json_string(problem));
    const char *status = json_string_value(json_object_get(r, "status"));
    if (!status || strcmp(status, "imported")) rmdir(dir); /* refused: a directory made for it goes */
    if (status && !strcmp(status, "imported")) {
        kf_task *t = NULL;
        kf_result *res = NULL;
        kf_status vs = kf_task_load(ctx, dir, &t);
        if (!vs) vs = kf_validate(ctx, t, opts, &res);
        if (vs == KF_ENOMEM) {
            kf_task_free(t);
            json_decref(r);
            return vs;
        }
        if (!vs && kf_result_verdict(res) == KF_VERDICT_ACCEPTED) {
            json_object_set_new(r, "status", json_string("validated"));
        } else {
            char why[2048] = "";
            if (vs) snprintf(why, sizeof why, "%s", kf_errmsg(ctx));
            else {
                char *js = kf_result_json(res);
                json_t *j = js ? json_loads(js, 0, NULL) : NULL;
                json_t *rs = json_array_get(json_object_get(j, "reasons"), 0);
                snprintf(why, sizeof why, "%s: %s", json_string_value(json_object_get(rs, "code")),
                         json_string_value(json_object_get(rs, "message")));
                json_decref(j);
                free(js);
            }
            json_object_set_new(r, "status", json_string("invalid"));
            json_object_set_new(r, "reason", json_string(why));
        }
        kf_result_free(res);
        kf_task_free(t);
    }
    *json_out = kf__json_dumps(r, JSON_COMPACT);
    json_decref(r);
    return *json_out ? KF_OK : kf__err(ctx, KF_ENOMEM, "out of memory");
}
