/*
 * c_backend.c - the C backend: builds a candidate into a shared object with the
 * system C compiler, run in its own session under rlimits and Landlock (it may read
 * only the toolchain and its private build directory, and write only the latter).
 *
 * The object is built from the candidate alone, with the command a user would type
 * (docs/tasks.md "Calling convention"): the file under its own name, nothing
 * force-included, no macro but its template parameters. So a kernel cannot be right only
 * under kforge: no header, macro, path or symbol of kforge's is reachable from it at
 * build time (threat #31). The task's calling convention is checked in a separate
 * syntax-only pass that force-includes a generated prototype under a random name: a
 * candidate whose entry has another signature fails to compile. The built object must
 * export the entry as a function (read from its ELF symbol table), else missing_entry.
 * The worker calls the entry itself (worker_main.c); there is no shim in the object.
 *
 * Builds are cached by SHA-256 of (source, its file name, generated prototype, flags,
 * compiler identity, CPU model): the cache is owned by kforge, never writable by a
 * candidate, and a different text always builds afresh (docs/checker.md #22).
 */
#define _GNU_SOURCE
#include "../backend.h"
#include "../../sandbox/sandbox.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#define LOG_CAP (32u << 10)

static const char *cflags[] = {"-O2", "-march=native", "-std=gnu11", "-fPIC", "-shared",
                               "-fno-fast-math", "-pipe"};

static const char *builtin_type(kf_dtype t) {
    switch (t) {
    case KF_T_F32: return "float";
    case KF_T_F64: return "double";
    case KF_T_I32: return "__INT32_TYPE__";
    case KF_T_I64: return "__INT64_TYPE__";
    case KF_T_U8: return "__UINT8_TYPE__";
    default: return "__UINT16_TYPE__";
    }
}

static const char *display_type(kf_dtype t) {
    switch (t) {
    case KF_T_F32: return "float";
    case KF_T_F64: return "double";
    case KF_T_I32: return "int32_t";
    case KF_T_I64: return "int64_t";
    case KF_T_U8: return "uint8_t";
    default: return "uint16_t";
    }
}

/* The entry's prototype as a user writes it, for messages. Caller frees. */
static char *display_proto(const kf_task *t) {
    kf_buf b;
    kf_buf_init(&b, 4096);
    kf_buf_printf(&b, "void %s(", t->entry);
    for (int i = 0; i < t->nargs; i++) {
        const kf_arg *a = &t->args[i];
        kf_buf_printf(&b, "%s%s%s%s%s", i ? ", " : "", a->is_buffer && a->io == KF_IO_IN ? "const " : "",
                      display_type(a->type), a->is_buffer ? " *" : " ", a->name);
    }
    kf_buf_printf(&b, ")");
    if (b.oom) kf_buf_free(&b);
    return b.p; /* NULL after kf_buf_free */
}

static char *gen_header(const kf_task *t) {
    kf_buf b;
    kf_buf_init(&b, 1u << 20);
    /* No #include: a candidate's own `#define _GNU_SOURCE` must still come first. The
     * compiler's built-in type names match <stdint.h>'s typedefs exactly. */
    kf_buf_printf(&b, "void %s(", t->entry);
    for (int i = 0; i < t->nargs; i++) {
        const kf_arg *a = &t->args[i];
        kf_buf_printf(&b, "%s%s%s%s %s", i ? ", " : "",
                      a->is_buffer && a->io == KF_IO_IN ? "const " : "", builtin_type(a->type),
                      a->is_buffer ? " *" : "", a->name);
    }
    kf_buf_printf(&b, ");\n");
    if (b.oom) kf_buf_free(&b); /* a prototype cut short would not compile */
    return b.p;
}

static int find_compiler(char *out, size_t n) {
    const char *cc = getenv("CC");
    if (!cc || !*cc) cc = "cc";
    if (strchr(cc, '/')) return realpath(cc, out) ? 0 : -1;
    const char *path = getenv("PATH");
    if (!path || !*path) path = "/usr/local/bin:/usr/bin:/bin";
    char *dup = kf__strdup(path), *save = NULL;
    int rc = -1;
    if (!dup) return -1; /* errno ENOMEM */
    for (char *d = strtok_r(dup, ":", &save); d && rc; d = strtok_r(NULL, ":", &save)) {
        char cand[PATH_MAX];
        snprintf(cand, sizeof cand, "%s/%s", d, cc);
        if (!access(cand, X_OK) && realpath(cand, out)) rc = 0;
    }
    free(dup);
    (void)n;
    return rc;
}

/* The build's copy of the candidate: its own file name, as a user's build sees it
 * (__FILE__), with ".c" added when it has another ending (the compiler needs it). */
static void source_name(const char *path, char *out, size_t n) {
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t k = strlen(base);
    if (!k || !strcmp(base, ".") || !strcmp(base, "..")) base = "kernel.c", k = 8;
    int dotc = k >= 3 && !strcmp(base + k - 2, ".c");
    snprintf(out, n, "%s%s", base, dotc ? "" : ".c");
}

static int write_file(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wbx");
    if (!f) return -1;
    size_t w = fwrite(data, 1, n, f);
    return (fclose(f) || w != n) ? -1 : 0;
}

static char *first_error(const char *log, const char *fallback) {
    const char *p = log ? strstr(log, "undefined reference to") : NULL;
    if (!p && log) p = strstr(log, "error:");
    if (!p) return kf__strdup(fallback);
    const char *s = p;
    while (s > log && s[-1] != '\n') s--;
    size_t n = strcspn(s, "\n");
    if (n > 400) n = 400;
    return strndup(s, n);
}

/* The syntax-only pass, run beside the object pass. */
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
} syntax_job;

static void *syntax_main(void *arg) {
    syntax_job *j = arg;
    j->st = kf_sandbox_exec(j->ctx, j->argv, j->cwd, j->env, j->lim, j->ro, j->nro, j->rw,
                            j->nrw, j->timeout_s, &j->log, &j->code);
    return NULL;
}

static kf_status c_compile(kf_backend *b, kf_ctx *ctx, const kf_task *t, const char *path,
                           const char *text, size_t len, const kf_param *params, int nparams,
                           const char *workdir, double timeout_s, kf_build *out) {
    (void)b;
    char cc[PATH_MAX], cdir[PATH_MAX], key[65];
    char *hdr = gen_header(t);
    if (!hdr) return kf__err(ctx, KF_ENOMEM, "out of memory");
    errno = 0;
    if (find_compiler(cc, sizeof cc)) {
        free(hdr);
        if (errno == ENOMEM) return kf__err(ctx, KF_ENOMEM, "out of memory");
        return kf__err(ctx, KF_EBACKEND, "no C compiler found (set CC or install gcc)");
    }
    /* every flag goes into the key in full: a truncated key once reused one
     * parameter value's build for another */
    kf_buf fb;
    kf_buf_init(&fb, 1u << 20);
    for (size_t i = 0; i < sizeof cflags / sizeof cflags[0]; i++) kf_buf_printf(&fb, "%s ", cflags[i]);
    for (int i = 0; i < nparams; i++) kf_buf_printf(&fb, "-D%s=%s ", params[i].name, params[i].selected);
    if (!fb.p || fb.dropped || fb.oom) {
        int oom = fb.oom;
        kf_buf_free(&fb);
        free(hdr);
        return oom ? kf__err(ctx, KF_ENOMEM, "out of memory")
                   : kf__err(ctx, KF_EUSAGE, "compiler flags too long");
    }
    struct stat sb;
    char ccid[PATH_MAX + 64];
    if (stat(cc, &sb)) sb.st_mtime = 0, sb.st_size = 0;
    snprintf(ccid, sizeof ccid, "%s:%lld:%lld", cc, (long long)sb.st_mtime, (long long)sb.st_size);
    const char *cpu = kf__cpu_identity();
    char src[NAME_MAX + 3];
    source_name(path, src, sizeof src); /* __FILE__ is part of what is built */
    /* and the file's time, for a text that reads it (__TIMESTAMP__: the copy keeps it) */
    struct stat ps;
    int have_ps = !stat(path, &ps);
    char mt[48] = "";
    if (have_ps && memmem(text, len, "__TIMESTAMP__", 13))
        snprintf(mt, sizeof mt, "%lld", (long long)ps.st_mtim.tv_sec);
    const void *parts[] = {text, "\0", hdr, "\0", fb.p, "\0", ccid, "\0", cpu, "\0", src, "\0", mt};
    size_t lens[] = {len, 1, strlen(hdr), 1, fb.len, 1, strlen(ccid), 1, strlen(cpu), 1, strlen(src), 1, strlen(mt)};
    int hashed = kf__sha256_hex(parts, lens, 13, key);
    kf_buf_free(&fb);
    if (hashed) {
        free(hdr);
        return kf__err(ctx, KF_EINTERNAL, "sha256 failed");
    }
    kf__cache_dir(cdir, sizeof cdir);
    char *cached = kf__asprintf("%s/c/%.2s/%s.so", cdir, key, key);
    if (cached && !access(cached, R_OK)) {
        out->ok = 1;
        out->cached = 1;
        out->so_path = cached;
        free(hdr);
        return KF_OK;
    }

    kf_status st = KF_OK;
    char bdir[PATH_MAX], srcpath[PATH_MAX + 300], hname[40], hpath[PATH_MAX + 48];
    char soname[NAME_MAX + 8], so[PATH_MAX + NAME_MAX + 8], srcarg[NAME_MAX + 8];
    snprintf(bdir, sizeof bdir, "%s/build-XXXXXX", workdir);
    if (!mkdtemp(bdir)) {
        st = kf__err(ctx, KF_EIO, "mkdtemp in %s: %s", workdir, strerror(errno));
        goto done;
    }
    snprintf(srcpath, sizeof srcpath, "%s/%s", bdir, src);
    /* the prototype under a random name, for the syntax pass only: a candidate cannot
     * name it in __has_include, and the object pass never sees it */
    snprintf(hname, sizeof hname, "%016llx.h", (unsigned long long)kf__secret_u64());
    snprintf(hpath, sizeof hpath, "%s/%s", bdir, hname);
    /* "x.c" -> "x.so", as the documented command names it */
    snprintf(soname, sizeof soname, "%.*s.so", (int)(strlen(src) - 2), src);
    snprintf(so, sizeof so, "%s/%s", bdir, soname);
    /* a name the compiler would read as an option is given as ./-x.c, as a user must */
    snprintf(srcarg, sizeof srcarg, "%s%s", src[0] == '-' ? "./" : "", src);
    if (write_file(srcpath, text, len) || write_file(hpath, hdr, strlen(hdr))) {
        st = kf__err(ctx, KF_EIO, "writing into %s: %s", bdir, strerror(errno));
        goto done;
    }
    /* the copy keeps the file's own modification time (__TIMESTAMP__): a file written
     * just before the compile was a tell; a stored text keeps the time it was written */
    if (have_ps) {
        struct timespec tv[2] = {ps.st_atim, ps.st_mtim};
        utimensat(AT_FDCWD, srcpath, tv, 0);
    }
    /* pass 1, the signature: syntax only, with the prototype force-included */
    char *sargv[64], *argv[64];
    int sc = 0, ac = 0;
    char *defs[KF_MAX_PARAMS] = {0};
    for (int i = 0; i < nparams && i < KF_MAX_PARAMS; i++)
        if (!(defs[i] = kf__asprintf("-D%s=%s", params[i].name, params[i].selected))) {
            for (int k = 0; k < i; k++) free(defs[k]);
            st = kf__err(ctx, KF_ENOMEM, "out of memory");
            goto done;
        }
    sargv[sc++] = argv[ac++] = cc;
    for (size_t i = 0; i < sizeof cflags / sizeof cflags[0]; i++) sargv[sc++] = argv[ac++] = (char *)cflags[i];
    for (int i = 0; i < nparams && i < KF_MAX_PARAMS; i++) sargv[sc++] = argv[ac++] = defs[i];
    sargv[sc++] = "-fsyntax-only";
    sargv[sc++] = "-include";
    sargv[sc++] = hname;
    sargv[sc++] = srcarg;
    sargv[sc] = NULL;
    /* pass 2, the object: the candidate alone, the command docs/tasks.md gives */
    argv[ac++] = "-o";
    argv[ac++] = soname;
    argv[ac++] = srcarg;
    argv[ac++] = "-lm";
    argv[ac++] = "-Wl,-z,defs";
    argv[ac++] = "-Wl,-z,now";
    argv[ac] = NULL;
    char tmpenv[PATH_MAX + 16];
    snprintf(tmpenv, sizeof tmpenv, "TMPDIR=%s", bdir);
    /* the toolchain's own prefix too (a compiler under /opt/gcc/bin reads /opt/gcc) */
    char prefix[PATH_MAX];
    snprintf(prefix, sizeof prefix, "%s", cc);
    for (int up = 0; up < 2; up++) {
        char *slash = strrchr(prefix, '/');
        if (slash && slash != prefix) *slash = 0;
    }
    char pathenv[PATH_MAX + 64];
    snprintf(pathenv, sizeof pathenv, "PATH=%s/bin:/usr/local/bin:/usr/bin:/bin", prefix);
    char *env[] = {pathenv, "LANG=C", "LC_ALL=C", tmpenv, NULL};
    const char *ro[] = {"/usr", "/lib", "/lib64", "/lib32", "/bin", "/etc/ld.so.cache",
                        "/etc/alternatives", prefix};
    /* cc1 -fsyntax-only writes its (empty) assembly to /dev/null */
    const char *rw[] = {bdir, "/dev/null"};
    kf_limits lim = {timeout_s + 1, 4ull << 30, 256u << 20, 256};
    kf_buf log;
    kf_buf_init(&log, LOG_CAP);
    int code = 0;
    uint64_t t0 = kf__now_ns();
    /* both passes at once: the syntax pass in a thread of its own. The object pass cannot
     * see the prototype header meanwhile: it is reachable only by its random name. The
     * syntax pass's output is the log only when it fails: its warnings are the object
     * pass's too. */
    kf_ctx *sctx = kf_ctx_new(); /* the thread's errors */
    syntax_job sj = {sctx ? sctx : ctx, sargv, bdir, env, &lim, ro, (int)(sizeof ro / sizeof ro[0]), rw, 2,
                     timeout_s, {0}, -1, KF_OK};
    kf_buf_init(&sj.log, LOG_CAP);
    pthread_t th;
    int threaded = sctx && !pthread_create(&th, NULL, syntax_main, &sj);
    if (!threaded) syntax_main(&sj);
    st = kf_sandbox_exec(ctx, argv, bdir, env, &lim, ro, (int)(sizeof ro / sizeof ro[0]), rw, 2, timeout_s,
                         &log, &code);
    if (threaded) pthread_join(th, NULL);
    unlink(hpath);
    if (!st && sj.st) st = sctx ? kf__err(ctx, sj.st, "%s", kf_errmsg(sctx)) : sj.st;
    kf_ctx_free(sctx);
    if (!st && sj.code != 0) { /* the signature (or the syntax) is wrong: its report */
        kf_buf_free(&log);
        log = sj.log;
        code = sj.code;
    } else {
        kf_buf_free(&sj.log);
    }
    out->seconds = (double)(kf__now_ns() - t0) / 1e9;
    for (int i = 0; i < KF_MAX_PARAMS; i++) free(defs[i]);
    /* a log cut short for memory could turn one failure into another */
    if (!st && log.oom) st = kf__err(ctx, KF_ENOMEM, "out of memory (reading the compiler's output)");
    if (st) {
        kf_buf_free(&log);
        goto done;
    }
    out->log = log.p ? log.p : kf__strdup("");
    errno = 0;
    int defined = code == 0 ? kf__so_defines(so, t->entry) : -1;
    if (!out->log || (code == 0 && defined < 0 && errno == ENOMEM)) {
        st = kf__err(ctx, KF_ENOMEM, "out of memory");
        goto done;
    }
    if (code == 0 && defined == 1) {
        out->ok = 1;
        /* publish into the cache atomically; a failure here only costs a rebuild */
        char *tmp = cached ? kf__asprintf("%s.%d.tmp", cached, (int)gettid()) /* per thread: --jobs */ : NULL;
        char *dir = cached ? kf__strdup(cached) : NULL;
        if (dir) *strrchr(dir, '/') = 0;
        char *data = NULL;
        size_t dl = 0;
        if (tmp && dir && !kf__mkdirs(dir) && !kf__read_file(so, 1u << 30, &data, &dl) &&
            !write_file(tmp, data, dl) && !rename(tmp, cached)) {
            out->so_path = cached;
            cached = NULL;
        } else {
            if (tmp) unlink(tmp);
            if (!(out->so_path = kf__strdup(so))) st = kf__err(ctx, KF_ENOMEM, "out of memory");
        }
        free(data);
        free(tmp);
        free(dir);
        goto done;
    }
    out->ok = 0;
    char needle[300];
    snprintf(needle, sizeof needle, "undefined reference to `%s'", t->entry);
    if (code == -1) {
        out->reason = KF_REASON_COMPILE_ERROR;
        out->message = kf__asprintf("the compiler ran past its %.0f s deadline", timeout_s);
    } else if (code >= 128) {
        out->reason = KF_REASON_COMPILE_ERROR;
        out->message = kf__asprintf("the compiler was killed by signal %d (memory or CPU limit)", code - 128);
    } else if (code == 0 || strstr(out->log, needle)) {
        out->reason = KF_REASON_MISSING_ENTRY;
        out->message = kf__asprintf("%s does not define the entry function %s", path, t->entry);
    } else {
        out->reason = KF_REASON_COMPILE_ERROR;
        out->message = first_error(out->log, "the compiler failed");
        /* a wrong signature: say which one the task wants */
        char conflict[300];
        snprintf(conflict, sizeof conflict, "conflicting types for '%s'", t->entry);
        char *proto = strstr(out->log, conflict) ? display_proto(t) : NULL;
        if (proto && out->message) {
            char *m = kf__asprintf("%s (the task's entry is: %s)", out->message, proto);
            if (m) {
                free(out->message);
                out->message = m;
            }
        }
        free(proto);
    }
    if (!out->message) st = kf__err(ctx, KF_ENOMEM, "out of memory");
done:
    free(cached);
    free(hdr);
    return st;
}

kf_backend *kf_backend_c(void) {
    static kf_backend b = {{"c", c_compile}, NULL};
    return &b;
}
