/*
 * cuda_backend.c - the CUDA backend, kernel mode: a candidate is CUDA C with
 * extern "C" __global__ kernels and kforge:launch directives; NVRTC compiles it for the
 * device's architecture into a cubin, which a GPU worker loads with the driver API.
 *
 * The artifact is one file: "KFCUBIN1", the number of launched kernels, their names
 * (NUL-terminated), the cubin's size and the cubin. Builds are cached by SHA-256 of the
 * text, the prelude, the options, the NVRTC version and the architecture (docs/checker.md
 * #22). NVRTC runs in a kforge-worker of its own (nvrtc_child.c) under the compile
 * deadline, rlimits and Landlock; the coordinator loads NVRTC only to read its version.
 * Host mode is host_build.c; how builds run (the rest of the vtable) is run.c.
 */
#define _GNU_SOURCE
#include "../backend.h"
#include "cuda_api.h"
#include "host.h"
#include "run.h"
#include "../driver.h"

#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LOG_CAP (64u << 10)

static const char prelude[] =
#include "prelude.inc"
    ;

/* A key for "the same GPUs under the same driver": the kernel driver's version line and
 * every GPU's /proc information (model, bus location, ...). 0 when there is no
 * /proc/driver/nvidia (then the driver is asked every time). */
#define KF_CU_MAXKEY 17

/* A /proc file (its size reads as 0): up to 16 KiB, NUL-terminated. NULL if absent. */
static char *read_proc(const char *path, size_t *len) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return NULL;
    char *b = malloc(16384 + 1);
    size_t got = 0;
    while (b && got < 16384) {
        ssize_t r = read(fd, b + got, 16384 - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += (size_t)r;
    }
    close(fd);
    if (b) b[got] = 0;
    *len = got;
    return b;
}

static int cmp_name(const void *a, const void *b) { return strcmp(a, b); }

/* A key for "the same GPUs under the same driver": the kernel driver's version line and
 * every GPU's /proc information (model, bus location, ...). 0 when there is no
 * /proc/driver/nvidia (then the driver is asked every time). */
static int gpu_key(char key[65]) {
    char *txt[KF_CU_MAXKEY] = {0};
    size_t len[KF_CU_MAXKEY] = {0};
    const void *parts[KF_CU_MAXKEY];
    int np = 0;
    const char *root = getenv("KFORGE_NVIDIA_PROC"); /* tests: a stand-in directory */
    if (!root || !*root) root = "/proc/driver/nvidia";
    char p[600];
    snprintf(p, sizeof p, "%s/version", root);
    if (!(txt[np] = read_proc(p, &len[np]))) return 0;
    np++;
    snprintf(p, sizeof p, "%s/gpus", root);
    DIR *d = opendir(p);
    struct dirent *e;
    char names[KF_CU_MAXKEY][256];
    int nn = 0;
    while (d && (e = readdir(d)) && nn < KF_CU_MAXKEY - 1)
        if (e->d_name[0] != '.') snprintf(names[nn++], sizeof names[0], "%s", e->d_name);
    if (d) closedir(d);
    qsort(names, (size_t)nn, sizeof names[0], cmp_name);
    for (int i = 0; i < nn; i++) {
        snprintf(p, sizeof p, "%s/gpus/%s/information", root, names[i]);
        if ((txt[np] = read_proc(p, &len[np]))) np++;
    }
    for (int i = 0; i < np; i++) parts[i] = txt[i];
    int ok = nn > 0 && kf__sha256_hex(parts, len, np, key) == 0;
    for (int i = 0; i < np; i++) free(txt[i]);
    return ok;
}

/* The architecture to compile for: KFORGE_CUDA_ARCH, else the first device's compute
 * capability, else sm_90 (a machine without a driver compiles for the H200). The
 * driver's answer is cached under a key of the GPUs and the driver (gpu_key): asking
 * initialises the driver in this process, 0.1-0.3 s of every check on an H200. */
static void pick_arch_locked(char *out, size_t n);

/* memo is shared by the threads of kforge run --jobs N: one asks at a time */
static void pick_arch(char *out, size_t n) {
    static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&mu);
    pick_arch_locked(out, n);
    pthread_mutex_unlock(&mu);
}

static void pick_arch_locked(char *out, size_t n) {
    const char *env = getenv("KFORGE_CUDA_ARCH");
    if (env && *env) {
        snprintf(out, n, "%s", env);
        return;
    }
    static char memo[32];
    if (memo[0]) {
        snprintf(out, n, "%s", memo);
        return;
    }
    char key[65], dir[4096], path[4300];
    int keyed = gpu_key(key);
    if (keyed) {
        kf__cache_dir(dir, sizeof dir);
        snprintf(path, sizeof path, "%s/cuda/arch-%.32s", dir, key);
        char *txt = NULL;
        size_t len = 0;
        if (!kf__read_file(path, 64, &txt, &len) && len > 3 && len < sizeof memo && !strncmp(txt, "sm_", 3) &&
            isdigit((unsigned char)txt[3])) {
            snprintf(memo, sizeof memo, "%.*s", (int)strcspn(txt, "\n"), txt);
            free(txt);
            snprintf(out, n, "%s", memo);
            return;
        }
        free(txt);
    }
    char err[256];
    const kf_cu_api *cu = kf_cu_load(err, sizeof err);
    CUdevice dev;
    int maj = 0, min = 0;
    if (cu && cu->Init(0) == 0 && cu->DeviceGet(&dev, 0) == 0 &&
        cu->DeviceGetAttribute(&maj, KF_CU_ATTR_CC_MAJOR, dev) == 0 &&
        cu->DeviceGetAttribute(&min, KF_CU_ATTR_CC_MINOR, dev) == 0 && maj > 0) {
        snprintf(memo, sizeof memo, "sm_%d%d", maj, min);
        snprintf(out, n, "%s", memo);
        if (keyed) { /* written whole or not at all */
            char tmp[4400], sub[4200];
            snprintf(sub, sizeof sub, "%s/cuda", dir);
            snprintf(tmp, sizeof tmp, "%s.%d.tmp", path, (int)gettid());
            FILE *f = kf__mkdirs(sub) ? NULL : fopen(tmp, "w");
            if (f) {
                int bad = fprintf(f, "%s\n", memo) < 0;
                if (fclose(f) || bad || rename(tmp, path)) unlink(tmp);
            }
        }
        return;
    }
    snprintf(out, n, "sm_90");
}

static int is_ident(const char *s, size_t n) {
    if (!n || !(isalpha((unsigned char)s[0]) || s[0] == '_')) return 0;
    for (size_t i = 1; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && s[i] != '_') return 0;
    return 1;
}

/* Parse "(e1,e2,e3)" (1 to 3 comma-separated expressions at depth 0) starting at *p. */
static int parse_tuple(const char **pp, kf_expr **dim, const char *const *names, int nnames, char *err,
                       size_t n) {
    const char *p = *pp;
    if (*p != '(') {
        snprintf(err, n, "expected '(' after '='");
        return -1;
    }
    p++;
    for (int k = 0; k < 3; k++) {
        const char *s = p;
        int depth = 0;
        while (*p && *p != '\n' && !(depth == 0 && (*p == ',' || *p == ')'))) {
            if (*p == '(') depth++;
            if (*p == ')') depth--;
            p++;
        }
        if (!*p || *p == '\n') {
            snprintf(err, n, "unclosed '('");
            return -1;
        }
        char *txt = strndup(s, (size_t)(p - s));
        char e[256];
        dim[k] = txt ? kf_expr_parse(txt, e, sizeof e) : NULL;
        if (!dim[k] || kf_expr_check_names(dim[k], names, nnames, e, sizeof e)) {
            snprintf(err, n, "'%s': %s", txt ? txt : "", e);
            free(txt);
            return -1;
        }
        free(txt);
        if (*p == ')') {
            *pp = p + 1;
            return 0;
        }
        p++; /* ',' */
    }
    snprintf(err, n, "more than 3 dimensions");
    return -1;
}

/* Every "kforge:launch" line of text into out. 0, or -1 with "N: ..." (its line) in err. */
static int parse_launches(const kf_task *t, const char *text, size_t len, const kf_param *params, int nparams,
                          kf_build *out, char *err, size_t n) {
    const char *names[64];
    int nn = 0;
    for (int i = 0; i < t->nsizes && nn < 64; i++) names[nn++] = t->size_names[i];
    for (int i = 0; i < nparams && nn < 64; i++)
        if (params[i].is_int) names[nn++] = params[i].name;
    const char *end = text + len;
    int line = 1;
    for (const char *p = text; p < end; line++) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol) eol = end;
        const char *d = memmem(p, (size_t)(eol - p), "kforge:launch", 13);
        if (d) {
            if (out->nlaunch == KF_MAX_LAUNCH) {
                snprintf(err, n, "%d: more than %d kforge:launch lines", line, KF_MAX_LAUNCH);
                return -1;
            }
            kf_launch *L = &out->launch[out->nlaunch++];
            L->line = line;
            L->kernel = -1;
            char *buf = strndup(d + 13, (size_t)(eol - d - 13));
            if (!buf) return -1;
            const char *q = buf;
            char e[300] = "";
            int seen[4] = {0, 0, 0, 0};
            while (!e[0]) {
                while (*q == ' ' || *q == '\t') q++;
                if (!*q || (q[0] == '*' && q[1] == '/')) break;
                const char *k = q;
                while (*q && *q != '=' && *q != ' ') q++;
                size_t kl = (size_t)(q - k);
                if (*q != '=') {
                    snprintf(e, sizeof e, "expected key=value, got '%.*s'", (int)kl, k);
                    break;
                }
                q++;
                if (kl == 6 && !strncmp(k, "kernel", 6)) {
                    const char *v = q;
                    while (*q && !isspace((unsigned char)*q) && !(q[0] == '*' && q[1] == '/')) q++;
                    if (!is_ident(v, (size_t)(q - v))) {
                        snprintf(e, sizeof e, "kernel=%.*s is not a C identifier", (int)(q - v), v);
                        break;
                    }
                    int ki = -1;
                    for (int j = 0; j < out->nkernels; j++)
                        if (strlen(out->kernels[j].name) == (size_t)(q - v) &&
                            !strncmp(out->kernels[j].name, v, (size_t)(q - v)))
                            ki = j;
                    if (ki < 0) {
                        ki = out->nkernels++;
                        out->kernels[ki].name = strndup(v, (size_t)(q - v));
                        out->kernels[ki].regs = out->kernels[ki].spill_stores = -1;
                        out->kernels[ki].spill_loads = out->kernels[ki].smem_static = -1;
                        out->kernels[ki].stack = -1;
                    }
                    L->kernel = ki;
                    seen[0] = 1;
                } else if ((kl == 4 && !strncmp(k, "grid", 4)) || (kl == 5 && !strncmp(k, "block", 5))) {
                    int off = k[0] == 'g' ? 0 : 3;
                    if (seen[off ? 2 : 1]++) {
                        snprintf(e, sizeof e, "%.*s given twice", (int)kl, k);
                        break;
                    }
                    char pe[256];
                    if (parse_tuple(&q, L->dim + off, names, nn, pe, sizeof pe))
                        snprintf(e, sizeof e, "%.*s: %s", (int)kl, k, pe);
                } else if (kl == 4 && !strncmp(k, "smem", 4)) {
                    const char *v = q;
                    while (*q && !isspace((unsigned char)*q) && !(q[0] == '*' && q[1] == '/')) q++;
                    char *txt = strndup(v, (size_t)(q - v)), pe[256];
                    L->dim[6] = txt ? kf_expr_parse(txt, pe, sizeof pe) : NULL;
                    if (!L->dim[6] || kf_expr_check_names(L->dim[6], names, nn, pe, sizeof pe))
                        snprintf(e, sizeof e, "smem=%s: %s", txt ? txt : "", pe);
                    free(txt);
                    seen[3] = 1;
                } else {
                    snprintf(e, sizeof e, "unknown key '%.*s' (kernel, grid, block, smem)", (int)kl, k);
                }
            }
            free(buf);
            if (!e[0] && !seen[0]) snprintf(e, sizeof e, "kernel= is missing");
            if (!e[0] && (!seen[1] || !seen[2])) snprintf(e, sizeof e, "grid= and block= are required");
            if (e[0]) {
                snprintf(err, n, "%d: kforge:launch: %s", line, e);
                return -1;
            }
        }
        p = eol + 1;
    }
    if (!out->nlaunch) {
        snprintf(err, n,
                 "no kforge:launch line: a CUDA kernel-mode file names its launches, e.g. "
                 "// kforge:launch kernel=NAME grid=((n+255)/256) block=(256)");
        return -1;
    }
    for (int i = 0; i < nparams && out->nparams < KF_MAX_PARAMS; i++)
        if (params[i].is_int) {
            out->pnames[out->nparams] = kf__strdup(params[i].name);
            out->pvals[out->nparams++] = params[i].ival;
        }
    return 0;
}

/* Registers, spills, static shared memory and stack per kernel from ptxas -v. */
static void parse_ptxas(const char *log, kf_build *b) {
    const char *p = log;
    kf_kernel_info *cur = NULL;
    while (p && *p) {
        const char *eol = strchr(p, '\n');
        size_t ln = eol ? (size_t)(eol - p) : strlen(p);
        char line[1024];
        snprintf(line, sizeof line, "%.*s", (int)(ln < 1023 ? ln : 1023), p);
        char *f = strstr(line, "Compiling entry function '");
        if (f) {
            f += 26;
            char *q = strchr(f, '\'');
            if (q) *q = 0;
            cur = NULL;
            for (int i = 0; i < b->nkernels; i++)
                if (!strcmp(b->kernels[i].name, f)) cur = &b->kernels[i];
        } else if (cur) {
            char *s;
            /* "ptxas         .     0 bytes stack frame, 0 bytes spill stores, ..." */
            const char *dot = strstr(line, "bytes stack frame") ? strchr(line, '.') : NULL;
            int st = 0, ss = 0, sl = 0;
            if (dot && sscanf(dot + 1, " %d bytes stack frame, %d bytes spill stores, %d bytes spill loads",
                              &st, &ss, &sl) == 3)
                cur->stack = st, cur->spill_stores = ss, cur->spill_loads = sl;
            if ((s = strstr(line, "Used "))) {
                int r = 0;
                if (sscanf(s, "Used %d registers", &r) == 1) cur->regs = r;
                char *sm = strstr(line, "bytes smem");
                if (sm) {
                    char *q = sm;
                    while (q > line && q[-1] == ' ') q--;
                    while (q > line && isdigit((unsigned char)q[-1])) q--;
                    cur->smem_static = (int)strtol(q, NULL, 10);
                } else {
                    cur->smem_static = 0;
                }
            }
        }
        p = eol ? eol + 1 : NULL;
    }
}

/* 1 when name (the text between '<' and '>', nl bytes) names a file inside one of the
 * toolkit's include trees (roots, real paths): a relative path of plain segments (no
 * "..", no hidden segment, no absolute path), whose real path still lies inside the
 * tree it was found in (a symbolic link out of the toolkit does not count). */
static int toolkit_header(const char *name, size_t nl, char roots[][PATH_MAX], int nroots) {
    if (!nl || nl > 200 || name[0] == '/') return 0;
    for (size_t i = 0; i < nl; i++) {
        char c = name[i];
        if (!isalnum((unsigned char)c) && c != '_' && c != '-' && c != '.' && c != '/' && c != '+') return 0;
        /* a segment may not start with '.' ("..", ".", hidden files) or be empty */
        if ((i == 0 || name[i - 1] == '/') && (c == '.' || c == '/')) return 0;
    }
    if (name[nl - 1] == '/') return 0;
    for (int r = 0; r < nroots; r++) {
        char path[2 * PATH_MAX], real[PATH_MAX];
        snprintf(path, sizeof path, "%s/%.*s", roots[r], (int)nl, name);
        size_t rl = strlen(roots[r]);
        struct stat sb;
        if (realpath(path, real) && !strncmp(real, roots[r], rl) && real[rl] == '/' && !stat(real, &sb) &&
            S_ISREG(sb.st_mode))
            return 1;
    }
    return 0;
}

/* The include trees of the toolkit NVRTC compiles with: its include directory and, when
 * present, include/cccl (CUDA 13 keeps libcu++, CUB and Thrust there, and
 * <cooperative_groups.h> includes <cuda/std/...> from it). Real paths into roots;
 * returns how many. */
static int toolkit_includes(const kf_nvrtc_api *rtc, char roots[][PATH_MAX]) {
    int n = 0;
    if (!rtc->include[0] || !realpath(rtc->include, roots[0])) return 0;
    n = 1;
    char cccl[PATH_MAX + 8];
    snprintf(cccl, sizeof cccl, "%s/cccl", roots[0]);
    struct stat sb;
    if (!stat(cccl, &sb) && S_ISDIR(sb.st_mode) && realpath(cccl, roots[1])) n = 2;
    return n;
}

/* NVRTC reads the files a text includes and quotes them in its log (#include
 * "/etc/shadow"), and a device file could hang it (#include "/dev/zero"). Its child's
 * Landlock rules already confine it to the system and the toolkit; as a second layer,
 * kernel mode allows #include only of headers inside the toolkit's include trees
 * (roots), named in angle brackets: <cuda_fp16.h>, <cooperative_groups.h>,
 * <cuda/barrier>, <cub/cub.cuh>... 0, or -1 with err. */
static int check_includes(const char *text, size_t len, char roots[][PATH_MAX], int nroots, char *err,
                          size_t n) {
    /* logical lines: backslash-newline joins lines, as the preprocessor does */
    char *buf = malloc(len + 1);
    if (!buf) return -1;
    size_t m = 0;
    for (size_t i = 0; i < len; i++) {
        if (text[i] == '\\' && i + 1 < len && text[i + 1] == '\n') {
            i++;
            continue;
        }
        if (text[i] == '\\' && i + 2 < len && text[i + 1] == '\r' && text[i + 2] == '\n') {
            i += 2;
            continue;
        }
        buf[m++] = text[i];
    }
    buf[m] = 0;
    int line = 1, bad = 0;
    for (char *p = buf; *p && !bad; line++) {
        char *eol = strchr(p, '\n');
        if (eol) *eol = 0;
        char *q = p;
        while (*q == ' ' || *q == '\t') q++;
        int hash = *q == '#' ? 1 : (q[0] == '%' && q[1] == ':') ? 2 : 0;
        if (hash) {
            q += hash;
            while (*q == ' ' || *q == '\t') q++;
            if (!strncmp(q, "include", 7) || !strncmp(q, "import", 6) || !strncmp(q, "embed", 5)) {
                char *a = q + (q[1] == 'n' ? 7 : q[1] == 'm' && q[2] == 'p' ? 6 : 5);
                while (*a == ' ' || *a == '\t') a++;
                int ok = 0;
                if (*a == '<' && !strncmp(q, "include", 7)) {
                    char *z = strchr(a, '>');
                    ok = z && toolkit_header(a + 1, (size_t)(z - a - 1), roots, nroots);
                }
                if (!ok) {
                    snprintf(err, n,
                             "%d: kernel mode allows #include only of the CUDA toolkit's "
                             "headers by name, in angle brackets (<cuda_fp16.h>, <cooperative_groups.h>, "
                             "<cuda/barrier>, ...; found under %s): %.80s",
                             line, nroots ? roots[0] : "no toolkit include directory", p);
                    bad = 1;
                }
            }
        }
        p = eol ? eol + 1 : p + strlen(p);
    }
    free(buf);
    return bad ? -1 : 0;
}

/* Compile src in a kforge-worker of its own (nvrtc_child.c) under a wall deadline,
 * rlimits and Landlock: NVRTC reads only the toolkit, the system libraries and its
 * private directory, and a text that makes it run too long is killed with its process
 * group. The fresh process costs about 20 ms per compile over NVRTC in-process
 * (BENCHMARKS.md). *built = 1 with *cubin (caller frees) and out->log set; *built = 0
 * with out->reason/message/log for a compile error or a compile past its deadline.
 * Another status: the child could not run at all (detail on ctx). */
static kf_status nvrtc_child(kf_ctx *ctx, const kf_nvrtc_api *rtc, const char *src, const char *name,
                             char **opts, int no, const char *workdir, double timeout_s, kf_build *out,
                             char **cubin, size_t *cs, int *built) {
    *built = 0;
    const char *wpath = kf_sandbox_worker_path(ctx);
    if (!wpath) return KF_EINTERNAL;
    char bdir[PATH_MAX], p_src[PATH_MAX + 16], p_cubin[PATH_MAX + 16], p_log[PATH_MAX + 16];
    snprintf(bdir, sizeof bdir, "%s/nvrtc-XXXXXX", workdir);
    if (!mkdtemp(bdir)) return kf__err(ctx, KF_EIO, "mkdtemp in %s: %s", workdir, strerror(errno));
    snprintf(p_src, sizeof p_src, "%s/src.cu", bdir);
    snprintf(p_cubin, sizeof p_cubin, "%s/out.cubin", bdir);
    snprintf(p_log, sizeof p_log, "%s/out.log", bdir);
    kf_status st = KF_OK;
    kf_buf clog;
    kf_buf_init(&clog, LOG_CAP);
    char *argv[8 + 32 + KF_MAX_PARAMS];
    int ac = 0;
    argv[ac++] = (char *)wpath;
    argv[ac++] = "--nvrtc";
    argv[ac++] = "src.cu";
    argv[ac++] = (char *)name;
    argv[ac++] = "out.cubin";
    argv[ac++] = "out.log";
    for (int i = 0; i < no; i++) argv[ac++] = opts[i];
    argv[ac] = NULL;
    char libenv[600], tmpenv[PATH_MAX + 16], wdir[PATH_MAX], libroot[PATH_MAX];
    snprintf(libenv, sizeof libenv, "KFORGE_NVRTC=%s", rtc->path);
    snprintf(tmpenv, sizeof tmpenv, "TMPDIR=%s", bdir);
    char *env[] = {libenv, tmpenv, "LANG=C", NULL};
    /* the worker's directory (to exec it), and the toolkit the library lives in (two
     * levels up: lib64/ or targets/<arch>/lib/), which NVRTC reads builtins from */
    snprintf(wdir, sizeof wdir, "%s", wpath);
    snprintf(libroot, sizeof libroot, "%s", rtc->path);
    for (int up = 0; up < 2; up++) {
        char *slash = strrchr(libroot, '/');
        if (slash && slash != libroot) *slash = 0;
    }
    if (strrchr(wdir, '/') && strrchr(wdir, '/') != wdir) *strrchr(wdir, '/') = 0;
    const char *ro[] = {"/usr",
                        "/lib",
                        "/lib64",
                        "/lib32",
                        "/etc/ld.so.cache",
                        "/dev/null",
                        wdir,
                        libroot,
                        rtc->include[0] ? rtc->include : "/usr"};
    const char *rw[] = {bdir};
    kf_limits lim = {timeout_s + 1, 16ull << 30, 256u << 20, 256};
    int code = 0;
    if (kf_driver_write(p_src, src, strlen(src))) {
        st = kf__err(ctx, KF_EIO, "writing %s: %s", p_src, strerror(errno));
        goto out;
    }
    uint64_t t0 = kf__now_ns();
    st = kf_sandbox_exec(ctx, argv, bdir, env, &lim, ro, (int)(sizeof ro / sizeof ro[0]), rw, 1, timeout_s,
                         &clog, &code);
    out->seconds = (double)(kf__now_ns() - t0) / 1e9;
    if (st) goto out;
    if (code == 0 || code == 1) {
        char *log = NULL;
        size_t n = 0;
        if (kf__read_file(p_log, 64u << 20, &log, &n)) {
            st = kf__err(ctx, KF_EBACKEND, "the NVRTC child wrote no log: %s", strerror(errno));
            goto out;
        }
        if (strlen(log) > LOG_CAP) log[LOG_CAP] = 0;
        out->log = log;
    }
    if (code == 0) {
        if (kf__read_file(p_cubin, 1u << 30, cubin, cs)) {
            st = kf__err(ctx, KF_EBACKEND, "the NVRTC child wrote no cubin: %s", strerror(errno));
            goto out;
        }
        *built = 1;
        goto out;
    }
    out->ok = 0;
    out->reason = KF_REASON_COMPILE_ERROR;
    if (code == 1) {
        /* the first error line of an NVRTC log, "file(12): error: ..." */
        out->message = kf_driver_line(out->log, out->log ? strstr(out->log, "error") : NULL, "NVRTC failed");
    } else if (code == -1) {
        out->message = kf__asprintf("NVRTC ran past its %g s deadline (--compile-timeout)", timeout_s);
    } else if (code >= 128) {
        out->message = kf__asprintf("NVRTC was killed by signal %d (memory or CPU limit)", code - 128);
    } else {
        st = kf__err(ctx, KF_EBACKEND, "the NVRTC compile child failed (exit %d): %s", code,
                     clog.p ? clog.p : "");
        goto out;
    }
    if (!out->log) out->log = kf__strdup(clog.p ? clog.p : "");
out:
    kf_buf_free(&clog);
    kf__rmtree(bdir);
    return st;
}

static kf_status cuda_compile(kf_backend *be, kf_ctx *ctx, const kf_task *t, const char *path,
                              const char *text, size_t len, const kf_param *params, int nparams,
                              const char *workdir, double timeout_s, kf_build *out) {
    (void)be;
    char err[1024];
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    if (kf__cuda_host_mode(t, text, len)) {
        pick_arch(out->arch, sizeof out->arch);
        return kf__cuda_host_compile(ctx, t, path, text, len, params, nparams, workdir, timeout_s, out);
    }
    const kf_nvrtc_api *rtc = kf_nvrtc_load(err, sizeof err);
    if (!rtc) return kf__err(ctx, KF_EBACKEND, "the cuda backend needs NVRTC: %s", err);
    char roots[2][PATH_MAX];
    int nroots = toolkit_includes(rtc, roots);
    if (check_includes(text, len, roots, nroots, err, sizeof err) ||
        parse_launches(t, text, len, params, nparams, out, err, sizeof err)) {
        out->ok = 0;
        out->reason = KF_REASON_COMPILE_ERROR;
        out->message = kf__asprintf("%s:%s%s", path, isdigit((unsigned char)err[0]) ? "" : " ", err);
        out->log = kf__strdup("");
        return KF_OK;
    }
    pick_arch(out->arch, sizeof out->arch);
    int vmaj = 0, vmin = 0;
    rtc->Version(&vmaj, &vmin);

    /* options */
    char *opts[32 + KF_MAX_PARAMS];
    int no = 0;
    opts[no++] = kf__asprintf("--gpu-architecture=%s", out->arch);
    opts[no++] = kf__strdup("-default-device");
    opts[no++] = kf__strdup("-std=c++17");
    opts[no++] = kf__strdup("-lineinfo");
    opts[no++] = kf__strdup("--ptxas-options=-v");
    /* the toolkit's include trees: include/ and, on CUDA 13, include/cccl */
    for (int i = 0; i < nroots; i++) opts[no++] = kf__asprintf("-I%s", roots[i]);
    for (int i = 0; i < nparams && i < KF_MAX_PARAMS; i++)
        opts[no++] = kf__asprintf("-D%s=%s", params[i].name, params[i].selected);
    kf_buf ob;
    kf_buf_init(&ob, 1u << 20);
    for (int i = 0; i < no; i++) kf_buf_printf(&ob, "%s ", opts[i] ? opts[i] : "");
    kf_buf_printf(&ob, "nvrtc %d.%d", vmaj, vmin);
    char key[65];
    const void *parts[] = {text, "\0", prelude, "\0", ob.p ? ob.p : ""};
    size_t lens[] = {len, 1, strlen(prelude), 1, ob.p ? ob.len : 0};
    kf__sha256_hex(parts, lens, 5, key);
    kf_buf_free(&ob);
    char *cached = kf_driver_cache_path("cuda", key, ".kfc");
    char *cached_log = kf_driver_cache_path("cuda", key, ".log");
    kf_status st = KF_OK;
    char *src = NULL, *log = NULL, *cubin = NULL;
    size_t loglen = 0, cs = 0;
    if (cached && cached_log && !access(cached, R_OK) && !kf__read_file(cached_log, LOG_CAP, &log, &loglen)) {
        out->ok = 1;
        out->cached = 1;
        out->so_path = cached;
        cached = NULL;
        out->log = log;
        log = NULL;
        parse_ptxas(out->log, out);
        goto done;
    }

    src = kf__asprintf("%s#line 1 \"%s\"\n%.*s", prelude, base, (int)len, text);
    if (!src) {
        st = kf__err(ctx, KF_ENOMEM, "out of memory");
        goto done;
    }
    int built = 0;
    if ((st = nvrtc_child(ctx, rtc, src, base, opts, no, workdir, timeout_s, out, &cubin, &cs, &built)) ||
        !built)
        goto done;
    parse_ptxas(out->log, out); /* the resource report, when ptxas printed one */
    uint32_t nk = (uint32_t)out->nkernels, csz = (uint32_t)cs;
    /* every launched kernel is an entry of the cubin: its code section ".text.NAME"
     * (the ptxas report is not always there to say so) */
    for (int i = 0; i < out->nkernels; i++) {
        char sec[300];
        int sl = snprintf(sec, sizeof sec, ".text.%s", out->kernels[i].name);
        if (!memmem(cubin, cs, sec, (size_t)sl + 1)) {
            out->ok = 0;
            out->reason = KF_REASON_MISSING_ENTRY;
            int at = 0;
            for (int l = 0; l < out->nlaunch && !at; l++)
                if (out->launch[l].kernel == i) at = out->launch[l].line;
            out->message = kf__asprintf("%s:%d: kforge:launch names kernel %s, which is not an "
                                        "extern \"C\" __global__ function of the file",
                                        path, at, out->kernels[i].name);
            goto done;
        }
    }
    size_t hdr = 8 + 4;
    for (int i = 0; i < out->nkernels; i++) hdr += strlen(out->kernels[i].name) + 1;
    hdr += 4;
    unsigned char *blob = malloc(hdr + cs);
    if (!blob) {
        st = kf__err(ctx, KF_ENOMEM, "out of memory");
        goto done;
    }
    size_t o = 0;
    memcpy(blob, "KFCUBIN1", 8), o = 8;
    memcpy(blob + o, &nk, 4), o += 4;
    for (int i = 0; i < out->nkernels; i++) {
        size_t l = strlen(out->kernels[i].name) + 1;
        memcpy(blob + o, out->kernels[i].name, l), o += l;
    }
    memcpy(blob + o, &csz, 4), o += 4;
    memcpy(blob + o, cubin, cs), o += cs;
    char local[PATH_MAX + 64];
    snprintf(local, sizeof local, "%s/%.16s.kfc", workdir, key);
    st = kf_driver_keep(ctx, &cached, cached_log, out->log, blob, o, local, &out->so_path);
    free(blob);
    if (!st) out->ok = 1;
done:
    for (int i = 0; i < no; i++) free(opts[i]);
    free(src);
    free(log);
    free(cubin);
    free(cached);
    free(cached_log);
    return st;
}

kf_backend *kf_backend_cuda(void) {
    static kf_backend b = {
        {
            .api_version = KF_BACKEND_API_VERSION,
            .name = "cuda",
            .ext = "cu",
            .reference = "reference.cu",
            .lang = "cuda",
            .caps = KF_BACKEND_DEVICE | KF_BACKEND_HALF | KF_BACKEND_LAUNCH_MODE | KF_BACKEND_SANITIZE,
            .timing_rounds = 60,
            .ceilings_early = 1,
            .compile = cuda_compile,
            .worker_opts = kf__cuda_worker_opts,
            .stage = kf__cuda_stage,
            .clock = kf__cuda_clock,
            .ceilings = kf__cuda_ceilings,
            .roofline = kf__cuda_roofline,
            .plan = kf__cuda_plan,
            .fair = kf__cuda_fair,
            .libraries = kf__cuda_libraries,
            .report_build = kf__cuda_report_build,
            .report_sandbox = kf__cuda_report_sandbox,
            .report_call = kf__cuda_report_call,
            .resources = kf__cuda_resources,
            .describe = kf__cuda_describe,
            .dispatcher = kf__cuda_dispatcher,
        },
        NULL};
    return &b;
}
