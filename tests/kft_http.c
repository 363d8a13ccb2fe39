/*
 * kft_http.c - the stub HTTP server of kft_http.h (the pattern of test_agent.c's stub,
 * with the answer left to a handler).
 */
#define _GNU_SOURCE
#include "kft_http.h"
#include "kft.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

void kft_http_send_all(int fd, const char *p, size_t n) {
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w <= 0) return;
        p += w;
        n -= (size_t)w;
    }
}

/* Read one request: the head, then Content-Length bytes of body (kept up to cap). */
void kft_http_read_request(int fd, char *buf, size_t cap) {
    size_t kept = 0, total = 0, head_end = 0, want = 0;
    buf[0] = 0;
    for (;;) {
        char tmp[65536];
        ssize_t r = recv(fd, tmp, sizeof tmp, 0);
        if (r <= 0) return;
        size_t k = (size_t)r < cap - 1 - kept ? (size_t)r : cap - 1 - kept;
        memcpy(buf + kept, tmp, k);
        kept += k;
        buf[kept] = 0;
        total += (size_t)r;
        char *e;
        if (!head_end && (e = strstr(buf, "\r\n\r\n"))) {
            head_end = (size_t)(e + 4 - buf);
            char *cl = strcasestr(buf, "\r\ncontent-length:");
            want = cl && cl < e ? (size_t)atol(cl + 17) : 0;
        }
        if (head_end && total - head_end >= want) return;
    }
}

static void *serve(void *arg) {
    kft_http *s = arg;
    static char req[1 << 20];
    for (;;) {
        int c = accept(s->fd, NULL, NULL);
        if (c < 0) continue;
        kft_http_read_request(c, req, sizeof req);
        if (atomic_fetch_add(&s->requests, 1) == 0) snprintf(s->first, sizeof s->first, "%s", req);
        char status[64] = "200 OK";
        char *body = s->fn(s, req, status, sizeof status);
        char head[512];
        snprintf(head, sizeof head,
                 "HTTP/1.1 %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
                 "Connection: close\r\n\r\n",
                 status, body ? strlen(body) : 0);
        kft_http_send_all(c, head, strlen(head));
        if (body) kft_http_send_all(c, body, strlen(body));
        free(body);
        close(c);
    }
    return NULL;
}

void kft_http_start(kft_http *s, kft_http_fn fn, void *arg) {
    memset(s, 0, sizeof *s);
    s->fn = fn;
    s->arg = arg;
    s->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CHECK(s->fd >= 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK(bind(s->fd, (struct sockaddr *)&a, sizeof a) == 0);
    CHECK(listen(s->fd, 16) == 0);
    socklen_t len = sizeof a;
    CHECK(getsockname(s->fd, (struct sockaddr *)&a, &len) == 0);
    s->port = ntohs(a.sin_port);
    CHECK(pthread_create(&s->th, NULL, serve, s) == 0);
    pthread_detach(s->th);
}

int kft_http_dead_port(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK(bind(fd, (struct sockaddr *)&a, sizeof a) == 0);
    socklen_t len = sizeof a;
    CHECK(getsockname(fd, (struct sockaddr *)&a, &len) == 0);
    close(fd);
    return ntohs(a.sin_port);
}

void kft_http_no_proxy(void) {
    unsetenv("http_proxy");
    unsetenv("HTTP_PROXY");
    unsetenv("https_proxy");
    unsetenv("HTTPS_PROXY");
    unsetenv("all_proxy");
    unsetenv("ALL_PROXY");
    setenv("no_proxy", "127.0.0.1", 1);
}
