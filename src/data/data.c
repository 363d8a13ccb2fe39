/*
 * data.c - buffers, fresh inputs, sentinels, guards and comparison.
 *
 * Guarantees: every output byte is overwritten with a finite, out-of-range sentinel
 * before every call (so a stale correct result can never be sitting there); every
 * buffer is surrounded by random guard bytes; every input is compared byte for byte
 * against the coordinator's master copy after the call (stronger than hashing it).
 */
#include "data.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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

void kf_data_format_index(const kf_task *t, const kf_extents *ex, int arg, int64_t flat,
                          char *buf, size_t n) {
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

void kf_data_layout(const kf_task *t, const kf_extents *ex, size_t base, kf_layout *lay) {
    /* Guards fill every byte between buffers: a write one element before or after any
     * buffer lands in a guard, whatever the alignment padding. */
    size_t p = base;
    int g = 0;
    memset(lay, 0, sizeof *lay);
    for (int i = 0; i < t->nargs; i++) {
        if (!t->args[i].is_buffer) continue;
        size_t off = align_up(p + KF_GUARD_BYTES);
        lay->guard_off[g] = p;
        lay->guard_len[g++] = off - p;
        lay->off[i] = off;
        p = off + ex->bytes[i];
    }
    lay->guard_off[g] = p;
    lay->guard_len[g++] = KF_GUARD_BYTES;
    lay->nguards = g;
    lay->end = p + KF_GUARD_BYTES;
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

int kf_data_gen_inputs(const kf_task *t, const kf_extents *ex, kf_rng *rng, int variant,
                       kf_inputs *in) {
    memset(in, 0, sizeof *in);
    double scale = 1.0;
    if (variant == 2) scale = ldexp(1.0, (int)kf_rng_range(rng, -2, 2));
    for (int i = 0; i < t->nargs; i++) {
        const kf_arg *a = &t->args[i];
        if (!a->is_buffer || a->io == KF_IO_OUT) continue;
        in->buf[i] = malloc(ex->bytes[i] ? ex->bytes[i] : 1);
        if (!in->buf[i]) {
            kf_data_free_inputs(t, in);
            return -1;
        }
        kf_init d = a->init;
        /* Normal inputs have no bounds: variant 2 rescales them by 2^k, k in [-2, 2].
         * Uniform and int inputs never leave [lo, hi] (a kernel may rely on its domain):
         * variant 2 draws from a random sub-interval instead. */
        if (d.dist == KF_DIST_NORMAL) {
            d.a *= scale;
            d.b *= scale;
        } else if (variant == 2) {
            double lo = d.a, hi = d.b;
            double nlo = lo + (hi - lo) * 0.5 * kf_rng_uniform(rng);
            double nhi = nlo + (hi - nlo) * (0.5 + 0.5 * kf_rng_uniform(rng));
            if (d.dist == KF_DIST_INT) nlo = ceil(nlo), nhi = floor(nhi);
            if (nlo < nhi) d.a = nlo, d.b = nhi;
        }
        kf_rng fast;
        kf_rng_fork(rng, &fast);
        if ((a->type == KF_T_F16 || a->type == KF_T_BF16) && d.dist != KF_DIST_INT) {
            /* the bulk f32 streams, rounded once */
            float *tmp = malloc(ex->count[i] ? (size_t)ex->count[i] * sizeof(float) : 1);
            if (!tmp) {
                kf_data_free_inputs(t, in);
                return -1;
            }
            if (d.dist == KF_DIST_NORMAL) kf_rng_fill_normal_f32(&fast, tmp, ex->count[i], d.a, d.b);
            else kf_rng_fill_uniform_f32(&fast, tmp, ex->count[i], d.a, d.b);
            uint16_t *o16 = in->buf[i];
            if (a->type == KF_T_F16)
                for (int64_t k = 0; k < ex->count[i]; k++) o16[k] = f32_to_f16(tmp[k]);
            else
                for (int64_t k = 0; k < ex->count[i]; k++) o16[k] = f32_to_bf16(tmp[k]);
            free(tmp);
        } else if (a->type == KF_T_F32 && d.dist == KF_DIST_NORMAL) {
            kf_rng_fill_normal_f32(&fast, in->buf[i], ex->count[i], d.a, d.b);
        } else if (a->type == KF_T_F32 && d.dist == KF_DIST_UNIFORM) {
            kf_rng_fill_uniform_f32(&fast, in->buf[i], ex->count[i], d.a, d.b);
        } else if (d.dist == KF_DIST_INT && !kf_dtype_is_float(a->type)) {
            /* integers exactly, without a trip through double (2^53) */
            for (int64_t k = 0; k < ex->count[i]; k++) {
                int64_t v = kf_rng_range(&fast, (int64_t)d.a, (int64_t)d.b);
                switch (a->type) {
                case KF_T_I32: ((int32_t *)in->buf[i])[k] = (int32_t)v; break;
                case KF_T_I64: ((int64_t *)in->buf[i])[k] = v; break;
                default: ((uint8_t *)in->buf[i])[k] = (uint8_t)v; break;
                }
            }
        } else {
            for (int64_t k = 0; k < ex->count[i]; k++) put(a->type, in->buf[i], k, draw(&d, &fast));
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
                    double v = d.dist == KF_DIST_NORMAL ? kf_data_get(a->type, in->buf[i], k) * 32.0
                               : hi ? d.b : d.a;
                    put(a->type, in->buf[i], k, v);
                }
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
            uint64_t bits = ((r >> 63) << 63) | (uint64_t)(0x7F0 + (r >> 52) % 14) << 52 |
                            (r & 0xFFFFFFFFFFFFFull);
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

int64_t kf_data_count_pattern(const void *buf, int64_t n, uint64_t pat, size_t esz) {
    int64_t k = 0;
    switch (esz) {
    case 2: for (int64_t i = 0; i < n; i++) k += ((const uint16_t *)buf)[i] == (uint16_t)pat; break;
    case 4: for (int64_t i = 0; i < n; i++) k += ((const uint32_t *)buf)[i] == (uint32_t)pat; break;
    case 8: for (int64_t i = 0; i < n; i++) k += ((const uint64_t *)buf)[i] == pat; break;
    default: for (int64_t i = 0; i < n; i++) k += ((const uint8_t *)buf)[i] == (uint8_t)pat; break;
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

void kf_data_stage(const kf_task *t, const kf_extents *ex, const kf_layout *lay,
                   const kf_inputs *in, const kf_poison *p, unsigned char *arena) {
    for (int g = 0; g < lay->nguards; g++) memcpy(arena + lay->guard_off[g], p->guard, lay->guard_len[g]);
    for (int i = 0; i < t->nargs; i++) {
        const kf_arg *a = &t->args[i];
        if (!a->is_buffer) continue;
        if (a->io == KF_IO_OUT)
            fill_pattern(arena + lay->off[i], ex->bytes[i], p->sentinel[i], kf_dtype_size(a->type));
        else if (ex->bytes[i])
            memcpy(arena + lay->off[i], in->buf[i], ex->bytes[i]);
    }
}

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
void kf_data_flush(const unsigned char *arena, const kf_layout *lay) {
    /* clflush from the coordinator evicts the lines from every core's caches; the
     * candidate's process cannot skip or shorten it */
    for (size_t p = lay->guard_off[0] & ~(size_t)63; p < lay->end; p += 64)
        _mm_clflush(arena + p);
    _mm_mfence();
}
#else
void kf_data_flush(const unsigned char *arena, const kf_layout *lay) {
    /* no portable line flush: stream through a buffer larger than common LLCs */
    static unsigned char *junk;
    static const size_t n = 256u << 20;
    (void)arena;
    (void)lay;
    if (!junk && !(junk = calloc(1, n))) return;
    for (size_t i = 0; i < n; i += 64) junk[i]++;
}
#endif

int kf_data_check_guards(const kf_task *t, const kf_layout *lay, const kf_poison *p,
                         const unsigned char *arena) {
    /* guard g sits before buffer number g (and the last one after the last buffer) */
    int bufidx[KF_MAX_ARGS + 1], nb = 0;
    for (int i = 0; i < t->nargs; i++)
        if (t->args[i].is_buffer) bufidx[nb++] = i;
    for (int g = 0; g < lay->nguards; g++)
        if (memcmp(arena + lay->guard_off[g], p->guard, lay->guard_len[g]))
            return g < nb ? bufidx[g] : t->nargs;
    return -1;
}

int kf_data_check_inputs(const kf_task *t, const kf_extents *ex, const kf_layout *lay,
                         const kf_inputs *in, const unsigned char *arena) {
    for (int i = 0; i < t->nargs; i++)
        if (t->args[i].is_buffer && t->args[i].io == KF_IO_IN && ex->bytes[i] &&
            memcmp(arena + lay->off[i], in->buf[i], ex->bytes[i]))
            return i;
    return -1;
}

/* Element i still holds the sentinel, and the right answer is not that very value
 * (a saturating add may return INT32_MIN). u8 has no usable sentinel. */
static int unwritten(const void *got, const void *want, const uint64_t *sentinel, kf_dtype type,
                     size_t esz, int64_t i) {
    return sentinel && type != KF_T_U8 &&
           !memcmp((const unsigned char *)got + (size_t)i * esz, sentinel, esz) &&
           memcmp((const unsigned char *)want + (size_t)i * esz, sentinel, esz);
}

void kf_data_compare(kf_dtype type, const void *got, const void *want, int64_t n, double rtol,
                     double atol, const uint64_t *sentinel, kf_cmp *c) {
    memset(c, 0, sizeof *c);
    c->n = n;
    c->first_bad = -1;
    c->first[0] = c->first[1] = c->first[2] = -1;
    size_t esz = kf_dtype_size(type);
    int64_t i = 0;
    if (type == KF_T_F32) {
        /* Fast path, in blocks the compiler vectorises: a block is clean when every
         * element is within HALF the tolerance in float arithmetic (NaN and Inf fail the
         * comparison) and none holds the sentinel. The first block that is not clean, and
         * everything after it, takes the exact double-precision path below. */
        const float *g = got, *w = want;
        const uint32_t *gb = got;
        uint32_t sb = sentinel ? (uint32_t)*sentinel : 0x7fc00001u; /* a NaN: never seen */
        const float ha = (float)(atol * 0.5), hr = (float)(rtol * 0.5);
        while (i + 256 <= n) {
            int bad = 0;
            float mabs = 0, mrel = 0;
            for (int64_t k = i; k < i + 256; k++) {
                float d = fabsf(g[k] - w[k]), aw = fabsf(w[k]);
                bad |= !(d <= ha + hr * aw) | (gb[k] == sb);
                mabs = d > mabs ? d : mabs;
                float rel = aw > 0 ? d / aw : 0.0f;
                mrel = rel > mrel ? rel : mrel;
            }
            if (bad) break;
            if (mabs > c->max_abs) c->max_abs = mabs;
            if (mrel > c->max_rel) c->max_rel = mrel;
            i += 256;
        }
    }
    if (!kf_dtype_is_float(type)) {
        /* integers compare as integers: exact unless the task gives a tolerance */
        for (; i < n; i++) {
            int64_t g, w;
            switch (type) {
            case KF_T_I32: g = ((const int32_t *)got)[i], w = ((const int32_t *)want)[i]; break;
            case KF_T_I64: g = ((const int64_t *)got)[i], w = ((const int64_t *)want)[i]; break;
            default: g = ((const uint8_t *)got)[i], w = ((const uint8_t *)want)[i]; break;
            }
            int kind = -1;
            /* the sentinel, unless the right answer happens to be that very value */
            if (unwritten(got, want, sentinel, type, esz, i)) {
                c->unwritten++;
                kind = KF_CMP_UNWRITTEN;
            } else if (g != w) {
                double d = fabs((double)g - (double)w);
                if (d > c->max_abs) c->max_abs = d;
                if (w && d / fabs((double)w) > c->max_rel) c->max_rel = d / fabs((double)w);
                if ((rtol == 0 && atol == 0) || d > atol + rtol * fabs((double)w)) {
                    c->wrong++;
                    kind = KF_CMP_WRONG;
                    if (c->first[kind] < 0) c->igot = g, c->iwant = w;
                }
            }
            if (kind >= 0 && c->first[kind] < 0) {
                c->first[kind] = i;
                c->got[kind] = (double)g;
                c->want[kind] = (double)w;
            }
            if (kind >= 0 && c->first_bad < 0) c->first_bad = i;
        }
        return;
    }
    for (; i < n; i++) {
        double g = kf_data_get(type, got, i), w = kf_data_get(type, want, i);
        int kind = -1;
        if (unwritten(got, want, sentinel, type, esz, i)) {
            c->unwritten++;
            kind = KF_CMP_UNWRITTEN;
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
            if (d > atol + rtol * fabs(w)) {
                c->wrong++;
                kind = KF_CMP_WRONG;
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

int kf_data_same(kf_dtype type, const void *a, const void *b, int64_t n, int exact,
                 double rtol, double atol) {
    if (exact) return !memcmp(a, b, (size_t)n * kf_dtype_size(type));
    /* stop at the first failing block: most callers ask about trivial outputs that fail
     * at once (degenerate-task and stale checks) */
    for (int64_t i = 0; i < n; i += 4096) {
        int64_t m = n - i < 4096 ? n - i : 4096;
        size_t off = (size_t)i * kf_dtype_size(type);
        kf_cmp c;
        kf_data_compare(type, (const char *)a + off, (const char *)b + off, m, rtol, atol, NULL, &c);
        if (c.first_bad >= 0) return 0;
    }
    return 1;
}
