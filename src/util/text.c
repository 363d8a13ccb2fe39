/*
 * text.c - text that comes from outside kforge (a candidate's output, a compiler's log,
 * an agent's reply, a name a kernel chose): as a JSON string that is always valid, and
 * its size in tokens as context packs and lessons budget it.
 *
 * Neither interprets the text; the JSON form only guarantees that jansson takes it.
 */
#include "util.h"

#include <stdlib.h>
#include <string.h>

json_t *kf_text_json(const char *text) {
    json_t *j = json_string(text ? text : "");
    if (j) return j;
    /* not valid UTF-8 (a candidate's output, a compiler's echo of its source): keep
     * printable ASCII, replace every other byte with '?' */
    size_t n = strlen(text);
    char *copy = malloc(n + 1);
    if (!copy) return json_string("");
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)text[i];
        copy[i] = (c >= 0x20 && c < 0x7f) || c == '\n' || c == '\t' ? (char)c : '?';
    }
    copy[n] = 0;
    j = json_string(copy);
    free(copy);
    return j;
}

int64_t kf_text_tokens(size_t bytes) { return (int64_t)((bytes + 3) / 4); }

int64_t kf__sat_add(int64_t a, int64_t b) {
    int64_t r;
    if (!__builtin_add_overflow(a, b, &r)) return r;
    return b > 0 ? INT64_MAX : INT64_MIN;
}
