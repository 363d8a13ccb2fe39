/*
 * kft_http.h - a stub HTTP/1.1 server in a thread of a test, for clients of
 * OpenAI-compatible endpoints (127.0.0.1, an ephemeral port, one request per connection,
 * Connection: close). The handler answers each request; the first request is kept.
 */
#ifndef KFT_HTTP_H
#define KFT_HTTP_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

typedef struct kft_http kft_http;
/* Answer one request (head and body as received, NUL-terminated): fill status ("200 OK")
 * and return the body (malloc'd; the server frees it). */
typedef char *(*kft_http_fn)(kft_http *s, const char *request, char *status, size_t nstatus);

struct kft_http {
    int fd, port;
    kft_http_fn fn;
    void *arg;
    atomic_int requests;
    char first[1 << 16]; /* the first request, head and body (capped) */
    pthread_t th;
};

/* Start serving in a detached thread; fails the test when it cannot. */
void kft_http_start(kft_http *s, kft_http_fn fn, void *arg);
/* A loopback port nothing listens on (bound, then closed). */
int kft_http_dead_port(void);
/* Keep proxies away from 127.0.0.1 (libcurl honours http_proxy). */
void kft_http_no_proxy(void);
/* For stubs with replies of their own (extra headers, slow or cut bodies): write all of
 * p (stops at an error), and read one request, head then Content-Length bytes of body,
 * kept up to cap and NUL-terminated. */
void kft_http_send_all(int fd, const char *p, size_t n);
void kft_http_read_request(int fd, char *buf, size_t cap);

#endif
