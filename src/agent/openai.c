/*
 * openai.c - the openai:MODEL agent: one chat completion through libcurl.
 *
 * POST {base}/chat/completions with the pack's system and user messages; the candidate
 * is the first c/cuda/cpp fenced block of choices[0].message.content (or the whole
 * content when it is plainly code); tokens come from `usage`. Any OpenAI-compatible
 * server works (vLLM, llama.cpp, a proxy): the base URL is an option.
 *
 * Failures are outcomes with a clear message, never crashes or hangs: every request
 * has a connect and a total timeout; a reply is read into a capped buffer (a huge reply
 * is an error, not an OOM); connection failures, 429 and 5xx are retried at most
 * max_attempts times in all, after waits that double from backoff_s with jitter (each
 * uniform in [d/2, d], so many clients do not retry in step), a Retry-After header
 * lengthening the wait, every wait capped at backoff_max_s. timeout_s bounds the whole
 * proposal, retries and waits included: each request gets what is left of it, and a wait
 * (a Retry-After too) that would end past it is not waited: the proposal ends at once
 * with the last error. A request that connected and
 * then timed out is not retried: the server took the whole allowance once already.
 * Other 4xx, a reply that is not JSON, one without content or without code end the
 * attempt at once. The API key goes into one header and nowhere else: no verbose mode,
 * no error text includes it.
 */
#define _GNU_SOURCE
#include "agent.h"

#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define MSG_CAP 300 /* bytes of a server's error text quoted in ours */

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;

static void curl_init(void) { curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT); }

kf_status kf_agent_openai_check(kf_agent *a) {
    char *u = a->base_url;
    if (strncmp(u, "http://", 7) && strncmp(u, "https://", 8))
        return kf__err(a->ctx, KF_EUSAGE, "openai: base URL '%s' is not http:// or https://", u);
    size_t n = strlen(u);
    while (n > 8 && u[n - 1] == '/') u[--n] = 0;
    if (!a->api_key && !strcmp(u, "https://api.openai.com/v1"))
        return kf__err(a->ctx, KF_EUSAGE, "openai: no API key for %s (set OPENAI_API_KEY, or a base URL)", u);
    pthread_once(&curl_once, curl_init);
    if (curl_init_rc != CURLE_OK)
        return kf__err(a->ctx, KF_EBACKEND, "libcurl: %s", curl_easy_strerror(curl_init_rc));
    return KF_OK;
}

typedef struct {
    kf_buf body;
    size_t cap;
    int over, oom;
} sink;

static size_t on_data(char *p, size_t size, size_t nmemb, void *arg) {
    sink *s = arg;
    size_t n = size * nmemb;
    if (s->body.len + n > s->cap) {
        s->over = 1;
        return 0; /* curl stops with CURLE_WRITE_ERROR */
    }
    if (kf_buf_append(&s->body, p, n)) {
        s->oom = 1;
        return 0;
    }
    return n;
}

/* Printable text of at most MSG_CAP bytes from a server's bytes. */
static void printable(const char *p, size_t n, char *out, size_t outn) {
    size_t o = 0;
    for (size_t i = 0; i < n && o + 4 < outn && o < MSG_CAP; i++) {
        unsigned char c = (unsigned char)p[i];
        out[o++] = c == '\n' || c == '\r' || c == '\t' ? ' ' : c >= 0x20 && c < 0x7f ? (char)c : '?';
    }
    if (n > MSG_CAP && o + 4 < outn) {
        memcpy(out + o, "...", 3);
        o += 3;
    }
    out[o] = 0;
}

/* What a server said in an error reply: error.message (OpenAI's shape), an "error"
 * string, or the start of the body. */
static void server_message(const sink *s, char *out, size_t n) {
    json_t *j = s->body.len ? json_loadb(s->body.p, s->body.len, 0, NULL) : NULL;
    json_t *e = json_object_get(j, "error");
    const char *m =
        json_is_string(e) ? json_string_value(e) : json_string_value(json_object_get(e, "message"));
    if (!m) m = json_string_value(json_object_get(j, "message"));
    if (m) printable(m, strlen(m), out, n);
    else if (s->body.len) printable(s->body.p, s->body.len, out, n);
    else snprintf(out, n, "(an empty body)");
    json_decref(j);
}

static void sleep_s(double s) {
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) && errno == EINTR) {
    }
}

static char *dupf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *dupf(const char *fmt, ...) {
    va_list ap;
    char *p = NULL;
    va_start(ap, fmt);
    if (vasprintf(&p, fmt, ap) < 0) p = NULL;
    va_end(ap);
    return p ? p : kf__strdup("openai: failed (no memory for the message)");
}

/* A 200 reply: the candidate, or an error. */
static void take_reply(kf_agent *a, const kf_pack *pack, const sink *s, const char *url, kf_proposal *out) {
    json_error_t je;
    json_t *j = json_loadb(s->body.p ? s->body.p : "", s->body.len, 0, &je);
    if (!j) {
        char head[MSG_CAP + 8];
        printable(s->body.p ? s->body.p : "", s->body.len < 80 ? s->body.len : 80, head, sizeof head);
        out->error = dupf("openai: the reply from %s is not JSON (%s, line %d column %d); it "
                          "begins '%s'",
                          url, je.text, je.line, je.column, head);
        return;
    }
    json_t *c0 = json_array_get(json_object_get(j, "choices"), 0);
    json_t *content = json_object_get(json_object_get(c0, "message"), "content");
    json_t *joined = NULL;
    if (json_is_array(content)) { /* content parts: [{"type": "text", "text": ...}, ...] */
        kf_buf b;
        kf_buf_init(&b, s->cap);
        size_t i;
        json_t *part;
        json_array_foreach(content, i, part) {
            json_t *t = json_object_get(part, "text");
            if (json_is_string(t)) kf_buf_append(&b, json_string_value(t), json_string_length(t));
        }
        if (b.p) joined = json_stringn(b.p, b.len);
        kf_buf_free(&b);
        if (joined) content = joined;
    }
    const char *finish = json_string_value(json_object_get(c0, "finish_reason"));
    json_t *usage = json_object_get(j, "usage");
    json_t *pt = json_object_get(usage, "prompt_tokens"), *ct = json_object_get(usage, "completion_tokens");
    kf_agent_usage("openai: the endpoint", usage ? pt ? pt : json_null() : NULL,
                   usage ? ct ? ct : json_null() : NULL, pack->tokens_prompt,
                   json_is_string(content) ? kf_text_tokens(json_string_length(content)) : 0, out);
    if (!json_is_string(content)) {
        char msg[MSG_CAP + 8] = "";
        if (json_object_get(j, "error")) server_message(s, msg, sizeof msg);
        out->error = dupf("openai: the reply has no choices[0].message.content%s%s%s%s%s",
                          finish ? " (finish_reason " : "", finish ? finish : "", finish ? ")" : "",
                          *msg ? ": " : "", msg);
        json_decref(j);
        return;
    }
    const char *text = json_string_value(content);
    size_t len = json_string_length(content);
    /* a "Description: ..." line (the prompt asks for one) outside the code block */
    for (const char *p = text; p && *p;) {
        const char *q = p;
        while (*q == ' ' || *q == '*' || *q == '_') q++;
        if (!strncasecmp(q, "description:", 12)) {
            q += 12;
            size_t n = strcspn(q, "\r\n");
            out->description = strndup(q, n < 1024 ? n : 1024);
            break;
        }
        if (!strncmp(q, "```", 3)) { /* skip the fenced block */
            const char *e = strstr(q + 3, "\n```");
            if (!e) break;
            p = e + 4;
        }
        const char *nl = strchr(p, '\n');
        p = nl ? nl + 1 : NULL;
    }
    size_t keep = len < a->o.log_cap ? len : a->o.log_cap;
    out->log = strndup(text, keep);
    const char *code;
    size_t n;
    char why[200];
    if (kf_agent_extract_code(text, len, &code, &n, why, sizeof why)) {
        out->error =
            dupf("openai: %s%s%s%s", why, finish && strcmp(finish, "stop") ? " (finish_reason " : "",
                 finish && strcmp(finish, "stop") ? finish : "", finish && strcmp(finish, "stop") ? ")" : "");
    } else if (n == 0 || strspn(code, " \t\r\n") >= n) {
        out->error = dupf("openai: the reply's code block is empty");
    } else if (n > a->o.out_cap) {
        out->error = dupf("openai: the code block has %zu bytes, more than the cap of %zu", n, a->o.out_cap);
    } else if (memchr(code, 0, n)) {
        out->error = dupf("openai: the code block holds a NUL byte");
    } else {
        out->text = strndup(code, n);
        out->len = n;
        if (!out->text) out->error = dupf("openai: out of memory");
    }
    json_decref(joined);
    json_decref(j);
}

kf_status kf_agent_openai_propose(kf_agent *a, const kf_pack *pack, kf_proposal *out) {
    kf_ctx *ctx = a->ctx;
    kf_status st = KF_OK;
    char *url = kf__asprintf("%s/chat/completions", a->base_url), *req = NULL, *auth = NULL;
    struct curl_slist *hdr = NULL;
    CURL *h = NULL;
    sink s;
    memset(&s, 0, sizeof s);
    json_t *body = json_object(), *msgs = json_array(), *sys = json_object(), *user = json_object();
    if (!url || !body || !msgs || !sys || !user) {
        json_decref(sys);
        json_decref(user);
        goto oom;
    }
    json_object_set_new(body, "model", kf_text_json(a->arg));
    json_object_set_new(sys, "role", json_string("system"));
    json_object_set_new(sys, "content", kf_text_json(pack->system));
    json_object_set_new(user, "role", json_string("user"));
    json_object_set_new(user, "content", kf_text_json(pack->prompt));
    json_array_append_new(msgs, sys);
    json_array_append_new(msgs, user);
    json_object_set_new(body, "messages", msgs);
    msgs = NULL;
    if (a->o.temperature >= 0) json_object_set_new(body, "temperature", json_real(a->o.temperature));
    if (a->o.max_tokens > 0) json_object_set_new(body, "max_tokens", json_integer(a->o.max_tokens));
    req = kf__json_dumps(body, JSON_COMPACT);
    if (!req) goto oom;
    struct curl_slist *t;
    hdr = curl_slist_append(NULL, "Content-Type: application/json");
    if (!hdr || !(t = curl_slist_append(hdr, "Expect:"))) goto oom; /* no 100-continue wait */
    if (a->api_key) {
        auth = kf__asprintf("Authorization: Bearer %s", a->api_key);
        if (!auth || !(t = curl_slist_append(hdr, auth))) goto oom;
    }
    h = curl_easy_init();
    if (!h) goto oom;
    char errbuf[CURL_ERROR_SIZE];
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_POST, 1L);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, req);
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(req));
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(h, CURLOPT_USERAGENT, "kforge/" KF_VERSION);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)a->o.reply_cap);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &s);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
    s.cap = a->o.reply_cap;

    int max = a->o.max_attempts > 0 ? a->o.max_attempts : 1;
    const uint64_t t0 = kf__now_ns(), deadline = t0 + (uint64_t)(a->o.timeout_s * 1e9);
    for (int attempt = 1;; attempt++) {
        /* what is left of the proposal's time (at least 1 ms: curl reads 0 as none) */
        uint64_t now = kf__now_ns();
        long left_ms = now < deadline ? (long)((deadline - now) / 1000000u) : 0;
        if (left_ms < 1) left_ms = 1;
        long conn_ms = (long)(a->o.connect_timeout_s * 1000);
        curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, conn_ms < left_ms ? conn_ms : left_ms);
        curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, left_ms);
        kf_buf_free(&s.body);
        kf_buf_init(&s.body, (size_t)-1);
        s.over = s.oom = 0;
        errbuf[0] = 0;
        CURLcode rc = curl_easy_perform(h);
        out->attempts = attempt;
        long code = 0, oserr = 0;
        curl_off_t connect_us = 0, retry_after = 0;
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
        curl_easy_getinfo(h, CURLINFO_OS_ERRNO, &oserr);
        curl_easy_getinfo(h, CURLINFO_CONNECT_TIME_T, &connect_us);
        curl_easy_getinfo(h, CURLINFO_RETRY_AFTER, &retry_after);
        if (s.oom) goto oom;
        char *err = NULL;
        int retry = 0;
        if (s.over || rc == CURLE_FILESIZE_EXCEEDED) {
            err = dupf("openai: the reply from %s is larger than the cap of %zu bytes", url, a->o.reply_cap);
        } else if (rc == CURLE_COULDNT_CONNECT) {
            err =
                dupf("openai: cannot connect to %s (%s)", a->base_url, oserr ? strerror((int)oserr) : errbuf);
            retry = 1;
        } else if (rc == CURLE_COULDNT_RESOLVE_HOST || rc == CURLE_COULDNT_RESOLVE_PROXY) {
            err = dupf("openai: cannot connect to %s (cannot resolve the host: %s)", a->base_url, errbuf);
            retry = 1;
        } else if (rc == CURLE_OPERATION_TIMEDOUT && connect_us == 0) {
            err = dupf("openai: cannot connect to %s (no connection within %g s)", a->base_url,
                       a->o.connect_timeout_s);
            retry = 1;
        } else if (rc == CURLE_OPERATION_TIMEDOUT) {
            err = dupf("openai: no complete reply from %s within %g s (timed out)", url, a->o.timeout_s);
        } else if (rc == CURLE_SEND_ERROR || rc == CURLE_RECV_ERROR || rc == CURLE_GOT_NOTHING ||
                   rc == CURLE_PARTIAL_FILE) {
            err = dupf("openai: the connection to %s failed (%s)", a->base_url,
                       *errbuf ? errbuf : curl_easy_strerror(rc));
            retry = 1;
        } else if (rc != CURLE_OK) {
            err = dupf("openai: %s: %s", url, *errbuf ? errbuf : curl_easy_strerror(rc));
        } else if (code != 200) {
            char msg[MSG_CAP + 8];
            server_message(&s, msg, sizeof msg);
            err = dupf("openai: HTTP %ld from %s: %s", code, url, msg);
            retry = code == 429 || code >= 500;
        } else {
            take_reply(a, pack, &s, url, out);
            break;
        }
        if (!err) goto oom;
        double wait = 0;
        if (retry && attempt < max) {
            double d = a->o.backoff_s * (double)(1u << (attempt - 1 < 20 ? attempt - 1 : 20));
            if (d > a->o.backoff_max_s) d = a->o.backoff_max_s;
            wait = d / 2 + d / 2 * ((double)(kf__secret_u64() >> 11) / 9007199254740992.0);
            if (retry_after > 0 && (double)retry_after > wait)
                wait = (double)retry_after < a->o.backoff_max_s ? (double)retry_after : a->o.backoff_max_s;
        }
        /* the next request must start with time left for it; else stop now */
        int late = retry && attempt < max && (double)kf__now_ns() + wait * 1e9 >= (double)deadline;
        if (!retry || attempt >= max || late) {
            if (late) {
                char *e2 = dupf("%s; gave up after %d attempt%s: the next one, after a wait of %g s%s, "
                                "would end past the agent timeout of %g s",
                                err, attempt, attempt > 1 ? "s" : "", wait,
                                retry_after > 0 ? " (Retry-After)" : "", a->o.timeout_s);
                free(err);
                err = e2;
            } else if (retry) {
                char *e2 = dupf("%s; gave up after %d attempts", err, attempt);
                free(err);
                err = e2;
            }
            out->error = err;
            break;
        }
        free(err);
        sleep_s(wait);
    }
    if (!out->text && !out->error) goto oom;
    goto done;
oom:
    st = kf__err(ctx, KF_ENOMEM, "openai: out of memory");
done:
    if (h) curl_easy_cleanup(h);
    curl_slist_free_all(hdr);
    if (auth) {
        volatile char *k = auth;
        while (*k) *k++ = 0;
        free(auth);
    }
    free(req);
    free(url);
    json_decref(body);
    json_decref(msgs);
    kf_buf_free(&s.body);
    return st;
}
