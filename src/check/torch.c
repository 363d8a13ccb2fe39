/*
 * torch.c - a task's PyTorch reference ("reference": "reference.py", docs/torch.md): the
 * python3 that runs it, and the trusted process it runs in. That process is
 * src/check/torch_ref.py (embedded in the library, run with python3 -c), started in place
 * of kforge-worker (kf_worker_opts.exec) with the same channel, arena and read-only
 * inputs' region, so the reference is a kf_side like any other: staged, called, frozen
 * between calls, timed and judged by the same code. Its configuration message carries
 * the reference's path, the entry, the CPUs, the message layout and each argument's
 * name, kind, type, direction and rank; each call's RUN message carries the buffers'
 * extents (kf_msg_run.extent, zero for every other worker). The process never sees a
 * candidate: it is started for the reference's side alone, and a candidate's worker is
 * never told of it. A CUDA task's reference (a device backend's) is told "device cuda"
 * with where the RUN's flags and the DONE's device fields are: it computes on the GPU in
 * a context of its own and answers as a GPU worker does (its event time, its idle wait),
 * so the backend's clock and bench's checks read it unchanged.
 *
 * The warm process (docs/torch.md "The warm process"): python3 with torch imported, one
 * per coordinator process and python3, started at the first reference's spawn and kept
 * for the process's life (a `kforge run`, a bench's two reference sides). A spawn hands
 * it the runner's six descriptors over its control channel (a socketpair: no name
 * anything else could reach), and it forks the runner, which becomes this process's
 * child through PR_SET_CHILD_SUBREAPER (set for the request's span only): waited for,
 * frozen, timed and killed like a cold one. A warm process that is dead, or silent for
 * WARM_PING_S, is killed and replaced before any descriptor is handed over; when none
 * can be started the runner is spawned cold, as without it. KFORGE_TORCH_WARM=0 turns
 * it off.
 */
#define _GNU_SOURCE
#include "check.h"

#include "kf_python.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

/* the warm process's start (python3, `import torch`: seconds on a loaded machine), its
 * answer to a ping, and to a request once it has answered the ping */
#define WARM_START_S 120
#define WARM_PING_S 10
#define WARM_FORK_S 30

/* An executable file at path, or name found in PATH, into out: 0, else -1. */
static int find_exe(const char *name, char *out, size_t n) {
    if (strchr(name, '/')) {
        if (access(name, X_OK)) return -1;
        snprintf(out, n, "%s", name);
        return 0;
    }
    const char *path = getenv("PATH");
    if (!path || !*path) path = "/usr/local/bin:/usr/bin:/bin";
    while (*path) {
        const char *colon = strchr(path, ':');
        size_t len = colon ? (size_t)(colon - path) : strlen(path);
        if (len && (size_t)snprintf(out, n, "%.*s/%s", (int)len, path, name) < n && !access(out, X_OK))
            return 0;
        path += len + (colon ? 1 : 0);
    }
    return -1;
}

kf_status kf_torch_python(kf_ctx *ctx, char *out, size_t n) {
    const char *env = getenv("KFORGE_PYTHON");
    if (env && *env) {
        if (!find_exe(env, out, n)) return KF_OK;
        return kf__err(ctx, KF_ETASK,
                       "KFORGE_PYTHON=%s: no such executable (the python3 with torch that runs a task's "
                       "PyTorch reference; docs/torch.md)",
                       env);
    }
    /* the project's virtual environment, which `make deps` creates beside build/ */
    const char *worker = kf_sandbox_worker_path(ctx);
    if (worker) {
        const char *slash = strrchr(worker, '/');
        if (slash &&
            (size_t)snprintf(out, n, "%.*s/../.venv/bin/python3", (int)(slash - worker), worker) < n &&
            !access(out, X_OK))
            return KF_OK;
    }
    if (!find_exe("python3", out, n)) return KF_OK;
    return kf__err(ctx, KF_ETASK,
                   "a PyTorch reference needs python3 with torch, and none was found (KFORGE_PYTHON, the "
                   "project's .venv, python3 in PATH): run `make deps` or set KFORGE_PYTHON (docs/torch.md)");
}

const char *kf_torch_runner(void) { return kf__py_torch_ref; }

static const char *type_tag(kf_dtype t) {
    switch (t) {
    case KF_T_F32: return "f32";
    case KF_T_F64: return "f64";
    case KF_T_I32: return "i32";
    case KF_T_I64: return "i64";
    case KF_T_U8: return "u8";
    case KF_T_F16: return "f16";
    case KF_T_BF16: return "bf16";
    }
    return "?";
}

int kf_torch_config(const kf_task *t, const void *cpus, char *out, size_t n) {
    size_t k = 0;
    int w = snprintf(
        out, n, "kforge-torch 1\nref %s\nentry %s\nthreads 1\nmsg %zu %zu %zu %zu %zu %zu %zu %zu %d\ncpus ",
        t->ref_path, t->entry, sizeof(kf_msg_run), offsetof(kf_msg_run, off), offsetof(kf_msg_run, ival),
        offsetof(kf_msg_run, fval), offsetof(kf_msg_run, extent), sizeof(kf_msg_done),
        offsetof(kf_msg_done, ns), sizeof(kf_msg_text), KF_PROTO_MAXDIMS);
    if (w < 0 || (size_t)w >= n) return -1;
    k = (size_t)w;
    int any = 0;
    for (int c = 0; cpus && c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, (const cpu_set_t *)cpus)) {
            w = snprintf(out + k, n - k, "%s%d", any ? "," : "", c);
            if (w < 0 || (size_t)w >= n - k) return -1;
            k += (size_t)w, any = 1;
        }
    w = snprintf(out + k, n - k, "%s\n", any ? "" : "-");
    if (w < 0 || (size_t)w >= n - k) return -1;
    k += (size_t)w;
    /* a device backend's task: the reference computes on the GPU (cuda:0, the device the
     * GPU workers use), timed by CUDA events as a GPU worker times its launches; where
     * the RUN's flags and the DONE's device fields are, and the flags' values */
    if (kf_backend_has(kf_backend_get(t->backend), KF_BACKEND_DEVICE)) {
        w = snprintf(out + k, n - k, "device cuda %zu %zu %zu %zu %u %u %u %u\n", offsetof(kf_msg_run, flags),
                     offsetof(kf_msg_done, gpu_flags), offsetof(kf_msg_done, dev_ns),
                     offsetof(kf_msg_done, idle_wait_ns), KF_RUN_FLUSH_L2, KF_RUN_WAIT_IDLE,
                     KF_RUN_HOST_TIMING, KF_DONE_GPU_BUSY);
        if (w < 0 || (size_t)w >= n - k) return -1;
        k += (size_t)w;
    }
    for (int i = 0; i < t->nargs; i++) {
        const kf_arg *a = &t->args[i];
        w = snprintf(out + k, n - k, "arg %s %s %s %s %d\n", a->name, a->is_buffer ? "buf" : "scalar",
                     type_tag(a->type),
                     !a->is_buffer        ? "-"
                     : a->io == KF_IO_IN  ? "in"
                     : a->io == KF_IO_OUT ? "out"
                                          : "inout",
                     a->is_buffer ? a->ndim : 0);
        if (w < 0 || (size_t)w >= n - k) return -1;
        k += (size_t)w;
    }
    return 0;
}

void kf_torch_extents(const kf_task *t, const kf_extents *ex, kf_msg_run *m) {
    for (int i = 0; i < t->nargs && i < KF_PROTO_MAXARGS; i++)
        for (int d = 0; t->args[i].is_buffer && d < t->args[i].ndim && d < KF_PROTO_MAXDIMS; d++)
            m->extent[i][d] = ex->dims[i][d];
}

extern char **environ;

static struct {
    pthread_mutex_t mu;
    pid_t pid; /* the warm process, -1: none */
    int ctl;   /* its control channel */
    char python[PATH_MAX];
    char versions[96]; /* "python torch", from its READY */
} warm = {PTHREAD_MUTEX_INITIALIZER, -1, -1, "", ""};

static void warm_stop(void) {
    if (warm.ctl >= 0) close(warm.ctl);
    if (warm.pid > 0) {
        /* it and an intermediate process, never a runner (setsid: a group of its own) */
        kill(-warm.pid, SIGKILL);
        kill(warm.pid, SIGKILL);
        while (waitpid(warm.pid, NULL, 0) < 0 && errno == EINTR) {
        }
    }
    warm.pid = -1, warm.ctl = -1;
    warm.python[0] = warm.versions[0] = 0;
}

/* One message from the warm process into buf (NUL-terminated) within timeout_s: its
 * length, or -1 (silence, an end, an error). */
static ssize_t warm_recv(char *buf, size_t n, double timeout_s) {
    uint64_t deadline = kf__now_ns() + (uint64_t)(timeout_s * 1e9);
    for (;;) {
        uint64_t now = kf__now_ns();
        if (now >= deadline) return -1;
        struct pollfd p = {warm.ctl, POLLIN, 0};
        int r = poll(&p, 1, (int)((deadline - now) / 1000000 + 1));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return -1;
        ssize_t k = recv(warm.ctl, buf, n - 1, MSG_DONTWAIT);
        if (k < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (k <= 0) return -1;
        buf[k] = 0;
        return k;
    }
}

/* Start the warm process for python: 0, or -1 (none: the runner starts cold). */
static int warm_start(const char *python) {
    if (strlen(python) >= sizeof warm.python) return -1;
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv)) return -1;
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, sv[1], 3);
    posix_spawnattr_init(&at);
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setsigdefault(&at, &all);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    char *argv[] = {(char *)python, "-c", (char *)kf__py_torch_ref, "warm", NULL};
    int rc = posix_spawn(&warm.pid, python, &fa, &at, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    close(sv[1]);
    warm.ctl = sv[0];
    if (rc) {
        warm.pid = -1;
        warm_stop();
        return -1;
    }
    char msg[256];
    if (warm_recv(msg, sizeof msg, WARM_START_S) < 6 || strncmp(msg, "READY ", 6)) {
        warm_stop();
        return -1;
    }
    snprintf(warm.python, sizeof warm.python, "%s", python);
    snprintf(warm.versions, sizeof warm.versions, "%s", msg + 6);
    return 0;
}

/* Whether the warm process answers a ping in time. */
static int warm_alive(void) {
    char msg[64];
    if (send(warm.ctl, "?", 1, MSG_NOSIGNAL) != 1) return 0;
    return warm_recv(msg, sizeof msg, WARM_PING_S) > 0 && !strcmp(msg, "PONG");
}

int kf_torch_warm_spawn(void *python, const int fds[6], pid_t *pid, char *err, size_t n) {
    const char *env = getenv("KFORGE_TORCH_WARM");
    if (env && !strcmp(env, "0")) return -1;
    pthread_mutex_lock(&warm.mu);
    int rc = -1, was = 1; /* was: this process was a subreaper before (nothing to undo) */
    /* one live warm process for this python: a dead or silent one is replaced before it
     * is handed anything, so that until the request below nothing can be lost */
    if (warm.pid > 0 && (strcmp(warm.python, python) || !warm_alive())) warm_stop();
    if (warm.pid < 0 && warm_start(python)) goto out;
    char one = 'F', msg[64] = "";
    struct iovec io = {&one, 1};
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(6 * sizeof(int))];
    } u;
    memset(&u, 0, sizeof u);
    struct msghdr mh = {
        .msg_iov = &io, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf};
    struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(6 * sizeof(int));
    memcpy(CMSG_DATA(c), fds, 6 * sizeof(int));
    /* this process adopts the runner when the intermediate process exits: a subreaper
     * for the request's span only, so that no other orphan becomes a zombie of kforge's
     * (the mutex keeps the spans of several threads apart) */
    if (prctl(PR_GET_CHILD_SUBREAPER, &was, 0, 0, 0)) was = 1;
    if (was != 1 && prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) {
        was = 1;
        goto out;
    }
    if (sendmsg(warm.ctl, &mh, MSG_NOSIGNAL) != 1) { /* not delivered: a cold start is safe */
        warm_stop();
        goto out;
    }
    /* delivered: a runner may exist from here on, holding the channel, so a failure is
     * an error of this spawn (no second runner on the same channel), never the candidate's */
    rc = -2;
    long p = 0;
    char *end = NULL;
    siginfo_t si;
    if (warm_recv(msg, sizeof msg, WARM_FORK_S) < 5 || strncmp(msg, "PID ", 4) ||
        (p = strtol(msg + 4, &end, 10)) <= 0 || *end) {
        snprintf(err, n, "the warm PyTorch process (pid %d) did not start the reference's runner: %s",
                 (int)warm.pid, msg[0] && !strncmp(msg, "FAIL ", 5) ? msg + 5 : "no answer");
        warm_stop();
        goto out;
    }
    /* the intermediate process has exited: the runner is this process's child now */
    memset(&si, 0, sizeof si);
    if (waitid(P_PID, (id_t)p, &si, WEXITED | WSTOPPED | WNOHANG | WNOWAIT)) {
        snprintf(err, n, "the warm PyTorch process's runner %ld is not a child of kforge's: %s", p,
                 strerror(errno));
        warm_stop();
        goto out;
    }
    *pid = (pid_t)p;
    rc = 0;
out:
    if (was != 1) prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0);
    pthread_mutex_unlock(&warm.mu);
    return rc;
}

pid_t kf_torch_warm_pid(void) {
    pthread_mutex_lock(&warm.mu);
    pid_t p = warm.pid;
    pthread_mutex_unlock(&warm.mu);
    return p;
}
