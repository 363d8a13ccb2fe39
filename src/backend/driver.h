/*
 * driver.h - the compiler driver of the backends that build with a toolchain of this
 * machine: the C backend (cc) and the CUDA backend's host mode (nvcc). One build is a
 * directory of its own, two passes of the compiler at once under kf_sandbox_exec, and
 * the artifact kept in the build cache (docs/checker.md #22, #31).
 *
 *   kf_driver_prepare  workdir/build-XXXXXX holding the candidate under its own name and
 *                    the generated prototype under a random one;
 *   kf_driver_run    the object pass (the candidate alone, the documented command) and,
 *                    in a thread beside it, the signature pass (the prototype
 *                    force-included); the log and exit status of the pass that reports;
 *   kf_driver_line   the line of a log holding its first error, for the message;
 *   kf_driver_*path  where an artifact lives in the cache (a key is SHA-256 of everything
 *                    the build depends on; its backend decides what that is);
 *   kf_driver_publish, kf_driver_keep  into the cache atomically (a failure costs a
 *                    rebuild, never a half-written artifact).
 *
 * The driver knows no compiler: each backend finds its own, writes the argument vectors,
 * composes the key and reads the exit status into a verdict and a message.
 */
#ifndef KF_BACKEND_DRIVER_H
#define KF_BACKEND_DRIVER_H

#include "../sandbox/sandbox.h"

#include <limits.h>
#include <sys/stat.h>

/* A build directory and the names in it. */
typedef struct {
    char dir[PATH_MAX];        /* workdir/build-XXXXXX */
    char src[PATH_MAX + 300];  /* the candidate's copy, dir/NAME */
    char hname[40];            /* the prototype's file name: random, for the signature pass */
    char hpath[PATH_MAX + 48]; /* dir/hname, removed once the passes are done */
    char soname[NAME_MAX + 8]; /* NAME with its extension replaced by ".so" */
    char so[PATH_MAX + NAME_MAX + 8];
} kf_driver_dir;

/* Make the build directory in workdir and write into it the candidate (text, len) as name
 * and the prototype header. times: NULL, or the source file's, kept on the copy (a text
 * that reads __TIMESTAMP__ sees its own file's time). KF_OK, or KF_EIO ("mkdtemp in
 * WORKDIR: ...", "writing into DIR: ..."). */
kf_status kf_driver_prepare(kf_ctx *ctx, const char *workdir, const char *name, const char *text, size_t len,
                            const char *header, const struct stat *times, kf_driver_dir *d);

/* The two passes of one build. Both run in d->dir with PATH (the toolchain's bin/ first),
 * LANG=C, LC_ALL=C and TMPDIR=d->dir; they may read the system's directories, ro and
 * prefix, and write d->dir and /dev/null. */
typedef struct {
    char **argv;           /* the object pass */
    char **sargv;          /* the signature pass */
    const char *prefix;    /* the toolchain's top (kf_driver_prefix) */
    const char *const *ro; /* more read-only paths, or NULL */
    int nro;
    kf_limits lim;
    double timeout_s;
    size_t log_cap;
    /* 1: an object pass past its deadline or killed reports that, even when the
     * signature pass failed; 0: a failed signature pass always reports */
    int deadline_first;
} kf_driver_job;

typedef struct {
    kf_buf log;     /* the reporting pass's output (capped at log_cap); the caller frees it */
    int code;       /* its exit status; -1 past the deadline, 128 + N killed by signal N */
    double seconds; /* both passes, wall time */
} kf_driver_out;

/* Run both passes at once: the signature pass in a thread of its own (inline when no
 * thread can start), the object pass here. The object pass cannot see the prototype
 * meanwhile (it has a random name), and d->hpath is removed after both. The signature
 * pass reports (its log and status in *o) when it failed, as deadline_first allows; else
 * the object pass does: its warnings are the signature pass's too. KF_OK when both ran
 * (whatever they exited with); an error for the sandbox's own failure, o->log then
 * empty. */
kf_status kf_driver_run(kf_ctx *ctx, const kf_driver_dir *d, const kf_driver_job *j, kf_driver_out *o);

/* The line of log that holds at (a pointer into log; NULL: none), at most 400 bytes, or
 * a copy of fallback. Caller frees; NULL when out of memory. */
char *kf_driver_line(const char *log, const char *at, const char *fallback);

/* The first executable name found along $PATH (dflt when $PATH is unset or empty; NULL:
 * none then), its real path in out (PATH_MAX bytes). 0, or -1 (errno ENOMEM when
 * memory ran out, ENOENT or 0 when nothing was found). */
int kf_driver_which(const char *name, const char *dflt, char *out);
/* A toolchain's top: its compiler's path two levels up (/usr/local/cuda/bin/nvcc ->
 * /usr/local/cuda), into out. */
void kf_driver_prefix(const char *exe, char *out, size_t n);

/* The cache's file for a build: $CACHE/<kind>/<key's first two hex digits>/<key><ext>
 * (kf__cache_dir). Caller frees; NULL when out of memory. */
char *kf_driver_cache_path(const char *kind, const char *key, const char *ext);
/* Write data to path, created or truncated. 0, or -1 with errno. */
int kf_driver_write(const char *path, const void *data, size_t n);
/* Publish data at path atomically: its directory made as needed, a temporary of this
 * thread's (kforge run --jobs builds in several), then rename. 0, or -1 with nothing
 * left behind. */
int kf_driver_publish(const char *path, const void *data, size_t n);
/* Keep an artifact (data, n) and its log: published at *cached and cached_log (either
 * may be NULL: no cache), else written to local, a file of this build alone. KF_OK
 * with *path set: *cached itself (which becomes the caller's through *path, *cached
 * NULL) or a copy of local; KF_EIO ("writing LOCAL: ...") when neither could be
 * written, KF_ENOMEM. */
kf_status kf_driver_keep(kf_ctx *ctx, char **cached, const char *cached_log, const char *log,
                         const void *data, size_t n, const char *local, char **path);

#endif
