/*
 * util.c - the core's small pieces: allocation, capped buffers, file reading, hashing,
 * clocks, data parallelism, directories and the cache, the CPU's identity. The context
 * and its errors are ctx.c, the input RNG rng.c, untrusted text text.c, SQLite db.c.
 */
#define _GNU_SOURCE
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <jansson.h>
#include <math.h>
#include <openssl/evp.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static atomic_ulong json_failures, alloc_failures;

void kf__alloc_failed(void) { atomic_fetch_add(&alloc_failures, 1); }

unsigned long kf__alloc_failures(void) { return atomic_load(&alloc_failures); }

static void *json_alloc(size_t n) {
    void *p = malloc(n);
    if (!p) atomic_fetch_add(&json_failures, 1), kf__alloc_failed();
    return p;
}

static void json_setup(void) { json_set_alloc_funcs(json_alloc, free); }

void kf__json_init(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, json_setup);
}

unsigned long kf__json_failures(void) { return atomic_load(&json_failures); }

char *kf__json_dumps(const json_t *j, size_t flags) {
    unsigned long before = atomic_load(&json_failures);
    char *out = j ? json_dumps(j, flags) : NULL;        /* the one call (check-banned.sh) */
    if (out && atomic_load(&json_failures) != before) { /* a key or value went missing */
        free(out);
        out = NULL;
    }
    return out;
}

kf_status kf__io_status(int err) { return err == ENOMEM ? KF_ENOMEM : KF_EIO; }

char *kf__strdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (p) memcpy(p, s, n);
    else kf__alloc_failed();
    return p;
}

char *kf__asprintf(const char *fmt, ...) {
    va_list ap;
    char *p = NULL;
    va_start(ap, fmt);
    if (vasprintf(&p, fmt, ap) < 0) p = NULL, kf__alloc_failed();
    va_end(ap);
    return p;
}

void kf_buf_init(kf_buf *b, size_t limit) {
    memset(b, 0, sizeof *b);
    b->limit = limit;
}

int kf_buf_append(kf_buf *b, const void *data, size_t n) {
    if (b->len + n > b->limit) {
        size_t room = b->limit > b->len ? b->limit - b->len : 0;
        b->dropped += n - room;
        n = room;
    }
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1) cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->oom = 1;
            kf__alloc_failed();
            return -1;
        }
        b->p = p;
        b->cap = cap;
    }
    if (n) memcpy(b->p + b->len, data, n);
    b->len += n;
    b->p[b->len] = 0;
    return 0;
}

int kf_buf_printf(kf_buf *b, const char *fmt, ...) {
    char tmp[1024], *s = tmp;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0) return -1;
    if ((size_t)n >= sizeof tmp) {
        s = malloc((size_t)n + 1);
        if (!s) {
            b->oom = 1;
            kf__alloc_failed();
            return -1;
        }
        va_start(ap, fmt);
        vsnprintf(s, (size_t)n + 1, fmt, ap);
        va_end(ap);
    }
    int rc = kf_buf_append(b, s, (size_t)n);
    if (s != tmp) free(s);
    return rc;
}

void kf_buf_free(kf_buf *b) {
    free(b->p);
    memset(b, 0, sizeof *b);
}

int kf__read_file(const char *path, size_t limit, char **out, size_t *len) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        if (!S_ISREG(st.st_mode)) errno = S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
        close(fd);
        return -1;
    }
    if ((size_t)st.st_size > limit) {
        close(fd);
        errno = EFBIG;
        return -1;
    }
    char *p = malloc((size_t)st.st_size + 1);
    if (!p) {
        kf__alloc_failed();
        close(fd);
        errno = ENOMEM;
        return -1;
    }
    size_t got = 0;
    while (got < (size_t)st.st_size) {
        ssize_t r = read(fd, p + got, (size_t)st.st_size - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += (size_t)r;
    }
    close(fd);
    p[got] = 0;
    *out = p;
    if (len) *len = got;
    return 0;
}

int kf__sha256_hex(const void *const *parts, const size_t *lens, int n, char out[65]) {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    EVP_MD_CTX *c = EVP_MD_CTX_new();
    if (!c) return -1;
    int ok = EVP_DigestInit_ex(c, EVP_sha256(), NULL);
    for (int i = 0; ok && i < n; i++) ok = EVP_DigestUpdate(c, parts[i], lens[i]);
    ok = ok && EVP_DigestFinal_ex(c, md, &mdlen);
    EVP_MD_CTX_free(c);
    if (!ok) return -1;
    for (unsigned i = 0; i < mdlen && i < 32; i++) snprintf(out + 2 * i, 3, "%02x", md[i]);
    out[64] = 0;
    return 0;
}

uint64_t kf__now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

int kf__mkdirs(const char *path) {
    char tmp[4096];
    size_t n = strlen(path);
    if (n >= sizeof tmp) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(tmp, path, n + 1);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(tmp, 0700) < 0 && errno != EEXIST) return -1;
        *p = '/';
    }
    if (mkdir(tmp, 0700) < 0 && errno != EEXIST) return -1;
    return 0;
}

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb;
    (void)flag;
    (void)ftw;
    remove(p);
    return 0;
}

void kf__rmtree(const char *path) {
    if (path && *path) nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

void kf__cache_dir(char *out, size_t n) {
    const char *e = getenv("KFORGE_CACHE_DIR");
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (e && *e) snprintf(out, n, "%s", e);
    else if (xdg && *xdg) snprintf(out, n, "%s/kforge", xdg);
    else if (home && *home) snprintf(out, n, "%s/.cache/kforge", home);
    else snprintf(out, n, "/tmp/kforge-cache-%d", (int)getuid());
}

static int read_stream(const char *path, char *buf, size_t cap) {
    /* /proc files report size 0: read until EOF */
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    size_t got = 0;
    ssize_t r;
    while (got + 1 < cap && (r = read(fd, buf + got, cap - 1 - got)) > 0) got += (size_t)r;
    close(fd);
    buf[got] = 0;
    return 0;
}

static char cpu_id[65];

static void cpu_identity_init(void) {
    static char text[1 << 16];
    char *id = cpu_id;
    if (read_stream("/proc/cpuinfo", text, sizeof text)) {
        snprintf(id, sizeof cpu_id, "unknown-cpu");
        return;
    }
    char *model = strstr(text, "model name"), *flags = strstr(text, "\nflags");
    size_t ml = model ? strcspn(model, "\n") : 0, fl = flags ? strcspn(flags + 1, "\n") : 0;
    const void *parts[] = {model ? model : "", flags ? flags : ""};
    size_t lens[] = {ml, fl};
    if (kf__sha256_hex(parts, lens, 2, id)) snprintf(id, sizeof cpu_id, "unknown-cpu");
}

const char *kf__cpu_identity(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, cpu_identity_init);
    return cpu_id;
}

static int nthreads;

/* The CPUs the process may use, as at load time. Timing pins the coordinating thread
 * to one CPU (bench.c); the data path's helper threads run on these instead, or every
 * chunk of a 64 MB input would queue on that one CPU (128 ms a round on the H200). */
static cpu_set_t all_cpus;
static int have_all_cpus;

__attribute__((constructor)) static void capture_cpus(void) {
    have_all_cpus = sched_getaffinity(0, sizeof all_cpus, &all_cpus) == 0 && CPU_COUNT(&all_cpus) > 0;
}

void kf__set_nthreads(int v) { nthreads = v < 1 ? 0 : v > 16 ? 16 : v; }

int kf__nthreads(void) {
    int n = nthreads;
    if (n) return n;
    int v = 0;
    const char *e = getenv("KFORGE_THREADS");
    if (e && *e) v = (int)strtol(e, NULL, 10);
    if (v <= 0) {
        cpu_set_t set;
        v = have_all_cpus                            ? CPU_COUNT(&all_cpus)
            : sched_getaffinity(0, sizeof set, &set) ? 1
                                                     : CPU_COUNT(&set);
    }
    n = v < 1 ? 1 : v > 16 ? 16 : v;
    nthreads = n;
    return n;
}

typedef struct {
    void (*fn)(void *, int64_t);
    void *arg;
    int64_t n;
    _Atomic int64_t next;
} par_job;

static void *par_main(void *p) {
    par_job *j = p;
    for (int64_t i; (i = atomic_fetch_add(&j->next, 1)) < j->n;) j->fn(j->arg, i);
    return NULL;
}

void kf__parallel(int64_t n, void (*fn)(void *arg, int64_t i), void *arg) {
    par_job j = {fn, arg, n, 0};
    int nt = kf__nthreads();
    if (nt > n) nt = (int)n;
    pthread_t th[16];
    pthread_attr_t attr;
    int ha = nt > 1 && pthread_attr_init(&attr) == 0;
    if (ha && have_all_cpus) pthread_attr_setaffinity_np(&attr, sizeof all_cpus, &all_cpus);
    int started = 0;
    for (; started < nt - 1; started++) /* a thread that cannot start: fewer helpers */
        if (pthread_create(&th[started], ha ? &attr : NULL, par_main, &j)) break;
    if (ha) pthread_attr_destroy(&attr);
    par_main(&j);
    for (int k = 0; k < started; k++) pthread_join(th[k], NULL);
}

void kf__sweep_dead_dirs(const char *prefix) {
    const char *tmp = getenv("TMPDIR");
    const char *root = tmp && *tmp ? tmp : "/tmp";
    size_t pl = strlen(prefix);
    DIR *d = opendir(root);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strncmp(e->d_name, prefix, pl)) continue;
        int pid = 0, used = 0;
        if (sscanf(e->d_name + pl, "%d-%*6[A-Za-z0-9]%n", &pid, &used) < 1 ||
            used != (int)strlen(e->d_name + pl) || pid <= 0 || pid == (int)getpid())
            continue;
        if (kill(pid, 0) == 0 || errno != ESRCH) continue; /* alive, or not ours to judge */
        struct stat sb;
        if (fstatat(dirfd(d), e->d_name, &sb, AT_SYMLINK_NOFOLLOW) || !S_ISDIR(sb.st_mode)) continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", root, e->d_name);
        kf__rmtree(path);
    }
    closedir(d);
}
