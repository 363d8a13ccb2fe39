/*
 * host_build.c - the CUDA backend's host mode: a candidate with its own host code,
 * `extern "C" int kforge_launch(<the task's arguments as device pointers>, cudaStream_t)`,
 * built with nvcc into a shared object through the compiler driver the C backend uses
 * (../driver.h: a sandboxed child in its own session, rlimits, Landlock: the toolchain
 * read-only, its private build directory read-write).
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
#include "../driver.h"
#include "host.h"

#include <ctype.h>
#include <elf.h>
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

static const char *const nvflags[] = {"-shared",   "-Xcompiler", "-fPIC",   "-O3",      "-std=c++17",
                                      "-lineinfo", "-Xlinker",   "-z,defs", "-Xlinker", "-z,now"};

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
static int parse_links(const char *text, size_t len, const char **lflags, int *nl, char *libs, size_t libsz,
                       char *err, size_t n) {
    const char *end = text + len;
    int line = 1;
    *nl = 0;
    libs[0] = 0;
    for (const char *p = text; p < end; line++) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol) eol = end;
        const char *rest;
        if (directive(p, (size_t)(eol - p), "kforge:launch", NULL)) {
            snprintf(err, n,
                     "%d: kforge:launch in a host-mode file (kforge_launch makes its "
                     "own launches)",
                     line);
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
                snprintf(err, n, "%d: kforge:link '%.*s' is not allowed (allowed: cublas, cublasLt, nvrtc)",
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
        kf_buf_printf(&b, "%s%s%s", a->is_buffer && a->io == KF_IO_IN ? "const " : "", ctype(a->type),
                      a->is_buffer ? " *, " : ", ");
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
    return kf_driver_which("nvcc", NULL, out);
}

int kf__cuda_have_nvcc(char *why, size_t n) {
    char p[PATH_MAX];
    if (!find_nvcc(p)) return 1;
    snprintf(why, n, "no nvcc (set KFORGE_NVCC or CUDA_HOME, or install the CUDA toolkit)");
    return 0;
}

static int is_runtime_lib(const char *name) {
    static const char *const rt[] = {"libc.so",       "libm.so",  "libstdc++.so", "libgcc_s.so", "ld-linux",
                                     "libpthread.so", "libdl.so", "librt.so",     NULL};
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

kf_status kf__cuda_host_compile(kf_ctx *ctx, const kf_task *t, const char *path, const char *text, size_t len,
                                const kf_param *params, int nparams, const char *workdir, double timeout_s,
                                kf_build *out) {
    char err[512], links[128];
    const char *lflags[4];
    int nl = 0;
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    out->host = 1;
    if (parse_links(text, len, lflags, &nl, links, sizeof links, err, sizeof err)) {
        out->ok = 0;
        out->reason = KF_REASON_COMPILE_ERROR;
        out->message = kf__asprintf("%s:%s%s", path, isdigit((unsigned char)err[0]) ? "" : " ", err);
        out->log = kf__strdup("");
        return KF_OK;
    }
    char nvcc[PATH_MAX];
    if (find_nvcc(nvcc))
        return kf__err(ctx, KF_EBACKEND,
                       "CUDA host mode needs nvcc: set KFORGE_NVCC or CUDA_HOME, "
                       "or install the CUDA toolkit (kernel mode needs only NVRTC)");
    /* the toolkit: nvcc lives in <top>/bin */
    char top[PATH_MAX];
    kf_driver_prefix(nvcc, top, sizeof top);
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
    char key[65];
    const void *parts[] = {text, "\0", hdr, "\0", fb.p};
    size_t lens[] = {len, 1, strlen(hdr), 1, fb.len};
    kf__sha256_hex(parts, lens, 5, key);
    kf_buf_free(&fb);
    char *cached = kf_driver_cache_path("cudahost", key, ".kfh");
    char *cached_log = kf_driver_cache_path("cudahost", key, ".log");
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

    /* a plain file name in the messages: "fast.cu(12): error: ..." */
    char src[256];
    size_t k = 0;
    for (const char *c = base; *c && k + 4 < sizeof src; c++)
        src[k++] = (isalnum((unsigned char)*c) || *c == '.' || *c == '_' || *c == '-') ? *c : '_';
    src[k] = 0;
    if (k < 4 || strcmp(src + k - 3, ".cu")) snprintf(src + k, sizeof src - k, ".cu");
    if (src[0] == '.' || src[0] == '-') src[0] = '_';
    kf_driver_dir d;
    if ((st = kf_driver_prepare(ctx, workdir, src, text, len, hdr, NULL, &d))) goto done;
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
    argv[ac++] = d.soname;
    argv[ac++] = src;
    for (int i = 0; i < nl; i++) argv[ac++] = (char *)lflags[i];
    argv[ac] = NULL;
    sargv[sc++] = "--cuda";
    sargv[sc++] = "-include";
    sargv[sc++] = d.hname;
    sargv[sc++] = "-o";
    sargv[sc++] = "/dev/null";
    sargv[sc++] = src;
    sargv[sc] = NULL;
    /* cicc and ptxas need more than cc: 8 GiB of address space; an object pass past its
     * deadline or killed says so, whatever the signature pass found */
    static const char *const ro[] = {"/dev/urandom"};
    kf_driver_job job = {.argv = argv,
                         .sargv = sargv,
                         .prefix = top,
                         .ro = ro,
                         .nro = 1,
                         .lim = {timeout_s + 1, 8ull << 30, 512u << 20, 256},
                         .timeout_s = timeout_s,
                         .log_cap = LOG_CAP,
                         .deadline_first = 1};
    kf_driver_out r;
    st = kf_driver_run(ctx, &d, &job, &r);
    out->seconds = r.seconds;
    if (st) goto done;
    int code = r.code;
    out->log = r.log.p ? r.log.p : kf__strdup("");
    int defined = code == 0 ? kf__so_defines(d.so, "kforge_launch") : -1;
    if (code == 0 && defined == 1) {
        char *data = NULL;
        size_t dl = 0;
        if (kf__read_file(d.so, 1u << 30, &data, &dl)) {
            st = kf__err(ctx, KF_EIO, "reading %s: %s", d.so, strerror(errno));
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
        char local[PATH_MAX + 64];
        snprintf(local, sizeof local, "%s/%.16s.kfh", workdir, key);
        st = kf_driver_keep(ctx, &cached, cached_log, out->log, blob, dl + 8, local, &out->so_path);
        free(blob);
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
        /* cudafe "x.cu(12): error: ...", gcc "x.cu:12:3: error:", or the linker's
         * "undefined reference": whichever comes first */
        const char *at = strstr(out->log, "error"), *u = strstr(out->log, "undefined reference");
        if (u && (!at || u < at)) at = u;
        out->message = kf_driver_line(out->log, at, "nvcc failed");
    }
done:
    for (int i = 0; i < KF_MAX_PARAMS; i++) free(defs[i]);
    free(cached);
    free(cached_log);
    free(hdr);
    return st;
}
