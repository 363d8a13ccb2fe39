/*
 * test_cuda.c - the CUDA backend's compile path, for real, on any machine with NVRTC
 * (no GPU needed): every bundled kernel builds, errors carry line numbers, launch
 * directives are parsed and evaluated, builds are cached by text; the 16-bit types
 * round correctly; and a check without a GPU fails clearly. The GPU runs themselves
 * are in test_corpus.c (they skip without a device).
 */
#define _GNU_SOURCE
#include "kft.h"

#include "backend/backend.h"
#include "backend/cuda/cuda_api.h"
#include "backend/cuda/cupti.h"
#include "backend/cuda/cupti_abi.h"
#include "backend/cuda/device.h"
#include "backend/cuda/host.h"
#include "backend/cuda/run.h"
#include "check/verdict.h"
#include "check/check.h"
#include "data/data.h"
#include "task/candidate.h"
#include "task/task.h"
#include "util/util.h"

#include "sandbox/policy.h"
#include "sandbox/sandbox.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static void need_nvrtc(void) {
    char why[512];
    if (!kf_nvrtc_load(why, sizeof why)) kft_skip("needs NVRTC: %s", why);
}

static void need_nvcc(void) {
    char why[512];
    if (!kf__cuda_have_nvcc(why, sizeof why)) kft_skip("needs nvcc (host mode): %s", why);
}

typedef struct {
    kf_build b;
    kf_task *t;
    kf_ctx *ctx;
    char dir[64];
} built;

/* Compile text for the task at rel (or path) with the selections sel, under a compile
 * deadline of timeout_s. */
static void build_text_t(built *o, const char *task_rel, const char *name, const char *text, const char **sel,
                         int nsel, double timeout_s) {
    memset(o, 0, sizeof *o);
    o->ctx = kf_ctx_new();
    o->t = kft_task(o->ctx, task_rel);
    snprintf(o->dir, sizeof o->dir, "/tmp/kft-cuda-XXXXXX");
    CHECK(mkdtemp(o->dir));
    char path[256];
    snprintf(path, sizeof path, "%s/%s", o->dir, name);
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
    kf_candidate *c = NULL;
    CHECKF(kf_candidate_load(o->ctx, o->t, path, sel, nsel, &c) == KF_OK, "%s", kf_errmsg(o->ctx));
    kf_status st = kf_backend_compile(kf_backend_get("cuda"), o->ctx, o->t, path, c->text, c->len, c->params,
                                      c->nparams, o->dir, timeout_s, &o->b);
    CHECKF(st == KF_OK, "%s", kf_errmsg(o->ctx));
    kf_candidate_free(c);
}

static void build_text(built *o, const char *task_rel, const char *name, const char *text, const char **sel,
                       int nsel) {
    build_text_t(o, task_rel, name, text, sel, nsel, 60);
}

static void built_free(built *o) {
    kf_build_free(&o->b);
    kf_task_free(o->t);
    kf_ctx_free(o->ctx);
    kf__rmtree(o->dir);
}

static const char good[] =
    "// kforge:launch kernel=sm grid=(rows) block=(min(256, cols + 31) / 32 * 32) smem=0\n"
    "extern \"C\" __global__ void sm(const float *x, float *y, int64_t rows, int64_t cols) {\n"
    "  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) y[blockIdx.x * cols + c] = x[blockIdx.x * "
    "cols + c];\n"
    "}\n";

/* One build in a child process with env (NAME=VALUE pairs); its target architecture,
 * or "" when the build failed. */
static void arch_in_child(char *const *env, char out[16]) {
    int pfd[2];
    CHECK(pipe(pfd) == 0);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        close(pfd[0]);
        unsetenv("KFORGE_CUDA_ARCH");
        for (int i = 0; env[i]; i++) putenv(env[i]);
        kf_ctx *ctx = kf_ctx_new();
        kf_task *t = kft_task(ctx, "tasks/cuda/softmax");
        char dir[] = "/tmp/kft-arch-XXXXXX";
        char path[128], arch[16] = "";
        if (mkdtemp(dir)) {
            snprintf(path, sizeof path, "%s/c.cu", dir);
            FILE *f = fopen(path, "w");
            fputs(good, f);
            fclose(f);
            kf_candidate *c = NULL;
            kf_build b;
            memset(&b, 0, sizeof b);
            if (kf_candidate_load(ctx, t, path, NULL, 0, &c) == KF_OK &&
                kf_backend_compile(kf_backend_get("cuda"), ctx, t, path, c->text, c->len, c->params,
                                   c->nparams, dir, 60, &b) == KF_OK)
                snprintf(arch, sizeof arch, "%s", b.arch);
            kf_candidate_free(c);
            kf__rmtree(dir);
        }
        if (write(pfd[1], arch, sizeof arch) != (ssize_t)sizeof arch) _exit(1);
        _exit(0);
    }
    close(pfd[1]);
    memset(out, 0, 16);
    CHECK(read(pfd[0], out, 16) == 16);
    close(pfd[0]);
    int status;
    waitpid(pid, &status, 0);
    out[15] = 0;
}

/* The device's architecture is asked of the driver once per set of GPUs and driver
 * (initialising the driver costs a check 0.1-0.3 s), then read from the cache; other
 * GPUs or another driver ask again; without /proc/driver/nvidia nothing is cached. */
static void t_arch_cache(const void *arg) {
    (void)arg;
    need_nvrtc();
    char tmp[] = "/tmp/kft-archc-XXXXXX", p[256], lib[512], proc[300], cache[300];
    CHECK(mkdtemp(tmp));
    snprintf(p, sizeof p, "%s/proc/gpus/0000:01:00.0", tmp);
    CHECK(kf__mkdirs(p) == 0);
    snprintf(p, sizeof p, "%s/proc/version", tmp);
    FILE *f = fopen(p, "w");
    fputs("NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04\n", f);
    fclose(f);
    snprintf(p, sizeof p, "%s/proc/gpus/0000:01:00.0/information", tmp);
    f = fopen(p, "w");
    fputs("Model: \t\t NVIDIA RTX A6000\nBus Location: \t 0000:01:00.0\n", f);
    fclose(f);
    snprintf(lib, sizeof lib, "KFORGE_LIBCUDA=%s", kft_bin("libkft_fakecuda.so"));
    snprintf(proc, sizeof proc, "KFORGE_NVIDIA_PROC=%s/proc", tmp);
    snprintf(cache, sizeof cache, "KFORGE_CACHE_DIR=%s/cache", tmp);
    char a[16];
    char *e1[] = {lib, proc, cache, "FAKECUDA_CC=86", NULL};
    arch_in_child(e1, a);
    CHECKF(!strcmp(a, "sm_86"), "asked the driver: %s", a);
    /* the driver now fails: the cache answers */
    char *e2[] = {lib, proc, cache, "FAKECUDA_CC=75", "FAKECUDA_FAIL=cuInit", NULL};
    arch_in_child(e2, a);
    CHECKF(!strcmp(a, "sm_86"), "from the cache: %s", a);
    /* another GPU in the same slot: asked again */
    f = fopen(p, "w");
    fputs("Model: \t\t Tesla T4\nBus Location: \t 0000:01:00.0\n", f);
    fclose(f);
    char *e3[] = {lib, proc, cache, "FAKECUDA_CC=75", NULL};
    arch_in_child(e3, a);
    CHECKF(!strcmp(a, "sm_75"), "after a GPU change: %s", a);
    /* no /proc/driver/nvidia: no cache, the driver every time (here it fails: sm_90) */
    char noproc[300];
    snprintf(noproc, sizeof noproc, "KFORGE_NVIDIA_PROC=%s/none", tmp);
    char *e4[] = {lib, noproc, cache, "FAKECUDA_CC=75", "FAKECUDA_FAIL=cuInit", NULL};
    arch_in_child(e4, a);
    CHECKF(!strcmp(a, "sm_90"), "without /proc: %s", a);
    kf__rmtree(tmp);
}

/* A GPU worker started before its artifact exists (against the stand-in driver): it
 * waits, takes the artifact at LOAD, loads it and answers calls; one never given its
 * artifact is closed cleanly. The stand-in's events are 25 ms apart, which the
 * coordinator refuses against its own clock: the call reached the launches and back. */
/* A GPU artifact for the stand-in driver: one kernel "k", a cubin it never reads. */
static int fake_artifact(const char *path) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    uint32_t nk = 1, cs = 8;
    fwrite("KFCUBIN1", 1, 8, f);
    fwrite(&nk, 4, 1, f);
    fwrite("k", 1, 2, f);
    fwrite(&cs, 4, 1, f);
    fwrite("notcubin", 1, 8, f);
    return fclose(f);
}

static void t_deferred_worker(const void *arg) {
    (void)arg;
    setenv("KFORGE_LIBCUDA", kft_bin("libkft_fakecuda.so"), 1);
    char dir[] = "/tmp/kft-defer-XXXXXX", art[256];
    CHECK(mkdtemp(dir));
    snprintf(art, sizeof art, "%s/k.kfc", dir);
    CHECK(fake_artifact(art) == 0);
    kf_ctx *ctx = kf_ctx_new();
    kf_worker_opts wo = {10, 1ull << 30, 10, 0, NULL, 1, NULL, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
    kf__cuda_worker_env(&wo);
    wo.start_timeout_s = 30;
    kf_call_result fail;
    kf_worker *w = NULL;
    CHECKF(kf_worker_spawn(ctx, NULL, 1 << 20, &wo, &w, &fail) == KF_OK && w, "%s", kf_errmsg(ctx));
    usleep(100000); /* it sets up meanwhile */
    CHECKF(kf_worker_attach(ctx, &w, art, &fail) == KF_OK, "%s", kf_errmsg(ctx));
    CHECKF(w, "did not load: %s", fail.msg);
    CHECKF(strstr(kf_worker_info(w), "pinned=1"), "%s", kf_worker_info(w));
    kf_msg_run m;
    memset(&m, 0, sizeof m);
    m.nargs = 0;
    m.nlaunch = 1;
    m.kernel[0] = 0;
    for (int d = 0; d < 6; d++) m.dims[0][d] = 1;
    m.span_lo = 0;
    m.span_hi = 4096;
    kf_call_result r;
    kf_worker_call(w, &m, 10, &r);
    CHECKF(r.reason == KF_REASON_TIMING_MISMATCH, "%s: %s", kf_reason_name(r.reason), r.msg);
    kf_worker_close(w);
    /* never attached */
    w = NULL;
    CHECK(kf_worker_spawn(ctx, NULL, 1 << 20, &wo, &w, &fail) == KF_OK && w);
    kf_worker_close(w);
    kf_ctx_free(ctx);
    kf__rmtree(dir);
}

/* A stand-in GPU worker for one fake-artifact kernel, its events 1 us apart (the
 * coordinator then accepts the calls against its own clock). */
static kf_worker *fake_worker(kf_ctx *ctx, const char *dir, const char *settings) {
    char lib[256], envf[256];
    snprintf(lib, sizeof lib, "%s/libcuda.so.1", dir);
    snprintf(envf, sizeof envf, "%s/fakecuda.env", dir);
    CHECK(symlink(kft_bin("libkft_fakecuda.so"), lib) == 0 || errno == EEXIST);
    FILE *f = fopen(envf, "w");
    CHECK(f && fprintf(f, "FAKECUDA_MS=0.001\n%s", settings) > 0 && fclose(f) == 0);
    /* the worker drops to a user of its own: it must read the settings and write the logs */
    CHECK(chmod(dir, 0755) == 0 && chmod(envf, 0644) == 0);
    setenv("KFORGE_LIBCUDA", lib, 1);
    char art[256];
    snprintf(art, sizeof art, "%s/k.kfc", dir);
    CHECK(fake_artifact(art) == 0);
    kf_worker_opts wo = {10, 1ull << 30, 30, 0, NULL, 1, NULL, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
    kf__cuda_worker_env(&wo);
    kf_call_result fail;
    kf_worker *w = NULL;
    CHECKF(kf_worker_spawn(ctx, art, 1 << 20, &wo, &w, &fail) == KF_OK, "%s", kf_errmsg(ctx));
    CHECKF(w, "did not load: %s", fail.msg);
    return w;
}

static void one_launch(kf_msg_run *m, uint32_t smem, uint32_t flags) {
    memset(m, 0, sizeof *m);
    m->nlaunch = 1;
    for (int d = 0; d < 6; d++) m->dims[0][d] = 1;
    m->dims[0][6] = smem;
    m->span_hi = 4096;
    m->flags = flags;
}

/* Dynamic shared memory above 48 KiB: the worker raises the kernel's limit to the
 * launch's smem before launching (the stand-in driver, like the real one, refuses the
 * launch otherwise), once per size; at or under 48 KiB it leaves the default. */
static void t_big_smem(const void *arg) {
    (void)arg;
    char dir[] = "/tmp/kft-smem-XXXXXX", logp[256];
    CHECK(mkdtemp(dir));
    snprintf(logp, sizeof logp, "%s/launches", dir);
    FILE *lf = fopen(logp, "w");
    CHECK(lf && fclose(lf) == 0 && chmod(logp, 0666) == 0);
    char set[300];
    snprintf(set, sizeof set, "FAKECUDA_LAUNCH_LOG=%s\n", logp);
    kf_ctx *ctx = kf_ctx_new();
    kf_worker *w = fake_worker(ctx, dir, set);
    static const uint32_t sizes[] = {1024, 48 << 10, 64 << 10, 64 << 10, 200 << 10};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        kf_msg_run m;
        one_launch(&m, sizes[i], i == 3 ? KF_RUN_FLUSH_L2 : 0);
        kf_call_result r;
        kf_worker_call(w, &m, 10, &r);
        CHECKF(r.st == KF_CALL_OK, "smem %u: %s: %s", sizes[i], kf_reason_name(r.reason), r.msg);
    }
    kf_worker_close(w);
    char *log = NULL;
    size_t n = 0;
    CHECK(kf__read_file(logp, 1 << 20, &log, &n) == 0);
    CHECKF(!strcmp(log, "launch 1024 49152\nlaunch 49152 49152\nlaunch 65536 65536\nlaunch 65536 65536\n"
                        "launch 204800 204800\n"),
           "%s", log);
    free(log);
    kf_ctx_free(ctx);
    kf__rmtree(dir);
}

/* Lines in the file at path (0 when it cannot be read). */
static size_t file_lines(const char *path) {
    char *t = NULL;
    size_t n = 0, k = 0;
    if (kf__read_file(path, 1 << 20, &t, &n)) return 0;
    for (size_t i = 0; i < n; i++) k += t[i] == '\n';
    free(t);
    return k;
}

/* Before a baseline's timed span (KF_RUN_WAIT_IDLE) the worker waits for the device to
 * be idle (no other process's work: the stand-in driver makes every probe wait 300 us
 * while a file exists), and says how long it took, or that the device stayed busy past
 * its budget. Other calls do not probe. */
static void t_idle_probe(const void *arg) {
    (void)arg;
    char dir[] = "/tmp/kft-idle-XXXXXX", busy[256], plog[256];
    CHECK(mkdtemp(dir));
    snprintf(busy, sizeof busy, "%s/busy", dir);
    snprintf(plog, sizeof plog, "%s/probes", dir);
    FILE *pf = fopen(plog, "w");
    CHECK(pf && fclose(pf) == 0 && chmod(plog, 0666) == 0);
    char set[600];
    snprintf(set, sizeof set, "FAKECUDA_BUSY_FILE=%s\nFAKECUDA_PROBE_LOG=%s\n", busy, plog);
    kf_ctx *ctx = kf_ctx_new();
    kf_worker *w = fake_worker(ctx, dir, set);
    kf_msg_run m;
    kf_call_result r;
    one_launch(&m, 0, KF_RUN_FLUSH_L2 | KF_RUN_WAIT_IDLE);
    kf_worker_call(w, &m, 10, &r);
    CHECKF(r.st == KF_CALL_OK && !(r.gpu_flags & KF_DONE_GPU_BUSY) && r.idle_wait_ns < 2000000,
           "idle: %s, flags %u, waited %llu ns", r.msg, r.gpu_flags, (unsigned long long)r.idle_wait_ns);
    FILE *f = fopen(busy, "w");
    CHECK(f && fclose(f) == 0);
    one_launch(&m, 0, KF_RUN_FLUSH_L2 | KF_RUN_WAIT_IDLE);
    kf_worker_call(w, &m, 10, &r);
    CHECKF(r.st == KF_CALL_OK && (r.gpu_flags & KF_DONE_GPU_BUSY) && r.idle_wait_ns >= 20000000,
           "busy: %s, flags %u, waited %llu ns", r.msg, r.gpu_flags, (unsigned long long)r.idle_wait_ns);
    one_launch(&m, 0, KF_RUN_FLUSH_L2); /* the candidate's side, or a check's call: no probe */
    size_t before = file_lines(plog);
    CHECKF(before > 0, "the probes are logged");
    kf_worker_call(w, &m, 10, &r);
    size_t probes = file_lines(plog) - before;
    CHECKF(r.st == KF_CALL_OK && !r.gpu_flags && !r.idle_wait_ns && !probes,
           "untimed: flags %u, waited %llu ns, %zu probes", r.gpu_flags, (unsigned long long)r.idle_wait_ns,
           probes);
    unlink(busy);
    one_launch(&m, 0, KF_RUN_FLUSH_L2 | KF_RUN_WAIT_IDLE);
    kf_worker_call(w, &m, 10, &r);
    CHECKF(r.st == KF_CALL_OK && !(r.gpu_flags & KF_DONE_GPU_BUSY), "idle again: flags %u", r.gpu_flags);
    kf_worker_close(w);
    kf_ctx_free(ctx);
    kf__rmtree(dir);
}

/* Host mode: candidate code in the worker's process cannot redirect the worker's driver
 * entry points. The candidate finds cuEventElapsedTime_v2's address (dlopen of the
 * loaded driver) and overwrites every copy of it in writable memory with its own
 * function; once the worker has called that function, the next call returns 7. With the
 * table on a read-only, sealed page no writable copy exists: both calls succeed (the
 * stand-in driver, no GPU). */
static const char table_hook[] =
    "// kforge:host\n"
    "#include <dlfcn.h>\n#include <link.h>\n#include <stdio.h>\n#include <string.h>\n"
    "static int hooked, patched;\n"
    "static int fake_elapsed(float *ms, void *a, void *b) { (void)a; (void)b; hooked = 1; *ms = 0.001f; "
    "return 0; }\n"
    "static int find_cuda(struct dl_phdr_info *i, size_t n, void *out) {\n"
    "  (void)n; if (!strstr(i->dlpi_name, \"libcuda\")) return 0;\n"
    "  snprintf((char *)out, 512, \"%s\", i->dlpi_name); return 1;\n}\n"
    "extern \"C\" int kforge_launch(const float *a, float *b, int64_t rows, int64_t cols, cudaStream_t s) {\n"
    "  (void)a; (void)b; (void)rows; (void)cols; (void)s;\n"
    "  if (hooked) return 7;\n"
    "  if (patched) return 0;\n"
    "  char name[512] = \"\";\n  dl_iterate_phdr(find_cuda, name);\n"
    "  void *h = dlopen(name, RTLD_NOW | RTLD_NOLOAD);\n"
    "  void *real = h ? dlsym(h, \"cuEventElapsedTime_v2\") : NULL;\n"
    "  if (!real) return 5;\n"
    "  FILE *f = fopen(\"/proc/self/maps\", \"r\");\n  if (!f) return 6;\n"
    "  char line[600];\n"
    "  while (fgets(line, sizeof line, f)) {\n"
    "    unsigned long lo, hi; char perm[8];\n"
    "    if (sscanf(line, \"%lx-%lx %7s\", &lo, &hi, perm) != 3 || perm[0] != 'r' || perm[1] != 'w') "
    "continue;\n"
    "    if (strstr(line, \"[stack]\") || strstr(line, \"[vvar\")) continue;\n"
    "    for (void **p = (void **)lo; (unsigned long)(p + 1) <= hi; p++)\n"
    "      if (*p == real) *p = (void *)fake_elapsed;\n"
    "  }\n  fclose(f);\n  patched = 1;\n  return 0;\n}\n";

/* A host-mode candidate built for real (nvcc) and loaded by a GPU worker on the
 * stand-in driver (events 1 us apart, no CUPTI), under its seccomp filter; dir is the
 * stand-in's directory (the caller removes it). */
static kf_worker *host_fake_worker(built *o, const char *task, const char *text, char dir[32]) {
    need_nvcc();
    setenv("KFORGE_CUDA_ARCH", "sm_90", 1);
    build_text(o, task, "host.cu", text, NULL, 0);
    CHECKF(o->b.ok, "%s\n%s", o->b.message ? o->b.message : "", o->b.log ? o->b.log : "");
    snprintf(dir, 32, "/tmp/kft-hostw-XXXXXX");
    CHECK(mkdtemp(dir));
    char lib[256], envf[256];
    snprintf(lib, sizeof lib, "%s/libcuda.so.1", dir);
    snprintf(envf, sizeof envf, "%s/fakecuda.env", dir);
    CHECK(symlink(kft_bin("libkft_fakecuda.so"), lib) == 0);
    FILE *f = fopen(envf, "w");
    CHECK(f && fputs("FAKECUDA_MS=0.001\n", f) >= 0 && fclose(f) == 0);
    CHECK(chmod(dir, 0755) == 0 && chmod(envf, 0644) == 0);
    setenv("KFORGE_LIBCUDA", lib, 1);
    setenv("KFORGE_LIBCUPTI", "/nonexistent/libcupti.so", 1); /* no counter with a stand-in driver */
    kf_worker_opts wo = {10, 1ull << 30, 30, 0, NULL, 1, NULL, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
    kf__cuda_worker_env(&wo);
    kf_call_result fail;
    kf_worker *w = NULL;
    CHECKF(kf_worker_spawn(o->ctx, o->b.so_path, 1 << 20, &wo, &w, &fail) == KF_OK, "%s", kf_errmsg(o->ctx));
    CHECKF(w, "did not load: %s", fail.msg);
    CHECK(kf_worker_filtered(w));
    return w;
}

/* One call of a transpose-shaped host-mode candidate (a, b at 0 and 2048, 4 x 4). */
static void host_call(kf_worker *w, kf_call_result *r) {
    kf_msg_run m;
    memset(&m, 0, sizeof m);
    m.nargs = 4;
    m.kind[0] = m.kind[1] = KF_ARG_BUF;
    m.off[1] = 2048;
    m.kind[2] = m.kind[3] = KF_ARG_I64;
    m.ival[2] = m.ival[3] = 4;
    m.span_hi = 4096;
    kf_worker_call(w, &m, 10, r);
}

static void t_driver_table_ro(const void *arg) {
    (void)arg;
    built o;
    char dir[32];
    kf_worker *w = host_fake_worker(&o, "tasks/cuda/transpose", table_hook, dir);
    for (int call = 0; call < 3; call++) {
        kf_call_result r;
        host_call(w, &r);
        CHECKF(r.st == KF_CALL_OK, "call %d: %s: %s", call + 1, kf_reason_name(r.reason), r.msg);
    }
    kf_worker_close(w);
    unsetenv("KFORGE_LIBCUPTI");
    kf__rmtree(dir);
    built_free(&o);
}

/* The libraries a host-mode worker maps are read after its calls (the kernel's view):
 * a candidate that loads cuBLAS only from its second call on (as one that loads it only
 * where it detects timing) is seen and rejected by the check every timing worker gets
 * after each call (kf_check_libraries); declared, the same library is only reported. */
static void t_timing_libraries(const void *arg) {
    (void)arg;
    if (geteuid() != 0) kft_skip("a worker's maps are readable by root only (it is not dumpable)");
    static const char late[] =
        "// kforge:host\n#include <dlfcn.h>\n"
        "static int calls;\n"
        "extern \"C\" int kforge_launch(const float *a, float *b, int64_t rows, int64_t cols, cudaStream_t "
        "s) {\n"
        "  (void)a; (void)b; (void)rows; (void)cols; (void)s;\n"
        "  if (++calls == 2 && !dlopen(\"libcublas.so.13\", RTLD_NOW | RTLD_LOCAL)) return 9;\n"
        "  return 0;\n}\n";
    for (int declared = 0; declared < 2; declared++) {
        built o;
        char dir[32];
        kf_worker *w = host_fake_worker(&o, "tasks/cuda/transpose", late, dir);
        kf_sess s;
        memset(&s, 0, sizeof s);
        s.res = kf_result_new("bench");
        s.be = kf_backend_get("cuda");
        s.cbuild.host = 1;
        s.cbuild.libraries = kf__strdup(declared ? "cublas" : "");
        kf_side side = {.w = w};
        kf_call_result r;
        host_call(w, &r);
        CHECKF(r.st == KF_CALL_OK, "%s", r.msg);
        CHECK(kf_check_libraries(&s, &side, "seen while timing") == 0);
        host_call(w, &r);
        CHECKF(r.st == KF_CALL_OK, "%s", r.msg);
        int rej = kf_check_libraries(&s, &side, "seen while timing");
        char *js = kf_result_json(s.res);
        CHECKF(rej == !declared, "declared %d: %s", declared, js);
        CHECKF(strstr(js, "libcublas.so.13"), "not among libraries_loaded: %s", js);
        if (!declared)
            CHECKF(kf_result_verdict(s.res) == KF_VERDICT_REJECTED && strstr(js, "sandbox_violation") &&
                       strstr(js, "seen while timing"),
                   "%s", js);
        free(js);
        free(s.cbuild.libraries);
        kf_result_free(s.res);
        kf_worker_close(w);
        kf__rmtree(dir);
        built_free(&o);
    }
    unsetenv("KFORGE_LIBCUPTI");
}

/* Host mode may compile kernels at run time with NVRTC (declared: kforge:link nvrtc):
 * a compile inside the worker, under its seccomp filter, succeeds (it was killed as a
 * sandbox_violation: NVRTC calls stat). The stand-in driver: the compile only. */
static void t_host_nvrtc_worker(const void *arg) {
    (void)arg;
    static const char jit[] =
        "// kforge:host\n// kforge:link nvrtc\n#include <nvrtc.h>\n#include <stdio.h>\n"
        "extern \"C\" int kforge_launch(const float *a, float *b, int64_t rows, int64_t cols, cudaStream_t "
        "s) {\n"
        "  (void)a; (void)b; (void)s;\n"
        "  char src[256];\n"
        "  snprintf(src, sizeof src, \"extern \\\"C\\\" __global__ void t(float *x) { x[0] = %lld; }\", "
        "(long long)(rows * cols));\n"
        "  nvrtcProgram p;\n"
        "  if (nvrtcCreateProgram(&p, src, \"jit.cu\", 0, NULL, NULL) != NVRTC_SUCCESS) return 3;\n"
        "  const char *o[] = {\"--gpu-architecture=sm_90\"};\n"
        "  int rc = nvrtcCompileProgram(p, 1, o) == NVRTC_SUCCESS ? 0 : 4;\n"
        "  size_t n = 0;\n  if (!rc && (nvrtcGetCUBINSize(p, &n) != NVRTC_SUCCESS || n < 100)) rc = 5;\n"
        "  nvrtcDestroyProgram(&p);\n  return rc;\n}\n";
    built o;
    char dir[32];
    kf_worker *w = host_fake_worker(&o, "tasks/cuda/transpose", jit, dir);
    CHECKF(o.b.libraries && strstr(o.b.libraries, "nvrtc"), "libraries '%s'",
           o.b.libraries ? o.b.libraries : "");
    for (int call = 0; call < 2; call++) {
        kf_call_result r;
        host_call(w, &r);
        CHECKF(r.st == KF_CALL_OK, "call %d: %s: %s", call + 1, kf_reason_name(r.reason), r.msg);
    }
    kf_worker_close(w);
    unsetenv("KFORGE_LIBCUPTI");
    kf__rmtree(dir);
    built_free(&o);
}

/* Host mode: an open that would write or create a file fails with EACCES (libraries
 * carry on: NVRTC names its threads through a write-only open of /proc/self/task/N/comm,
 * which trapped as a sandbox_violation) and nothing is created. */
static void t_gpu_write_open_refused(const void *arg) {
    (void)arg;
    static const char opener[] = "// kforge:host\n#include <errno.h>\n#include <stdio.h>\n"
                                 "extern \"C\" int kforge_launch(const float *a, float *b, int64_t rows, "
                                 "int64_t cols, cudaStream_t s) {\n"
                                 "  (void)a; (void)b; (void)rows; (void)cols; (void)s;\n"
                                 "  FILE *f = fopen(\"/tmp/kft-forbidden-write\", \"w\");\n"
                                 "  FILE *g = fopen(\"/proc/self/comm\", \"w\");\n"
                                 "  return f || g ? 1 : errno == EACCES ? 0 : 2;\n}\n";
    unlink("/tmp/kft-forbidden-write");
    built o;
    char dir[32];
    kf_worker *w = host_fake_worker(&o, "tasks/cuda/transpose", opener, dir);
    kf_call_result r;
    host_call(w, &r);
    CHECKF(r.st == KF_CALL_OK, "%s: %s", kf_reason_name(r.reason), r.msg);
    CHECK(access("/tmp/kft-forbidden-write", F_OK) != 0);
    kf_worker_close(w);
    unsetenv("KFORGE_LIBCUPTI");
    kf__rmtree(dir);
    built_free(&o);
}

/* Host mode: a persisting-L2 set-aside a call makes is reset after it (and said so in
 * DONE), so nothing stays warm across the next call's flush nor shrinks the other
 * side's L2; one made outside any call (here: in a constructor, as a thread left
 * running would) is refused at the next call. The candidate calls the loaded
 * (stand-in) driver's cuCtxSetLimit directly. */
static void t_persisting_l2(const void *arg) {
    (void)arg;
    static const char fmt[] =
        "// kforge:host\n#include <dlfcn.h>\n#include <link.h>\n#include <stdio.h>\n#include <string.h>\n"
        "static int find_cuda(struct dl_phdr_info *i, size_t n, void *out) {\n"
        "  (void)n; if (!strstr(i->dlpi_name, \"libcuda\")) return 0;\n"
        "  snprintf((char *)out, 512, \"%%s\", i->dlpi_name); return 1;\n}\n"
        "static int set_aside(void) {\n"
        "  char name[512] = \"\"; dl_iterate_phdr(find_cuda, name);\n"
        "  void *h = dlopen(name, RTLD_NOW | RTLD_NOLOAD);\n"
        "  int (*lim)(int, size_t) = h ? (int (*)(int, size_t))dlsym(h, \"cuCtxSetLimit\") : NULL;\n"
        "  return lim ? lim(6, 4u << 20) : 1;\n}\n"
        "%s\n"
        "extern \"C\" int kforge_launch(const float *a, float *b, int64_t rows, int64_t cols, cudaStream_t "
        "s) {\n"
        "  (void)a; (void)b; (void)rows; (void)cols; (void)s;\n  return %s;\n}\n";
    for (int outside = 0; outside < 2; outside++) {
        char text[2048];
        snprintf(text, sizeof text, fmt,
                 outside ? "__attribute__((constructor)) static void early(void) { set_aside(); }" : "",
                 outside ? "0" : "set_aside()");
        built o;
        char dir[32];
        kf_worker *w = host_fake_worker(&o, "tasks/cuda/transpose", text, dir);
        kf_call_result r;
        host_call(w, &r);
        if (outside) {
            CHECKF(r.st != KF_CALL_OK && r.reason == KF_REASON_SANDBOX_VIOLATION &&
                       strstr(r.msg, "persisting-L2"),
                   "%s: %s", kf_reason_name(r.reason), r.msg);
        } else {
            for (int call = 0; call < 2; call++) {
                CHECKF(r.st == KF_CALL_OK && (r.gpu_flags & KF_DONE_PERSISTING_L2),
                       "call %d: %s: %s, flags %u", call + 1, kf_reason_name(r.reason), r.msg, r.gpu_flags);
                host_call(w, &r);
            }
        }
        kf_worker_close(w);
        kf__rmtree(dir);
        built_free(&o);
    }
    unsetenv("KFORGE_LIBCUPTI");
}

/* On a GPU with CUPTI: a host-mode candidate that creates a context of its own (the
 * driver's cuCtxCreate_v2, taken from the loaded libcuda) is refused at the call that
 * follows, a sandbox_violation that names contexts; the same file without the context
 * is accepted (so the refusal is the context's). Skips without a GPU or CUPTI. */
static void t_gpu_own_context(const void *arg) {
    (void)arg;
    char why[512];
    if (!kft_have_gpu(why, sizeof why)) kft_skip("needs a GPU: %s", why);
    need_nvcc();
    static const char fmt[] =
        "// kforge:host\n#include <cuda.h>\n#include <dlfcn.h>\n#include <link.h>\n#include "
        "<stdio.h>\n#include <string.h>\n"
        "static int find_cuda(struct dl_phdr_info *i, size_t n, void *out) {\n"
        "  (void)n; if (!strstr(i->dlpi_name, \"libcuda.so\")) return 0;\n"
        "  snprintf((char *)out, 512, \"%%s\", i->dlpi_name); return 1;\n}\n"
        "__global__ void t(const float *a, float *b, int64_t rows, int64_t cols) {\n"
        "  int64_t c = (int64_t)blockIdx.x * 16 + threadIdx.x, r = (int64_t)blockIdx.y * 16 + threadIdx.y;\n"
        "  if (r < rows && c < cols) b[c * rows + r] = a[r * cols + c];\n}\n"
        "static CUcontext side;\n"
        "extern \"C\" int kforge_launch(const float *a, float *b, int64_t rows, int64_t cols, cudaStream_t "
        "s) {\n"
        "  if (%d && !side) {\n"
        "    char name[512] = \"\"; dl_iterate_phdr(find_cuda, name);\n"
        "    void *h = dlopen(name, RTLD_NOW | RTLD_NOLOAD);\n"
        "    CUresult (*create)(CUcontext *, unsigned, CUdevice) = h ? (CUresult (*)(CUcontext *, unsigned, "
        "CUdevice))dlsym(h, \"cuCtxCreate_v2\") : NULL;\n"
        "    CUresult (*pop)(CUcontext *) = h ? (CUresult (*)(CUcontext *))dlsym(h, \"cuCtxPopCurrent_v2\") "
        ": NULL;\n"
        "    CUcontext prev;\n"
        "    if (!create || !pop || create(&side, 0, 0) || pop(&prev)) return 9;\n  }\n"
        "  dim3 g((unsigned)((cols + 15) / 16), (unsigned)((rows + 15) / 16));\n"
        "  t<<<g, dim3(16, 16), 0, s>>>(a, b, rows, cols);\n"
        "  return cudaGetLastError() == cudaSuccess ? 0 : 1;\n}\n";
    for (int own = 1; own >= 0; own--) {
        char text[4096], dir[] = "/tmp/kft-ownctx-XXXXXX", path[256];
        snprintf(text, sizeof text, fmt, own);
        CHECK(mkdtemp(dir));
        snprintf(path, sizeof path, "%s/own.cu", dir);
        FILE *f = fopen(path, "w");
        CHECK(f && fputs(text, f) >= 0 && fclose(f) == 0);
        kf_ctx *ctx = kf_ctx_new();
        kf_task *t = kft_task(ctx, "tasks/cuda/transpose");
        kf_opts o;
        kf_opts_init(&o);
        o.call_timeout_s = 20;
        o.hidden_count = 1;
        kf_result *r = NULL;
        CHECKF(kf_check(ctx, t, path, &o, &r) == KF_OK, "%s", kf_errmsg(ctx));
        char *js = kf_result_json(r);
        if (own && strstr(js, "\"launch_count\":null")) kft_skip("no CUPTI: %s", js);
        if (own)
            CHECKF(kf_result_verdict(r) == KF_VERDICT_REJECTED && strstr(js, "sandbox_violation") &&
                       strstr(js, "context"),
                   "%s", js);
        else CHECKF(kf_result_verdict(r) == KF_VERDICT_ACCEPTED, "%s", js);
        free(js);
        kf_result_free(r);
        kf_task_free(t);
        kf_ctx_free(ctx);
        kf__rmtree(dir);
    }
}

/* Host mode refuses contexts of the candidate's own (the worker synchronises only its
 * primary context): CUPTI's driver callbacks that create one are found by name. The
 * rule, and that the installed CUPTI names them so (cuCtxCreate*, cuGreenCtxCreate). */
static void t_cupti_ctx_names(const void *arg) {
    (void)arg;
    CHECK(kf_cupti__is_ctx_name("cuCtxCreate_v2") && kf_cupti__is_ctx_name("cuCtxCreate_v4") &&
          kf_cupti__is_ctx_name("cuGreenCtxCreate"));
    CHECK(!kf_cupti__is_ctx_name("cuCtxSetCurrent") && !kf_cupti__is_ctx_name("cuDevicePrimaryCtxRetain") &&
          !kf_cupti__is_ctx_name("cuCtxDestroy_v2") && !kf_cupti__is_ctx_name(NULL));
    void *h = dlopen("/usr/local/cuda/lib64/libcupti.so", RTLD_NOW | RTLD_LOCAL);
    if (!h) kft_skip("no CUPTI in /usr/local/cuda/lib64: %s", dlerror());
    int (*name)(int, uint32_t, const char **) = NULL;
    void *p = dlsym(h, "cuptiGetCallbackName");
    memcpy(&name, &p, sizeof p);
    CHECK(name);
    int plain = 0, green = 0;
    for (uint32_t id = 1; id < 2048; id++) {
        const char *n = NULL;
        if (name(KF_CUPTI_DOMAIN_DRIVER, id, &n) || !kf_cupti__is_ctx_name(n)) continue;
        plain += !strncmp(n, "cuCtxCreate", 11);
        green += !strncmp(n, "cuGreenCtxCreate", 16);
    }
    CHECKF(plain >= 2 && green >= 1, "cuCtxCreate* %d, cuGreenCtxCreate %d", plain, green);
}

/* A GPU worker started through a wrapper (compute-sanitizer) has the tool's launcher
 * for a parent, so no parent-death signal reaches it; when its kernel never finishes
 * it never reads the channel either. Its watch thread must end it once the coordinator
 * is gone: here the stand-in driver "hangs" in cuCtxSynchronize for 10 minutes, the
 * stand-in tool puts the worker in a session of its own (as the real launcher does),
 * and the call times out and closes the worker. */
static void t_wrapped_orphan(const void *arg) {
    (void)arg;
    setenv("KFORGE_LIBCUDA", kft_bin("libkft_fakecuda.so"), 1);
    char dir[] = "/tmp/kft-orphan-XXXXXX", art[256], script[256], pidf[256];
    CHECK(mkdtemp(dir));
    chmod(dir, 0755);
    snprintf(art, sizeof art, "%s/k.kfc", dir);
    snprintf(script, sizeof script, "%s/fake-sanitizer", dir);
    snprintf(pidf, sizeof pidf, "%s/worker.pid", dir);
    CHECK(fake_artifact(art) == 0);
    FILE *f = fopen(script, "w");
    CHECK(f);
    /* like the real tool's launcher: an intermediate in a session of its own is the
     * worker's parent, and outlives the tool's death */
    fprintf(f, "#!/bin/sh\n# stands in for compute-sanitizer and its launcher\n"
               "pidf=$1; shift\nexport FAKECUDA_HANG_S=600 pidf\n"
               "setsid /bin/sh -c '\"$@\" & echo $! > \"$pidf\"; wait' sh \"$@\" &\n"
               "while [ ! -s \"$pidf\" ]; do sleep 0.01; done\nwait\n");
    fclose(f);
    CHECK(chmod(script, 0755) == 0);
    kf_ctx *ctx = kf_ctx_new();
    const char *wrap[] = {script, pidf, NULL};
    kf_worker_opts wo = {10, 1ull << 30, 10, 0, NULL, 1, wrap, 1, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
    kf__cuda_worker_env(&wo);
    kf_call_result fail;
    kf_worker *w = NULL;
    CHECKF(kf_worker_spawn(ctx, art, 1 << 20, &wo, &w, &fail) == KF_OK && w, "%s / %s", kf_errmsg(ctx),
           w ? "" : fail.msg);
    char *txt = NULL;
    size_t n = 0;
    CHECK(kf__read_file(pidf, 64, &txt, &n) == 0);
    pid_t wp = (pid_t)atol(txt);
    free(txt);
    CHECKF(wp > 0 && kill(wp, 0) == 0, "no worker pid (%d)", (int)wp);
    kf_msg_run m;
    memset(&m, 0, sizeof m);
    m.nlaunch = 1;
    for (int d = 0; d < 6; d++) m.dims[0][d] = 1;
    m.span_hi = 4096;
    kf_call_result r;
    kf_worker_call(w, &m, 1, &r);
    CHECKF(r.reason == KF_REASON_TIMEOUT, "%s: %s", kf_reason_name(r.reason), r.msg);
    kf_worker_close(w);
    /* gone (or a zombie waiting for its reaper) within 5 s */
    int gone = 0;
    for (int i = 0; i < 100 && !gone; i++) {
        char sp[64], st = 0;
        snprintf(sp, sizeof sp, "/proc/%d/stat", (int)wp);
        FILE *ps = fopen(sp, "r");
        if (!ps) {
            gone = 1;
            break;
        }
        if (fscanf(ps, "%*d (%*[^)]) %c", &st) == 1 && st == 'Z') gone = 1;
        fclose(ps);
        if (!gone) usleep(50000);
    }
    if (!gone) kill(wp, SIGKILL);
    CHECKF(gone, "the wrapped worker %d outlived its coordinator's close by 5 s", (int)wp);
    kf_ctx_free(ctx);
    kf__rmtree(dir);
}

/* Every bundled CUDA file, and every value of each template's parameters, builds. */
static void t_bundled_build(const void *arg) {
    (void)arg;
    need_nvrtc();
    setenv("KFORGE_CUDA_ARCH", "sm_90", 1);
    int files = 0, builds = 0;
    for (int i = 0; kft_cuda_tasks[i]; i++) {
        char rel[128];
        snprintf(rel, sizeof rel, "tasks/cuda/%s", kft_cuda_tasks[i]);
        kf_ctx *ctx = kf_ctx_new();
        kf_task *t = kft_task(ctx, rel);
        const char *names[8];
        int n = 0;
        names[n++] = "reference.cu";
        char cdir[160];
        snprintf(cdir, sizeof cdir, "%s/candidates", rel);
        DIR *d = opendir(kft_src(cdir));
        CHECKF(d, "%s: no candidates", rel);
        struct dirent *e;
        static char store[8][64];
        while ((e = readdir(d)) && n < 8)
            if (strstr(e->d_name, ".cu")) {
                snprintf(store[n], sizeof store[n], "candidates/%s", e->d_name);
                names[n] = store[n];
                n++;
            }
        closedir(d);
        CHECKF(n >= 3, "%s: needs a reference, a fast candidate and a template (%d files)", rel, n);
        for (int k = 0; k < n; k++) {
            char fp[256];
            snprintf(fp, sizeof fp, "%s/%s", rel, names[k]);
            /* each value of the first parameter (the others at their defaults) */
            kf_candidate *c0 = NULL;
            CHECKF(kf_candidate_load(ctx, t, kft_src(fp), NULL, 0, &c0) == KF_OK, "%s: %s", fp,
                   kf_errmsg(ctx));
            int nv = c0->nparams ? c0->params[0].nvalues : 1;
            for (int v = 0; v < nv; v++) {
                char selb[128];
                const char *sel[1] = {selb};
                if (c0->nparams)
                    snprintf(selb, sizeof selb, "%s=%s", c0->params[0].name, c0->params[0].values[v]);
                kf_candidate *c = NULL;
                if (kf_candidate_load(ctx, t, kft_src(fp), sel, c0->nparams ? 1 : 0, &c) != KF_OK)
                    continue; /* a combination its kforge:require refuses */
                char why[256];
                if (kf__cuda_host_mode(t, c->text, c->len) && !kf__cuda_have_nvcc(why, sizeof why)) {
                    fprintf(stderr, "    %s: host mode, not built: %s\n", fp, why);
                    kf_candidate_free(c);
                    continue;
                }
                char wd[] = "/tmp/kft-cudab-XXXXXX";
                CHECK(mkdtemp(wd));
                kf_build b;
                kf_status st = kf_backend_compile(kf_backend_get("cuda"), ctx, t, kft_src(fp), c->text,
                                                  c->len, c->params, c->nparams, wd, 60, &b);
                CHECKF(st == KF_OK, "%s: %s", fp, kf_errmsg(ctx));
                CHECKF(b.ok, "%s %s: %s\n%s", fp, c0->nparams ? selb : "", b.message, b.log);
                CHECK((b.nlaunch >= 1 || b.host) && !strcmp(b.arch, "sm_90"));
                /* ptxas's report, whenever the log carries one (on the H200 it was
                 * sometimes empty; kernel presence is then checked from the cubin) */
                int reported = b.log && strstr(b.log, "Compiling entry function");
                for (int q = 0; q < b.nkernels && reported; q++)
                    CHECKF(b.kernels[q].regs > 0, "%s: no registers for %s", fp, b.kernels[q].name);
                kf_build_free(&b);
                kf_candidate_free(c);
                kf__rmtree(wd);
                builds++;
            }
            kf_candidate_free(c0);
            files++;
        }
        kf_task_free(t);
        kf_ctx_free(ctx);
    }
    CHECKF(files >= 21, "only %d bundled CUDA files", files);
    fprintf(stderr, "    %d files, %d builds\n", files, builds);
}

/* Errors say where: NVRTC's line numbers are the file's own (the prelude does not
 * shift them); directive errors name their line. */
static void t_errors(const void *arg) {
    (void)arg;
    need_nvrtc();
    setenv("KFORGE_CUDA_ARCH", "sm_90", 1);
    built o;
    build_text(&o, "tasks/cuda/softmax", "syntax.cu",
               "// kforge:launch kernel=k grid=(rows) block=(32)\n"
               "extern \"C\" __global__ void k(const float *x, float *y, int64_t rows, int64_t cols) {\n"
               "  y[0] = x[0] +;\n}\n",
               NULL, 0);
    CHECK(!o.b.ok && o.b.reason == KF_REASON_COMPILE_ERROR);
    CHECKF(strstr(o.b.message, "syntax.cu(3)") && strstr(o.b.message, "error"), "%s", o.b.message);
    built_free(&o);

    build_text(&o, "tasks/cuda/softmax", "missing.cu",
               "// kforge:launch kernel=nothere grid=(rows) block=(32)\n"
               "extern \"C\" __global__ void k(const float *x, float *y, int64_t rows, int64_t cols) {}\n",
               NULL, 0);
    CHECK(!o.b.ok && o.b.reason == KF_REASON_MISSING_ENTRY);
    CHECKF(strstr(o.b.message, "nothere"), "%s", o.b.message);
    built_free(&o);

    static const struct {
        const char *line, *want;
    } bad[] = {
        {"// kforge:launch kernel=k grid=(rows block=(32)\n", "bad.cu:2: kforge:launch"},
        {"// kforge:launch kernel=k grid=(nosuch) block=(32)\n", "nosuch"},
        {"// kforge:launch kernel=k block=(32)\n", "grid= and block= are required"},
        {"// kforge:launch grid=(1) block=(32)\n", "kernel= is missing"},
        {"// kforge:launch kernel=k grid=(1) block=(32) colour=red\n", "unknown key"},
        {"// nothing here\n", "no kforge:launch line"},
        /* NVRTC runs in the coordinator: no file outside the toolkit's headers */
        {"#include \"/etc/passwd\"\n// kforge:launch kernel=k grid=(1) block=(32)\n", "allows #include only"},
        {"#  include </etc/passwd>\n// kforge:launch kernel=k grid=(1) block=(32)\n", "allows #include only"},
        {"%:include \"/dev/zero\"\n// kforge:launch kernel=k grid=(1) block=(32)\n", "allows #include only"},
        {"#inc\\\nlude \"x.h\"\n// kforge:launch kernel=k grid=(1) block=(32)\n", "allows #include only"},
        {"#define P \"/etc/passwd\"\n#include P\n// kforge:launch kernel=k grid=(1) block=(32)\n",
         "allows #include only"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[512];
        snprintf(text, sizeof text,
                 "// a comment\n%sextern \"C\" __global__ void k(const float *x, "
                 "float *y, int64_t rows, int64_t cols) {}\n",
                 bad[i].line);
        build_text(&o, "tasks/cuda/softmax", "bad.cu", text, NULL, 0);
        CHECKF(!o.b.ok && o.b.reason == KF_REASON_COMPILE_ERROR && strstr(o.b.message, bad[i].want),
               "%s -> %s", bad[i].line, o.b.message ? o.b.message : "(built)");
        built_free(&o);
    }
}

/* Kernel mode's includes: any header inside the toolkit's include trees, by name in angle
 * brackets, compiles (CUDA 13's <cooperative_groups.h> and <cuda/barrier> need
 * include/cccl on NVRTC's path); names that leave the tree, hide, or are not there are
 * refused before NVRTC runs. */
static void t_toolkit_headers(const void *arg) {
    (void)arg;
    need_nvrtc();
    setenv("KFORGE_CUDA_ARCH", "sm_90", 1);
    static const char *const ok[] = {
        "#include <cooperative_groups.h>\n"
        "namespace cg = cooperative_groups;\n"
        "// kforge:launch kernel=k grid=(rows) block=(32)\n"
        "extern \"C\" __global__ void k(const float *x, float *y, int64_t rows, int64_t cols) {\n"
        "  cg::thread_block b = cg::this_thread_block(); b.sync();\n"
        "  cg::thread_block_tile<32> w = cg::tiled_partition<32>(b);\n"
        "  if (w.thread_rank() == 0 && cols > 0) y[blockIdx.x * cols] = x[blockIdx.x * cols];\n}\n",
        "#include <cuda/barrier>\n"
        "// kforge:launch kernel=k grid=(rows) block=(32)\n"
        "extern \"C\" __global__ void k(const float *x, float *y, int64_t rows, int64_t cols) {\n"
        "  __shared__ cuda::barrier<cuda::thread_scope_block> bar;\n"
        "  if (threadIdx.x == 0) init(&bar, blockDim.x);\n  __syncthreads();\n"
        "  bar.arrive_and_wait();\n"
        "  if (threadIdx.x == 0 && cols > 0) y[blockIdx.x * cols] = x[blockIdx.x * cols];\n}\n",
        "#include <cuda_pipeline.h>\n#include <cuda/std/cstdint>\n#  include <mma.h>\n"
        "// kforge:launch kernel=k grid=(rows) block=(32)\n"
        "extern \"C\" __global__ void k(const float *x, float *y, int64_t rows, int64_t cols) {\n"
        "  cuda::std::int64_t i = blockIdx.x; if (threadIdx.x == 0 && cols > 0) y[i * cols] = x[i * "
        "cols];\n}\n",
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        built o;
        build_text(&o, "tasks/cuda/softmax", "inc.cu", ok[i], NULL, 0);
        CHECKF(o.b.ok, "%.60s: %s\n%s", ok[i], o.b.message ? o.b.message : "", o.b.log ? o.b.log : "");
        built_free(&o);
    }
    /* the honest corpus files that rely on it build too */
    static const char *const files[][2] = {
        {"tasks/cuda/softmax", "tests/honest/cuda/softmax_cooperative_groups.cu"},
        {"tasks/cuda/softmax", "tests/honest/cuda/softmax_cuda_barrier.cu"},
        {"tasks/cuda/rmsnorm", "tests/honest/cuda/rmsnorm_smem_64k.cu"},
    };
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char *text = NULL;
        size_t n = 0;
        CHECKF(kf__read_file(kft_src(files[i][1]), 1 << 20, &text, &n) == 0, "%s", files[i][1]);
        built o;
        build_text(&o, files[i][0], "corpus.cu", text, NULL, 0);
        CHECKF(o.b.ok, "%s: %s\n%s", files[i][1], o.b.message ? o.b.message : "", o.b.log ? o.b.log : "");
        built_free(&o);
        free(text);
    }
    static const char *const bad[] = {"<../include/cuda_fp16.h>",
                                      "<cuda/../../../../../etc/passwd>",
                                      "<./cuda_fp16.h>",
                                      "<cuda//barrier>",
                                      "<no_such_header.h>",
                                      "<stdio.h>",
                                      "<cuda>",
                                      "<cuda_fp16.h",
                                      "\"cuda_fp16.h\""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[512];
        snprintf(text, sizeof text,
                 "#include %s\n// kforge:launch kernel=k grid=(1) block=(32)\n"
                 "extern \"C\" __global__ void k(const float *x, float *y, int64_t rows, int64_t cols) {}\n",
                 bad[i]);
        built o;
        build_text(&o, "tasks/cuda/softmax", "bad.cu", text, NULL, 0);
        CHECKF(!o.b.ok && o.b.reason == KF_REASON_COMPILE_ERROR &&
                   strstr(o.b.message, "allows #include only"),
               "%s -> %s", bad[i], o.b.message ? o.b.message : "(built)");
        built_free(&o);
    }
}

/* Launch expressions see the sizes and the integer parameters; limits are enforced. */
static void t_launch_eval(const void *arg) {
    (void)arg;
    need_nvrtc();
    setenv("KFORGE_CUDA_ARCH", "sm_90", 1);
    built o;
    const char *sel[1] = {"B=128"};
    build_text(&o, "tasks/cuda/softmax", "p.cu",
               "// kforge:param B = 64, 128\n"
               "// kforge:launch kernel=k grid=((rows + B - 1) / B, 2) block=(B, 1, 1) smem=B*4\n"
               "// kforge:launch kernel=k grid=(cols) block=(rows)\n"
               "extern \"C\" __global__ void k(const float *x, float *y, int64_t rows, int64_t cols) {}\n",
               sel, 1);
    CHECKF(o.b.ok, "%s", o.b.message);
    CHECK(o.b.nlaunch == 2 && o.b.nkernels == 1);
    uint32_t lx[KF_MAX_LAUNCH][7];
    char err[256];
    int64_t sz[2] = {1000, 7}; /* rows, cols */
    CHECKF(kf_build_eval_launches(&o.b, o.t, sz, lx, err, sizeof err) == 0, "%s", err);
    CHECK(lx[0][0] == 8 && lx[0][1] == 2 && lx[0][2] == 1 && lx[0][3] == 128 && lx[0][6] == 512);
    CHECK(lx[1][0] == 7 && lx[1][3] == 1000 && lx[1][6] == 0);
    /* rows = 2000 makes the second launch's block 2000 threads */
    int64_t big[2] = {2000, 7};
    CHECK(kf_build_eval_launches(&o.b, o.t, big, lx, err, sizeof err) == -1);
    CHECKF(strstr(err, "line 3") && strstr(err, "block.x"), "%s", err);
    built_free(&o);
}

/* The same text is cached; one changed byte builds afresh (docs/checker.md #22). */
static void t_cache(const void *arg) {
    (void)arg;
    need_nvrtc();
    setenv("KFORGE_CUDA_ARCH", "sm_90", 1);
    char tmp[] = "/tmp/kft-cudacache-XXXXXX";
    CHECK(mkdtemp(tmp));
    setenv("KFORGE_CACHE_DIR", tmp, 1);
    char text[1024];
    snprintf(text, sizeof text, "%s// %d\n", good, (int)getpid());
    built a, b, c;
    build_text(&a, "tasks/cuda/softmax", "c.cu", text, NULL, 0);
    build_text(&b, "tasks/cuda/softmax", "c.cu", text, NULL, 0);
    text[strlen(text) - 2] ^= 1;
    build_text(&c, "tasks/cuda/softmax", "c.cu", text, NULL, 0);
    CHECKF(a.b.ok && b.b.ok && c.b.ok, "%s | %s | %s", a.b.message ? a.b.message : "ok",
           b.b.message ? b.b.message : "ok", c.b.message ? c.b.message : "ok");
    CHECK(!a.b.cached && b.b.cached && !c.b.cached);
    CHECK(!strcmp(a.b.so_path, b.b.so_path) && strcmp(a.b.so_path, c.b.so_path));
    CHECK(b.b.kernels[0].regs == a.b.kernels[0].regs); /* the report comes from the cache too */
    built_free(&a);
    built_free(&b);
    built_free(&c);
    unsetenv("KFORGE_CACHE_DIR");
    kf__rmtree(tmp);
}

/* NVRTC runs in a child under the compile deadline: a text that keeps it busy for
 * minutes (16384 dependent statements, macro-expanded: about 50 s for 4096 on a
 * 2-core machine) is a compile_error at the deadline, and the next compile works. */
static void t_compile_timeout(const void *arg) {
    (void)arg;
    need_nvrtc();
    setenv("KFORGE_CUDA_ARCH", "sm_90", 1);
    static const char slow[] =
        "#define S1(i) a = a * x[((i) * 7 + (int)a) & 1023] + (float)(i);\n"
        "#define S4(i) S1(i) S1(i + 1) S1(i + 2) S1(i + 3)\n"
        "#define S16(i) S4(i) S4(i + 4) S4(i + 8) S4(i + 12)\n"
        "#define S64(i) S16(i) S16(i + 16) S16(i + 32) S16(i + 48)\n"
        "#define S256(i) S64(i) S64(i + 64) S64(i + 128) S64(i + 192)\n"
        "#define S1K(i) S256(i) S256(i + 256) S256(i + 512) S256(i + 768)\n"
        "#define S4K(i) S1K(i) S1K(i + 1024) S1K(i + 2048) S1K(i + 3072)\n"
        "#define S16K(i) S4K(i) S4K(i + 4096) S4K(i + 8192) S4K(i + 12288)\n"
        "// kforge:launch kernel=k grid=(rows) block=(32)\n"
        "extern \"C\" __global__ void k(const float *x, float *y, int64_t rows, int64_t cols) {\n"
        "  float a = x[threadIdx.x];\n  S16K(0)\n  y[threadIdx.x] = a;\n}\n";
    char tmp[] = "/tmp/kft-cudato-XXXXXX";
    CHECK(mkdtemp(tmp));
    setenv("KFORGE_CACHE_DIR", tmp, 1);
    built o;
    uint64_t t0 = kf__now_ns();
    build_text_t(&o, "tasks/cuda/softmax", "slow.cu", slow, NULL, 0, 1.0);
    double s = (double)(kf__now_ns() - t0) / 1e9;
    CHECKF(!o.b.ok && o.b.reason == KF_REASON_COMPILE_ERROR, "%s", o.b.message ? o.b.message : "(built)");
    CHECKF(strstr(o.b.message, "deadline") && strstr(o.b.message, "NVRTC"), "%s", o.b.message);
    CHECKF(s < 5, "the deadline of 1 s took %.1f s to act", s);
    built_free(&o);
    /* nothing of the killed compile is left behind: the next one builds */
    build_text(&o, "tasks/cuda/softmax", "good.cu", good, NULL, 0);
    CHECKF(o.b.ok && !o.b.cached, "%s", o.b.message ? o.b.message : "");
    built_free(&o);
    unsetenv("KFORGE_CACHE_DIR");
    kf__rmtree(tmp);
}

/* Without a driver, a check says so and gives no verdict. */
static void t_no_gpu_is_clear(const void *arg) {
    (void)arg;
    need_nvrtc();
    char why[256];
    if (kft_have_gpu(why, sizeof why)) kft_skip("this machine has a GPU");
    setenv("KFORGE_CUDA_ARCH", "sm_90", 1);
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = kft_task(ctx, "tasks/cuda/softmax");
    kf_result *r = NULL;
    kf_status st = kf_check(ctx, t, kft_src("tasks/cuda/softmax/reference.cu"), NULL, &r);
    CHECKF(st == KF_EBACKEND && r == NULL, "status %d: %s", (int)st, kf_errmsg(ctx));
    CHECKF(strstr(kf_errmsg(ctx), "CUDA") || strstr(kf_errmsg(ctx), "cuda"), "%s", kf_errmsg(ctx));
    kf_task_free(t);
    kf_ctx_free(ctx);
}

/* f16 and bf16 inputs are rounded to nearest even and read back exactly. */
static void t_half_types(const void *arg) {
    (void)arg;
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = kft_task(ctx, "tasks/cuda/bgemm");
    /* a bf16 input round-trips through the generator: every value is representable */
    kf_shape sh = t->shapes[1];
    kf_extents ex;
    char err[256];
    CHECK(kf_data_extents(t, &sh, &ex, err, sizeof err) == 0);
    kf_rng rng;
    CHECK(kf_rng_seed(&rng, 7) == 0);
    kf_inputs in;
    CHECK(kf_data_gen_inputs(t, &ex, &rng, 0, &in) == 0);
    double sum = 0, sum2 = 0;
    for (int64_t k = 0; k < ex.count[0]; k++) {
        double v = kf_data_get(KF_T_BF16, in.buf[0], k);
        sum += v, sum2 += v * v;
    }
    double mean = sum / (double)ex.count[0], var = sum2 / (double)ex.count[0] - mean * mean;
    CHECKF(fabs(mean) < 0.01 && fabs(var - 1) < 0.02, "mean %g var %g", mean, var);
    kf_data_free_inputs(t, &in);
    kf_rng_free(&rng);
    /* per-buffer tolerance: gdn_decode's bf16 output has its own */
    kf_task *g = kft_task(ctx, "tasks/cuda/gdn_decode");
    double rt, at;
    for (int i = 0; i < g->nargs; i++) {
        if (!strcmp(g->args[i].name, "o")) {
            kf_task_tolerance(g, &g->args[i], &rt, &at);
            CHECK(rt == 1e-2 && at == 1e-2);
        }
        if (!strcmp(g->args[i].name, "state")) {
            kf_task_tolerance(g, &g->args[i], &rt, &at);
            CHECK(rt == 1e-4 && at == 1e-5);
        }
    }
    kf_task_free(g);
    kf_task_free(t);
    kf_ctx_free(ctx);
}

/* ---- device-info and the GPU roofline ------------------------------------------ */

/* The measurement kernels build for every architecture kforge may meet; sm_75 has no
 * bf16 mma (the probe is compiled out there, and not measured). */
static void t_device_probes_build(const void *arg) {
    (void)arg;
    need_nvrtc();
    static const char *const archs[] = {"sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_100"};
    for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++) {
        char *cubin = NULL, err[1024];
        size_t n = 0;
        CHECKF(kf_device_probe_compile(archs[i], &cubin, &n, err, sizeof err) == 0, "%s: %s", archs[i], err);
        static const char *const k[] = {".text.kf_probe_copy", ".text.kf_probe_fma", ".text.kf_probe_mma"};
        for (int j = 0; j < 3; j++)
            CHECKF(memmem(cubin, n, k[j], strlen(k[j]) + 1), "%s: %s missing", archs[i], k[j]);
        free(cubin);
    }
    char *cubin = NULL, err[1024];
    size_t n;
    CHECK(kf_device_probe_compile("sm_1", &cubin, &n, err, sizeof err) == -1 && !cubin);
    CHECKF(strstr(err, "sm_1"), "%s", err);
}

static int kforge_cli(const char *env, const char *args, char *out, size_t n) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "cd %s && %s %s %s", kft_src("."), env, kft_bin("kforge"), args);
    return kft_run(cmd, out, n);
}

/* Without a driver, device-info says so and exits 2 (JSON too); bad options are usage
 * errors. */
static void t_device_info_no_driver(const void *arg) {
    (void)arg;
    static char out[1 << 16];
    const char *nodrv = "KFORGE_LIBCUDA=/nonexistent/libcuda.so.1";
    CHECK(kforge_cli(nodrv, "device-info 2>&1", out, sizeof out) == 2);
    CHECKF(strstr(out, "no CUDA driver") && strstr(out, "/nonexistent/libcuda.so.1"), "%s", out);
    CHECK(kforge_cli(nodrv, "device-info --json --refresh 2>/dev/null", out, sizeof out) == 2);
    json_t *j = json_loads(out, 0, NULL);
    CHECKF(j && !strcmp(json_string_value(json_object_get(j, "verdict")), "error") &&
               strstr(json_string_value(json_object_get(j, "error")), "no CUDA driver"),
           "%s", out);
    json_decref(j);
    CHECK(kforge_cli(nodrv, "device-info --device x 2>&1", out, sizeof out) == 2 && strstr(out, "--device"));
    CHECK(kforge_cli(nodrv, "device-info --colour 2>&1", out, sizeof out) == 2 && strstr(out, "--colour"));
    CHECK(kforge_cli("", "help", out, sizeof out) == 0 && strstr(out, "device-info"));
}

static double rel(double a, double b) { return fabs(a - b) / fmax(fabs(b), 1e-300); }

/* device-info's host side against a stand-in driver (tests/fake_libcuda.c: an H200
 * whose kernels do nothing and whose events are FAKECUDA_MS apart): the probes are
 * compiled, launched and timed, the rates follow from the work and the time, the
 * cache serves the second call and keeps the maxima, and driver errors exit 2. */
static void t_device_info_fake_driver(const void *arg) {
    (void)arg;
    need_nvrtc();
    char tmp[] = "/tmp/kft-devfake-XXXXXX", env[1024];
    CHECK(mkdtemp(tmp));
    static char out[1 << 16];
    snprintf(env, sizeof env, "KFORGE_CACHE_DIR=%s KFORGE_LIBCUDA=%s", tmp, kft_bin("libkft_fakecuda.so"));
    CHECKF(kforge_cli(env, "device-info --json 2>&1", out, sizeof out) == 0, "%s", out);
    json_t *a = json_loads(out, 0, NULL);
    CHECKF(a && !strcmp(json_string_value(json_object_get(a, "source")), "measured"), "%s", out);
    CHECK(!strcmp(json_string_value(json_object_get(a, "name")), "Fake H200"));
    CHECK(!strcmp(json_string_value(json_object_get(a, "uuid")), "GPU-f0f1f2f3-f4f5-f6f7-f8f9-fafbfcfdfeff"));
    CHECK(!strcmp(json_string_value(json_object_get(a, "arch")), "sm_90"));
    CHECK(json_integer_value(json_object_get(a, "sms")) == 132 &&
          json_integer_value(json_object_get(a, "l2_bytes")) == 60 << 20 &&
          json_integer_value(json_object_get(a, "driver_version")) == 13000);
    /* copy: two buffers of 8 x L2, read + written in 25 ms; compute: 8 blocks of 256
     * per SM, 64 iterations (the first launch already took 20 ms or more) */
    double bytes = 8.0 * (60 << 20), threads = 132.0 * 8 * 256;
    json_t *m = json_object_get(a, "measured");
    CHECKF(rel(json_number_value(json_object_get(m, "copy_bytes_per_s")), 2 * bytes / 0.025) < 1e-5, "%s",
           out);
    CHECKF(rel(json_number_value(json_object_get(m, "fp32_flops_per_s")), 256 * threads * 64 / 0.025) < 1e-5,
           "%s", out);
    CHECKF(rel(json_number_value(json_object_get(m, "bf16_tensor_flops_per_s")),
               1024 * threads * 64 / 0.025) < 1e-5,
           "%s", out);
    json_t *th = json_object_get(a, "theoretical");
    CHECK(rel(json_number_value(json_object_get(th, "mem_bytes_per_s")), 3201e6 * 6144 * 2 / 8) < 1e-5);
    CHECK(rel(json_number_value(json_object_get(th, "bf16_flops_per_s")), 132 * 1.98e9 * 4096) < 1e-5);
    CHECK(rel(json_number_value(json_object_get(th, "peak_flops_per_s")), 132 * 1.98e9 * 8192) < 1e-5);
    CHECK(json_is_null(json_object_get(th, "fp4_flops_per_s")));
    /* cached: the same figures, no measurement (a failing launch would show) */
    char env2[1200];
    snprintf(env2, sizeof env2, "%s FAKECUDA_FAIL=cuLaunchKernel", env);
    CHECKF(kforge_cli(env2, "device-info --json 2>&1", out, sizeof out) == 0, "%s", out);
    json_t *b = json_loads(out, 0, NULL);
    CHECKF(b && !strcmp(json_string_value(json_object_get(b, "source")), "cache"), "%s", out);
    CHECK(json_equal(json_object_get(a, "measured"), json_object_get(b, "measured")));
    /* --refresh on a "busy" device (50 ms) keeps the best; a faster one (20 ms) raises it */
    snprintf(env2, sizeof env2, "%s FAKECUDA_MS=50", env);
    CHECKF(kforge_cli(env2, "device-info --json --refresh 2>&1", out, sizeof out) == 0, "%s", out);
    json_t *c = json_loads(out, 0, NULL);
    CHECKF(c && !strcmp(json_string_value(json_object_get(c, "source")), "measured") &&
               json_equal(json_object_get(a, "measured"), json_object_get(c, "measured")),
           "%s", out);
    snprintf(env2, sizeof env2, "%s FAKECUDA_MS=20", env);
    CHECKF(kforge_cli(env2, "device-info --json --refresh 2>&1", out, sizeof out) == 0, "%s", out);
    json_t *d = json_loads(out, 0, NULL);
    CHECKF(d && rel(json_number_value(json_object_get(json_object_get(d, "measured"), "copy_bytes_per_s")),
                    2 * bytes / 0.020) < 1e-5,
           "%s", out);
    /* the table */
    CHECKF(kforge_cli(env, "device-info", out, sizeof out) == 0 && strstr(out, "Fake H200") &&
               strstr(out, "sm_90") && strstr(out, "bf16 tensor") && strstr(out, "from the cache"),
           "%s", out);
    /* errors: exit 2 with what failed */
    snprintf(env2, sizeof env2, "%s FAKECUDA_FAIL=cuMemAlloc_v2", env);
    CHECKF(kforge_cli(env2, "device-info --refresh 2>&1", out, sizeof out) == 2 &&
               strstr(out, "cuMemAlloc") && strstr(out, "CUDA_ERROR_OUT_OF_MEMORY"),
           "%s", out);
    snprintf(env2, sizeof env2, "%s FAKECUDA_FAIL=cuInit", env);
    CHECKF(kforge_cli(env2, "device-info 2>&1", out, sizeof out) == 2 &&
               strstr(out, "no usable CUDA device: cuInit"),
           "%s", out);
    CHECKF(kforge_cli(env, "device-info --device 1 2>&1", out, sizeof out) == 2 &&
               strstr(out, "1 CUDA device"),
           "%s", out);
    /* two at once on a fresh cache: one measures, the other waits and reads its figures */
    char tmp2[] = "/tmp/kft-devfake2-XXXXXX", cmd[2048];
    CHECK(mkdtemp(tmp2));
    snprintf(env2, sizeof env2, "KFORGE_CACHE_DIR=%s KFORGE_LIBCUDA=%s FAKECUDA_SLEEP_US=20000", tmp2,
             kft_bin("libkft_fakecuda.so"));
    snprintf(cmd, sizeof cmd, "device-info --json & %s %s device-info --json; wait", env2, kft_bin("kforge"));
    CHECK(kforge_cli(env2, cmd, out, sizeof out) == 0);
    CHECKF(strstr(out, "\"source\":\"measured\"") && strstr(out, "\"source\":\"cache\""), "%s", out);
    kf__rmtree(tmp2);
    json_decref(a);
    json_decref(b);
    json_decref(c);
    json_decref(d);
    kf__rmtree(tmp);
}

/* An H200 as device-info would see it, with ceilings near what it measures. */
static kf_devinfo fake_h200(void) {
    kf_devinfo d;
    memset(&d, 0, sizeof d);
    snprintf(d.name, sizeof d.name, "NVIDIA H200");
    snprintf(d.uuid, sizeof d.uuid, "GPU-01234567-89ab-cdef-0123-456789abcdef");
    d.cc_major = 9, d.cc_minor = 0, d.sms = 132;
    d.sm_clock_khz = 1980000, d.mem_clock_khz = 3201000, d.bus_width_bits = 6144;
    d.l2_bytes = 60 << 20, d.total_mem = 150000000000ll;
    d.driver_version = 13000;
    d.copy_bytes_per_s = 4.25e12, d.fp32_flops_per_s = 6.0e13, d.tensor_flops_per_s = 6.5e14;
    return d;
}

/* The hard floor: honest figures pass (even beyond the measured ceilings), impossible
 * ones are refused, one L2 of bytes is forgiven, an unknown architecture keeps a wide
 * margin, and missing ceilings refuse nothing. */
static void t_roofline_floor(const void *arg) {
    (void)arg;
    kf_devinfo d = fake_h200();
    kf_device_theory th;
    kf_device_theory_of(&d, &th);
    CHECKF(fabs(th.mem_bytes_per_s - 4.917e12) < 1e10, "%g", th.mem_bytes_per_s);
    CHECKF(fabs(th.bf16 - 132 * 1.98e9 * 4096) < 1e9 && th.peak == th.fp8, "%g %g", th.bf16, th.peak);
    kf_device_roof r;
    /* a copy of 1 GB: at the measured bandwidth, and 10% beyond the theoretical one */
    double by = 1e9, t = by / d.copy_bytes_per_s * 1e9;
    CHECK(kf_device_roofline(&d, 0, by, 0, t, &r) == 0);
    CHECKF(fabs(r.tmin_ns / t - 1) < 1e-9 && !strcmp(r.flops_ceiling, "fp32"), "%g", r.tmin_ns);
    CHECKF(fabs(r.hard_bytes - (by - (60 << 20))) < 1 && fabs(r.hard_bw - 1.1 * th.mem_bytes_per_s) < 1e6,
           "%g %g", r.hard_bytes, r.hard_bw);
    double beyond = (by - (60 << 20)) / (1.05 * th.mem_bytes_per_s) * 1e9;
    CHECK(kf_device_roofline(&d, 0, by, 0, beyond, &r) == 0);
    /* the same kernel under a cost model that says 100x the bytes */
    CHECK(kf_device_roofline(&d, 0, 100 * by, 0, t, &r) == 1);
    CHECKF(r.floor_ns > 50 * t, "%g vs %g", r.floor_ns, t);
    /* L2: 50 MiB of traffic may never reach DRAM; L2 + 1 GB must */
    CHECK(kf_device_roofline(&d, 0, 50 << 20, 0, 100, &r) == 0 && r.floor_ns == 0);
    CHECK(kf_device_roofline(&d, 0, (60 << 20) + by, 0, 1000, &r) == 1);
    CHECKF(fabs(r.floor_ns - by / (1.1 * th.mem_bytes_per_s) * 1e9) < 1, "%g", r.floor_ns);
    /* the event timer's slack: just under the floor is not refused */
    CHECK(kf_device_roofline(&d, 0, (60 << 20) + by, 0, r.floor_ns - 1000, &r) == 0);
    /* bf16 GEMM 4096^3: 790 TFLOP/s is above the measured mma.sync rate (fraction > 1)
     * but honest; 3 PFLOP/s is beyond even fp8 */
    double fl = 2.0 * 4096 * 4096 * 4096, gb = 2.0 * 3 * 4096 * 4096;
    CHECK(kf_device_roofline(&d, fl, gb, 1, fl / 790e12 * 1e9, &r) == 0);
    CHECKF(!strcmp(r.flops_ceiling, "tensor") && r.tmin_ns / (fl / 790e12 * 1e9) > 1.0, "%g", r.tmin_ns);
    CHECK(kf_device_roofline(&d, fl, gb, 1, fl / 3e15 * 1e9, &r) == 1);
    CHECKF(fabs(r.hard_flops - 1.1 * th.fp8) < 1e9, "%g", r.hard_flops);
    /* f32 buffers: the roofline uses the FMA rate, the floor still the fastest path
     * (a kernel may use tf32 or bf16 tensor cores and pass the tolerance) */
    CHECK(kf_device_roofline(&d, fl, gb, 0, fl / 500e12 * 1e9, &r) == 0 && !strcmp(r.flops_ceiling, "fp32"));
    /* an architecture kforge does not know: measured figures only, 8x on the rates */
    kf_devinfo u = d;
    u.cc_major = 12, u.cc_minor = 7;
    kf_device_theory_of(&u, &th);
    CHECK(th.peak == 0 && th.mem_bytes_per_s > 0);
    CHECK(kf_device_roofline(&u, fl, gb, 1, fl / 4e15 * 1e9, &r) == 0);
    CHECKF(fabs(r.hard_flops - 1.1 * 8 * u.tensor_flops_per_s) < 1e9, "%g", r.hard_flops);
    CHECK(kf_device_roofline(&u, fl, gb, 1, fl / 1e16 * 1e9, &r) == 1);
    /* no memory clock: the measured bandwidth alone, with a wider margin (a kernel
     * that only reads can beat a copy) */
    u.mem_clock_khz = 0;
    CHECK(kf_device_roofline(&u, 0, (60 << 20) + by, 0, by / (1.2 * u.copy_bytes_per_s) * 1e9, &r) == 0);
    CHECKF(fabs(r.hard_bw - 1.25 * u.copy_bytes_per_s) < 1e6, "%g", r.hard_bw);
    /* nothing measured and nothing known: no floor, nothing refused */
    kf_devinfo z;
    memset(&z, 0, sizeof z);
    CHECK(kf_device_roofline(&z, fl, 100 * by, 1, 1, &r) == 0 && r.floor_ns == 0 && r.tmin_ns == 0);
    /* no tensor figure (before sm_80): the FMA rate is the ceiling even for bf16 */
    u = d;
    u.tensor_flops_per_s = 0;
    kf_device_roofline(&u, fl, gb, 1, 1e9, &r);
    CHECK(!strcmp(r.flops_ceiling, "fp32"));
}

/* The cache file round-trips, is keyed by UUID and driver, and keeps the maxima. */
static void t_device_cache(const void *arg) {
    (void)arg;
    char tmp[] = "/tmp/kft-devcache-XXXXXX";
    CHECK(mkdtemp(tmp));
    setenv("KFORGE_CACHE_DIR", tmp, 1);
    kf_devinfo d = fake_h200();
    char path[4400];
    kf_device_cache_path(&d, path, sizeof path);
    CHECKF(strstr(path, tmp) && strstr(path, d.uuid) && strstr(path, "13000"), "%s", path);
    kf_devinfo e = fake_h200();
    e.copy_bytes_per_s = e.fp32_flops_per_s = e.tensor_flops_per_s = 0;
    CHECK(kf_device_cache_load(path, &e) == -1); /* nothing there yet */
    CHECK(kf_device_cache_save(path, &d) == 0);
    CHECK(kf_device_cache_load(path, &e) == 0);
    CHECK(e.copy_bytes_per_s == d.copy_bytes_per_s && e.fp32_flops_per_s == d.fp32_flops_per_s &&
          e.tensor_flops_per_s == d.tensor_flops_per_s);
    /* another driver or another device does not read it */
    kf_devinfo other = fake_h200();
    other.driver_version = 13010;
    CHECK(kf_device_cache_load(path, &other) == -1);
    other = fake_h200();
    other.uuid[5] ^= 1;
    CHECK(kf_device_cache_load(path, &other) == -1);
    /* a slower measurement (a busy device) does not lower the ceilings; a faster one
     * raises them */
    kf_devinfo slow = fake_h200();
    slow.copy_bytes_per_s = 3e12;
    slow.tensor_flops_per_s = 7e14;
    CHECK(kf_device_cache_save(path, &slow) == 0);
    CHECK(slow.copy_bytes_per_s == 4.25e12 && slow.tensor_flops_per_s == 7e14);
    CHECK(kf_device_cache_load(path, &e) == 0 && e.copy_bytes_per_s == 4.25e12 &&
          e.tensor_flops_per_s == 7e14);
    /* the file is the documented JSON */
    json_t *j = json_load_file(path, 0, NULL);
    CHECK(j && !strcmp(json_string_value(json_object_get(j, "uuid")), d.uuid));
    CHECK(json_number_value(json_object_get(json_object_get(j, "theoretical"), "bf16_flops_per_s")) > 1e15);
    CHECK(!json_object_get(j, "source"));
    json_decref(j);
    /* another kernel driver release with the same CUDA version: another file */
    kf_device_kernel_driver("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  "
                            "Release Build  (dvs-builder@U16-I3-B03-4-3)  Thu Jul 10 2025\n",
                            other.kernel_driver, sizeof other.kernel_driver);
    CHECKF(!strcmp(other.kernel_driver, "580.159.04"), "%s", other.kernel_driver);
    other = fake_h200();
    kf_device_kernel_driver(
        "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.54.03  Tue Jun  6 22:20:39 UTC 2023\n",
        other.kernel_driver, sizeof other.kernel_driver);
    CHECKF(!strcmp(other.kernel_driver, "535.54.03"), "%s", other.kernel_driver);
    char opath[4400];
    kf_device_cache_path(&other, opath, sizeof opath);
    CHECKF(strcmp(opath, path) && strstr(opath, "-13000-535.54.03.json"), "%s", opath);
    CHECK(kf_device_cache_load(path, &other) == -1);
    kf_device_kernel_driver("garbage", other.kernel_driver, sizeof other.kernel_driver);
    CHECK(other.kernel_driver[0] == 0);
    /* a damaged file is ignored (measured again), not believed */
    FILE *f = fopen(path, "w");
    fputs("{\"uuid\": \"GPU-01234567-89ab-cdef-0123-456789abcdef\", \"driver_version\": 13000, "
          "\"measured\": {\"copy_bytes_per_s\": -1, \"fp32_flops_per_s\": 1e13}}",
          f);
    fclose(f);
    CHECK(kf_device_cache_load(path, &e) == -1);
    unsetenv("KFORGE_CACHE_DIR");
    kf__rmtree(tmp);
}

static void need_gpu(void) {
    char why[512];
    if (!kft_have_gpu(why, sizeof why)) kft_skip("needs a GPU: %s", why);
}

static double jnum(json_t *o, const char *a, const char *b) {
    json_t *x = json_object_get(o, a);
    return json_number_value(b ? json_object_get(x, b) : x);
}

/* GPU: device-info measures sane ceilings once, then serves them from the cache;
 * --refresh measures again and keeps the best. */
static void t_gpu_device_info(const void *arg) {
    (void)arg;
    need_gpu();
    char tmp[] = "/tmp/kft-devinfo-XXXXXX", env[128];
    CHECK(mkdtemp(tmp));
    snprintf(env, sizeof env, "KFORGE_CACHE_DIR=%s", tmp);
    static char out[1 << 16];
    uint64_t t0 = kf__now_ns();
    CHECKF(kforge_cli(env, "device-info --json", out, sizeof out) == 0, "%s", out);
    double first = (double)(kf__now_ns() - t0) / 1e9;
    json_t *a = json_loads(out, 0, NULL);
    CHECKF(a && !strcmp(json_string_value(json_object_get(a, "source")), "measured"), "%s", out);
    fprintf(stderr, "    %s\n", out);
    double bw = jnum(a, "measured", "copy_bytes_per_s"), f32 = jnum(a, "measured", "fp32_flops_per_s");
    double tc = jnum(a, "measured", "bf16_tensor_flops_per_s");
    CHECKF(bw > 1e11 && bw < 2e13, "copy %g B/s", bw);
    CHECKF(f32 > 1e12 && f32 < 1e15, "fp32 %g FLOP/s", f32);
    CHECKF(jnum(a, "sms", NULL) > 0 && jnum(a, "l2_bytes", NULL) > 0 && jnum(a, "total_mem_bytes", NULL) > 0,
           "%s", out);
    CHECKF(!strncmp(json_string_value(json_object_get(a, "uuid")), "GPU-", 4), "%s", out);
    if (jnum(a, "theoretical", "mem_bytes_per_s") > 0) /* measured below the datasheet */
        CHECKF(bw < 1.05 * jnum(a, "theoretical", "mem_bytes_per_s"), "%s", out);
    if (jnum(a, "theoretical", "fp32_flops_per_s") > 0)
        CHECKF(f32 < 1.05 * jnum(a, "theoretical", "fp32_flops_per_s") &&
                   f32 > 0.25 * jnum(a, "theoretical", "fp32_flops_per_s"),
               "%s", out);
    if (jnum(a, "theoretical", "bf16_flops_per_s") > 0) /* lows: another test may share the GPU */
        CHECKF(tc > 0.1 * jnum(a, "theoretical", "bf16_flops_per_s") &&
                   tc < 1.05 * jnum(a, "theoretical", "bf16_flops_per_s"),
               "%s", out);
    /* the second call: the same figures, from the cache */
    t0 = kf__now_ns();
    CHECKF(kforge_cli(env, "device-info --json", out, sizeof out) == 0, "%s", out);
    double second = (double)(kf__now_ns() - t0) / 1e9;
    json_t *b = json_loads(out, 0, NULL);
    CHECKF(b && !strcmp(json_string_value(json_object_get(b, "source")), "cache"), "%s", out);
    CHECK(jnum(b, "measured", "copy_bytes_per_s") == bw &&
          jnum(b, "measured", "bf16_tensor_flops_per_s") == tc);
    CHECKF(second < first, "cached call %.2f s, measuring call %.2f s", second, first);
    fprintf(stderr, "    measured in %.2f s, cached in %.2f s\n", first, second);
    /* --refresh measures again and keeps the best */
    CHECKF(kforge_cli(env, "device-info --json --refresh", out, sizeof out) == 0, "%s", out);
    json_t *c = json_loads(out, 0, NULL);
    CHECKF(c && !strcmp(json_string_value(json_object_get(c, "source")), "measured"), "%s", out);
    CHECK(jnum(c, "measured", "copy_bytes_per_s") >= bw && jnum(c, "measured", "fp32_flops_per_s") >= f32);
    /* the table */
    CHECKF(kforge_cli(env, "device-info", out, sizeof out) == 0 && strstr(out, "bf16 tensor") &&
               strstr(out, "from the cache"),
           "%s", out);
    CHECKF(kforge_cli(env, "device-info --device 64 2>&1", out, sizeof out) == 2 &&
               strstr(out, "CUDA device"),
           "%s", out);
    json_decref(a);
    json_decref(b);
    json_decref(c);
    kf__rmtree(tmp);
}

/* GPU: the bundled tasks' fast candidates are benched with the roofline, and none is
 * refused as impossible. */
static void t_gpu_roofline_bundled(const void *arg) {
    const char *task = arg;
    need_gpu();
    char rel[128], cand[160];
    snprintf(rel, sizeof rel, "tasks/cuda/%s", task);
    snprintf(cand, sizeof cand, "%s/candidates/fast.cu", rel);
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = kft_task(ctx, rel);
    kf_opts o;
    kf_opts_init(&o);
    o.bench_min_time_s = 0.05;
    o.bench_min_runs = 11;
    o.bench_max_runs = 41;
    kf_result *r = NULL;
    CHECKF(kf_bench(ctx, t, kft_src(cand), &o, &r) == KF_OK, "%s", kf_errmsg(ctx));
    char *js = kf_result_json(r);
    CHECKF(kf_result_verdict(r) == KF_VERDICT_ACCEPTED, "honest %s refused: %s", cand, js);
    json_t *j = json_loads(js, 0, NULL);
    json_t *ceil = json_object_get(j, "ceilings");
    const char *src = json_string_value(json_object_get(ceil, "source"));
    CHECKF(src && (!strcmp(src, "cache") || !strcmp(src, "measured")), "%s", js);
    CHECK(jnum(j, "ceilings", "bytes_per_s") > 1e11 && jnum(j, "ceilings", "tensor_flops_per_s") > 0);
    json_t *shapes = json_object_get(j, "shapes");
    CHECK(json_array_size(shapes) > 0);
    for (size_t i = 0; i < json_array_size(shapes); i++) {
        json_t *sh = json_array_get(shapes, i);
        double frac = jnum(sh, "roofline_fraction", NULL);
        CHECKF(frac > 0 && json_is_string(json_object_get(sh, "roofline_flops_ceiling")), "%s", js);
        /* honest times stay above the floor (the refusal forgives 2 us of timer slack) */
        CHECKF(jnum(sh, "candidate_ns", NULL) + 2000 >= jnum(sh, "floor_ns", NULL), "%s", js);
        fprintf(stderr, "    shape %zu: %.0f ns, roofline %.2f (%s), floor %.0f ns\n", i,
                jnum(sh, "candidate_ns", NULL), frac,
                json_string_value(json_object_get(sh, "roofline_flops_ceiling")), jnum(sh, "floor_ns", NULL));
    }
    json_decref(j);
    free(js);
    kf_result_free(r);
    kf_task_free(t);
    kf_ctx_free(ctx);
}

/* Host mode: every honest and red-team host-mode file of the corpora builds with nvcc
 * (their verdicts need a GPU: test_corpus.c), and the libraries they link are named. */
static void t_host_build(const void *arg) {
    (void)arg;
    need_nvcc();
    setenv("KFORGE_CUDA_ARCH", "sm_90", 1);
    const char *dirs[] = {"tests/honest/cuda", "tests/redteam/cuda"};
    int built_n = 0;
    for (int di = 0; di < 2; di++) {
        DIR *d = opendir(kft_src(dirs[di]));
        CHECK(d);
        struct dirent *e;
        while ((e = readdir(d))) {
            if (strncmp(e->d_name, "host_", 5) || !strstr(e->d_name, ".cu")) continue;
            char fp[300], task[128] = "";
            snprintf(fp, sizeof fp, "%s/%s", dirs[di], e->d_name);
            char *text = NULL;
            size_t len = 0;
            CHECK(kf__read_file(kft_src(fp), 1 << 20, &text, &len) == 0);
            const char *tk = strstr(text, "task=");
            CHECKF(tk, "%s: no task=", fp);
            sscanf(tk + 5, "%127s", task);
            free(text);
            built o;
            memset(&o, 0, sizeof o);
            o.ctx = kf_ctx_new();
            o.t = kft_task(o.ctx, task);
            kf_candidate *c = NULL;
            CHECKF(kf_candidate_load(o.ctx, o.t, kft_src(fp), NULL, 0, &c) == KF_OK, "%s", kf_errmsg(o.ctx));
            snprintf(o.dir, sizeof o.dir, "/tmp/kft-host-XXXXXX");
            CHECK(mkdtemp(o.dir));
            CHECKF(kf_backend_compile(kf_backend_get("cuda"), o.ctx, o.t, kft_src(fp), c->text, c->len,
                                      c->params, c->nparams, o.dir, 120, &o.b) == KF_OK,
                   "%s", kf_errmsg(o.ctx));
            CHECKF(o.b.ok && o.b.host, "%s: %s\n%s", fp, o.b.message ? o.b.message : "",
                   o.b.log ? o.b.log : "");
            if (strstr(c->text, "kforge:link cublas"))
                CHECKF(o.b.libraries && strstr(o.b.libraries, "cublas") &&
                           strstr(o.b.libraries, "libcublas.so"),
                       "%s: libraries '%s'", fp, o.b.libraries ? o.b.libraries : "");
            kf_candidate_free(c);
            built_free(&o);
            built_n++;
        }
        closedir(d);
    }
    CHECKF(built_n >= 8, "only %d host-mode corpus files", built_n);
    fprintf(stderr, "    %d host-mode files built\n", built_n);
}

static const char host_ok[] =
    "// kforge:host\n"
    "__global__ void cp(const float *x, float *y, int64_t n) {\n"
    "  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; if (i < n) y[i] = x[i];\n}\n"
    "extern \"C\" int kforge_launch(const float *x, float *y, int64_t rows, int64_t cols, cudaStream_t s) {\n"
    "  cp<<<(unsigned)((rows * cols + 255) / 256), 256, 0, s>>>(x, y, rows * cols);\n  return 0;\n}\n";

/* Host mode's errors: file:line from nvcc, a wrong signature, a missing kforge_launch,
 * a library outside the allow-list, kforge:launch in a host file; the task-level
 * launch_mode; the cache. */
static void t_host_errors(const void *arg) {
    (void)arg;
    need_nvcc();
    setenv("KFORGE_CUDA_ARCH", "sm_90", 1);
    char tmp[] = "/tmp/kft-hostcache-XXXXXX";
    CHECK(mkdtemp(tmp));
    setenv("KFORGE_CACHE_DIR", tmp, 1);
    built o;
    build_text(&o, "tasks/cuda/softmax", "ok.cu", host_ok, NULL, 0);
    CHECKF(o.b.ok && o.b.host && o.b.nlaunch == 0 && !o.b.cached, "%s\n%s", o.b.message, o.b.log);
    CHECKF(o.b.libraries && !o.b.libraries[0], "libraries '%s'", o.b.libraries);
    /* built as a user would: nothing of kforge's in the object (no shim, no header) */
    char *obj = NULL;
    size_t objn = 0;
    CHECK(!kf__read_file(o.b.so_path, 1u << 30, &obj, &objn) && objn > 8);
    CHECK(!memmem(obj, objn, "kforge_host_call", 16) && !memmem(obj, objn, "kf_host.h", 9));
    CHECK(memmem(obj, objn, "kforge_launch", 13));
    free(obj);
    built_free(&o);
    build_text(&o, "tasks/cuda/softmax", "ok.cu", host_ok, NULL, 0);
    CHECK(o.b.ok && o.b.cached);
    built_free(&o);

    static const struct {
        const char *text, *want;
        kf_reason why;
    } bad[] = {
        {"// kforge:host\nextern \"C\" int kforge_launch(const float *x, float *y, int64_t r, int64_t c, "
         "cudaStream_t s) {\n"
         "  return r +;\n}\n",
         "syn.cu(3)", KF_REASON_COMPILE_ERROR},
        /* y is an output: float *, not const float * */
        {"// kforge:host\nextern \"C\" int kforge_launch(const float *x, const float *y, int64_t r, int64_t "
         "c, cudaStream_t s) {\n"
         "  return 0;\n}\n",
         "syn.cu(2)", KF_REASON_COMPILE_ERROR},
        {"// kforge:host\nextern \"C\" void kforge_launch(const float *x, float *y, int64_t r, int64_t c, "
         "cudaStream_t s) {\n"
         "}\n",
         "syn.cu(2)", KF_REASON_COMPILE_ERROR},
        {"// kforge:host\nextern \"C\" int kforge_other(void) { return 0; }\n", "kforge_launch",
         KF_REASON_MISSING_ENTRY},
        {"// kforge:host\n// kforge:link cudnn\nextern \"C\" int kforge_launch(const float *x, float *y, "
         "int64_t r, int64_t c, cudaStream_t s) { return 0; }\n",
         "syn.cu:2: kforge:link 'cudnn' is not allowed", KF_REASON_COMPILE_ERROR},
        {"// kforge:host\n// kforge:launch kernel=k grid=(1) block=(1)\n",
         "syn.cu:2: kforge:launch in a host-mode file", KF_REASON_COMPILE_ERROR},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        build_text(&o, "tasks/cuda/softmax", "syn.cu", bad[i].text, NULL, 0);
        CHECKF(!o.b.ok && o.b.reason == bad[i].why && o.b.message && strstr(o.b.message, bad[i].want),
               "case %zu: want '%s', got %s: %s", i, bad[i].want, kf_reason_name(o.b.reason),
               o.b.message ? o.b.message : "(built)");
        built_free(&o);
    }
    /* no nvcc: an error of the environment (exit 2), never a rejection */
    setenv("KFORGE_NVCC", "/nonexistent/nvcc", 1);
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = kft_task(ctx, "tasks/cuda/softmax");
    kf_build b;
    memset(&b, 0, sizeof b);
    kf_status st = kf_backend_compile(kf_backend_get("cuda"), ctx, t, "x.cu", host_ok, strlen(host_ok), NULL,
                                      0, tmp, 60, &b);
    CHECKF(st == KF_EBACKEND && strstr(kf_errmsg(ctx), "nvcc"), "status %d: %s", (int)st, kf_errmsg(ctx));
    unsetenv("KFORGE_NVCC");
    kf_build_free(&b);
    kf_task_free(t);
    kf_ctx_free(ctx);
    unsetenv("KFORGE_CACHE_DIR");
    kf__rmtree(tmp);
}

/* The directive and the task-level default pick the mode; the generated signature
 * follows the task's types. */
static void t_host_mode_select(const void *arg) {
    (void)arg;
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = kft_task(ctx, "tasks/cuda/bgemm");
    const char *k = "// kforge:launch kernel=k grid=(1) block=(1)\n", *h = "// kforge:host\n",
               *none = "int x;\n";
    CHECK(!kf__cuda_host_mode(t, k, strlen(k)));
    CHECK(kf__cuda_host_mode(t, h, strlen(h)));
    CHECK(!kf__cuda_host_mode(t, none, strlen(none)));
    const char *hostile = "// kforge:hostile\n";
    CHECK(!kf__cuda_host_mode(t, hostile, strlen(hostile)));
    t->launch_host = 1; /* "launch_mode": "host" */
    CHECK(kf__cuda_host_mode(t, none, strlen(none)));
    CHECK(!kf__cuda_host_mode(t, k, strlen(k))); /* the reference may stay in kernel mode */
    /* the library list comes from DT_NEEDED, minus the C/C++ runtime (this test binary
     * needs jansson and libc) */
    char *elf = NULL, libs[512];
    size_t elen = 0;
    CHECK(kf__read_file("/proc/self/exe", 1u << 30, &elf, &elen) == 0);
    CHECK(kf__elf_needed((unsigned char *)elf, elen, libs, sizeof libs) == 0);
    CHECKF(strstr(libs, "libjansson") && !strstr(libs, "libc.so"), "%s", libs);
    CHECK(kf__elf_needed((unsigned char *)"KFHOST01", 8, libs, sizeof libs) == -1);
    free(elf);
    char *hdr = kf__cuda_host_header(t);
    CHECKF(strstr(hdr, "kforge_launch(const __nv_bfloat16 *, const __nv_bfloat16 *, __nv_bfloat16 *, "
                       "int64_t, int64_t, int64_t, cudaStream_t)"),
           "%s", hdr);
    free(hdr);
    kf_task_free(t);
    kf_ctx_free(ctx);
}

/* The fairness rule (docs/cuda.md): a graph-replaying candidate against a baseline
 * launched kernel by kernel is unfair; unknown graph use is noted; the host protocol
 * applies to both sides when either is host mode. */
static void t_fairness(const void *arg) {
    (void)arg;
    char why[400];
    CHECK(kf_launch_fair(KF_MODE_KERNEL, KF_MODE_KERNEL, 1, why, sizeof why) == 1 && !why[0]);
    CHECK(kf_launch_fair(KF_MODE_HOST, KF_MODE_KERNEL, 1, why, sizeof why) == 1 && !why[0]);
    CHECK(kf_launch_fair(KF_MODE_GRAPH, KF_MODE_KERNEL, 1, why, sizeof why) == 0 && strstr(why, "graph"));
    CHECK(kf_launch_fair(KF_MODE_GRAPH, KF_MODE_HOST, 1, why, sizeof why) == 0 && strstr(why, "host code"));
    CHECK(kf_launch_fair(KF_MODE_GRAPH, KF_MODE_GRAPH, 1, why, sizeof why) == 1);
    CHECK(kf_launch_fair(KF_MODE_KERNEL, KF_MODE_GRAPH, 1, why, sizeof why) == 1);
    CHECK(kf_launch_fair(KF_MODE_HOST, KF_MODE_KERNEL, 0, why, sizeof why) == 1 && strstr(why, "unknown"));
    kf_build a = {0}, b = {0};
    CHECK(!kf_launch_host_timing(&a, &b));
    b.host = 1;
    CHECK(kf_launch_host_timing(&a, &b) && kf_launch_host_timing(&b, &a));
    CHECK(!strcmp(kf_launch_mode_name(KF_MODE_GRAPH), "graph"));
    /* library kernels by name */
    CHECK(kf_cupti_is_library("sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x32"));
    CHECK(kf_cupti_is_library("cutlass::Kernel2<cutlass_80_simt_sgemm>"));
    CHECK(!kf_cupti_is_library("softmax_fast"));
    /* libraries mapped at run time against those declared */
    char bad[256];
    CHECK(kf__cuda_undeclared("libcublas.so.13,libcublasLt.so.13,libfoo.so", "cublas,libcublas.so.13", bad,
                              sizeof bad) == 0);
    CHECK(kf__cuda_undeclared("libcublas.so.13,libcublasLt.so.13", "", bad, sizeof bad) == 2 &&
          strstr(bad, "libcublasLt"));
    CHECK(kf__cuda_undeclared("libcublas.so.13", "cublasLt", bad, sizeof bad) == 1 &&
          !strcmp(bad, "libcublas.so.13"));
    CHECK(kf__cuda_undeclared("libcudnn.so.9,libz.so.1", "cublas", bad, sizeof bad) == 1 &&
          !strcmp(bad, "libcudnn.so.9"));
    /* the per-shape report with and without CUPTI */
    kf_call_result cr;
    memset(&cr, 0, sizeof cr);
    kf_call_out co;
    memset(&co, 0, sizeof co);
    kf__cuda_launch_report(&co, &cr);
    CHECK(co.reported && !co.counted && co.note && strstr(co.note, "CUPTI"));
    cr.cupti = 1, cr.nlaunch = 3, cr.ngraph = 0, cr.nnames = 2, cr.nlib = 1;
    snprintf(cr.names[0], sizeof cr.names[0], "row_stats");
    snprintf(cr.names[1], sizeof cr.names[1], "cutlass_80_tensorop_s1688gemm");
    memset(&co, 0, sizeof co);
    kf__cuda_launch_report(&co, &cr);
    CHECK(co.counted && co.launches == 3 && co.nkernels == 2 && !co.library[0] && co.library[1] &&
          co.library_kernels == 1);
    struct kf_verdict v;
    kf_verdict_init(&v);
    kf_verdict_shape *s = kf_verdict_add_shape(&v);
    CHECK(kf_verdict_set_call(&v, s, &co) == 0);
    json_t *doc = kf_verdict_to_json(&v);
    char *js = json_dumps(json_array_get(json_object_get(doc, "shapes"), 0), JSON_COMPACT);
    CHECKF(js && !strcmp(js, "{\"sizes\":{},\"launches_per_call\":3,\"graph_launches\":0,\"memory_ops\":0,"
                             "\"kernels\":[\"row_stats\",\"cutlass_80_tensorop_s1688gemm\"],"
                             "\"library_kernels\":[\"cutlass_80_tensorop_s1688gemm\"]}"),
           "%s", js);
    free(js);
    json_decref(doc);
    kf_verdict_free(&v);
}

/* On a GPU: what a host-mode result reports. sgemm through cuBLAS: launch_mode host,
 * libraries with cublas, the host-mode sandbox flag, and per shape either CUPTI's
 * counts with cuBLAS's kernels flagged or launch_count null. bgemm replayed as a graph,
 * benched: launch modes per side, and a graph against the kernel-mode reference is
 * never a win (fair false), or graph use is "unknown" without CUPTI. */
static void t_host_gpu_report(const void *arg) {
    (void)arg;
    char why[512];
    if (!kft_have_gpu(why, sizeof why)) kft_skip("needs a GPU: %s", why);
    need_nvcc();
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = kft_task(ctx, "tasks/cuda/sgemm");
    kf_opts o;
    kf_opts_init(&o);
    o.call_timeout_s = 10;
    o.hidden_count = 1;
    kf_result *r = NULL;
    CHECKF(kf_check(ctx, t, kft_src("tasks/cuda/sgemm/candidates/host.cu"), &o, &r) == KF_OK, "%s",
           kf_errmsg(ctx));
    char *js = kf_result_json(r);
    json_error_t je;
    json_t *root = json_loads(js, 0, &je);
    CHECKF(kf_result_verdict(r) == KF_VERDICT_ACCEPTED, "%s", js);
    CHECKF(!strcmp(json_string_value(json_object_get(root, "launch_mode")), "host"), "%s", js);
    json_t *libs = json_object_get(root, "libraries"), *v;
    size_t i;
    int cub = 0;
    json_array_foreach(libs, i, v) cub |= strstr(json_string_value(v), "cublas") != NULL;
    CHECKF(cub, "no cublas in libraries: %s", js);
    json_t *ll = json_object_get(root, "libraries_loaded");
    if (json_is_array(ll)) { /* the coordinator reads the worker's maps as root */
        cub = 0;
        json_array_foreach(ll, i, v) cub |= strstr(json_string_value(v), "libcublas") != NULL;
        CHECKF(cub, "libcublas not among the mapped libraries: %s", js);
    }
    CHECKF(json_is_true(json_object_get(json_object_get(root, "sandbox"), "gpu_host_mode")), "%s", js);
    json_t *sh0 = json_array_get(json_object_get(root, "shapes"), 0);
    if (json_object_get(sh0, "launches_per_call")) {
        CHECKF(json_integer_value(json_object_get(sh0, "launches_per_call")) >= 1, "%s", js);
        CHECKF(json_array_size(json_object_get(sh0, "library_kernels")) >= 1,
               "cuBLAS kernels not flagged: %s", js);
        fprintf(stderr, "    CUPTI: %lld launches per call\n",
                (long long)json_integer_value(json_object_get(sh0, "launches_per_call")));
    } else {
        CHECKF(json_is_null(json_object_get(sh0, "launch_count")), "%s", js);
        fprintf(stderr, "    no CUPTI: launch_count null\n");
    }
    json_decref(root);
    free(js);
    kf_result_free(r);
    kf_task_free(t);

    /* cuBLAS behind the allow-list's back (dlopen, no kforge:link): the worker's mapped
     * libraries (read by the coordinator, as root) name it: sandbox_violation */
    char dldir[] = "/tmp/kft-hostdl-XXXXXX", dl[64];
    CHECK(mkdtemp(dldir));
    snprintf(dl, sizeof dl, "%s/dl.cu", dldir);
    FILE *df = fopen(dl, "w");
    CHECK(df);
    fputs("// kforge:host\n#include <dlfcn.h>\n#include <cublas_v2.h>\n"
          "extern \"C\" int kforge_launch(const float *a, const float *b, float *c, int64_t m, int64_t n, "
          "int64_t k, cudaStream_t s) {\n"
          "  static void *h; static cublasHandle_t hd;\n"
          "  if (!h && !(h = dlopen(\"libcublas.so.13\", RTLD_NOW)) && !(h = dlopen(\"libcublas.so\", "
          "RTLD_NOW))) return 1;\n"
          "  auto cr = (cublasStatus_t (*)(cublasHandle_t *))dlsym(h, \"cublasCreate_v2\");\n"
          "  auto ss = (cublasStatus_t (*)(cublasHandle_t, cudaStream_t))dlsym(h, \"cublasSetStream_v2\");\n"
          "  auto mm = (cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, "
          "int, const float *,\n"
          "      const float *, int, const float *, int, const float *, float *, int))dlsym(h, "
          "\"cublasSgemm_v2\");\n"
          "  if (!cr || !ss || !mm || (!hd && cr(&hd))) return 2;\n  ss(hd, s);\n  const float one = 1, zero "
          "= 0;\n"
          "  return mm(hd, CUBLAS_OP_N, CUBLAS_OP_N, (int)n, (int)m, (int)k, &one, b, (int)n, a, (int)k, "
          "&zero, c, (int)n) ? 3 : 0;\n}\n",
          df);
    fclose(df);
    t = kft_task(ctx, "tasks/cuda/sgemm");
    CHECKF(kf_check(ctx, t, dl, &o, &r) == KF_OK, "%s", kf_errmsg(ctx));
    js = kf_result_json(r);
    root = json_loads(js, 0, &je);
    if (json_is_array(json_object_get(root, "libraries_loaded"))) {
        int found = 0;
        for (int q = 0; q < kf_result_nreasons(r); q++)
            found |= kf_result_reason(r, q) == KF_REASON_SANDBOX_VIOLATION;
        CHECKF(kf_result_verdict(r) == KF_VERDICT_REJECTED && found, "an undeclared cuBLAS passed: %s", js);
    } else {
        fprintf(stderr, "    libraries_loaded unreadable (not root): the dlopen case is not judged\n");
    }
    json_decref(root);
    free(js);
    kf_result_free(r);
    kf_task_free(t);
    kf__rmtree(dldir);

    t = kft_task(ctx, "tasks/cuda/bgemm");
    o.bench_min_time_s = 0.05;
    o.bench_min_runs = 11;
    o.bench_max_runs = 31;
    /* against the kernel-mode reference (a graph baseline when CUPTI saw the graph),
     * then against a host-mode baseline, which cannot be captured: unfair */
    char vsdir[] = "/tmp/kft-hostvs-XXXXXX", vs[64];
    CHECK(mkdtemp(vsdir));
    snprintf(vs, sizeof vs, "%s/vs.cu", vsdir);
    FILE *f = fopen(vs, "w");
    CHECK(f);
    fputs("// kforge:host\n#include <cuda_bf16.h>\n"
          "__global__ void g(const __nv_bfloat16 *a, const __nv_bfloat16 *b, __nv_bfloat16 *c, int64_t m, "
          "int64_t n, int64_t k) {\n"
          "  int64_t col = blockIdx.x * 16 + threadIdx.x, row = blockIdx.y * 16 + threadIdx.y;\n"
          "  if (row >= m || col >= n) return;\n  float acc = 0;\n"
          "  for (int64_t p = 0; p < k; p++) acc += __bfloat162float(a[row * k + p]) * __bfloat162float(b[p "
          "* n + col]);\n"
          "  c[row * n + col] = __float2bfloat16(acc);\n}\n"
          "extern \"C\" int kforge_launch(const __nv_bfloat16 *a, const __nv_bfloat16 *b, __nv_bfloat16 *c, "
          "int64_t m,\n"
          "    int64_t n, int64_t k, cudaStream_t s) {\n"
          "  g<<<dim3((unsigned)((n + 15) / 16), (unsigned)((m + 15) / 16)), dim3(16, 16), 0, s>>>(a, b, c, "
          "m, n, k);\n"
          "  return 0;\n}\n",
          f);
    fclose(f);
    for (int pass = 0; pass < 2; pass++) {
        o.vs_path = pass ? vs : NULL;
        CHECKF(kf_bench(ctx, t, kft_src("tasks/cuda/bgemm/candidates/host.cu"), &o, &r) == KF_OK, "%s",
               kf_errmsg(ctx));
        js = kf_result_json(r);
        root = json_loads(js, 0, &je);
        CHECKF(kf_result_verdict(r) == KF_VERDICT_ACCEPTED, "%s", js);
        int timed = 0;
        json_array_foreach(json_object_get(root, "shapes"), i, v) {
            json_t *lm = json_object_get(v, "launch_mode");
            if (!lm) continue; /* the check's shapes carry no timing */
            timed++;
            const char *gu = json_string_value(json_object_get(v, "graph_use"));
            const char *cm = json_string_value(json_object_get(lm, "candidate"));
            const char *bm = json_string_value(json_object_get(lm, "baseline"));
            CHECKF(gu && (!strcmp(gu, "yes") || !strcmp(gu, "unknown")), "graph_use %s: %s", gu ? gu : "-",
                   js);
            if (!strcmp(gu, "unknown")) {
                CHECKF(json_object_get(v, "fair_note") && !strcmp(bm, pass ? "host" : "kernel"), "%s", js);
            } else if (!pass) {
                CHECKF(!strcmp(cm, "graph") && !strcmp(bm, "graph") &&
                           json_is_true(json_object_get(v, "fair")),
                       "a graph candidate needs a graph baseline: %s", js);
            } else {
                CHECKF(!strcmp(cm, "graph") && !strcmp(bm, "host") &&
                           json_is_false(json_object_get(v, "fair")) &&
                           json_is_false(json_object_get(v, "win")) && json_object_get(v, "fair_reason"),
                       "graph vs host baseline must be unfair: %s", js);
            }
        }
        CHECKF(timed >= 1, "no timed shape: %s", js);
        fprintf(stderr, "    bgemm graph vs %s: speedup %.3f, %d timed shape(s)\n",
                pass ? "host-mode baseline" : "reference", kf_result_speedup(r), timed);
        json_decref(root);
        free(js);
        kf_result_free(r);
    }
    kf__rmtree(vsdir);
    kf_task_free(t);
    kf_ctx_free(ctx);
}

/* GPU host mode's seccomp filter, without a GPU: it loads (its rules do not conflict),
 * lets through what the driver uses (any ioctl but TIOCSTI, read-write opens of
 * existing files, epoll, threads), refuses an open to write or create with EACCES, and
 * a forbidden call (a socket) traps with its number, which the coordinator names.
 * Which calls the real driver needs is for the GPU run to show. */
static int sigsys_pipe = -1;
/* GPU: a timing worker runs on the CPUs the coordinator left it, not on the coordinator's
 * own (which spin-waits for replies). A GPU worker once kept the coordinator's CPU: each
 * call waited about 4 ms for the spinning coordinator to be preempted, and the extra
 * host time made the sum dispatcher's host-mode gap fail its check (timing_mismatch).
 * At n = 100003 (400 KB to stage each way) both sides' gaps (coordinator's time per call
 * minus the worker's) stay under 1 ms, in kernel mode and host mode alike (0.3 ms on the
 * H200 after the fix, 3.9-7.6 ms before). Larger shapes' gaps hold their staging copies. */
static void t_gpu_worker_cpus(const void *arg) {
    (void)arg;
    need_gpu();
    kf_ctx *ctx = kf_ctx_new();
    kf_task *t = kft_task(ctx, "tasks/cuda/sum");
    const char *cands[] = {"tasks/cuda/sum/candidates/fast.cu", "tasks/cuda/sum/candidates/host.cu"};
    char why[512];
    for (int c = 0; c < 2; c++) {
        if (c == 1 && !kf__cuda_have_nvcc(why, sizeof why)) break;
        kf_opts o;
        kf_opts_init(&o);
        o.call_timeout_s = 20;
        o.cpu_limit_s = 60;
        o.bench_min_runs = 21;
        o.bench_max_runs = 41;
        o.bench_min_time_s = 0.05;
        kf_result *r = NULL;
        CHECKF(kf_bench(ctx, t, kft_src(cands[c]), &o, &r) == KF_OK, "%s", kf_errmsg(ctx));
        char *js = kf_result_json(r);
        json_error_t je;
        json_t *root = json_loads(js, 0, &je);
        CHECKF(kf_result_verdict(r) == KF_VERDICT_ACCEPTED, "%s", js);
        int pinned =
            json_is_true(json_object_get(json_object_get(root, "timing_cpus"), "coordinator_pinned"));
        size_t i;
        json_t *v;
        int timed = 0;
        json_array_foreach(json_object_get(root, "shapes"), i, v) {
            if (!json_object_get(v, "candidate_gap_ns")) continue;
            timed++;
            double gc = jnum(v, "candidate_gap_ns", NULL), gb = jnum(v, "baseline_gap_ns", NULL);
            fprintf(stderr, "    %s: gap candidate %.0f ns, baseline %.0f ns (coordinator pinned: %d)\n",
                    cands[c], gc, gb, pinned);
            double n = jnum(json_object_get(v, "sizes"), "n", NULL);
            if (pinned && n <= 200000) CHECKF(gc < 1e6 && gb < 1e6, "host time per call over 1 ms: %s", js);
        }
        CHECKF(timed >= 1, "no timed shape: %s", js);
        json_decref(root);
        free(js);
        kf_result_free(r);
    }
    kf_task_free(t);
    kf_ctx_free(ctx);
}

static void on_sys(int sig, siginfo_t *si, void *uc) {
    (void)sig;
    (void)uc;
    int nr = si->si_syscall;
    if (write(sigsys_pipe, &nr, sizeof nr) != (ssize_t)sizeof nr) _exit(3);
    _exit(0);
}

static void t_gpu_seccomp(const void *arg) {
    (void)arg;
    int p[2];
    CHECK(pipe(p) == 0);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        close(p[0]);
        sigsys_pipe = p[1];
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_sys;
        sa.sa_flags = SA_SIGINFO;
        if (sigaction(SIGSYS, &sa, NULL) || kf_policy_seccomp_gpu_host(getpid())) _exit(10);
        int fd = open("/dev/null", O_RDWR);
        if (fd < 0) _exit(11);
        int nb = 0;
        if (ioctl(fd, FIONREAD, &nb) && errno != ENOTTY && errno != EINVAL) _exit(12);
        char c = 'x';
        if (ioctl(fd, TIOCSTI, &c) == 0 || errno != EPERM) _exit(13);
        int ep = epoll_create1(EPOLL_CLOEXEC);
        if (ep < 0) _exit(14);
        /* a file to write is refused (EACCES), not trapped: libraries carry on */
        if (open("/tmp/kft-should-not-exist", O_WRONLY | O_CREAT, 0600) >= 0 || errno != EACCES) _exit(15);
        if (socket(AF_INET, SOCK_STREAM, 0) >= 0) _exit(17); /* traps first */
        _exit(16);
    }
    close(p[1]);
    int nr = -1, status = 0;
    ssize_t got = read(p[0], &nr, sizeof nr);
    close(p[0]);
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECKF(WIFEXITED(status) && WEXITSTATUS(status) == 0,
           "child status %d (10: the filter did not load; "
           "11-14: an allowed call failed; 15: a file opened for writing; 16: socket was not trapped)",
           WEXITSTATUS(status));
    CHECK(access("/tmp/kft-should-not-exist", F_OK) != 0);
    CHECKF(got == (ssize_t)sizeof nr && nr == SYS_socket, "trapped %d", nr);
    char *name = kf_policy_syscall_name(nr);
    CHECKF(name && !strcmp(name, "socket"), "%s", name ? name : "(null)");
    free(name);
}

void kft_register_cuda(void) {
    kft_add("cuda/gpu_seccomp", t_gpu_seccomp, NULL, 30);
    kft_add("cuda/gpu_worker_cpus", t_gpu_worker_cpus, NULL, 120);
    kft_add("cuda/host_gpu_report", t_host_gpu_report, NULL, 600);
    kft_add("cuda/gpu_own_context", t_gpu_own_context, NULL, 300);
    kft_add("cuda/host_build", t_host_build, NULL, 900);
    kft_add("cuda/host_errors", t_host_errors, NULL, 300);
    kft_add("cuda/host_mode_select", t_host_mode_select, NULL, 30);
    kft_add("cuda/fairness", t_fairness, NULL, 30);
    kft_add("cuda/bundled_build", t_bundled_build, NULL, 600);
    kft_add("cuda/errors", t_errors, NULL, 120);
    kft_add("cuda/toolkit_headers", t_toolkit_headers, NULL, 300);
    kft_add("cuda/launch_eval", t_launch_eval, NULL, 60);
    kft_add("cuda/arch_cache", t_arch_cache, NULL, 120);
    kft_add("cuda/deferred_worker", t_deferred_worker, NULL, 60);
    kft_add("cuda/big_smem", t_big_smem, NULL, 60);
    kft_add("cuda/idle_probe", t_idle_probe, NULL, 60);
    kft_add("cuda/driver_table_ro", t_driver_table_ro, NULL, 300);
    kft_add("cuda/timing_libraries", t_timing_libraries, NULL, 300);
    kft_add("cuda/cupti_ctx_names", t_cupti_ctx_names, NULL, 30);
    kft_add("cuda/host_nvrtc_worker", t_host_nvrtc_worker, NULL, 300);
    kft_add("cuda/persisting_l2", t_persisting_l2, NULL, 300);
    kft_add("cuda/gpu_write_open_refused", t_gpu_write_open_refused, NULL, 300);
    kft_add("cuda/wrapped_orphan", t_wrapped_orphan, NULL, 60);
    kft_add("cuda/cache", t_cache, NULL, 60);
    kft_add("cuda/compile_timeout", t_compile_timeout, NULL, 60);
    kft_add("cuda/no_gpu_is_clear", t_no_gpu_is_clear, NULL, 60);
    kft_add("cuda/half_types", t_half_types, NULL, 60);
    kft_add("cuda/device_probes_build", t_device_probes_build, NULL, 120);
    kft_add("cuda/device_info_no_driver", t_device_info_no_driver, NULL, 60);
    kft_add("cuda/device_info_fake_driver", t_device_info_fake_driver, NULL, 120);
    kft_add("cuda/roofline_floor", t_roofline_floor, NULL, 30);
    kft_add("cuda/device_cache", t_device_cache, NULL, 30);
    kft_add("cuda/gpu_device_info", t_gpu_device_info, NULL, 300);
    for (int i = 0; kft_cuda_tasks[i]; i++) {
        char name[128];
        snprintf(name, sizeof name, "cuda/gpu_roofline/%s", kft_cuda_tasks[i]);
        kft_add(name, t_gpu_roofline_bundled, kft_cuda_tasks[i], 300);
    }
}
