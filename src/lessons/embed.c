/*
 * embed.c - the embeddings that lessons are ranked by (docs/lessons.md, "Embedding").
 *
 * Built in, offline: "hashgram-v1-512", hashed character 3-5-grams of every word plus
 * word unigrams and bigrams, in 512 dimensions, L2-normalised. Text is lower-cased and
 * split into words of [a-z0-9_]; stop words are dropped; a word with '_' also gives its
 * parts ("__shfl_xor_sync" -> shfl, xor, sync). Each feature is hashed (FNV-1a 64, then
 * a mixer) to a dimension and a sign (the "hashing trick"): unigrams weigh 1, bigrams
 * 0.5, and the character grams of a word share a weight of 1 (each 1/sqrt(count)), so
 * morphology ("coalesce", "coalesced", "coalescing") and identifiers written apart
 * still meet. It knows no synonyms: a paraphrase with no shared word or stem is where
 * it is weak, and BM25 is no better there.
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
    "a", "an", "the", "and", "or", "of", "to", "in", "on", "for", "with", "is", "are", "be",
    "by", "it", "its", "as", "at", "this", "that", "from", "when", "than", "then", "into",
    "so", "but", "we", "our", "you", "your", "has", "have", "was", "were", "which", "will",
    "can", "if", "do", "does", "there", "these", "those", "what", "how", "my", "me", "i",
    NULL};

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

typedef struct {
    float *v;
    char prev[64];
    size_t nprev;
} hstate;

static void grams(float *v, const char *w, size_t n) {
    char b[68];
    b[0] = '<';
    memcpy(b + 1, w, n);
    b[n + 1] = '>';
    size_t m = n + 2;
    int count = 0;
    for (size_t g = 3; g <= 5; g++)
        if (m >= g) count += (int)(m - g + 1);
    if (!count) return;
    float wt = 1.0f / sqrtf((float)count);
    for (size_t g = 3; g <= 5; g++)
        for (size_t i = 0; i + g <= m; i++) add(v, fnv(0xcbf29ce484222325ull ^ g, b + i, g), wt);
}

static void on_word(void *arg, const char *w, size_t n) {
    hstate *s = arg;
    while (n && *w == '_') { /* "__syncthreads" is syncthreads */
        w++;
        n--;
    }
    while (n && w[n - 1] == '_') n--;
    add(s->v, fnv(0xcbf29ce484222325ull, w, n), 1.0f);
    grams(s->v, w, n);
    if (s->nprev) {
        uint64_t h = fnv(0x84222325cbf29ce4ull, s->prev, s->nprev);
        h = fnv(h, " ", 1);
        add(s->v, fnv(h, w, n), 0.5f);
    }
    memcpy(s->prev, w, n);
    s->nprev = n;
    if (memchr(w, '_', n)) { /* the parts of an identifier, as words of their own */
        size_t i = 0;
        while (i < n) {
            size_t j = i;
            while (j < n && w[j] != '_') j++;
            if (j - i >= 2 && !is_stop(w + i, j - i)) {
                add(s->v, fnv(0xcbf29ce484222325ull, w + i, j - i), 0.5f);
                grams(s->v, w + i, j - i);
            }
            i = j + 1;
        }
    }
}

static void normalise(float *v, int dim) {
    double ss = 0;
    for (int i = 0; i < dim; i++) ss += (double)v[i] * v[i];
    if (ss <= 0) return;
    float inv = (float)(1.0 / sqrt(ss));
    for (int i = 0; i < dim; i++) v[i] *= inv;
}

void kf_lessons__hash_embed(const char *text, float *v) {
    memset(v, 0, sizeof(float) * KF_LESSONS_HASH_DIM);
    hstate s = {.v = v};
    kf_lessons__words(text, on_word, &s);
    normalise(v, KF_LESSONS_HASH_DIM);
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
    char *body = json_dumps(req, JSON_COMPACT);
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
        st = kf__err(db->ctx, KF_EBACKEND, "embeddings endpoint %s: the reply has no \"data\" array of %d embeddings",
                     url, n);
        goto out;
    }
    for (int i = 0; i < n && !st; i++) {
        json_t *d = json_array_get(data, (size_t)i);
        json_t *ix = json_object_get(d, "index");
        int at = ix ? (int)json_integer_value(ix) : i;
        json_t *e = json_object_get(d, "embedding");
        int dim = (int)json_array_size(e);
        if (at < 0 || at >= n || !json_is_array(e) || dim < 1 || dim > MAX_DIM) {
            st = kf__err(db->ctx, KF_EBACKEND, "embeddings endpoint %s: embedding %d is not an array of 1 to %d numbers",
                         url, i, MAX_DIM);
            break;
        }
        if (!db->dim) db->dim = dim;
        if (dim != db->dim) {
            st = kf__err(db->ctx, KF_EBACKEND, "embeddings endpoint %s: %d dimensions, this database holds %d",
                         url, dim, db->dim);
            break;
        }
        float *v = out + (size_t)at * (size_t)dim;
        for (int j = 0; j < dim; j++) {
            json_t *x = json_array_get(e, (size_t)j);
            if (!json_is_number(x)) {
                st = kf__err(db->ctx, KF_EBACKEND, "embeddings endpoint %s: embedding %d has a non-number", url, i);
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
    for (int i = 0; i < n; i++) kf_lessons__hash_embed(texts[i], out + (size_t)i * KF_LESSONS_HASH_DIM);
    return KF_OK;
}
