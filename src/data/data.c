/*
 * data.c - buffers, fresh inputs, sentinels, guards and comparison.
 *
 * Guarantees: every output byte is overwritten with a finite, out-of-range sentinel
 * before every call (so a stale correct result can never be sitting there); every
 * buffer is surrounded by random guard bytes; every input is compared byte for byte
 * against the coordinator's master copy after the call (stronger than hashing it). A
 * buffer with fixed data (a task's "data" file) gets those bytes in every input set,
 * every variant alike; the others are drawn.
 */
#include "data.h"

#include <float.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

int kf_data_extents(const kf_task *t, const kf_shape *s, kf_extents *ex, char *err, size_t n) {
    memset(ex, 0, sizeof *ex);
    for (int i = 0; i < t->nsizes && i < KF_MAX_SIZES; i++) ex->size[i] = s->v[i];
    if (kf_task_eval_shape(t, s, ex->count, ex->ival, ex->fval, err, n)) return -1;
    kf_vars v = kf_task_vars(t, s);
    for (int i = 0; i < t->nargs; i++) {
        if (!t->args[i].is_buffer) continue;
        ex->bytes[i] = (size_t)ex->count[i] * kf_dtype_size(t->args[i].type);
        for (int d = 0; d < t->args[i].ndim; d++) /* evaluated fine just above */
            kf_expr_eval(t->args[i].shape[d], &v, &ex->dims[i][d], err, n);
    }
    return 0;
}

void kf_data_format_index(const kf_task *t, const kf_extents *ex, int arg, int64_t flat, char *buf,
                          size_t n) {
    const kf_arg *a = &t->args[arg];
    int64_t idx[KF_MAX_DIMS];
    for (int d = a->ndim - 1; d >= 0; d--) {
        int64_t e = ex->dims[arg][d] > 0 ? ex->dims[arg][d] : 1;
        idx[d] = flat % e;
        flat /= e;
    }
    size_t off = (size_t)snprintf(buf, n, "%s", a->name);
    for (int d = 0; d < a->ndim && off < n; d++)
        off += (size_t)snprintf(buf + off, n - off, "[%lld]", (long long)idx[d]);
}

static size_t align_up(size_t x) { return (x + KF_ALIGN - 1) & ~(size_t)(KF_ALIGN - 1); }

void kf_data_layout_split(const kf_task *t, const kf_extents *ex, size_t base, size_t ro_base,
                          kf_layout *lay) {
    /* Guards fill every byte between buffers: a write one element before or after any
     * buffer lands in a guard, whatever the alignment padding. Two cursors: the writable
     * region's and the read-only one's (the same cursor when there is one region). */
    size_t p[2] = {base, ro_base + base};
    int gi[2][KF_MAX_GUARDS], ng[2] = {0, 0}, any[2] = {0, 0};
    size_t go[2][KF_MAX_GUARDS], gl[2][KF_MAX_GUARDS];
    memset(lay, 0, sizeof *lay);
    lay->ro_base = ro_base;
    for (int i = 0; i < t->nargs; i++) {
        if (!t->args[i].is_buffer) continue;
        int r = ro_base && t->args[i].io == KF_IO_IN;
        size_t off = align_up(p[r] + KF_GUARD_BYTES);
        go[r][ng[r]] = p[r];
        gl[r][ng[r]] = off - p[r];
        gi[r][ng[r]++] = i;
        lay->off[i] = off;
        p[r] = off + ex->bytes[i];
        any[r] = 1;
    }
    for (int r = 0; r < 2; r++) {
        if (r == 1 && !any[1]) break;
        go[r][ng[r]] = p[r];
        gl[r][ng[r]] = KF_GUARD_BYTES;
        gi[r][ng[r]++] = -1;
    }
    for (int r = 0; r < 2; r++)
        for (int g = 0; g < ng[r]; g++) {
            int k = r ? lay->nguards + lay->nro_guards : lay->nguards;
            lay->guard_off[k] = go[r][g];
            lay->guard_len[k] = gl[r][g];
            lay->guard_arg[k] = gi[r][g];
            if (r) lay->nro_guards++;
            else lay->nguards++;
        }
    lay->lo = base;
    lay->end = p[0] + KF_GUARD_BYTES;
    if (any[1]) {
        lay->ro_lo = ro_base + base;
        lay->ro_end = p[1] + KF_GUARD_BYTES;
    }
}

void kf_data_layout(const kf_task *t, const kf_extents *ex, size_t base, kf_layout *lay) {
    kf_data_layout_split(t, ex, base, 0, lay);
}

size_t kf_data_layout_size(const kf_task *t, const kf_extents *ex) {
    kf_layout lay;
    kf_data_layout(t, ex, 0, &lay);
    return align_up(lay.end);
}

static double draw(const kf_init *in, kf_rng *r) {
    switch (in->dist) {
    case KF_DIST_NORMAL: return in->a + in->b * kf_rng_normal(r);
    case KF_DIST_UNIFORM: return in->a + (in->b - in->a) * kf_rng_uniform(r);
    case KF_DIST_INT: return (double)kf_rng_range(r, (int64_t)in->a, (int64_t)in->b);
    }
    return 0;
}

/* IEEE half and bfloat16, round to nearest even (the GPU backends' 16-bit types) */
static uint16_t f32_to_f16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
    uint32_t ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) return sign | (ax > 0x7f800000u ? 0x7e00 : 0x7c00);
    if (ax >= 0x477ff000u) return sign | 0x7c00; /* rounds to infinity */
    if (ax < 0x38800000u) {                      /* below 2^-14: a subnormal half */
        float v;
        memcpy(&v, &ax, 4);
        return sign | (uint16_t)lrintf(v * 16777216.0f);
    }
    uint32_t h = (((ax >> 23) - 112) << 10) | ((ax & 0x7fffffu) >> 13);
    uint32_t rem = ax & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) h++;
    return sign | (uint16_t)h;
}

static float f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff, b;
    float v;
    if (e == 0) {
        v = ldexpf((float)m, -24);
        return sign ? -v : v;
    }
    b = e == 31 ? sign | 0x7f800000u | (m << 13) : sign | ((e + 112) << 23) | (m << 13);
    memcpy(&v, &b, 4);
    return v;
}

static uint16_t f32_to_bf16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40); /* quiet NaN */
    x += 0x7fffu + ((x >> 16) & 1);
    return (uint16_t)(x >> 16);
}

static float bf16_to_f32(uint16_t h) {
    uint32_t b = (uint32_t)h << 16;
    float v;
    memcpy(&v, &b, 4);
    return v;
}

static void put(kf_dtype t, void *p, int64_t i, double v) {
    switch (t) {
    case KF_T_F32: ((float *)p)[i] = (float)v; break;
    case KF_T_F64: ((double *)p)[i] = v; break;
    case KF_T_I32: ((int32_t *)p)[i] = (int32_t)v; break;
    case KF_T_I64: ((int64_t *)p)[i] = (int64_t)v; break;
    case KF_T_U8: ((uint8_t *)p)[i] = (uint8_t)v; break;
    case KF_T_F16: ((uint16_t *)p)[i] = f32_to_f16((float)v); break;
    case KF_T_BF16: ((uint16_t *)p)[i] = f32_to_bf16((float)v); break;
    }
}

void kf_data_put(kf_dtype t, void *p, int64_t i, double v) { put(t, p, i, v); }

double kf_data_get(kf_dtype t, const void *p, int64_t i) {
    switch (t) {
    case KF_T_F32: return ((const float *)p)[i];
    case KF_T_F64: return ((const double *)p)[i];
    case KF_T_I32: return ((const int32_t *)p)[i];
    case KF_T_I64: return (double)((const int64_t *)p)[i];
    case KF_T_U8: return ((const uint8_t *)p)[i];
    case KF_T_F16: return f16_to_f32(((const uint16_t *)p)[i]);
    case KF_T_BF16: return bf16_to_f32(((const uint16_t *)p)[i]);
    }
    return 0;
}

/* Bulk generation in chunks of GEN_CHUNK elements, each from its own stream forked in
 * order from the call's generator: the values do not depend on how many threads fill
 * them. */
#define GEN_CHUNK ((int64_t)1 << 20)

typedef struct {
    const kf_arg *a;
    const kf_init *d;
    void *buf;
    int64_t n;
    kf_rng *rngs;
    _Atomic int failed;
} gen_job;

static void gen_range(const kf_arg *a, const kf_init *d, void *buf, int64_t lo, int64_t hi, kf_rng *r,
                      int *failed) {
    int64_t m = hi - lo;
    if ((a->type == KF_T_F16 || a->type == KF_T_BF16) && d->dist != KF_DIST_INT) {
        /* the bulk f32 streams, rounded once */
        float *tmp = malloc(m ? (size_t)m * sizeof(float) : 1);
        if (!tmp) {
            *failed = 1;
            return;
        }
        if (d->dist == KF_DIST_NORMAL) kf_rng_fill_normal_f32(r, tmp, m, d->a, d->b);
        else kf_rng_fill_uniform_f32(r, tmp, m, d->a, d->b);
        uint16_t *o16 = (uint16_t *)buf + lo;
        if (a->type == KF_T_F16)
            for (int64_t k = 0; k < m; k++) o16[k] = f32_to_f16(tmp[k]);
        else
            for (int64_t k = 0; k < m; k++) o16[k] = f32_to_bf16(tmp[k]);
        free(tmp);
    } else if (a->type == KF_T_F32 && d->dist == KF_DIST_NORMAL) {
        kf_rng_fill_normal_f32(r, (float *)buf + lo, m, d->a, d->b);
    } else if (a->type == KF_T_F32 && d->dist == KF_DIST_UNIFORM) {
        kf_rng_fill_uniform_f32(r, (float *)buf + lo, m, d->a, d->b);
    } else if (d->dist == KF_DIST_INT && !kf_dtype_is_float(a->type)) {
        /* integers exactly, without a trip through double (2^53) */
        for (int64_t k = lo; k < hi; k++) {
            int64_t v = kf_rng_range(r, (int64_t)d->a, (int64_t)d->b);
            switch (a->type) {
            case KF_T_I32: ((int32_t *)buf)[k] = (int32_t)v; break;
            case KF_T_I64: ((int64_t *)buf)[k] = v; break;
            default: ((uint8_t *)buf)[k] = (uint8_t)v; break;
            }
        }
    } else {
        for (int64_t k = lo; k < hi; k++) put(a->type, buf, k, draw(d, r));
    }
}

static void gen_chunk(void *p, int64_t c) {
    gen_job *j = p;
    int64_t lo = c * GEN_CHUNK, hi = lo + GEN_CHUNK < j->n ? lo + GEN_CHUNK : j->n;
    int failed = 0;
    gen_range(j->a, j->d, j->buf, lo, hi, &j->rngs[c], &failed);
    if (failed) j->failed = 1; /* any thread: a plain flag, read after the join */
}

static int gen_buffer(const kf_arg *a, const kf_init *d, void *buf, int64_t n, kf_rng *rng) {
    int64_t nc = n > 0 ? (n + GEN_CHUNK - 1) / GEN_CHUNK : 1;
    gen_job j = {a, d, buf, n, malloc((size_t)nc * sizeof(kf_rng)), 0};

    if (!j.rngs) return -1;
    for (int64_t c = 0; c < nc; c++) kf_rng_fork(rng, &j.rngs[c]);
    if (nc == 1) gen_chunk(&j, 0);
    else kf__parallel(nc, gen_chunk, &j);
    free(j.rngs);
    return j.failed ? -1 : 0;
}

/* Mixed scales: element (r, c) of a buffer with rows times a power of two per row and
 * one per column, 2^(er[r] + ec[c]), each exponent in [-MIX_EXP, MIX_EXP]; a 1-D buffer
 * (or one row) in blocks of 2^j elements, j in [0, 12], one exponent per block in
 * [-2 MIX_EXP, 2 MIX_EXP]. Powers of two: exact, the values' mantissas stay as drawn. */
#define MIX_EXP 6

typedef struct {
    int64_t cols, block; /* 2-D: the last dimension; 1-D: the block length (cols 0) */
    int8_t *er, *ec;     /* per row (or block), per column */
} mix_plan;

static int mix_exp(const mix_plan *m, int64_t k) {
    return m->cols ? m->er[k / m->cols] + m->ec[k % m->cols] : m->er[k / m->block];
}

static int mix_make(const kf_arg *a, const kf_extents *ex, int i, kf_rng *rng, mix_plan *m) {
    int64_t n = ex->count[i], cols = a->ndim >= 2 ? ex->dims[i][a->ndim - 1] : 0;
    memset(m, 0, sizeof *m);
    if (cols > 0 && n / cols >= 2) {
        int64_t rows = n / cols;
        m->cols = cols;
        m->er = malloc((size_t)rows);
        m->ec = malloc((size_t)cols);
        if (!m->er || !m->ec) return -1;
        for (int64_t r = 0; r < rows; r++) m->er[r] = (int8_t)kf_rng_range(rng, -MIX_EXP, MIX_EXP);
        for (int64_t c = 0; c < cols; c++) m->ec[c] = (int8_t)kf_rng_range(rng, -MIX_EXP, MIX_EXP);
    } else {
        m->block = (int64_t)1 << kf_rng_range(rng, 0, 12);
        int64_t nb = n / m->block + 1;
        if (!(m->er = malloc((size_t)nb))) return -1;
        for (int64_t b = 0; b < nb; b++) m->er[b] = (int8_t)kf_rng_range(rng, -2 * MIX_EXP, 2 * MIX_EXP);
    }
    return 0;
}

/* Element k's factor, walked in order from lo without a division per element; floats
 * and 16-bit floats scale in float arithmetic (exact for a power of two within the
 * type's range, and rounded once where it leaves it, as ldexp then a conversion does),
 * other types through double. In chunks on several threads: the result does not depend
 * on their number. */
#define MIX_CHUNK ((int64_t)1 << 18)

typedef struct {
    const kf_arg *a;
    const mix_plan *m;
    void *buf;
    int64_t n;
} mix_job;

static void mix_chunk(void *p, int64_t ch) {
    const mix_job *j = p;
    const mix_plan *m = j->m;
    float f[4 * MIX_EXP + 1];
    for (int e = -2 * MIX_EXP; e <= 2 * MIX_EXP; e++) f[e + 2 * MIX_EXP] = ldexpf(1.0f, e);
    int64_t lo = ch * MIX_CHUNK, hi = lo + MIX_CHUNK < j->n ? lo + MIX_CHUNK : j->n;
    int64_t period = m->cols ? m->cols : m->block;
    int64_t row = lo / period, col = lo % period;
    for (int64_t k = lo; k < hi; k++) {
        int e = m->cols ? m->er[row] + m->ec[col] : m->er[row];
        switch (j->a->type) {
        case KF_T_F32: ((float *)j->buf)[k] *= f[e + 2 * MIX_EXP]; break;
        case KF_T_F16: {
            uint16_t *h = (uint16_t *)j->buf + k;
            *h = f32_to_f16(f16_to_f32(*h) * f[e + 2 * MIX_EXP]);
            break;
        }
        case KF_T_BF16: {
            uint16_t *h = (uint16_t *)j->buf + k;
            *h = f32_to_bf16(bf16_to_f32(*h) * f[e + 2 * MIX_EXP]);
            break;
        }
        default: put(j->a->type, j->buf, k, ldexp(kf_data_get(j->a->type, j->buf, k), e)); break;
        }
        if (++col == period) col = 0, row++;
    }
}

static void mix_apply(const kf_arg *a, const mix_plan *m, void *buf, int64_t n) {
    mix_job j = {a, m, buf, n};
    int64_t nc = (n + MIX_CHUNK - 1) / MIX_CHUNK;
    if (nc <= 1) {
        if (n > 0) mix_chunk(&j, 0);
    } else {
        kf__parallel(nc, mix_chunk, &j);
    }
}

static void mix_free(mix_plan *m) {
    free(m->er);
    free(m->ec);
    m->er = m->ec = NULL;
}

int kf_data_gen_inputs(const kf_task *t, const kf_extents *ex, kf_rng *rng, int variant, kf_inputs *in) {
    memset(in, 0, sizeof *in);
    return kf_data_regen_inputs(t, ex, rng, variant, in);
}

int kf_data_regen_inputs(const kf_task *t, const kf_extents *ex, kf_rng *rng, int variant, kf_inputs *in) {
    double scale = 1.0, tiny = 1.0;
    int tiny_arg = -1;
    const int offset = variant & KF_DATA_OFFSET, mixed = variant & KF_DATA_MIXED;
    const int offset_class = (variant >> KF_DATA_CLASS_SHIFT) & 3;
    variant &= KF_DATA_BASE;
    /* variant 2 rescales normal inputs by 2^k, k in [-2, 2]. Half the time (variant 3:
     * always) ONE normal input, drawn at random, is scaled by 2^k, k in [-12, -3] (variant
     * 3: [-12, -6]) instead: values so small that an epsilon matters (a red team's rmsnorm
     * with eps outside the square root passed every check at 2^±2). One input only: a
     * product of two tiny inputs (a GEMM) falls under atol, where every output passes. */
    if (variant == 2) scale = ldexp(1.0, (int)kf_rng_range(rng, -2, 2));
    if ((variant == 2 && (kf_rng_next(rng) & 1)) || variant == 3) {
        int nn = 0;
        for (int i = 0; i < t->nargs; i++)
            nn +=
                t->args[i].is_buffer && t->args[i].io != KF_IO_OUT && t->args[i].init.dist == KF_DIST_NORMAL;
        if (nn) {
            int pick = (int)kf_rng_range(rng, 0, nn - 1);
            for (int i = 0; i < t->nargs && tiny_arg < 0; i++)
                if (t->args[i].is_buffer && t->args[i].io != KF_IO_OUT &&
                    t->args[i].init.dist == KF_DIST_NORMAL && pick-- == 0)
                    tiny_arg = i;
            tiny = ldexp(1.0, (int)kf_rng_range(rng, -12, variant == 3 ? -6 : -3));
        }
    }
    for (int i = 0; i < t->nargs; i++) {
        const kf_arg *a = &t->args[i];
        if (!a->is_buffer || a->io == KF_IO_OUT) continue;
        if (!in->buf[i]) in->buf[i] = malloc(ex->bytes[i] ? ex->bytes[i] : 1);
        if (!in->buf[i]) {
            kf_data_free_inputs(t, in);
            return -1;
        }
        if (a->data) { /* fixed contents, the same in every call and variant (its size: task load) */
            memcpy(in->buf[i], a->data, a->data_len < ex->bytes[i] ? a->data_len : ex->bytes[i]);
            continue;
        }
        kf_init d = a->init;
        /* Normal inputs have no bounds: variants 2 and 3 rescale them (above).
         * Uniform and int inputs never leave [lo, hi] (a kernel may rely on its domain):
         * variant 2 draws from a random sub-interval instead, half the time a wide one,
         * half the time a narrow one ((hi - lo) / 2^j, j in [4, 24]: nearly constant
         * values, where a float accumulator's rounding no longer averages out; a red
         * team's 32-lane float sum was 104 off at constant 0.3 and passed every check). */
        /* Offsets (normal in buffers): the mean moved by 8 to 128 standard deviations,
         * sign at random, in four classes of magnitude ([8, 16), [16, 32), [32, 64),
         * [64, 128) std) the checker cycles through a check: real activations are not
         * centred, and a one-pass float variance E[x^2] - E[x]^2 loses (mean/std)^2 times
         * the rounding; for softmax it is a row shift. Not inout buffers: a state carried
         * between steps keeps its declared centre. */
        if (offset && d.dist == KF_DIST_NORMAL && a->io == KF_IO_IN) {
            double m = ldexp(1.0 + kf_rng_uniform(rng), 3 + offset_class);
            d.a += (kf_rng_next(rng) & 1 ? m : -m) * d.b;
        }
        if (d.dist == KF_DIST_NORMAL) {
            d.a *= i == tiny_arg ? tiny : scale;
            d.b *= i == tiny_arg ? tiny : scale;
        } else if (variant == 2) {
            double lo = d.a, hi = d.b, nlo, nhi;
            if (kf_rng_next(rng) & 1) {
                nlo = lo + (hi - lo) * 0.5 * kf_rng_uniform(rng);
                nhi = nlo + (hi - nlo) * (0.5 + 0.5 * kf_rng_uniform(rng));
            } else {
                double w = (hi - lo) * ldexp(1.0, -(int)kf_rng_range(rng, 4, 24));
                nlo = lo + (hi - lo - w) * kf_rng_uniform(rng);
                nhi = nlo + w;
            }
            if (d.dist == KF_DIST_INT) nlo = ceil(nlo), nhi = floor(nhi);
            if (nlo < nhi || (d.dist == KF_DIST_INT && nlo == nhi && nlo >= lo && nhi <= hi))
                d.a = nlo, d.b = nhi;
        }
        if (variant == 3 && d.dist != KF_DIST_NORMAL && ex->count[i] > 1) {
            /* half the time two levels (a leading quarter to half near hi, the rest just
             * above lo: a float accumulator grown on the first run loses the small values
             * after it; a 32-lane float sum lost 472 of 524760, tolerance 52, at 2^20
             * elements), half the time nearly constant values throughout (its rounding
             * no longer averages out) */
            double lo = d.a, hi = d.b, span = hi - lo;
            int narrow = (int)(kf_rng_next(rng) & 1); /* else nearly constant throughout */
            int64_t h =
                narrow ? (int64_t)((double)ex->count[i] * (0.25 + 0.25 * kf_rng_uniform(rng))) : ex->count[i];
            if (h < 1) h = 1;
            kf_init top = d, low = d;
            double wt = span * ldexp(1.0, -(int)kf_rng_range(rng, narrow ? 4 : 8, narrow ? 12 : 24));
            double at = narrow ? hi - wt : lo + (span - wt) * kf_rng_uniform(rng);
            top.a = at, top.b = at + wt;
            low.a = lo, low.b = lo + span * ldexp(1.0, -(int)kf_rng_range(rng, 9, 13));
            if (d.dist == KF_DIST_INT) {
                top.a = ceil(top.a), low.b = floor(low.b);
                if (top.a > top.b) top.a = top.b;
                if (low.b < low.a) low.b = low.a;
            }
            size_t es = kf_dtype_size(a->type);
            if (gen_buffer(a, &top, in->buf[i], h, rng) ||
                (h < ex->count[i] &&
                 gen_buffer(a, &low, (char *)in->buf[i] + (size_t)h * es, ex->count[i] - h, rng))) {
                kf_data_free_inputs(t, in);
                return -1;
            }
        } else if (gen_buffer(a, &d, in->buf[i], ex->count[i], rng)) {
            kf_data_free_inputs(t, in);
            return -1;
        }
        /* Mixed scales (normal in buffers): a power of two per row and per column, so
         * rows and columns of very different sizes meet in one call (per-tensor scaling,
         * a quantised GEMM, an accumulator that loses the small rows after the large ones;
         * and values past exp's range in some rows, which a softmax without the max
         * subtraction overflows on, in double too) */
        mix_plan mp = {0, 0, NULL, NULL};
        int mix = mixed && d.dist == KF_DIST_NORMAL && a->io == KF_IO_IN && ex->count[i] > 0;
        if (mix) {
            if (mix_make(a, ex, i, rng, &mp)) {
                mix_free(&mp);
                kf_data_free_inputs(t, in);
                return -1;
            }
            mix_apply(a, &mp, in->buf[i], ex->count[i]);
        }
        if (variant == 1 && ex->count[i] > 0) {
            /* spikes, so that one element dominates sums and maxima and subsampling or
             * skipped elements show: normal inputs x32; uniform and int ones at lo or hi
             * (integer extremes such as INT32_MIN are where abs and negation wrap) */
            int64_t nspike = 1 + ex->count[i] / 512;
            for (int64_t k2 = 0; k2 < nspike; k2++) {
                int64_t k = kf_rng_range(rng, 0, ex->count[i] - 1);
                int hi = (int)(kf_rng_next(rng) & 1);
                if (d.dist == KF_DIST_INT && !kf_dtype_is_float(a->type)) {
                    int64_t v = hi ? (int64_t)a->init.b : (int64_t)a->init.a;
                    switch (a->type) {
                    case KF_T_I32: ((int32_t *)in->buf[i])[k] = (int32_t)v; break;
                    case KF_T_I64: ((int64_t *)in->buf[i])[k] = v; break;
                    default: ((uint8_t *)in->buf[i])[k] = (uint8_t)v; break;
                    }
                } else {
                    double cur = kf_data_get(a->type, in->buf[i], k);
                    /* a position drawn twice is spiked once: x32 twice (x1024) made the
                     * largest shapes' errors grow with their spike count, not the code
                     * (under mixed scales, in the element's own scale) */
                    double own = mix ? ldexp(cur, -mix_exp(&mp, k)) : cur;
                    if (d.dist == KF_DIST_NORMAL && fabs(own - d.a) > 8.0 * d.b) continue;
                    double v = d.dist == KF_DIST_NORMAL ? cur * 32.0 : hi ? d.b : d.a;
                    put(a->type, in->buf[i], k, v);
                }
            }
        }
        if (variant == 1 && ex->count[i] > 0 && (a->type == KF_T_F32 || a->type == KF_T_F64) &&
            (d.dist == KF_DIST_NORMAL || (d.a <= 0.0 && d.b > 0.0))) {
            /* a few subnormals (positive ones inside a bounded domain) and a -0.0 or two:
             * a kernel that flushes them (FTZ/DAZ set by hand, -Ofast's crtfastmath) was
             * wrong under an exact tolerance and never saw one (a red team's transpose) */
            int64_t nsub = 2 + ex->count[i] / 4096;
            for (int64_t k2 = 0; k2 < nsub; k2++) {
                int64_t k = kf_rng_range(rng, 0, ex->count[i] - 1);
                double sub = a->type == KF_T_F32
                                 ? ldexp((double)kf_rng_range(rng, 1, (1 << 23) - 1), -149)
                                 : ldexp((double)kf_rng_range(rng, 1, (int64_t)1 << 52), -1074);
                int neg = d.dist == KF_DIST_NORMAL && (kf_rng_next(rng) & 1);
                if (d.dist != KF_DIST_NORMAL && sub < d.a) continue;
                put(a->type, in->buf[i], k, k2 == 0 && d.dist == KF_DIST_NORMAL ? -0.0 : neg ? -sub : sub);
            }
        }
        if (variant == 2 && d.dist == KF_DIST_NORMAL && ex->count[i] > 0) {
            /* exact zeros: a few elements and one whole row (the last dimension), the
             * padding case where a norm divides by zero without its epsilon */
            int64_t row = ex->dims[i][a->ndim - 1] > 0 ? ex->dims[i][a->ndim - 1] : 1;
            int64_t rows = ex->count[i] / row;
            if (a->ndim < 2 || rows < 2) /* never the whole buffer: a short run instead */
                row = ex->count[i] / 8, rows = row ? ex->count[i] / row : 0;
            int64_t r0 = rows > 0 ? kf_rng_range(rng, 0, rows - 1) : 0;
            for (int64_t k = r0 * row; row > 0 && k < (r0 + 1) * row && k < ex->count[i]; k++)
                put(a->type, in->buf[i], k, 0.0);
            for (int k2 = 0; k2 < 3 && ex->count[i] >= 8; k2++)
                put(a->type, in->buf[i], kf_rng_range(rng, 0, ex->count[i] - 1), 0.0);
        }
        mix_free(&mp);
    }
    return 0;
}

void kf_data_free_inputs(const kf_task *t, kf_inputs *in) {
    for (int i = 0; i < t->nargs && i < KF_MAX_ARGS; i++) {
        free(in->buf[i]);
        in->buf[i] = NULL;
    }
}

void kf_data_make_poison(const kf_task *t, kf_rng *rng, kf_poison *p) {
    memset(p, 0, sizeof *p);
    for (int i = 0; i < t->nargs; i++) {
        const kf_arg *a = &t->args[i];
        if (!a->is_buffer || a->io != KF_IO_OUT) continue;
        uint64_t r = kf_rng_next(rng);
        switch (a->type) {
        case KF_T_F32: { /* |x| in [2^124, 2^127): finite, far outside any sane output */
            uint32_t bits = (uint32_t)((r >> 63) << 31) | (uint32_t)(0xFB + (r >> 40) % 3) << 23 |
                            (uint32_t)(r & 0x7FFFFF);
            p->sentinel[i] = bits;
            break;
        }
        case KF_T_F64: {
            uint64_t bits =
                ((r >> 63) << 63) | (uint64_t)(0x7F0 + (r >> 52) % 14) << 52 | (r & 0xFFFFFFFFFFFFFull);
            p->sentinel[i] = bits;
            break;
        }
        case KF_T_I32: p->sentinel[i] = (uint32_t)(INT32_MIN + (int32_t)(r % 977)); break;
        case KF_T_I64: p->sentinel[i] = (uint64_t)(INT64_MIN + (int64_t)(r % 977)); break;
        case KF_T_F16: /* |x| in [2^15, 65504]: finite, the top binade */
            p->sentinel[i] = (uint64_t)(((r >> 63) << 15) | 0x7800u | (r & 0x3ffu));
            break;
        case KF_T_BF16: /* |x| ~ 2^120 */
            p->sentinel[i] = (uint64_t)(((r >> 63) << 15) | 0x7b80u | (r & 0x7fu));
            break;
        default: p->sentinel[i] = r & 0xFF; break;
        }
    }
    for (size_t k = 0; k < sizeof p->guard; k += 8) {
        uint64_t r = kf_rng_next(rng);
        memcpy(p->guard + k, &r, 8);
    }
}

void kf_data_flip_poison(const kf_task *t, const kf_poison *a, kf_poison *b) {
    *b = *a;
    for (int i = 0; i < t->nargs; i++) {
        const kf_arg *g = &t->args[i];
        if (!g->is_buffer || g->io != KF_IO_OUT) continue;
        switch (g->type) {
        case KF_T_F32: b->sentinel[i] ^= 0x7FFFFFu; break;
        case KF_T_F64: b->sentinel[i] ^= 0xFFFFFFFFFFFFFull; break;
        case KF_T_F16: b->sentinel[i] ^= 0x3FFu; break;
        case KF_T_BF16: b->sentinel[i] ^= 0x7Fu; break;
        case KF_T_I32:
        case KF_T_I64: b->sentinel[i] ^= 1u; break; /* INT_MIN + [0, 977): stays far out */
        default: b->sentinel[i] ^= 0xFFu; break;
        }
    }
    for (size_t k = 0; k < sizeof b->guard; k++) b->guard[k] = (unsigned char)~a->guard[k];
}

int64_t kf_data_count_pattern(const void *buf, int64_t n, uint64_t pat, size_t esz) {
    int64_t k = 0;
    switch (esz) {
    case 2:
        for (int64_t i = 0; i < n; i++) k += ((const uint16_t *)buf)[i] == (uint16_t)pat;
        break;
    case 4:
        for (int64_t i = 0; i < n; i++) k += ((const uint32_t *)buf)[i] == (uint32_t)pat;
        break;
    case 8:
        for (int64_t i = 0; i < n; i++) k += ((const uint64_t *)buf)[i] == pat;
        break;
    default:
        for (int64_t i = 0; i < n; i++) k += ((const uint8_t *)buf)[i] == (uint8_t)pat;
        break;
    }
    return k;
}

static void fill_pattern(unsigned char *dst, size_t bytes, uint64_t pat, size_t esz) {
    if (bytes == 0) return;
    size_t first = esz < bytes ? esz : bytes;
    memcpy(dst, &pat, first); /* little-endian: low bytes are the element */
    size_t done = first;
    while (done < bytes) { /* doubling copy */
        size_t n = done < bytes - done ? done : bytes - done;
        memcpy(dst + done, dst, n);
        done += n;
    }
}

/* Large copies in chunks on several threads (memory bandwidth is per core). */
#define COPY_CHUNK ((size_t)4 << 20)

typedef struct {
    unsigned char *dst;
    const unsigned char *src;
    size_t bytes;
} copy_job;

static void copy_chunk(void *p, int64_t k) {
    const copy_job *j = p;
    size_t lo = (size_t)k * COPY_CHUNK, n = j->bytes - lo < COPY_CHUNK ? j->bytes - lo : COPY_CHUNK;
    memcpy(j->dst + lo, j->src + lo, n);
}

void kf_data_copy(void *dst_, const void *src_, size_t bytes) {
    unsigned char *dst = dst_;
    const unsigned char *src = src_;
    if (bytes <= 2 * COPY_CHUNK) {
        memcpy(dst, src, bytes);
        return;
    }
    copy_job j = {dst, src, bytes};
    kf__parallel((int64_t)((bytes + COPY_CHUNK - 1) / COPY_CHUNK), copy_chunk, &j);
}

/* A sentinel fill: the first chunk by doubling, then copies of it. */
typedef struct {
    unsigned char *dst;
    size_t bytes;
} rep_job;

static void rep_chunk(void *p, int64_t k) {
    const rep_job *j = p;
    size_t lo = (size_t)(k + 1) * COPY_CHUNK, n = j->bytes - lo < COPY_CHUNK ? j->bytes - lo : COPY_CHUNK;
    memcpy(j->dst + lo, j->dst, n);
}

static void big_fill(unsigned char *dst, size_t bytes, uint64_t pat, size_t esz) {
    if (bytes <= 2 * COPY_CHUNK) {
        fill_pattern(dst, bytes, pat, esz);
        return;
    }
    fill_pattern(dst, COPY_CHUNK, pat, esz); /* a multiple of every element size */
    rep_job j = {dst, bytes};
    kf__parallel((int64_t)((bytes - 1) / COPY_CHUNK), rep_chunk, &j);
}

void kf_data_stage(const kf_task *t, const kf_extents *ex, const kf_layout *lay, const kf_inputs *in,
                   const kf_poison *p, unsigned char *arena) {
    for (int g = 0; g < lay->nguards + lay->nro_guards; g++)
        memcpy(arena + lay->guard_off[g], p->guard, lay->guard_len[g]);
    for (int i = 0; i < t->nargs; i++) {
        const kf_arg *a = &t->args[i];
        if (!a->is_buffer) continue;
        if (a->io == KF_IO_OUT)
            big_fill(arena + lay->off[i], ex->bytes[i], p->sentinel[i], kf_dtype_size(a->type));
        else if (ex->bytes[i]) kf_data_copy(arena + lay->off[i], in->buf[i], ex->bytes[i]);
    }
}

int kf_data_check_guards(const kf_task *t, const kf_layout *lay, const kf_poison *p,
                         const unsigned char *arena) {
    /* the writable region's guards only: the read-only region's cannot change */
    for (int g = 0; g < lay->nguards; g++)
        if (memcmp(arena + lay->guard_off[g], p->guard, lay->guard_len[g]))
            return lay->guard_arg[g] >= 0 ? lay->guard_arg[g] : t->nargs;
    return -1;
}

/* Large comparisons in chunks on several threads, as copies are (kf_data_copy). */
typedef struct {
    const unsigned char *a, *b;
    size_t bytes;
    _Atomic int differ;
} eq_job;

static void eq_chunk(void *p, int64_t k) {
    eq_job *j = p;
    size_t lo = (size_t)k * COPY_CHUNK, n = j->bytes - lo < COPY_CHUNK ? j->bytes - lo : COPY_CHUNK;
    if (!atomic_load_explicit(&j->differ, memory_order_relaxed) && memcmp(j->a + lo, j->b + lo, n))
        atomic_store(&j->differ, 1);
}

static int big_equal(const void *a, const void *b, size_t bytes) {
    if (bytes <= 2 * COPY_CHUNK) return !memcmp(a, b, bytes);
    eq_job j = {a, b, bytes, 0};
    kf__parallel((int64_t)((bytes + COPY_CHUNK - 1) / COPY_CHUNK), eq_chunk, &j);
    return !atomic_load(&j.differ);
}

int kf_data_check_inputs(const kf_task *t, const kf_extents *ex, const kf_layout *lay, const kf_inputs *in,
                         const unsigned char *arena) {
    /* an input in the read-only region has no writable mapping in the worker (a write
     * faults, reported as input_modified by the worker): comparing it could never fail */
    for (int i = 0; i < t->nargs; i++)
        if (t->args[i].is_buffer && t->args[i].io == KF_IO_IN && ex->bytes[i] &&
            !(lay->ro_base && lay->off[i] >= lay->ro_base) &&
            !big_equal(arena + lay->off[i], in->buf[i], ex->bytes[i]))
            return i;
    return -1;
}

/* Element i still holds the sentinel, and the right answer is not that very value
 * (a saturating add may return INT32_MIN). u8 has no usable sentinel. */
static int unwritten(const void *got, const void *want, const uint64_t *sentinel, kf_dtype type, size_t esz,
                     int64_t i) {
    return sentinel && type != KF_T_U8 &&
           !memcmp((const unsigned char *)got + (size_t)i * esz, sentinel, esz) &&
           memcmp((const unsigned char *)want + (size_t)i * esz, sentinel, esz);
}

/* The comparison's terms: a bound atol + rtol*|ref| + mtol*M per element, M read from
 * `mag` (the reference's output on the absolute values of its inputs; NULL: no M term),
 * or bit for bit when `bits` (a float output under an exact tolerance). */
typedef struct {
    double rtol, atol, mtol;
    const void *mag;
    int bits;
} cmp_tol;

/* M at element i: finite and non-negative, or 0 (an overflowing magnitude run must not
 * make the bound infinite; the |ref| term still holds). */
static double mag_at(kf_dtype type, const void *mag, int64_t i) {
    if (!mag) return 0;
    double m = fabs(kf_data_get(type, mag, i));
    return isfinite(m) ? m : 0;
}

/* The exact path over [lo, hi): double precision, every kind of failure counted. */
static void cmp_exact(kf_dtype type, const void *got, const void *want, int64_t lo, int64_t hi,
                      const cmp_tol *tol, const uint64_t *sentinel, kf_cmp *c) {
    size_t esz = kf_dtype_size(type);
    const double rtol = tol->rtol, atol = tol->atol;
    for (int64_t i = lo; i < hi; i++) {
        int kind = -1;
        double g, w;
        if (!kf_dtype_is_float(type)) {
            /* integers compare as integers: exact unless the task gives a tolerance */
            int64_t ig, iw;
            switch (type) {
            case KF_T_I32: ig = ((const int32_t *)got)[i], iw = ((const int32_t *)want)[i]; break;
            case KF_T_I64: ig = ((const int64_t *)got)[i], iw = ((const int64_t *)want)[i]; break;
            default: ig = ((const uint8_t *)got)[i], iw = ((const uint8_t *)want)[i]; break;
            }
            g = (double)ig, w = (double)iw;
            /* the sentinel, unless the right answer happens to be that very value */
            if (unwritten(got, want, sentinel, type, esz, i)) {
                c->unwritten++;
                kind = KF_CMP_UNWRITTEN;
            } else if (ig != iw) {
                double d = fabs(g - w);
                if (d > c->max_abs) c->max_abs = d;
                if (iw && d / fabs(w) > c->max_rel) c->max_rel = d / fabs(w);
                if ((rtol == 0 && atol == 0) || d > atol + rtol * fabs(w)) {
                    c->wrong++;
                    kind = KF_CMP_WRONG;
                    if (c->first[kind] < 0) c->igot = ig, c->iwant = iw;
                }
            }
        } else {
            g = kf_data_get(type, got, i), w = kf_data_get(type, want, i);
            const unsigned char *gp = (const unsigned char *)got + (size_t)i * esz,
                                *wp = (const unsigned char *)want + (size_t)i * esz;
            if (unwritten(got, want, sentinel, type, esz, i)) {
                c->unwritten++;
                kind = KF_CMP_UNWRITTEN;
            } else if (tol->bits) {
                /* an exact tolerance means the same bits: a copy or a permutation must not
                 * turn -0.0 into +0.0 or change a NaN's payload (a red team's transpose
                 * did, and "0 == -0" passed it) */
                if (memcmp(gp, wp, esz)) {
                    double d = fabs(g - w);
                    if (isfinite(w) && !isfinite(g)) {
                        c->nonfinite++;
                        kind = KF_CMP_NONFINITE;
                    } else {
                        c->wrong++;
                        kind = KF_CMP_WRONG;
                        if (c->first[kind] < 0) {
                            c->gbits = c->wbits = 0;
                            memcpy(&c->gbits, gp, esz); /* little-endian: the low bytes */
                            memcpy(&c->wbits, wp, esz);
                        }
                    }
                    if (d == d && d > c->max_abs) c->max_abs = d;
                    if (w != 0 && d == d && d / fabs(w) > c->max_rel) c->max_rel = d / fabs(w);
                }
            } else if (isnan(w) || isinf(w)) {
                if (isnan(w) ? !isnan(g) : g != w) {
                    c->wrong++;
                    kind = KF_CMP_WRONG;
                }
            } else if (!isfinite(g)) {
                c->nonfinite++;
                kind = KF_CMP_NONFINITE;
            } else {
                double d = fabs(g - w);
                if (d > c->max_abs) c->max_abs = d;
                if (w != 0 && d / fabs(w) > c->max_rel) c->max_rel = d / fabs(w);
                if (d > atol + rtol * fabs(w) + tol->mtol * mag_at(type, tol->mag, i)) {
                    c->wrong++;
                    kind = KF_CMP_WRONG;
                }
            }
        }
        if (kind >= 0 && c->first[kind] < 0) {
            c->first[kind] = i;
            c->got[kind] = g;
            c->want[kind] = w;
        }
        if (kind >= 0 && c->first_bad < 0) c->first_bad = i;
    }
}

#define CMP_BLOCK 256

/* Widen a block of 16-bit floats (exactly). */
static void widen16(kf_dtype type, const uint16_t *h, float *f) {
    if (type == KF_T_BF16) {
        for (int k = 0; k < CMP_BLOCK; k++) {
            uint32_t a = (uint32_t)h[k] << 16;
            memcpy(&f[k], &a, 4);
        }
    } else {
        for (int k = 0; k < CMP_BLOCK; k++) f[k] = f16_to_f32(h[k]);
    }
}

/* Float blocks the compiler vectorises: a block is clean when every element is within
 * HALF the tolerance in float arithmetic (NaN and Inf fail the comparison) and none
 * holds the sentinel's bits. A block that is not clean takes the exact path; the next
 * block tries the fast one again. 16-bit types are widened first (exactly). */
static void cmp_fast(kf_dtype type, const void *got, const void *want, int64_t lo, int64_t hi,
                     const cmp_tol *tol, const uint64_t *sentinel, kf_cmp *c) {
    const float ha = (float)(tol->atol * 0.5), hr = (float)(tol->rtol * 0.5),
                hm = tol->mag ? (float)(tol->mtol * 0.5) : 0.0f;
    float gw[CMP_BLOCK], ww[CMP_BLOCK], mw[CMP_BLOCK];
    static const float zeros[CMP_BLOCK];
    uint32_t sb = sentinel ? (uint32_t)*sentinel : 0x7fc00001u; /* f32: a NaN never seen */
    uint16_t sh = sentinel ? (uint16_t)*sentinel : 0;
    int has16 = sentinel != NULL;
    int64_t i = lo;
    for (; i + CMP_BLOCK <= hi; i += CMP_BLOCK) {
        const float *g, *w, *m = zeros;
        int bad = 0;
        if (type == KF_T_F32) {
            g = (const float *)got + i, w = (const float *)want + i;
            if (tol->mag) m = (const float *)tol->mag + i;
            const uint32_t *gb = (const uint32_t *)got + i;
            for (int k = 0; k < CMP_BLOCK; k++) bad |= gb[k] == sb;
        } else {
            const uint16_t *g16 = (const uint16_t *)got + i, *w16 = (const uint16_t *)want + i;
            for (int k = 0; k < CMP_BLOCK; k++) bad |= has16 & (g16[k] == sh);
            widen16(type, g16, gw);
            widen16(type, w16, ww);
            if (tol->mag) widen16(type, (const uint16_t *)tol->mag + i, mw), m = mw;
            g = gw, w = ww;
        }
        float mabs = 0, mrel = 0;
        for (int k = 0; k < CMP_BLOCK; k++) {
            float d = fabsf(g[k] - w[k]), aw = fabsf(w[k]), am = fabsf(m[k]);
            /* a non-finite reference or result always takes the exact path: with w = Inf,
             * d = Inf and hr * aw = Inf, so "d <= ha + hr * aw" would hold for any g (and a
             * non-finite magnitude too, which the exact path reads as 0) */
            bad |= !(d <= ha + hr * aw + hm * am) | !(aw <= FLT_MAX) | !(fabsf(g[k]) <= FLT_MAX) |
                   !(am <= FLT_MAX);
            mabs = d > mabs ? d : mabs;
            float rel = aw > 0 ? d / aw : 0.0f;
            mrel = rel > mrel ? rel : mrel;
        }
        if (bad) {
            cmp_exact(type, got, want, i, i + CMP_BLOCK, tol, sentinel, c);
            continue;
        }
        if (mabs > c->max_abs) c->max_abs = mabs;
        if (mrel > c->max_rel) c->max_rel = mrel;
    }
    cmp_exact(type, got, want, i, hi, tol, sentinel, c);
}

/* Bit for bit: blocks with the same bytes are clean (an element equal to the reference
 * is never "unwritten"); the others take the exact path. */
static void cmp_bits(kf_dtype type, const void *got, const void *want, int64_t lo, int64_t hi,
                     const cmp_tol *tol, const uint64_t *sentinel, kf_cmp *c) {
    size_t esz = kf_dtype_size(type);
    for (int64_t i = lo; i < hi; i += CMP_BLOCK) {
        int64_t e = hi - i < CMP_BLOCK ? hi : i + CMP_BLOCK;
        if (memcmp((const char *)got + (size_t)i * esz, (const char *)want + (size_t)i * esz,
                   (size_t)(e - i) * esz))
            cmp_exact(type, got, want, i, e, tol, sentinel, c);
    }
}

static void cmp_range(kf_dtype type, const void *got, const void *want, int64_t lo, int64_t hi,
                      const cmp_tol *tol, const uint64_t *sentinel, kf_cmp *c) {
    /* half tolerances that are not finite floats: the fast test would mean nothing */
    int sane = tol->atol * 0.5 <= FLT_MAX && tol->rtol * 0.5 <= FLT_MAX && tol->mtol * 0.5 <= FLT_MAX;
    if (tol->bits) cmp_bits(type, got, want, lo, hi, tol, sentinel, c);
    else if (sane && (type == KF_T_F32 || type == KF_T_F16 || type == KF_T_BF16))
        cmp_fast(type, got, want, lo, hi, tol, sentinel, c);
    else cmp_exact(type, got, want, lo, hi, tol, sentinel, c);
}

static void cmp_init(kf_cmp *c, int64_t n) {
    memset(c, 0, sizeof *c);
    c->n = n;
    c->first_bad = -1;
    c->first[0] = c->first[1] = c->first[2] = -1;
}

#define CMP_CHUNK ((int64_t)1 << 20)

typedef struct {
    kf_dtype type;
    const void *got, *want;
    int64_t n;
    const cmp_tol *tol;
    const uint64_t *sentinel;
    kf_cmp *part;
} cmp_job;

static void cmp_chunk(void *p, int64_t k) {
    cmp_job *j = p;
    int64_t lo = k * CMP_CHUNK, hi = lo + CMP_CHUNK < j->n ? lo + CMP_CHUNK : j->n;
    cmp_init(&j->part[k], j->n);
    cmp_range(j->type, j->got, j->want, lo, hi, j->tol, j->sentinel, &j->part[k]);
}

void kf_data_compare_mag(kf_dtype type, const void *got, const void *want, const void *mag, int64_t n,
                         double rtol, double atol, double mtol, const uint64_t *sentinel, kf_cmp *c) {
    cmp_init(c, n);
    cmp_tol tol = {rtol, atol, mag ? mtol : 0, mtol > 0 ? mag : NULL, 0};
    tol.bits = kf_dtype_is_float(type) && rtol == 0 && atol == 0 && tol.mtol == 0;
    c->bitwise = tol.bits;
    int64_t nc = (n + CMP_CHUNK - 1) / CMP_CHUNK;
    kf_cmp *part = nc > 1 && kf__nthreads() > 1 ? malloc((size_t)nc * sizeof *part) : NULL;
    if (!part) {
        cmp_range(type, got, want, 0, n, &tol, sentinel, c);
        return;
    }
    /* large buffers in chunks on several threads; merged in index order, so the result
     * is the one a single pass gives */
    cmp_job j = {type, got, want, n, &tol, sentinel, part};
    kf__parallel(nc, cmp_chunk, &j);
    for (int64_t k = 0; k < nc; k++) {
        const kf_cmp *q = &part[k];
        c->unwritten += q->unwritten;
        c->nonfinite += q->nonfinite;
        c->wrong += q->wrong;
        if (q->max_abs > c->max_abs) c->max_abs = q->max_abs;
        if (q->max_rel > c->max_rel) c->max_rel = q->max_rel;
        for (int kind = 0; kind < 3; kind++)
            if (c->first[kind] < 0 && q->first[kind] >= 0) {
                c->first[kind] = q->first[kind];
                c->got[kind] = q->got[kind];
                c->want[kind] = q->want[kind];
                if (kind == KF_CMP_WRONG)
                    c->igot = q->igot, c->iwant = q->iwant, c->gbits = q->gbits, c->wbits = q->wbits;
            }
        if (c->first_bad < 0) c->first_bad = q->first_bad;
    }
    free(part);
}

void kf_data_compare(kf_dtype type, const void *got, const void *want, int64_t n, double rtol, double atol,
                     const uint64_t *sentinel, kf_cmp *c) {
    kf_data_compare_mag(type, got, want, NULL, n, rtol, atol, 0, sentinel, c);
}

int kf_data_same_mag(kf_dtype type, const void *a, const void *b, const void *mag, int64_t n, int exact,
                     double rtol, double atol, double mtol) {
    if (exact) return !memcmp(a, b, (size_t)n * kf_dtype_size(type));
    /* stop at the first failing block: most callers ask about trivial outputs that fail
     * at once (degenerate-task and stale checks) */
    for (int64_t i = 0; i < n; i += 4096) {
        int64_t m = n - i < 4096 ? n - i : 4096;
        size_t off = (size_t)i * kf_dtype_size(type);
        kf_cmp c;
        kf_data_compare_mag(type, (const char *)a + off, (const char *)b + off,
                            mag ? (const char *)mag + off : NULL, m, rtol, atol, mtol, NULL, &c);
        if (c.first_bad >= 0) return 0;
    }
    return 1;
}

int kf_data_same(kf_dtype type, const void *a, const void *b, int64_t n, int exact, double rtol,
                 double atol) {
    return kf_data_same_mag(type, a, b, NULL, n, exact, rtol, atol, 0);
}

int kf_data_abs_inputs(const kf_task *t, const kf_extents *ex, const kf_inputs *in, kf_inputs *out) {
    memset(out, 0, sizeof *out);
    for (int i = 0; i < t->nargs; i++) {
        const kf_arg *a = &t->args[i];
        if (!a->is_buffer || a->io == KF_IO_OUT || !in->buf[i]) continue;
        if (!(out->buf[i] = malloc(ex->bytes[i] ? ex->bytes[i] : 1))) {
            kf_data_free_inputs(t, out);
            return -1;
        }
        memcpy(out->buf[i], in->buf[i], ex->bytes[i]);
        if (!kf_dtype_is_float(a->type)) continue; /* integers (indices) as they are */
        /* |x| by clearing the sign bit: exact for every value, NaN and -0.0 included */
        unsigned char *p = out->buf[i];
        size_t es = kf_dtype_size(a->type);
        for (int64_t k = 0; k < ex->count[i]; k++) p[(size_t)k * es + es - 1] &= 0x7f;
    }
    return 0;
}
/* ---- memory earlier calls used (kf_spent) ---------------------------------------- */

int kf_data_spent_init(kf_spent *sp) {
    memset(sp, 0, sizeof *sp);
    for (size_t got = 0; got < sizeof sp->pat;) {
        ssize_t n = getrandom(sp->pat + got, sizeof sp->pat - got, 0);
        if (n <= 0) return -1;
        got += (size_t)n;
    }
    sp->on = 1;
    return 0;
}

static void pat_fill1(const kf_spent *sp, unsigned char *arena, size_t lo, size_t hi) {
    while (lo < hi) {
        size_t ph = lo % KF_SPENT_PAT, n = KF_SPENT_PAT - ph < hi - lo ? KF_SPENT_PAT - ph : hi - lo;
        memcpy(arena + lo, sp->pat + ph, n);
        lo += n;
    }
}

/* The first byte in [lo, hi) that differs from the pattern, or hi. */
static size_t pat_diff1(const kf_spent *sp, const unsigned char *arena, size_t lo, size_t hi) {
    while (lo < hi) {
        size_t ph = lo % KF_SPENT_PAT, n = KF_SPENT_PAT - ph < hi - lo ? KF_SPENT_PAT - ph : hi - lo;
        if (memcmp(arena + lo, sp->pat + ph, n))
            for (size_t k = 0; k < n; k++)
                if (arena[lo + k] != sp->pat[ph + k]) return lo + k;
        lo += n;
    }
    return hi;
}

/* Ranges of tens of megabytes (the spans of the largest shapes, every call) in chunks on
 * several threads; the first difference is the lowest chunk's. */
typedef struct {
    const kf_spent *sp;
    unsigned char *arena;
    size_t lo, hi;
    size_t *first; /* per chunk (pat_diff) */
} pat_job;

static void pat_fill_chunk(void *p, int64_t k) {
    const pat_job *j = p;
    size_t a = j->lo + (size_t)k * COPY_CHUNK, b = j->hi - a < COPY_CHUNK ? j->hi : a + COPY_CHUNK;
    pat_fill1(j->sp, j->arena, a, b);
}

static void pat_diff_chunk(void *p, int64_t k) {
    const pat_job *j = p;
    size_t a = j->lo + (size_t)k * COPY_CHUNK, b = j->hi - a < COPY_CHUNK ? j->hi : a + COPY_CHUNK;
    j->first[k] = pat_diff1(j->sp, j->arena, a, b);
}

static void pat_fill(const kf_spent *sp, unsigned char *arena, size_t lo, size_t hi) {
    if (hi <= lo || hi - lo <= 2 * COPY_CHUNK) {
        pat_fill1(sp, arena, lo, hi);
        return;
    }
    pat_job j = {sp, arena, lo, hi, NULL};
    kf__parallel((int64_t)((hi - lo + COPY_CHUNK - 1) / COPY_CHUNK), pat_fill_chunk, &j);
}

static size_t pat_diff(const kf_spent *sp, const unsigned char *arena, size_t lo, size_t hi) {
    int64_t nc = hi > lo ? (int64_t)((hi - lo + COPY_CHUNK - 1) / COPY_CHUNK) : 0;
    size_t *first = nc > 2 ? malloc((size_t)nc * sizeof *first) : NULL;
    if (!first) return pat_diff1(sp, arena, lo, hi);
    pat_job j = {sp, (unsigned char *)arena, lo, hi, first};
    kf__parallel(nc, pat_diff_chunk, &j);
    size_t at = hi;
    for (int64_t k = 0; k < nc && at == hi; k++) {
        size_t b = hi - (lo + (size_t)k * COPY_CHUNK) < COPY_CHUNK ? hi : lo + (size_t)(k + 1) * COPY_CHUNK;
        if (first[k] < b) at = first[k];
    }
    free(first);
    return at;
}

static int spent_cmp(const void *a, const void *b) {
    const kf_spent_range *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Add [lo, hi) minus the span [clo, chi), poisoned. */
static void spent_add(kf_spent *sp, unsigned char *arena, size_t lo, size_t hi, size_t clo, size_t chi,
                      int arg) {
    size_t cut[2][2] = {{lo, hi < clo ? hi : clo}, {lo > chi ? lo : chi, hi}};
    for (int k = 0; k < 2; k++) {
        size_t a = cut[k][0], b = cut[k][1];
        if (a >= b || sp->n >= KF_SPENT_MAX) continue;
        pat_fill(sp, arena, a, b);
        sp->r[sp->n++] = (kf_spent_range){a, b, lo, sp->calls, arg};
    }
}

static void spent_found(kf_spent *sp, const kf_spent_range *r, size_t at) {
    if (sp->bad) return;
    sp->bad = 1;
    sp->bad_range = *r;
    sp->bad_at = at;
    sp->bad_seen = sp->calls;
}

void kf_data_spent_retire(kf_spent *sp, const kf_layout *next, unsigned char *arena) {
    if (!sp->on) return;
    size_t clo = next->lo, chi = next->end;
    for (int i = 0; i < sp->n && !sp->bad; i++) {
        size_t lo = sp->r[i].lo > clo ? sp->r[i].lo : clo, hi = sp->r[i].hi < chi ? sp->r[i].hi : chi;
        size_t d = lo < hi ? pat_diff(sp, arena, lo, hi) : hi;
        if (d < hi) spent_found(sp, &sp->r[i], d);
    }
    /* what the next call stages is no longer earlier memory; the ranges are disjoint
     * and the span one interval, so at most one range straddles it (room is kept) */
    kf_spent_range keep[KF_SPENT_MAX + 1];
    int k = 0;
    for (int i = 0; i < sp->n; i++) {
        kf_spent_range r = sp->r[i], x = r;
        if (r.hi <= clo || r.lo >= chi) {
            keep[k++] = r;
            continue;
        }
        if (r.lo < clo) x.hi = clo, keep[k++] = x;
        x = r;
        if (r.hi > chi && k <= KF_SPENT_MAX) x.lo = chi, keep[k++] = x;
    }
    if (k > KF_SPENT_MAX) k = KF_SPENT_MAX; /* cannot happen: coalescing keeps room */
    memcpy(sp->r, keep, (size_t)k * sizeof keep[0]);
    sp->n = k;
    if (sp->have_prev) {
        /* the previous call's writable span, piece by piece (guards, then each buffer
         * up to the next guard), so a report can say which buffer sat there */
        const kf_layout *p = &sp->prev;
        if (sp->n + 2 * p->nguards + 2 > KF_SPENT_MAX) { /* coalesce: names are lost */
            qsort(sp->r, (size_t)sp->n, sizeof sp->r[0], spent_cmp);
            int m = 0;
            for (int i = 0; i < sp->n; i++) {
                if (m && sp->r[m - 1].hi == sp->r[i].lo) {
                    sp->r[m - 1].hi = sp->r[i].hi;
                    sp->r[m - 1].arg = -2;
                    if (sp->r[i].call > sp->r[m - 1].call) sp->r[m - 1].call = sp->r[i].call;
                } else {
                    sp->r[m++] = sp->r[i];
                }
            }
            sp->n = m;
            /* still too many islands: join the closest neighbours whose gap holds no part
             * of the next call's span nor of the previous one's (added below: the ranges
             * stay disjoint), poisoning the gap (never-used bytes) too */
            while (sp->n + 2 * p->nguards + 2 > KF_SPENT_MAX) {
                int best = -1;
                size_t gap = (size_t)-1;
                for (int i = 0; i + 1 < sp->n; i++) {
                    size_t a = sp->r[i].hi, b = sp->r[i + 1].lo;
                    if (b - a < gap && (b <= clo || a >= chi) && (b <= p->lo || a >= p->end))
                        gap = b - a, best = i;
                }
                if (best < 0) break;
                pat_fill(sp, arena, sp->r[best].hi, sp->r[best + 1].lo);
                sp->r[best].hi = sp->r[best + 1].hi;
                sp->r[best].arg = -2;
                if (sp->r[best + 1].call > sp->r[best].call) sp->r[best].call = sp->r[best + 1].call;
                memmove(&sp->r[best + 1], &sp->r[best + 2], (size_t)(sp->n - best - 2) * sizeof sp->r[0]);
                sp->n--;
            }
        }
        for (int g = 0; g < p->nguards; g++) {
            size_t glo = p->guard_off[g], ghi = glo + p->guard_len[g];
            spent_add(sp, arena, glo, ghi, clo, chi, -1);
            int a = p->guard_arg[g];
            if (a >= 0 && g + 1 < p->nguards)
                spent_add(sp, arena, p->off[a], p->guard_off[g + 1], clo, chi, a);
        }
    }
    sp->prev = *next;
    sp->have_prev = 1;
    sp->calls++;
}

void kf_data_spent_unused(kf_spent *sp, unsigned char *arena, size_t bytes) {
    if (!sp->on || !bytes || sp->n >= KF_SPENT_MAX) return;
    pat_fill(sp, arena, 0, bytes);
    sp->r[sp->n++] = (kf_spent_range){0, bytes, 0, 0, -3};
}

int kf_data_spent_check(kf_spent *sp, const unsigned char *arena) {
    if (!sp->on) return 0;
    for (int i = 0; i < sp->n && !sp->bad; i++) {
        size_t d = pat_diff(sp, arena, sp->r[i].lo, sp->r[i].hi);
        if (d < sp->r[i].hi) spent_found(sp, &sp->r[i], d);
    }
    return sp->bad;
}
