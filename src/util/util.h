/*
 * util.h - the core: what every module may use and nothing in it uses another module.
 * The context and its error text (ctx.c), allocation, a capped growable buffer, files,
 * hashing, clocks and threads (util.c), integer expressions (expr.c), the input RNG
 * (rng.c), untrusted text as JSON and its size in tokens (text.c). The SQLite helper is
 * db.h. Nothing here is exported; names are kf_<module>_ or kf__.
 */
#ifndef KF_UTIL_H
#define KF_UTIL_H

#include "kforge.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>

#define KF_ERRMAX 4096

struct kf_ctx {
    kf_status last;
    char err[KF_ERRMAX];
};

/* Set ctx's error text (printf-style) and return st, so callers write
 * `return kf__err(ctx, KF_ETASK, "...")`. ctx may be NULL. */
kf_status kf__err(kf_ctx *ctx, kf_status st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* jansson's allocations go through kforge's allocator, which counts the ones that
 * failed: a document built with json_object_set_new and friends (which fail silently)
 * is whole when the count did not move while it was built, and a parse that failed while
 * it moved failed for memory (jansson's lexer reports some of those as syntax errors).
 * kf__json_init (once per process; kf_ctx_new calls it) installs it. */
void kf__json_init(void);
unsigned long kf__json_failures(void);
/* Allocations that failed in this process, counted by jansson's allocator, kf__strdup,
 * kf__asprintf, kf_buf and kf__read_file, and by callers through kf__alloc_failed: a
 * sticky record (as SQLite's mallocFailed) for a caller whose many steps each shrug off a
 * NULL, so it can tell a whole product from one that lost a part. Process-wide: a
 * failure in another thread counts too, which errs towards "out of memory". */
unsigned long kf__alloc_failures(void);
void kf__alloc_failed(void);
/* json_dumps, or NULL when an allocation failed while it ran: jansson's dump does not check
 * every one of them (a key whose buffer could not grow is left out, and the document goes
 * on without it: '"stopped":"x",":7.35'). Every document kforge writes goes through it
 * (scripts/check-banned.sh). */
char *kf__json_dumps(const json_t *j, size_t flags);

/* The status of a failed file or system call from its errno: KF_ENOMEM for ENOMEM (a
 * read's buffer, realpath's), else KF_EIO. */
kf_status kf__io_status(int err);

/* Allocation that treats failure as fatal is NOT used: these return NULL like malloc. */
char *kf__strdup(const char *s);
char *kf__asprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A growable byte buffer with a hard cap: appends beyond `limit` are dropped and counted
 * (curl's dynbuf). Always NUL-terminated when p != NULL. An append that failed for
 * memory sets oom: a builder checks it once, at the end. */
typedef struct {
    char *p;
    size_t len, cap, limit;
    size_t dropped;
    int oom;
} kf_buf;
void kf_buf_init(kf_buf *b, size_t limit);
int kf_buf_append(kf_buf *b, const void *data, size_t n); /* 0, or -1 on OOM */
int kf_buf_printf(kf_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void kf_buf_free(kf_buf *b);

/* Read a whole file (at most `limit` bytes; larger is an error). Caller frees *out. */
int kf__read_file(const char *path, size_t limit, char **out, size_t *len);

/* A JSON string for untrusted text: as is when valid UTF-8, else with every byte that
 * is not printable ASCII replaced by '?'. NULL only when out of memory. */
json_t *kf_text_json(const char *text);
/* The token estimate of a text of `bytes` bytes: ceil(bytes / 4), close for English and
 * code with BPE tokenizers, high on dense JSON. Context packs and lessons budget by it. */
int64_t kf_text_tokens(size_t bytes);
/* a + b for counts (tokens, seconds' worth of work) that outside input can make huge:
 * saturates at INT64_MAX and INT64_MIN instead of overflowing. */
int64_t kf__sat_add(int64_t a, int64_t b);

/* Integer expressions over named variables: integers, names, + - * / % unary - !,
 * comparisons, && ||, ?:, parentheses, min(a,b), max(a,b). 64-bit signed arithmetic;
 * overflow and division by zero are evaluation errors. */
typedef struct kf_expr kf_expr;
typedef struct {
    const char *const *names;
    const int64_t *values;
    int n;
} kf_vars;
/* Parse src. NULL on error with "position N: ..." in err (errno EINVAL), or "out of
 * memory" (errno ENOMEM). Caller frees with kf_expr_free. */
kf_expr *kf_expr_parse(const char *src, char *err, size_t errlen);
/* 0 on success; -1 with err set (unknown name, division by zero, overflow). */
int kf_expr_eval(const kf_expr *e, const kf_vars *vars, int64_t *out, char *err, size_t errlen);
/* Every name the expression uses is in `known` (n names)? 0 yes; -1 with err. */
int kf_expr_check_names(const kf_expr *e, const char *const *known, int n, char *err, size_t errlen);
const char *kf_expr_src(const kf_expr *e);
void kf_expr_free(kf_expr *e);

/* The input RNG: the ChaCha20 keystream (OpenSSL). Everything a candidate can see -
 * inputs, sentinels, guard bytes - comes from it, so observing any amount of it tells
 * nothing about the next value (a red-team pass recovered a xoshiro state from 128
 * guard words and predicted every later input). */
typedef struct {
    void *evp;               /* EVP_CIPHER_CTX; NULL for a forked stream */
    unsigned char buf[4096]; /* keystream not yet used */
    size_t pos;
    uint64_t s[4]; /* xoshiro256** state of a forked stream */
    double spare;  /* the polar method's second normal */
    int has_spare;
} kf_rng;
/* Key the stream from a 64-bit seed (reproducible runs) or from 256 secret bits.
 * 0, or -1 when OpenSSL fails. Free with kf_rng_free. */
int kf_rng_seed(kf_rng *r, uint64_t seed);
int kf_rng_seed_secret(kf_rng *r);
void kf_rng_free(kf_rng *r);
/* A fast stream (xoshiro256**) keyed with 256 bits of the ChaCha20 stream, for filling
 * ONE buffer: its values are all visible to the candidate anyway, and a fresh key per
 * buffer means none of them says anything about any other buffer or call. */
void kf_rng_fork(kf_rng *parent, kf_rng *child);
/* A ChaCha20 stream of its own, keyed with 256 bits of the parent's: for drawing a whole
 * input set on another thread while the parent goes on. 0, or -1 when OpenSSL fails;
 * free with kf_rng_free. */
int kf_rng_split(kf_rng *parent, kf_rng *child);
uint64_t kf_rng_next(kf_rng *r);
double kf_rng_uniform(kf_rng *r);                        /* [0, 1) */
double kf_rng_normal(kf_rng *r);                         /* N(0, 1) */
int64_t kf_rng_range(kf_rng *r, int64_t lo, int64_t hi); /* inclusive */
/* Fill n floats with mean + std * N(0,1), or lo + (hi - lo) * U[0,1): the bulk paths
 * for large buffers (no per-element call). */
void kf_rng_fill_normal_f32(kf_rng *r, float *out, int64_t n, double mean, double std);
void kf_rng_fill_uniform_f32(kf_rng *r, float *out, int64_t n, double lo, double hi);
/* 64 secret bits from the kernel (getrandom). */
uint64_t kf__secret_u64(void);

/* SHA-256 of the concatenation of n (pointer, length) parts, as 64 hex chars + NUL. */
int kf__sha256_hex(const void *const *parts, const size_t *lens, int n, char out[65]);

uint64_t kf__now_ns(void); /* CLOCK_MONOTONIC */

/* Data parallelism for the coordinator's bulk work (input generation, staging,
 * comparison of large buffers): fn(arg, i) for every i in [0, n), on up to
 * kf__nthreads() threads (the caller's included), started for this call and joined
 * before it returns. Items must be independent; results must not depend on which
 * thread runs which item. */
void kf__parallel(int64_t n, void (*fn)(void *arg, int64_t i), void *arg);
/* CPUs this process may use (sched_getaffinity), at most 16; $KFORGE_THREADS overrides. */
int kf__nthreads(void);
void kf__set_nthreads(int n); /* tests: 0 = back to the default */

/* Scratch directories are named $TMPDIR/<prefix><pid>-XXXXXX after the process that made
 * them: remove those whose process no longer exists (a SIGKILLed kforge cannot clean up).
 * Never a live process's. */
void kf__sweep_dead_dirs(const char *prefix);

/* kforge's cache directory: $KFORGE_CACHE_DIR, else $XDG_CACHE_HOME/kforge, else
 * ~/.cache/kforge. Not created here. */
void kf__cache_dir(char *out, size_t n);
/* SHA-256 (hex) of this CPU's model name and flags: what -march=native and measured
 * ceilings depend on. */
const char *kf__cpu_identity(void);

/* Make directories along path (mode 0700). 0 or -1 with errno. */
int kf__mkdirs(const char *path);
/* Remove a directory tree (best effort). */
void kf__rmtree(const char *path);

#endif
