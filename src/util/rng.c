/*
 * rng.c - the input RNG: the ChaCha20 keystream (OpenSSL), keyed from getrandom() in the
 * coordinator (or from --seed), and the per-buffer xoshiro256** streams forked from it.
 *
 * It draws task inputs, sentinels and guards. The key never leaves the coordinator, and
 * no amount of observed output predicts the next value (util.h says why a fast generator
 * alone is not enough). The bulk fills are what a check spends its input time in: this
 * file is compiled with -O3 (CMakeLists.txt).
 */
#define _GNU_SOURCE
#include "util.h"

#include <errno.h>
#include <math.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

static int rng_key(kf_rng *r, const unsigned char key[32]) {
    static const unsigned char iv[16] = {0};
    memset(r, 0, sizeof *r);
    EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
    if (!c || !EVP_EncryptInit_ex(c, EVP_chacha20(), NULL, key, iv)) {
        EVP_CIPHER_CTX_free(c);
        return -1;
    }
    r->evp = c;
    r->pos = sizeof r->buf; /* empty: refilled on first use */
    return 0;
}

int kf_rng_seed(kf_rng *r, uint64_t seed) {
    unsigned char key[32];
    unsigned int n = 0;
    unsigned char msg[8 + 16] = "kforge-rng-seed:";
    memcpy(msg + 16, &seed, 8);
    if (!EVP_Digest(msg, sizeof msg, key, &n, EVP_sha256(), NULL)) return -1;
    return rng_key(r, key);
}

int kf_rng_seed_secret(kf_rng *r) {
    unsigned char key[32];
    for (int i = 0; i < 4; i++) {
        uint64_t v = kf__secret_u64();
        memcpy(key + 8 * i, &v, 8);
    }
    return rng_key(r, key);
}

void kf_rng_free(kf_rng *r) {
    if (r && r->evp) EVP_CIPHER_CTX_free(r->evp);
    if (r) r->evp = NULL;
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

int kf_rng_split(kf_rng *parent, kf_rng *child) {
    unsigned char key[32];
    for (int i = 0; i < 4; i++) {
        uint64_t v = kf_rng_next(parent);
        memcpy(key + 8 * i, &v, 8);
    }
    int rc = rng_key(child, key);
    memset(key, 0, sizeof key);
    return rc;
}

void kf_rng_fork(kf_rng *parent, kf_rng *child) {
    child->evp = NULL;
    child->has_spare = 0;
    do {
        for (int i = 0; i < 4; i++) child->s[i] = kf_rng_next(parent);
    } while (!(child->s[0] | child->s[1] | child->s[2] | child->s[3]));
}

uint64_t kf_rng_next(kf_rng *r) {
    if (!r->evp) { /* xoshiro256** */
        uint64_t *s = r->s;
        uint64_t res = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = rotl(s[3], 45);
        return res;
    }
    if (r->pos + 8 > sizeof r->buf) {
        static const unsigned char zeros[sizeof r->buf];
        int outl = 0;
        if (!r->evp || !EVP_EncryptUpdate(r->evp, r->buf, &outl, zeros, (int)sizeof zeros)) {
            /* never hand out a predictable stream: fail loudly */
            fprintf(stderr, "kforge: fatal: the ChaCha20 input stream failed\n");
            abort();
        }
        r->pos = 0;
    }
    uint64_t v;
    memcpy(&v, r->buf + r->pos, 8);
    r->pos += 8;
    return v;
}

double kf_rng_uniform(kf_rng *r) { return (double)(kf_rng_next(r) >> 11) * 0x1.0p-53; }

/* Normals by Marsaglia and Tsang's ziggurat (128 layers, 32-bit resolution): about
 * one random word and no logarithm per value, which matters when a check fills
 * millions of elements. The tables are built once. */
static double zig_k[128], zig_w[128], zig_f[128];

static void zig_init(void) {
    const double m1 = 2147483648.0, vn = 9.91256303526217e-3;
    double dn = 3.442619855899, tn = dn;
    double q = vn / exp(-0.5 * dn * dn);
    zig_k[0] = (dn / q) * m1;
    zig_k[1] = 0;
    zig_w[0] = q / m1;
    zig_w[127] = dn / m1;
    zig_f[0] = 1.0;
    zig_f[127] = exp(-0.5 * dn * dn);
    for (int i = 126; i >= 1; i--) {
        dn = sqrt(-2.0 * log(vn / dn + exp(-0.5 * dn * dn)));
        zig_k[i + 1] = (dn / tn) * m1;
        tn = dn;
        zig_f[i] = exp(-0.5 * dn * dn);
        zig_w[i] = dn / m1;
    }
}

/* Outside the rectangles' cores: the tail (layer 0) or the wedge test, then a new
 * draw (Marsaglia and Tsang's nfix). */
static double zig_slow(kf_rng *r, int32_t hz, int iz) {
    for (;;) {
        double x = (double)hz * zig_w[iz];
        if (iz == 0) { /* the tail beyond r = 3.4426 */
            double xx, y;
            do {
                xx = -log(1.0 - kf_rng_uniform(r)) * 0.2904764;
                y = -log(1.0 - kf_rng_uniform(r));
            } while (y + y < xx * xx);
            return hz > 0 ? 3.442620 + xx : -3.442620 - xx;
        }
        if (zig_f[iz] + kf_rng_uniform(r) * (zig_f[iz - 1] - zig_f[iz]) < exp(-0.5 * x * x)) return x;
        hz = (int32_t)(uint32_t)kf_rng_next(r);
        iz = hz & 127;
        if (fabs((double)hz) < zig_k[iz]) return (double)hz * zig_w[iz];
    }
}

double kf_rng_normal(kf_rng *r) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, zig_init);
    int32_t hz = (int32_t)(uint32_t)kf_rng_next(r);
    int iz = hz & 127;
    if (fabs((double)hz) < zig_k[iz]) return (double)hz * zig_w[iz];
    return zig_slow(r, hz, iz);
}

void kf_rng_fill_normal_f32(kf_rng *r, float *out, int64_t n, double mean, double std) {
    (void)kf_rng_normal(r); /* builds the tables once */
    int64_t i = 0;
    while (i < n) {
        uint64_t w = kf_rng_next(r);
        /* two 32-bit draws per word: the common case of the ziggurat needs one */
        for (int h = 0; h < 2 && i < n; h++, i++) {
            int32_t hz = (int32_t)(uint32_t)(h ? w >> 32 : w);
            int iz = hz & 127;
            double x = (double)hz * zig_w[iz];
            if (fabs((double)hz) >= zig_k[iz]) x = zig_slow(r, hz, iz); /* rare */
            out[i] = (float)(mean + std * x);
        }
    }
}

void kf_rng_fill_uniform_f32(kf_rng *r, float *out, int64_t n, double lo, double hi) {
    double span = hi - lo;
    for (int64_t i = 0; i < n; i++) out[i] = (float)(lo + span * kf_rng_uniform(r));
}

int64_t kf_rng_range(kf_rng *r, int64_t lo, int64_t hi) {
    if (hi <= lo) return lo;
    uint64_t span = (uint64_t)(hi - lo) + 1;
    if (span == 0) return (int64_t)kf_rng_next(r);
    return lo + (int64_t)(kf_rng_next(r) % span);
}

uint64_t kf__secret_u64(void) {
    uint64_t v = 0;
    size_t got = 0;
    while (got < sizeof v) {
        ssize_t n = getrandom((char *)&v + got, sizeof v - got, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            /* No entropy source: fall back to clocks and addresses (still unknown to
             * a candidate, which is built before the draw). */
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            v ^= (uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15ULL ^ (uint64_t)(uintptr_t)&v;
            break;
        }
        got += (size_t)n;
    }
    return v;
}
