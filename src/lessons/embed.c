/*
 * embed.c - the embeddings that lessons are ranked by (docs/lessons.md, "Embedding").
 *
 * Built in, offline: "hashgram-v2-512" (docs/lessons.md "Embedding"). Words are runs of
 * [A-Za-z0-9_], lower-cased, stop words dropped; an identifier also gives its parts
 * (split at '_', camelCase and letter-digit changes: "__shfl_xor_sync" -> shfl, xor,
 * sync; "blockDim" -> block, dim; "float4" -> float, 4). Features, each hashed (FNV-1a
 * 64, then a mixer) to a dimension and a sign (the "hashing trick"): a word's stem (a
 * light suffix stripper), bigrams of stems, a word's character 3-5-grams sharing one
 * weight, and the concept of a small built-in synonym table of kernel-optimisation
 * vocabulary (coalesced/contiguous, smem/shared memory, tile/tiling...). A feature seen
 * c times weighs w (1 + ln c) (sublinear term frequency). The weights are
 * kf_lessons__knobs, chosen on the tuning half of the labelled queries; changing any of
 * them is a new embedding (stored vectors are comparable only under one setting).
 *
 * Or an OpenAI-compatible endpoint: POST {url}/embeddings {"model", "input": [texts]}
 * through libcurl, answers L2-normalised here. Every request has a connect and a total
 * timeout and a capped reply; any failure is KF_EBACKEND naming the URL, never a crash
 * or a hang. The API key goes into one header and no message.
 */
#define _GNU_SOURCE
#include "lessons.h"

#include <curl/curl.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define REPLY_CAP (64u << 20)
#define MAX_DIM KF_LESSONS_MAX_DIM

static const char *const stop_words[] = {
    "a",  "an",  "the",  "and",   "or",    "of",    "to",   "in",   "on",   "for",  "with",  "is",   "are",
    "be", "by",  "it",   "its",   "as",    "at",    "this", "that", "from", "when", "than",  "then", "into",
    "so", "but", "we",   "our",   "you",   "your",  "has",  "have", "was",  "were", "which", "will", "can",
    "if", "do",  "does", "there", "these", "those", "what", "how",  "my",   "me",   "i",     NULL};

static int is_stop(const char *w, size_t n) {
    for (int i = 0; stop_words[i]; i++)
        if (strlen(stop_words[i]) == n && !memcmp(stop_words[i], w, n)) return 1;
    return 0;
}

static int word_char(unsigned char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

void kf_lessons__words(const char *text, void (*fn)(void *, const char *, size_t), void *arg) {
    char w[64];
    const unsigned char *p = (const unsigned char *)text;
    while (*p) {
        while (*p && !word_char(*p)) p++;
        size_t n = 0;
        while (*p && word_char(*p)) {
            if (n < sizeof w - 1) w[n++] = (char)(*p >= 'A' && *p <= 'Z' ? *p + 32 : *p);
            p++;
        }
        size_t s = 0, e = n;
        while (s < n && w[s] == '_') s++;
        while (e > s && w[e - 1] == '_') e--;
        if (e - s >= 2 && !is_stop(w + s, e - s)) {
            w[n] = 0;
            fn(arg, w, n);
        }
    }
}

static uint64_t fnv(uint64_t h, const char *p, size_t n) {
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

static uint64_t mix(uint64_t h) { /* splitmix64's finaliser: spreads FNV's low bits */
    h ^= h >> 30;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 27;
    h *= 0x94d049bb133111ebull;
    return h ^ (h >> 31);
}

static void add(float *v, uint64_t h, float w) {
    h = mix(h);
    v[h % KF_LESSONS_HASH_DIM] += (h >> 63) ? -w : w;
}

static void normalise(float *v, int dim) {
    double ss = 0;
    for (int i = 0; i < dim; i++) ss += (double)v[i] * v[i];
    if (ss <= 0) return;
    float inv = (float)(1.0 / sqrt(ss));
    for (int i = 0; i < dim; i++) v[i] *= inv;
}

/* ---- hashgram-v2: words, stems, concepts ------------------------------------------- */

/* The knobs of the built-in embedding, fixed for a given name (changing one is a new
 * embedding: stored vectors are only comparable under one setting). Exposed to the
 * benchmark, which tries others on the tuning half of the labelled queries. */
kf_lessons_hash_knobs kf_lessons__knobs = {
    .word = 1.0f, .bigram = 0.5f, .grams = 0.5f, .parts = 0.5f, .concept = 1.5f};

/* A light English suffix stripper (not Porter's: a few rules that fold the inflections
 * kernel advice uses - "coalesced", "coalescing", "tiles", "tiling", "vectorised",
 * "vectorization" - onto one stem). The stem keeps at least 3 letters. */
static size_t stem(const char *w, size_t n, char *out) {
    static const struct {
        const char *suf, *rep;
    } rules[] = {{"izations", "ize"}, {"isations", "ize"}, {"ization", "ize"}, {"isation", "ize"},
                 {"ations", "ate"},   {"ation", "ate"},    {"ising", "ize"},   {"izing", "ize"},
                 {"ised", "ize"},     {"ized", "ize"},     {"ises", "ize"},    {"izes", "ize"},
                 {"ise", "ize"},      {"ings", ""},        {"ing", ""},        {"ies", "y"},
                 {"edly", ""},        {"ed", ""},          {"ers", "er"},      {"ness", ""},
                 {"ly", ""},          {"es", ""},          {"s", ""},          {NULL, NULL}};
    memcpy(out, w, n);
    out[n] = 0;
    int alpha = 1;
    for (size_t i = 0; i < n; i++) alpha &= w[i] >= 'a' && w[i] <= 'z';
    if (!alpha || n < 4 || (n >= 2 && w[n - 1] == 's' && w[n - 2] == 's')) return n; /* "pass", "fp32" */
    for (int r = 0; rules[r].suf; r++) {
        size_t ls = strlen(rules[r].suf), lr = strlen(rules[r].rep);
        if (n > ls + 2 && !memcmp(w + n - ls, rules[r].suf, ls)) {
            size_t m = n - ls;
            memcpy(out + m, rules[r].rep, lr);
            m += lr;
            /* "tiling" -> "til" -> "tile", "coalescing" -> "coalesc": drop a final 'e' */
            if (m > 3 && out[m - 1] == 'e') m--;
            if (m >= 2 && out[m - 1] == out[m - 2] && out[m - 1] != 'l' && out[m - 1] != 's' &&
                out[m - 1] != 'z')
                m--; /* "unrolled" keeps its l, "padding" -> "pad" */
            out[m] = 0;
            return m;
        }
    }
    if (out[n - 1] == 'e' && n > 3) out[--n] = 0; /* "tile" and "tiles" meet on "til" */
    return n;
}

/* Built-in synonyms of kernel-optimisation vocabulary: a word whose stem starts with one
 * of a concept's prefixes also gives the concept as a feature ("#coalesce"). Hand-written
 * from general CUDA/CPU tuning terms, not from the labelled queries; deliberately small.
 * A prefix ending in '$' must match the whole stem. */
static const char *const concepts[][12] = {
    {"#coalesce", "coalesc", "uncoalesc", "contigu", "consecutiv", "stride$", "strid", NULL},
    {"#smem", "smem", "shared$", "scratchpad", "lds$", NULL},
    {"#tile", "til", "blocking$", "panel", "cache-block", NULL},
    {"#vector", "vectori", "vectoriz", "float4", "float2", "simd", "avx", "sse", "lane$", "wide$", "128-bit",
     NULL},
    {"#reduce", "reduc", "reduct", "butterfl", "accumulat", "sum$", "sums$", NULL},
    {"#warp", "warp", "shuffl", "shfl", NULL},
    {"#barrier", "barrier", "syncthread", "sync$", "synchroniz", NULL},
    {"#register", "regist", "reg$", "regs$", "spill", NULL},
    {"#occupancy", "occupanc", "idl", "underutiliz", "sms$", "wave", NULL},
    {"#bandwidth", "bandwidth", "dram", "hbm", "roofline", "traffic", "memory-bound", "round$", NULL},
    {"#overflow", "overflow", "underflow", "nan$", "nans$", "inf$", "stabl", "instabil", NULL},
    {"#unroll", "unroll", "ilp$", NULL},
    {"#halfprec", "fp16", "bf16", "half$", "bfloat16", "fp8", "nv_bfloat16", NULL},
    {"#fuse", "fus", "fused", "fusion", "one-pass", "single-pass", NULL},
    {"#bank", "bank", "swizzl", "pad$", NULL},
    {"#tail", "tail", "remainder", "edg", "boundar", "odd$", "out-of-bound", "guard", NULL},
    {"#prefetch", "prefetch", "double-buffer", "pipelin", "cp.async", "async", "overlap", NULL},
    {"#atomic", "atomic", "nondetermin", "determinis", NULL},
    {"#launch", "launch", "graph", "overhead", NULL},
};

static int concept_match(const char *pre, const char *s, size_t n) {
    size_t lp = strlen(pre);
    if (lp && pre[lp - 1] == '$') return lp - 1 == n && !memcmp(pre, s, n);
    return n >= lp && !memcmp(pre, s, lp);
}

/* One feature and how often the text has it. */
typedef struct {
    uint64_t h;
    float w; /* the weight of one occurrence */
    int count;
} feat;

typedef struct {
    feat *f;
    int n, cap;
    int *slot; /* open addressing over f by (h, w): index + 1, 0 empty; 2 * cap slots */
    char prev[64];
    size_t nprev;
    int oom; /* a feature was dropped for memory */
} fstate;

static size_t slot_of(uint64_t h, float w, size_t mask) {
    uint32_t wb;
    memcpy(&wb, &w, sizeof wb);
    return (size_t)mix(h ^ ((uint64_t)wb << 17)) & mask;
}

static void put(fstate *s, uint64_t h, float w) {
    if (w == 0) return;
    if (s->cap) {
        size_t mask = 2 * (size_t)s->cap - 1;
        for (size_t i = slot_of(h, w, mask); s->slot[i]; i = (i + 1) & mask) {
            feat *f = &s->f[s->slot[i] - 1];
            if (f->h == h && f->w == w) {
                f->count++;
                return;
            }
        }
    }
    if (s->n == s->cap) { /* grow both, rehash */
        int cap = s->cap ? 2 * s->cap : 256;
        feat *f = realloc(s->f, sizeof *f * (size_t)cap);
        int *sl = calloc(2 * (size_t)cap, sizeof *sl);
        if (f) s->f = f;
        if (!f || !sl) { /* out of memory: a feature less, never a crash; the caller hears */
            free(sl);
            s->oom = 1;
            return;
        }
        free(s->slot);
        s->slot = sl;
        s->cap = cap;
        size_t mask = 2 * (size_t)cap - 1;
        for (int k = 0; k < s->n; k++) {
            size_t i = slot_of(s->f[k].h, s->f[k].w, mask);
            while (s->slot[i]) i = (i + 1) & mask;
            s->slot[i] = k + 1;
        }
    }
    size_t mask = 2 * (size_t)s->cap - 1, i = slot_of(h, w, mask);
    while (s->slot[i]) i = (i + 1) & mask;
    s->slot[i] = s->n + 1;
    s->f[s->n++] = (feat){h, w, 1};
}

static void put_grams(fstate *s, const char *w, size_t n, float weight) {
    char b[68];
    b[0] = '<';
    memcpy(b + 1, w, n);
    b[n + 1] = '>';
    size_t m = n + 2;
    int count = 0;
    for (size_t g = 3; g <= 5; g++)
        if (m >= g) count += (int)(m - g + 1);
    if (!count || weight == 0) return;
    float wt = weight / sqrtf((float)count);
    for (size_t g = 3; g <= 5; g++)
        for (size_t i = 0; i + g <= m; i++) put(s, fnv(0xcbf29ce484222325ull ^ g, b + i, g), wt);
}

/* A word's unigram (by stem), its concepts and its character grams, at weight w. */
static void put_word(fstate *s, const char *w, size_t n, float w_word, float w_grams) {
    char st[80];
    size_t m = stem(w, n, st);
    put(s, fnv(0xcbf29ce484222325ull, st, m), w_word);
    put_grams(s, w, n, w_grams);
    for (size_t c = 0; c < sizeof concepts / sizeof concepts[0]; c++)
        for (int k = 1; concepts[c][k]; k++)
            if (concept_match(concepts[c][k], st, m) || concept_match(concepts[c][k], w, n)) {
                put(s, fnv(0x5ca1ab1e, concepts[c][0], strlen(concepts[c][0])),
                    kf_lessons__knobs.concept * w_word);
                break;
            }
}

static int is_upper(char c) { return c >= 'A' && c <= 'Z'; }
static int is_lower(char c) { return c >= 'a' && c <= 'z'; }
static int is_digit(char c) { return c >= '0' && c <= '9'; }

/* The parts of an identifier: split at '_', at a lower-to-upper change (camelCase), and
 * between letters and digits ("fp32" -> fp, 32; "float4" -> float, 4). raw keeps the
 * original case; the parts are lower-cased. */
static void put_parts(fstate *s, const char *raw, size_t n) {
    char part[64];
    size_t i = 0, np = 0;
    int parts = 0;
    size_t starts[32], lens[32];
    while (i <= n) {
        int cut = i == n || raw[i] == '_';
        if (!cut && i > 0 && raw[i - 1] != '_') {
            cut = (is_lower(raw[i - 1]) && is_upper(raw[i])) ||
                  (is_digit(raw[i - 1]) != is_digit(raw[i]) && (is_digit(raw[i - 1]) || is_digit(raw[i])));
        }
        if (cut) {
            if (np >= 1 && parts < 32) {
                starts[parts] = i - np;
                lens[parts++] = np;
            }
            np = 0;
            if (i < n && raw[i] != '_') np = 1;
        } else {
            np++;
        }
        i++;
    }
    if (parts < 2) return;
    for (int k = 0; k < parts; k++) {
        size_t m = lens[k];
        if (m >= sizeof part) continue;
        for (size_t j = 0; j < m; j++)
            part[j] = (char)(is_upper(raw[starts[k] + j]) ? raw[starts[k] + j] + 32 : raw[starts[k] + j]);
        part[m] = 0;
        int digits = is_digit(part[0]);
        if ((m < 2 && !digits) || is_stop(part, m)) continue;
        put_word(s, part, m, kf_lessons__knobs.parts, digits ? 0 : kf_lessons__knobs.parts);
    }
}

/* Words as runs of [A-Za-z0-9_] (case kept for the camelCase split). */
static void v2_text(fstate *s, const char *text) {
    const unsigned char *p = (const unsigned char *)text;
    char raw[64], w[64];
    while (*p) {
        while (*p && !word_char(*p)) p++;
        size_t n = 0;
        while (*p && word_char(*p)) {
            if (n < sizeof raw - 1) raw[n++] = (char)*p;
            p++;
        }
        size_t a = 0, e = n;
        while (a < n && raw[a] == '_') a++;
        while (e > a && raw[e - 1] == '_') e--;
        size_t m = e - a;
        if (m < 2) continue;
        for (size_t i = 0; i < m; i++) w[i] = (char)(is_upper(raw[a + i]) ? raw[a + i] + 32 : raw[a + i]);
        w[m] = 0;
        if (is_stop(w, m)) {
            s->nprev = 0; /* no bigram across a stop word */
            continue;
        }
        put_word(s, w, m, kf_lessons__knobs.word, kf_lessons__knobs.grams);
        char st[80];
        size_t sm = stem(w, m, st);
        if (s->nprev) {
            uint64_t h = fnv(0x84222325cbf29ce4ull, s->prev, s->nprev);
            h = fnv(h, " ", 1);
            put(s, fnv(h, st, sm), kf_lessons__knobs.bigram);
        }
        memcpy(s->prev, st, sm);
        s->nprev = sm;
        put_parts(s, raw + a, m);
    }
}

int kf_lessons__hash_embed(const char *text, float *v) {
    memset(v, 0, sizeof(float) * KF_LESSONS_HASH_DIM);
    fstate s = {0};
    v2_text(&s, text);
    /* sublinear term frequency: a feature seen c times weighs w * (1 + ln c), so a lesson
     * that repeats "shared" four times is not four times about shared memory */
    for (int i = 0; i < s.n; i++) add(v, s.f[i].h, s.f[i].w * (1.0f + logf((float)s.f[i].count)));
    free(s.f);
    free(s.slot);
    normalise(v, KF_LESSONS_HASH_DIM);
    return s.oom ? -1 : 0;
}

/* ---- the endpoint --------------------------------------------------------------------- */

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;
static void curl_init(void) { curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT); }

static size_t on_data(char *p, size_t size, size_t nmemb, void *arg) {
    kf_buf *b = arg;
    size_t n = size * nmemb;
    if (b->len + n > REPLY_CAP || kf_buf_append(b, p, n)) return 0;
    return n;
}

static kf_status endpoint(kf_lessons *db, const char *const *texts, int n, float *out) {
    pthread_once(&curl_once, curl_init);
    if (curl_init_rc != CURLE_OK)
        return kf__err(db->ctx, KF_EBACKEND, "libcurl: %s", curl_easy_strerror(curl_init_rc));
    json_t *in = json_array();
    for (int i = 0; i < n; i++) json_array_append_new(in, json_string(texts[i]));
    json_t *req = json_pack("{s:s, s:o}", "model", db->embed_model, "input", in);
    char *body = kf__json_dumps(req, JSON_COMPACT);
    json_decref(req);
    char url[4200], auth[4200], errbuf[CURL_ERROR_SIZE] = "";
    snprintf(url, sizeof url, "%s/embeddings", db->embed_url);
    struct curl_slist *hdr = curl_slist_append(NULL, "Content-Type: application/json");
    if (db->api_key) {
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", db->api_key);
        hdr = curl_slist_append(hdr, auth);
    }
    kf_buf b;
    kf_buf_init(&b, REPLY_CAP);
    CURL *h = curl_easy_init();
    kf_status st = KF_OK;
    if (!h || !body || !hdr) {
        st = kf__err(db->ctx, KF_ENOMEM, "out of memory");
        goto out;
    }
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_POST, 1L);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(h, CURLOPT_USERAGENT, "kforge/" KF_VERSION);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)(db->timeout_s < 10 ? db->timeout_s * 1000 : 10000));
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)(db->timeout_s * 1000));
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
    CURLcode rc = curl_easy_perform(h);
    long code = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    if (rc != CURLE_OK) {
        st = kf__err(db->ctx, KF_EBACKEND, "embeddings endpoint %s: %s", url,
                     errbuf[0] ? errbuf : curl_easy_strerror(rc));
        goto out;
    }
    if (code != 200) {
        char quote[201] = "";
        for (size_t i = 0; b.p && i < b.len && i < 200; i++)
            quote[i] = b.p[i] >= 0x20 && b.p[i] < 0x7f ? b.p[i] : ' ';
        st = kf__err(db->ctx, KF_EBACKEND, "embeddings endpoint %s: HTTP %ld: %s", url, code, quote);
        goto out;
    }
    json_t *r = b.p ? json_loadb(b.p, b.len, 0, NULL) : NULL;
    json_t *data = json_object_get(r, "data");
    if (!json_is_array(data) || (int)json_array_size(data) != n) {
        json_decref(r);
        st = kf__err(db->ctx, KF_EBACKEND,
                     "embeddings endpoint %s: the reply has no \"data\" array of %d embeddings", url, n);
        goto out;
    }
    for (int i = 0; i < n && !st; i++) {
        json_t *d = json_array_get(data, (size_t)i);
        json_t *ix = json_object_get(d, "index");
        int at = ix ? (int)json_integer_value(ix) : i;
        json_t *e = json_object_get(d, "embedding");
        int dim = (int)json_array_size(e);
        if (at < 0 || at >= n || !json_is_array(e) || dim < 1 || dim > MAX_DIM) {
            st = kf__err(db->ctx, KF_EBACKEND,
                         "embeddings endpoint %s: embedding %d is not an array of 1 to %d numbers", url, i,
                         MAX_DIM);
            break;
        }
        if (!db->dim) db->dim = dim;
        if (dim != db->dim) {
            st = kf__err(db->ctx, KF_EBACKEND,
                         "embeddings endpoint %s: %d dimensions, this database holds %d", url, dim, db->dim);
            break;
        }
        float *v = out + (size_t)at * (size_t)dim;
        for (int j = 0; j < dim; j++) {
            json_t *x = json_array_get(e, (size_t)j);
            if (!json_is_number(x)) {
                st = kf__err(db->ctx, KF_EBACKEND, "embeddings endpoint %s: embedding %d has a non-number",
                             url, i);
                break;
            }
            v[j] = (float)json_number_value(x);
        }
        normalise(v, dim);
    }
    json_decref(r);
out:
    if (h) curl_easy_cleanup(h);
    curl_slist_free_all(hdr);
    kf_buf_free(&b);
    free(body);
    return st;
}

kf_status kf_lessons__embed(kf_lessons *db, const char *const *texts, int n, float *out) {
    if (db->embed_url) return endpoint(db, texts, n, out);
    for (int i = 0; i < n; i++)
        if (kf_lessons__hash_embed(texts[i], out + (size_t)i * KF_LESSONS_HASH_DIM))
            return kf__err(db->ctx, KF_ENOMEM, "out of memory (embedding a text)");
    return KF_OK;
}
