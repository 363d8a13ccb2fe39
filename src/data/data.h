/*
 * data.h - the bytes of one call: where each buffer sits in a worker's shared arena,
 * fresh secret-seeded input values, finite out-of-range sentinels for outputs, guard
 * zones, and the elementwise comparison against the reference.
 *
 * The coordinator keeps a private master copy of every input; the arena only ever
 * holds copies, so a candidate can neither alter the inputs the reference sees nor
 * read the reference's outputs.
 */
#ifndef KF_DATA_H
#define KF_DATA_H

#include "../task/task.h"

#define KF_GUARD_BYTES 1024
#define KF_ALIGN 64

/* Extents of every argument at one shape. */
typedef struct {
    int64_t count[KF_MAX_ARGS];             /* elements, buffers only */
    int64_t dims[KF_MAX_ARGS][KF_MAX_DIMS]; /* extents per dimension, buffers only */
    size_t bytes[KF_MAX_ARGS];              /* count * dtype size */
    int64_t ival[KF_MAX_ARGS];              /* scalars */
    double fval[KF_MAX_ARGS];
    int64_t size[KF_MAX_SIZES]; /* the shape's sizes (task order) */
} kf_extents;

int kf_data_extents(const kf_task *t, const kf_shape *s, kf_extents *ex, char *err, size_t n);

/* Placement of every buffer in an arena: [guard][buf0][guard][buf1]...[guard].
 * With a read-only region (ro_base > 0, CPU workers) the `in` buffers are laid out the
 * same way from ro_base + (base's offset), in a second memfd the worker maps read-only
 * (docs/checker.md "The worker"): the writable span [lo, end) holds the out and inout
 * buffers and their guards, the read-only span [ro_lo, ro_end) the inputs and theirs.
 * Guards [0, nguards) are the writable region's (checked after every call), then
 * nro_guards of the read-only region (staged only: nothing can write there). */
#define KF_MAX_GUARDS (KF_MAX_ARGS + 2)
typedef struct {
    size_t off[KF_MAX_ARGS];         /* buffer offsets (KF_ALIGN-aligned) */
    size_t guard_off[KF_MAX_GUARDS]; /* guard g spans [guard_off, guard_off + guard_len) */
    size_t guard_len[KF_MAX_GUARDS]; /* KF_GUARD_BYTES .. + KF_ALIGN - 1: no gaps */
    int guard_arg[KF_MAX_GUARDS];    /* the buffer guard g precedes; -1: after the last */
    int nguards, nro_guards;
    size_t lo, end;       /* the writable span (lo == guard_off[0]) */
    size_t ro_base;       /* 0: one region (GPU workers); else the read-only region */
    size_t ro_lo, ro_end; /* the read-only span (empty without one) */
} kf_layout;

/* Bytes one layout of these extents needs (in each region, when there are two). */
size_t kf_data_layout_size(const kf_task *t, const kf_extents *ex);
/* Lay buffers out starting at `base` (aligned up); with ro_base > 0, `in` buffers from
 * ro_base + base. */
void kf_data_layout(const kf_task *t, const kf_extents *ex, size_t base, kf_layout *lay);
void kf_data_layout_split(const kf_task *t, const kf_extents *ex, size_t base, size_t ro_base,
                          kf_layout *lay);

/* What earlier calls of one worker used, outside the current call's span: poisoned
 * with the worker's pattern (byte at arena offset o = pat[o % KF_SPENT_PAT], drawn from
 * getrandom when the worker starts) when a call moves elsewhere, so a write through a
 * pointer kept from an earlier call (an earlier shape, an earlier call at this shape,
 * the other half of the arena) changes it. The worker is frozen between calls, so the
 * bytes can only change during a call, and a change stays until the coordinator writes
 * there again: each byte is verified once, just before a later call's staging reuses it
 * (kf_data_spent_retire), or at the end (kf_data_spent_check). The extent earlier
 * calls used is what a kept pointer reaches; the bytes no call has used yet are poisoned
 * once at the start (kf_data_spent_unused). Cost: one write and one read of the span
 * each call leaves behind, and one write of the arena per worker. */
#define KF_SPENT_MAX 96
#define KF_SPENT_PAT 4096
typedef struct {
    size_t lo, hi; /* poisoned bytes [lo, hi) */
    size_t base;   /* where the buffer (or guard zone) that sat there began */
    uint32_t call; /* the worker's call (1-based) that used it last */
    int arg;       /* the buffer that sat there; -1 a guard zone, -2 several merged,
                    * -3 none yet (kf_data_spent_unused) */
} kf_spent_range;
typedef struct {
    int on;
    uint32_t calls; /* calls staged so far */
    int have_prev;
    kf_layout prev; /* the last call's layout, retired at the next call */
    int n;
    kf_spent_range r[KF_SPENT_MAX];
    int bad; /* a change was found (the first is kept) */
    kf_spent_range bad_range;
    size_t bad_at;     /* its arena offset */
    uint32_t bad_seen; /* calls made when it was found */
    unsigned char pat[KF_SPENT_PAT];
} kf_spent;

/* Turn the tracking on with a fresh secret pattern; -1 when getrandom fails. */
int kf_data_spent_init(kf_spent *sp);
/* Before staging a call laid out as `next`: verify what next's writable span will
 * overwrite (a change is kept in sp->bad*), forget it, and poison what the previous call
 * used outside that span. */
void kf_data_spent_retire(kf_spent *sp, const kf_layout *next, unsigned char *arena);
/* Poison the whole writable arena [0, bytes) of a fresh worker as memory no call has
 * used yet (arg -3, call 0): a write far past a buffer's guard zone, into bytes no call
 * had staged, is found like a kept pointer's (before a later call reuses them, or at the
 * end). Once, at the worker's start: one write of the arena. */
void kf_data_spent_unused(kf_spent *sp, unsigned char *arena, size_t bytes);
/* Verify everything still poisoned (the end of a check or of timed rounds); 1 when
 * sp->bad is set, by this or an earlier verification. */
int kf_data_spent_check(kf_spent *sp, const unsigned char *arena);

/* One input set: master copies of every in/inout buffer. */
typedef struct {
    void *buf[KF_MAX_ARGS];
} kf_inputs;

/* Input variants: 0 the declared distributions; 1 with spikes (normal: a few elements
 * x32; uniform: a few elements at lo or hi; f32/f64: a few subnormals and a -0.0 where
 * the domain holds them); 2 normal rescaled by 2^k, k in [-2, 2] (half
 * the time one normal input by 2^k, k in [-12, -3], instead) with zeros, uniform and int
 * drawn from a random sub-interval of [lo, hi] (half the time a narrow one: nearly
 * constant values); 3 (the maximum-sizes shape's second call) one normal input rescaled
 * by 2^k, k in [-12, -6], uniform and int in two levels (a leading run near hi, the rest
 * just above lo) or nearly constant throughout. Uniform and int
 * inputs never leave [lo, hi]. A buffer with fixed data (kf_arg.data) holds its bytes in
 * every variant. */
int kf_data_gen_inputs(const kf_task *t, const kf_extents *ex, kf_rng *rng, int variant, kf_inputs *in);
/* Flags over a variant (0-3), for normal `in` buffers only: KF_DATA_OFFSET moves the mean
 * by 2^(3 + class) to 2^(4 + class) standard deviations, random sign (class 0-3 in
 * KF_DATA_CLASS(c): [8, 16), [16, 32), [32, 64), [64, 128)); KF_DATA_MIXED multiplies
 * each row and each column (a 1-D buffer: each block) by its own power of two,
 * 2^-12..2^12 in all. */
#define KF_DATA_BASE 0x0f
#define KF_DATA_OFFSET 0x10
#define KF_DATA_MIXED 0x20
#define KF_DATA_CLASS_SHIFT 8
#define KF_DATA_CLASS(c) ((c) << KF_DATA_CLASS_SHIFT)
void kf_data_free_inputs(const kf_task *t, kf_inputs *in);
/* kf_data_gen_inputs into the buffers `in` already holds (from an earlier draw at the
 * same extents; NULL ones are allocated): every element is drawn again. A buffer of tens
 * of megabytes freed and allocated again is a fresh mapping whose pages fault in anew,
 * which costs more than drawing it on some virtual machines. */
int kf_data_regen_inputs(const kf_task *t, const kf_extents *ex, kf_rng *rng, int variant, kf_inputs *in);

/* Per-call poison: a sentinel bit pattern per output buffer and the guard bytes. */
typedef struct {
    uint64_t sentinel[KF_MAX_ARGS]; /* low dtype-size bytes are the pattern */
    unsigned char guard[KF_GUARD_BYTES + KF_ALIGN];
} kf_poison;
void kf_data_make_poison(const kf_task *t, kf_rng *rng, kf_poison *p);
/* The poison of a determinism pair's second call: every mantissa bit of each sentinel
 * (the low bit of an integer one, every bit of a byte) and every guard byte flipped, so a
 * kernel that branches on any one bit of what its output buffer held before the call
 * takes the other branch in one of the two calls, whatever was drawn (a random second
 * poison left a one-bit branch untaken 1 time in 4 per pair). */
void kf_data_flip_poison(const kf_task *t, const kf_poison *a, kf_poison *b);

/* Elements of an n-element buffer of esz-byte elements equal to the low esz bytes of pat. */
int64_t kf_data_count_pattern(const void *buf, int64_t n, uint64_t pat, size_t esz);

/* Write the inputs, sentinels and guards of one call into the arena. */
void kf_data_stage(const kf_task *t, const kf_extents *ex, const kf_layout *lay, const kf_inputs *in,
                   const kf_poison *p, unsigned char *arena);

/* After a call: the argument index of the buffer whose preceding guard zone changed
 * first, t->nargs for the guard after the last buffer, or -1 when all are intact. */
int kf_data_check_guards(const kf_task *t, const kf_layout *lay, const kf_poison *p,
                         const unsigned char *arena);
/* Index of the first `in` buffer whose bytes differ from the master copy, or -1. */
int kf_data_check_inputs(const kf_task *t, const kf_extents *ex, const kf_layout *lay, const kf_inputs *in,
                         const unsigned char *arena);

/* Elementwise comparison of one buffer. */
enum { KF_CMP_UNWRITTEN, KF_CMP_NONFINITE, KF_CMP_WRONG };
typedef struct {
    int64_t n, unwritten, nonfinite, wrong;
    int64_t first_bad;      /* index of the first mismatch of any kind, -1 if none */
    int64_t first[3];       /* first index per kind (KF_CMP_*), -1 if none */
    double got[3], want[3]; /* values there */
    int64_t igot, iwant;    /* exact values at first[KF_CMP_WRONG] for integer types */
    int bitwise;            /* a float output under an exact tolerance: compared bit for bit */
    uint64_t gbits, wbits;  /* bitwise: the element's bits at first[KF_CMP_WRONG] */
    double max_abs, max_rel;
} kf_cmp;
void kf_data_compare(kf_dtype type, const void *got, const void *want, int64_t n, double rtol, double atol,
                     const uint64_t *sentinel, kf_cmp *c);
/* The same with the magnitude term: an element passes when |got - want| <= atol +
 * rtol*|want| + mtol*|mag| (mag NULL or mtol 0: no such term; a non-finite mag counts
 * as 0). A float buffer under an exact tolerance (rtol = atol = mtol = 0) is compared
 * bit for bit: the sign of zero and NaN payloads must match (c->bitwise). */
void kf_data_compare_mag(kf_dtype type, const void *got, const void *want, const void *mag, int64_t n,
                         double rtol, double atol, double mtol, const uint64_t *sentinel, kf_cmp *c);
/* Same bytes, or (exact == 0) within tolerance everywhere? */
int kf_data_same(kf_dtype type, const void *a, const void *b, int64_t n, int exact, double rtol, double atol);
int kf_data_same_mag(kf_dtype type, const void *a, const void *b, const void *mag, int64_t n, int exact,
                     double rtol, double atol, double mtol);
/* The inputs of a magnitude run: copies of in's buffers with every float element's sign
 * cleared (|x|, exactly), integer ones unchanged. 0, or -1 out of memory. Free with
 * kf_data_free_inputs. */
int kf_data_abs_inputs(const kf_task *t, const kf_extents *ex, const kf_inputs *in, kf_inputs *out);
double kf_data_get(kf_dtype type, const void *p, int64_t i);
/* Element i of a buffer of type `type` set to v, rounded to nearest even for f16/bf16. */
void kf_data_put(kf_dtype type, void *p, int64_t i, double v);
/* memcpy, in chunks on several threads when large. */
void kf_data_copy(void *dst, const void *src, size_t bytes);
/* "y[3][17]": a flat element index of buffer arg as per-dimension indices. */
void kf_data_format_index(const kf_task *t, const kf_extents *ex, int arg, int64_t flat, char *buf, size_t n);

#endif
