/*
 * host_build.c - the CUDA backend's host mode: a candidate with its own host code,
 * `extern "C" int kforge_launch(<the task's arguments as device pointers>, cudaStream_t)`,
 * built with nvcc into a shared object by the C backend's sandboxed compiler child
 * (own session, rlimits, Landlock: the toolchain read-only, its private build directory
 * read-write).
 *
 * The object is built from the candidate alone, with the command a user would type
 * (docs/cuda.md "Host mode"): the file under its own name, nothing force-included, no
 * macro but its template parameters, so no kforge header, macro, path or symbol is
 * reachable from it at build time (threat #31). The task's calling convention is checked
 * beside it in a front-end pass (`nvcc --cuda`, output discarded) that force-includes a
 * generated prototype under a random name: kforge_launch with another signature is a
 * compile error (C linkage). The built object must export kforge_launch (its dynamic
 * symbols), else missing_entry; the GPU worker calls it directly, by the machine's
 * calling convention. The artifact is "KFHOST01" followed by the ELF object.
 * Builds are cached by SHA-256 of the text, the header, the flags, nvcc's identity and the
 * architecture (docs/checker.md #22). The libraries the object needs (DT_NEEDED, outside the
 * C/C++ runtime) are read back from the artifact on every build, cached or not, and
 * reported. It does not run anything it built.
 */
#define _GNU_SOURCE
#include "../backend.h"
#include "../../sandbox/sandbox.h"
#include "host.h"

#include <ctype.h>
#include <elf.h>
#include <pthread.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LOG_CAP (64u << 10)
#define HOST_MAGIC "KFHOST01"

/* the only libraries a candidate may ask for, and their linker names: cuBLAS, and NVRTC
 * for kernels compiled at run time (a per-shape compile; it reads only the toolkit's
 * headers, which the worker may read anyway) */
static const char *const allowed_links[][2] = {
    {"cublas", "-lcublas"}, {"cublasLt", "-lcublasLt"}, {"nvrtc", "-lnvrtc"}};

static const char *const nvflags[] = {"-shared", "-Xcompiler", "-fPIC", "-O3", "-std=c++17",
                                      "-lineinfo", "-Xlinker", "-z,defs", "-Xlinker", "-z,now"};

static int directive(const char *line, size_t n, const char *name, const char **rest) {
    size_t k = strlen(name);
    const char *d = memmem(line, n, name, k);
    if (!d) return 0;
    const char *after = d + k;
    /* "kforge:host" must not match "kforge:hostile" */
    if (after < line + n && (isalnum((unsigned char)*after) || *after == '_')) return 0;
    if (rest) *rest = after;
    return 1;
}

int kf__cuda_host_mode(const kf_task *t, const char *text, size_t len) {
    int host = 0, launch = 0;
    const char *end = text + len;
    for (const char *p = text; p < end;) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol) eol = end;
        host |= directive(p, (size_t)(eol - p), "kforge:host", NULL);
        launch |= directive(p, (size_t)(eol - p), "kforge:launch", NULL);
        p = eol + 1;
    }
    return host || (t->launch_host && !launch);
}

/* The kforge:link lines into lflags (linker flags, at most 3) and libs ("cublas,..."),
 * and the sanity of the directives. 0, or -1 with "line N: ..." in err. */
static int parse_links(const char *text, size_t len, const char **lflags, int *nl, char *libs,
                       size_t libsz, char *err, size_t n) {
    const char *end = text + len;
    int line = 1;
    *nl = 0;
    libs[0] = 0;
    for (const char *p = text; p < end; line++) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol) eol = end;
        const char *rest;
        if (directive(p, (size_t)(eol - p), "kforge:launch", NULL)) {
            snprintf(err, n, "line %d: kforge:launch in a host-mode file (kforge_launch makes its "
                             "own launches)", line);
            return -1;
        }
        if (directive(p, (size_t)(eol - p), "kforge:link", &rest)) {
            while (rest < eol && (*rest == ' ' || *rest == '\t')) rest++;
            const char *w = rest;
            while (rest < eol && (isalnum((unsigned char)*rest) || *rest == '_')) rest++;
            size_t wl = (size_t)(rest - w);
            int found = -1;
            for (size_t i = 0; i < sizeof allowed_links / sizeof allowed_links[0]; i++)
                if (wl == strlen(allowed_links[i][0]) && !strncmp(w, allowed_links[i][0], wl)) found = (int)i;
            if (found < 0) {
                snprintf(err, n, "line %d: kforge:link '%.*s' is not allowed (allowed: cublas, cublasLt, nvrtc)",
                         line, (int)(wl ? wl : (size_t)(eol - w > 40 ? 40 : eol - w)), w);
                return -1;
            }
            int dup = 0;
            for (int i = 0; i < *nl; i++) dup |= !strcmp(lflags[i], allowed_links[found][1]);
            if (!dup) {
                lflags[(*nl)++] = allowed_links[found][1];
                size_t o = strlen(libs);
                snprintf(libs + o, libsz - o, "%s%s", o ? "," : "", allowed_links[found][0]);
            }
        }
        p = eol + 1;
    }
    return 0;
}

static const char *ctype(kf_dtype t) {
    switch (t) {
    case KF_T_F32: return "float";
    case KF_T_F64: return "double";
    case KF_T_I32: return "int32_t";
    case KF_T_I64: return "int64_t";
    case KF_T_U8: return "uint8_t";
    case KF_T_F16: return "__half";
    default: return "__nv_bfloat16";
    }
}

char *kf__cuda_host_header(const kf_task *t) {
    kf_buf b;
    kf_buf_init(&b, 1u << 20);
    kf_buf_printf(&b, "/* generated by kforge: the task's host-mode calling convention */\n"
                      "#include <stdint.h>\n#include <cuda.h>\n#include <cuda_runtime.h>\n"
                      "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n"
                      "extern \"C\" int kforge_launch(");
    for (int i = 0; i < t->nargs; i++) {
        const kf_arg *a = &t->args[i];
        kf_buf_printf(&b, "%s%s%s", a->is_buffer && a->io == KF_IO_IN ? "const " : "",
                      ctype(a->type), a->is_buffer ? " *, " : ", ");
    }
    kf_buf_printf(&b, "cudaStream_t);\n");
    return b.p;
}

/* KFORGE_NVCC, $CUDA_HOME/bin/nvcc, /usr/local/cuda/bin/nvcc, then PATH. */
static int find_nvcc(char *out) {
    const char *env = getenv("KFORGE_NVCC");
    if (env && *env) return realpath(env, out) && !access(out, X_OK) ? 0 : -1;
    char cand[PATH_MAX];
    const char *home = getenv("CUDA_HOME");
    if (home && *home) {
        snprintf(cand, sizeof cand, "%s/bin/nvcc", home);
        if (!access(cand, X_OK) && realpath(cand, out)) return 0;
    }
    if (!access("/usr/local/cuda/bin/nvcc", X_OK) && realpath("/usr/local/cuda/bin/nvcc", out)) return 0;
    const char *path = getenv("PATH");
    if (!path) return -1;
    char *dup = kf__strdup(path), *save = NULL;
    int rc = -1;
    for (char *d = dup ? strtok_r(dup, ":", &save) : NULL; d && rc; d = strtok_r(NULL, ":", &save)) {
        snprintf(cand, sizeof cand, "%s/nvcc", d);
        if (!access(cand, X_OK) && realpath(cand, out)) rc = 0;
    }
    free(dup);
    return rc;
}

int kf__cuda_have_nvcc(char *why, size_t n) {
    char p[PATH_MAX];
    if (!find_nvcc(p)) return 1;
    snprintf(why, n, "no nvcc (set KFORGE_NVCC or CUDA_HOME, or install the CUDA toolkit)");
    return 0;
}

static int write_new(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    size_t w = fwrite(data, 1, n, f);
    return (fclose(f) || w != n) ? -1 : 0;
}

/* The first error of an nvcc log: cudafe "x.cu(12): error: ...", gcc "x.cu:12:3: error:",
 * or the linker's "undefined reference". */
static char *first_error(const char *log) {
    const char *p = log ? strstr(log, "error") : NULL;
    const char *u = log ? strstr(log, "undefined reference") : NULL;
    if (u && (!p || u < p)) p = u;
    if (!p) return kf__strdup("nvcc failed");
    const char *s = p;
    while (s > log && s[-1] != '\n') s--;
    size_t n = strcspn(s, "\n");
    if (n > 400) n = 400;
    return strndup(s, n);
}

static int is_runtime_lib(const char *name) {
    static const char *const rt[] = {"libc.so", "libm.so", "libstdc++.so", "libgcc_s.so", "ld-linux",
                                     "libpthread.so", "libdl.so", "librt.so", NULL};
    for (int i = 0; rt[i]; i++)
        if (!strncmp(name, rt[i], strlen(rt[i]))) return 1;
    return 0;
}

int kf__elf_needed(const unsigned char *e, size_t n, char *out, size_t outsz) {
    out[0] = 0;
    if (n < sizeof(Elf64_Ehdr) || memcmp(e, ELFMAG, SELFMAG) || e[EI_CLASS] != ELFCLASS64) return -1;
    Elf64_Ehdr eh;
    memcpy(&eh, e, sizeof eh);
    if (eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shoff > n ||
        (size_t)eh.e_shnum * sizeof(Elf64_Shdr) > n - eh.e_shoff)
        return -1;
    for (int i = 0; i < eh.e_shnum; i++) {
        Elf64_Shdr sh, st;
        memcpy(&sh, e + eh.e_shoff + (size_t)i * sizeof sh, sizeof sh);
        if (sh.sh_type != SHT_DYNAMIC || sh.sh_link >= eh.e_shnum) continue;
        memcpy(&st, e + eh.e_shoff + (size_t)sh.sh_link * sizeof st, sizeof st);
        if (sh.sh_offset > n || sh.sh_size > n - sh.sh_offset || st.sh_offset > n ||
            st.sh_size > n - st.sh_offset)
            return -1;
        for (size_t k = 0; k + sizeof(Elf64_Dyn) <= sh.sh_size; k += sizeof(Elf64_Dyn)) {
            Elf64_Dyn d;
            memcpy(&d, e + sh.sh_offset + k, sizeof d);
            if (d.d_tag == DT_NULL) break;
            if (d.d_tag != DT_NEEDED || d.d_un.d_val >= st.sh_size) continue;
            const char *name = (const char *)e + st.sh_offset + d.d_un.d_val;
            size_t ml = strnlen(name, st.sh_size - d.d_un.d_val);
            if (ml == st.sh_size - d.d_un.d_val || is_runtime_lib(name)) continue;
            size_t o = strlen(out);
            snprintf(out + o, outsz - o, "%s%.*s", o ? "," : "", (int)(ml > 100 ? 100 : ml), name);
        }
        return 0;
    }
    return 0;
}

/* The libraries of a built artifact: kforge:link names, then DT_NEEDED entries. */
static void record_libraries(kf_build *out, const char *links) {
    char *data = NULL, needed[512] = "";
    size_t dl = 0;
    if (out->so_path && !kf__read_file(out->so_path, 1u << 30, &data, &dl) && dl > 8)
        kf__elf_needed((unsigned char *)data + 8, dl - 8, needed, sizeof needed);
    free(data);
    out->libraries = kf__asprintf("%s%s%s", links, links[0] && needed[0] ? "," : "", needed);
}

/* The signature pass, run beside the object pass in a thread of its own. */
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
} sig_job;

static void *sig_main(void *arg) {
    sig_job *j = arg;
    j->st = kf_sandbox_exec(j->ctx, j->argv, j->cwd, j->env, j->lim, j->ro, j->nro, j->rw, j->nrw,
                            j->timeout_s, &j->log, &j->code);
    return NULL;
}

kf_status kf__cuda_host_compile(kf_ctx *ctx, const kf_task *t, const char *path, const char *text,
                                size_t len, const kf_param *params, int nparams, const char *workdir,
                                double timeout_s, kf_build *out) {
    char err[512], links[128];
    const char *lflags[4];
    int nl = 0;
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    out->host = 1;
    if (parse_links(text, len, lflags, &nl, links, sizeof links, err, sizeof err)) {
        out->ok = 0;
        out->reason = KF_REASON_COMPILE_ERROR;
        out->message = kf__asprintf("%s:%s", base, err);
        out->log = kf__strdup("");
        return KF_OK;
    }
    char nvcc[PATH_MAX];
    if (find_nvcc(nvcc))
        return kf__err(ctx, KF_EBACKEND, "CUDA host mode needs nvcc: set KFORGE_NVCC or CUDA_HOME, "
                                          "or install the CUDA toolkit (kernel mode needs only NVRTC)");
    /* the toolkit: nvcc lives in <top>/bin */
    char top[PATH_MAX];
    snprintf(top, sizeof top, "%s", nvcc);
    for (int up = 0; up < 2; up++) {
        char *sl = strrchr(top, '/');
        if (sl && sl != top) *sl = 0;
    }
    char *hdr = kf__cuda_host_header(t);
    if (!hdr) return kf__err(ctx, KF_ENOMEM, "out of memory");
    char archflag[40], rpath[PATH_MAX + 32];
    snprintf(archflag, sizeof archflag, "-arch=%s", out->arch);
    snprintf(rpath, sizeof rpath, "-rpath,%s/lib64", top);
    kf_buf fb;
    kf_buf_init(&fb, 1u << 20);
    for (size_t i = 0; i < sizeof nvflags / sizeof nvflags[0]; i++) kf_buf_printf(&fb, "%s ", nvflags[i]);
    kf_buf_printf(&fb, "%s %s ", archflag, rpath);
    for (int i = 0; i < nl; i++) kf_buf_printf(&fb, "%s ", lflags[i]);
    for (int i = 0; i < nparams; i++) kf_buf_printf(&fb, "-D%s=%s ", params[i].name, params[i].selected);
    struct stat sb;
    if (stat(nvcc, &sb)) sb.st_mtime = 0, sb.st_size = 0;
    kf_buf_printf(&fb, "%s:%lld:%lld", nvcc, (long long)sb.st_mtime, (long long)sb.st_size);
    if (!fb.p || fb.dropped) {
        kf_buf_free(&fb);
        free(hdr);
        return kf__err(ctx, KF_EUSAGE, "compiler flags too long");
    }
    char key[65], cdir[PATH_MAX];
    const void *parts[] = {text, "\0", hdr, "\0", fb.p};
    size_t lens[] = {len, 1, strlen(hdr), 1, fb.len};
    kf__sha256_hex(parts, lens, 5, key);
    kf_buf_free(&fb);
    kf__cache_dir(cdir, sizeof cdir);
    char *cached = kf__asprintf("%s/cudahost/%.2s/%s.kfh", cdir, key, key);
    char *cached_log = kf__asprintf("%s/cudahost/%.2s/%s.log", cdir, key, key);
    kf_status st = KF_OK;
    char *log = NULL;
    size_t loglen = 0;
    char *defs[KF_MAX_PARAMS] = {0};
    if (cached && cached_log && !access(cached, R_OK) && !kf__read_file(cached_log, LOG_CAP, &log, &loglen)) {
        out->ok = 1;
        out->cached = 1;
        out->so_path = cached;
        cached = NULL;
        out->log = log;
        record_libraries(out, links);
        goto done;
    }

    char bdir[PATH_MAX], src[256], srcpath[PATH_MAX + 300], hname[40], hpath[PATH_MAX + 48];
    char soname[300], so[PATH_MAX + 320];
    snprintf(bdir, sizeof bdir, "%s/build-XXXXXX", workdir);
    if (!mkdtemp(bdir)) {
        st = kf__err(ctx, KF_EIO, "mkdtemp in %s: %s", workdir, strerror(errno));
        goto done;
    }
    /* a plain file name in the messages: "fast.cu(12): error: ..." */
    size_t k = 0;
    for (const char *c = base; *c && k + 4 < sizeof src; c++)
        src[k++] = (isalnum((unsigned char)*c) || *c == '.' || *c == '_' || *c == '-') ? *c : '_';
    src[k] = 0;
    if (k < 4 || strcmp(src + k - 3, ".cu")) snprintf(src + k, sizeof src - k, ".cu");
    if (src[0] == '.' || src[0] == '-') src[0] = '_';
    snprintf(srcpath, sizeof srcpath, "%s/%s", bdir, src);
    /* the prototype under a random name, for the signature pass only: a candidate cannot
     * name it in __has_include, and the object pass never sees it */
    snprintf(hname, sizeof hname, "%016llx.h", (unsigned long long)kf__secret_u64());
    snprintf(hpath, sizeof hpath, "%s/%s", bdir, hname);
    /* "x.cu" -> "x.so", as the documented command names it */
    snprintf(soname, sizeof soname, "%.*s.so", (int)(strlen(src) - 3), src);
    snprintf(so, sizeof so, "%s/%s", bdir, soname);
    if (write_new(srcpath, text, len) || write_new(hpath, hdr, strlen(hdr))) {
        st = kf__err(ctx, KF_EIO, "writing into %s: %s", bdir, strerror(errno));
        goto done;
    }
    /* pass 1, the object: the candidate alone, the command docs/cuda.md gives; pass 2,
     * the signature: nvcc's front end with the prototype force-included, no output */
    char *argv[64], *sargv[64];
    int ac = 0, sc = 0;
    sargv[sc++] = argv[ac++] = nvcc;
    for (size_t i = 0; i < sizeof nvflags / sizeof nvflags[0]; i++) argv[ac++] = (char *)nvflags[i];
    sargv[sc++] = "-std=c++17";
    sargv[sc++] = argv[ac++] = archflag;
    argv[ac++] = "-Xlinker";
    argv[ac++] = rpath;
    for (int i = 0; i < nparams && i < KF_MAX_PARAMS; i++) {
        defs[i] = kf__asprintf("-D%s=%s", params[i].name, params[i].selected);
        sargv[sc++] = argv[ac++] = defs[i];
    }
    argv[ac++] = "-o";
    argv[ac++] = soname;
    argv[ac++] = src;
    for (int i = 0; i < nl; i++) argv[ac++] = (char *)lflags[i];
    argv[ac] = NULL;
    sargv[sc++] = "--cuda";
    sargv[sc++] = "-include";
    sargv[sc++] = hname;
    sargv[sc++] = "-o";
    sargv[sc++] = "/dev/null";
    sargv[sc++] = src;
    sargv[sc] = NULL;
    char tmpenv[PATH_MAX + 16], pathenv[PATH_MAX + 64];
    snprintf(tmpenv, sizeof tmpenv, "TMPDIR=%s", bdir);
    snprintf(pathenv, sizeof pathenv, "PATH=%s/bin:/usr/local/bin:/usr/bin:/bin", top);
    char *env[] = {pathenv, "LANG=C", "LC_ALL=C", tmpenv, NULL};
    const char *ro[] = {"/usr", "/lib", "/lib64", "/lib32", "/bin", "/etc/ld.so.cache",
                        "/etc/alternatives", "/dev/urandom", top};
    const char *rw[] = {bdir, "/dev/null"};
    /* cicc and ptxas need more than cc: 8 GiB of address space */
    kf_limits lim = {timeout_s + 1, 8ull << 30, 512u << 20, 256};
    kf_buf lb;
    kf_buf_init(&lb, LOG_CAP);
    int code = 0;
    uint64_t t0 = kf__now_ns();
    /* both passes at once. The object pass cannot see the prototype meanwhile: it is
     * reachable only by its random name. The signature pass's output is the log only
     * when it fails: its warnings are the object pass's too. */
    kf_ctx *sctx = kf_ctx_new();
    sig_job sj = {sctx ? sctx : ctx, sargv, bdir, env, &lim, ro, (int)(sizeof ro / sizeof ro[0]), rw, 2,
                  timeout_s, {0}, -1, KF_OK};
    kf_buf_init(&sj.log, LOG_CAP);
    pthread_t th;
    int threaded = sctx && !pthread_create(&th, NULL, sig_main, &sj);
    if (!threaded) sig_main(&sj);
    st = kf_sandbox_exec(ctx, argv, bdir, env, &lim, ro, (int)(sizeof ro / sizeof ro[0]), rw, 2,
                         timeout_s, &lb, &code);
    if (threaded) pthread_join(th, NULL);
    unlink(hpath);
    if (!st && sj.st) st = sctx ? kf__err(ctx, sj.st, "%s", kf_errmsg(sctx)) : sj.st;
    kf_ctx_free(sctx);
    out->seconds = (double)(kf__now_ns() - t0) / 1e9;
    if (st) {
        kf_buf_free(&lb);
        kf_buf_free(&sj.log);
        goto done;
    }
    /* a signature (or syntax) error: the front end's report, which names the line */
    if (sj.code != 0 && code != -1 && code < 128) {
        kf_buf_free(&lb);
        lb = sj.log;
        code = sj.code;
    } else {
        kf_buf_free(&sj.log);
    }
    out->log = lb.p ? lb.p : kf__strdup("");
    int defined = code == 0 ? kf__so_defines(so, "kforge_launch") : -1;
    if (code == 0 && defined == 1) {
        char *data = NULL;
        size_t dl = 0;
        if (kf__read_file(so, 1u << 30, &data, &dl)) {
            st = kf__err(ctx, KF_EIO, "reading %s: %s", so, strerror(errno));
            goto done;
        }
        char *blob = malloc(dl + 8);
        if (!blob) {
            free(data);
            st = kf__err(ctx, KF_ENOMEM, "out of memory");
            goto done;
        }
        memcpy(blob, HOST_MAGIC, 8);
        memcpy(blob + 8, data, dl);
        free(data);
        char *dir = cached ? kf__strdup(cached) : NULL;
        if (dir) *strrchr(dir, '/') = 0;
        char *tmp = cached ? kf__asprintf("%s.%d.tmp", cached, (int)gettid()) : NULL;
        char *tmpl = cached_log ? kf__asprintf("%s.%d.tmp", cached_log, (int)gettid()) : NULL;
        char local[PATH_MAX + 64];
        snprintf(local, sizeof local, "%s/%.16s.kfh", workdir, key);
        if (dir && tmp && tmpl && !kf__mkdirs(dir) && !write_new(tmpl, out->log, strlen(out->log)) &&
            !rename(tmpl, cached_log) && !write_new(tmp, blob, dl + 8) && !rename(tmp, cached)) {
            out->so_path = cached;
            cached = NULL;
        } else if (!write_new(local, blob, dl + 8)) {
            if (tmp) unlink(tmp);
            out->so_path = kf__strdup(local);
        } else {
            st = kf__err(ctx, KF_EIO, "writing %s: %s", local, strerror(errno));
        }
        free(blob);
        free(dir);
        free(tmp);
        free(tmpl);
        if (!st) {
            out->ok = 1;
            record_libraries(out, links);
        }
        goto done;
    }
    out->ok = 0;
    if (code == -1) {
        out->reason = KF_REASON_COMPILE_ERROR;
        out->message = kf__asprintf("nvcc ran past its %.0f s deadline", timeout_s);
    } else if (code >= 128) {
        out->reason = KF_REASON_COMPILE_ERROR;
        out->message = kf__asprintf("nvcc was killed by signal %d (memory or CPU limit)", code - 128);
    } else if (code == 0) {
        out->reason = KF_REASON_MISSING_ENTRY;
        out->message = kf__asprintf("%s does not define extern \"C\" int kforge_launch(...)", base);
    } else {
        out->reason = KF_REASON_COMPILE_ERROR;
        out->message = first_error(out->log);
    }
done:
    for (int i = 0; i < KF_MAX_PARAMS; i++) free(defs[i]);
    free(cached);
    free(cached_log);
    free(hdr);
    return st;
}
