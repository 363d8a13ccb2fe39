/*
 * proto.c - the scale-out wire (docs/scale.md "Protocol"): authenticated frames over a
 * Unix socket or TCP. Every frame carries an HMAC-SHA256 (OpenSSL) of its header and
 * body under a key both ends hold: the run's secret for the handshake, then a session
 * key derived from it and both ends' fresh nonces. Sequence numbers are in the MAC, so a
 * frame replayed, reordered or moved to another connection fails. What the MAC cannot
 * stop, a joined worker answering for an evaluation it was never given, the pool stops
 * with per-dispatch tickets (pool.c).
 */
#include "scale.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

static void hexs(const unsigned char *b, size_t n, char *out) {
    static const char d[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) out[2 * i] = d[b[i] >> 4], out[2 * i + 1] = d[b[i] & 15];
    out[2 * n] = 0;
}

void kf_scale_token(char *out, size_t bytes) {
    unsigned char b[32];
    if (bytes > sizeof b) bytes = sizeof b;
    if (RAND_bytes(b, (int)bytes) != 1) /* no entropy: a token nobody relies on being secret */
        for (size_t i = 0; i < bytes; i++) b[i] = (unsigned char)(kf__now_ns() >> (i % 8));
    hexs(b, bytes, out);
}

int kf_scale_secret(const char *path, int create, unsigned char key[KF_SCALE_SECRET_LEN], char *err,
                    size_t n) {
    char *text = NULL;
    size_t len = 0;
    if (kf__read_file(path, 4096, &text, &len)) {
        if (!create || errno != ENOENT) {
            snprintf(err, n, "the run's secret %s: %s", path, strerror(errno));
            return -1;
        }
        unsigned char b[KF_SCALE_SECRET_LEN];
        char h[2 * KF_SCALE_SECRET_LEN + 2];
        if (RAND_bytes(b, sizeof b) != 1) {
            snprintf(err, n, "the run's secret: no random bytes");
            return -1;
        }
        hexs(b, sizeof b, h);
        h[2 * KF_SCALE_SECRET_LEN] = '\n', h[2 * KF_SCALE_SECRET_LEN + 1] = 0;
        char dir[4096];
        snprintf(dir, sizeof dir, "%s", path);
        char *sl = strrchr(dir, '/');
        if (sl && sl != dir) *sl = 0, kf__mkdirs(dir);
        /* whole before it has its name (a link, which fails when another coordinator of
         * the run, such as a concurrent submit's, made it meanwhile): no reader sees it
         * half-written */
        char tmp[4200];
        snprintf(tmp, sizeof tmp, "%s.tmp-%ld", path, (long)getpid());
        unlink(tmp);
        int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd < 0 || write(fd, h, strlen(h)) != (ssize_t)strlen(h) || fsync(fd)) {
            snprintf(err, n, "the run's secret %s: %s", path, strerror(errno));
            if (fd >= 0) close(fd), unlink(tmp);
            return -1;
        }
        close(fd);
        int linked = link(tmp, path), e = errno;
        unlink(tmp);
        if (linked && e == EEXIST) {
            OPENSSL_cleanse(b, sizeof b);
            return kf_scale_secret(path, 0, key, err, n); /* made meanwhile */
        }
        if (linked) {
            snprintf(err, n, "the run's secret %s: %s", path, strerror(e));
            return -1;
        }
        memcpy(key, b, sizeof b);
        OPENSSL_cleanse(b, sizeof b);
        return 0;
    }
    int bad = len < 2 * KF_SCALE_SECRET_LEN;
    for (size_t i = 0; !bad && i < KF_SCALE_SECRET_LEN; i++) {
        unsigned v = 0;
        for (int k = 0; k < 2; k++) {
            char c = text[2 * i + k];
            int x = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
            if (x < 0) bad = 1;
            v = v * 16 + (unsigned)(x < 0 ? 0 : x);
        }
        key[i] = (unsigned char)v;
    }
    OPENSSL_cleanse(text, len);
    free(text);
    if (bad) snprintf(err, n, "the run's secret %s: expected 64 hex digits", path);
    return bad ? -1 : 0;
}

/* "tcp:HOST:PORT" into host and port; 0 or -1. */
static int tcp_addr(const char *a, char *host, size_t hn, char *port, size_t pn) {
    const char *c = strrchr(a, ':');
    if (!c || c == a || !c[1] || (size_t)(c - a) >= hn || strlen(c + 1) >= pn) return -1;
    memcpy(host, a, (size_t)(c - a));
    host[c - a] = 0;
    snprintf(port, pn, "%s", c + 1);
    return 0;
}

static int unix_addr(const char *path, struct sockaddr_un *u, char *err, size_t n) {
    memset(u, 0, sizeof *u);
    u->sun_family = AF_UNIX;
    if (!*path || strlen(path) >= sizeof u->sun_path) {
        snprintf(err, n, "unix:%s: a socket path of 1 to %zu bytes", path, sizeof u->sun_path - 1);
        return -1;
    }
    memcpy(u->sun_path, path, strlen(path) + 1);
    return 0;
}

static int open_addr(const char *addr, int listening, int *bound, char *err, size_t n) {
    if (!strncmp(addr, "unix:", 5)) {
        struct sockaddr_un u;
        if (unix_addr(addr + 5, &u, err, n)) return -1;
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            snprintf(err, n, "%s: socket: %s", addr, strerror(errno));
            return -1;
        }
        if (listening) {
            /* a socket file whose coordinator is gone is replaced; a live one refuses */
            if (!connect(fd, (struct sockaddr *)&u, sizeof u)) {
                close(fd);
                snprintf(err, n, "%s: another coordinator listens there", addr);
                return -1;
            }
            unlink(addr + 5);
            close(fd);
            fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
            if (fd < 0 || bind(fd, (struct sockaddr *)&u, sizeof u) || listen(fd, 64)) {
                snprintf(err, n, "%s: %s", addr, strerror(errno));
                if (fd >= 0) close(fd);
                return -1;
            }
            chmod(addr + 5, 0600);
        } else if (connect(fd, (struct sockaddr *)&u, sizeof u)) {
            snprintf(err, n, "%s: %s", addr, strerror(errno));
            close(fd);
            return -1;
        }
        return fd;
    }
    if (strncmp(addr, "tcp:", 4)) {
        snprintf(err, n, "%s: an address is unix:PATH or tcp:HOST:PORT", addr);
        return -1;
    }
    char host[256], port[32];
    if (tcp_addr(addr + 4, host, sizeof host, port, sizeof port)) {
        snprintf(err, n, "%s: an address is unix:PATH or tcp:HOST:PORT", addr);
        return -1;
    }
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = listening ? AI_PASSIVE : 0}, *ai = NULL;
    int g = getaddrinfo(*host ? host : NULL, port, &hints, &ai);
    if (g) {
        snprintf(err, n, "%s: %s", addr, gai_strerror(g));
        return -1;
    }
    int fd = -1, e = 0;
    for (struct addrinfo *p = ai; p && fd < 0; p = p->ai_next) {
        fd = socket(p->ai_family, p->ai_socktype | SOCK_CLOEXEC, p->ai_protocol);
        if (fd < 0) continue;
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (listening ? bind(fd, p->ai_addr, p->ai_addrlen) || listen(fd, 64)
                      : connect(fd, p->ai_addr, p->ai_addrlen)) {
            e = errno;
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(ai);
    if (fd < 0) {
        snprintf(err, n, "%s: %s", addr, strerror(e ? e : EADDRNOTAVAIL));
        return -1;
    }
    if (bound) {
        struct sockaddr_storage ss;
        socklen_t sl = sizeof ss;
        *bound = 0;
        if (!getsockname(fd, (struct sockaddr *)&ss, &sl))
            *bound = ss.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
                                              : ntohs(((struct sockaddr_in *)&ss)->sin_port);
    }
    return fd;
}

int kf_scale_listen(const char *addr, int *port, char *err, size_t n) {
    return open_addr(addr, 1, port, err, n);
}
int kf_scale_connect(const char *addr, char *err, size_t n) { return open_addr(addr, 0, NULL, err, n); }

static int full_write(int fd, const void *p, size_t n) {
    const char *c = p;
    while (n) {
        ssize_t w = send(fd, c, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        c += w, n -= (size_t)w;
    }
    return 0;
}

/* 0 done, 1 end of stream before the first byte, -1 error or a short read */
static int full_read(int fd, void *p, size_t n) {
    char *c = p;
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, c + got, n - got);
        if (r < 0 && errno == EINTR) continue;
        if (r == 0) return got ? -1 : 1;
        if (r < 0) return -1;
        got += (size_t)r;
    }
    return 0;
}

static void put_be(unsigned char *p, uint64_t v, int n) {
    for (int i = n - 1; i >= 0; i--) p[i] = (unsigned char)v, v >>= 8;
}
static uint64_t get_be(const unsigned char *p, int n) {
    uint64_t v = 0;
    for (int i = 0; i < n; i++) v = v << 8 | p[i];
    return v;
}

static void mac(const unsigned char key[32], const unsigned char *hdr, const char *body, size_t len,
                unsigned char out[32]) {
    EVP_MAC *m = EVP_MAC_fetch(NULL, "HMAC", NULL);
    EVP_MAC_CTX *h = m ? EVP_MAC_CTX_new(m) : NULL;
    char digest[] = "SHA256";
    OSSL_PARAM ps[] = {OSSL_PARAM_construct_utf8_string("digest", digest, 0), OSSL_PARAM_construct_end()};
    size_t ol = 0;
    if (!h || !EVP_MAC_init(h, key, 32, ps) || !EVP_MAC_update(h, hdr, 16) ||
        !EVP_MAC_update(h, (const unsigned char *)body, len) || !EVP_MAC_final(h, out, &ol, 32) || ol != 32)
        memset(out, 0, 32); /* no MAC: the frame is refused by the other end */
    EVP_MAC_CTX_free(h);
    EVP_MAC_free(m);
}

int kf_scale_send(kf_scale_conn *c, json_t *msg) {
    char *body = msg ? kf__json_dumps(msg, JSON_COMPACT) : NULL;
    if (!body) return -1;
    size_t len = strlen(body);
    if (len > KF_SCALE_MAX_FRAME) {
        free(body);
        return -1;
    }
    unsigned char hdr[48];
    memcpy(hdr, "KFS1", 4);
    put_be(hdr + 4, len, 4);
    put_be(hdr + 8, c->seq_out, 8);
    mac(c->key, hdr, body, len, hdr + 16);
    int rc = full_write(c->fd, hdr, sizeof hdr) || full_write(c->fd, body, len) ? -1 : 0;
    if (!rc) c->seq_out++;
    free(body);
    return rc;
}

json_t *kf_scale_recv(kf_scale_conn *c, int *why) {
    unsigned char hdr[48], want[32];
    int r = full_read(c->fd, hdr, sizeof hdr);
    if (r) {
        *why = r == 1 ? 0 : 1;
        return NULL;
    }
    uint64_t len = get_be(hdr + 4, 4), seq = get_be(hdr + 8, 8);
    if (memcmp(hdr, "KFS1", 4) || len > KF_SCALE_MAX_FRAME) {
        *why = 3;
        return NULL;
    }
    char *body = malloc(len + 1);
    if (!body || full_read(c->fd, body, len)) {
        free(body);
        *why = 1;
        return NULL;
    }
    body[len] = 0;
    mac(c->key, hdr, body, len, want);
    if (CRYPTO_memcmp(want, hdr + 16, 32) || seq != c->seq_in) {
        free(body);
        *why = 2;
        return NULL;
    }
    c->seq_in++;
    json_t *j = json_loadb(body, len, 0, NULL);
    free(body);
    if (!json_is_object(j)) {
        json_decref(j);
        *why = 3;
        return NULL;
    }
    return j;
}

void kf_scale_session_key(const unsigned char secret[KF_SCALE_SECRET_LEN], const char *nc, const char *nw,
                          unsigned char key[32]) {
    unsigned char hdr[16] = "kforge-scale se";
    kf_buf b;
    kf_buf_init(&b, 256);
    kf_buf_printf(&b, "session|%s|%s", nc, nw);
    mac(secret, hdr, b.p ? b.p : "", b.len, key);
    kf_buf_free(&b);
}

int kf_scale_join(kf_scale_conn *c, const char *role, json_t *extra, char *err, size_t n) {
    int why = 0;
    json_t *ch = kf_scale_recv(c, &why);
    const char *nc = json_string_value(json_object_get(ch, "nonce"));
    if (!ch || !nc || strcmp(json_string_value(json_object_get(ch, "t")) ?: "", "challenge")) {
        snprintf(err, n, "%s",
                 why == 2 ? "the coordinator's challenge does not carry the run's secret's MAC "
                            "(another run's coordinator, or the wrong --secret-file)"
                          : "no challenge from the coordinator");
        json_decref(ch);
        return why == 2 || why == 3 ? -1 : -2;
    }
    char nw[65];
    kf_scale_token(nw, 16);
    json_t *h = json_pack("{s:s, s:s, s:s, s:s}", "t", "hello", "role", role, "nonce", nw, "challenge", nc);
    const char *k;
    json_t *v;
    json_object_foreach(extra, k, v) json_object_set(h, k, v);
    int rc = kf_scale_send(c, h);
    json_decref(h);
    unsigned char secret[32];
    memcpy(secret, c->key, 32);
    kf_scale_session_key(secret, nc, nw, c->key);
    OPENSSL_cleanse(secret, sizeof secret);
    json_decref(ch);
    /* the coordinator's word on it: welcome, or why not */
    json_t *w = rc ? NULL : kf_scale_recv(c, &why);
    const char *t = json_string_value(json_object_get(w, "t"));
    if (!t || strcmp(t, "welcome")) {
        /* the challenge carried the secret's MAC: a connection lost now is not a refusal */
        snprintf(err, n, "the coordinator closed the connection while this %s joined", role);
        json_decref(w);
        return w || why == 2 ? -1 : -2;
    }
    json_decref(w);
    return 0;
}
