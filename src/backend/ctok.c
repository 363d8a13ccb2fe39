/*
 * ctok.c - a small C tokenizer and a scanner of the names a file defines at file scope,
 * the dispatcher slots (dispatch.c): each winner's names are prefixed apart so that
 * two winners' helpers cannot collide. Tokens are identifiers, numbers, string and
 * character literals and single punctuators, with the preprocessor lines marked;
 * comments are dropped. The scanner reads declarations, not C: names made by macros at
 * file scope (DEFINE_KERNEL(x)) are not seen, which is why a dispatcher is checked and
 * timed before it is written.
 */
#include "ctok.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* ---- a small C tokenizer ------------------------------------------------------------ */

static int tpush(kf_toks *t, int kind, int pp, int inc, size_t off, size_t len) {
    if (t->n == t->cap) {
        size_t c = t->cap ? t->cap * 2 : 1024;
        kf_tok *p = realloc(t->v, c * sizeof *p);
        if (!p) return -1;
        t->v = p, t->cap = c;
    }
    t->v[t->n++] = (kf_tok){kind, pp, inc, off, len};
    return 0;
}

int kf_ctok_idch(int c) { return isalnum(c) || c == '_' || c == '$'; }

/* The end of the token that starts at s[i] (not a space, newline or comment) and its kind:
 * a string or character literal, a number, an identifier, else one punctuator. */
static size_t token_end(const char *s, size_t n, size_t i, int *kind) {
    char c = s[i];
    if (c == '"' || c == '\'') {
        for (i++; i < n && s[i] != c && s[i] != '\n'; i++)
            if (s[i] == '\\') i++;
        i++;
        *kind = KF_TOK_STR;
        return i > n ? n : i;
    }
    if (isdigit((unsigned char)c) || (c == '.' && i + 1 < n && isdigit((unsigned char)s[i + 1]))) {
        for (i++; i < n && (kf_ctok_idch(s[i]) || s[i] == '.' ||
                            ((s[i] == '+' || s[i] == '-') && strchr("eEpP", s[i - 1])));
             i++) {
        }
        *kind = KF_TOK_NUM;
        return i;
    }
    if (kf_ctok_idch(c)) {
        while (i < n && kf_ctok_idch(s[i])) i++;
        *kind = KF_TOK_ID;
        return i;
    }
    *kind = KF_TOK_PUNCT;
    return i + 1;
}

int kf_ctok_tokenize(const char *s, size_t n, kf_toks *t) {
    size_t i = 0;
    int pp = 0, inc = 0, bol = 1;
    while (i < n) {
        char c = s[i];
        if (c == '\n') {
            if (!(i > 0 && s[i - 1] == '\\')) pp = inc = 0;
            bol = 1;
            i++;
            continue;
        }
        if (isspace((unsigned char)c) || c == '\\') {
            i++;
            continue;
        }
        if (c == '/' && i + 1 < n && s[i + 1] == '/') {
            while (i < n && s[i] != '\n') i++;
            continue;
        }
        if (c == '/' && i + 1 < n && s[i + 1] == '*') {
            const char *e = strstr(s + i + 2, "*/");
            i = e ? (size_t)(e - s) + 2 : n;
            continue;
        }
        size_t st = i;
        if (c == '#' && bol) {
            pp = 1;
            size_t j = i + 1;
            while (j < n && (s[j] == ' ' || s[j] == '\t')) j++;
            inc = !strncmp(s + j, "include", 7);
        }
        bol = 0;
        int kind;
        i = token_end(s, n, i, &kind);
        if (tpush(t, kind, pp, inc, st, i - st)) return -1;
    }
    return 0;
}

/* ---- the names a file defines at file scope ------------------------------------------ */

int kf_ctok_has(const kf_names *a, const char *s, size_t len) {
    for (size_t i = 0; i < a->n; i++)
        if (strlen(a->v[i]) == len && !memcmp(a->v[i], s, len)) return 1;
    return 0;
}

int kf_ctok_add(kf_names *a, const char *s, size_t len) {
    if (kf_ctok_has(a, s, len)) return 0;
    if (a->n == a->cap) {
        size_t c = a->cap ? a->cap * 2 : 32;
        char **p = realloc(a->v, c * sizeof *p);
        if (!p) return -1;
        a->v = p, a->cap = c;
    }
    char *d = malloc(len + 1);
    if (!d) return -1;
    memcpy(d, s, len);
    d[len] = 0;
    a->v[a->n++] = d;
    return 0;
}

void kf_ctok_names_free(kf_names *a) {
    for (size_t i = 0; i < a->n; i++) free(a->v[i]);
    free(a->v);
    memset(a, 0, sizeof *a);
}

static const char *const keywords[] = {
    "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else", "enum", "extern",
    "float", "for", "goto", "if", "inline", "int", "long", "register", "restrict", "return", "short",
    "signed", "sizeof", "static", "struct", "switch", "typedef", "union", "unsigned", "void", "volatile",
    "while", "_Alignas", "_Alignof", "_Atomic", "_Bool", "_Complex", "_Generic", "_Imaginary", "_Noreturn",
    "_Static_assert", "_Thread_local", "__restrict", "__restrict__", "__inline", "__inline__",
    "__extension__", "__const", "__volatile__", "__signed__", "__int128", "_Float16", "__fp16", "__bf16",
    "__thread", "__attribute__", "__attribute", "__typeof__", "__typeof", "typeof", "__asm__", "__asm", "asm",
    "__declspec", "static_assert", "bool",
    /* CUDA C (kernel-mode winners) */
    "__global__", "__device__", "__host__", "__forceinline__", "__noinline__", "__shared__", "__constant__",
    "__managed__", "template", "typename", "constexpr", NULL};

static int is_kw(const char *s, size_t len) {
    for (int i = 0; keywords[i]; i++)
        if (strlen(keywords[i]) == len && !memcmp(keywords[i], s, len)) return 1;
    return 0;
}

/* Groups skipped when looking for a declared name: attributes, alignment, typeof, asm. */
static int is_group_kw(const char *s, size_t len) {
    static const char *const g[] = {
        "__attribute__", "__attribute",       "__declspec", "_Alignas", "__typeof__",     "__typeof",
        "typeof",        "__asm__",           "__asm",      "asm",      "_Static_assert", "static_assert",
        "alignas",       "__launch_bounds__", "__align__",  NULL};
    for (int i = 0; g[i]; i++)
        if (strlen(g[i]) == len && !memcmp(g[i], s, len)) return 1;
    return 0;
}

typedef struct {
    const char *s;
    const kf_toks *t;
    kf_names *rename, *macros;
} scan;

static int tis(const scan *c, size_t i, const char *w) {
    const kf_tok *k = &c->t->v[i];
    return k->len == strlen(w) && !memcmp(c->s + k->off, w, k->len);
}

/* i at an opening bracket among the non-pp tokens idx[0..n): the index after its match. */
static size_t skip_group(const scan *c, const size_t *idx, size_t n, size_t i) {
    char open = c->s[c->t->v[idx[i]].off], close = open == '(' ? ')' : open == '[' ? ']' : '}';
    int d = 0;
    for (; i < n; i++) {
        const kf_tok *k = &c->t->v[idx[i]];
        if (k->kind != KF_TOK_PUNCT) continue;
        if (c->s[k->off] == open) d++;
        else if (c->s[k->off] == close && --d == 0) return i + 1;
    }
    return n;
}

/* One declarator's tokens (decl[a..b), token indices): the declared name, or -1. The
 * first identifier that is not a keyword or one of the file's macros and is followed by
 * ( [ ) : , or the end; "T (*" is a type before a grouped declarator. */
static long decl_name(const scan *c, const size_t *d, size_t a, size_t b, int *is_fn) {
    for (size_t i = a; i < b; i++) {
        const kf_tok *k = &c->t->v[d[i]];
        if (k->kind != KF_TOK_ID || is_kw(c->s + k->off, k->len) ||
            kf_ctok_has(c->macros, c->s + k->off, k->len))
            continue;
        char nx = i + 1 < b ? c->s[c->t->v[d[i + 1]].off] : ';';
        if (i + 1 < b && c->t->v[d[i + 1]].kind != KF_TOK_PUNCT) continue;
        if (!strchr("([):,;", nx)) continue;
        if (nx == '(' && i + 2 < b && strchr("*^", c->s[c->t->v[d[i + 2]].off])) continue;
        *is_fn = nx == '(';
        return (long)d[i];
    }
    return -1;
}

/* A finished declaration (decl: its tokens with attributes and brace groups removed). */
static int end_decl(scan *c, const size_t *d, size_t n, int fn_body) {
    int td = 0, ext = 0, stat = 0;
    for (size_t i = 0; i < n; i++) {
        td |= tis(c, d[i], "typedef");
        ext |= tis(c, d[i], "extern");
        stat |= tis(c, d[i], "static");
    }
    size_t a = 0;
    while (a < n) {
        /* one declarator: up to ',' at paren depth 0; an initializer after '=' is skipped */
        size_t b = a, eq = n;
        int pd = 0;
        for (; b < n; b++) {
            char ch = c->t->v[d[b]].kind == KF_TOK_PUNCT ? c->s[c->t->v[d[b]].off] : 0;
            if (ch == '(' || ch == '[') pd++;
            else if (ch == ')' || ch == ']') pd--;
            else if (ch == '=' && pd == 0 && eq == n) eq = b;
            else if (ch == ',' && pd == 0) break;
        }
        int is_fn = 0;
        long k = decl_name(c, d, a, eq < b ? eq : b, &is_fn);
        if (k >= 0) {
            const kf_tok *t = &c->t->v[k];
            const char *nm = c->s + t->off;
            /* an extern declaration or a non-static prototype may name a library
             * symbol: renamed only when the file defines it too (seen then) */
            if ((td || fn_body || (!is_fn && !ext) || (is_fn && stat)) && kf_ctok_add(c->rename, nm, t->len))
                return -1;
        }
        if (fn_body) break;
        a = b + 1;
    }
    return 0;
}

/* The names the text #defines into c->macros. 0, or -1 (no memory). */
static int scan_macros(scan *c) {
    const kf_toks *t = c->t;
    for (size_t i = 0; i + 1 < t->n; i++)
        if (t->v[i].pp && t->v[i].kind == KF_TOK_PUNCT && c->s[t->v[i].off] == '#' &&
            tis(c, i + 1, "define") && i + 2 < t->n && t->v[i + 2].pp && t->v[i + 2].kind == KF_TOK_ID &&
            kf_ctok_add(c->macros, c->s + t->v[i + 2].off, t->v[i + 2].len))
            return -1;
    return 0;
}

/* An enum's body (idx[i] its '{', idx[e - 1] its '}'): the first identifier of each item. */
static int enumerators(scan *c, const size_t *idx, size_t i, size_t e) {
    const kf_toks *t = c->t;
    int first = 1, pd = 0;
    for (size_t j = i + 1; j + 1 < e; j++) {
        const kf_tok *q = &t->v[idx[j]];
        char qc = q->kind == KF_TOK_PUNCT ? c->s[q->off] : 0;
        if (qc == '(') pd++;
        if (qc == ')') pd--;
        if (first && q->kind == KF_TOK_ID && kf_ctok_add(c->rename, c->s + q->off, q->len)) return -1;
        first = qc == ',' && pd == 0;
    }
    return 0;
}

/* A brace group at idx[i] after the declaration tokens decl[0..*nd): a struct, union or
 * enum tag names itself, a function body ends its declaration, an enum's body names its
 * enumerators. *next: the index after the group. 0, or -1 (no memory). */
static int brace_group(scan *c, const size_t *idx, size_t n, size_t i, const size_t *decl, size_t *nd,
                       size_t *next) {
    const kf_toks *t = c->t;
    const kf_tok *pv = *nd ? &t->v[decl[*nd - 1]] : NULL;
    char pc = pv && pv->kind == KF_TOK_PUNCT ? c->s[pv->off] : 0;
    int agg = 0, isenum = 0;
    for (size_t j = *nd; j-- > 0 && j + 3 > *nd;)
        if (tis(c, decl[j], "struct") || tis(c, decl[j], "union") || tis(c, decl[j], "enum")) {
            agg = 1;
            isenum = tis(c, decl[j], "enum");
            if (j + 1 < *nd && t->v[decl[j + 1]].kind == KF_TOK_ID &&
                kf_ctok_add(c->rename, c->s + t->v[decl[j + 1]].off, t->v[decl[j + 1]].len))
                return -1;
        }
    size_t e = skip_group(c, idx, n, i);
    if (pc == ')' && !agg) { /* a function body */
        if (end_decl(c, decl, *nd, 1)) return -1;
        *nd = 0;
    } else if (isenum && enumerators(c, idx, i, e)) {
        return -1;
    }
    *next = e;
    return 0;
}

int kf_ctok_scan(const char *s, const kf_toks *t, kf_names *rename, kf_names *macros) {
    scan sc = {s, t, rename, macros}, *c = &sc;
    if (scan_macros(c)) return -1;
    size_t *idx = malloc((t->n + 1) * sizeof *idx), *decl = malloc((t->n + 1) * sizeof *decl), n = 0, nd = 0;
    int rc = -1;
    if (!idx || !decl) goto out;
    for (size_t i = 0; i < t->n; i++)
        if (!t->v[i].pp) idx[n++] = i;
    for (size_t i = 0; i < n;) {
        const kf_tok *k = &t->v[idx[i]];
        char ch = k->kind == KF_TOK_PUNCT ? c->s[k->off] : 0;
        if (k->kind == KF_TOK_ID && is_group_kw(c->s + k->off, k->len) && i + 1 < n &&
            c->s[t->v[idx[i + 1]].off] == '(') {
            i = skip_group(c, idx, n, i + 1);
            continue;
        }
        if (ch == '{') {
            if (brace_group(c, idx, n, i, decl, &nd, &i)) goto out;
            continue;
        }
        if (ch == ';') {
            if (end_decl(c, decl, nd, 0)) goto out;
            nd = 0;
            i++;
            continue;
        }
        decl[nd++] = idx[i++];
    }
    rc = 0;
out:
    free(idx);
    free(decl);
    return rc;
}
