/*
 * sandbox.c - spawn and drive kforge-worker processes; run the compiler under limits.
 *
 * A worker lives in its own session (so its own process group), receives an empty
 * environment, a private directory holding only its copy of the built object, a
 * shared arena, a SOCK_SEQPACKET result channel and two pipes whose output is read
 * here up to a cap. Every wait has a wall deadline; on expiry the whole group gets
 * SIGKILL. Death is classified from the wait status and rusage: SIGSYS means the
 * seccomp filter fired (sandbox_violation), SIGXCPU the CPU limit (timeout), SIGXFSZ
 * the file-size limit, a fault near the memory limit resource_limit, any other fault
 * or exit a crash. kf_worker_close always kills and reaps: no candidate process
 * survives the verdict.
 *
 * kf_sandbox_exec (the compiler) puts a guard at the head of the group: the compiler
 * runs as its child, and the guard, told by PR_SET_PDEATHSIG when kforge dies (kill -9
 * included), kills the whole group: the driver's children (cc1, as, ld) die with kforge,
 * not only the driver. On every other way out kforge kills the group itself.
 */
#define _GNU_SOURCE
#include "sandbox.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define OUTPUT_CAP (64u << 10)

struct kf_worker {
    pid_t pid;
    int sock, outfd, errfd;
    unsigned char *arena;
    size_t arena_size; /* the whole mapping: both regions when there are two */
    size_t ro_base;    /* CPU workers: where the read-only region starts; 0: none */
    uint32_t seq;
    int dead, stopped, landlock_abi, sealed, spin, device, filtered;
    int stamped;             /* SO_TIMESTAMPNS is on for the channel */
    uint64_t sent_ns;        /* the kernel's send time of the last message received, or 0 */
    int wrapped, end_status; /* started through a wrapper; its exit status, or -1 */
    double grace_s;
    int deferred; /* a GPU worker started before its artifact existed (kf_worker_attach) */
    int trusted;  /* a trusted program of kforge's (kf_worker_opts.exec), not kforge-worker */
    pid_t peer;   /* the program itself when pid is its stand-in (kf_worker_opts.exec_warm), or -1 */
    long uid;     /* the worker's own uid when started as root, else -1 */
    double start_timeout_s;
    uint64_t mem_limit;
    char info[1024]; /* GPU: what the worker reported about the loaded kernels */
    double cpu_s;
    kf_buf out;
    char dir[PATH_MAX];
    char marker[PATH_MAX]; /* anonymous workers: $TMPDIR/kforge-w-PID-XXXXXX -> dir, for the sweep */
    char so_file[PATH_MAX + NAME_MAX + 16]; /* where the object (GPU: the artifact) goes */
};

static char worker_path[PATH_MAX];

static void find_worker(void) {
    const char *env = getenv("KFORGE_WORKER");
    if (env && *env) {
        snprintf(worker_path, sizeof worker_path, "%s", env);
        return;
    }
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) {
        self[n] = 0;
        char *slash = strrchr(self, '/');
        if (slash) *slash = 0;
        snprintf(worker_path, sizeof worker_path, "%s/kforge-worker", self);
    }
#ifdef KF_WORKER_INSTALL_PATH
    if (access(worker_path, X_OK)) snprintf(worker_path, sizeof worker_path, "%s", KF_WORKER_INSTALL_PATH);
#endif
}

const char *kf_sandbox_worker_path(kf_ctx *ctx) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, find_worker);
    if (!worker_path[0] || access(worker_path, X_OK)) {
        kf__err(ctx, KF_EINTERNAL, "kforge-worker not found (looked at '%s'); set KFORGE_WORKER to its path",
                worker_path);
        return NULL;
    }
    return worker_path;
}

static int copy_file(const char *src, const char *dst) {
    char *data;
    size_t n;
    if (kf__read_file(src, 1u << 30, &data, &n)) return -1;
    int fd = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0400);
    if (fd < 0) {
        free(data);
        return -1;
    }
    size_t off = 0;
    while (off < n) {
        ssize_t w = write(fd, data + off, n - off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) break;
        off += (size_t)w;
    }
    free(data);
    return close(fd) || off != n ? -1 : 0;
}

static void drain(int *fd, kf_buf *b) {
    char tmp[16384];
    for (;;) {
        ssize_t n = read(*fd, tmp, sizeof tmp);
        if (n > 0) {
            kf_buf_append(b, tmp, (size_t)n);
            continue;
        }
        if (n < 0 && (errno == EINTR)) continue;
        if (n == 0) { /* writer closed */
            close(*fd);
            *fd = -1;
        }
        return;
    }
}

/* Threads of a process, from /proc/PID/status, or -1. */
static int thread_count(pid_t pid) {
    char path[64], buf[4096];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return -1;
    buf[n] = 0;
    char *p = strstr(buf, "\nThreads:");
    return p ? (int)strtol(p + 9, NULL, 10) : -1;
}

int kf_worker_libraries(const kf_worker *w, char *out, size_t n) {
    out[0] = 0;
    if (w->pid <= 0 || w->dead) return -1;
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/maps", (int)w->pid);
    FILE *f = fopen(path, "re"); /* a non-dumpable worker: readable by root only */
    if (!f) return -1;
    static const char *const skip[] = {"libc.so",    "libm.so",       "libstdc++.so", "libgcc_s.so",
                                       "ld-linux",   "libpthread.so", "libdl.so",     "librt.so",
                                       "libcuda.so", "libnvidia-",    "libcupti.so",  "libseccomp.so",
                                       NULL};
    char line[1024];
    int any = 0;
    while (fgets(line, sizeof line, f)) {
        char *p = strchr(line, '/');
        if (!p) continue;
        p[strcspn(p, "\n")] = 0;
        char *base = strrchr(p, '/') + 1;
        if (!strstr(base, ".so")) continue;
        /* the candidate's own object, in the worker's directory, is no library */
        size_t dl = strlen(w->dir);
        int drop = dl && !strncmp(p, w->dir, dl) && p[dl] == '/';
        for (int i = 0; skip[i] && !drop; i++) drop = !strncmp(base, skip[i], strlen(skip[i]));
        /* once each: "," + name + "," not already in the list */
        char key[300];
        snprintf(key, sizeof key, ",%s,", base);
        char have[4200];
        snprintf(have, sizeof have, ",%s,", out);
        if (drop || strstr(have, key)) continue;
        size_t o = strlen(out);
        if (o + strlen(base) + 2 < n) snprintf(out + o, n - o, "%s%s", o ? "," : "", base);
        any = 1;
    }
    fclose(f);
    (void)any;
    return 0;
}

int kf_worker_set_cpus(kf_worker *w, const void *cpus) {
    if (!w || w->dead || w->pid <= 0 || w->device || w->wrapped || !cpus) return -1;
    if (w->peer > 0 && sched_setaffinity(w->peer, sizeof(cpu_set_t), (const cpu_set_t *)cpus)) return -1;
    return sched_setaffinity(w->pid, sizeof(cpu_set_t), (const cpu_set_t *)cpus) ? -1 : 0;
}

int kf_worker_set_nice(kf_worker *w, int nice, uint64_t slice_ns) {
    if (!w || w->dead || w->pid <= 0 || w->device || w->wrapped) return -1;
    /* struct sched_attr (linux/sched/types.h), SCHED_OTHER: sched_runtime is the slice
     * (Linux 6.12+, 0.1 to 100 ms; 0: the default); older kernels refuse a runtime and
     * get the nice value alone */
    struct {
        uint32_t size, policy;
        uint64_t flags;
        int32_t nice;
        uint32_t prio;
        uint64_t runtime, deadline, period;
    } a = {sizeof a, 0, 0, nice, 0, slice_ns, 0, 0};
    /* a stand-in's peer (kf_worker_opts.exec_warm) is the process that runs */
    pid_t p = w->peer > 0 ? w->peer : w->pid;
    if (!syscall(SYS_sched_setattr, p, &a, 0)) return 0;
    return setpriority(PRIO_PROCESS, (id_t)p, nice) ? -1 : 0;
}

/* Signal the worker's process group, and its peer's (the program a stand-in stands for)
 * while the stand-in lives: once the stand-in has ended on its own, its peer has ended
 * and been reaped by its parent, and the pid may be another process's. */
static void signal_group(kf_worker *w, int sig) {
    if (w->pid <= 0) return;
    if (w->peer > 0) {
        siginfo_t si;
        memset(&si, 0, sizeof si);
        if (!(waitid(P_PID, (id_t)w->pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == w->pid)) {
            kill(-w->peer, sig);
            if (sig == SIGKILL) kill(w->peer, sig);
        }
    }
    kill(-w->pid, sig);
}

static void kill_group(kf_worker *w) {
    if (w->pid > 0) {
        signal_group(w, SIGKILL);
        kill(w->pid, SIGKILL);
    }
}

/* Has the worker died? Waits up to ms milliseconds; never reaps. */
static int wait_dead(pid_t pid, int ms) {
    for (int i = 0;; i++) {
        siginfo_t si;
        memset(&si, 0, sizeof si);
        if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == pid) return 1;
        if (i >= ms) return 0;
        usleep(1000);
    }
}

/* A wrapped worker's wrapper (compute-sanitizer) writes its report after the worker
 * ends: give it up to grace_s to exit on its own, resumed if frozen. Never reaps. */
static void wrapper_grace(kf_worker *w) {
    if (!w->wrapped || w->grace_s <= 0 || w->pid <= 0) return;
    if (w->stopped) {
        signal_group(w, SIGCONT);
        w->stopped = 0;
    }
    wait_dead(w->pid, (int)(w->grace_s * 1000));
}

/* Kill the whole group, then reap the leader (with its rusage). The leader is never
 * reaped before the group is killed: until then its pid and process group id cannot be
 * reused, so the kill cannot reach an unrelated process. */
static void kill_and_reap(kf_worker *w, int *status, struct rusage *ru) {
    siginfo_t si;
    memset(&si, 0, sizeof si);
    /* did it exit by itself (not by our kill)? that is the end status a wrapper reports */
    int exited = waitid(P_PID, (id_t)w->pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == w->pid;
    kill_group(w);
    while (wait4(w->pid, status, 0, ru) < 0 && errno == EINTR) {
    }
    if (exited) w->end_status = WIFEXITED(*status) ? WEXITSTATUS(*status) : 128 + WTERMSIG(*status);
    w->pid = -1;
    w->peer = -1;
    w->dead = 1;
}

/* Kill the worker and fail the call with reason and a message. */
static void fail_kill(kf_worker *w, kf_call_result *r, kf_reason reason, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void fail_kill(kf_worker *w, kf_call_result *r, kf_reason reason, const char *fmt, ...) {
    int status;
    struct rusage ru;
    kill_and_reap(w, &status, &ru);
    r->st = KF_CALL_FAILED;
    r->reason = reason;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->msg, sizeof r->msg, fmt, ap);
    va_end(ap);
}

/* After recv() returned 0 on the channel: did the worker close it (1), or send a
 * zero-length datagram (0)? */
static int peer_closed(int sock) {
    struct pollfd p = {sock, POLLIN | POLLRDHUP, 0};
    return poll(&p, 1, 0) > 0 && (p.revents & (POLLHUP | POLLRDHUP));
}

static void classify(kf_worker *w, int status, const struct rusage *ru, kf_call_result *r,
                     const char *phase) {
    r->st = KF_CALL_FAILED;
    uint64_t rss = (uint64_t)ru->ru_maxrss * 1024u;
    uint64_t extra = rss > w->arena_size ? rss - w->arena_size : 0;
    int near_mem = extra >= w->mem_limit / 10 * 8;
    double cpu = (double)ru->ru_utime.tv_sec + (double)ru->ru_stime.tv_sec +
                 (ru->ru_utime.tv_usec + ru->ru_stime.tv_usec) / 1e6;
    if (WIFEXITED(status)) {
        r->reason = KF_REASON_CRASH;
        snprintf(r->msg, sizeof r->msg, "the process exited with status %d %s", WEXITSTATUS(status), phase);
        return;
    }
    int sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    switch (sig) {
    case SIGSYS:
        r->reason = KF_REASON_SANDBOX_VIOLATION;
        snprintf(r->msg, sizeof r->msg,
                 "a forbidden system call %s (fork, exec, sockets, ptrace, signals to "
                 "other processes, file writes and W+X memory are not allowed)",
                 phase);
        return;
    case SIGXCPU:
        r->reason = KF_REASON_TIMEOUT;
        snprintf(r->msg, sizeof r->msg, "CPU limit of %.0f s reached %s", w->cpu_s, phase);
        return;
    case SIGXFSZ:
        r->reason = KF_REASON_RESOURCE_LIMIT;
        snprintf(r->msg, sizeof r->msg, "file size limit reached %s", phase);
        return;
    case SIGKILL:
        if (cpu >= w->cpu_s) {
            r->reason = KF_REASON_TIMEOUT;
            snprintf(r->msg, sizeof r->msg, "CPU limit of %.0f s reached %s", w->cpu_s, phase);
            return;
        }
        break;
    default: break;
    }
    if (near_mem) {
        r->reason = KF_REASON_RESOURCE_LIMIT;
        snprintf(r->msg, sizeof r->msg, "memory limit of %llu MiB reached (%s) %s",
                 (unsigned long long)(w->mem_limit >> 20), sig ? strsignal(sig) : "?", phase);
        return;
    }
    r->reason = KF_REASON_CRASH;
    snprintf(r->msg, sizeof r->msg, "killed by %s %s", sig ? strsignal(sig) : "a signal", phase);
}

/* The worker closed its channel or sent garbage: wait briefly for it to die on its
 * own (to classify the death), then kill and reap. */
static void reap(kf_worker *w, kf_call_result *r, const char *phase, int forged) {
    int status = 0;
    struct rusage ru;
    memset(&ru, 0, sizeof ru);
    if (!forged) wrapper_grace(w);
    int dead = !forged && wait_dead(w->pid, 200);
    kill_and_reap(w, &status, &ru);
    if (dead) {
        classify(w, status, &ru, r, phase);
        return;
    }
    r->st = KF_CALL_FAILED;
    r->reason = forged ? KF_REASON_SANDBOX_VIOLATION : KF_REASON_CRASH;
    snprintf(r->msg, sizeof r->msg, "%s %s",
             forged ? "forged or malformed bytes on the result channel" : "the result channel was closed",
             phase);
}

/* Anything waiting on the channel when nothing should be: 1 (and the worker reaped,
 * r set), else 0. */
static int stray_bytes(kf_worker *w, kf_call_result *r, const char *phase) {
    char junk[64];
    ssize_t n = recv(w->sock, junk, sizeof junk, MSG_DONTWAIT | MSG_PEEK);
    if (n < 0) return 0; /* EAGAIN: nothing */
    reap(w, r, phase, n > 0 || !peer_closed(w->sock));
    return 1;
}

static void timeout_kill(kf_worker *w, kf_call_result *r, double s, const char *phase) {
    int status;
    struct rusage ru;
    kill_and_reap(w, &status, &ru);
    r->st = KF_CALL_FAILED;
    r->reason = KF_REASON_TIMEOUT;
    snprintf(r->msg, sizeof r->msg, "no answer within the %.1f s wall deadline %s", s, phase);
}

/* recv() on the result channel, keeping the kernel's record of when the message was
 * sent (SO_TIMESTAMPNS, set on the channel at the first call: the kernel stamps each
 * datagram as the worker's send() queues it) in w->sent_ns, on CLOCK_MONOTONIC, or 0
 * when there is none. The candidate cannot move that stamp: it says when the message
 * left, however late the coordinator got to read it. */
static ssize_t chan_recv(kf_worker *w, void *buf, size_t cap, int flags) {
    union {
        char b[CMSG_SPACE(sizeof(struct timespec)) + 64];
        struct cmsghdr align;
    } ctl;
    struct iovec io = {buf, cap};
    struct msghdr mh;
    memset(&mh, 0, sizeof mh);
    mh.msg_iov = &io;
    mh.msg_iovlen = 1;
    mh.msg_control = ctl.b;
    mh.msg_controllen = sizeof ctl.b;
    ssize_t got = recvmsg(w->sock, &mh, flags);
    w->sent_ns = 0;
    if (got <= 0) return got;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SO_TIMESTAMPNS) continue;
        struct timespec ts, rt, mono;
        memcpy(&ts, CMSG_DATA(c), sizeof ts);
        /* CLOCK_REALTIME, as sockets stamp: moved onto CLOCK_MONOTONIC with the offset
         * read now (the two clocks run at one rate; a step of the wall clock makes the
         * stamp implausible, and the caller then ignores it) */
        clock_gettime(CLOCK_REALTIME, &rt);
        clock_gettime(CLOCK_MONOTONIC, &mono);
        int64_t off = ((int64_t)rt.tv_sec - mono.tv_sec) * 1000000000 + (rt.tv_nsec - mono.tv_nsec);
        int64_t sent = ((int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec) - off;
        w->sent_ns = sent > 0 ? (uint64_t)sent : 0;
    }
    return got;
}

/* Wait for one message. 1: *len bytes in buf (unvalidated); 0: the worker died or
 * misbehaved (reaped, r set); -1: deadline passed (worker still alive). */
static int await(kf_worker *w, void *buf, size_t cap, size_t *len, uint64_t deadline, kf_call_result *r,
                 const char *phase, uint64_t spin_ns) {
    /* Spin first: a coordinator asleep in poll() wakes 15-60 us late depending on how
     * long it slept, which would make the time it measures depend on the kernel's
     * length. Spinning keeps the reply latency small and the same for both sides. */
    uint64_t spin_end = kf__now_ns() + spin_ns;
    while (spin_ns && kf__now_ns() < spin_end) {
        ssize_t got = chan_recv(w, buf, cap, MSG_DONTWAIT | MSG_TRUNC);
        if (got > 0 && (size_t)got <= cap) {
            *len = (size_t)got;
            return 1;
        }
        if (got > 0 || (got == 0 && !peer_closed(w->sock))) { /* oversized or empty */
            reap(w, r, phase, 1);
            return 0;
        }
        if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR)) break;
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
    }
    int reset_seen = 0;
    for (;;) {
        uint64_t now = kf__now_ns();
        if (now >= deadline) return -1;
        struct pollfd p[3] = {{w->sock, POLLIN, 0}, {w->outfd, POLLIN, 0}, {w->errfd, POLLIN, 0}};
        int ms = (int)((deadline - now) / 1000000u) + 1;
        int n = poll(p, 3, ms);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return -1;
        if (p[1].revents) drain(&w->outfd, &w->out);
        if (p[2].revents) drain(&w->errfd, &w->out);
        if (p[0].revents & POLLIN) {
            /* MSG_TRUNC: the real length even when longer than cap */
            ssize_t got = chan_recv(w, buf, cap, MSG_DONTWAIT | MSG_TRUNC);
            if (got < 0 && (errno == EAGAIN || errno == EINTR)) continue;
            if (got > 0 && (size_t)got <= cap) {
                *len = (size_t)got;
                return 1;
            }
            /* a worker that exits with a message of ours unread makes the first recv
             * report ECONNRESET, once, ahead of what it sent before exiting: read on */
            if (got < 0 && errno == ECONNRESET && !reset_seen) {
                reset_seen = 1;
                continue;
            }
            reap(w, r, phase, got > 0 || !peer_closed(w->sock));
            return 0;
        }
        if (p[0].revents & (POLLHUP | POLLERR)) {
            reap(w, r, phase, 0);
            return 0;
        }
    }
}

/* A GPU host-mode worker's seccomp report, "sandbox_violation: forbidden system call N",
 * with the call's name added. 1 when text is one. (Host code may forge it: it can only
 * get itself rejected.) */
static int gpu_violation(const char *text, char *out, size_t n) {
    static const char pre[] = "sandbox_violation: forbidden system call ", any[] = "sandbox_violation: ";
    if (strncmp(text, pre, sizeof pre - 1)) {
        /* the GPU worker's own refusals (a persisting-L2 set-aside changed between calls) */
        if (strncmp(text, any, sizeof any - 1)) return 0;
        snprintf(out, n, "%s", text + sizeof any - 1);
        return 1;
    }
    int nr = (int)strtol(text + sizeof pre - 1, NULL, 10);
    char *name = kf_policy_syscall_name(nr);
    snprintf(out, n,
             "a forbidden system call in GPU host mode: %d (%s); if the CUDA driver "
             "or runtime made it, add it to policy.c's GPU list, or set KFORGE_GPU_SECCOMP=0",
             nr, name ? name : "unknown");
    free(name);
    return 1;
}

static kf_status spawn_finish(kf_ctx *ctx, kf_worker *w, int device, kf_worker **out, kf_call_result *fail);

/* A new read-only open file description of a memfd: a descriptor opened O_RDONLY can
 * never give a writable shared mapping, nor be made to (mprotect needs VM_MAYWRITE). */
static int reopen_rdonly(int fd) {
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    return open(path, O_RDONLY | O_CLOEXEC);
}

/* A CPU worker's directory is named like mktemp -d's ($TMPDIR/tmp.XXXXXXXXXX: its path
 * is visible to the candidate, and must not say kforge); a symlink named after this
 * process points at it, so a later kforge removes what a killed one left. */
static void sweep_dead_markers(void) {
    const char *tmp = getenv("TMPDIR");
    const char *root = tmp && *tmp ? tmp : "/tmp";
    DIR *d = opendir(root);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        int pid = 0, used = 0;
        if (strncmp(e->d_name, "kforge-w-", 9) ||
            sscanf(e->d_name + 9, "%d-%*6[A-Za-z0-9]%n", &pid, &used) < 1 ||
            used != (int)strlen(e->d_name + 9) || pid <= 0 || pid == (int)getpid() ||
            (kill(pid, 0) == 0 || errno != ESRCH))
            continue;
        struct stat sb;
        char link[PATH_MAX], target[PATH_MAX];
        snprintf(link, sizeof link, "%s/%s", root, e->d_name);
        if (lstat(link, &sb) || !S_ISLNK(sb.st_mode)) continue;
        ssize_t n = readlink(link, target, sizeof target - 1);
        if (n > 0) {
            target[n] = 0;
            const char *base = strrchr(target, '/');
            if (base && !strncmp(base + 1, "tmp.", 4)) kf__rmtree(target);
        }
        unlink(link);
    }
    closedir(d);
}

static void sweep_dead_dirs(void) {
    kf__sweep_dead_dirs("kforge-w-");
    sweep_dead_markers();
}

static void random_name(char *out, int n, const char *set) {
    size_t m = strlen(set);
    for (int i = 0; i < n; i++) out[i] = set[kf__secret_u64() % m];
    out[n] = 0;
}

/* The environment of a CPU worker: a few ordinary variables of kforge's own (none with
 * a secret's name), with anything that names kforge left out, so that it looks like any
 * program's and says nothing about kforge (threat #31). PATH always. Strings are
 * malloc'd into env[]; returns the count, or -1 (nothing kept) when memory ran out. */
static int plain_env(char **env, int cap) {
    static const char *const keep[] = {"HOME",   "USER", "LOGNAME", "SHELL", "LANG",
                                       "LC_ALL", "TERM", "TZ",      "PATH",  NULL};
    int n = 0, have_path = 0, b_oom = 0;
    for (int i = 0; keep[i] && n < cap - 2; i++) {
        const char *v = getenv(keep[i]);
        if (!v || !*v || strcasestr(v, "kforge")) {
            if (v && !strcmp(keep[i], "PATH")) { /* drop only the elements that name it */
                kf_buf b;
                kf_buf_init(&b, 8192);
                char *dup = kf__strdup(v), *save = NULL;
                for (char *e = dup ? strtok_r(dup, ":", &save) : NULL; e; e = strtok_r(NULL, ":", &save))
                    if (!strcasestr(e, "kforge")) kf_buf_printf(&b, "%s%s", b.len ? ":" : "", e);
                free(dup);
                b_oom |= !dup || b.oom;
                if (b.p && b.len) {
                    env[n++] = kf__asprintf("PATH=%s", b.p);
                    have_path = 1;
                }
                kf_buf_free(&b);
            }
            continue;
        }
        env[n++] = kf__asprintf("%s=%s", keep[i], v);
        have_path |= !strcmp(keep[i], "PATH");
    }
    if (!have_path) env[n++] = kf__strdup("PATH=/usr/local/bin:/usr/bin:/bin");
    env[n] = NULL;
    int lost = 0; /* an entry missing for memory: the worker would stand out */
    for (int i = 0; i < n; i++) lost |= !env[i];
    if (!lost && !b_oom) return n;
    for (int i = 0; i < n; i++) free(env[i]);
    env[0] = NULL;
    return -1;
}

kf_status kf_worker_spawn(kf_ctx *ctx, const char *so_path, size_t arena_size, const kf_worker_opts *o,
                          kf_worker **out, kf_call_result *fail) {
    *out = NULL;
    memset(fail, 0, sizeof *fail);
    const char *wpath = kf_sandbox_worker_path(ctx);
    if (!wpath) return KF_EINTERNAL;
    kf_worker *w = calloc(1, sizeof *w);
    if (!w) return kf__err(ctx, KF_ENOMEM, "out of memory");
    w->pid = -1;
    w->peer = -1;
    w->sock = w->outfd = w->errfd = -1;
    w->mem_limit = o->mem_limit;
    w->cpu_s = o->cpu_s;
    w->spin = o->spin;
    w->device = o->device;
    w->wrapped = o->wrap && o->wrap[0];
    w->trusted = o->exec && o->exec[0];
    w->grace_s = o->wrap_grace_s;
    w->end_status = -1;
    kf_buf_init(&w->out, OUTPUT_CAP);
    int sv[2] = {-1, -1}, op[2] = {-1, -1}, ep[2] = {-1, -1}, memfd = -1, devnull = -1, rofd = -1,
        rodesc = -1;
    int hi[6] = {-1, -1, -1, -1, -1, -1};
    kf_status st = KF_EINTERNAL;
    const char *tmp = getenv("TMPDIR");
    static pthread_once_t swept = PTHREAD_ONCE_INIT;
    pthread_once(&swept, sweep_dead_dirs);
    /* a worker is anonymous: no argument but its random name, an ordinary environment,
     * a mktemp-style directory (threat #31); a GPU worker under a wrapping tool
     * (compute-sanitizer) keeps its arguments */
    int anon = !(o->device && o->wrap && o->wrap[0]);
    const char *root = tmp && *tmp ? tmp : "/tmp";
    snprintf(w->dir, sizeof w->dir, anon ? "%s/tmp.XXXXXXXXXX" : "%s/kforge-w-%d-XXXXXX", root,
             (int)getpid());
    if (!mkdtemp(w->dir)) {
        w->dir[0] = 0;
        st = kf__err(ctx, KF_EIO, "mkdtemp: %s", strerror(errno));
        goto fail;
    }
    for (int tries = 0; anon && tries < 16; tries++) {
        char tail[8];
        random_name(tail, 6, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789");
        snprintf(w->marker, sizeof w->marker, "%s/kforge-w-%d-%s", root, (int)getpid(), tail);
        if (!symlink(w->dir, w->marker)) break;
        w->marker[0] = 0;
        if (errno != EEXIST) break;
    }

    w->uid = -1;
    w->start_timeout_s = o->start_timeout_s;
    w->deferred = !so_path && o->device && !w->wrapped;
    char *so_copy = w->so_file, exe_copy[PATH_MAX + 16] = "";
    if (anon) {
        const char *nm = o->so_name && *o->so_name && !strchr(o->so_name, '/') ? o->so_name : "kernel.so";
        snprintf(so_copy, sizeof w->so_file, "%s/%s", w->dir, nm);
    } else {
        snprintf(so_copy, sizeof w->so_file, "%s/candidate.so", w->dir);
    }
    if (!w->deferred && !w->trusted && copy_file(so_path, so_copy)) {
        st = kf__err(ctx, kf__io_status(errno), "copying %s: %s", so_path, strerror(errno));
        goto fail;
    }
    if (anon && !w->trusted) { /* the worker runs as a copy under a random name: comm, argv[0], AT_EXECFN */
        char nm[12];
        random_name(nm, 8, "abcdefghijklmnopqrstuvwxyz");
        snprintf(exe_copy, sizeof exe_copy, "%s/%s", w->dir, nm);
        if (copy_file(wpath, exe_copy) || chmod(exe_copy, 0500)) {
            st = kf__err(ctx, kf__io_status(errno), "copying %s: %s", wpath, strerror(errno));
            goto fail;
        }
    }
    arena_size = (arena_size + 4095) & ~(size_t)4095;
    if (!arena_size) arena_size = 4096;
    /* A CPU worker gets two regions of arena_size bytes, one address range here: the
     * writable arena, and after it the inputs' region, which the worker maps read-only
     * from a read-only descriptor and which is sealed against writable mappings
     * (F_SEAL_FUTURE_WRITE): no writable alias of an input exists in the worker. A GPU
     * worker copies one span to the device and back: one region. */
    size_t total = o->device ? arena_size : 2 * arena_size;
    w->arena_size = total;
    w->ro_base = o->device ? 0 : arena_size;
    void *res = mmap(NULL, total, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (res == MAP_FAILED || (memfd = memfd_create("buffers", MFD_CLOEXEC)) < 0 ||
        ftruncate(memfd, (off_t)arena_size) ||
        mmap(res, arena_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, memfd, 0) == MAP_FAILED ||
        (!o->device && ((rofd = memfd_create("inputs", MFD_CLOEXEC | MFD_ALLOW_SEALING)) < 0 ||
                        ftruncate(rofd, (off_t)arena_size) ||
                        mmap((char *)res + arena_size, arena_size, PROT_READ | PROT_WRITE,
                             MAP_SHARED | MAP_FIXED, rofd, 0) == MAP_FAILED ||
                        fcntl(rofd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_FUTURE_WRITE) ||
                        (rodesc = reopen_rdonly(rofd)) < 0))) {
        if (res != MAP_FAILED) munmap(res, total);
        w->arena = NULL;
        st = kf__err(ctx, KF_ENOMEM, "arena of %zu bytes: %s", total, strerror(errno));
        goto fail;
    }
    w->arena = res;
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) || pipe2(op, O_CLOEXEC) ||
        pipe2(ep, O_CLOEXEC) || (devnull = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0) {
        st = kf__err(ctx, KF_EIO, "worker channels: %s", strerror(errno));
        goto fail;
    }
    /* move the child's ends above the targets so the dup2 sequence cannot clobber */
    int src[6] = {devnull, op[1], ep[1], sv[1], memfd, rodesc};
    int nsrc = rodesc >= 0 ? 6 : 5;
    for (int i = 0; i < nsrc; i++)
        if ((hi[i] = fcntl(src[i], F_DUPFD_CLOEXEC, 16)) < 0) {
            st = kf__err(ctx, KF_EIO, "fcntl: %s", strerror(errno));
            goto fail;
        }
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    posix_spawn_file_actions_init(&fa);
    for (int i = 0; i < nsrc; i++) posix_spawn_file_actions_adddup2(&fa, hi[i], i);
    posix_spawnattr_init(&at);
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setsigdefault(&at, &all);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    char ppid[32], cpu[32], as[32];
    snprintf(ppid, sizeof ppid, "%d", (int)getpid());
    snprintf(cpu, sizeof cpu, "%.3f", o->cpu_s);
    snprintf(as, sizeof as, "%llu", (unsigned long long)(total + o->mem_limit + (512ull << 20)));
    char cpus[4096] = "-";
    if (o->cpus) {
        size_t off = 0;
        for (int c = 0; c < CPU_SETSIZE && off + 8 < sizeof cpus; c++)
            if (CPU_ISSET(c, (const cpu_set_t *)o->cpus))
                off += (size_t)snprintf(cpus + off, sizeof cpus - off, "%s%d", off ? "," : "", c);
        if (!off) snprintf(cpus, sizeof cpus, "-");
    }
    /* As root, the worker becomes a user of its own: a random high uid (not one derived
     * from a pid: pids repeat across pid namespaces), owner of its directory. */
    char uidarg[32] = "-";
    if (geteuid() == 0 && !w->trusted) {
        uid_t id = (uid_t)(0x70000000u + (uint32_t)(kf__secret_u64() & 0x0fffffffu));
        snprintf(uidarg, sizeof uidarg, "%u", (unsigned)id);
        w->uid = (long)id;
        if (chown(w->dir, id, id) || (!w->deferred && chown(so_copy, id, id)) ||
            (exe_copy[0] && chown(exe_copy, id, id)) || (!w->deferred && chmod(w->dir, 0500))) {
            st = kf__err(ctx, KF_EIO, "chown %s: %s", w->dir, strerror(errno));
            goto fail;
        }
    }
    char *wargv[] = {(char *)wpath,
                     w->deferred ? "-" : so_copy,
                     w->wrapped ? "-" : ppid,
                     cpu,
                     as,
                     w->dir,
                     cpus,
                     uidarg,
                     o->entry ? (char *)o->entry : NULL,
                     NULL};
    /* a device worker's own settings, which the user's environment gave kforge: in the
     * configuration, set by the worker for its set-up and removed before any candidate
     * code loads (no kforge variable in a candidate's environment) */
    char devenv[4 * (PATH_MAX + 64)] = "";
    size_t dl = 0;
    for (int i = 0; o->device && o->env_settings && o->env_settings[i] && anon; i++) {
        const char *v = getenv(o->env_settings[i]);
        if (v && *v && strlen(v) < PATH_MAX && dl < sizeof devenv)
            dl += (size_t)snprintf(devenv + dl, sizeof devenv - dl, "\n%s=%s", o->env_settings[i], v);
    }
    if (dl >= sizeof devenv) {
        st = kf__err(ctx, KF_EINTERNAL, "worker settings too long (%s)", w->dir);
        goto fail;
    }
    kf_msg_config cfg;
    if (anon) {
        memset(&cfg, 0, sizeof cfg);
        cfg.magic = KF_PROTO_MAGIC;
        cfg.type = KF_MSG_CONFIG;
        /* a deferred GPU worker: "-", and its artifact's path as a ninth line */
        int len = snprintf(cfg.text, sizeof cfg.text, "%s\n%s\n%s\n%s\n%s\n%s\n%s\n%s\n%s%s%s%s",
                           w->deferred ? "-" : so_copy, w->wrapped ? "-" : ppid, cpu, as, w->dir, cpus,
                           uidarg, o->entry ? o->entry : "", w->deferred ? so_copy : "",
                           o->mag_entry ? "\nMAGNITUDE=" : "", o->mag_entry ? o->mag_entry : "", devenv);
        if (len < 0 || (size_t)len >= sizeof cfg.text) {
            st = kf__err(ctx, KF_EINTERNAL, "worker arguments too long (%s)", w->dir);
            goto fail;
        }
        wargv[0] = exe_copy;
        wargv[1] = NULL;
    }
    if (w->trusted) {
        if (snprintf(cfg.text, sizeof cfg.text, "%s", o->exec_config ? o->exec_config : "") >=
            (int)sizeof cfg.text) {
            st = kf__err(ctx, KF_EINTERNAL, "%s: configuration too long", o->exec[0]);
            goto fail;
        }
    }
    /* through a wrapper: its arguments, then the worker's command line */
    char *argv[64 + 10], **av = wargv;
    const char *exe = wpath;
    if (w->wrapped) {
        int n = 0;
        for (; o->wrap[n] && n < 64; n++) argv[n] = (char *)o->wrap[n];
        memcpy(argv + n, wargv, sizeof wargv);
        av = argv;
        exe = o->wrap[0];
    }
    /* a device worker sees what the backend passes (the devices the user chose) and,
     * under a wrapping tool, kforge's settings for it; nothing else of kforge's
     * environment */
    char *envp[28];
    int ne = 0;
    if (anon && (ne = plain_env(envp, 12)) < 0) {
        posix_spawn_file_actions_destroy(&fa);
        posix_spawnattr_destroy(&at);
        st = kf__err(ctx, KF_ENOMEM, "out of memory");
        goto fail;
    }
    for (int pass = 0; o->device && pass < 2; pass++) {
        const char *const *names = pass ? (anon ? NULL : o->env_settings) : o->env_pass;
        for (int i = 0; names && names[i] && ne < 26; i++) {
            /* a passed variable counts even when empty (no devices at all) */
            const char *v = getenv(names[i]);
            if (v && (*v || !pass) && strlen(v) < PATH_MAX && (envp[ne] = kf__asprintf("%s=%s", names[i], v)))
                ne++;
        }
    }
    envp[ne] = NULL;
    /* the copy was just written: a fork elsewhere in this process (the compiler's, from
     * another thread) may still hold its descriptor for a moment, and exec then fails
     * with ETXTBSY until that child has exec'd */
    int rc = -1;
    char warm_err[300] = "";
    if (w->trusted && o->exec_warm && nsrc == 6) {
        rc = o->exec_warm(o->exec_warm_arg, hi, &w->pid, &w->peer, warm_err, sizeof warm_err);
        if (rc == -2) {
            posix_spawn_file_actions_destroy(&fa);
            posix_spawnattr_destroy(&at);
            w->pid = -1;
            st = kf__err(ctx, KF_EINTERNAL, "%s", warm_err);
            goto fail;
        }
    }
    for (int tries = 0; rc; tries++) {
        if (w->trusted) rc = posix_spawnp(&w->pid, o->exec[0], &fa, &at, (char *const *)o->exec, environ);
        else rc = posix_spawn(&w->pid, w->wrapped || !anon ? exe : exe_copy, &fa, &at, av, envp);
        if (rc != ETXTBSY || tries >= 200) break;
        usleep(1000);
    }
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    for (int i = 0; i < ne; i++) free(envp[i]);
    /* its arguments, the first message it reads (queued: it need not have started) */
    if (!rc && anon && send(sv[0], &cfg, sizeof cfg, MSG_NOSIGNAL) != (ssize_t)sizeof cfg) {
        st = kf__err(ctx, KF_EIO, "sending the worker its arguments: %s", strerror(errno));
        goto fail;
    }
    if (rc) {
        w->pid = -1;
        st = kf__err(ctx, KF_EINTERNAL, "spawning %s: %s", w->trusted ? o->exec[0] : exe, strerror(rc));
        goto fail;
    }
    for (int i = 0; i < nsrc; i++) close(hi[i]);
    close(devnull);
    if (rofd >= 0) close(rofd);
    if (rodesc >= 0) close(rodesc);
    close(op[1]);
    close(ep[1]);
    close(sv[1]);
    close(memfd);
    w->sock = sv[0];
    w->outfd = op[0];
    w->errfd = ep[0];
    fcntl(w->outfd, F_SETFL, O_NONBLOCK);
    fcntl(w->errfd, F_SETFL, O_NONBLOCK);
    if (w->deferred) { /* kf_worker_attach finishes the start */
        *out = w;
        return KF_OK;
    }
    return spawn_finish(ctx, w, o->device, out, fail);
fail:
    for (int i = 0; i < 6; i++)
        if (hi[i] >= 0) close(hi[i]);
    int fds[] = {sv[0], sv[1], op[0], op[1], ep[0], ep[1], memfd, devnull, rofd, rodesc};
    for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++)
        if (fds[i] >= 0) close(fds[i]);
    kf_worker_close(w);
    return st;
}

kf_status kf_worker_attach(kf_ctx *ctx, kf_worker **wp, const char *so_path, kf_call_result *fail) {
    kf_worker *w = *wp;
    *wp = NULL;
    memset(fail, 0, sizeof *fail);
    const char *so_copy = w->so_file;
    if (!w->deferred || copy_file(so_path, so_copy) ||
        (w->uid >= 0 && (chown(so_copy, (uid_t)w->uid, (uid_t)w->uid) || chmod(w->dir, 0500)))) {
        kf_status st = kf__err(ctx, KF_EIO, "copying %s: %s", so_path,
                               w->deferred ? strerror(errno) : "not a deferred worker");
        kf_worker_close(w);
        return st;
    }
    w->deferred = 0;
    kf_msg_run m;
    memset(&m, 0, sizeof m);
    m.magic = KF_PROTO_MAGIC;
    m.type = KF_MSG_LOAD;
    /* a worker whose set-up failed meanwhile has left its reason queued and gone: then
     * nothing is sent (a send to the closed peer may drop what it queued) */
    char peek;
    ssize_t q = recv(w->sock, &peek, 1, MSG_PEEK | MSG_DONTWAIT);
    if (q < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) send(w->sock, &m, sizeof m, MSG_NOSIGNAL);
    return spawn_finish(ctx, w, 1, wp, fail);
}

/* The start's second half: SETUP_OK (the trusted set-up), then the candidate's load. */
static kf_status spawn_finish(kf_ctx *ctx, kf_worker *w, int device, kf_worker **out, kf_call_result *fail) {
    kf_status st;
    union {
        kf_msg_done d;
        kf_msg_text t;
    } m;
    size_t len = 0;
    uint64_t deadline = kf__now_ns() + (uint64_t)(w->start_timeout_s * 1e9);
    /* 1. the trusted setup: a failure here is the environment's, not the candidate's */
    int ok = await(w, &m, sizeof m, &len, deadline, fail, "while setting up the worker", 0);
    if (ok > 0 && len == sizeof m.d && m.d.magic == KF_PROTO_MAGIC && m.d.type == KF_MSG_SETUP_OK) {
        w->landlock_abi = (int)(m.d.ns & 0xff);
        w->sealed = (int)((m.d.ns >> 8) & 1);
        w->filtered = (int)((m.d.ns >> 9) & 1);
    } else {
        if (ok > 0 && len == sizeof m.t && m.t.magic == KF_PROTO_MAGIC && m.t.type == KF_MSG_LOADFAIL) {
            m.t.text[sizeof m.t.text - 1] = 0;
            /* a trusted program's set-up (a CUDA task's PyTorch reference: no torch, no
             * GPU) fails as a device worker's does: the environment's, said as it is */
            st = kf__err(ctx, device || w->trusted ? KF_EBACKEND : KF_EINTERNAL, "%s", m.t.text);
        } else {
            st = kf__err(ctx, KF_EINTERNAL, "kforge-worker failed to set up its sandbox%s%s",
                         ok == 0 ? ": " : "", ok == 0 ? fail->msg : "");
        }
        memset(fail, 0, sizeof *fail);
        kf_worker_close(w);
        return st;
    }
    /* 2. loading the candidate: from here on, every byte may come from it */
    ok = await(w, &m, sizeof m, &len, deadline, fail, "while loading the candidate", 0);
    if (ok > 0 && w->device && len == sizeof m.t && m.t.magic == KF_PROTO_MAGIC && m.t.type == KF_MSG_INFO) {
        m.t.text[sizeof m.t.text - 1] = 0;
        snprintf(w->info, sizeof w->info, "%s", m.t.text);
        ok = await(w, &m, sizeof m, &len, deadline, fail, "while loading the candidate", 0);
    }
    if (ok < 0) {
        timeout_kill(w, fail, w->start_timeout_s, "while loading the candidate");
    } else if (ok > 0 && len == sizeof m.d && m.d.magic == KF_PROTO_MAGIC && m.d.type == KF_MSG_READY) {
        *out = w;
        return KF_OK;
    } else if (ok > 0 && len == sizeof m.t && m.t.magic == KF_PROTO_MAGIC && m.t.type == KF_MSG_LOADFAIL) {
        m.t.text[sizeof m.t.text - 1] = 0;
        fail->st = KF_CALL_FAILED;
        fail->reason = KF_REASON_CRASH;
        char named[700];
        if (w->device && gpu_violation(m.t.text, named, sizeof named)) {
            fail->reason = KF_REASON_SANDBOX_VIOLATION;
            snprintf(fail->msg, sizeof fail->msg, "while loading the candidate: %s", named);
        } else {
            snprintf(fail->msg, sizeof fail->msg, "%s%s",
                     w->trusted ? "" : "could not load the built object: ", m.t.text);
        }
    } else if (ok > 0) {
        reap(w, fail, "while loading the candidate", 1);
    }
    kf_worker_close(w);
    return KF_OK;
}

unsigned char *kf_worker_arena(kf_worker *w) { return w->arena; }
size_t kf_worker_ro_base(const kf_worker *w) { return w->ro_base; }
int kf_worker_landlock_abi(const kf_worker *w) { return w->landlock_abi; }
int kf_worker_sealed(const kf_worker *w) { return w->sealed; }
int kf_worker_filtered(const kf_worker *w) { return w->filtered; }
int kf_worker_dead(const kf_worker *w) { return w->dead; }
const char *kf_worker_info(const kf_worker *w) { return w->info; }
const char *kf_worker_output(kf_worker *w) {
    if (w->outfd >= 0) drain(&w->outfd, &w->out); /* whatever is still in the pipes */
    if (w->errfd >= 0) drain(&w->errfd, &w->out);
    return w->out.p ? w->out.p : "";
}

/* Receive one START or DONE message for sequence seq. 1 with *ns set; 0 when the
 * worker died, lied or timed out (r set, worker dead). */
static int await_stamp(kf_worker *w, uint32_t type, uint32_t seq, uint64_t deadline, double timeout_s,
                       uint64_t *ns, uint64_t *at, uint64_t *sent, kf_call_result *r) {
    union {
        kf_msg_done d;
        kf_msg_text t;
    } m;
    size_t len = 0;
    int ok = await(w, &m, sizeof m, &len, deadline, r, "during the call", w->spin ? 50000000ull : 0);
    *at = kf__now_ns();
    *sent = w->sent_ns;
    if (ok < 0) {
        timeout_kill(w, r, timeout_s, "during the call");
        return 0;
    }
    if (!ok) return 0;
    if (w->device && len == sizeof m.t && m.t.magic == KF_PROTO_MAGIC && m.t.type == KF_MSG_FAIL) {
        /* the GPU worker's own report (no candidate host code runs there): a CUDA error,
         * sticky or not, ends this worker */
        m.t.text[sizeof m.t.text - 1] = 0;
        wrapper_grace(w); /* the worker exits after FAIL: let a wrapper report it */
        char named[700];
        if (gpu_violation(m.t.text, named, sizeof named))
            fail_kill(w, r, KF_REASON_SANDBOX_VIOLATION, "%s", named);
        else fail_kill(w, r, KF_REASON_CRASH, "%s", m.t.text);
        return 0;
    }
    if (w->trusted && len == sizeof m.t && m.t.magic == KF_PROTO_MAGIC && m.t.type == KF_MSG_FAIL) {
        m.t.text[sizeof m.t.text - 1] = 0; /* kforge's own program: its reason as it is */
        fail_kill(w, r, KF_REASON_CRASH, "%s", m.t.text);
        return 0;
    }
    int arg = -1;
    unsigned long long byte = 0;
    if (!w->device && len == sizeof m.t && m.t.magic == KF_PROTO_MAGIC && m.t.type == KF_MSG_FAIL &&
        (m.t.text[sizeof m.t.text - 1] = 0, sscanf(m.t.text, "input_modified %d %llu", &arg, &byte) == 2 ||
                                                !strncmp(m.t.text, "input_modified - ", 17))) {
        /* the worker's fault handler: a write to a read-only input (the candidate can
         * send this too: it only rejects itself) */
        r->ro_arg = arg;
        r->ro_byte = byte;
        if (arg < 0)
            fail_kill(w, r, KF_REASON_INPUT_MODIFIED,
                      "wrote into the read-only region that holds the const inputs (not inside one: "
                      "a guard zone or an earlier call's inputs) during the call");
        else
            fail_kill(w, r, KF_REASON_INPUT_MODIFIED,
                      "wrote into a const input buffer (byte %llu of argument %d) during the call: in "
                      "buffers are mapped read-only while the kernel runs",
                      byte, arg);
        return 0;
    }
    if (len != sizeof m.d || m.d.magic != KF_PROTO_MAGIC || m.d.type != type || m.d.seq != seq) {
        reap(w, r, "during the call", 1);
        return 0;
    }
    *ns = m.d.ns;
    if (type == KF_MSG_DONE) {
        r->dev_ns = m.d.dev_ns;
        r->gpu_flags = m.d.gpu_flags;
        r->idle_wait_ns = m.d.idle_wait_ns;
        memcpy(r->phase, m.d.phase, sizeof r->phase);
        memcpy(r->occ, m.d.occ, sizeof r->occ);
        r->cupti = m.d.cupti != 0;
        r->nlaunch = m.d.nlaunch, r->ngraph = m.d.ngraph, r->nmemop = m.d.nmemop, r->nlib = m.d.nlib;
        r->nnames = m.d.nnames < 0 ? 0 : m.d.nnames > KF_PROTO_MAXNAMES ? KF_PROTO_MAXNAMES : m.d.nnames;
        for (int i = 0; i < KF_PROTO_MAXNAMES; i++) {
            memcpy(r->names[i], m.d.names[i], sizeof r->names[i]);
            r->names[i][sizeof r->names[i] - 1] = 0;
        }
    }
    return 1;
}

void kf_worker_call(kf_worker *w, kf_msg_run *msg, double timeout_s, kf_call_result *r) {
    memset(r, 0, sizeof *r);
    r->ro_arg = -1;
    if (w->dead) {
        r->st = KF_CALL_FAILED;
        r->reason = KF_REASON_CRASH;
        snprintf(r->msg, sizeof r->msg, "worker already dead");
        return;
    }
    /* anything waiting before we ask was written by the candidate itself */
    if (stray_bytes(w, r, "between calls")) return;
    msg->magic = KF_PROTO_MAGIC;
    msg->type = KF_MSG_RUN;
    msg->seq = ++w->seq;
    /* queue the request while the worker is still frozen, then resume it: its main
     * thread finds the request at once (a worker never called yet is not frozen, so
     * the clock is read before the request goes out) */
    if (!w->stamped) {
        int on = 1; /* the kernel stamps from now on; without it the gap uses receipt */
        w->stamped = !setsockopt(w->sock, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on);
    }
    uint64_t resumed = kf__now_ns();
    if (send(w->sock, msg, sizeof *msg, MSG_NOSIGNAL) != (ssize_t)sizeof *msg) {
        reap(w, r, "before the call", 0);
        return;
    }
    if (w->stopped) {
        /* a frozen worker cannot start before this: the clock is read as late as it can */
        resumed = kf__now_ns();
        signal_group(w, SIGCONT);
        w->stopped = 0;
    }
    uint64_t deadline = resumed + (uint64_t)(timeout_s * 1e9), t0, t1, p0, p1, s0, s1;
    if (!await_stamp(w, KF_MSG_START, msg->seq, deadline, timeout_s, &t0, &p0, &s0, r)) return;
    if (!await_stamp(w, KF_MSG_DONE, msg->seq, deadline, timeout_s, &t1, &p1, &s1, r)) return;
    (void)s0;
    /* A wrapped worker (compute-sanitizer around a GPU worker: no candidate host code)
     * is not frozen: the tool's own process must keep running, and may trace the worker. */
    if (!w->wrapped) {
        /* Freeze the whole process at once, before anything else: nothing of the candidate
         * runs after return (#5) beyond the freeze's own latency (about a microsecond when
         * the coordinator spin-waits on its own CPU, as when timing), nor while the other
         * side is timed (#24), nor while the outputs are read: they are judged as they are
         * now. Idle threads (a parked pool) may persist, frozen with the rest. */
        signal_group(w, SIGSTOP);
        int status = 0;
        siginfo_t si;
        /* A stop cannot be refused (and SIGCONT to itself is forbidden), but never wait for
         * one without a deadline: a worker that neither stops nor dies in 10 s is killed.
         * (2 s was too short: a task waiting on the disk stops only when the wait ends, and
         * a clean clone's tests, started behind the writeback of gigabytes of just-installed
         * packages, saw an honest worker "resist" that long. Stopped late, it still runs
         * none of its code meanwhile: a task in such a wait is not running.) */
        uint64_t stop_by = kf__now_ns() + 10000000000ull;
        for (;;) {
            memset(&si, 0, sizeof si);
            int rc = waitid(P_PID, (id_t)w->pid, &si, WEXITED | WSTOPPED | WNOWAIT | WNOHANG);
            if (rc == 0 && si.si_pid == w->pid) break;
            if (rc < 0 && errno != EINTR) break;
            if (kf__now_ns() > stop_by) {
                fail_kill(w, r, KF_REASON_SANDBOX_VIOLATION,
                          "the worker resisted being frozen after its answer");
                return;
            }
#if defined(__x86_64__) || defined(__i386__)
            __builtin_ia32_pause();
#endif
        }
        if (si.si_code != CLD_STOPPED) { /* it died instead */
            struct rusage ru;
            memset(&ru, 0, sizeof ru);
            kill_and_reap(w, &status, &ru);
            classify(w, status, &ru, r, "right after the call");
            return;
        }
        while (waitid(P_PID, (id_t)w->pid, &si, WSTOPPED) < 0 && errno == EINTR) { /* consume */
        }
        /* No thread may outlive the call. A parked pool would resume with the process at
         * the next SIGCONT and could start on the (already staged) inputs before the START
         * stamp, untimed. Threads joined just before return may still be finishing their
         * exit: allow them 2 ms. */
        /* the CUDA driver's own threads; a trusted program's (a PyTorch reference's pool) */
        int nth = w->device || w->trusted ? 1 : thread_count(w->pid);
        for (int i = 0; nth > 1 && i < 40; i++) {
            usleep(50);
            nth = thread_count(w->pid);
        }
        if (nth > 1) {
            fail_kill(w, r, KF_REASON_SANDBOX_VIOLATION,
                      "%d thread(s) still exist after the call returned: start threads inside the "
                      "call and join them before returning (persistent pools are not supported)",
                      nth - 1);
            return;
        }
        w->stopped = 1;
    }
    if (stray_bytes(w, r, "after the call")) return;
    /* One clock (CLOCK_MONOTONIC) on both sides: the stamps must fall in order,
     * resumed <= t0 <= p0 and t0 <= t1 <= p1. */
    if (t0 < resumed || t0 > p0 || t1 < t0 || t1 > p1) {
        fail_kill(w, r, KF_REASON_TIMING_MISMATCH,
                  "the worker's clock stamps are impossible against the coordinator's "
                  "(start %+lld ns, end %+lld ns)",
                  (long long)(t0 - p0), (long long)(t1 - p1));
        return;
    }
    /* the device's clock against the host's: the launches' event time cannot exceed the
     * host span around them and the synchronise (50 us of slack for clock granularity) */
    if (w->device && r->dev_ns > (t1 - t0) + 50000) {
        fail_kill(w, r, KF_REASON_TIMING_MISMATCH,
                  "the kernels' event time (%.1f us) exceeds the host clock around them (%.1f us)",
                  (double)r->dev_ns / 1e3, (double)(t1 - t0) / 1e3);
        return;
    }
    r->st = KF_CALL_OK;
    r->worker_ns = t1 - t0;
    /* from the resume, not from START: a candidate that took over the channel chooses
     * when START goes out, but not when the coordinator resumed it */
    r->parent_ns = p1 - resumed;
    /* The span the gap cross-check uses ends when DONE was sent, by the kernel's stamp,
     * not when the coordinator read it: under load the coordinator, spinning on a CPU it
     * shares, is descheduled for milliseconds at a time, and a long call's answer then
     * waits a slice for it (an honest scratch-heavy kernel got timing_mismatch that way).
     * A stamp outside [resumed, p1] (a wall-clock step) is ignored. */
    r->sent_ns = s1 >= resumed && s1 <= p1 ? s1 - resumed : r->parent_ns;
    r->resumed_at = resumed;
    r->answered_at = p1;
}

void kf_worker_kill(kf_worker *w) {
    if (w) kill_group(w);
}

int kf_worker_finish(kf_worker *w, double timeout_s) {
    if (w->dead || w->pid <= 0) return w->end_status;
    if (w->stopped) {
        signal_group(w, SIGCONT);
        w->stopped = 0;
    }
    kf_msg_run m;
    memset(&m, 0, sizeof m);
    m.magic = KF_PROTO_MAGIC;
    m.type = KF_MSG_EXIT;
    m.flags = KF_EXIT_CLEAN;
    m.seq = ++w->seq;
    send(w->sock, &m, sizeof m, MSG_NOSIGNAL);
    uint64_t deadline = kf__now_ns() + (uint64_t)(timeout_s * 1e9);
    while (!wait_dead(w->pid, 0) && kf__now_ns() < deadline) {
        /* keep the pipes drained: a wrapper blocked on a full pipe never exits */
        struct pollfd p[2] = {{w->outfd, POLLIN, 0}, {w->errfd, POLLIN, 0}};
        if (poll(p, 2, 20) > 0) {
            if (p[0].revents) drain(&w->outfd, &w->out);
            if (p[1].revents) drain(&w->errfd, &w->out);
        }
    }
    int status = 0;
    struct rusage ru;
    kill_and_reap(w, &status, &ru);
    return w->end_status;
}

static void *reap_main(void *arg) {
    pid_t pid = (pid_t)(intptr_t)arg;
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return NULL;
}

void kf_worker_close(kf_worker *w) {
    if (!w) return;
    if (w->pid > 0) {
        /* nothing to finish: kill the group (a stopped process dies of SIGKILL too) */
        kill_group(w);
        /* A killed GPU worker takes 0.1-0.2 s to die (the driver tears its context down
         * and unpins its arena), and nothing of it runs any more: it is reaped in the
         * background, so the verdict need not wait. */
        int bg = 0;
        pthread_attr_t at;
        if (w->device && !pthread_attr_init(&at)) {
            pthread_t th;
            bg = !pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED) &&
                 !pthread_create(&th, &at, reap_main, (void *)(intptr_t)w->pid);
            pthread_attr_destroy(&at);
        }
        if (!bg) {
            int status;
            while (waitpid(w->pid, &status, 0) < 0 && errno == EINTR) {
            }
        }
        w->pid = -1;
    }
    if (w->sock >= 0) close(w->sock);
    if (w->outfd >= 0) close(w->outfd);
    if (w->errfd >= 0) close(w->errfd);
    if (w->arena) munmap(w->arena, w->arena_size);
    if (w->dir[0]) kf__rmtree(w->dir);
    if (w->marker[0]) unlink(w->marker);
    kf_buf_free(&w->out);
    free(w);
}

/* The group's leader while the compiler runs (its child): with SIGTERM and SIGCHLD
 * blocked, it waits for either. SIGTERM is its parent-death signal: kforge is gone, so
 * the whole group is killed, itself included. The child's end becomes its own exit
 * status, a signal as 128 + its number (what kforge makes of a signal anyway). */
static void guard_group(pid_t child) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGCHLD);
    for (;;) {
        siginfo_t si;
        int s = sigwaitinfo(&set, &si);
        if (s == SIGTERM) {
            kill(0, SIGKILL);
            _exit(128 + SIGKILL);
        }
        int status;
        pid_t r = waitpid(child, &status, WNOHANG);
        if (r == child) _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
        if (r < 0 && errno == ECHILD) _exit(127);
    }
}

kf_status kf_sandbox_exec(kf_ctx *ctx, char *const argv[], const char *cwd, char *const env[],
                          const kf_limits *lim, const char *const *ro, int nro, const char *const *rw,
                          int nrw, double timeout_s, kf_buf *log, int *exit_code) {
    int lp[2];
    if (pipe2(lp, O_CLOEXEC)) return kf__err(ctx, KF_EIO, "pipe: %s", strerror(errno));
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        close(lp[0]);
        close(lp[1]);
        return kf__err(ctx, KF_EINTERNAL, "fork: %s", strerror(errno));
    }
    if (pid == 0) {
        setsid();
        sigset_t guard, old;
        sigemptyset(&guard);
        sigaddset(&guard, SIGTERM);
        sigaddset(&guard, SIGCHLD);
        sigprocmask(SIG_BLOCK, &guard, &old);
        prctl(PR_SET_PDEATHSIG, SIGTERM); /* the guard's: pending until it waits for it */
        if (getppid() != parent) _exit(127);
        int dn = open("/dev/null", O_RDONLY);
        if (dn < 0 || dup2(dn, 0) < 0 || dup2(lp[1], 1) < 0 || dup2(lp[1], 2) < 0) _exit(127);
        if (syscall(SYS_close_range, 3, ~0U, 0))
            for (int fd = 3; fd < 1024; fd++) close(fd);
        if (cwd && chdir(cwd)) _exit(127);
        if (kf_policy_rlimits(lim)) _exit(127);
        if (kf_policy_landlock(ro, nro, rw, nrw) < 0) {
            dprintf(2, "kforge: landlock setup failed: %s\n", strerror(errno));
            _exit(127);
        }
        pid_t c = fork();
        if (c < 0) {
            dprintf(2, "kforge: fork: %s\n", strerror(errno));
            _exit(127);
        }
        if (c > 0) guard_group(c);
        sigprocmask(SIG_SETMASK, &old, NULL);
        execve(argv[0], argv, env);
        dprintf(2, "kforge: exec %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    close(lp[1]);
    fcntl(lp[0], F_SETFL, O_NONBLOCK);
    uint64_t deadline = kf__now_ns() + (uint64_t)(timeout_s * 1e9);
    int fd = lp[0], status = 0, timed_out = 0;
    for (;;) {
        uint64_t now = kf__now_ns();
        if (now >= deadline) {
            timed_out = 1;
            break;
        }
        if (fd < 0) { /* output closed: wait for the exit, without reaping yet */
            siginfo_t si;
            memset(&si, 0, sizeof si);
            if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == pid) break;
            usleep(500);
            continue;
        }
        struct pollfd p = {fd, POLLIN, 0};
        int n = poll(&p, 1, (int)((deadline - now) / 1000000u) + 1);
        if (n < 0 && errno != EINTR) break;
        if (n > 0) drain(&fd, log);
    }
    /* the group (helpers such as cc1, as, ld included), while the leader is unreaped */
    kill(-pid, SIGKILL);
    if (timed_out) kill(pid, SIGKILL);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (fd >= 0) close(fd);
    *exit_code = timed_out ? -1 : WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return KF_OK;
}
