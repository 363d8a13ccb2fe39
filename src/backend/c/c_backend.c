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
 * candidate, and a different text always builds afresh (docs/checker.md #22). The build
 * directory, the two passes and the cache are the compiler driver's (../driver.h), which
 * CUDA host mode shares; this file holds what is the C compiler's.
 *
 * Its candidates run in CPU workers as the worker loads them (the interface's defaults:
 * staged lines flushed from the CPU caches, the worker's own clock); the roofline is
 * this machine's measured ceilings (ceilings.c).
 */
#define _GNU_SOURCE
#include "c.h"
#include "../driver.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LOG_CAP (32u << 10)

static const char *cflags[] = {"-O2",     "-march=native",  "-std=gnu11", "-fPIC",
                               "-shared", "-fno-fast-math", "-pipe"};

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
        kf_buf_printf(&b, "%s%s%s%s %s", i ? ", " : "", a->is_buffer && a->io == KF_IO_IN ? "const " : "",
                      builtin_type(a->type), a->is_buffer ? " *" : "", a->name);
    }
    kf_buf_printf(&b, ");\n");
    if (b.oom) kf_buf_free(&b); /* a prototype cut short would not compile */
    return b.p;
}

/* $CC (a path, or a name along $PATH), else cc. */
static int find_compiler(char *out) {
    const char *cc = getenv("CC");
    if (!cc || !*cc) cc = "cc";
    if (strchr(cc, '/')) return realpath(cc, out) ? 0 : -1;
    return kf_driver_which(cc, "/usr/local/bin:/usr/bin:/bin", out);
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

static kf_status c_compile(kf_backend *b, kf_ctx *ctx, const kf_task *t, const char *path, const char *text,
                           size_t len, const kf_param *params, int nparams, const char *workdir,
                           double timeout_s, kf_build *out) {
    (void)b;
    char cc[PATH_MAX], key[65];
    char *hdr = gen_header(t);
    if (!hdr) return kf__err(ctx, KF_ENOMEM, "out of memory");
    errno = 0;
    if (find_compiler(cc)) {
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
    size_t lens[] = {len, 1,           strlen(hdr), 1,           fb.len, 1,         strlen(ccid),
                     1,   strlen(cpu), 1,           strlen(src), 1,      strlen(mt)};
    int hashed = kf__sha256_hex(parts, lens, 13, key);
    kf_buf_free(&fb);
    if (hashed) {
        free(hdr);
        return kf__err(ctx, KF_EINTERNAL, "sha256 failed");
    }
    char *cached = kf_driver_cache_path("c", key, ".so");
    if (cached && !access(cached, R_OK)) {
        out->ok = 1;
        out->cached = 1;
        out->so_path = cached;
        free(hdr);
        return KF_OK;
    }

    kf_status st = KF_OK;
    kf_driver_dir d;
    if ((st = kf_driver_prepare(ctx, workdir, src, text, len, hdr, have_ps ? &ps : NULL, &d))) goto done;
    /* a name the compiler would read as an option is given as ./-x.c, as a user must */
    char srcarg[NAME_MAX + 8];
    snprintf(srcarg, sizeof srcarg, "%s%s", src[0] == '-' ? "./" : "", src);
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
    for (size_t i = 0; i < sizeof cflags / sizeof cflags[0]; i++)
        sargv[sc++] = argv[ac++] = (char *)cflags[i];
    for (int i = 0; i < nparams && i < KF_MAX_PARAMS; i++) sargv[sc++] = argv[ac++] = defs[i];
    sargv[sc++] = "-fsyntax-only";
    sargv[sc++] = "-include";
    sargv[sc++] = d.hname;
    sargv[sc++] = srcarg;
    sargv[sc] = NULL;
    /* pass 2, the object: the candidate alone, the command docs/tasks.md gives */
    argv[ac++] = "-o";
    argv[ac++] = d.soname;
    argv[ac++] = srcarg;
    argv[ac++] = "-lm";
    argv[ac++] = "-Wl,-z,defs";
    argv[ac++] = "-Wl,-z,now";
    argv[ac] = NULL;
    /* the toolchain's own prefix too (a compiler under /opt/gcc/bin reads /opt/gcc) */
    char prefix[PATH_MAX];
    kf_driver_prefix(cc, prefix, sizeof prefix);
    kf_driver_job job = {.argv = argv,
                         .sargv = sargv,
                         .prefix = prefix,
                         .lim = {timeout_s + 1, 4ull << 30, 256u << 20, 256},
                         .timeout_s = timeout_s,
                         .log_cap = LOG_CAP};
    kf_driver_out r;
    st = kf_driver_run(ctx, &d, &job, &r);
    out->seconds = r.seconds;
    for (int i = 0; i < KF_MAX_PARAMS; i++) free(defs[i]);
    /* a log cut short for memory could turn one failure into another */
    if (!st && r.log.oom) st = kf__err(ctx, KF_ENOMEM, "out of memory (reading the compiler's output)");
    if (st) {
        kf_buf_free(&r.log);
        goto done;
    }
    int code = r.code;
    out->log = r.log.p ? r.log.p : kf__strdup("");
    errno = 0;
    int defined = code == 0 ? kf__so_defines(d.so, t->entry) : -1;
    if (!out->log || (code == 0 && defined < 0 && errno == ENOMEM)) {
        st = kf__err(ctx, KF_ENOMEM, "out of memory");
        goto done;
    }
    if (code == 0 && defined == 1) {
        out->ok = 1;
        /* publish into the cache atomically; a failure here only costs a rebuild */
        char *data = NULL;
        size_t dl = 0;
        if (cached && !kf__read_file(d.so, 1u << 30, &data, &dl) && !kf_driver_publish(cached, data, dl)) {
            out->so_path = cached;
            cached = NULL;
        } else {
            if (!(out->so_path = kf__strdup(d.so))) st = kf__err(ctx, KF_ENOMEM, "out of memory");
        }
        free(data);
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
        const char *at = strstr(out->log, "undefined reference to");
        if (!at) at = strstr(out->log, "error:");
        out->message = kf_driver_line(out->log, at, "the compiler failed");
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
    static kf_backend b = {{
                               .api_version = KF_BACKEND_API_VERSION,
                               .name = "c",
                               .ext = "c",
                               .reference = "reference.c",
                               .lang = "c",
                               .caps = KF_BACKEND_CPU,
                               .compile = c_compile,
                               .ceilings = kf__c_ceilings,
                               .roofline = kf__c_roofline,
                               .dispatcher = kf__c_dispatcher,
                           },
                           NULL};
    return &b;
}
