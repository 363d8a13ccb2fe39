/*
 * expr.c - integer expressions over sizes and template parameters.
 *
 * Grammar (C precedence):  cond := or ('?' cond ':' cond)?
 *   or := and ('||' and)*   and := cmp ('&&' cmp)*   cmp := add (op add)*
 *   add := mul (('+'|'-') mul)*   mul := unary (('*'|'/'|'%') unary)*
 *   unary := ('-'|'!'|'+') unary | primary
 *   primary := INT | NAME | NAME '(' cond ',' cond ')' | '(' cond ')'
 * Parsed once into a tree; evaluated many times with 64-bit checked arithmetic.
 * Deliberately not supported: floats, assignment, user functions.
 */
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

enum { E_NUM, E_VAR, E_NEG, E_NOT, E_BIN, E_COND, E_MIN, E_MAX };
enum { B_ADD, B_SUB, B_MUL, B_DIV, B_MOD, B_EQ, B_NE, B_LT, B_LE, B_GT, B_GE, B_AND, B_OR };

typedef struct node {
    int kind, op;
    int64_t num;
    char *name;
    struct node *a, *b, *c;
} node;

struct kf_expr {
    char *src;
    node *root;
};

typedef struct {
    const char *s;
    size_t pos;
    char *err;
    size_t errlen;
    int failed;
    int oom; /* failed for memory, not for the text */
    int depth;
} parser;

static void perr(parser *p, const char *msg) {
    if (!p->failed) snprintf(p->err, p->errlen, "position %zu: %s", p->pos + 1, msg);
    p->failed = 1;
}

static void skip(parser *p) {
    while (isspace((unsigned char)p->s[p->pos])) p->pos++;
}

static int accept(parser *p, const char *tok) {
    skip(p);
    size_t n = strlen(tok);
    if (strncmp(p->s + p->pos, tok, n) != 0) return 0;
    /* don't read '<' out of '<=' etc. */
    if (n == 1 && strchr("<>=!", tok[0]) && p->s[p->pos + 1] == '=') return 0;
    if (n == 1 && (tok[0] == '&' || tok[0] == '|')) return 0;
    p->pos += n;
    return 1;
}

static node *mk(parser *p, int kind, int op, node *a, node *b) {
    node *n = calloc(1, sizeof *n);
    if (!n) {
        p->oom = 1;
        perr(p, "out of memory");
        return NULL;
    }
    n->kind = kind;
    n->op = op;
    n->a = a;
    n->b = b;
    return n;
}

static void node_free(node *n) {
    if (!n) return;
    node_free(n->a);
    node_free(n->b);
    node_free(n->c);
    free(n->name);
    free(n);
}

static node *p_cond(parser *p);

static node *p_primary(parser *p) {
    skip(p);
    const char *s = p->s + p->pos;
    if (++p->depth > 200) {
        perr(p, "expression nested too deeply");
        return NULL;
    }
    node *r = NULL;
    if (isdigit((unsigned char)*s)) {
        char *end;
        errno = 0;
        long long v = strtoll(s, &end, 10);
        if (errno || isalpha((unsigned char)*end) || *end == '.') {
            perr(p, "bad integer literal");
        } else {
            r = mk(p, E_NUM, 0, NULL, NULL);
            if (r) r->num = v;
            p->pos += (size_t)(end - s);
        }
    } else if (isalpha((unsigned char)*s) || *s == '_') {
        size_t n = 0;
        while (isalnum((unsigned char)s[n]) || s[n] == '_') n++;
        char *name = strndup(s, n);
        p->pos += n;
        if (!name) {
            p->oom = 1;
            perr(p, "out of memory");
        } else if (accept(p, "(")) {
            int kind = !strcmp(name, "min") ? E_MIN : !strcmp(name, "max") ? E_MAX : -1;
            free(name);
            if (kind < 0) {
                perr(p, "unknown function (only min and max)");
            } else {
                node *a = p_cond(p), *b = NULL;
                if (!p->failed && !accept(p, ",")) perr(p, "expected ','");
                if (!p->failed) b = p_cond(p);
                if (!p->failed && !accept(p, ")")) perr(p, "expected ')'");
                r = mk(p, kind, 0, a, b);
                if (p->failed || !r) {
                    node_free(r ? r : a);
                    if (!r) node_free(b);
                    r = NULL;
                }
            }
        } else {
            r = mk(p, E_VAR, 0, NULL, NULL);
            if (r) r->name = name;
            else free(name);
        }
    } else if (accept(p, "(")) {
        r = p_cond(p);
        if (!p->failed && !accept(p, ")")) perr(p, "expected ')'");
    } else {
        perr(p, *s ? "unexpected character" : "unexpected end of expression");
    }
    p->depth--;
    if (p->failed) {
        node_free(r);
        return NULL;
    }
    return r;
}

static node *p_unary(parser *p) {
    int kind = accept(p, "-") ? E_NEG : accept(p, "!") ? E_NOT : -1;
    if (kind >= 0) {
        node *a = p_unary(p), *n = a ? mk(p, kind, 0, a, NULL) : NULL;
        if (!n) node_free(a);
        return n;
    }
    if (accept(p, "+")) return p_unary(p);
    return p_primary(p);
}

typedef struct {
    const char *tok;
    int op;
} optab;

static node *p_binary(parser *p, int level);

static const optab levels[][7] = {
    {{"||", B_OR}, {0, 0}},
    {{"&&", B_AND}, {0, 0}},
    {{"==", B_EQ}, {"!=", B_NE}, {"<=", B_LE}, {">=", B_GE}, {"<", B_LT}, {">", B_GT}, {0, 0}},
    {{"+", B_ADD}, {"-", B_SUB}, {0, 0}},
    {{"*", B_MUL}, {"/", B_DIV}, {"%", B_MOD}, {0, 0}},
};

static node *p_binary(parser *p, int level) {
    if (level == 5) return p_unary(p);
    node *l = p_binary(p, level + 1);
    while (l && !p->failed) {
        int op = -1;
        for (const optab *o = levels[level]; o->tok; o++)
            if (accept(p, o->tok)) {
                op = o->op;
                break;
            }
        if (op < 0) break;
        node *r = p_binary(p, level + 1);
        node *n = r ? mk(p, E_BIN, op, l, r) : NULL;
        if (!n) {
            node_free(l);
            node_free(r);
            return NULL;
        }
        l = n;
    }
    if (p->failed) {
        node_free(l);
        return NULL;
    }
    return l;
}

static node *p_cond(parser *p) {
    node *c = p_binary(p, 0);
    if (!c || p->failed || !accept(p, "?")) return p->failed ? (node_free(c), NULL) : c;
    node *a = p_cond(p), *b = NULL;
    if (!p->failed && !accept(p, ":")) perr(p, "expected ':'");
    if (!p->failed) b = p_cond(p);
    node *n = p->failed ? NULL : mk(p, E_COND, 0, a, b);
    if (!n) {
        node_free(c);
        node_free(a);
        node_free(b);
        return NULL;
    }
    n->c = c;
    return n;
}

kf_expr *kf_expr_parse(const char *src, char *err, size_t errlen) {
    parser p = {src, 0, err, errlen, 0, 0, 0};
    node *root = p_cond(&p);
    skip(&p);
    if (!p.failed && src[p.pos]) perr(&p, "unexpected trailing text");
    if (p.failed || !root) {
        if (p.oom) snprintf(err, errlen, "out of memory");
        node_free(root);
        errno = p.oom ? ENOMEM : EINVAL;
        return NULL;
    }
    kf_expr *e = malloc(sizeof *e);
    if (!e || !(e->src = kf__strdup(src))) {
        free(e);
        node_free(root);
        snprintf(err, errlen, "out of memory");
        errno = ENOMEM;
        return NULL;
    }
    e->root = root;
    return e;
}

void kf_expr_free(kf_expr *e) {
    if (!e) return;
    node_free(e->root);
    free(e->src);
    free(e);
}

const char *kf_expr_src(const kf_expr *e) { return e->src; }

typedef struct {
    const kf_vars *v;
    char *err;
    size_t errlen;
} evalst;

static int ev(const node *n, evalst *st, int64_t *out) {
    int64_t a, b;
    switch (n->kind) {
    case E_NUM: *out = n->num; return 0;
    case E_VAR:
        for (int i = 0; st->v && i < st->v->n; i++)
            if (!strcmp(st->v->names[i], n->name)) {
                *out = st->v->values[i];
                return 0;
            }
        snprintf(st->err, st->errlen, "unknown name '%s'", n->name);
        return -1;
    case E_NEG:
        if (ev(n->a, st, &a)) return -1;
        if (a == INT64_MIN) goto overflow;
        *out = -a;
        return 0;
    case E_NOT:
        if (ev(n->a, st, &a)) return -1;
        *out = !a;
        return 0;
    case E_COND:
        if (ev(n->c, st, &a)) return -1;
        return ev(a ? n->a : n->b, st, out);
    case E_MIN:
    case E_MAX:
        if (ev(n->a, st, &a) || ev(n->b, st, &b)) return -1;
        *out = (n->kind == E_MIN) == (a < b) ? a : b;
        return 0;
    }
    if (ev(n->a, st, &a)) return -1;
    if (n->op == B_AND && !a) return *out = 0, 0;
    if (n->op == B_OR && a) return *out = 1, 0;
    if (ev(n->b, st, &b)) return -1;
    switch (n->op) {
    case B_ADD:
        if (__builtin_add_overflow(a, b, out)) goto overflow;
        return 0;
    case B_SUB:
        if (__builtin_sub_overflow(a, b, out)) goto overflow;
        return 0;
    case B_MUL:
        if (__builtin_mul_overflow(a, b, out)) goto overflow;
        return 0;
    case B_DIV:
    case B_MOD:
        if (b == 0) {
            snprintf(st->err, st->errlen, "division by zero");
            return -1;
        }
        if (a == INT64_MIN && b == -1) goto overflow;
        *out = n->op == B_DIV ? a / b : a % b;
        return 0;
    case B_EQ: *out = a == b; return 0;
    case B_NE: *out = a != b; return 0;
    case B_LT: *out = a < b; return 0;
    case B_LE: *out = a <= b; return 0;
    case B_GT: *out = a > b; return 0;
    case B_GE: *out = a >= b; return 0;
    case B_AND:
    case B_OR: *out = b != 0; return 0;
    }
    return -1;
overflow:
    snprintf(st->err, st->errlen, "integer overflow");
    return -1;
}

int kf_expr_eval(const kf_expr *e, const kf_vars *vars, int64_t *out, char *err, size_t errlen) {
    evalst st = {vars, err, errlen};
    return ev(e->root, &st, out);
}

static int names_ok(const node *n, const char *const *known, int k, char *err, size_t errlen) {
    if (!n) return 0;
    if (n->kind == E_VAR) {
        for (int i = 0; i < k; i++)
            if (!strcmp(known[i], n->name)) return 0;
        snprintf(err, errlen, "unknown name '%s'", n->name);
        return -1;
    }
    return names_ok(n->a, known, k, err, errlen) || names_ok(n->b, known, k, err, errlen) ||
                   names_ok(n->c, known, k, err, errlen)
               ? -1
               : 0;
}

int kf_expr_check_names(const kf_expr *e, const char *const *known, int n, char *err, size_t errlen) {
    return names_ok(e->root, known, n, err, errlen);
}
