/*
 * gpu_worker.c - kforge-worker's GPU mode: runs one kernel-mode artifact (a cubin and
 * the names of its launched kernels) or one host-mode artifact (a shared object with
 * kforge_launch, built by nvcc) on the device. In kernel mode there is no candidate host
 * code; in host mode the candidate's code runs in this process, loaded only after the
 * confinement below, and may forge anything this process says: the coordinator checks
 * the outputs itself and cross-checks the reported time against its own clock.
 *
 * Setup (before SETUP_OK): load libcuda, retain the primary context of device 0, load
 * the cubin, resolve the kernels, allocate the device mirror of the arena and an L2
 * flush buffer (and its read kernel), poison the whole mirror, then drop root, set rlimits (no address-space
 * limit: the driver reserves terabytes of virtual space) and no_new_privs, and seal the
 * image. Each RUN copies the call's arena span to the mirror, launches, synchronises
 * the context, copies the span back, and re-poisons it on the device. A RUN marked
 * KF_RUN_PRECISE (only under compute-sanitizer) gives every buffer an allocation of
 * its own instead, so the tools see exact bounds and real uninitialised memory. A CUDA error
 * ends the worker with FAIL and the error's name (a sticky error poisons the context).
 */
#define _GNU_SOURCE
#include "../../sandbox/policy.h"
#include "../../sandbox/proto.h"
#include "../../sandbox/worker.h"
#include "cuda_api.h"
#include "cupti.h"
#include "modes.h"

#include <dlfcn.h>
#include <ffi.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAXK KF_PROTO_MAXLAUNCH
#define SLIDE ((size_t)32 << 20)

int kf_wk_is_gpu_artifact(const char *path) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    char m[8];
    int ok = read(fd, m, 8) == 8 && (!memcmp(m, "KFCUBIN1", 8) || !memcmp(m, "KFHOST01", 8));
    close(fd);
    return ok;
}

/* Host mode calls the candidate's kforge_launch itself, by the machine's C calling
 * convention: the object holds no shim of kforge's (threat #31). The call is built by
 * libffi (linked in statically) from the task's argument kinds plus the stream; it is
 * prepared once, at the first call, outside the timed span. */
static ffi_cif host_cif;
static ffi_type *host_types[KF_PROTO_MAXARGS + 1];
static int host_ready;

static int host_prepare(const kf_msg_run *m) {
    for (uint32_t i = 0; i < m->nargs; i++) host_types[i] = kf_wk_ffi_type(m->kind[i]);
    host_types[m->nargs] = &ffi_type_pointer; /* cudaStream_t */
    return ffi_prep_cif(&host_cif, FFI_DEFAULT_ABI, m->nargs + 1, &ffi_type_sint32, host_types) == FFI_OK
               ? 0
               : -1;
}

/* Host mode's seccomp filter traps: this handler names the forbidden call to the
 * coordinator ("sandbox_violation: system call N") and exits. Async-signal-safe: no
 * stdio, one send. A candidate may replace the handler; the forbidden call still does
 * not run (it then only loses the report). */
static volatile sig_atomic_t g_ready;
static void on_sigsys(int sig, siginfo_t *si, void *uc) {
    (void)sig;
    (void)uc;
    kf_msg_text m;
    memset(&m, 0, sizeof m);
    m.magic = KF_PROTO_MAGIC;
    m.type = g_ready ? KF_MSG_FAIL : KF_MSG_LOADFAIL;
    static const char pre[] = "sandbox_violation: forbidden system call ";
    memcpy(m.text, pre, sizeof pre - 1);
    char dig[16];
    int nd = 0, nr = si->si_syscall;
    unsigned v = nr < 0 ? 0u : (unsigned)nr;
    do dig[nd++] = (char)('0' + v % 10);
    while ((v /= 10) && nd < 15);
    for (int i = 0; i < nd; i++) m.text[sizeof pre - 1 + (size_t)i] = dig[nd - 1 - i];
    send(KF_WORKER_SOCK_FD, &m, sizeof m, MSG_NOSIGNAL);
    _exit(0);
}

/* The driver's table, through a read-only pointer to a page made read-only and sealed
 * before any candidate code loads (kf_cu_protect): host code cannot redirect the
 * entry points this worker times with. */
#define cu kf_cu
/* started through a wrapper (compute-sanitizer, parent pid "-"): leave through exit(),
 * so the tool's handlers in this process run and its report is complete */
static int wrapped;

static void fail_msg(uint32_t type, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail_msg(uint32_t type, const char *fmt, ...) {
    char buf[1000];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    kf_wk_send_text(type, buf);
    if (wrapped) exit(0);
    _exit(0);
}

#define CK(call, what)                                                            \
    do {                                                                          \
        CUresult r_ = (call);                                                     \
        if (r_) fail_msg(KF_MSG_LOADFAIL, "%s: %s", what, kf_cu_errname(cu, r_)); \
    } while (0)
#define CKRUN(call, what)                                                     \
    do {                                                                      \
        CUresult r_ = (call);                                                 \
        if (r_) fail_msg(KF_MSG_FAIL, "%s: %s", what, kf_cu_errname(cu, r_)); \
    } while (0)

static uint32_t rand32(void) {
    uint32_t v = 0;
    if (getrandom(&v, sizeof v, 0) != (ssize_t)sizeof v) v = (uint32_t)kf_wk_now_ns() * 2654435761u;
    return v;
}

/* A finite, out-of-range word: f32 lanes read as |x| ~ 2^100 with a random mantissa. */
static uint32_t poison_word(void) {
    return 0x71800000u | (rand32() & 0x007fffffu) | (rand32() & 0x80000000u);
}

/* The L2 flush: a kernel that READS a buffer twice the L2 size, so the timed kernel
 * starts with L2 full of clean lines of that buffer. A write-based flush (a memset)
 * leaves the L2 full of dirty lines, and the timed kernel then pays for writing them
 * back: about a quarter of a 4096x4096 softmax's time on an H200. Hand-kept PTX (from
 * nvcc -ptx of a grid-stride XOR loop), JIT-compiled by the driver at load, so the
 * worker needs no compiler and the candidate's module cannot see or replace it. */
static const char flush_ptx[] =
    ".version 7.0\n.target sm_70\n.address_size 64\n"
    ".visible .entry kf_l2_read(.param .u64 p0, .param .u64 p1, .param .u64 p2)\n{\n"
    ".reg .pred %p<4>;\n.reg .b32 %r<21>;\n.reg .b64 %rd<17>;\n"
    "ld.param.u64 %rd8, [p0];\nld.param.u64 %rd9, [p1];\nld.param.u64 %rd10, [p2];\n"
    "mov.u32 %r3, %ctaid.x;\nmov.u32 %r4, %ntid.x;\ncvt.u64.u32 %rd1, %r4;\n"
    "mul.wide.u32 %rd11, %r3, %r4;\nmov.u32 %r5, %tid.x;\ncvt.u64.u32 %rd12, %r5;\n"
    "add.s64 %rd16, %rd11, %rd12;\nsetp.ge.u64 %p1, %rd16, %rd9;\n@%p1 bra L5;\n"
    "mov.u32 %r7, %nctaid.x;\ncvt.u64.u32 %rd13, %r7;\nmul.lo.s64 %rd3, %rd13, %rd1;\n"
    "cvta.to.global.u64 %rd4, %rd10;\ncvta.to.global.u64 %rd5, %rd8;\nmov.u32 %r20, 0;\n"
    "L2:\nshl.b64 %rd14, %rd16, 4;\nadd.s64 %rd15, %rd5, %rd14;\n"
    "ld.global.v4.u32 {%r8, %r9, %r10, %r11}, [%rd15];\n"
    "xor.b32 %r16, %r9, %r20;\nxor.b32 %r17, %r16, %r8;\nxor.b32 %r18, %r17, %r10;\n"
    "xor.b32 %r20, %r18, %r11;\nadd.s64 %rd16, %rd16, %rd3;\nsetp.lt.u64 %p2, %rd16, %rd9;\n"
    "@%p2 bra L2;\nsetp.ne.s32 %p3, %r20, -1640531527;\n@%p3 bra L5;\n"
    "mov.u32 %r19, -1640531527;\nst.global.u32 [%rd4], %r19;\nL5:\nret;\n}\n"
    /* the idle probe (wait_idle): one empty block per SM */
    ".visible .entry kf_idle_probe()\n{\nret;\n}\n";

/* Before a timed span (KF_RUN_WAIT_IDLE: bench's calls, both sides alike) the device
 * must be idle: GPU work another process left running (a host-mode candidate's kernel
 * still spinning, in a context of its own, after its call returned and its worker was
 * frozen) would share the device with the baseline's span and slow it. Both sides run
 * the same probes, so the step costs them the same and the gap test (coordinator's
 * time minus the reported one) is unchanged; what a candidate's worker says about its
 * own wait only ever makes the coordinator drop its round. Work of this process is
 * finished (its context was synchronised); other processes' work is invisible to the
 * driver API, but not to the device's scheduler: without MPS, contexts of different
 * processes time-slice, so a probe kernel launched while another context has work waits
 * for a time slice (a millisecond or more) instead of finishing in about 50 us (launch
 * and synchronise, on an H200); with
 * MPS, a probe of one block per SM waits for SMs another kernel holds. IDLE_STREAK
 * fast probes in a row mean idle (a single one can fall just after the other context's
 * time slice ended: its work resumes as soon as this context goes idle again). The
 * wait is bounded: past IDLE_BUDGET_NS the call goes on and says the device was busy
 * (KF_DONE_GPU_BUSY), and the coordinator finds out whose work it was. *waited: from
 * the first probe to the start of the final streak (0 on an idle device). Copies on
 * the copy engines are not probed. */
#define IDLE_FAST_NS 150000ull
#define IDLE_STREAK 3
#define IDLE_BUDGET_NS 20000000ull
static int wait_idle(CUfunction probe, CUstream st, int sms, uint64_t *waited) {
    uint64_t t0 = kf_wk_now_ns(), streak_at = t0;
    int fast = 0;
    for (;;) {
        uint64_t a = kf_wk_now_ns();
        if (!fast) streak_at = a;
        CKRUN(cu->LaunchKernel(probe, (unsigned)(sms > 0 ? sms : 1), 1, 1, 32, 1, 1, 0, st, NULL, NULL),
              "probing the device");
        CKRUN(cu->StreamSynchronize(st), "probing the device");
        uint64_t b = kf_wk_now_ns();
        fast = b - a < IDLE_FAST_NS ? fast + 1 : 0;
        if (fast >= IDLE_STREAK) {
            *waited = streak_at - t0;
            return 0;
        }
        if (b - t0 > IDLE_BUDGET_NS) {
            *waited = b - t0;
            return 1;
        }
    }
}

/* Host mode: persisting L2 lines, a set-aside (cudaLimitPersistingL2CacheSize) or an
 * access window a call set up must not outlive it: persisting lines survive the next
 * call's L2 flush (normal reads do not evict them), so data could stay warm across
 * calls, and a larger set-aside changes the L2 the other side of the comparison sees.
 * The driver starts with a set-aside of its own (11.25 MiB on an H200), so a call can
 * mark lines persisting without touching the limit: after every call its persisting
 * lines become normal (cuCtxResetPersistingL2Cache), the set-aside goes back to what it
 * was before any candidate code ran (l2_limit0), and the worker's stream loses any
 * access window. KF_DONE_PERSISTING_L2 when the call had changed the set-aside. */
static size_t l2_limit0;
static uint32_t reset_persisting_l2(CUstream st) {
    uint32_t used = 0;
    size_t pl = 0;
    if (cu->CtxGetLimit && cu->CtxSetLimit && !cu->CtxGetLimit(&pl, KF_CU_LIMIT_PERSISTING_L2) &&
        pl != l2_limit0) {
        used = KF_DONE_PERSISTING_L2;
        CKRUN(cu->CtxSetLimit(KF_CU_LIMIT_PERSISTING_L2, l2_limit0), "resetting the persisting-L2 set-aside");
    }
    if (cu->CtxResetPersistingL2Cache)
        CKRUN(cu->CtxResetPersistingL2Cache(), "resetting the persisting L2 lines");
    if (cu->StreamSetAttribute) {
        kf_cu_stream_attr v;
        memset(&v, 0, sizeof v);
        cu->StreamSetAttribute(st, KF_CU_STREAM_ATTR_ACCESS_POLICY_WINDOW, &v);
    }
    return used;
}

/* A deferred worker (argv[1] "-") is started while the candidate still compiles: it
 * initialises the driver, retains the context and page-locks the arena (most of a GPU
 * worker's start), then waits for LOAD, after which its artifact is <dir>/candidate.so.
 * Nothing of the candidate exists before LOAD. Returns whether the arena is pinned. */
static int prewarm(void *arena, size_t arena_size) {
    char err[512];
    if (!kf_cu_load(err, sizeof err)) fail_msg(KF_MSG_LOADFAIL, "%s", err);
    CUdevice dev;
    CUcontext ctx;
    CK(cu->Init(0), "cuInit");
    CK(cu->DeviceGet(&dev, 0), "cuDeviceGet");
    CK(cu->PrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
    CK(cu->CtxSetCurrent(ctx), "cuCtxSetCurrent");
    int pinned = cu->MemHostRegister(arena, arena_size, 0) == 0;
    for (;;) {
        kf_msg_run m;
        ssize_t n = recv(KF_WORKER_SOCK_FD, &m, sizeof m, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n != (ssize_t)sizeof m || m.magic != KF_PROTO_MAGIC) _exit(n == 0 ? 0 : 115);
        if (m.type == KF_MSG_EXIT) _exit(0);
        if (m.type != KF_MSG_LOAD) _exit(115);
        return pinned;
    }
}

/* Under a wrapper the worker's parent is the tool's launcher, not the coordinator,
 * so no parent-death signal comes when the coordinator dies; and a main thread waiting
 * on a kernel that never finishes never reads the channel. This thread watches the
 * channel and ends the worker once the coordinator's end is closed (a SIGKILLed
 * kforge left workers spinning on the GPU under compute-sanitizer). */
static void *watch_channel(void *arg) {
    (void)arg;
    for (;;) {
        struct pollfd p = {KF_WORKER_SOCK_FD, POLLRDHUP, 0};
        int n = poll(&p, 1, -1);
        if (n > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL))) _exit(0);
        if (n < 0 && errno != EINTR) _exit(0);
    }
    return NULL;
}

int kf_gpu_worker_main(char **argv, void *arena, size_t arena_size) {
    wrapped = !strcmp(argv[2], "-");
    if (wrapped) {
        pthread_t th;
        if (pthread_create(&th, NULL, watch_channel, NULL) == 0) pthread_detach(th);
    }
    int prepinned = 0;
    char deferred_path[4200];
    if (!strcmp(argv[1], "-")) {
        prepinned = prewarm(arena, arena_size);
        if (kf_wk_deferred_path) snprintf(deferred_path, sizeof deferred_path, "%s", kf_wk_deferred_path);
        else snprintf(deferred_path, sizeof deferred_path, "%s/candidate.so", argv[5]);
        argv[1] = deferred_path;
        if (!kf_wk_is_gpu_artifact(argv[1])) kf_wk_die(113, "artifact");
    }
    /* the artifact */
    int fd = open(argv[1], O_RDONLY | O_CLOEXEC);
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) || sb.st_size < 16 || sb.st_size > (1 << 28)) kf_wk_die(113, "artifact");
    unsigned char *art = malloc((size_t)sb.st_size + 1);
    if (!art || read(fd, art, (size_t)sb.st_size) != sb.st_size) kf_wk_die(113, "read artifact");
    close(fd);
    art[sb.st_size] = 0;
    int host = !memcmp(art, "KFHOST01", 8);
    uint32_t nk = 0;
    const char *names[MAXK];
    const unsigned char *cubin = NULL;
    if (host) {
        /* the object takes the artifact's place now (before the file-size limit), under
         * the name the documented command gives it (what dladdr and dl_iterate_phdr
         * report), owned by the user the worker becomes; it is loaded only after the
         * confinement: its constructors are candidate code */
        char tmp[4300];
        snprintf(tmp, sizeof tmp, "%s.new", argv[1]);
        unlink(tmp);
        int sofd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0500);
        if (sofd < 0) kf_wk_die(113, "writing the candidate's object");
        size_t left = (size_t)sb.st_size - 8;
        for (const unsigned char *q = art + 8; left;) {
            ssize_t w = write(sofd, q, left);
            if (w <= 0) kf_wk_die(113, "writing the candidate's object");
            q += w, left -= (size_t)w;
        }
        long uid = strcmp(argv[7], "-") ? strtol(argv[7], NULL, 10) : -1;
        if ((uid >= 0 && fchown(sofd, (uid_t)uid, (uid_t)uid)) || close(sofd) || rename(tmp, argv[1]))
            kf_wk_die(113, "writing the candidate's object");
    } else {
        memcpy(&nk, art + 8, 4);
        if (nk == 0 || nk > MAXK) fail_msg(KF_MSG_LOADFAIL, "bad artifact: %u kernels", nk);
        size_t o = 12;
        for (uint32_t i = 0; i < nk; i++) {
            names[i] = (const char *)art + o;
            o += strnlen(names[i], (size_t)sb.st_size - o) + 1;
            if (o + 4 > (size_t)sb.st_size) fail_msg(KF_MSG_LOADFAIL, "bad artifact: truncated");
        }
        uint32_t cs;
        memcpy(&cs, art + o, 4);
        o += 4;
        if (o + cs > (size_t)sb.st_size) fail_msg(KF_MSG_LOADFAIL, "bad artifact: truncated cubin");
        cubin = art + o;
    }

    /* the device */
    char err[512];
    if (!kf_cu_load(err, sizeof err)) fail_msg(KF_MSG_LOADFAIL, "%s", err);
    CUdevice dev;
    CUcontext ctx;
    CK(cu->Init(0), "cuInit");
    int ndev = 0;
    CK(cu->DeviceGetCount(&ndev), "cuDeviceGetCount");
    if (ndev < 1) fail_msg(KF_MSG_LOADFAIL, "no CUDA device");
    CK(cu->DeviceGet(&dev, 0), "cuDeviceGet");
    CK(cu->PrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
    CK(cu->CtxSetCurrent(ctx), "cuCtxSetCurrent");
    int sms = 0, l2 = 0, maxthr_sm = 0, maj = 0, min = 0;
    cu->DeviceGetAttribute(&sms, KF_CU_ATTR_SM_COUNT, dev);
    cu->DeviceGetAttribute(&l2, KF_CU_ATTR_L2_SIZE, dev);
    cu->DeviceGetAttribute(&maxthr_sm, KF_CU_ATTR_MAX_THREADS_PER_SM, dev);
    cu->DeviceGetAttribute(&maj, KF_CU_ATTR_CC_MAJOR, dev);
    cu->DeviceGetAttribute(&min, KF_CU_ATTR_CC_MINOR, dev);
    /* The arena page-locked: the copies run by DMA at the link's speed instead of
     * through the driver's pageable staging (5-8x slower for the 100+ MB spans of large
     * shapes). It is then in the device's address space too (UVA), at a random host
     * address no kernel parameter reveals; it holds only this candidate's own staged
     * data. Without it, pageable copies still work. */
    int pinned = prepinned || cu->MemHostRegister(arena, arena_size, 0) == 0;
    CUmodule mod;
    CUfunction fn[MAXK];
    if (!host) {
        CUresult lr = cu->ModuleLoadData(&mod, cubin);
        if (lr)
            fail_msg(KF_MSG_LOADFAIL,
                     "cuModuleLoadData: %s (built for another architecture? the device is sm_%d%d)",
                     kf_cu_errname(cu, lr), maj, min);
        for (uint32_t i = 0; i < nk; i++)
            if (cu->ModuleGetFunction(&fn[i], mod, names[i]))
                fail_msg(KF_MSG_LOADFAIL, "kernel %s is not in the module", names[i]);
    }
    CUstream stream;
    /* a blocking stream: it orders after the legacy stream's copies (cuMemcpyHtoD from
     * pageable memory may return before its DMA lands; the context sync below makes
     * that certain too) */
    CK(cu->StreamCreate(&stream, 0), "cuStreamCreate");
    CUevent ev0, ev1;
    CK(cu->EventCreate(&ev0, 0), "cuEventCreate");
    CK(cu->EventCreate(&ev1, 0), "cuEventCreate");
    CUdeviceptr mirror = 0, scratch = 0;
    /* the mirror, plus room to slide it: timed calls place the span at a random 64 KiB
     * step within SLIDE, so each worker's timings average over many physical placements
     * (two workers' fixed placements differed by 4% on a strided transpose) */
    size_t msize = ((arena_size + 255) & ~(size_t)255) + SLIDE;
    CK(cu->MemAlloc(&mirror, msize), "cuMemAlloc (the arena's mirror)");
    size_t ssize = (size_t)(l2 > 0 ? l2 : 64 << 20) * 2;
    CK(cu->MemAlloc(&scratch, ssize + 256), "cuMemAlloc (the L2 flush buffer)");
    CK(cu->MemsetD32Async(scratch, rand32(), (ssize + 256) / 4, stream), "filling the L2 flush buffer");
    CUmodule fmod;
    CUfunction flush_fn;
    CK(cu->ModuleLoadData(&fmod, flush_ptx), "loading the L2 flush kernel");
    CK(cu->ModuleGetFunction(&flush_fn, fmod, "kf_l2_read"), "the L2 flush kernel");
    CUfunction probe_fn;
    CK(cu->ModuleGetFunction(&probe_fn, fmod, "kf_idle_probe"), "the idle probe kernel");
    int smem_optin = 0;
    cu->DeviceGetAttribute(&smem_optin, KF_CU_ATTR_MAX_SHARED_OPTIN, dev);
    uint32_t smem_set[MAXK] = {0}; /* the dynamic shared memory each kernel may use now */
    CUdeviceptr flush_sink = scratch + ssize;
    unsigned long long flush_n = ssize / 16;
    void *flush_params[] = {&scratch, &flush_n, &flush_sink, NULL};
    /* whatever the memory held before (another process's data) is never visible */
    CK(cu->MemsetD32Async(mirror, poison_word(), msize / 4, stream), "poisoning the mirror");
    CK(cu->StreamSynchronize(stream), "poisoning the mirror");
    /* the driver's own persisting-L2 set-aside, before any candidate code runs */
    if (cu->CtxGetLimit) cu->CtxGetLimit(&l2_limit0, KF_CU_LIMIT_PERSISTING_L2);
    /* host mode: CUPTI's callbacks are registered before any candidate code runs */
    int cupti = 0;
    char cupti_err[256] = "";
    if (host) cupti = kf_cupti_init(cupti_err, sizeof cupti_err) == 0;

    /* confinement: the device files are open; drop root, limits, no new privileges.
     * Under compute-sanitizer in kernel mode the process keeps its user, stays dumpable
     * and unsealed: on a memcheck or initcheck finding the tool stops the kernel and
     * inspects it from inside this process, which hung for good (the kernel never
     * finished) once the process had changed user and become undumpable (seen on the
     * H200). The candidate is device code only there: it makes no system call. */
    int plain = !(wrapped && !host);
    if (plain) kf_wk_drop_root(argv[7], argv[2]);
    char *end;
    double cpu_s = strtod(argv[3], &end); /* the coordinator writes "%.3f" */
    if (end == argv[3] || *end) kf_wk_die(113, "cpu limit");
    kf_limits lim = {cpu_s, 0, 1 << 20, 256};
    if (kf_policy_rlimits(&lim)) kf_wk_die(113, "rlimits");
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) kf_wk_die(113, "no_new_privs");
    if (plain) prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    /* the driver's entry points read-only (and sealed) before any candidate byte loads;
     * host mode does not run without it */
    int table_sealed = 0;
    if (kf_cu_protect(&table_sealed) && host) kf_wk_die(113, "making the driver table read-only");
    int sealed = plain ? kf_wk_seal_image() : 0;
    /* host mode: the seccomp filter, before any candidate byte is loaded (its
     * constructors run at dlopen). Default on; KFORGE_GPU_SECCOMP=0 (passed on by the
     * coordinator) turns it off while its allow-list is being completed on real GPUs. */
    int filtered = 0;
    const char *sw = getenv("KFORGE_GPU_SECCOMP");
    /* (not under a wrapping tool: compute-sanitizer works inside this process with
     * calls of its own) */
    if (host && !wrapped && !(sw && !strcmp(sw, "0"))) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_sigsys;
        sa.sa_flags = SA_SIGINFO;
        sigemptyset(&sa.sa_mask);
        if (sigaction(SIGSYS, &sa, NULL) || kf_policy_seccomp_gpu_host(getpid()))
            kf_wk_die(113, "seccomp (GPU host mode)");
        filtered = 1;
    }
    kf_msg_done ok = {.magic = KF_PROTO_MAGIC,
                      .type = KF_MSG_SETUP_OK,
                      .ns = (uint64_t)sealed << 8 | (uint64_t)filtered << 9};
    if (send(KF_WORKER_SOCK_FD, &ok, sizeof ok, MSG_NOSIGNAL) != sizeof ok) _exit(114);

    /* what the coordinator reports about the kernels */
    char info[1000];
    size_t io =
        (size_t)snprintf(info, sizeof info, "device sm_%d%d sms=%d max_threads_per_sm=%d l2=%d pinned=%d\n",
                         maj, min, sms, maxthr_sm, l2, pinned);
    for (uint32_t i = 0; i < nk && io < sizeof info; i++) {
        int regs = 0, local = 0, shared = 0, maxt = 0;
        cu->FuncGetAttribute(&regs, KF_CU_FUNC_REGS, fn[i]);
        cu->FuncGetAttribute(&local, KF_CU_FUNC_LOCAL, fn[i]);
        cu->FuncGetAttribute(&shared, KF_CU_FUNC_SHARED, fn[i]);
        cu->FuncGetAttribute(&maxt, KF_CU_FUNC_MAX_THREADS, fn[i]);
        io += (size_t)snprintf(info + io, sizeof info - io,
                               "kernel %u regs=%d local=%d shared=%d max_threads=%d\n", i, regs, local,
                               shared, maxt);
    }
    void *hcall = NULL;
    if (host) {
        /* the candidate's object, unprivileged; RTLD_LOCAL: it cannot interpose this
         * program's symbols (its clock, its channel) */
        setvbuf(stdout, NULL, _IONBF, 0);
        kf_wk_forget_env();
        void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
        if (!h) fail_msg(KF_MSG_LOADFAIL, "%s", dlerror());
        hcall = dlsym(h, "kforge_launch");
        if (!hcall) fail_msg(KF_MSG_LOADFAIL, "kforge_launch missing from the built object");
        io += (size_t)snprintf(info + io, sizeof info - io, "host mode cupti=%s driver_table=read-only%s\n",
                               cupti ? "yes" : cupti_err, table_sealed ? ",sealed" : "");
    }
    kf_wk_send_text(KF_MSG_INFO, info);
    kf_msg_done ready = {.magic = KF_PROTO_MAGIC, .type = KF_MSG_READY};
    if (send(KF_WORKER_SOCK_FD, &ready, sizeof ready, MSG_NOSIGNAL) != sizeof ready) _exit(114);
    g_ready = 1;

    for (;;) {
        kf_msg_run m;
        ssize_t n = recv(KF_WORKER_SOCK_FD, &m, sizeof m, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n != (ssize_t)sizeof m || m.magic != KF_PROTO_MAGIC) _exit(n == 0 ? 0 : 115);
        uint64_t ph[KF_PROTO_NPHASES] = {kf_wk_now_ns()};
        if (m.type == KF_MSG_EXIT) {
            cu->MemsetD32Async(mirror, poison_word(), msize / 4, stream);
            cu->StreamSynchronize(stream);
            if (m.flags & KF_EXIT_CLEAN) exit(0); /* a wrapping tool's exit handlers run */
            _exit(0);
        }
        if (m.type != KF_MSG_RUN || m.nargs > KF_PROTO_MAXARGS || (!host && m.nlaunch == 0) ||
            m.nlaunch > MAXK || m.span_lo > m.span_hi || m.span_hi > arena_size)
            _exit(115);
        /* the kernels' parameters: device addresses in the mirror (or, precise, in
         * allocations of their own), scalars by value */
        int precise = (m.flags & KF_RUN_PRECISE) != 0;
        /* checks keep the coordinator's exact placement (T2 reuses T1's addresses, to
         * catch a memo keyed on pointers); timed calls slide */
        CUdeviceptr base =
            mirror + ((m.flags & KF_RUN_FLUSH_L2) ? (CUdeviceptr)(rand32() % (SLIDE >> 16)) << 16 : 0);
        CUdeviceptr ptr[KF_PROTO_MAXARGS], own[KF_PROTO_MAXARGS];
        memset(own, 0, sizeof own);
        void *hbuf[KF_PROTO_MAXARGS]; /* host mode: the same addresses, as pointers */
        int32_t i32[KF_PROTO_MAXARGS];
        int64_t i64[KF_PROTO_MAXARGS];
        float f32[KF_PROTO_MAXARGS];
        double f64[KF_PROTO_MAXARGS];
        uint8_t u8[KF_PROTO_MAXARGS];
        void *params[KF_PROTO_MAXARGS + 1];
        for (uint32_t i = 0; i < m.nargs; i++) {
            switch (m.kind[i]) {
            case KF_ARG_BUF:
                if (m.off[i] < m.span_lo || m.off[i] > m.span_hi) _exit(115);
                ptr[i] = base + m.off[i];
                if (precise) {
                    if (m.len[i] > m.span_hi - m.off[i] || m.io[i] > KF_IO_ARG_INOUT) _exit(115);
                    /* a zero-length buffer still gets a (1-byte) allocation of its own */
                    CKRUN(cu->MemAlloc(&own[i], m.len[i] ? m.len[i] : 1), "cuMemAlloc (a buffer of its own)");
                    if (m.io[i] != KF_IO_ARG_OUT && m.len[i])
                        CKRUN(cu->MemcpyHtoD(own[i], (char *)arena + m.off[i], m.len[i]),
                              "copying the inputs to the device");
                    ptr[i] = own[i];
                }
                params[i] = &ptr[i];
                hbuf[i] = (void *)(uintptr_t)ptr[i];
                break;
            case KF_ARG_I32:
                i32[i] = (int32_t)m.ival[i];
                params[i] = &i32[i];
                break;
            case KF_ARG_I64:
                i64[i] = m.ival[i];
                params[i] = &i64[i];
                break;
            case KF_ARG_F32:
                f32[i] = (float)m.fval[i];
                params[i] = &f32[i];
                break;
            case KF_ARG_F64:
                f64[i] = m.fval[i];
                params[i] = &f64[i];
                break;
            case KF_ARG_U8:
                u8[i] = (uint8_t)m.ival[i];
                params[i] = &u8[i];
                break;
            default: _exit(115);
            }
        }
        params[m.nargs] = NULL;
        for (uint32_t l = 0; l < m.nlaunch; l++)
            if (m.kernel[l] >= nk) _exit(115);
        /* Dynamic shared memory above 48 KiB needs the kernel's opt-in first, else the
         * launch fails (CUDA_ERROR_INVALID_VALUE); raised once per kernel and size,
         * outside the timed span */
        for (uint32_t l = 0; !host && l < m.nlaunch; l++) {
            uint32_t k = m.kernel[l], want = m.dims[l][6];
            if (want <= (48u << 10) || want <= smem_set[k]) continue;
            CUresult r = cu->FuncSetAttribute(fn[k], KF_CU_FUNC_MAX_DYNAMIC_SHARED, (int)want);
            if (r)
                fail_msg(KF_MSG_FAIL,
                         "launch %u (kernel %s): %u bytes of dynamic shared memory: "
                         "cuFuncSetAttribute: %s (the device allows %d bytes per block, static "
                         "shared memory included)",
                         l + 1, names[k], want, kf_cu_errname(cu, r), smem_optin);
            smem_set[k] = want;
        }
        size_t span = (size_t)(m.span_hi - m.span_lo);
        if (!precise)
            CKRUN(cu->MemcpyHtoD(base + m.span_lo, (char *)arena + m.span_lo, span),
                  "copying the inputs to the device");
        CKRUN(cu->CtxSynchronize(), "copying the inputs to the device");
        ph[1] = kf_wk_now_ns();
        /* a set-aside present now was made outside any call (every call's is reset after
         * it): by a thread the candidate left running */
        size_t pl = 0;
        if (host && cu->CtxGetLimit && !cu->CtxGetLimit(&pl, KF_CU_LIMIT_PERSISTING_L2) && pl != l2_limit0)
            fail_msg(KF_MSG_FAIL,
                     "sandbox_violation: the persisting-L2 set-aside was changed between calls "
                     "(%zu bytes, the driver's is %zu; each call's is reset after it)",
                     pl, l2_limit0);
        /* a timed call: nothing of another process on the device */
        uint64_t idle_wait = 0;
        int busy = (m.flags & KF_RUN_WAIT_IDLE) ? wait_idle(probe_fn, stream, sms, &idle_wait) : 0;
        /* The host-mode protocol (either side in host mode) waits for the flush before
         * the call: host code may launch on streams of its own, which do not queue behind
         * the flush on this stream and would run, untimed, while it does. */
        int hostproto = host || (m.flags & KF_RUN_HOST_TIMING);
        if ((m.flags & KF_RUN_FLUSH_L2) && hostproto) {
            CKRUN(cu->LaunchKernel(flush_fn, (unsigned)(sms > 0 ? sms * 4 : 512), 1, 1, 512, 1, 1, 0, stream,
                                   flush_params, NULL),
                  "flushing L2");
            CKRUN(cu->StreamSynchronize(stream), "flushing L2");
        }
        ph[2] = kf_wk_now_ns();
        /* a graph baseline: the same launches captured (not run) before the timed span */
        CUgraph graph = NULL;
        CUgraphExec gexec = NULL;
        if (!host && (m.flags & KF_RUN_GRAPH)) {
            if (!cu->StreamBeginCapture || !cu->StreamEndCapture || !cu->GraphInstantiate || !cu->GraphLaunch)
                fail_msg(KF_MSG_FAIL, "this CUDA driver has no graph API (graph baseline)");
            CKRUN(cu->StreamBeginCapture(stream, KF_CU_CAPTURE_THREAD_LOCAL), "cuStreamBeginCapture");
            for (uint32_t l = 0; l < m.nlaunch; l++) {
                const uint32_t *d = m.dims[l];
                CKRUN(cu->LaunchKernel(fn[m.kernel[l]], d[0], d[1], d[2], d[3], d[4], d[5], d[6], stream,
                                       params, NULL),
                      "capturing the baseline's launches");
            }
            CKRUN(cu->StreamEndCapture(stream, &graph), "cuStreamEndCapture");
            CKRUN(cu->GraphInstantiate(&gexec, graph, 0), "cuGraphInstantiate");
        }
        void *hargs[KF_PROTO_MAXARGS + 1];
        if (host) {
            if (!host_ready) {
                if (host_prepare(&m))
                    fail_msg(KF_MSG_FAIL, "libffi cannot prepare the call of kforge_launch");
                host_ready = 1;
            }
            for (uint32_t i = 0; i < m.nargs; i++)
                hargs[i] = m.kind[i] == KF_ARG_BUF ? (void *)&hbuf[i] : params[i];
            hargs[m.nargs] = &stream;
        }
        kf_msg_done start = {
            .magic = KF_PROTO_MAGIC, .type = KF_MSG_START, .seq = m.seq, .ns = kf_wk_now_ns()};
        if (send(KF_WORKER_SOCK_FD, &start, sizeof start, MSG_NOSIGNAL) != sizeof start) _exit(114);
        /* Timed: the flush is queued, not waited for, so the events and launches are
         * queued behind it while it runs and the kernels start the moment it ends: the
         * time is the device's, not the host's launch path (a kernel launched onto an
         * idle device would be timed from the event, before the launch had arrived).
         * Both sides of a comparison are timed this way. */
        if ((m.flags & KF_RUN_FLUSH_L2) && !hostproto)
            CKRUN(cu->LaunchKernel(flush_fn, (unsigned)(sms > 0 ? sms * 4 : 512), 1, 1, 512, 1, 1, 0, stream,
                                   flush_params, NULL),
                  "flushing L2");
        CKRUN(cu->EventRecord(ev0, stream), "cuEventRecord");
        kf_launch_log lg;
        memset(&lg, 0, sizeof lg);
        if (host) {
            if (cupti) kf_cupti_begin();
            ffi_arg rv = 0;
            ffi_call(&host_cif, FFI_FN(hcall), &rv, hargs);
            int rc = (int)(int32_t)rv;
            if (rc) fail_msg(KF_MSG_FAIL, "kforge_launch returned %d", rc);
        }
        if (gexec) CKRUN(cu->GraphLaunch(gexec, stream), "cuGraphLaunch");
        for (uint32_t l = 0; !host && !gexec && l < m.nlaunch; l++) {
            const uint32_t *d = m.dims[l];
            CUresult r = cu->LaunchKernel(fn[m.kernel[l]], d[0], d[1], d[2], d[3], d[4], d[5], d[6], stream,
                                          params, NULL);
            if (r)
                fail_msg(KF_MSG_FAIL, "launch %u (kernel %s, grid (%u,%u,%u), block (%u,%u,%u), smem %u): %s",
                         l + 1, names[m.kernel[l]], d[0], d[1], d[2], d[3], d[4], d[5], d[6],
                         kf_cu_errname(cu, r));
        }
        if (hostproto) {
            /* the host-mode protocol: the device-wide synchronise inside the timed span
             * (side streams, the legacy stream, graphs and work queued after return all
             * finish before event 1) */
            CKRUN(cu->CtxSynchronize(), "running the kernels");
            CKRUN(cu->EventRecord(ev1, stream), "cuEventRecord");
            CKRUN(cu->EventSynchronize(ev1), "cuEventSynchronize");
            /* launches made by other threads up to the synchronise count too */
            if (cupti) kf_cupti_end(&lg);
            /* work in a context of the candidate's own is not covered by the synchronise
             * above and could outlive the call, slowing whatever is timed next */
            if (cupti && lg.available && lg.nctx > 0)
                fail_msg(KF_MSG_FAIL,
                         "sandbox_violation: host code created %d CUDA context(s) of its own "
                         "(cuCtxCreate, green contexts): host mode works in the worker's primary context, "
                         "which it synchronises at the end of every call",
                         lg.nctx);
        } else {
            CKRUN(cu->EventRecord(ev1, stream), "cuEventRecord");
            /* the whole context, not the stream: nothing may still run after DONE */
            CKRUN(cu->CtxSynchronize(), "running the kernels");
        }
        uint64_t t1 = kf_wk_now_ns();
        ph[3] = t1;
        /* (both sides of a host-protocol comparison pay for the reset: the gap test
         * compares their paths) */
        uint32_t gflags = (busy ? KF_DONE_GPU_BUSY : 0) | (hostproto ? reset_persisting_l2(stream) : 0);
        if (gexec) {
            cu->GraphExecDestroy(gexec);
            cu->GraphDestroy(graph);
        }
        float ms = 0;
        CKRUN(cu->EventElapsedTime(&ms, ev0, ev1), "cuEventElapsedTime");
        kf_msg_done d = {.magic = KF_PROTO_MAGIC,
                         .type = KF_MSG_DONE,
                         .seq = m.seq,
                         .ns = t1,
                         .dev_ns = (uint64_t)((double)ms * 1e6),
                         .gpu_flags = gflags,
                         .idle_wait_ns = idle_wait};
        d.cupti = cupti && lg.available;
        d.nlaunch = lg.nlaunch, d.ngraph = lg.ngraph, d.nmemop = lg.nmemop, d.nlib = lg.nlib;
        d.nnames = lg.nnames < KF_PROTO_MAXNAMES ? lg.nnames : KF_PROTO_MAXNAMES;
        for (int i = 0; i < d.nnames && i < 16; i++)
            snprintf(d.names[i], sizeof d.names[i], "%.63s", lg.names[i]);
        for (uint32_t l = 0; !host && l < m.nlaunch; l++) {
            int nb = 0;
            const uint32_t *dd = m.dims[l];
            if (!cu->OccupancyMaxActiveBlocksPerMultiprocessor(&nb, fn[m.kernel[l]],
                                                               (int)(dd[3] * dd[4] * dd[5]), dd[6]))
                d.occ[l] = (uint32_t)nb;
        }
        if (precise) {
            for (uint32_t i = 0; i < m.nargs; i++) {
                if (!own[i]) continue;
                if (m.io[i] != KF_IO_ARG_IN && m.len[i])
                    CKRUN(cu->MemcpyDtoH((char *)arena + m.off[i], own[i], m.len[i]),
                          "copying the outputs back");
                CKRUN(cu->MemFree(own[i]), "cuMemFree");
            }
        } else {
            CKRUN(cu->MemcpyDtoH((char *)arena + m.span_lo, base + m.span_lo, span),
                  "copying the outputs back");
            ph[4] = kf_wk_now_ns();
            /* nothing of this call stays readable on the device for the next one */
            CKRUN(cu->MemsetD32Async(base + m.span_lo, poison_word(), span / 4, stream), "re-poisoning");
            CKRUN(cu->StreamSynchronize(stream), "re-poisoning");
        }
        if (!ph[4]) ph[4] = kf_wk_now_ns();
        ph[5] = kf_wk_now_ns();
        memcpy(d.phase, ph, sizeof d.phase);
        if (send(KF_WORKER_SOCK_FD, &d, sizeof d, MSG_NOSIGNAL) != sizeof d) _exit(114);
    }
}
