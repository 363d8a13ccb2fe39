/*
 * worker_main.c - kforge-worker, the trusted runner that executes one candidate: the
 * start every mode shares (kf_wk_start) and the CPU mode (kf_wk_cpu_main). Its main,
 * src/worker/main.c, picks the mode: this CPU runner, or the CUDA backend's GPU worker or
 * NVRTC compile child.
 *
 * Its arguments: SO_PATH, PARENT_PID (or "-" when started through a wrapper program),
 * CPU_S, AS_BYTES, SO_DIR, CPUS ("0,2,3" or "-"), UID (used when started as root, or
 * "-") and, for a C object, ENTRY. A CPU worker is a copy of this program under a random
 * name, started with no argument but that name and an ordinary environment (nothing a
 * candidate can see says kforge, docs/checker.md #31): its arguments are the first
 * message on its channel (kf_msg_config). A GPU worker gets them as argv[1..8] and an
 * environment of CUDA settings only. fd 3 = result socket, fd 4 = arena memfd, fd 5 (CPU
 * workers) = the inputs' memfd, read-only; fds 0-2 = /dev/null and two capped pipes; its
 * own session (so its own process group). Before any candidate byte is loaded (dlopen
 * runs constructors) it:
 *   1. sets a parent-death SIGKILL and checks that the parent is still the one it
 *      was started by;
 *   2. closes every other inherited descriptor;
 *   3. maps the arena (not prefaulted: the bench's warm-up rounds touch both halves) and
 *      the inputs' region read-only right after it, with a fault handler that reports a
 *      write there as input_modified;
 *   4. seals its own image, the arena and the vDSO (mseal) against remapping;
 *   5. applies Landlock (read-only system dirs and its own .so directory);
 *   6. applies rlimits (CPU, address space, file size, descriptors, no core);
 *   7. creates the interleaver's timer (KF_RUN_INTERLEAVE: races, #32), sets
 *      no_new_privs and not-dumpable, and loads the seccomp allow-list.
 * Then it loads the candidate and serves RUN requests: one call of the entry each (a C
 * entry through a call built by libffi from the task's argument kinds, call_entry),
 * announced by START (the clock before) and answered by DONE (the clock after, and
 * whether other threads ran: KF_DONE_THREADS). The
 * coordinator freezes it (SIGSTOP) at each answer and resumes it for the next call. It computes no verdict;
 * the coordinator distrusts everything it says and checks the outputs itself. Built without sanitizers: their
 * runtimes need syscalls the filter forbids.
 */
#define _GNU_SOURCE
#include "policy.h"
#include "proto.h"
#include "worker.h"

#include <dlfcn.h>
#include <grp.h>
#include <sys/resource.h>
#include <sched.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <ffi.h>

/* The entry, called the way the compiler calls it from C: the object is the candidate
 * alone (no shim), so the call is built at run time from the task's argument kinds by
 * libffi (linked in statically: no libffi.so among the loaded objects). The call
 * interface is prepared once, at the first call (the kinds never change); ffi_call
 * needs no executable memory, which the filter refuses. */
static ffi_cif call_cif;
static ffi_type *call_types[KF_PROTO_MAXARGS];
static int call_ready;

void *kf_wk_ffi_type(unsigned kind) {
    switch (kind) {
    case KF_ARG_BUF: return &ffi_type_pointer;
    case KF_ARG_I32: return &ffi_type_sint32;
    case KF_ARG_U8: return &ffi_type_uint8;
    case KF_ARG_F32: return &ffi_type_float;
    case KF_ARG_F64: return &ffi_type_double;
    default: return &ffi_type_sint64;
    }
}

static int call_prepare(const kf_msg_run *m) {
    for (uint32_t i = 0; i < m->nargs && i < KF_PROTO_MAXARGS; i++)
        call_types[i] = kf_wk_ffi_type(m->kind[i]);
    unsigned n = m->nargs < KF_PROTO_MAXARGS ? m->nargs : KF_PROTO_MAXARGS;
    return ffi_prep_cif(&call_cif, FFI_DEFAULT_ABI, n, &ffi_type_void, call_types) == FFI_OK ? 0 : -1;
}

/* The call itself; call_prepare has run. */
static void call_entry(void *fn, const kf_msg_run *m, void *const *bufs) {
    void *ptr[KF_PROTO_MAXARGS];
    int32_t i32[KF_PROTO_MAXARGS];
    uint8_t u8[KF_PROTO_MAXARGS];
    float f32[KF_PROTO_MAXARGS];
    void *val[KF_PROTO_MAXARGS];
    for (uint32_t i = 0; i < m->nargs && i < KF_PROTO_MAXARGS; i++) {
        switch (m->kind[i]) {
        case KF_ARG_BUF: ptr[i] = bufs[i], val[i] = &ptr[i]; break;
        case KF_ARG_I32: i32[i] = (int32_t)m->ival[i], val[i] = &i32[i]; break;
        case KF_ARG_U8: u8[i] = (uint8_t)m->ival[i], val[i] = &u8[i]; break;
        case KF_ARG_F32: f32[i] = (float)m->fval[i], val[i] = &f32[i]; break;
        case KF_ARG_F64: val[i] = (void *)&m->fval[i]; break;
        default: val[i] = (void *)&m->ival[i]; break;
        }
    }
    ffi_call(&call_cif, FFI_FN(fn), NULL, val);
}

/* A worker's arguments, from its first message (kf_msg_config): eight lines as argv[1..8]
 * (proto.h), then a deferred GPU worker's artifact path (or an empty line), then the GPU
 * worker's own KFORGE_ settings, which it sets for the driver's set-up and removes
 * before candidate code loads (kf_wk_forget_env). 0, or -1. */
static char cfg_text[sizeof((kf_msg_config *)0)->text];
static char *cfg_argv[10];
static char *cfg_env[8];
static const char *cfg_mag; /* MAGNITUDE=NAME: the function KF_RUN_MAGNITUDE calls */
const char *kf_wk_deferred_path;
static int read_config(char *argv0) {
    kf_msg_config c;
    ssize_t n;
    do n = recv(KF_WORKER_SOCK_FD, &c, sizeof c, 0);
    while (n < 0 && errno == EINTR);
    if (n != (ssize_t)sizeof c || c.magic != KF_PROTO_MAGIC || c.type != KF_MSG_CONFIG) return -1;
    memcpy(cfg_text, c.text, sizeof cfg_text);
    cfg_text[sizeof cfg_text - 1] = 0;
    cfg_argv[0] = argv0;
    int k = 1, ne = 0;
    for (char *p = cfg_text; p; k++) {
        char *nl = strchr(p, '\n');
        if (nl) *nl = 0;
        if (k <= 8) cfg_argv[k] = p;
        else if (k == 9) kf_wk_deferred_path = *p ? p : NULL;
        else if (!strncmp(p, "MAGNITUDE=", 10) && p[10]) cfg_mag = p + 10;
        else if (!strncmp(p, "KFORGE_", 7) && strchr(p, '=') && ne < 8) cfg_env[ne++] = p;
        p = nl ? nl + 1 : NULL;
    }
    if (k - 1 < 8) return -1;
    for (int i = 0; i < ne; i++) {
        char *eq = strchr(cfg_env[i], '=');
        *eq = 0;
        if (setenv(cfg_env[i], eq + 1, 1)) return -1;
    }
    return 0;
}

void kf_wk_forget_env(void) {
    for (int i = 0; i < 8 && cfg_env[i]; i++) unsetenv(cfg_env[i]);
}

void kf_wk_send_text(uint32_t type, const char *text) {
    kf_msg_text m;
    memset(&m, 0, sizeof m);
    m.magic = KF_PROTO_MAGIC;
    m.type = type;
    snprintf(m.text, sizeof m.text, "%s", text ? text : "");
    send(KF_WORKER_SOCK_FD, &m, sizeof m, MSG_NOSIGNAL);
}

void kf_wk_die(int code, const char *what) {
    char buf[512];
    snprintf(buf, sizeof buf, "worker setup: %s: %s", what, strerror(errno));
    kf_wk_send_text(KF_MSG_LOADFAIL, buf);
    _exit(code);
}

#ifndef SYS_mseal
#define SYS_mseal 462
#endif

/* Seal every file-backed mapping (this program, libc, the loader, and the arena), the
 * vDSO and vvar against mprotect, munmap, mremap and mmap-over (mseal, Linux 6.10+):
 * the candidate cannot make the worker's code or its read-only relocations writable
 * to hook its clock or its channel, nor swap the arena for other memory. Returns 1
 * when sealed, 0 when the kernel lacks mseal (the result records it). */
int kf_wk_seal_image(void) {
    FILE *f = fopen("/proc/self/maps", "re");
    if (!f) return 0;
    char line[512];
    int ok = 1, any = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        char path[256] = "";
        if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %255[^\n]", &lo, &hi, path) < 2) continue;
        if (!path[0] || !strcmp(path, "[heap]") || !strcmp(path, "[stack]")) continue;
        if (path[0] == '[' && strcmp(path, "[vdso]") && strcmp(path, "[vvar]") &&
            strcmp(path, "[vvar_vclock]"))
            continue;
        if (syscall(SYS_mseal, lo, hi - lo, 0) != 0) {
            if (errno == ENOSYS) ok = 0;
            continue;
        }
        any = 1;
    }
    fclose(f);
    return ok && any;
}

uint64_t kf_wk_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Started by root (CI, a GPU host): become an unprivileged user of its own, so the
 * candidate holds no privilege at all and RLIMIT_NPROC (which root ignores, and which
 * counts per user) bounds its threads without touching any other worker. The
 * coordinator draws the id at random from a high range no account uses, and makes the
 * worker's directory that user's alone. A credential change clears the parent-death
 * signal: it is set again after. Returns 1 when it dropped, 0 when not root. */
int kf_wk_drop_root(const char *uidarg, const char *ppid) {
    if (geteuid() != 0) return 0;
    char *end;
    unsigned long id = strtoul(uidarg, &end, 10);
    if (*end || id < 0x70000000ul || id > 0x7ffffffful) _exit(113);
    if (setgroups(0, NULL) || setresgid((gid_t)id, (gid_t)id, (gid_t)id) ||
        setresuid((uid_t)id, (uid_t)id, (uid_t)id))
        _exit(113);
    if (prctl(PR_SET_PDEATHSIG, SIGKILL)) _exit(112);
    if (strcmp(ppid, "-") && (long)getppid() != strtol(ppid, NULL, 10)) _exit(112);
    return 1;
}

/* The read-only inputs' region, and the current call's buffer offsets: a write fault
 * there is a write to a const input. The handler says which argument and byte, then
 * ends the process; any other fault gets the default action (a crash, as before). The
 * candidate may install its own handler: it can only lose this report, never write. */
static uintptr_t ro_lo, ro_hi;
static uint64_t cur_off[KF_PROTO_MAXARGS];
static uint32_t cur_nargs;

static char *put_u64(char *p, uint64_t v) {
    char tmp[24];
    int n = 0;
    do tmp[n++] = (char)('0' + v % 10);
    while ((v /= 10) && n < 24);
    while (n) *p++ = tmp[--n];
    return p;
}

static void on_segv(int sig, siginfo_t *si, void *uc) {
    (void)uc;
    uintptr_t a = (uintptr_t)si->si_addr;
    if (si->si_code == SEGV_ACCERR && a >= ro_lo && a < ro_hi) {
        /* async-signal-safe: no stdio; "input_modified ARG BYTE", ARG the buffer the
         * address falls in (the one with the largest offset at or below it) */
        uint64_t off = a - ro_lo + (ro_hi - ro_lo), best = 0;
        int arg = -1;
        for (uint32_t i = 0; i < cur_nargs && i < KF_PROTO_MAXARGS; i++)
            if (cur_off[i] <= off && cur_off[i] >= best && cur_off[i] >= ro_hi - ro_lo)
                best = cur_off[i], arg = (int)i;
        kf_msg_text m;
        memset(&m, 0, sizeof m);
        m.magic = KF_PROTO_MAGIC;
        m.type = KF_MSG_FAIL;
        char *p = m.text;
        memcpy(p, "input_modified ", 15);
        p += 15;
        if (arg < 0) *p++ = '-';
        else p = put_u64(p, (uint64_t)arg);
        *p++ = ' ';
        p = put_u64(p, arg < 0 ? 0 : off - best);
        send(KF_WORKER_SOCK_FD, &m, sizeof m, MSG_NOSIGNAL);
        _exit(0);
    }
    signal(sig, SIG_DFL); /* as if there were no handler: the default action */
    raise(sig);
}

/* The interleaver (KF_RUN_INTERLEAVE): a CLOCK_MONOTONIC timer, created before the filter
 * (which refuses timer_create), whose signal makes the thread it lands on yield. Since
 * Linux 6.4 a timer's signal goes to the thread running when it fires, where that is one
 * of ours: a thread in the middle of a racy load-add-store gives its CPU to the other, which
 * then updates the shared value before the first one's store overwrites it. */
#define INTERLEAVE_SIG (SIGRTMAX - 3)
static timer_t interleave_timer;
static int interleave_ready;

static void on_interleave(int sig) {
    (void)sig;
    int e = errno;
    sched_yield();
    errno = e;
}

static void interleave_setup(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_interleave;
    sa.sa_flags = SA_RESTART;
    struct sigevent ev;
    memset(&ev, 0, sizeof ev);
    ev.sigev_notify = SIGEV_SIGNAL;
    ev.sigev_signo = INTERLEAVE_SIG;
    interleave_ready =
        !sigaction(INTERLEAVE_SIG, &sa, NULL) && !timer_create(CLOCK_MONOTONIC, &ev, &interleave_timer);
}

/* armed (period ns) or disarmed (0) around one call */
static void interleave_arm(long ns) {
    if (!interleave_ready) return;
    struct itimerspec it = {{0, ns}, {0, ns}};
    timer_settime(interleave_timer, 0, &it, NULL);
}

static int64_t cpu_us(const struct rusage *r) {
    return ((int64_t)r->ru_utime.tv_sec + r->ru_stime.tv_sec) * 1000000 + r->ru_utime.tv_usec +
           r->ru_stime.tv_usec;
}

int kf_wk_start(int *argcp, char ***argvp, const char **entryp, kf_wk_arena *a) {
    int argc = *argcp;
    char **argv = *argvp;
    if (prctl(PR_SET_PDEATHSIG, SIGKILL)) return 112;
    /* a CPU worker: nothing but its (random) name on the command line */
    const char *entry = NULL;
    if (argc == 1) {
        if (read_config(argv[0])) return 111;
        argv = cfg_argv;
        entry = argv[8];
        argc = 8;
    }
    if (argc == 9) entry = argv[8]; /* a worker started with its arguments: a C object's entry */
    if (argc != 8 && argc != 9) return 111;
    /* parent died before the call; "-": started through a wrapper (compute-sanitizer),
     * whose death kills it; the coordinator's death closes the channel, which ends it */
    if (strcmp(argv[2], "-") && (long)getppid() != strtol(argv[2], NULL, 10)) return 112;
    if (syscall(SYS_close_range, KF_WORKER_INPUT_FD + 1, ~0U, 0)) {
        for (int fd = KF_WORKER_INPUT_FD + 1; fd < 1024; fd++) close(fd);
    }

    /* the arena, and right after it (CPU workers) the inputs' region: read-only, from a
     * read-only descriptor, so no writable alias of an input exists in this process; a
     * write to a const input faults (on_segv reports it) */
    struct stat st, ist;
    if (fstat(KF_WORKER_ARENA_FD, &st)) kf_wk_die(113, "arena");
    int split = !fstat(KF_WORKER_INPUT_FD, &ist) && S_ISREG(ist.st_mode) && ist.st_size == st.st_size;
    size_t asz = (size_t)st.st_size, total = split ? 2 * asz : asz;
    void *arena = mmap(NULL, total, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (arena == MAP_FAILED ||
        mmap(arena, asz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, KF_WORKER_ARENA_FD, 0) ==
            MAP_FAILED ||
        (split && mmap((char *)arena + asz, asz, PROT_READ, MAP_SHARED | MAP_FIXED, KF_WORKER_INPUT_FD, 0) ==
                      MAP_FAILED))
        kf_wk_die(113, "mmap arena");
    close(KF_WORKER_ARENA_FD);
    if (split) close(KF_WORKER_INPUT_FD);

    /* the CPUs it may use (timing runs: every CPU but the coordinator's, which spin-waits
     * on its own), before any thread exists, the CUDA driver's too: all inherit it. A GPU
     * worker left on the coordinator's CPU waited for the spinning coordinator to be
     * preempted: about 4 ms (a scheduler tick) per call on the H200 machine. */
    if (strcmp(argv[6], "-")) {
        cpu_set_t set;
        CPU_ZERO(&set);
        for (char *p = argv[6]; *p;) {
            char *end;
            long c = strtol(p, &end, 10);
            if (end == p || c < 0 || c >= CPU_SETSIZE) kf_wk_die(113, "cpu list");
            CPU_SET((int)c, &set);
            p = *end == ',' ? end + 1 : end;
            if (*end && *end != ',') kf_wk_die(113, "cpu list");
        }
        if (sched_setaffinity(0, sizeof set, &set)) kf_wk_die(113, "sched_setaffinity");
    }
    *argcp = argc;
    *argvp = argv;
    *entryp = entry;
    a->base = arena;
    a->size = asz;
    a->total = total;
    a->split = split;
    return 0;
}

int kf_wk_cpu_main(char **argv, const char *entry, const kf_wk_arena *a) {
    void *arena = a->base;
    size_t asz = a->size, total = a->total;
    int split = a->split;
    int dropped = kf_wk_drop_root(argv[7], argv[2]);

    int sealed = kf_wk_seal_image();

    const char *ro[] = {"/usr", "/lib", "/lib64", "/lib32", "/etc/ld.so.cache", "/sys/devices/system/cpu",
                        argv[5]};
    int abi = kf_policy_landlock(ro, (int)(sizeof ro / sizeof ro[0]), NULL, 0);
    if (abi < 0) kf_wk_die(113, "landlock");

    char *end;
    double cpu_s = strtod(argv[3], &end); /* the coordinator writes "%.3f" */
    if (end == argv[3] || *end) kf_wk_die(113, "cpu limit");
    kf_limits lim = {cpu_s, strtoull(argv[4], NULL, 10), 1 << 20, 64};
    if (kf_policy_rlimits(&lim)) kf_wk_die(113, "rlimits");
    if (dropped) { /* a thread bomb stops here, whatever other workers do */
        struct rlimit np = {4096, 4096};
        if (setrlimit(RLIMIT_NPROC, &np)) kf_wk_die(113, "rlimit nproc");
    }
    if (split) {
        ro_lo = (uintptr_t)arena + asz;
        ro_hi = ro_lo + asz;
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_segv;
        sa.sa_flags = SA_SIGINFO | SA_NODEFER;
        if (sigaction(SIGSEGV, &sa, NULL)) kf_wk_die(113, "sigaction");
    }
    interleave_setup();
    if (kf_policy_seccomp_worker(getpid(), abi > 0)) kf_wk_die(113, "seccomp");
    /* from here on every message may come from the candidate: announce the end of the
     * trusted setup, with the confinement layers (Landlock ABI, bit 8 mseal) */
    kf_msg_done ok = {
        .magic = KF_PROTO_MAGIC, .type = KF_MSG_SETUP_OK, .ns = (uint64_t)abi | (uint64_t)sealed << 8};
    if (send(KF_WORKER_SOCK_FD, &ok, sizeof ok, MSG_NOSIGNAL) != sizeof ok) _exit(114);

    /* the candidate's prints reach the coordinator's capped log even when the worker is
     * killed, not sitting in a stdio buffer */
    setvbuf(stdout, NULL, _IONBF, 0);
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        kf_wk_send_text(KF_MSG_LOADFAIL, dlerror());
        _exit(0);
    }
    void *fn = entry ? dlsym(h, entry) : NULL;
    if (!fn) {
        kf_wk_send_text(KF_MSG_LOADFAIL, "the entry is missing from the built object");
        _exit(0);
    }
    void *mfn = cfg_mag ? dlsym(h, cfg_mag) : NULL;
    if (cfg_mag && !mfn) {
        kf_wk_send_text(KF_MSG_LOADFAIL, "the task's magnitude function is missing from the built object");
        _exit(0);
    }
    kf_msg_done ready = {.magic = KF_PROTO_MAGIC, .type = KF_MSG_READY};
    if (send(KF_WORKER_SOCK_FD, &ready, sizeof ready, MSG_NOSIGNAL) != sizeof ready) _exit(114);

    for (;;) {
        kf_msg_run m;
        ssize_t n = recv(KF_WORKER_SOCK_FD, &m, sizeof m, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n != (ssize_t)sizeof m || m.magic != KF_PROTO_MAGIC) _exit(n == 0 ? 0 : 115);
        if (m.type == KF_MSG_EXIT) _exit(0);
        if (m.type != KF_MSG_RUN || m.nargs > KF_PROTO_MAXARGS) _exit(115);
        void *bufs[KF_PROTO_MAXARGS];
        for (uint32_t i = 0; i < m.nargs; i++)
            bufs[i] = m.off[i] < (uint64_t)total ? (char *)arena + m.off[i] : NULL;
        memcpy(cur_off, m.off, sizeof cur_off);
        cur_nargs = m.nargs;
        /* t0 leaves the process before any candidate code runs in this call, so no
         * register or stack trick of the candidate can move it */
        if (!call_ready) { /* before the START stamp: not the candidate's time */
            if (call_prepare(&m)) _exit(115);
            call_ready = 1;
        }
        int inter = (m.flags & KF_RUN_INTERLEAVE) != 0;
        struct rusage p0, t0, p1, t1; /* read outside the timed span */
        getrusage(RUSAGE_SELF, &p0);
        getrusage(RUSAGE_THREAD, &t0);
        kf_msg_done start = {
            .magic = KF_PROTO_MAGIC, .type = KF_MSG_START, .seq = m.seq, .ns = kf_wk_now_ns()};
        if (send(KF_WORKER_SOCK_FD, &start, sizeof start, MSG_NOSIGNAL) != sizeof start) _exit(114);
        if (inter) interleave_arm(KF_INTERLEAVE_NS);
        if ((m.flags & KF_RUN_MAGNITUDE) && !mfn) _exit(115);
        call_entry(m.flags & KF_RUN_MAGNITUDE ? mfn : fn, &m, bufs);
        if (inter) interleave_arm(0);
        kf_msg_done d = {.magic = KF_PROTO_MAGIC, .type = KF_MSG_DONE, .seq = m.seq, .ns = kf_wk_now_ns()};
        /* after the clock: did other threads run? (the process's CPU time, dead threads'
         * included, over 20 us beyond this thread's: the reads are not at one instant).
         * The checker gives such a candidate its race rounds; a candidate can only lie
         * itself out of them, hiding its own race */
        getrusage(RUSAGE_SELF, &p1);
        getrusage(RUSAGE_THREAD, &t1);
        if (cpu_us(&p1) - cpu_us(&p0) > cpu_us(&t1) - cpu_us(&t0) + 20) d.gpu_flags |= KF_DONE_THREADS;
        if (send(KF_WORKER_SOCK_FD, &d, sizeof d, MSG_NOSIGNAL) != sizeof d) _exit(114);
    }
}
