/*
 * distill.c - `kforge lessons distill RUN`: turn a run's tree into lessons
 * (docs/lessons.md, "Distillation"). Its own step: it reads the run store and never
 * changes it, and nothing in the per-candidate path calls it.
 *
 * A node's change is the template parameters it sets differently from its parent, or,
 * for a node that changes none (an agent's rewrite), its technique: "technique=CATEGORY"
 * (tiling, vectorisation, ...; not "other"), read off the lines its diff adds (a
 * kforge:when, vector types, an unroll pragma, ...; rewrite_change) and only failing that
 * the category it was proposed as (a specialisation without a kforge:when is none). A
 * lesson says what the change is (the template parameter's own comment, param_meaning;
 * what the diff added and the submitter's description) and where it held (the shapes and
 * the node's kforge:when). A setting is credited with what changing TO
 * it did: per shape, the node's speedup over the reference divided by its parent's at the
 * same shape (the gain over the parent), not the node's own speedup over the reference
 * (which mostly measures what it inherited). So:
 *  - a templated child of the root (the defaults, a restart) or of a node without template
 *    parameters changed nothing from a measured point: it teaches no setting lesson (its
 *    failures neither: which of its settings failed is unknown). A rewrite under the root
 *    is measured against the reference (its parent, 1x at every shape);
 *  - a node whose parent is not evidence (tampered, so not read; vetoed for what it is;
 *    never measured) teaches nothing about its change;
 *  - a move to K=V "won" when its node was kept and beat its parent by KF_DISTILL_FLOOR
 *    (5%, kforge's win floor) at some shape; those shapes are where it won. It "lost" when
 *    the node was measured or reverted (not vetoed), or kept without a 5% gain anywhere.
 * Per change K=V over the whole run:
 *  - more won moves than lost: it won at 2+ shapes: a "win" lesson scoped by
 *    the bounds of those shapes ("rows >= 256 && rows <= 4096 && ..."), at exactly one: a
 *    "shape" lesson scoped to that shape ("rows == 256 && ..."); the action reports the
 *    gains over the parent ("Set K=V: moving to it beat the parent at 2 shapes, 1.18x to
 *    1.31x over the parent ...");
 *  - no won move, and some of its nodes failed (compile_failed, rejected, crashed): a
 *    "fail" lesson (avoid it) naming the reasons;
 *  - otherwise, as many lost moves as won or more: a "lose" lesson ("Do not expect K=V to
 *    help"): a move to it is no better than a coin flip against where it came from; but
 *    only on repeated or significant evidence (2+ lost moves, or one at most
 *    KF_DISTILL_LOSS of its parent's speed): one noisy move teaches nothing.
 * Each lesson has a merge key (distill|backend|op|kind|K=V|scope). A key already in the
 * database is the same lesson: evidence this run adds (nodes not seen before) confirms
 * it once. A win and a fail/lose of the same K=V for the same backend and op contradict:
 * new evidence for one refutes the others once. A lesson refuted more often than
 * confirmed is retired. Distilling the same run twice changes nothing, however its path
 * is spelled, and from a copy of a sealed run's directory too: what a lesson has counted
 * is kept in the lessons database's `distilled` table, one row per (lesson, node), the
 * node named by its run (the seal's key id, the same in every copy; an unsealed run's
 * real path), its id and its source hash (a copy resumed apart makes other nodes under
 * the same ids). Nodes whose rows
 * do not match their seals (tampered) and nodes the Critic vetoed for what they are
 * (integrity, plausibility, a suspicious gain, needs_review) are no evidence.
 */
#define _GNU_SOURCE
#include "lessons.h"
#include "../backend/registry.h"
#include "../check/verdict.h"
#include "../store/store.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define EVIDENCE_MAX 64       /* node ids and effects kept per lesson */
#define KF_DISTILL_FLOOR 1.05 /* a move beat its parent at a shape when it gained this much there */
/* a single lost move teaches "do not" only when it lost clearly: at most this much of its
 * parent's speed at its best shape (10% slower everywhere); else two lost moves are needed */
#define KF_DISTILL_LOSS 0.90

typedef struct {
    int64_t id, parent;
    kf_node_state state;
    json_t *params;
    struct kf_verdict shapes; /* its shapes column */
    char *reasons;
    char category[32];
    char src[17];          /* the first 16 hex digits of its source hash: part of its identity */
    char hash[65], ext[8]; /* its source in the run (RUN/src/<hash>.<ext>) */
    int vetoed;            /* reverted by a Critic's veto that says nothing of its speed (integrity,
                              plausibility, a suspicious gain, needs_review): no evidence either way */
    char desc[204];        /* its submitter's description of the change ("" for none) */
} dnode;

typedef struct {
    dnode *v;
    size_t n, cap;
    int oom; /* a node could not be copied: the run was not read whole */
} dvec;

static int collect(void *arg, const kf_node *n) {
    dvec *a = arg;
    if (n->tampered) return 0; /* its row does not match its seal: no evidence of anything */
    if (a->n == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 64;
        dnode *v = realloc(a->v, cap * sizeof *v);
        if (!v) return a->oom = 1;
        a->v = v;
        a->cap = cap;
    }
    dnode *d = &a->v[a->n++];
    d->id = n->id;
    d->parent = n->parent;
    d->state = n->state;
    /* a column that does not parse for want of memory moves kf__alloc_failures (jansson
     * allocates through it), which kf_lessons_distill checks before it writes; the
     * typed verdict's own allocations say so in its oom */
    d->params = n->params_json ? json_loads(n->params_json, 0, NULL) : NULL;
    kf_verdict_from_text(n->shapes_json, &d->shapes);
    if (d->shapes.oom) a->oom = 1;
    d->reasons = n->reasons ? kf__strdup(n->reasons) : NULL;
    if (n->reasons && !d->reasons) a->oom = 1;
    memcpy(d->category, n->category, sizeof d->category);
    snprintf(d->src, sizeof d->src, "%.16s", n->src_hash);
    memcpy(d->hash, n->src_hash, sizeof d->hash);
    memcpy(d->ext, n->ext, sizeof d->ext);
    d->vetoed = 0;
    d->desc[0] = 0;
    return 0;
}

/* The submitters' descriptions (description events) onto their nodes. */
static int node_description(void *arg, int64_t id, int64_t node, const char *js, double created) {
    (void)id;
    (void)created;
    dvec *a = arg;
    json_t *j = json_loads(js, 0, NULL);
    const char *t = json_string_value(json_object_get(j, "text"));
    for (size_t k = 0; t && k < a->n; k++)
        if (a->v[k].id == node) snprintf(a->v[k].desc, sizeof a->v[k].desc, "%s", t);
    json_decref(j);
    return 0;
}

/* What the nodes (a JSON array of ids) said they did, from their descriptions: '. What the
 * change was: "..." (node 3); ...' (at most three), or "" (caller frees). */
static char *described(const dvec *a, json_t *nodes) {
    kf_buf b;
    kf_buf_init(&b, 4096);
    size_t i;
    json_t *x;
    int k = 0;
    json_array_foreach(nodes, i, x) {
        for (size_t m = 0; m < a->n && k < 3; m++)
            if (a->v[m].id == json_integer_value(x) && a->v[m].desc[0]) {
                kf_buf_printf(&b, "%s\"%s\" (node %lld)", k ? "; " : ". What the change was: ", a->v[m].desc,
                              (long long)a->v[m].id);
                k++;
            }
    }
    char *s = b.p ? b.p : kf__strdup("");
    return s;
}

/* The Critic's decisions (critic events): a reverted node whose veto was not about its
 * gain (no win over the parent, or re-timings that did not confirm one) is marked. */
static int critic_veto(void *arg, int64_t id, int64_t node, const char *js, double created) {
    (void)id;
    (void)created;
    dvec *a = arg;
    json_t *j = json_loads(js, 0, NULL);
    const char *d = json_string_value(json_object_get(j, "decision"));
    int veto = 0;
    if (d && strcmp(d, "approve")) {
        size_t i;
        json_t *c;
        json_array_foreach(json_object_get(j, "checks"), i, c) {
            const char *name = json_string_value(json_object_get(c, "check"));
            const char *out = json_string_value(json_object_get(c, "outcome"));
            if (name && out && strcmp(out, "pass") &&
                (!strcmp(name, "integrity") || !strcmp(name, "plausibility") || !strcmp(name, "suspicious") ||
                 !strcmp(out, "review")))
                veto = 1;
        }
    }
    json_decref(j);
    for (size_t k = 0; veto && k < a->n; k++)
        if (a->v[k].id == node) a->v[k].vetoed = 1;
    return 0;
}

/* ---- what a change is, in words ------------------------------------------------------- */

static int idch(int c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* A source's comments without the kforge: directives, one space between them; caller
 * frees. */
static char *comment_text(const char *src) {
    kf_buf b;
    kf_buf_init(&b, 1u << 20);
    for (const char *p = src; p && *p;) {
        const char *o = strstr(p, "/*"), *l = strstr(p, "//"), *st, *e;
        if (!o && !l) break;
        int line = l && (!o || l < o);
        st = (line ? l : o) + 2;
        e = line ? strchr(st, '\n') : strstr(st, "*/");
        if (!e) e = st + strlen(st);
        size_t n = (size_t)(e - st);
        int directive = 0;
        for (const char *q = st; q + 7 <= e && !directive; q++) directive = !strncmp(q, "kforge:", 7);
        if (!directive) {
            kf_buf_append(&b, " ", 1);
            for (size_t i = 0; i < n; i++) { /* line breaks and the leading stars go */
                char c = st[i];
                if (c == '\n' || c == '\r' || c == '\t') c = ' ';
                if (c == '*' && i + 1 < n && st[i + 1] == ' ' && (i == 0 || st[i - 1] == ' ')) continue;
                if (c == ' ' && b.len && b.p[b.len - 1] == ' ') continue;
                kf_buf_append(&b, &c, 1);
            }
        }
        p = *e ? e + (line ? 1 : 2) : e;
    }
    if (b.oom) { /* counted (kf__alloc_failures): the caller's lesson is not written */
        kf_buf_free(&b);
        return NULL;
    }
    return b.p ? b.p : kf__strdup("");
}

/* What the template says template parameter name is: a comment after its kforge:param
 * line on the same line, else the clause of the file's comments that names it ("W picks
 * the vector width", "ACC the independent sum-of-squares accumulators per step of the
 * reduction pass"; one where the name is followed by a word or ':' is preferred, "(BM)"
 * takes the words before it). NULL when none; caller frees. */
static char *param_meaning(const char *src, const char *name) {
    size_t nl = strlen(name);
    if (!src || !nl) return NULL;
    /* the directive's own line: "kforge:param NT = 1, 2 */ // threads per row" */
    for (const char *d = src; (d = strstr(d, "kforge:param")); d += 12) {
        const char *q = d + 12;
        while (*q == ' ') q++;
        if (strncmp(q, name, nl) || idch(q[nl])) continue;
        const char *eol = strchr(q, '\n'), *close = strstr(q, "*/");
        if (!eol) eol = q + strlen(q);
        if (close && close < eol) {
            const char *t = close + 2;
            while (t < eol && *t == ' ') t++;
            if (t + 2 < eol && (!strncmp(t, "//", 2) || !strncmp(t, "/*", 2))) {
                t += 2;
                while (t < eol && *t == ' ') t++;
                const char *e = eol;
                if (strstr(t, "*/") && strstr(t, "*/") < eol) e = strstr(t, "*/");
                while (e > t && (e[-1] == ' ' || e[-1] == '\r')) e--;
                if (e > t) return kf__asprintf("%s: %.*s", name, (int)(e - t > 120 ? 120 : e - t), t);
            }
        }
        break;
    }
    char *c = comment_text(src);
    if (!c) return NULL;
    const char *best = NULL;
    int inparen = 0;
    for (const char *p = c; (p = strstr(p, name)); p += nl) {
        if ((p > c && idch(p[-1])) || idch(p[nl])) continue;
        int word = (p[nl] == ' ' && p[nl + 1] >= 'a' && p[nl + 1] <= 'z') || p[nl] == ':';
        int paren = p > c && p[-1] == '(' && p[nl] == ')';
        if (word || paren) {
            best = p;
            inparen = paren;
            break;
        }
        if (!best) best = p;
    }
    char *out = NULL;
    if (best && inparen) { /* "over rows of x (BM)": the words before it, back to the clause's start */
        const char *e = best - 1, *st = e;
        while (st > c && !strchr(",;.:", st[-1])) st--;
        while (st < e && *st == ' ') st++;
        while (e > st && e[-1] == ' ') e--;
        if (e > st) out = kf__asprintf("%s: %.*s", name, (int)(e - st > 120 ? 120 : e - st), st);
    } else if (best) {
        const char *e = best;
        while (*e && !strchr(",;(", *e) && !(*e == '.' && (e[1] == ' ' || !e[1]))) e++;
        while (e > best && e[-1] == ' ') e--;
        if ((size_t)(e - best) > nl + 2)
            out = kf__asprintf("%.*s", (int)(e - best > 120 ? 120 : e - best), best);
    }
    free(c);
    return out;
}

/* A source's kforge:when (its domain), or NULL; caller frees. */
static char *when_of(const char *src) {
    const char *d = src ? strstr(src, "kforge:when") : NULL;
    if (!d) return NULL;
    d += 11;
    while (*d == ' ') d++;
    const char *e = d;
    while (*e && *e != '\n' && strncmp(e, "*/", 2)) e++;
    while (e > d && e[-1] == ' ') e--;
    return e > d ? kf__asprintf("%.*s", (int)(e - d), d) : NULL;
}

/* 1 when text has the line l[0..n) (leading blanks and trailing ones aside). */
static int has_line(const char *text, const char *l, size_t n) {
    for (const char *p = text; p && *p;) {
        const char *e = strchr(p, '\n');
        const char *a = p, *z = e ? e : p + strlen(p);
        while (a < z && (*a == ' ' || *a == '\t')) a++;
        while (z > a && (z[-1] == ' ' || z[-1] == '\r')) z--;
        if ((size_t)(z - a) == n && !strncmp(a, l, n)) return 1;
        p = e ? e + 1 : NULL;
    }
    return 0;
}

/* What a rewrite changed, read off the lines its text has and its parent's does not: the
 * technique those lines show (a kforge:when: specialisation; vector types, intrinsics or a
 * simd pragma: vectorisation; an unroll pragma: unrolling; shared-memory tiles: tiling)
 * into label, or the claimed category when the lines show none, except a claimed
 * specialisation without a kforge:when, which is none ("other"); and the words for the
 * lesson ("added GCC vector types; 14 lines changed"; caller frees). */
static char *rewrite_change(const char *src, const char *psrc, const char *claimed, char *label, size_t ln) {
    static const struct {
        const char *pat, *label, *words;
    } feat[] = {
        {"kforge:when", "specialisation", "a kforge:when domain"},
        {"vector_size", "vectorisation", "GCC vector types"},
        {"_mm256_", "vectorisation", "AVX intrinsics"},
        {"_mm512_", "vectorisation", "AVX-512 intrinsics"},
        {"_mm_", "vectorisation", "SSE intrinsics"},
        {"float4", "vectorisation", "float4 loads"},
        {"omp simd", "vectorisation", "a simd pragma"},
        {"pragma unroll", "unrolling", "an unroll pragma"},
        {"GCC unroll", "unrolling", "an unroll pragma"},
        {"__shared__", "tiling", "shared-memory tiles"},
    };
    int hit[sizeof feat / sizeof *feat] = {0};
    int changed = 0;
    for (const char *p = src; p && *p;) {
        const char *e = strchr(p, '\n');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        const char *a = p, *z = p + n;
        while (a < z && (*a == ' ' || *a == '\t')) a++;
        while (z > a && (z[-1] == ' ' || z[-1] == '\r')) z--;
        int fresh = z > a && !has_line(psrc, a, (size_t)(z - a));
        if (fresh) {
            changed++;
            for (size_t k = 0; k < sizeof feat / sizeof *feat; k++) {
                const char *f = strstr(a, feat[k].pat);
                if (f && f < z) hit[k] = 1;
            }
        }
        p = e ? e + 1 : p + n;
    }
    const char *lab = NULL;
    kf_buf b;
    kf_buf_init(&b, 4096);
    for (size_t k = 0; k < sizeof feat / sizeof *feat; k++) {
        if (!hit[k]) continue;
        if (!lab) lab = feat[k].label;
        if (!b.p || !strstr(b.p, feat[k].words))
            kf_buf_printf(&b, "%s%s", b.len ? ", " : "added ", feat[k].words);
    }
    if (!lab) lab = claimed && strcmp(claimed, "specialisation") ? claimed : "other";
    snprintf(label, ln, "%s", lab);
    if (claimed && strcmp(claimed, lab)) kf_buf_printf(&b, "%sproposed as %s", b.len ? "; " : "", claimed);
    if (psrc) kf_buf_printf(&b, "%s%d line%s changed", b.len ? "; " : "", changed, changed == 1 ? "" : "s");
    return b.p;
}

/* One K=V change and what became of the nodes that made it. */
typedef struct {
    char setting[160];        /* "BLOCK=256" */
    json_t *won;              /* sizes (compact JSON text) -> {sizes, gain over the parent, nodes[]} */
    json_t *lost, *failed;    /* arrays of node ids */
    json_t *reasons;          /* reason -> count */
    size_t nwon;              /* moves to it that won (kept, 5% over the parent somewhere) */
    double best_lost;         /* the best gain over the parent among the lost moves */
    char *what;               /* what the change is, in words: the template parameter's own
                                 comment, or what a rewrite's diff added (NULL: unknown) */
    char *when;               /* a won move's kforge:when (its domain), NULL: none */
    int what_read, when_read; /* the texts were read for them (once a change: a 100,000-node
                                 run is not read node by node) */
} change;

typedef struct {
    change *v;
    size_t n, cap;
} cvec;

static change *change_get(cvec *c, const char *setting) {
    for (size_t i = 0; i < c->n; i++)
        if (!strcmp(c->v[i].setting, setting)) return &c->v[i];
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 32;
        change *v = realloc(c->v, cap * sizeof *v);
        if (!v) {
            kf__alloc_failed();
            return NULL;
        }
        c->v = v;
        c->cap = cap;
    }
    change *x = &c->v[c->n++];
    memset(x, 0, sizeof *x);
    snprintf(x->setting, sizeof x->setting, "%s", setting);
    x->won = json_object();
    x->lost = json_array();
    x->failed = json_array();
    x->reasons = json_object();
    return x;
}

static void value_text(json_t *v, char *out, size_t n) {
    if (json_is_string(v)) snprintf(out, n, "%s", json_string_value(v));
    else if (json_is_integer(v)) snprintf(out, n, "%lld", (long long)json_integer_value(v));
    else {
        char *s = kf__json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
        snprintf(out, n, "%s", s ? s : "?");
        free(s);
    }
}

/* The node of that id: a->v is in id order (kf_store_each_node), so a binary search
 * (a linear one made distilling a 100,000-node run quadratic). */
static const dnode *find_node(const dvec *a, int64_t id) {
    size_t lo = 0, hi = a->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (a->v[mid].id < id) lo = mid + 1;
        else hi = mid;
    }
    return lo < a->n && a->v[lo].id == id ? &a->v[lo] : NULL;
}

/* The predicate covering these sizes objects: a bound per size (== when one value). */
static char *predicate(json_t *sizes_list) {
    json_t *first = json_array_get(sizes_list, 0);
    const char *names[32];
    int nn = 0;
    const char *k;
    json_t *v;
    json_object_foreach(first, k, v) if (nn < 32) names[nn++] = k;
    for (int i = 1; i < nn; i++) /* sorted: the same shapes give the same text */
        for (int j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
            const char *t = names[j];
            names[j] = names[j - 1];
            names[j - 1] = t;
        }
    kf_buf b;
    kf_buf_init(&b, 1 << 16);
    for (int i = 0; i < nn; i++) {
        int64_t lo = INT64_MAX, hi = INT64_MIN;
        size_t s;
        json_t *x;
        json_array_foreach(sizes_list, s, x) {
            int64_t val = json_integer_value(json_object_get(x, names[i]));
            if (val < lo) lo = val;
            if (val > hi) hi = val;
        }
        if (lo == hi) kf_buf_printf(&b, "%s%s == %lld", b.len ? " && " : "", names[i], (long long)lo);
        else
            kf_buf_printf(&b, "%s%s >= %lld && %s <= %lld", b.len ? " && " : "", names[i], (long long)lo,
                          names[i], (long long)hi);
    }
    if (!b.p) kf_buf_append(&b, "", 0);
    return b.p;
}

typedef struct {
    kf_lessons *db;
    const char *run, *op, *backend, *task, *fingerprint;
    json_t *summary;
    const char *key_id;    /* the run's key id (NULL: unsealed): names it whatever its path */
    const char *run_given; /* the run's directory as given: how evidence named it before */
    const dvec *a;         /* the run's nodes (their source hashes) */
    sqlite3_stmt *count_q; /* count_once's insert, prepared once */
    const kf_task *t;      /* the run's task when it still loads: its "ops" widen the scope */
} dctx;

/* Lesson id under key ("added", "refuted", ...) of the summary: KF_ENOMEM when it cannot
 * be noted (the call then fails and its transaction is rolled back: a summary that
 * leaves out a change is no summary). */
static kf_status noted(dctx *d, const char *key, const char *id) {
    if (json_array_append_new(json_object_get(d->summary, key), json_string(id)))
        return kf__err(d->db->ctx, KF_ENOMEM, "out of memory");
    return KF_OK;
}

/* A node's identity for what a lesson has counted ("key:KEYID#id#SRC", or "path:REALPATH#
 * id#SRC" for an unsealed run), from its evidence item "REALPATH#id"; NULL when malformed. */
static char *ident(const dctx *d, const char *item) {
    const char *h = strrchr(item, '#');
    if (!h) return NULL;
    long long id = strtoll(h + 1, NULL, 10);
    const dnode *nd = find_node(d->a, id);
    const char *src = nd ? nd->src : "";
    return d->key_id ? kf__asprintf("key:%s#%lld#%s", d->key_id, id, src)
                     : kf__asprintf("path:%s#%lld#%s", d->run, id, src);
}

/* Count node item for what (a lesson's key, or "refute|" and a lesson's id): 1 when it
 * is new there (and now recorded), 0 when counted before, -1 on a database error. A
 * lesson distilled before the table existed named its nodes in evidence field (legacy:
 * "RUN#id", RUN as typed then or its real path): such a node is counted too, and
 * recorded, when the same run is distilled again under either name. */
static int count_once(dctx *d, const char *what, const char *item, json_t *legacy) {
    char *id = ident(d, item);
    if (!id) return -1;
    int rc = -1;
    if (!d->count_q &&
        sqlite3_prepare_v2(d->db->db, "INSERT OR IGNORE INTO distilled(what, item) VALUES(?1, ?2)", -1,
                           &d->count_q, NULL) != SQLITE_OK)
        d->count_q = NULL;
    if (d->count_q) {
        sqlite3_reset(d->count_q);
        sqlite3_bind_text(d->count_q, 1, what, -1, SQLITE_STATIC);
        sqlite3_bind_text(d->count_q, 2, id, -1, SQLITE_STATIC);
        if (sqlite3_step(d->count_q) == SQLITE_DONE) rc = sqlite3_changes(d->db->db) == 1;
        sqlite3_clear_bindings(d->count_q);
    }
    free(id);
    if (rc == 1 && legacy) { /* new to the table: was it counted under the old naming? */
        const char *h = strrchr(item, '#');
        char *given = kf__asprintf("%s%s", d->run_given, h);
        size_t i;
        json_t *x;
        json_array_foreach(legacy, i, x) {
            const char *v = json_string_value(x);
            if (v && (!strcmp(v, item) || !strcmp(v, given))) rc = 0;
        }
        free(given);
    }
    return rc;
}

static void append_capped(json_t *ev, const char *field, json_t *item) {
    json_t *a = json_object_get(ev, field);
    if (!a) {
        a = json_array();
        json_object_set_new(ev, field, a);
    }
    if (json_array_size(a) < EVIDENCE_MAX) json_array_append(a, item);
    json_decref(item);
}

/* Refute (once) every lesson of the other direction for this setting. */
static kf_status refute(dctx *d, const char *setting, int win, json_t *new_nodes) {
    static const char *const kinds_win[] = {"fail", "lose", NULL}, *const kinds_bad[] = {"win", "shape",
                                                                                         NULL};
    const char *const *kinds = win ? kinds_win : kinds_bad;
    kf_status st = KF_OK;
    for (int k = 0; kinds[k] && !st; k++) {
        char *prefix = kf__asprintf("distill|%s|%s|%s|%s|", d->backend, d->op, kinds[k], setting);
        sqlite3_stmt *q = NULL;
        if (sqlite3_prepare_v2(d->db->db, "SELECT uid FROM lessons WHERE substr(key, 1, length(?1)) = ?1", -1,
                               &q, NULL) != SQLITE_OK) {
            free(prefix);
            return kf__err(d->db->ctx, KF_EIO, "%s: %s", d->db->path, sqlite3_errmsg(d->db->db));
        }
        sqlite3_bind_text(q, 1, prefix, -1, SQLITE_STATIC);
        json_t *ids = json_array();
        while (sqlite3_step(q) == SQLITE_ROW)
            json_array_append_new(ids, json_string((const char *)sqlite3_column_text(q, 0)));
        sqlite3_finalize(q);
        free(prefix);
        size_t i;
        json_t *x;
        json_array_foreach(ids, i, x) {
            kf_lesson l;
            if ((st = kf_lessons__get(d->db, json_string_value(x), &l))) break;
            json_t *ev = l.evidence_json ? json_loads(l.evidence_json, 0, NULL) : json_object();
            int fresh = 0;
            size_t j;
            json_t *y;
            char *what = kf__asprintf("refute|%s", json_string_value(x));
            json_array_foreach(new_nodes, j, y) {
                int c = count_once(d, what, json_string_value(y), json_object_get(ev, "refuted_by"));
                if (c < 0) {
                    st = kf__err(d->db->ctx, KF_EIO, "%s: %s", d->db->path, sqlite3_errmsg(d->db->db));
                    break;
                }
                if (c) {
                    fresh = 1;
                    append_capped(ev, "refuted_by", json_incref(y));
                }
            }
            free(what);
            if (!st && fresh && !l.retired) {
                l.refutations++;
                free(l.evidence_json);
                l.evidence_json = kf__json_dumps(ev, JSON_COMPACT | JSON_SORT_KEYS);
                l.updated = 0;
                int retire = l.refutations > l.confirmations;
                l.retired = retire;
                st = kf_lessons__put(d->db, &l);
                if (!st) st = noted(d, retire ? "retired" : "refuted", l.id);
            }
            json_decref(ev);
            kf_lesson_free(&l);
            if (st) break;
        }
        json_decref(ids);
    }
    return st;
}

/* Add a lesson or merge it into the one with the same key. */
static kf_status put_lesson(dctx *d, const char *kind, const char *setting, const char *shape,
                            const char *situation, const char *action, const char *boundaries, json_t *tags,
                            json_t *nodes, json_t *effects) {
    if (!situation || !action || !boundaries || !tags || !nodes || !effects) /* a part not built */
        return kf__err(d->db->ctx, KF_ENOMEM, "out of memory");
    char *key = kf__asprintf("distill|%s|%s|%s|%s|%s", d->backend, d->op, kind, setting, shape ? shape : "*");
    if (!key) return kf__err(d->db->ctx, KF_ENOMEM, "out of memory");
    kf_lesson l;
    int found = 0;
    kf_status st = kf_lessons__get_by_key(d->db, key, &l, &found);
    if (st) {
        free(key);
        return st;
    }
    json_t *ev;
    int fresh = 0;
    size_t i;
    json_t *x;
    if (found) {
        ev = l.evidence_json ? json_loads(l.evidence_json, 0, NULL) : json_object();
        json_array_foreach(nodes, i, x) {
            int c = count_once(d, key, json_string_value(x), json_object_get(ev, "nodes"));
            if (c < 0) {
                st = kf__err(d->db->ctx, KF_EIO, "%s: %s", d->db->path, sqlite3_errmsg(d->db->db));
                break;
            }
            if (c) {
                fresh = 1;
                append_capped(ev, "nodes", json_incref(x)); /* shown; what counted is in `distilled` */
            }
        }
        if (!st && fresh) {
            json_array_foreach(effects, i, x) append_capped(ev, "effects", json_incref(x));
            int known = 0;
            size_t j;
            json_t *y;
            json_array_foreach(json_object_get(ev, "fingerprints"), j, y) known |=
                !strcmp(json_string_value(y), d->fingerprint);
            if (!known) append_capped(ev, "fingerprints", json_string(d->fingerprint));
            l.confirmations++;
            if (l.retired && l.confirmations >= l.refutations) l.retired = 0;
            free(l.evidence_json);
            l.evidence_json = kf__json_dumps(ev, JSON_COMPACT | JSON_SORT_KEYS);
            free(l.action);
            l.action = kf__strdup(action); /* the newest numbers */
            l.updated = 0;
            st = kf_lessons__put(d->db, &l);
        }
        if (!st) st = noted(d, fresh ? "confirmed" : "unchanged", l.id);
        json_decref(ev);
    } else {
        ev = json_pack("{s:o, s:O, s:[s]}", "nodes", json_copy(nodes), "effects", effects, "fingerprints",
                       d->fingerprint);
        json_array_foreach(nodes, i, x) if (count_once(d, key, json_string_value(x), NULL) < 0) {
            st = kf__err(d->db->ctx, KF_EIO, "%s: %s", d->db->path, sqlite3_errmsg(d->db->db));
            break;
        }
        while (json_array_size(json_object_get(ev, "nodes")) > EVIDENCE_MAX) /* shown: the first ones */
            json_array_remove(json_object_get(ev, "nodes"), EVIDENCE_MAX);
        if (st) {
            json_decref(ev);
            free(key);
            return st;
        }
        json_t *sit = json_pack("{s:s, s:s, s:[s]}", "text", situation, "backend", d->backend, "ops", d->op);
        for (int k = 0; d->t && k < d->t->nops; k++) /* the task's families: lessons may travel */
            if (strcmp(d->t->ops[k], d->op))
                json_array_append_new(json_object_get(sit, "ops"), json_string(d->t->ops[k]));
        if (shape) json_object_set_new(sit, "shape", json_string(shape));
        json_t *o = json_pack("{s:o, s:s, s:o, s:{s:i, s:i}, s:s, s:O, s:s}", "situation", sit, "action",
                              action, "evidence", ev, "trust", "confirmations", 1, "refutations", 0, "source",
                              "distilled", "tags", tags, "key", key);
        if (boundaries) json_object_set_new(o, "boundaries", json_string(boundaries));
        char err[512];
        unsigned long failures = kf__alloc_failures();
        st = o ? kf_lessons__from_json(o, &l, err, sizeof err) : KF_ENOMEM;
        json_decref(o);
        if (st == KF_ENOMEM || (st && kf__alloc_failures() != failures))
            st = kf__err(d->db->ctx, KF_ENOMEM, "out of memory");
        else if (st) st = kf__err(d->db->ctx, KF_EINTERNAL, "distill made a bad lesson: %s", err);
        else st = kf_lessons__put(d->db, &l);
        if (!st) st = noted(d, "added", l.id);
        found = 1;
        fresh = 1;
    }
    if (found) kf_lesson_free(&l);
    free(key);
    if (!st && fresh) st = refute(d, setting, !strcmp(kind, "win") || !strcmp(kind, "shape"), nodes);
    return st;
}

/* What a setting is, in words: "the technique tiling" or "the template parameter BLOCK". */
static char *subject(const char *setting) {
    if (!strncmp(setting, "technique=", 10)) return kf__asprintf("the technique %s", setting + 10);
    return kf__asprintf("the template parameter %.*s", (int)strcspn(setting, "="), setting);
}

/* The imperative: "Use tiling" or "Set BLOCK=256". */
static char *doing(const char *setting) {
    if (!strncmp(setting, "technique=", 10)) return kf__asprintf("Use %s", setting + 10);
    return kf__asprintf("Set %s", setting);
}

static json_t *base_tags(dctx *d, const char *setting, const char *what) {
    char low[200];
    size_t i = 0;
    for (; setting[i] && i < sizeof low - 1; i++) {
        char c = setting[i];
        low[i] = (char)(c >= 'A' && c <= 'Z' ? c + 32 : c);
        if (!strchr("abcdefghijklmnopqrstuvwxyz0123456789_.=+-", low[i])) low[i] = '_';
    }
    low[i] = 0;
    if (!strncmp(low, "technique=", 10)) /* technique/tiling */
        return json_pack("[s, s++, s+]", d->op, d->backend, "/tuning/", what, "technique/", low + 10);
    return json_pack("[s, s++, s+]", d->op, d->backend, "/tuning/", what, "param/", low);
}

static kf_status emit(dctx *d, change *c) {
    kf_status st = KF_OK;
    size_t nwon = json_object_size(c->won), nmoves = c->nwon + json_array_size(c->lost);
    if (nwon && c->nwon > json_array_size(c->lost)) {
        json_t *sizes = json_array(), *nodes = json_array(), *effects = json_array();
        double lo = 1e300, hi = 0;
        const char *k;
        json_t *w;
        json_object_foreach(c->won, k, w) {
            json_array_append(sizes, json_object_get(w, "sizes"));
            double s = json_number_value(json_object_get(w, "gain"));
            lo = s < lo ? s : lo;
            hi = s > hi ? s : hi;
            size_t i;
            json_t *x;
            json_array_foreach(json_object_get(w, "nodes"), i, x) {
                int dup = 0;
                size_t j;
                json_t *y;
                json_array_foreach(nodes, j, y) dup |= json_equal(x, y);
                if (!dup) json_array_append(nodes, x);
            }
            json_array_append_new(effects, json_pack("{s:O, s:f}", "sizes", json_object_get(w, "sizes"),
                                                     "gain_over_parent", s));
        }
        char *pred = predicate(sizes);
        char *ids = kf__json_dumps(nodes, JSON_COMPACT);
        int one = nwon == 1;
        char *subj = subject(c->setting), *verb = doing(c->setting);
        if (c->what) { /* what the change is: "Set NT=4 (NT: threads per row)" */
            char *v2 = kf__asprintf("%s (%s)", verb, c->what);
            free(verb);
            verb = v2;
        }
        /* where it held: the shapes, and the domain its node claimed */
        char *where = c->when ? kf__asprintf("%s, within its kforge:when (%s)", pred, c->when) : pred ? kf__strdup(pred) : NULL;
        char *situation = kf__asprintf("%s kernels (task %s, %s backend) on %s %s: %s", d->op, d->task,
                                       d->backend, one ? "the shape" : "shapes with", where, subj);
        free(where);
        char *what = described(d->a, nodes);
        char *action =
            one ? kf__asprintf(
                      "%s for this shape: moving to it beat the parent there, %.2fx over the parent "
                      "(%zu of %zu moves to it won; nodes %s); a shape-specific win, dispatch it by shape%s",
                      verb, hi, c->nwon, nmoves, ids, what ? what : "")
                : kf__asprintf(
                      "%s: moving to it beat the parent at %zu shapes, %.2fx to %.2fx over the parent (%zu "
                      "of %zu moves to it won; nodes %s)%s",
                      verb, nwon, lo, hi, c->nwon, nmoves, ids, what ? what : "");
        free(what);
        free(subj);
        free(verb);
        char *bound =
            json_array_size(c->failed) || json_array_size(c->lost)
                ? kf__asprintf(
                      "Other moves to %s did not beat their parent or failed (%zu lost, %zu failed); "
                      "only measured on %s",
                      c->setting, json_array_size(c->lost), json_array_size(c->failed), pred)
                : kf__asprintf("Only measured on %s; not evidence for other shapes", pred);
        json_t *tags = base_tags(d, c->setting, "win");
        if (one) {
            json_t *s0 = json_array_get(sizes, 0);
            const char *name;
            json_t *v;
            json_object_foreach(s0, name, v) {
                char t[128], low[64];
                size_t i = 0;
                for (; name[i] && i < sizeof low - 1; i++)
                    low[i] = (char)(name[i] >= 'A' && name[i] <= 'Z' ? name[i] + 32 : name[i]);
                low[i] = 0;
                snprintf(t, sizeof t, "shape/%s=%lld", low, (long long)json_integer_value(v));
                json_array_append_new(tags, json_string(t));
            }
        }
        char *nodes_text = NULL;
        /* the node ids as evidence items of this run */
        json_t *items = json_array();
        size_t i;
        json_t *x;
        json_array_foreach(nodes, i, x) {
            nodes_text = kf__asprintf("%s#%lld", d->run, (long long)json_integer_value(x));
            json_array_append_new(items, json_string(nodes_text));
            free(nodes_text);
        }
        st = put_lesson(d, one ? "shape" : "win", c->setting, pred, situation, action, bound, tags, items,
                        effects);
        json_decref(items);
        json_decref(tags);
        free(situation);
        free(action);
        free(bound);
        free(ids);
        free(pred);
        json_decref(sizes);
        json_decref(nodes);
        json_decref(effects);
        return st;
    }
    /* no won move and some failed: avoid it; else as many lost moves as won or more: no help */
    int failed = !c->nwon && json_array_size(c->failed) > 0;
    json_t *which = failed ? c->failed : c->lost;
    if (!json_array_size(which)) return KF_OK;
    /* one lost move that did not clearly lose is noise, not a lesson (a single 1.03x
     * became "Do not expect ACC=2" at trust 0.67): two lost moves, or one at most
     * KF_DISTILL_LOSS of its parent's speed at its best shape */
    if (!failed && json_array_size(c->lost) < 2 && c->best_lost > KF_DISTILL_LOSS) return KF_OK;
    char *ids = kf__json_dumps(which, JSON_COMPACT);
    kf_buf rb;
    kf_buf_init(&rb, 4096);
    const char *k;
    json_t *v;
    json_object_foreach(c->reasons, k, v)
        kf_buf_printf(&rb, "%s%s x%lld", rb.len ? ", " : "", k, (long long)json_integer_value(v));
    char *subj = subject(c->setting);
    char *situation =
        c->what ? kf__asprintf("%s kernels (task %s, %s backend): %s (%s)", d->op, d->task, d->backend, subj,
                               c->what)
                : kf__asprintf("%s kernels (task %s, %s backend): %s", d->op, d->task, d->backend, subj);
    free(subj);
    size_t nf = json_array_size(c->failed), nl = json_array_size(c->lost);
    char *action =
        failed ? kf__asprintf("Avoid %s: %zu of its candidates failed (%s; nodes %s) and none won",
                              c->setting, nf, rb.p ? rb.p : "no reason recorded", ids)
               : kf__asprintf("Do not expect %s to help: %zu of %zu moves to it did not beat %s parent "
                              "(not kept, or kept without a 5%% gain at any shape; best single timing "
                              "%.2fx over the parent; nodes %s)",
                              c->setting, nl, nmoves, nl == 1 ? "its" : "their", c->best_lost, ids);
    json_t *tags = base_tags(d, c->setting, failed ? "fail" : "lose");
    json_t *items = json_array(), *effects = json_array();
    size_t i;
    json_t *x;
    json_array_foreach(which, i, x) {
        char *t = kf__asprintf("%s#%lld", d->run, (long long)json_integer_value(x));
        json_array_append_new(items, json_string(t));
        free(t);
    }
    if (!failed)
        json_array_append_new(effects, json_pack("{s:f, s:i}", "best_gain_over_parent", c->best_lost,
                                                 "won_moves", (json_int_t)c->nwon));
    else json_array_append_new(effects, json_pack("{s:s}", "reasons", rb.p ? rb.p : ""));
    st = put_lesson(d, failed ? "fail" : "lose", c->setting, NULL, situation, action,
                    "Seen on this task's shapes only", tags, items, effects);
    json_decref(items);
    json_decref(effects);
    json_decref(tags);
    free(situation);
    free(action);
    kf_buf_free(&rb);
    free(ids);
    return st;
}

/* The parent's speedup over the reference at these sizes: 1 for the reference itself (a
 * rewrite under the root), 0 when the parent was not measured there. */
static double parent_at(const dnode *p, const kf_verdict_sizes *sizes) {
    if (!p) return 1.0;
    const kf_verdict_shape *s = kf_verdict_find(&p->shapes, sizes);
    return s ? s->speedup : 0;
}

/* Record what the move to this setting did: node n against its parent p (NULL: the
 * reference). */
static void record(change *c, const dnode *n, const dnode *p) {
    json_t *idj = json_integer(n->id);
    if (n->vetoed) {
        /* vetoed for what it is, not for its speed: no lesson either way */
    } else if (n->state == KF_NODE_KEPT || n->state == KF_NODE_MEASURED || n->state == KF_NODE_REVERTED) {
        int won = 0;
        double best = 0;
        for (int i = 0; i < n->shapes.nshapes; i++) {
            const kf_verdict_shape *s = &n->shapes.shapes[i];
            double sp = s->speedup, ps = parent_at(p, &s->sizes);
            if (sp <= 0 || ps <= 0) continue;
            double g = sp / ps;
            if (g > best) best = g;
            if (n->state != KF_NODE_KEPT || g < KF_DISTILL_FLOOR) continue;
            won = 1;
            json_t *sizes = kf_verdict_sizes_json(&s->sizes);
            char *key = sizes ? kf__json_dumps(sizes, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
            json_t *w = key ? json_object_get(c->won, key) : NULL;
            if (key && !w) {
                w = json_pack("{s:O, s:f, s:[]}", "sizes", sizes, "gain", g, "nodes");
                json_object_set_new(c->won, key, w);
            } else if (w && g > json_number_value(json_object_get(w, "gain"))) {
                json_object_set_new(w, "gain", json_real(g));
            }
            if (w) json_array_append(json_object_get(w, "nodes"), idj);
            free(key);
            json_decref(sizes);
        }
        if (won) c->nwon++;
        else {
            json_array_append(c->lost, idj);
            if (best > c->best_lost) c->best_lost = best;
        }
    } else if (n->state == KF_NODE_COMPILE_FAILED || n->state == KF_NODE_REJECTED ||
               n->state == KF_NODE_CRASHED) {
        json_array_append(c->failed, idj);
        char r[256];
        snprintf(r, sizeof r, "%s", n->reasons ? n->reasons : kf_node_state_name(n->state));
        for (char *save = NULL, *t = strtok_r(r, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
            json_t *cnt = json_object_get(c->reasons, t);
            json_object_set_new(c->reasons, t, json_integer(cnt ? json_integer_value(cnt) + 1 : 1));
        }
    }
    json_decref(idj);
}

static int measured(const dnode *p) {
    return (p->state == KF_NODE_KEPT || p->state == KF_NODE_MEASURED || p->state == KF_NODE_REVERTED) &&
           p->shapes.nshapes > 0;
}

/* Where distill reads the texts behind a change: the run's sources, the reference's file
 * (a rewrite under the root changed the reference), the submitters' descriptions. */
typedef struct {
    kf_store *st;
    const char *ref_path; /* NULL when the task no longer loads */
    json_t *desc;         /* "ID" -> the one-line description its submitter gave */
} dsrc;

/* Node n's text (NULL: the reference's), or NULL when it cannot be read; caller frees. */
static char *node_text(const dsrc *ds, const dnode *n) {
    char *t = NULL;
    size_t l = 0;
    if (!n) return ds->ref_path && !kf__read_file(ds->ref_path, 16u << 20, &t, &l) ? t : NULL;
    return kf_store_read_source(ds->st, n->hash, n->ext, &t, &l) ? NULL : t;
}

/* The submitters' descriptions ("description" events: {text}), by node. */
static int submit_desc(void *arg, int64_t id, int64_t node, const char *js, double created) {
    (void)id;
    (void)created;
    json_t *j = json_loads(js, 0, NULL);
    const char *d = json_string_value(json_object_get(j, "text"));
    if (d && *d) {
        char key[32];
        snprintf(key, sizeof key, "%lld", (long long)node);
        json_object_set_new(arg, key, json_string(d));
    }
    json_decref(j);
    return 0;
}

static void add_change(cvec *cv, const dvec *a, const dnode *n, const dsrc *ds) {
    if (!n->id) return;
    int templated = json_is_object(n->params) && json_object_size(n->params);
    const dnode *p = NULL;
    if (n->parent) {
        p = find_node(a, n->parent);
        /* a parent that is no evidence (tampered: not read; vetoed for what it is; never
         * measured): what the move to this node did is unknown */
        if (!p || p->vetoed || !measured(p)) return;
    }
    if (templated) {
        /* the defaults and restarts (under the root), or a template point reached from a
         * rewrite: nothing was changed from a measured point of the template */
        if (!p || !json_is_object(p->params) || !json_object_size(p->params)) return;
        const char *k;
        json_t *v;
        char *txt = NULL;
        int read = 0;
        json_object_foreach(n->params, k, v) {
            json_t *pv = json_object_get(p->params, k);
            if (pv && json_equal(pv, v)) continue; /* not this node's change */
            char val[96], setting[160];
            value_text(v, val, sizeof val);
            snprintf(setting, sizeof setting, "%s=%s", k, val);
            change *c = change_get(cv, setting);
            if (!c) break;
            int want_when = !c->when_read && n->state == KF_NODE_KEPT;
            if ((!c->what_read || want_when) && !read++) txt = node_text(ds, n);
            if (!c->what_read)
                c->what = param_meaning(txt, k), c->what_read = 1; /* what the template says K is */
            if (want_when) c->when = when_of(txt), c->when_read = 1;
            record(c, n, p);
        }
        free(txt);
    } else { /* a rewrite: the technique its diff shows, else the one it was proposed as */
        char *txt = node_text(ds, n), *ptxt = node_text(ds, p), label[32];
        char *what =
            txt ? rewrite_change(txt, ptxt, n->category[0] ? n->category : NULL, label, sizeof label) : NULL;
        if (!txt) snprintf(label, sizeof label, "%s", n->category);
        char key[32];
        snprintf(key, sizeof key, "%lld", (long long)n->id);
        const char *desc = json_string_value(json_object_get(ds->desc, key));
        if (label[0] && strcmp(label, "other")) {
            char setting[160];
            snprintf(setting, sizeof setting, "technique=%s", label);
            change *c = change_get(cv, setting);
            if (c && !c->what && (what || desc))
                c->what = desc ? kf__asprintf("\"%s\"%s%s", desc, what ? "; " : "", what ? what : "")
                               : kf__strdup(what);
            if (c && !c->when_read && n->state == KF_NODE_KEPT) c->when = when_of(txt), c->when_read = 1;
            if (c) record(c, n, p);
        }
        free(what);
        free(txt);
        free(ptxt);
    }
}

kf_status kf_lessons_distill(kf_lessons *db, const char *run_dir, char **summary) {
    if (summary) *summary = NULL;
    kf_store *s = NULL;
    /* every step below shrugs off an allocation that failed (a lesson without its words,
     * a node without its shapes); the count says whether one did, and then nothing is
     * written (the fault tests fail each allocation in turn) */
    unsigned long failures = kf__alloc_failures();
    kf_status st = kf_store_open(db->ctx, run_dir, NULL, &s);
    if (st) return st;
    dvec a = {0};
    cvec cv = {0};
    kf_task *task = NULL;
    char op[160], backend[32], run[4096], task_name[128];
    if ((st = kf_store_each_node(s, collect, &a))) goto out;
    /* a stop of the walk is no error to the store: distilling part of a run would
     * teach from the nodes that happened to fit */
    if (a.oom) {
        st = kf__err(db->ctx, KF_ENOMEM, "out of memory");
        goto out;
    }
    if ((st = kf_store_each_event(s, "critic", critic_veto, &a))) goto out;
    if ((st = kf_store_each_event(s, "description", node_description, &a))) goto out;
    /* the run's name in evidence: its directory's real path (one name however it is
     * spelled; the key id covers copies), or as given when that cannot be resolved */
    char *real = realpath(run_dir, NULL);
    snprintf(run, sizeof run, "%s", real ? real : run_dir);
    free(real);
    for (size_t n = strlen(run); n > 1 && run[n - 1] == '/'; n--) run[n - 1] = 0;
    const char *td = kf_store_task_dir(s);
    const char *base = strrchr(td, '/');
    snprintf(task_name, sizeof task_name, "%s", base && base[1] ? base + 1 : td);
    /* the backend follows from the sources (registry.h); without any, the first one's */
    snprintf(backend, sizeof backend, "%s", kf_backend_name(kf_backend_at(0)));
    for (size_t i = 0; i < a.n; i++)
        if (a.v[i].id) {
            kf_node n;
            if (!kf_store_get_node(s, a.v[i].id, &n)) {
                kf_backend *be = kf_backend_by_ext(n.ext);
                if (be) snprintf(backend, sizeof backend, "%s", kf_backend_name(be));
                kf_node_free(&n);
            }
            break;
        }
    {
        /* a task that moved or changed still names its run; one that could not be read
         * for want of memory would name it differently (and teach other lessons) */
        kf_ctx *tctx = kf_ctx_new();
        kf_status tst = tctx ? kf_task_load(tctx, td, &task) : KF_ENOMEM;
        kf_ctx_free(tctx);
        if (tst == KF_ENOMEM) {
            st = kf__err(db->ctx, KF_ENOMEM, "out of memory");
            goto out;
        }
        if (tst == KF_OK) snprintf(task_name, sizeof task_name, "%s", kf_task_name(task));
    }
    for (char *p = task_name; *p; p++) {
        *p = (char)(*p >= 'A' && *p <= 'Z' ? *p + 32 : *p);
        if (!strchr("abcdefghijklmnopqrstuvwxyz0123456789_.=+-", *p)) *p = '_';
    }
    snprintf(op, sizeof op, "op/%s", task_name);
    char given[4096]; /* as typed, without trailing slashes: how evidence named runs before */
    snprintf(given, sizeof given, "%s", run_dir);
    for (size_t n = strlen(given); n > 1 && given[n - 1] == '/'; n--) given[n - 1] = 0;
    dctx d = {db,    run, op,   backend, task_name, kf_store_task_fingerprint(s), NULL, kf_store_key_id(s),
              given, &a,  NULL, task};
    d.summary = json_pack("{s:s, s:s, s:s, s:[], s:[], s:[], s:[], s:[]}", "run", run, "task", task_name,
                          "backend", backend, "added", "confirmed", "unchanged", "refuted", "retired");
    dsrc ds = {s, task ? task->ref_path : NULL, json_object()};
    if ((st = kf_store_each_event(s, "description", submit_desc, ds.desc))) {
        json_decref(ds.desc);
        json_decref(d.summary);
        goto out;
    }
    for (size_t i = 0; i < a.n; i++) add_change(&cv, &a, &a.v[i], &ds);
    json_decref(ds.desc);
    if (!d.summary || a.oom || kf__alloc_failures() != failures) st = kf__err(db->ctx, KF_ENOMEM, "out of memory");
    if (st || (st = kf_lessons__exec(db, "BEGIN IMMEDIATE"))) {
        json_decref(d.summary);
        goto out;
    }
    for (size_t i = 0; i < cv.n && !st; i++) st = emit(&d, &cv.v[i]);
    sqlite3_finalize(d.count_q);
    /* the summary before the commit: without it the call fails, and changes nothing */
    char *text = NULL;
    if (!st && summary &&
        (json_object_set_new(d.summary, "nodes", json_integer((json_int_t)a.n)) ||
         !(text = kf__json_dumps(d.summary, JSON_INDENT(1)))))
        st = kf__err(db->ctx, KF_ENOMEM, "out of memory");
    if (!st && kf__alloc_failures() != failures) st = kf__err(db->ctx, KF_ENOMEM, "out of memory");
    if (!st) st = kf_lessons__exec(db, "COMMIT");
    if (st) {
        sqlite3_exec(db->db, "ROLLBACK", NULL, NULL, NULL);
        kf_lessons__cache_drop(db);
        free(text);
    } else if (summary) {
        *summary = text;
    }
    json_decref(d.summary);
out:
    for (size_t i = 0; i < a.n; i++) {
        json_decref(a.v[i].params);
        kf_verdict_free(&a.v[i].shapes);
        free(a.v[i].reasons);
    }
    free(a.v);
    for (size_t i = 0; i < cv.n; i++) {
        json_decref(cv.v[i].won);
        json_decref(cv.v[i].lost);
        json_decref(cv.v[i].failed);
        json_decref(cv.v[i].reasons);
        free(cv.v[i].what);
        free(cv.v[i].when);
    }
    free(cv.v);
    kf_task_free(task);
    kf_store_close(s);
    return st;
}
