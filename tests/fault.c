/*
 * fault.c - the failure seams of fault.h: the __wrap_ functions that kf-tests is linked
 * with (-Wl,--wrap=NAME for every NAME below, tests/CMakeLists.txt), one countdown over
 * them, and the hooks that send SQLite's and OpenSSL's allocations and SQLite's writes
 * to the same countdown. jansson needs none: libkforge gives it an allocator of its own
 * (kf__json_init), which calls malloc.
 *
 * A linker wrap renames the references of every object linked into kf-tests - libkforge.a
 * and the tests - so the library is the one users get, unchanged, and nothing in src/
 * carries a test hook. Shared libraries keep their own references: libc's internal
 * allocations (inside fopen, opendir, getline) are not counted, which is why strdup,
 * strndup, vasprintf and realpath are wrapped themselves. SQLite's files are reached
 * through a VFS registered as the default one, which forwards to the "unix" VFS
 * (SQLite's own test_vfs.c and test_devsym.c work the same way).
 *
 * The countdown: kft_fault_arm zeroes one counter per kind and names the kind and the
 * event number that fails; each wrapped call of that kind takes the next number
 * (atomically: the library's threads count too). A forked child stops counting at once,
 * so a compiler's child, between fork and exec, never fails on our behalf.
 */
#define _GNU_SOURCE
#include "fault.h"

#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <jansson.h>
#include <openssl/crypto.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static atomic_int on; /* counting at all */
static atomic_long counts[KFT_FAULT_KINDS];
static atomic_long fired;
static kft_fault_kind armed_kind;
static long armed_nth; /* 0: none fails */
static int armed_persist;
static int armed_kill;         /* kft_fault_arm_kill: the nth event kills the process */
static const char *first_site; /* the first failed event's wrapper, and its stack */
static void *first_stack[24];
static int first_depth;

const char *kft_fault_name(kft_fault_kind kind) {
    static const char *const names[] = {"alloc", "spawn", "write"};
    return kind >= 0 && kind < KFT_FAULT_KINDS ? names[kind] : "?";
}

void kft_fault_arm(kft_fault_kind kind, long nth, int persist) {
    atomic_store(&on, 0);
    for (int k = 0; k < KFT_FAULT_KINDS; k++) atomic_store(&counts[k], 0);
    atomic_store(&fired, 0);
    first_site = NULL;
    first_depth = 0;
    static int loaded;
    if (!loaded++) backtrace(first_stack, 1); /* loads what backtrace needs, before a fault */
    armed_kind = kind;
    armed_kill = 0;
    armed_nth = nth;
    armed_persist = persist;
    atomic_store(&on, 1);
}

void kft_fault_arm_kill(kft_fault_kind kind, long nth) {
    kft_fault_arm(kind, nth, 0);
    armed_kill = 1;
}

void kft_fault_disarm(void) {
    atomic_store(&on, 0);
    armed_kill = 0;
}

long kft_fault_count(kft_fault_kind kind) { return atomic_load(&counts[kind]); }

long kft_fault_fired(void) { return atomic_load(&fired); }

const char *kft_fault_site(void) { return first_site ? first_site : ""; }

void kft_fault_print_stack(void) {
    if (!first_depth) return;
    fprintf(stderr, "    the failed %s was called from:\n", kft_fault_site());
    fflush(stderr);
    backtrace_symbols_fd(first_stack, first_depth, 2);
}

/* Inside jansson's parser: nothing counts (see json_parse below). */
static _Thread_local int in_parser;

/* Count one event of kind k at site (the wrapper's name); 1 when it must fail. */
static int hit(kft_fault_kind k, const char *site) {
    if (in_parser || !atomic_load_explicit(&on, memory_order_acquire)) return 0;
    long i = atomic_fetch_add(&counts[k], 1) + 1;
    if (k != armed_kind || armed_nth <= 0 || i < armed_nth || (i > armed_nth && !armed_persist)) return 0;
    if (armed_kill) raise(SIGKILL);
    if (atomic_fetch_add(&fired, 1) == 0) {
        first_site = site;
        first_depth = backtrace(first_stack, (int)(sizeof first_stack / sizeof first_stack[0]));
    }
    return 1;
}

/* ---- allocation ------------------------------------------------------------------ */

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t m);
void *__real_realloc(void *p, size_t n);
char *__real_strdup(const char *s);
char *__real_strndup(const char *s, size_t n);
int __real_vasprintf(char **out, const char *fmt, va_list ap);
char *__real_realpath(const char *path, char *resolved);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t m);
void *__wrap_realloc(void *p, size_t n);
char *__wrap_strdup(const char *s);
char *__wrap_strndup(const char *s, size_t n);
int __wrap_vasprintf(char **out, const char *fmt, va_list ap);
char *__wrap_realpath(const char *path, char *resolved);

#define ALLOC_FAULT(ret)                      \
    do {                                      \
        if (hit(KFT_FAULT_ALLOC, __func__)) { \
            errno = ENOMEM;                   \
            return ret;                       \
        }                                     \
    } while (0)

/* A successful allocation that leaves ENOMEM in errno, as glibc's may (kft_fault_stale_errno) */
static atomic_int stale;

void kft_fault_stale_errno(int on_) { atomic_store(&stale, on_); }

static void *stale_errno(void *p) {
    if (p && atomic_load_explicit(&stale, memory_order_relaxed)) errno = ENOMEM;
    return p;
}

void *__wrap_malloc(size_t n) {
    ALLOC_FAULT(NULL);
    return stale_errno(__real_malloc(n));
}

void *__wrap_calloc(size_t n, size_t m) {
    ALLOC_FAULT(NULL);
    return stale_errno(__real_calloc(n, m));
}

void *__wrap_realloc(void *p, size_t n) {
    ALLOC_FAULT(NULL); /* p stays the caller's, as with a real failure */
    return stale_errno(__real_realloc(p, n));
}

char *__wrap_strdup(const char *s) {
    ALLOC_FAULT(NULL);
    return __real_strdup(s);
}

char *__wrap_strndup(const char *s, size_t n) {
    ALLOC_FAULT(NULL);
    return __real_strndup(s, n);
}

int __wrap_vasprintf(char **out, const char *fmt, va_list ap) {
    ALLOC_FAULT(-1);
    return __real_vasprintf(out, fmt, ap);
}

char *__wrap_realpath(const char *path, char *resolved) {
    if (!resolved) ALLOC_FAULT(NULL); /* only realpath(p, NULL) allocates */
    return __real_realpath(path, resolved);
}

/* ---- processes and threads --------------------------------------------------------- */

pid_t __real_fork(void);
int __real_posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
                       const posix_spawnattr_t *at, char *const argv[], char *const envp[]);
int __real_posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
                        const posix_spawnattr_t *at, char *const argv[], char *const envp[]);
int __real_pthread_create(pthread_t *th, const pthread_attr_t *at, void *(*fn)(void *), void *arg);
pid_t __wrap_fork(void);
int __wrap_posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
                       const posix_spawnattr_t *at, char *const argv[], char *const envp[]);
int __wrap_posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
                        const posix_spawnattr_t *at, char *const argv[], char *const envp[]);
int __wrap_pthread_create(pthread_t *th, const pthread_attr_t *at, void *(*fn)(void *), void *arg);

pid_t __wrap_fork(void) {
    if (hit(KFT_FAULT_SPAWN, __func__)) {
        errno = EAGAIN;
        return -1;
    }
    pid_t pid = __real_fork();
    if (pid == 0) atomic_store(&on, 0);
    return pid;
}

int __wrap_posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
                       const posix_spawnattr_t *at, char *const argv[], char *const envp[]) {
    if (hit(KFT_FAULT_SPAWN, __func__)) return EAGAIN;
    return __real_posix_spawn(pid, path, fa, at, argv, envp);
}

int __wrap_posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
                        const posix_spawnattr_t *at, char *const argv[], char *const envp[]) {
    if (hit(KFT_FAULT_SPAWN, __func__)) return EAGAIN;
    return __real_posix_spawnp(pid, file, fa, at, argv, envp);
}

int __wrap_pthread_create(pthread_t *th, const pthread_attr_t *at, void *(*fn)(void *), void *arg) {
    if (hit(KFT_FAULT_SPAWN, __func__)) return EAGAIN;
    return __real_pthread_create(th, at, fn, arg);
}

/* ---- file writes ------------------------------------------------------------------- */

int __real_open(const char *path, int flags, ...);
int __real_openat(int dir, const char *path, int flags, ...);
FILE *__real_fopen(const char *path, const char *mode);
ssize_t __real_write(int fd, const void *p, size_t n);
size_t __real_fwrite(const void *p, size_t size, size_t n, FILE *f);
int __real_ftruncate(int fd, off_t len);
int __real_fsync(int fd);
int __real_fdatasync(int fd);
int __real_rename(const char *from, const char *to);
int __real_renameat(int fd1, const char *from, int fd2, const char *to);
int __real_mkdir(const char *path, mode_t mode);
char *__real_mkdtemp(char *tmpl);
int __real_mkstemp(char *tmpl);
int __wrap_open(const char *path, int flags, ...);
int __wrap_openat(int dir, const char *path, int flags, ...);
FILE *__wrap_fopen(const char *path, const char *mode);
ssize_t __wrap_write(int fd, const void *p, size_t n);
size_t __wrap_fwrite(const void *p, size_t size, size_t n, FILE *f);
int __wrap_ftruncate(int fd, off_t len);
int __wrap_fsync(int fd);
int __wrap_fdatasync(int fd);
int __wrap_rename(const char *from, const char *to);
int __wrap_renameat(int fd1, const char *from, int fd2, const char *to);
int __wrap_mkdir(const char *path, mode_t mode);
char *__wrap_mkdtemp(char *tmpl);
int __wrap_mkstemp(char *tmpl);

#define WRITE_FAULT(ret)                      \
    do {                                      \
        if (hit(KFT_FAULT_WRITE, __func__)) { \
            errno = EIO;                      \
            return ret;                       \
        }                                     \
    } while (0)

static int writes(int flags) { return (flags & O_ACCMODE) != O_RDONLY || (flags & (O_CREAT | O_TRUNC)); }

static mode_t mode_arg(int flags, va_list ap) {
    return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? (mode_t)va_arg(ap, int) : 0;
}

int __wrap_open(const char *path, int flags, ...) {
    va_list ap;
    va_start(ap, flags);
    mode_t mode = mode_arg(flags, ap);
    va_end(ap);
    if (writes(flags)) WRITE_FAULT(-1);
    return __real_open(path, flags, mode);
}

int __wrap_openat(int dir, const char *path, int flags, ...) {
    va_list ap;
    va_start(ap, flags);
    mode_t mode = mode_arg(flags, ap);
    va_end(ap);
    if (writes(flags)) WRITE_FAULT(-1);
    return __real_openat(dir, path, flags, mode);
}

FILE *__wrap_fopen(const char *path, const char *mode) {
    if (strpbrk(mode, "wa+")) WRITE_FAULT(NULL);
    return __real_fopen(path, mode);
}

ssize_t __wrap_write(int fd, const void *p, size_t n) {
    WRITE_FAULT(-1);
    return __real_write(fd, p, n);
}

size_t __wrap_fwrite(const void *p, size_t size, size_t n, FILE *f) {
    WRITE_FAULT(0);
    return __real_fwrite(p, size, n, f);
}

int __wrap_ftruncate(int fd, off_t len) {
    WRITE_FAULT(-1);
    return __real_ftruncate(fd, len);
}

/* kft_fault_fsync's seam: its own count, apart from the countdown's kinds */
static atomic_long fs_count, fs_caller, fs_nth;
static int fs_err;
static pthread_t fs_thread;

void kft_fault_fsync(long nth, int err) {
    atomic_store(&fs_nth, 0);
    atomic_store(&fs_count, 0);
    atomic_store(&fs_caller, 0);
    fs_err = err;
    fs_thread = pthread_self();
    atomic_store(&fs_nth, nth);
}

long kft_fault_fsyncs(long *on_caller) {
    if (on_caller) *on_caller = atomic_load(&fs_caller);
    return atomic_load(&fs_count);
}

/* 1 when this fsync must fail (errno set); a kill does not return */
static int fs_hit(void) {
    long i = atomic_fetch_add(&fs_count, 1) + 1;
    if (pthread_equal(pthread_self(), fs_thread)) atomic_fetch_add(&fs_caller, 1);
    if (i != atomic_load(&fs_nth)) return 0;
    if (!fs_err) raise(SIGKILL);
    errno = fs_err;
    return 1;
}

int __wrap_fsync(int fd) {
    WRITE_FAULT(-1);
    if (fs_hit()) return -1;
    return __real_fsync(fd);
}

int __wrap_fdatasync(int fd) {
    WRITE_FAULT(-1);
    if (fs_hit()) return -1;
    return __real_fdatasync(fd);
}

int __wrap_rename(const char *from, const char *to) {
    WRITE_FAULT(-1);
    return __real_rename(from, to);
}

int __wrap_renameat(int fd1, const char *from, int fd2, const char *to) {
    WRITE_FAULT(-1);
    return __real_renameat(fd1, from, fd2, to);
}

int __wrap_mkdir(const char *path, mode_t mode) {
    WRITE_FAULT(-1);
    return __real_mkdir(path, mode);
}

char *__wrap_mkdtemp(char *tmpl) {
    WRITE_FAULT(NULL);
    return __real_mkdtemp(tmpl);
}

int __wrap_mkstemp(char *tmpl) {
    WRITE_FAULT(-1);
    return __real_mkstemp(tmpl);
}

/* ---- jansson's parser ---------------------------------------------------------------
 * jansson's lexer drops a failed allocation (lex_save ignores strbuffer_append_byte's
 * failure, akheron/jansson#362) and then asserts or writes past its buffer: a fault
 * there tests jansson, and crashes. Its parsers run with the seams off. */

json_t *__real_json_loads(const char *text, size_t flags, json_error_t *e);
json_t *__real_json_loadb(const char *buf, size_t n, size_t flags, json_error_t *e);
json_t *__real_json_load_file(const char *path, size_t flags, json_error_t *e);
json_t *__wrap_json_loads(const char *text, size_t flags, json_error_t *e);
json_t *__wrap_json_loadb(const char *buf, size_t n, size_t flags, json_error_t *e);
json_t *__wrap_json_load_file(const char *path, size_t flags, json_error_t *e);

json_t *__wrap_json_loads(const char *text, size_t flags, json_error_t *e) {
    in_parser++;
    json_t *j = __real_json_loads(text, flags, e);
    in_parser--;
    return j;
}

json_t *__wrap_json_loadb(const char *buf, size_t n, size_t flags, json_error_t *e) {
    in_parser++;
    json_t *j = __real_json_loadb(buf, n, flags, e);
    in_parser--;
    return j;
}

json_t *__wrap_json_load_file(const char *path, size_t flags, json_error_t *e) {
    in_parser++;
    json_t *j = __real_json_load_file(path, flags, e);
    in_parser--;
    return j;
}

/* ---- the libraries' own hooks ------------------------------------------------------ */

static void *ossl_malloc(size_t n, const char *file, int line) {
    ALLOC_FAULT(NULL);
    return __real_malloc(n);
}

static void *ossl_realloc(void *p, size_t n, const char *file, int line) {
    ALLOC_FAULT(NULL);
    return __real_realloc(p, n);
}

static void ossl_free(void *p, const char *file, int line) { free(p); }

static sqlite3_mem_methods sql_mem; /* SQLite's own allocator, which these call */

static void *sql_malloc(int n) {
    ALLOC_FAULT(NULL);
    return sql_mem.xMalloc(n);
}

static void *sql_realloc(void *p, int n) {
    ALLOC_FAULT(NULL);
    return sql_mem.xRealloc(p, n);
}

/* A file of the VFS: its methods, then the "unix" VFS's file, which does the work. */
typedef struct {
    sqlite3_file base;
    sqlite3_file *real;
} vfile;

static sqlite3_vfs *unix_vfs;
static sqlite3_io_methods vio;

#define REAL(f) (((vfile *)(f))->real)
#define FWD(f, m, ...) (REAL(f)->pMethods->m(REAL(f), ##__VA_ARGS__))

static int v_close(sqlite3_file *f) { return FWD(f, xClose); }
static int v_read(sqlite3_file *f, void *p, int n, sqlite3_int64 off) { return FWD(f, xRead, p, n, off); }
static int v_write(sqlite3_file *f, const void *p, int n, sqlite3_int64 off) {
    return hit(KFT_FAULT_WRITE, __func__) ? SQLITE_IOERR_WRITE : FWD(f, xWrite, p, n, off);
}
static int v_truncate(sqlite3_file *f, sqlite3_int64 n) {
    return hit(KFT_FAULT_WRITE, __func__) ? SQLITE_IOERR_TRUNCATE : FWD(f, xTruncate, n);
}
static int v_sync(sqlite3_file *f, int flags) {
    return hit(KFT_FAULT_WRITE, __func__) ? SQLITE_IOERR_FSYNC : FWD(f, xSync, flags);
}
static int v_size(sqlite3_file *f, sqlite3_int64 *n) { return FWD(f, xFileSize, n); }
static int v_lock(sqlite3_file *f, int l) { return FWD(f, xLock, l); }
static int v_unlock(sqlite3_file *f, int l) { return FWD(f, xUnlock, l); }
static int v_reserved(sqlite3_file *f, int *out) { return FWD(f, xCheckReservedLock, out); }
static int v_control(sqlite3_file *f, int op, void *arg) { return FWD(f, xFileControl, op, arg); }
static int v_sector(sqlite3_file *f) { return FWD(f, xSectorSize); }
static int v_dev(sqlite3_file *f) { return FWD(f, xDeviceCharacteristics); }
static int v_shm_map(sqlite3_file *f, int pg, int sz, int ext, void volatile **p) {
    return FWD(f, xShmMap, pg, sz, ext, p);
}
static int v_shm_lock(sqlite3_file *f, int off, int n, int flags) { return FWD(f, xShmLock, off, n, flags); }
static void v_shm_barrier(sqlite3_file *f) { FWD(f, xShmBarrier); }
static int v_shm_unmap(sqlite3_file *f, int del) { return FWD(f, xShmUnmap, del); }
static int v_fetch(sqlite3_file *f, sqlite3_int64 off, int n, void **p) { return FWD(f, xFetch, off, n, p); }
static int v_unfetch(sqlite3_file *f, sqlite3_int64 off, void *p) { return FWD(f, xUnfetch, off, p); }

static int v_open(sqlite3_vfs *vfs, sqlite3_filename name, sqlite3_file *f, int flags, int *out) {
    vfile *v = (vfile *)f;
    v->real = (sqlite3_file *)(v + 1);
    f->pMethods = NULL;
    if ((flags & SQLITE_OPEN_CREATE) && hit(KFT_FAULT_WRITE, __func__)) return SQLITE_CANTOPEN;
    int rc = unix_vfs->xOpen(unix_vfs, name, v->real, flags, out);
    if (v->real->pMethods) {
        vio.iVersion = v->real->pMethods->iVersion < 3 ? v->real->pMethods->iVersion : 3;
        f->pMethods = &vio;
    }
    return rc;
}

static int sqlite_hooks(void) {
    static sqlite3_vfs vfs;
    sqlite3_shutdown(); /* SQLITE_CONFIG_* apply only before sqlite3_initialize */
    sqlite3_mem_methods m;
    if (sqlite3_config(SQLITE_CONFIG_GETMALLOC, &sql_mem) != SQLITE_OK) return -1;
    m = sql_mem;
    m.xMalloc = sql_malloc;
    m.xRealloc = sql_realloc;
    if (sqlite3_config(SQLITE_CONFIG_MALLOC, &m) != SQLITE_OK || sqlite3_initialize() != SQLITE_OK) return -1;
    unix_vfs = sqlite3_vfs_find("unix");
    if (!unix_vfs) return -1;
    vio =
        (sqlite3_io_methods){3,          v_close,       v_read,      v_write,   v_truncate, v_sync, v_size,
                             v_lock,     v_unlock,      v_reserved,  v_control, v_sector,   v_dev,  v_shm_map,
                             v_shm_lock, v_shm_barrier, v_shm_unmap, v_fetch,   v_unfetch};
    /* everything but opening is the unix VFS's, which reads nothing of the VFS passed in
     * but what this copy keeps (its pAppData, mxPathname) */
    vfs = *unix_vfs;
    vfs.zName = "kft-fault";
    vfs.pNext = NULL;
    vfs.szOsFile = (int)sizeof(vfile) + unix_vfs->szOsFile;
    vfs.xOpen = v_open;
    return sqlite3_vfs_register(&vfs, 1) == SQLITE_OK ? 0 : -1;
}

int kft_fault_libs(void) {
    static int done, rc;
    if (done) return rc;
    done = 1;
    if (!CRYPTO_set_mem_functions(ossl_malloc, ossl_realloc, ossl_free)) {
        fprintf(stderr, "fault: OpenSSL has allocated already: its allocations are not counted\n");
        rc = -1;
    }
    if (sqlite_hooks()) {
        fprintf(stderr, "fault: SQLite refused the allocator or the VFS\n");
        rc = -1;
    }
    return rc;
}

/* LeakSanitizer's entry point, present only in the sanitizer build. */
extern int __lsan_do_recoverable_leak_check(void) __attribute__((weak));

int kft_fault_leaks(void) {
    return __lsan_do_recoverable_leak_check ? __lsan_do_recoverable_leak_check() : 0;
}
