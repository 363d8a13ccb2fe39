/*
 * policy.c - self-confinement layers: rlimits, Landlock, seccomp.
 *
 * The worker's seccomp filter is an allow-list whose default is to kill the process
 * (the coordinator reports SIGSYS as sandbox_violation). It forbids process creation
 * (clone only with CLONE_THREAD; clone3 answers ENOSYS so glibc falls back to clone),
 * exec, sockets, ptrace and cross-process memory access, signals to any process but
 * itself (and job-control signals even to itself), opening files for writing or
 * creating/removing them, W+X mappings,
 * io_uring, bpf, perf, keyrings, mounts and namespace changes. Landlock restricts which
 * paths may be read at all. Neither layer depends on the other.
 * The GPU host-mode variant (candidate host code next to the CUDA driver) also allows
 * any ioctl but TIOCSTI, read-write opens of existing files, epoll, mlock and NUMA
 * calls, applies to every thread, and traps instead of killing so that the worker can
 * name the forbidden call.
 */
#define _GNU_SOURCE
#include "policy.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <termios.h>
#include <unistd.h>

int kf_policy_rlimits(const kf_limits *l) {
    struct rlimit r;
    if (l->cpu_s > 0) {
        r.rlim_cur = (rlim_t)(l->cpu_s + 0.999);
        r.rlim_max = r.rlim_cur + 1;
        if (setrlimit(RLIMIT_CPU, &r)) return -1;
    }
    if (l->as) {
        r.rlim_cur = r.rlim_max = l->as;
        if (setrlimit(RLIMIT_AS, &r)) return -1;
    }
    r.rlim_cur = r.rlim_max = l->fsize;
    if (setrlimit(RLIMIT_FSIZE, &r)) return -1;
    if (l->nofile) {
        r.rlim_cur = r.rlim_max = l->nofile;
        if (setrlimit(RLIMIT_NOFILE, &r)) return -1;
    }
    r.rlim_cur = r.rlim_max = 0;
    return setrlimit(RLIMIT_CORE, &r);
}

/* ---- Landlock ------------------------------------------------------------------ */

#ifndef LANDLOCK_ACCESS_FS_REFER
#define LANDLOCK_ACCESS_FS_REFER (1ULL << 13)
#endif
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15)
#endif

#define FS_READ (LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR)
#define FS_FILE_RIGHTS                                                                           \
    (LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_WRITE_FILE | \
     LANDLOCK_ACCESS_FS_TRUNCATE | LANDLOCK_ACCESS_FS_IOCTL_DEV)

/* Landlock ABI 6 adds scopes: signals and abstract unix sockets stay inside the domain. */
struct kf_ll_ruleset_attr {
    uint64_t handled_access_fs;
    uint64_t handled_access_net;
    uint64_t scoped;
};

static uint64_t fs_rights_for_abi(int abi) {
    uint64_t r = (LANDLOCK_ACCESS_FS_MAKE_SYM << 1) - 1; /* ABI 1: bits 0..12 */
    if (abi >= 2) r |= LANDLOCK_ACCESS_FS_REFER;
    if (abi >= 3) r |= LANDLOCK_ACCESS_FS_TRUNCATE;
    if (abi >= 5) r |= LANDLOCK_ACCESS_FS_IOCTL_DEV;
    return r;
}

static int add_rule(int rfd, const char *path, uint64_t want, uint64_t handled) {
    int fd = open(path, O_PATH | O_CLOEXEC);
    if (fd < 0) return errno == ENOENT ? 0 : -1; /* a missing system dir is fine */
    struct landlock_path_beneath_attr pb = {0};
    pb.parent_fd = fd;
    pb.allowed_access = want & handled;
    int rc = (int)syscall(SYS_landlock_add_rule, rfd, LANDLOCK_RULE_PATH_BENEATH, &pb, 0);
    if (rc && errno == EINVAL) { /* a regular file: only file rights apply */
        pb.allowed_access &= FS_FILE_RIGHTS;
        rc = (int)syscall(SYS_landlock_add_rule, rfd, LANDLOCK_RULE_PATH_BENEATH, &pb, 0);
    }
    close(fd);
    return rc;
}

int kf_policy_landlock(const char *const *ro, int nro, const char *const *rw, int nrw) {
    int abi = (int)syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
    if (abi < 1) return 0;
    struct kf_ll_ruleset_attr attr = {0};
    attr.handled_access_fs = fs_rights_for_abi(abi);
    size_t attr_size = offsetof(struct kf_ll_ruleset_attr, handled_access_net);
    if (abi >= 6) {
        attr.scoped = 0x1 | 0x2; /* ABSTRACT_UNIX_SOCKET | SIGNAL */
        attr_size = sizeof attr;
    }
    int rfd = (int)syscall(SYS_landlock_create_ruleset, &attr, attr_size, 0);
    if (rfd < 0) return -1;
    for (int i = 0; i < nro; i++)
        if (add_rule(rfd, ro[i], FS_READ, attr.handled_access_fs)) goto fail;
    for (int i = 0; i < nrw; i++)
        if (add_rule(rfd, rw[i], attr.handled_access_fs, attr.handled_access_fs)) goto fail;
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) goto fail;
    if (syscall(SYS_landlock_restrict_self, rfd, 0)) goto fail;
    close(rfd);
    return abi;
fail:
    close(rfd);
    return -1;
}

/* ---- seccomp ------------------------------------------------------------------- */

static const int allowed[] = {
    SCMP_SYS(read),
    SCMP_SYS(write),
    SCMP_SYS(readv),
    SCMP_SYS(writev),
    SCMP_SYS(pread64),
    SCMP_SYS(close),
    SCMP_SYS(fstat),
    SCMP_SYS(newfstatat),
    SCMP_SYS(statx),
    SCMP_SYS(lseek),
    SCMP_SYS(munmap),
    SCMP_SYS(mremap),
    SCMP_SYS(madvise),
    SCMP_SYS(brk),
    SCMP_SYS(access),
    SCMP_SYS(faccessat),
    SCMP_SYS(faccessat2),
    SCMP_SYS(getcwd),
    SCMP_SYS(readlink),
    SCMP_SYS(readlinkat),
    SCMP_SYS(getdents64),
    SCMP_SYS(clock_gettime),
    SCMP_SYS(clock_getres),
    SCMP_SYS(gettimeofday),
    SCMP_SYS(time),
    SCMP_SYS(clock_nanosleep),
    SCMP_SYS(nanosleep),
    SCMP_SYS(sched_yield),
    /* the interleaver's timer (worker_main.c), created before the filter: a candidate can
     * create none, only re-arm or stop that one (which hides nothing but its own races) */
    SCMP_SYS(timer_settime),
    SCMP_SYS(timer_gettime),
    SCMP_SYS(getpid),
    SCMP_SYS(gettid),
    SCMP_SYS(getppid),
    SCMP_SYS(getuid),
    SCMP_SYS(geteuid),
    SCMP_SYS(getgid),
    SCMP_SYS(getegid),
    SCMP_SYS(uname),
    SCMP_SYS(sysinfo),
    SCMP_SYS(getrandom),
    SCMP_SYS(futex),
    SCMP_SYS(set_robust_list),
    SCMP_SYS(get_robust_list),
    SCMP_SYS(rseq),
    SCMP_SYS(set_tid_address),
    SCMP_SYS(rt_sigprocmask),
    SCMP_SYS(rt_sigreturn),
    SCMP_SYS(sigaltstack),
    SCMP_SYS(exit),
    SCMP_SYS(exit_group),
    SCMP_SYS(sched_getaffinity),
    SCMP_SYS(sched_getparam),
    SCMP_SYS(sched_getscheduler),
    SCMP_SYS(membarrier),
    SCMP_SYS(arch_prctl),
    SCMP_SYS(getrusage),
    SCMP_SYS(times),
    SCMP_SYS(poll),
    SCMP_SYS(ppoll),
    SCMP_SYS(sendto),
    SCMP_SYS(recvfrom),
    SCMP_SYS(sendmsg),
    SCMP_SYS(recvmsg),
    SCMP_SYS(mincore),
    SCMP_SYS(getcpu),
    SCMP_SYS(restart_syscall),
    SCMP_SYS(dup),
    SCMP_SYS(dup3),
    SCMP_SYS(pipe2),
    SCMP_SYS(eventfd2),
    SCMP_SYS(pause),
    SCMP_SYS(select),
    SCMP_SYS(pselect6),
    SCMP_SYS(sched_get_priority_max),
    SCMP_SYS(sched_get_priority_min),
    SCMP_SYS(rt_sigtimedwait),
    SCMP_SYS(rt_sigsuspend),
    /* NUMA placement of the process's own memory (libnuma, NUMA-aware kernels): pages
     * move between nodes, never to another process; move_pages only for pid 0 (below) */
    SCMP_SYS(get_mempolicy),
    SCMP_SYS(set_mempolicy),
    SCMP_SYS(mbind),
};

/* Harmless calls a library may probe; they fail instead of killing. */
static const int refused[] = {
    SCMP_SYS(memfd_create),   SCMP_SYS(prctl),         SCMP_SYS(setsid),
    SCMP_SYS(mlock),          SCMP_SYS(munlock),       SCMP_SYS(sched_setaffinity),
    SCMP_SYS(setpriority),    SCMP_SYS(getpriority),   SCMP_SYS(openat2),
    SCMP_SYS(statfs),         SCMP_SYS(fstatfs),       SCMP_SYS(sched_setscheduler),
    SCMP_SYS(sched_setparam), SCMP_SYS(sched_setattr), SCMP_SYS(sched_getattr),
};

/* GPU host mode adds what the CUDA driver and runtime use after their set-up: event
 * loops, pinned memory (NUMA placement is in the common list). UNVERIFIED on a GPU when written: the filter
 * traps (SIGSYS with the number) instead of killing, so a missing call is named. */
static const int gpu_allowed[] = {
    SCMP_SYS(epoll_create1),   SCMP_SYS(epoll_ctl), SCMP_SYS(epoll_wait),     SCMP_SYS(epoll_pwait),
    SCMP_SYS(mlock),           SCMP_SYS(munlock),   SCMP_SYS(timerfd_create), SCMP_SYS(timerfd_settime),
    SCMP_SYS(timerfd_gettime), SCMP_SYS(pwrite64),  SCMP_SYS(mlock2),         SCMP_SYS(stat),
    SCMP_SYS(lstat),
};

static int build_filter(pid_t self, int landlock, int gpu) {
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) return -1;
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    scmp_filter_ctx f = seccomp_init(gpu ? SCMP_ACT_TRAP : SCMP_ACT_KILL_PROCESS);
    if (!f) return -1;
    int rc = 0;
    /* GPU: every thread, the driver's included (created before the filter) */
    if (gpu) rc |= seccomp_attr_set(f, SCMP_FLTATR_CTL_TSYNC, 1);
    for (size_t i = 0; i < sizeof allowed / sizeof allowed[0]; i++)
        rc |= seccomp_rule_add(f, SCMP_ACT_ALLOW, allowed[i], 0);
    for (size_t i = 0; gpu && i < sizeof gpu_allowed / sizeof gpu_allowed[0]; i++)
        rc |= seccomp_rule_add(f, SCMP_ACT_ALLOW, gpu_allowed[i], 0);
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
        if (!gpu || (refused[i] != SCMP_SYS(mlock) && refused[i] != SCMP_SYS(munlock)))
            rc |= seccomp_rule_add(f, SCMP_ACT_ERRNO(EPERM), refused[i], 0);
    rc |= seccomp_rule_add(f, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);

    /* threads only */
    rc |= seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(clone), 1,
                           SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, CLONE_THREAD));
    /* never W+X */
    const uint64_t wx = PROT_WRITE | PROT_EXEC, ok[] = {0, PROT_WRITE, PROT_EXEC};
    for (int i = 0; i < 3; i++) {
        rc |= seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(mmap), 1, SCMP_A2(SCMP_CMP_MASKED_EQ, wx, ok[i]));
        rc |= seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(mprotect), 1,
                               SCMP_A2(SCMP_CMP_MASKED_EQ, wx, ok[i]));
    }
    /* Opens: read-only ones pass. O_RDWR without create/truncate/append (what
     * pthread_setname_np does on /proc/self/task/N/comm) fails with EACCES: Landlock
     * grants no write right anywhere, and without Landlock seccomp refuses it itself.
     * Anything that writes, creates, truncates or appends kills (sandbox_violation). */
    const uint64_t wr = O_ACCMODE | O_CREAT | O_TRUNC | O_APPEND;
    rc |= seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(openat), 1, SCMP_A2(SCMP_CMP_MASKED_EQ, wr, 0));
    rc |= seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(open), 1, SCMP_A1(SCMP_CMP_MASKED_EQ, wr, 0));
    /* GPU: the driver opens its device files read-write (no Landlock there yet: an
     * existing file writable by the worker's own uid could be written; docs/cuda.md) */
    uint32_t rdwr = landlock || gpu ? SCMP_ACT_ALLOW : SCMP_ACT_ERRNO(EACCES);
    rc |= seccomp_rule_add(f, rdwr, SCMP_SYS(openat), 1, SCMP_A2(SCMP_CMP_MASKED_EQ, wr, O_RDWR));
    rc |= seccomp_rule_add(f, rdwr, SCMP_SYS(open), 1, SCMP_A1(SCMP_CMP_MASKED_EQ, wr, O_RDWR));
    /* GPU host mode: an open that would write, create, truncate or append fails with
     * EACCES instead of trapping: libraries the candidate may use do that and carry on
     * when it fails (NVRTC names its threads through /proc/self/task/N/comm with a
     * write-only open); nothing is written either way */
    static const int wbits[] = {O_WRONLY, O_CREAT, O_TRUNC, O_APPEND};
    for (size_t i = 0; gpu && i < sizeof wbits / sizeof wbits[0]; i++) {
        rc |= seccomp_rule_add(f, SCMP_ACT_ERRNO(EACCES), SCMP_SYS(openat), 1,
                               SCMP_A2(SCMP_CMP_MASKED_EQ, (uint64_t)wbits[i], (uint64_t)wbits[i]));
        rc |= seccomp_rule_add(f, SCMP_ACT_ERRNO(EACCES), SCMP_SYS(open), 1,
                               SCMP_A1(SCMP_CMP_MASKED_EQ, (uint64_t)wbits[i], (uint64_t)wbits[i]));
    }
    /* No handler for SIGCONT: it would run the candidate's code at the resume, before
     * the worker stamps START (reading the queued request and working untimed). */
    rc |= seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(rt_sigaction), 1, SCMP_A0(SCMP_CMP_NE, SIGCONT));
    rc |= seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(rt_sigaction), 2, SCMP_A0(SCMP_CMP_EQ, SIGCONT),
                           SCMP_A1(SCMP_CMP_EQ, 0));
    rc |= seccomp_rule_add(f, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(rt_sigaction), 2, SCMP_A0(SCMP_CMP_EQ, SIGCONT),
                           SCMP_A1(SCMP_CMP_NE, 0));
    /* Signals to itself only, and never the job-control ones: a SIGCONT to itself
     * cancels the coordinator's freeze (a red-team pass did exactly that, to keep working
     * after its answer and to hang the coordinator), and stopping itself would fake one. */
    for (int sig = 0; sig <= 64; sig++) {
        if (sig == SIGCONT || sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU) continue;
        rc |= seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(kill), 2, SCMP_A0(SCMP_CMP_EQ, (uint64_t)self),
                               SCMP_A1(SCMP_CMP_EQ, (uint64_t)sig));
        rc |= seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(tgkill), 2, SCMP_A0(SCMP_CMP_EQ, (uint64_t)self),
                               SCMP_A2(SCMP_CMP_EQ, (uint64_t)sig));
    }
    /* getrlimit through prlimit64(0, res, NULL, old); setting a limit fails (EPERM) */
    rc |= seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(prlimit64), 2, SCMP_A0(SCMP_CMP_EQ, 0),
                           SCMP_A2(SCMP_CMP_EQ, 0));
    rc |= seccomp_rule_add(f, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(prlimit64), 1, SCMP_A2(SCMP_CMP_NE, 0));
    rc |= seccomp_rule_add(f, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(setrlimit), 0);
    /* fcntl: descriptor flags and duplication only. F_SETOWN/F_SETSIG/O_ASYNC would have
     * the kernel signal another process (the coordinator) on channel activity; leases,
     * locks and notifications are channels between processes. */
    static const int fcntl_ok[] = {F_GETFD, F_SETFD, F_GETFL, F_DUPFD, F_DUPFD_CLOEXEC};
    for (size_t i = 0; i < sizeof fcntl_ok / sizeof fcntl_ok[0]; i++)
        rc |= seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(fcntl), 1,
                               SCMP_A1(SCMP_CMP_EQ, (uint64_t)fcntl_ok[i]));
    rc |= seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(fcntl), 2, SCMP_A1(SCMP_CMP_EQ, F_SETFL),
                           SCMP_A2(SCMP_CMP_MASKED_EQ, O_ASYNC, 0));
    rc |= seccomp_rule_add(f, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(fcntl), 2, SCMP_A1(SCMP_CMP_EQ, F_SETFL),
                           SCMP_A2(SCMP_CMP_MASKED_EQ, O_ASYNC, O_ASYNC));
    static const int fcntl_no[] = {F_SETOWN,     F_GETOWN,     F_SETSIG,    F_GETSIG,    F_SETLEASE,
                                   F_GETLEASE,   F_NOTIFY,     F_SETLK,     F_SETLKW,    F_GETLK,
                                   F_OFD_SETLK,  F_OFD_SETLKW, F_OFD_GETLK, F_SETOWN_EX, F_GETOWN_EX,
                                   F_SETPIPE_SZ, F_GETPIPE_SZ, F_ADD_SEALS, F_GET_SEALS};
    for (size_t i = 0; i < sizeof fcntl_no / sizeof fcntl_no[0]; i++)
        rc |= seccomp_rule_add(f, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(fcntl), 1,
                               SCMP_A1(SCMP_CMP_EQ, (uint64_t)fcntl_no[i]));
    /* NUMA page placement, of its own pages only */
    rc |= seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(move_pages), 1, SCMP_A0(SCMP_CMP_EQ, 0));
    if (gpu) {
        /* the driver talks to /dev/nvidia* through ioctl, with request numbers of its
         * own (nvidia-uvm's are not even _IOC-encoded): any request but TIOCSTI (typing
         * into a terminal; the worker has none, but never) */
        rc |= seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(ioctl), 1, SCMP_A1(SCMP_CMP_NE, TIOCSTI));
        rc |= seccomp_rule_add(f, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), 1, SCMP_A1(SCMP_CMP_EQ, TIOCSTI));
    } else {
        /* isatty() and friends */
        rc |= seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(ioctl), 1, SCMP_A1(SCMP_CMP_EQ, TCGETS));
        rc |= seccomp_rule_add(f, SCMP_ACT_ERRNO(ENOTTY), SCMP_SYS(ioctl), 1, SCMP_A1(SCMP_CMP_NE, TCGETS));
    }
    if (rc) {
        seccomp_release(f);
        errno = EINVAL;
        return -1;
    }
    rc = seccomp_load(f);
    seccomp_release(f);
    if (rc) {
        errno = -rc;
        return -1;
    }
    return 0;
}

int kf_policy_seccomp_worker(pid_t self, int landlock) { return build_filter(self, landlock, 0); }

int kf_policy_seccomp_gpu_host(pid_t self) { return build_filter(self, 0, 1); }

char *kf_policy_syscall_name(int nr) { return seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr); }
