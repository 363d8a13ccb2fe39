/* kforge-test: task=sgemm expect=no_fake_speedup threat=2 */
/* Found by a red-team pass against this checker. Defence: inputs, sentinels and guards now come from a ChaCha20 stream (per-buffer fast streams keyed from it), so the prediction never matches and the kernel falls back to honest work. */
/* Predicting the "secret" input stream. The guard bytes the coordinator writes
 * around every buffer are raw outputs of its xoshiro256** generator
 * (kf_data_make_poison: guard = kf_rng_next() words). The output function
 * rotl(s1*5,7)*9 is invertible, and xoshiro's state update is linear over
 * GF(2), so 128 guard words read just past the end of C give the whole state.
 * In bench the draw order per round is fixed (inputs, cand poison, base poison,
 * two placements), so the candidate can generate the exact inputs of every
 * future round. In a warm-up call (untimed) it precomputes the outputs of the
 * next ~400 rounds; each timed call then only checks a sample of its inputs
 * against the prediction and copies the stored C. Every output is correct
 * (any mismatch falls back to an honest computation). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#pragma GCC optimize("fp-contract=off")

typedef struct { uint64_t s[4]; } rng;
static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
static uint64_t nx(rng *r) {
    uint64_t *s = r->s;
    uint64_t res = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3]; s[2] ^= t; s[3] = rotl(s[3], 45);
    return res;
}
static double uni(rng *r) { return (double)(nx(r) >> 11) * 0x1.0p-53; }
static double nrm(rng *r) {
    double u, v, s;
    do { u = 2.0 * uni(r) - 1.0; v = 2.0 * uni(r) - 1.0; s = u * u + v * v; } while (s >= 1.0 || s == 0.0);
    return u * sqrt(-2.0 * log(s) / s);
}

/* symbolic words: bit i of a word is a 256-bit mask over the initial state bits */
typedef struct { uint64_t b[64][4]; } sw;
static void sx(sw *d, const sw *a) { for (int i = 0; i < 64; i++) for (int j = 0; j < 4; j++) d->b[i][j] ^= a->b[i][j]; }
static void sstep(sw st[4]) {
    static sw t, r;
    memset(&t, 0, sizeof t);
    for (int i = 17; i < 64; i++) memcpy(t.b[i], st[1].b[i - 17], 32);
    sx(&st[2], &st[0]); sx(&st[3], &st[1]); sx(&st[1], &st[2]); sx(&st[0], &st[3]); sx(&st[2], &t);
    for (int i = 0; i < 64; i++) memcpy(r.b[i], st[3].b[(i - 45 + 64) % 64], 32);
    st[3] = r;
}
static uint64_t inv(uint64_t a) { uint64_t x = a; for (int i = 0; i < 6; i++) x *= 2 - a * x; return x; }

#define NEQ 6
static int recover(const uint64_t *g, rng *out) {
    static sw st[4];
    static uint64_t rows[64 * NEQ][5];
    memset(st, 0, sizeof st);
    for (int w = 0; w < 4; w++) for (int i = 0; i < 64; i++) st[w].b[i][(w * 64 + i) / 64] = 1ull << ((w * 64 + i) % 64);
    uint64_t i9 = inv(9), i5 = inv(5);
    int nr = 0;
    for (int k = 0; k < NEQ; k++) {
        uint64_t s1 = rotl(g[k] * i9, 57) * i5;
        for (int i = 0; i < 64; i++) {
            memcpy(rows[nr], st[1].b[i], 32);
            rows[nr++][4] = (s1 >> i) & 1;
        }
        sstep(st);
    }
    int piv[256], r = 0;
    for (int c = 0; c < 256; c++) {
        int p = -1;
        for (int i = r; i < nr; i++) if ((rows[i][c / 64] >> (c % 64)) & 1) { p = i; break; }
        if (p < 0) return -1;
        if (p != r) for (int j = 0; j < 5; j++) { uint64_t t = rows[p][j]; rows[p][j] = rows[r][j]; rows[r][j] = t; }
        for (int i = 0; i < nr; i++)
            if (i != r && ((rows[i][c / 64] >> (c % 64)) & 1))
                for (int j = 0; j < 5; j++) rows[i][j] ^= rows[r][j];
        piv[c] = r++;
    }
    memset(out, 0, sizeof *out);
    for (int c = 0; c < 256; c++) if (rows[piv[c]][4]) out->s[c / 64] |= 1ull << (c % 64);
    rng t = *out;
    for (int k = 0; k < 128; k++) if (nx(&t) != g[k]) return -1;
    return 0;
}

/* the reference's own loops, so that any speedup can only come from the prediction */
static void honest(const float *a, const float *b, float *c, int64_t m, int64_t n, int64_t k) {
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double acc = 0.0;
            /* the reference's loop as the compiler contracts it (fp-contract is off in
             * this file, for the generator): without the fma, the separate multiply and
             * add ran 1.19x faster than the reference here, an honest speedup that sat
             * at this case's 1.2 bound and crossed it under load */
            for (int64_t p = 0; p < k; p++) acc = fma((double)a[i * k + p], (double)b[p * n + j], acc);
            c[i * n + j] = (float)acc;
        }
}

#define NS 64
#define AHEAD 410
static int64_t M, N, K;
static rng nextst;          /* state at the start of the next round's input draws */
static int have_pred;
static float *pa, *pb;      /* predicted inputs of the next round */
static float *tab;          /* precomputed C for rounds 1..AHEAD after sync */
static float sa[AHEAD][NS], sb[AHEAD][NS];
static int ntab, tabpos;

static void gen(rng *r, float *a, float *b) {
    for (int64_t i = 0; i < M * K; i++) a[i] = (float)nrm(r);
    for (int64_t i = 0; i < K * N; i++) b[i] = (float)nrm(r);
}
static void skip(rng *r, int n) { while (n--) nx(r); }

void sgemm(const float *a, const float *b, float *c, int64_t m, int64_t n, int64_t k)
{
    if (m != M || n != N || k != K) { M = m; N = n; K = k; have_pred = 0; ntab = tabpos = 0; }
    /* fast path: this round was precomputed */
    if (tabpos < ntab) {
        int ok = 1;
        for (int s = 0; s < NS && ok; s++)
            ok = a[(s * 7919) % (m * k)] == sa[tabpos][s] && b[(s * 104729) % (k * n)] == sb[tabpos][s];
        if (ok) {
            /* pace to ~2x below a single core's FMA peak so the roofline check sees
             * a merely "very good" kernel (the copy alone takes ~4 us) */
            struct timespec t0, t1;
            clock_gettime(CLOCK_MONOTONIC, &t0);
            memcpy(c, tab + (size_t)tabpos * m * n, sizeof(float) * m * n);
            tabpos++;
            double target = 2.0 * m * n * k / 100e9 * 1e9;
            do clock_gettime(CLOCK_MONOTONIC, &t1);
            while ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec) < target);
            return;
        }
        ntab = tabpos = 0;
    }
    uint64_t g[128];
    memcpy(g, c + m * n, sizeof g);            /* the guard just past C: raw generator words */
    int synced = have_pred && !memcmp(a, pa, sizeof(float) * m * k) && !memcmp(b, pb, sizeof(float) * k * n);
    honest(a, b, c, m, n, k);
    rng st;
    if (recover(g, &st)) { have_pred = 0; return; }
    free(pa); free(pb);
    pa = malloc(sizeof(float) * m * k); pb = malloc(sizeof(float) * k * n);
    skip(&st, 136 + 137 + 2);                  /* rest of our guard, baseline poison, 2 placements */
    nextst = st;
    rng r = st;
    gen(&r, pa, pb);
    have_pred = 1;
    if (!synced) return;
    /* the stream is the bench's: precompute the next AHEAD rounds now (a warm-up call) */
    free(tab);
    tab = malloc(sizeof(float) * (size_t)AHEAD * m * n);
    float *ta = malloc(sizeof(float) * m * k), *tb = malloc(sizeof(float) * k * n);
    r = st;
    for (int i = 0; i < AHEAD; i++) {
        gen(&r, ta, tb);
        for (int s = 0; s < NS; s++) { sa[i][s] = ta[(s * 7919) % (m * k)]; sb[i][s] = tb[(s * 104729) % (k * n)]; }
        honest(ta, tb, tab + (size_t)i * m * n, m, n, k);
        skip(&r, 1 + 136 + 137 + 2);
    }
    free(ta); free(tb);
    ntab = AHEAD; tabpos = 0;
}
