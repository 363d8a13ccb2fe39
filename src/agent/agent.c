/*
 * agent.c - agents: make one from a spec, ask it for a candidate; the cmd agent.
 *
 * cmd:'COMMAND' runs COMMAND with /bin/sh -c in a private temporary directory (its
 * working directory) holding the pack (KFORGE_PACK), the prompt (KFORGE_PROMPT) and the
 * system message (KFORGE_SYSTEM), and reads the candidate from KFORGE_OUT. It inherits
 * kforge's environment (PATH, API keys: it is the user's own program, not a candidate),
 * runs in its own session, and when it exits or its time is up its whole process group
 * is killed, so nothing it started outlives the call (a child that makes its own session
 * escapes: it is the user's program). stdout and stderr are captured up to a cap for the
 * record, and the tail of stderr explains a failure. Every way it can fail is an error
 * string on the proposal; only kforge's own failures (no temp dir, fork, memory) are a
 * status.
 *
 * It follows kf_sandbox_exec's approach (own session, a deadline, the group killed while
 * the leader is unreaped) without reusing it: that one gives the compiler an empty
 * environment, Landlock and rlimits, and merges stdout with stderr.
 *
 * The openai agent is in openai.c.
 */
#define _GNU_SOURCE
#include "agent.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define TAIL 2048 /* bytes of stderr kept for the error message */
#define TAIL_LINES 5
#define USAGE_CAP (64u << 10)
#define DESC_CAP 1024u /* bytes of KFORGE_OUT.description read */

void kf_agent_opts_init(kf_agent_opts *o) {
    memset(o, 0, sizeof *o);
    o->timeout_s = 300;
    o->connect_timeout_s = 10;
    o->max_attempts = 4;
    o->backoff_s = 1;
    o->backoff_max_s = 60;
    o->reply_cap = 4u << 20;
    o->out_cap = 1u << 20;
    o->log_cap = 64u << 10;
    o->temperature = -1;
}

void kf_proposal_free(kf_proposal *p) {
    if (!p) return;
    free(p->text);
    free(p->params_json);
    free(p->error);
    free(p->log);
    free(p->warning);
    free(p->description);
    memset(p, 0, sizeof *p);
}

void kf_agent_free(kf_agent *a) {
    if (!a) return;
    free(a->arg);
    free(a->base_url);
    free(a->tmp_dir);
    if (a->api_key) { /* do not leave the key in freed memory */
        volatile char *k = a->api_key;
        while (*k) *k++ = 0;
    }
    free(a->api_key);
    free(a);
}

const char *kf_agent_kind(const kf_agent *a) { return a->kind == KF_AGENT_CMD ? "cmd" : "openai"; }

kf_status kf_agent_new(kf_ctx *ctx, const char *spec, const kf_agent_opts *opts, kf_agent **out) {
    *out = NULL;
    int kind = !strncmp(spec, "cmd:", 4) ? KF_AGENT_CMD : !strncmp(spec, "openai:", 7) ? KF_AGENT_OPENAI : 0;
    if (!kind)
        return kf__err(ctx, KF_EUSAGE, "unknown agent '%s' (expected cmd:'COMMAND' or openai:MODEL)", spec);
    const char *arg = strchr(spec, ':') + 1;
    size_t n = strlen(arg);
    /* cmd:'a b' reaching us with its quotes (a config file, not a shell) */
    if (kind == KF_AGENT_CMD && n >= 2 && (arg[0] == '\'' || arg[0] == '"') && arg[n - 1] == arg[0] &&
        !memchr(arg + 1, arg[0], n - 2)) {
        arg++;
        n -= 2;
    }
    size_t lead = strspn(arg, " \t");
    if (lead == n)
        return kf__err(ctx, KF_EUSAGE, "agent '%s': empty %s", spec,
                       kind == KF_AGENT_CMD ? "command" : "model");
    if (opts && (!(opts->timeout_s > 0) || !(opts->connect_timeout_s > 0) || opts->max_attempts < 1 ||
                 opts->backoff_s < 0 || opts->backoff_max_s < 0 || !opts->reply_cap || !opts->out_cap ||
                 !opts->log_cap))
        return kf__err(ctx, KF_EUSAGE,
                       "agent '%s': timeouts, attempts and caps must be "
                       "positive (start from kf_agent_opts_init)",
                       spec);
    kf_agent *a = calloc(1, sizeof *a);
    if (!a) return kf__err(ctx, KF_ENOMEM, "out of memory");
    a->ctx = ctx;
    a->kind = kind;
    if (opts) a->o = *opts;
    else kf_agent_opts_init(&a->o);
    a->o.base_url = a->o.api_key = a->o.tmp_dir = NULL; /* borrowed: only the copies */
    a->arg = strndup(arg, n);
    if (!a->arg) {
        kf_agent_free(a);
        return kf__err(ctx, KF_ENOMEM, "out of memory");
    }
    if (kind == KF_AGENT_OPENAI) {
        const char *url = opts && opts->base_url ? opts->base_url : getenv("OPENAI_BASE_URL");
        const char *key = opts && opts->api_key ? opts->api_key : getenv("OPENAI_API_KEY");
        if (!url || !*url) url = "https://api.openai.com/v1";
        a->base_url = kf__strdup(url);
        if (key && *key) a->api_key = kf__strdup(key);
        if (!a->base_url || (key && *key && !a->api_key)) {
            kf_agent_free(a);
            return kf__err(ctx, KF_ENOMEM, "out of memory");
        }
        kf_status st = kf_agent_openai_check(a);
        if (st != KF_OK) {
            kf_agent_free(a);
            return st;
        }
    } else if (opts && opts->tmp_dir) {
        a->tmp_dir = kf__strdup(opts->tmp_dir);
        if (!a->tmp_dir) {
            kf_agent_free(a);
            return kf__err(ctx, KF_ENOMEM, "out of memory");
        }
    }
    *out = a;
    return KF_OK;
}

static double now_s(void) { return (double)kf__now_ns() / 1e9; }

/* ---- cmd --------------------------------------------------------------------------- */

typedef struct {
    kf_buf head;     /* the first log_cap bytes, for the record */
    char tail[TAIL]; /* the last TAIL bytes, for an error message */
    size_t tlen;
    size_t total;
} capture;

static void capture_add(capture *c, const char *p, size_t n) {
    kf_buf_append(&c->head, p, n);
    c->total += n;
    if (n >= TAIL) {
        memcpy(c->tail, p + n - TAIL, TAIL);
        c->tlen = TAIL;
        return;
    }
    if (c->tlen + n > TAIL) {
        size_t drop = c->tlen + n - TAIL;
        memmove(c->tail, c->tail + drop, c->tlen - drop);
        c->tlen -= drop;
    }
    memcpy(c->tail + c->tlen, p, n);
    c->tlen += n;
}

/* Read what is there; close *fd at end of file. */
static void drain(int *fd, capture *c) {
    char tmp[16384];
    for (;;) {
        ssize_t n = read(*fd, tmp, sizeof tmp);
        if (n > 0) {
            capture_add(c, tmp, (size_t)n);
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n == 0) {
            close(*fd);
            *fd = -1;
        }
        return;
    }
}

/* The last TAIL_LINES non-empty lines of the captured tail, joined with " | ". */
static void last_lines(const capture *c, char *out, size_t n) {
    out[0] = 0;
    size_t end = c->tlen;
    while (end && (c->tail[end - 1] == '\n' || c->tail[end - 1] == '\r')) end--;
    size_t start = end;
    int lines = 0;
    while (start > 0 && lines < TAIL_LINES) {
        start--;
        if (c->tail[start] == '\n') lines++;
    }
    if (lines == TAIL_LINES) start++;
    size_t o = 0;
    for (size_t i = start; i < end && o + 4 < n; i++) {
        unsigned char ch = (unsigned char)c->tail[i];
        if (ch == '\n') {
            memcpy(out + o, " | ", 3);
            o += 3;
        } else if (ch != '\r') {
            out[o++] = ch >= 0x20 || ch == '\t' ? (char)ch : '?';
        }
    }
    out[o] = 0;
}

static int write_file(const char *path, const char *text) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) return -1;
    size_t n = strlen(text), off = 0;
    while (off < n) {
        ssize_t w = write(fd, text + off, n - off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) break;
        off += (size_t)w;
    }
    return close(fd) || off != n ? -1 : 0;
}

/* environ without our names, plus ours; NULL on OOM. Free the array, not the strings
 * it borrows (ours are in mine[]). */
static char **make_env(char *const mine[], int nmine) {
    size_t n = 0;
    while (environ && environ[n]) n++;
    char **env = calloc(n + (size_t)nmine + 1, sizeof *env);
    if (!env) return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        int drop = 0;
        for (int j = 0; j < nmine && !drop; j++) {
            size_t len = strcspn(mine[j], "=") + 1;
            drop = !strncmp(environ[i], mine[j], len);
        }
        if (!drop) env[k++] = environ[i];
    }
    for (int j = 0; j < nmine; j++) env[k++] = mine[j];
    env[k] = NULL;
    return env;
}

static void set_error(kf_proposal *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_error(kf_proposal *out, const char *fmt, ...) {
    va_list ap;
    char *p = NULL;
    va_start(ap, fmt);
    if (vasprintf(&p, fmt, ap) < 0) p = NULL;
    va_end(ap);
    free(out->error);
    out->error = p ? p : kf__strdup("cmd: failed (no memory for the message)");
}

/* The candidate at KFORGE_OUT, or an error on out. */
static void read_candidate(kf_agent *a, const char *path, kf_proposal *out) {
    struct stat st;
    if (lstat(path, &st)) {
        set_error(out, "cmd: exited 0 but wrote nothing to KFORGE_OUT");
        return;
    }
    if (!S_ISREG(st.st_mode)) {
        set_error(out, "cmd: KFORGE_OUT is not a regular file");
        return;
    }
    if (st.st_size == 0) {
        set_error(out, "cmd: wrote an empty file to KFORGE_OUT");
        return;
    }
    if ((uint64_t)st.st_size > a->o.out_cap) {
        set_error(out, "cmd: wrote %lld bytes to KFORGE_OUT, more than the cap of %zu", (long long)st.st_size,
                  a->o.out_cap);
        return;
    }
    char *text;
    size_t len;
    if (kf__read_file(path, a->o.out_cap, &text, &len)) {
        set_error(out, "cmd: cannot read KFORGE_OUT: %s", strerror(errno));
        return;
    }
    const char *nul = memchr(text, 0, len);
    if (nul) {
        set_error(out, "cmd: KFORGE_OUT is not text (a NUL byte at offset %zu)", (size_t)(nul - text));
        free(text);
        return;
    }
    out->text = text;
    out->len = len;
}

/* One reported count: 0 with *v set, or -1 with what it is in `what`. */
static int token_count(json_t *j, int64_t *v, char *what, size_t n) {
    if (!j) {
        snprintf(what, n, "nothing");
        return -1;
    }
    if (!json_is_integer(j)) {
        char *d = kf__json_dumps(j, JSON_ENCODE_ANY | JSON_COMPACT);
        snprintf(what, n, "%.40s (not an integer)", d ? d : "a value");
        free(d);
        return -1;
    }
    json_int_t x = json_integer_value(j);
    if (x < 0 || x > KF_AGENT_TOKENS_MAX) {
        snprintf(what, n, "%lld (outside [0, %lld])", (long long)x, KF_AGENT_TOKENS_MAX);
        return -1;
    }
    *v = x;
    return 0;
}

void kf_agent_usage(const char *who, json_t *pt, json_t *ct, int64_t est_in, int64_t est_out,
                    kf_proposal *out) {
    int64_t in = 0, o = 0;
    char wi[96], wo[96];
    int bi = token_count(pt, &in, wi, sizeof wi), bo = token_count(ct, &o, wo, sizeof wo);
    if (!bi && !bo) {
        out->tokens_in = in;
        out->tokens_out = o;
        return;
    }
    out->tokens_in = est_in;
    out->tokens_out = est_out;
    out->tokens_estimated = 1;
    if (!pt && !ct) return; /* nothing reported: the estimate is all there is */
    free(out->warning);
    out->warning =
        kf__asprintf("%s reported %s%s%s%s%s as token counts; they are not trusted: kforge's "
                     "estimate (%lld in, %lld out) counts instead",
                     who, bi ? "prompt_tokens " : "", bi ? wi : "", bi && bo ? " and " : "",
                     bo ? "completion_tokens " : "", bo ? wo : "", (long long)est_in, (long long)est_out);
}

/* KFORGE_OUT.usage.json: {"prompt_tokens": N, "completion_tokens": N}, into out (the
 * estimates when it is absent or bad: kf_agent_usage). */
static void read_usage(const char *path, int64_t est_in, int64_t est_out, kf_proposal *out) {
    char *text = NULL;
    size_t len;
    if (!path || kf__read_file(path, USAGE_CAP, &text, &len)) {
        kf_agent_usage("cmd", NULL, NULL, est_in, est_out, out);
        return;
    }
    json_t *j = json_loadb(text, len, 0, NULL);
    free(text);
    json_t *pt = json_object_get(j, "prompt_tokens"), *ct = json_object_get(j, "completion_tokens");
    /* a file that is there but holds no counts is a bad report too */
    kf_agent_usage("cmd: KFORGE_OUT.usage.json", pt ? pt : json_null(), ct ? ct : json_null(), est_in,
                   est_out, out);
    json_decref(j);
}

static kf_status cmd_propose(kf_agent *a, const kf_pack *pack, kf_proposal *out) {
    kf_ctx *ctx = a->ctx;
    const char *root = a->tmp_dir ? a->tmp_dir : getenv("TMPDIR");
    if (!root || !*root) root = "/tmp";
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/kforge-agent-XXXXXX", root);
    if (!mkdtemp(dir))
        return kf__err(ctx, KF_EIO, "cmd: cannot make a directory in %s: %s", root, strerror(errno));
    kf_status st = KF_OK;
    char *vars[5] = {0}, **env = NULL;
    int op[2] = {-1, -1}, ep[2] = {-1, -1};
    capture co, ce;
    memset(&co, 0, sizeof co);
    memset(&ce, 0, sizeof ce);
    kf_buf_init(&co.head, a->o.log_cap);
    kf_buf_init(&ce.head, a->o.log_cap);

    vars[0] = kf__asprintf("KFORGE_PACK=%s/pack.json", dir);
    vars[1] = kf__asprintf("KFORGE_PROMPT=%s/prompt.txt", dir);
    vars[2] = kf__asprintf("KFORGE_SYSTEM=%s/system.txt", dir);
    vars[3] = kf__asprintf("KFORGE_OUT=%s/candidate.%s", dir, pack->ext);
    vars[4] = kf__asprintf("KFORGE_EXT=%s", pack->ext);
    for (int i = 0; i < 5 && st == KF_OK; i++)
        if (!vars[i]) st = kf__err(ctx, KF_ENOMEM, "out of memory");
    if (st == KF_OK && !(env = make_env(vars, 5))) st = kf__err(ctx, KF_ENOMEM, "out of memory");
    if (st == KF_OK && (write_file(strchr(vars[0], '=') + 1, pack->json) ||
                        write_file(strchr(vars[1], '=') + 1, pack->prompt) ||
                        write_file(strchr(vars[2], '=') + 1, pack->system)))
        st = kf__err(ctx, KF_EIO, "cmd: cannot write the pack in %s: %s", dir, strerror(errno));
    if (st == KF_OK && (pipe2(op, O_CLOEXEC) || pipe2(ep, O_CLOEXEC)))
        st = kf__err(ctx, KF_EIO, "pipe: %s", strerror(errno));
    if (st != KF_OK) goto cleanup;

    char *argv[] = {"sh", "-c", a->arg, NULL};
    pid_t parent = getpid();
    uint64_t t0 = kf__now_ns();
    pid_t pid = fork();
    if (pid < 0) {
        st = kf__err(ctx, KF_EINTERNAL, "fork: %s", strerror(errno));
        goto cleanup;
    }
    if (pid == 0) {
        setsid();
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* kforge killed: the command goes too */
        if (getppid() != parent) _exit(127);
        int dn = open("/dev/null", O_RDONLY);
        if (dn < 0 || dup2(dn, 0) < 0 || dup2(op[1], 1) < 0 || dup2(ep[1], 2) < 0) _exit(127);
        if (syscall(SYS_close_range, 3, ~0U, 0))
            for (int fd = 3; fd < 1024; fd++) close(fd);
        if (chdir(dir)) _exit(127);
        /* a clean slate: kforge may ignore SIGPIPE or block signals in this thread */
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        signal(SIGPIPE, SIG_DFL);
        execve("/bin/sh", argv, env);
        dprintf(2, "kforge: exec /bin/sh: %s\n", strerror(errno));
        _exit(127);
    }
    close(op[1]);
    close(ep[1]);
    op[1] = ep[1] = -1;
    fcntl(op[0], F_SETFL, O_NONBLOCK);
    fcntl(ep[0], F_SETFL, O_NONBLOCK);
    uint64_t deadline = t0 + (uint64_t)(a->o.timeout_s * 1e9);
    int timed_out = 0, status = 0;
    for (;;) {
        /* the leader's exit ends the command, even if a child still holds the pipes */
        siginfo_t si;
        memset(&si, 0, sizeof si);
        if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == pid) break;
        uint64_t now = kf__now_ns();
        if (now >= deadline) {
            timed_out = 1;
            break;
        }
        struct pollfd p[2] = {{op[0], POLLIN, 0}, {ep[0], POLLIN, 0}};
        int ms = (int)((deadline - now) / 1000000u) + 1;
        if (ms > 20) ms = 20; /* poll for the exit too: pipes may stay open */
        if (poll(p, 2, ms) > 0) {
            if (op[0] >= 0 && p[0].revents) drain(&op[0], &co);
            if (ep[0] >= 0 && p[1].revents) drain(&ep[0], &ce);
        }
    }
    /* the whole group, while the leader is unreaped (its id cannot be reused) */
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (op[0] >= 0) drain(&op[0], &co);
    if (ep[0] >= 0) drain(&ep[0], &ce);
    out->elapsed_s = (double)(kf__now_ns() - t0) / 1e9;
    out->attempts = 1;

    char tail[TAIL + 3 * TAIL_LINES];
    last_lines(&ce, tail, sizeof tail);
    if (timed_out) set_error(out, "cmd: timed out after %g s; its process group was killed", a->o.timeout_s);
    else if (WIFSIGNALED(status))
        set_error(out, "cmd: killed by signal %d (%s)%s%s", WTERMSIG(status), strsignal(WTERMSIG(status)),
                  *tail ? "; stderr: " : "", tail);
    else if (WEXITSTATUS(status))
        set_error(out, "cmd: exited with status %d%s%s", WEXITSTATUS(status),
                  *tail ? "; stderr: " : " (no stderr)", tail);
    else read_candidate(a, strchr(vars[3], '=') + 1, out);

    if (out->text) {
        char *usage = kf__asprintf("%s.usage.json", strchr(vars[3], '=') + 1);
        read_usage(usage, pack->tokens_prompt, kf_text_tokens(out->len), out);
        free(usage);
        char *dpath = kf__asprintf("%s.description", strchr(vars[3], '=') + 1), *d = NULL;
        size_t dl;
        if (dpath && !kf__read_file(dpath, DESC_CAP, &d, &dl) && dl && !memchr(d, 0, dl))
            out->description = strndup(d, strcspn(d, "\r\n"));
        free(d);
        free(dpath);
    } else {
        out->tokens_in = pack->tokens_prompt; /* what it was given, for the cost */
        out->tokens_estimated = 1;
    }
    kf_buf log;
    kf_buf_init(&log, (size_t)-1);
    kf_buf_printf(&log, "[stdout: %zu bytes%s]\n%s%s[stderr: %zu bytes%s]\n%s", co.total,
                  co.head.dropped ? ", the head kept" : "", co.head.p ? co.head.p : "",
                  co.head.len && co.head.p[co.head.len - 1] != '\n' ? "\n" : "", ce.total,
                  ce.head.dropped ? ", the head kept" : "", ce.head.p ? ce.head.p : "");
    out->log = log.p;

cleanup:
    for (int i = 0; i < 2; i++) {
        if (op[i] >= 0) close(op[i]);
        if (ep[i] >= 0) close(ep[i]);
    }
    kf_buf_free(&co.head);
    kf_buf_free(&ce.head);
    free(env);
    for (int i = 0; i < 5; i++) free(vars[i]);
    kf__rmtree(dir);
    return st;
}

kf_status kf_agent_propose(kf_agent *a, const kf_pack *pack, kf_proposal *out) {
    memset(out, 0, sizeof *out);
    if (!pack || !pack->json || !pack->prompt || !pack->system)
        return kf__err(a->ctx, KF_EUSAGE, "agent: an empty pack");
    snprintf(out->ext, sizeof out->ext, "%s", pack->ext);
    snprintf(out->category, sizeof out->category, "%s", pack->category);
    double t0 = now_s();
    kf_status st =
        a->kind == KF_AGENT_CMD ? cmd_propose(a, pack, out) : kf_agent_openai_propose(a, pack, out);
    out->elapsed_s = now_s() - t0;
    if (st != KF_OK) kf_proposal_free(out);
    return st;
}

/* ---- the code in a model's reply ---------------------------------------------------- */

static int accepted_lang(const char *p, size_t n) {
    static const char *const langs[] = {"c", "cu", "cuda", "cpp", "c++", "cc", "cxx", "h", "hpp", NULL};
    if (!n) return 1;
    for (int i = 0; langs[i]; i++)
        if (strlen(langs[i]) == n && !strncasecmp(p, langs[i], n)) return 1;
    return 0;
}

int kf_agent_extract_code(const char *content, size_t len, const char **start, size_t *n, char *why,
                          size_t whylen) {
    const char *end = content + len, *line = content;
    int saw_fence = 0;
    while (line < end) {
        const char *eol = memchr(line, '\n', (size_t)(end - line));
        if (!eol) eol = end;
        const char *p = line;
        int ind = 0;
        while (p < eol && *p == ' ' && ind < 4) p++, ind++;
        size_t ticks = 0;
        while (p + ticks < eol && p[ticks] == '`') ticks++;
        if (ind < 4 && ticks >= 3) {
            saw_fence = 1;
            /* the info string's first word */
            const char *info = p + ticks;
            while (info < eol && (*info == ' ' || *info == '\t')) info++;
            size_t il = 0;
            while (info + il < eol && !strchr(" \t\r{`", info[il])) il++;
            int ok = accepted_lang(info, il);
            /* the body runs to a line of at least `ticks` backticks and nothing else */
            const char *body = eol < end ? eol + 1 : end, *q = body;
            while (q < end) {
                const char *qe = memchr(q, '\n', (size_t)(end - q));
                if (!qe) qe = end;
                const char *r = q;
                while (r < qe && *r == ' ') r++;
                size_t t = 0;
                while (r + t < qe && r[t] == '`') t++;
                const char *rest = r + t;
                while (rest < qe && (*rest == ' ' || *rest == '\t' || *rest == '\r')) rest++;
                if (t >= ticks && rest == qe) break;
                q = qe < end ? qe + 1 : end;
            }
            if (q >= end) {
                if (ok) {
                    snprintf(why, whylen, "the reply's code block is not closed (cut short?)");
                    return -1;
                }
                break;
            }
            if (ok) {
                *start = body;
                *n = (size_t)(q - body);
                return 0;
            }
            const char *qe = memchr(q, '\n', (size_t)(end - q));
            line = qe ? qe + 1 : end;
            continue;
        }
        line = eol < end ? eol + 1 : end;
    }
    /* no fence at all: the whole reply, if it is plainly code */
    if (!saw_fence && memchr(content, '{', len) && memchr(content, '}', len) && memchr(content, ';', len) &&
        (memmem(content, len, "#include", 8) || memmem(content, len, "__global__", 10) ||
         memmem(content, len, "void ", 5) || memmem(content, len, "extern \"C\"", 10))) {
        const char *s = content, *e = end;
        while (s < e && (*s == '\n' || *s == '\r' || *s == ' ')) s++;
        *start = s;
        *n = (size_t)(e - s);
        return 0;
    }
    snprintf(why, whylen, "%s",
             saw_fence ? "the reply has no c/cuda/cpp code block (only blocks in other languages)"
                       : "the reply has no code block and does not look like code");
    return -1;
}
