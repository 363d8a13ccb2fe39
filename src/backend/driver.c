/*
 * driver.c - the compiler driver (driver.h): the build directory, the two passes at
 * once, first errors and the build cache, for the C backend and CUDA host mode.
 *
 * The passes run under kf_sandbox_exec (own session, rlimits, Landlock: the toolchain
 * and the system read-only, the build directory read-write). The prototype that the
 * signature pass force-includes has a random name, and the object pass is the
 * candidate alone: nothing of kforge's is reachable from it at build time (threat #31).
 */
#define _GNU_SOURCE
#include "driver.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

/* Write a new file: it must not exist (a build directory is fresh). */
static int write_new(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wbx");
    if (!f) return -1;
    size_t w = fwrite(data, 1, n, f);
    return (fclose(f) || w != n) ? -1 : 0;
}

int kf_driver_write(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    size_t w = fwrite(data, 1, n, f);
    return (fclose(f) || w != n) ? -1 : 0;
}

kf_status kf_driver_prepare(kf_ctx *ctx, const char *workdir, const char *name, const char *text, size_t len,
                            const char *header, const struct stat *times, kf_driver_dir *d) {
    memset(d, 0, sizeof *d);
    snprintf(d->dir, sizeof d->dir, "%s/build-XXXXXX", workdir);
    if (!mkdtemp(d->dir)) return kf__err(ctx, KF_EIO, "mkdtemp in %s: %s", workdir, strerror(errno));
    snprintf(d->src, sizeof d->src, "%s/%s", d->dir, name);
    /* the prototype under a random name, for the signature pass only: a candidate cannot
     * name it in __has_include, and the object pass never sees it */
    snprintf(d->hname, sizeof d->hname, "%016llx.h", (unsigned long long)kf__secret_u64());
    snprintf(d->hpath, sizeof d->hpath, "%s/%s", d->dir, d->hname);
    /* "x.c" -> "x.so", "x.cu" -> "x.so", as the documented commands name it */
    const char *dot = strrchr(name, '.');
    snprintf(d->soname, sizeof d->soname, "%.*s.so", (int)(dot ? (size_t)(dot - name) : strlen(name)), name);
    snprintf(d->so, sizeof d->so, "%s/%s", d->dir, d->soname);
    if (write_new(d->src, text, len) || write_new(d->hpath, header, strlen(header)))
        return kf__err(ctx, KF_EIO, "writing into %s: %s", d->dir, strerror(errno));
    /* the copy keeps the file's own modification time (__TIMESTAMP__): a file written
     * just before the compile was a tell; a stored text keeps the time it was written */
    if (times) {
        struct timespec tv[2] = {times->st_atim, times->st_mtim};
        utimensat(AT_FDCWD, d->src, tv, 0);
    }
    return KF_OK;
}

/* One pass, as a thread runs it. */
typedef struct {
    kf_ctx *ctx;
    char **argv;
    const char *cwd;
    char **env;
    const kf_limits *lim;
    const char *const *ro;
    int nro;
    const char *const *rw;
    int nrw;
    double timeout_s;
    kf_buf log;
    int code;
    kf_status st;
} pass;

static void *pass_main(void *arg) {
    pass *p = arg;
    p->st = kf_sandbox_exec(p->ctx, p->argv, p->cwd, p->env, p->lim, p->ro, p->nro, p->rw, p->nrw,
                            p->timeout_s, &p->log, &p->code);
    return NULL;
}

#define MAX_RO 32

kf_status kf_driver_run(kf_ctx *ctx, const kf_driver_dir *d, const kf_driver_job *j, kf_driver_out *o) {
    memset(o, 0, sizeof *o);
    if (j->nro < 0 || j->nro > MAX_RO - 8) return kf__err(ctx, KF_EINTERNAL, "kf_driver_run: too many paths");
    char tmpenv[PATH_MAX + 16], pathenv[PATH_MAX + 64];
    snprintf(tmpenv, sizeof tmpenv, "TMPDIR=%s", d->dir);
    snprintf(pathenv, sizeof pathenv, "PATH=%s/bin:/usr/local/bin:/usr/bin:/bin", j->prefix);
    char *env[] = {pathenv, "LANG=C", "LC_ALL=C", tmpenv, NULL};
    const char *ro[MAX_RO] = {
        "/usr", "/lib", "/lib64", "/lib32", "/bin", "/etc/ld.so.cache", "/etc/alternatives"};
    int nro = 7;
    for (int i = 0; i < j->nro; i++) ro[nro++] = j->ro[i];
    ro[nro++] = j->prefix;
    /* cc1 -fsyntax-only writes its (empty) assembly to /dev/null, nvcc's front end its
     * output */
    const char *rw[] = {d->dir, "/dev/null"};
    kf_buf_init(&o->log, j->log_cap);
    uint64_t t0 = kf__now_ns();
    kf_ctx *sctx = kf_ctx_new(); /* the thread's errors */
    pass sp = {.ctx = sctx ? sctx : ctx,
               .argv = j->sargv,
               .cwd = d->dir,
               .env = env,
               .lim = &j->lim,
               .ro = ro,
               .nro = nro,
               .rw = rw,
               .nrw = 2,
               .timeout_s = j->timeout_s,
               .code = -1};
    kf_buf_init(&sp.log, j->log_cap);
    pthread_t th;
    int threaded = sctx && !pthread_create(&th, NULL, pass_main, &sp);
    if (!threaded) pass_main(&sp);
    kf_status st =
        kf_sandbox_exec(ctx, j->argv, d->dir, env, &j->lim, ro, nro, rw, 2, j->timeout_s, &o->log, &o->code);
    if (threaded) pthread_join(th, NULL);
    unlink(d->hpath);
    if (!st && sp.st) st = sctx ? kf__err(ctx, sp.st, "%s", kf_errmsg(sctx)) : sp.st;
    kf_ctx_free(sctx);
    o->seconds = (double)(kf__now_ns() - t0) / 1e9;
    /* a signature (or syntax) error: the front end's report, which names the line */
    int object_ended = o->code == -1 || o->code >= 128;
    if (!st && sp.code != 0 && !(j->deadline_first && object_ended)) {
        kf_buf_free(&o->log);
        o->log = sp.log;
        o->code = sp.code;
    } else {
        kf_buf_free(&sp.log);
    }
    /* the compiler never ran: its child exits 127, silent or with kforge's own "kforge:
     * exec ...: ERROR" (the compiler's own failures exit 1 to 4), so no candidate text
     * can make it: the machine's failure, not a compile error */
    if (!st && o->code == 127 && (!o->log.p || !o->log.len || !strncmp(o->log.p, "kforge: ", 8))) {
        char line[400];
        snprintf(line, sizeof line, "%.*s", (int)strcspn(o->log.p ? o->log.p : "", "\n"),
                 o->log.p ? o->log.p : "");
        st = kf__err(ctx, KF_EBACKEND, "the compiler %s could not start%s%s", j->argv[0], line[0] ? ": " : "",
                     line);
    }
    if (st) kf_buf_free(&o->log);
    return st;
}

char *kf_driver_line(const char *log, const char *at, const char *fallback) {
    if (!log || !at) return kf__strdup(fallback);
    const char *s = at;
    while (s > log && s[-1] != '\n') s--;
    size_t n = strcspn(s, "\n");
    if (n > 400) n = 400;
    return strndup(s, n);
}

int kf_driver_which(const char *name, const char *dflt, char *out) {
    const char *path = getenv("PATH");
    if ((!path || !*path) && dflt) path = dflt;
    if (!path) return -1;
    char *dup = kf__strdup(path), *save = NULL;
    int rc = -1;
    for (char *dir = dup ? strtok_r(dup, ":", &save) : NULL; dir && rc; dir = strtok_r(NULL, ":", &save)) {
        char cand[PATH_MAX];
        snprintf(cand, sizeof cand, "%s/%s", dir, name);
        if (!access(cand, X_OK) && realpath(cand, out)) rc = 0;
    }
    if (rc && dup) errno = ENOENT; /* not found; ENOMEM only when the copy failed */
    free(dup);
    return rc;
}

void kf_driver_prefix(const char *exe, char *out, size_t n) {
    snprintf(out, n, "%s", exe);
    for (int up = 0; up < 2; up++) {
        char *slash = strrchr(out, '/');
        if (slash && slash != out) *slash = 0;
    }
}

char *kf_driver_cache_path(const char *kind, const char *key, const char *ext) {
    char cdir[PATH_MAX];
    kf__cache_dir(cdir, sizeof cdir);
    return kf__asprintf("%s/%s/%.2s/%s%s", cdir, kind, key, key, ext);
}

int kf_driver_publish(const char *path, const void *data, size_t n) {
    char *dir = kf__strdup(path);
    char *tmp = kf__asprintf("%s.%d.tmp", path, (int)gettid()); /* per thread: --jobs */
    char *slash = dir ? strrchr(dir, '/') : NULL;
    if (slash) *slash = 0;
    int rc =
        slash && tmp && !kf__mkdirs(dir) && !kf_driver_write(tmp, data, n) && !rename(tmp, path) ? 0 : -1;
    if (rc && tmp) unlink(tmp);
    free(dir);
    free(tmp);
    return rc;
}

kf_status kf_driver_keep(kf_ctx *ctx, char **cached, const char *cached_log, const char *log,
                         const void *data, size_t n, const char *local, char **path) {
    *path = NULL;
    if (*cached && cached_log && !kf_driver_publish(cached_log, log, strlen(log)) &&
        !kf_driver_publish(*cached, data, n)) {
        *path = *cached;
        *cached = NULL;
        return KF_OK;
    }
    if (kf_driver_write(local, data, n))
        return kf__err(ctx, KF_EIO, "writing %s: %s", local, strerror(errno));
    return (*path = kf__strdup(local)) ? KF_OK : kf__err(ctx, KF_ENOMEM, "out of memory");
}
