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
 *
 * The warm server (docs/torch.md "Across invocations"): the same, outliving one kforge
 * process, so that separate checks pay no `import torch` either: one per user, cache
 * directory and python3, on a Unix socket in a directory of this user's (mode 0700),
 * talking to this uid only (SO_PEERCRED both ways), started detached at first use and
 * exiting after KFORGE_TORCH_SERVER_IDLE seconds (600) without a request. Its identity
 * (this build's id, the runner's text, the python3, the variables that shape their start)
 * must match, else it is told to quit and a fresh one takes its name. Its runner is its
 * child, not ours: a stand-in child of ours ends as the runner ends and the sandbox
 * signals both (kf_worker_opts.exec_warm's peer). The default; when no server can be
 * reached or started, this process's warm process serves (KFORGE_TORCH_WARM=process: it
 * alone), then a cold start.
 */
#define _GNU_SOURCE
#include "check.h"

#include "kf_python.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
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

/* One message on fd into buf (NUL-terminated) within timeout_s: its length, or -1
 * (silence, an end, an error). */
static ssize_t recv_within(int fd, char *buf, size_t n, double timeout_s) {
    uint64_t deadline = kf__now_ns() + (uint64_t)(timeout_s * 1e9);
    for (;;) {
        uint64_t now = kf__now_ns();
        if (now >= deadline) return -1;
        struct pollfd p = {fd, POLLIN, 0};
        int r = poll(&p, 1, (int)((deadline - now) / 1000000 + 1));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return -1;
        ssize_t k = recv(fd, buf, n - 1, MSG_DONTWAIT);
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
    if (recv_within(warm.ctl, msg, sizeof msg, WARM_START_S) < 6 || strncmp(msg, "READY ", 6)) {
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
    return recv_within(warm.ctl, msg, sizeof msg, WARM_PING_S) > 0 && !strcmp(msg, "PONG");
}

/* ---- The warm server (docs/torch.md "Across invocations") ----
 *
 * One per user, cache directory and python3, listening on DIR/torch-KEY.sock (DIR:
 * kforge's cache directory's run/, mode 0700; KEY: the python3's path hashed). Its
 * identity (this build's id, the runner's text, the python3, the variables that shape
 * python3's and torch's start) is checked at every connection: another one is told to
 * quit and a fresh one started in its place. A request hands the runner's six descriptors
 * and this process's working directory over, with this process's environment; the server
 * forks the runner (its child, not ours) and answers its pid, then its wait status when
 * it ends. A stand-in forked here (our child) waits for that status and ends the same
 * way, so the sandbox waits for, freezes and kills the stand-in and the runner together
 * (kf_worker_opts.exec_warm's peer). */

/* a server's answer to HELLO; its idle timeout (KFORGE_TORCH_SERVER_IDLE overrides); the
 * request's cap (the environment it carries) */
#define SERVER_HELLO_S 10
#define SERVER_IDLE_S 600
#define SERVER_ENV_MAX 60000

struct note_find {
    const void *addr;
    char hex[129];
};

/* The GNU build id of the object that holds addr (this library). */
static int note_cb(struct dl_phdr_info *info, size_t size, void *arg) {
    (void)size;
    struct note_find *f = arg;
    uintptr_t a = (uintptr_t)f->addr;
    int here = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && a >= lo && a < lo + ph->p_memsz) here = 1;
    }
    if (!here) return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_NOTE) continue;
        const unsigned char *p = (const unsigned char *)(info->dlpi_addr + ph->p_vaddr),
                            *end = p + ph->p_memsz;
        while (p + sizeof(ElfW(Nhdr)) <= end) {
            const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
            const unsigned char *name = p + sizeof *nh, *desc = name + ((nh->n_namesz + 3) & ~3u);
            if (desc + nh->n_descsz > end) break;
            if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && !memcmp(name, "GNU", 4) &&
                nh->n_descsz <= 64) {
                for (unsigned k = 0; k < nh->n_descsz; k++) snprintf(f->hex + 2 * k, 3, "%02x", desc[k]);
                return 1;
            }
            p = desc + ((nh->n_descsz + 3) & ~3u);
        }
    }
    return 1;
}

static int env_cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Whether an environment variable shapes python3's or torch's start (the server's, which
 * a runner inherits): then it is part of the server's identity. */
static int env_shapes_start(const char *e) {
    static const char *const pre[] = {"PYTHON", "LD_",  "TORCH", "PYTORCH",
                                      "OMP_",   "MKL_", "KMP_",  "VIRTUAL_ENV="};
    for (size_t i = 0; i < sizeof pre / sizeof pre[0]; i++)
        if (!strncmp(e, pre[i], strlen(pre[i]))) return 1;
    return 0;
}

/* The server's identity for python (64 hex digits): 0, or -1. */
static int server_ident(const char *python, char out[65]) {
    struct note_find f = {(const void *)server_ident, ""};
    dl_iterate_phdr(note_cb, &f);
    if (!f.hex[0]) snprintf(f.hex, sizeof f.hex, "no-build-id-%s", KF_VERSION);
    const char *vars[256];
    int nv = 0;
    for (char **e = environ; *e && nv < 256; e++)
        if (env_shapes_start(*e)) vars[nv++] = *e;
    qsort(vars, (size_t)nv, sizeof vars[0], env_cmp);
    const void *parts[4 + 256];
    size_t lens[4 + 256];
    parts[0] = f.hex, lens[0] = strlen(f.hex) + 1;
    parts[1] = kf__py_torch_ref, lens[1] = strlen(kf__py_torch_ref) + 1;
    parts[2] = python, lens[2] = strlen(python) + 1;
    for (int i = 0; i < nv; i++) parts[3 + i] = vars[i], lens[3 + i] = strlen(vars[i]) + 1;
    return kf__sha256_hex(parts, lens, 3 + nv, out) ? -1 : 0;
}

/* The directory of the servers' sockets, made if missing: a directory of this user's,
 * mode 0700, never a link. 0, or -1. */
static int server_dir(char *out, size_t n) {
    char base[PATH_MAX];
    kf__cache_dir(base, sizeof base);
    if ((size_t)snprintf(out, n, "%s/run", base) >= n || kf__mkdirs(out)) return -1;
    struct stat st;
    if (lstat(out, &st) || !S_ISDIR(st.st_mode) || st.st_uid != getuid()) return -1;
    if ((st.st_mode & 0777) != 0700 && chmod(out, 0700)) return -1;
    return 0;
}

int kf_torch_server_path(const char *python, char *out, size_t n) {
    char dir[PATH_MAX], key[65];
    const void *parts[] = {python};
    size_t lens[] = {strlen(python)};
    if (server_dir(dir, sizeof dir) || kf__sha256_hex(parts, lens, 1, key)) return -1;
    struct sockaddr_un sa;
    int w = snprintf(out, n, "%s/torch-%.16s.sock", dir, key);
    return w < 0 || (size_t)w >= n || (size_t)w >= sizeof sa.sun_path ? -1 : 0;
}

/* Connect to the server at path and check it: this user's, answering HELLO with ident.
 * The connection (the server's pid in *spid), or -1; a server with another identity is
 * told to quit. */
static int server_connect(const char *path, const char *ident, pid_t *spid) {
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
    int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (s < 0) return -1;
    struct ucred cr;
    socklen_t cl = sizeof cr;
    char msg[256];
    if (connect(s, (struct sockaddr *)&sa, sizeof sa) || getsockopt(s, SOL_SOCKET, SO_PEERCRED, &cr, &cl) ||
        cr.uid != getuid())
        goto fail;
    if (send(s, "HELLO", 5, MSG_NOSIGNAL) != 5 || recv_within(s, msg, sizeof msg, SERVER_HELLO_S) < 6 ||
        strncmp(msg, "READY ", 6)) {
        /* silent (stopped, hung): it serves nobody, and nothing of ours is handed to it */
        if (cr.pid > 0) kill(cr.pid, SIGKILL);
        goto fail;
    }
    if (strncmp(msg + 6, ident, 64) || msg[6 + 64] != ' ') {
        /* another build's, runner's or environment's: it stops taking requests, ends
         * once its runners have, and a fresh one takes the name */
        send(s, "QUIT", 4, MSG_NOSIGNAL);
        goto fail;
    }
    *spid = cr.pid;
    return s;
fail:
    close(s);
    return -1;
}

/* Start a server at path (under the caller's lock): 0 once it listens, or -1. */
static int server_start(const char *python, const char *path, const char *ident) {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv)) return -1;
    char idle[32] = "";
    const char *e = getenv("KFORGE_TORCH_SERVER_IDLE");
    if (e && *e) snprintf(idle, sizeof idle, "%s", e);
    else snprintf(idle, sizeof idle, "%d", SERVER_IDLE_S);
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, sv[1], 3);
    posix_spawn_file_actions_addchdir_np(&fa, "/");
    posix_spawnattr_init(&at);
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setsigdefault(&at, &all);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    char *argv[] = {(char *)python, "-c", (char *)kf__py_torch_ref, "serve", (char *)path, (char *)ident,
                    idle,           NULL};
    pid_t p = -1;
    int rc = posix_spawn(&p, python, &fa, &at, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    close(sv[1]);
    char msg[64] = "";
    /* it forks the server at once and exits: the server is nobody's child of ours */
    if (!rc)
        while (waitpid(p, NULL, 0) < 0 && errno == EINTR) {
        }
    int ok = !rc && recv_within(sv[0], msg, sizeof msg, WARM_START_S) >= 5 && !strncmp(msg, "READY", 5);
    close(sv[0]); /* a server still importing torch sees the end and exits */
    return ok ? 0 : -1;
}

/* The stand-in: a child of this process, its own process group, holding nothing but the
 * connection; it ends as the runner ended, once the server says how (a server that ends
 * first: SIGKILL, the runner's end unknown). Async-signal-safe calls only (forked from a
 * threaded process). */
static void standin_main(int s) {
    setsid();
    struct rlimit rl = {0, 0};
    setrlimit(RLIMIT_CORE, &rl);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    if (s > 0 && syscall(SYS_close_range, 0u, (unsigned)s - 1, 0u))
        for (int fd = 0; fd < s; fd++) close(fd);
    if (syscall(SYS_close_range, (unsigned)s + 1, ~0u, 0u))
        for (int fd = s + 1; fd < 65536; fd++) close(fd);
    char buf[64];
    ssize_t k;
    while ((k = recv(s, buf, sizeof buf - 1, 0)) < 0 && errno == EINTR) {
    }
    if (k > 5 && !memcmp(buf, "EXIT ", 5)) {
        int st = 0;
        for (ssize_t i = 5; i < k && buf[i] >= '0' && buf[i] <= '9'; i++) st = st * 10 + (buf[i] - '0');
        if (WIFEXITED(st)) _exit(WEXITSTATUS(st));
        if (WIFSIGNALED(st)) {
            struct sigaction sa;
            memset(&sa, 0, sizeof sa);
            sa.sa_handler = SIG_DFL;
            sigaction(WTERMSIG(st), &sa, NULL);
            kill(getpid(), WTERMSIG(st));
        }
    }
    kill(getpid(), SIGKILL);
    _exit(137);
}

/* The parent of pid, from /proc, or -1. */
static pid_t parent_of(pid_t pid) {
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t k = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (k <= 0) return -1;
    buf[k] = 0;
    char *rp = strrchr(buf, ')');
    char st;
    int pp;
    return rp && sscanf(rp + 1, " %c %d", &st, &pp) == 2 ? (pid_t)pp : -1;
}

static int server_request(const char *python, const char *path, const char *ident, const char *req, size_t k,
                          const int fds[6], pid_t *pid, pid_t *peer, char *err, size_t n);

/* kf_torch_warm_spawn through the server: 0, -1 (nothing handed over: no server could be
 * reached or started), -2 (handed over, then the start failed: err says why). */
static int server_spawn(const char *python, const int fds[6], pid_t *pid, pid_t *peer, char *err, size_t n) {
    char path[PATH_MAX], ident[65];
    if (kf_torch_server_path(python, path, sizeof path) || server_ident(python, ident)) return -1;
    /* the request: this process's environment (the runner's), and its working directory
     * (a task's relative paths are this process's) */
    char *req = malloc(SERVER_ENV_MAX);
    size_t k = 2;
    if (!req) return -1;
    memcpy(req, "F", 2);
    for (char **e = environ; *e; e++) {
        size_t l = strlen(*e) + 1;
        if (k + l > SERVER_ENV_MAX) {
            free(req);
            return -1;
        }
        memcpy(req + k, *e, l), k += l;
    }
    int rc = server_request(python, path, ident, req, k, fds, pid, peer, err, n);
    free(req);
    return rc;
}

/* server_spawn's request req (k bytes) to the server at path, started if needed. */
static int server_request(const char *python, const char *path, const char *ident, const char *req, size_t k,
                          const int fds[6], pid_t *pid, pid_t *peer, char *err, size_t n) {
    char lock[PATH_MAX + 8];
    pid_t spid = -1;
    int s = server_connect(path, ident, &spid);
    if (s < 0) {
        snprintf(lock, sizeof lock, "%s.lock", path);
        int lk = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (lk < 0) return -1;
        while (flock(lk, LOCK_EX) && errno == EINTR) {
        }
        /* another kforge may have started one while this one waited for the lock */
        s = server_connect(path, ident, &spid);
        if (s < 0 && !server_start(python, path, ident)) s = server_connect(path, ident, &spid);
        close(lk);
        if (s < 0) return -1;
    }
    int cwd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (cwd < 0) {
        close(s);
        return -1;
    }
    int all[7];
    memcpy(all, fds, 6 * sizeof(int));
    all[6] = cwd;
    struct iovec io = {(void *)req, k};
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(7 * sizeof(int))];
    } u;
    memset(&u, 0, sizeof u);
    struct msghdr mh = {
        .msg_iov = &io, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf};
    struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(7 * sizeof(int));
    memcpy(CMSG_DATA(c), all, sizeof all);
    ssize_t sent = sendmsg(s, &mh, MSG_NOSIGNAL);
    close(cwd);
    if (sent != (ssize_t)k) { /* not delivered: a start elsewhere is safe */
        close(s);
        return -1;
    }
    char msg[64] = "";
    long p = 0;
    char *end = NULL;
    if (recv_within(s, msg, sizeof msg, WARM_FORK_S) < 5 || strncmp(msg, "PID ", 4) ||
        (p = strtol(msg + 4, &end, 10)) <= 0 || *end) {
        snprintf(err, n, "the warm PyTorch server (pid %d, %s) did not start the reference's runner: %s",
                 (int)spid, path, msg[0] && !strncmp(msg, "FAIL ", 5) ? msg + 5 : "no answer");
        close(s);
        return -2;
    }
    /* the runner the server forked: its child, a group leader of its own */
    if (parent_of((pid_t)p) != spid) {
        snprintf(err, n, "the warm PyTorch server (pid %d) answered runner %ld, not a child of its own",
                 (int)spid, p);
        close(s);
        return -2;
    }
    pid_t st = fork();
    if (st == 0) standin_main(s);
    close(s);
    if (st < 0) {
        kill(-(pid_t)p, SIGKILL);
        snprintf(err, n, "fork (the warm PyTorch runner's stand-in): %s", strerror(errno));
        return -2;
    }
    *pid = st;
    *peer = (pid_t)p;
    return 0;
}

int kf_torch_warm_spawn(void *python, const int fds[6], pid_t *pid, pid_t *peer, char *err, size_t n) {
    const char *env = getenv("KFORGE_TORCH_WARM");
    if (env && !strcmp(env, "0")) return -1;
    if (!env || strcmp(env, "process")) {
        int r = server_spawn(python, fds, pid, peer, err, n);
        if (r != -1) return r;
    }
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
    if (recv_within(warm.ctl, msg, sizeof msg, WARM_FORK_S) < 5 || strncmp(msg, "PID ", 4) ||
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
