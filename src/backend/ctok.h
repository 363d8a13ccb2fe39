/*
 * ctok.h - a small C tokenizer and file-scope declaration scanner (ctok.c): enough for
 * the dispatcher slots to rename a winner's names apart (dispatch.c), not a C parser.
 */
#ifndef KF_BACKEND_CTOK_H
#define KF_BACKEND_CTOK_H

#include <stddef.h>

enum { KF_TOK_ID, KF_TOK_NUM, KF_TOK_STR, KF_TOK_PUNCT };
typedef struct {
    int kind, pp, include; /* pp: on a preprocessor line; include: an #include line */
    size_t off, len;
} kf_tok;
typedef struct {
    kf_tok *v;
    size_t n, cap;
} kf_toks;

/* A set of names (each copied; free with kf_ctok_names_free). */
typedef struct {
    char **v;
    size_t n, cap;
} kf_names;

/* 1 for a character of a C identifier ($ included, as compilers take it). */
int kf_ctok_idch(int c);
/* Tokens of s into t (comments dropped, strings and numbers kept whole; the caller
 * frees t->v). 0, or -1 (no memory). */
int kf_ctok_tokenize(const char *s, size_t n, kf_toks *t);

int kf_ctok_has(const kf_names *a, const char *s, size_t len);
/* Add s[0..len) unless it is there already. 0, or -1 (no memory). */
int kf_ctok_add(kf_names *a, const char *s, size_t len);
void kf_ctok_names_free(kf_names *a);

/* Over the tokens t of text s: into rename the names s defines at file scope
 * (functions, typedefs, variables, struct/union/enum tags, enumerators), into macros the
 * names it #defines. Names made by macros at file scope are not seen. 0, or -1 (no
 * memory). */
int kf_ctok_scan(const char *s, const kf_toks *t, kf_names *rename, kf_names *macros);

#endif
