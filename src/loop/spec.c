/*
 * spec.c - a template at a point: materialised (kf_loop_materialize: each kforge:param
 * list cut to the point's value, what the builtin proposes), and specialised
 * (specialisation proposals, docs/run.md "Specialisation proposals").
 *
 * When the builtin's measurements show that some visible shapes' fastest point beats the
 * compromise (the point with the best geometric mean, kf_builtin_best) there by more than
 * the noise, the loop proposes, per such winning point, the template at that point with a
 * kforge:when line restricting it to the shapes where it wins, instead of settling for the
 * compromise. The domain is a threshold on one size when one separates the shapes it wins
 * from every other visible shape ("n >= 65536"), else those shapes pinned ("n == 16 || n
 * == 40"). The checker checks such a node on its domain only (hidden and edge shapes drawn
 * inside it; visible shapes outside it are untimed_shapes) and the Critic keeps it when it
 * beats its parent, the compromise, there.
 *
 * Pure: it reads the builtin and the task and returns texts; the loop records and
 * evaluates them and remembers which it proposed. Not done: a template that has a
 * kforge:when of its own (the two domains would have to be combined), and tasks whose
 * visible shapes are not all timed for the template's points.
 */
#define _GNU_SOURCE
#include "loop.h"

#include "../task/task.h"
#include "../util/util.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SHAPES 64

/* The template with every "kforge:param NAME = v1, v2" list replaced by the value the
 * point gives NAME (a JSON object {"NAME": "value"}). Lines are kept, so compile errors
 * keep the template's line numbers. */
char *kf_loop_materialize(const char *text, size_t len, json_t *point, size_t *outlen) {
    kf_buf b;
    kf_buf_init(&b, 64u << 20);
    const char *p = text, *end = text + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        const char *d = NULL;
        for (const char *q = p; q + 12 <= le; q++)
            if (!memcmp(q, "kforge:param", 12)) {
                d = q;
                break;
            }
        const char *eq = d ? memchr(d, '=', (size_t)(le - d)) : NULL;
        if (!eq) {
            kf_buf_append(&b, p, (size_t)(le - p) + (nl ? 1 : 0));
            p = le + (nl ? 1 : 0);
            continue;
        }
        /* the name between "kforge:param" and '=' */
        const char *n0 = d + 12;
        while (n0 < eq && (*n0 == ' ' || *n0 == '\t')) n0++;
        const char *n1 = eq;
        while (n1 > n0 && (n1[-1] == ' ' || n1[-1] == '\t')) n1--;
        char name[128];
        snprintf(name, sizeof name, "%.*s", (int)(n1 - n0), n0);
        const char *v = json_string_value(json_object_get(point, name));
        /* the list runs to the comment's end or the line's */
        const char *ce = NULL;
        for (const char *q = eq; q + 1 < le; q++)
            if (q[0] == '*' && q[1] == '/') {
                ce = q;
                break;
            }
        if (!ce) ce = le;
        kf_buf_append(&b, p, (size_t)(eq + 1 - p));
        if (v) {
            kf_buf_printf(&b, " %s ", v);
            kf_buf_append(&b, ce, (size_t)(le - ce) + (nl ? 1 : 0));
        } else {
            kf_buf_append(&b, eq + 1, (size_t)(le - eq - 1) + (nl ? 1 : 0));
        }
        p = le + (nl ? 1 : 0);
    }
    *outlen = b.len;
    return b.p;
}

void kf_loop_specs_free(kf_spec *s, int n) {
    for (int i = 0; s && i < n; i++) {
        free(s[i].when);
        free(s[i].text);
        free(s[i].params_json);
        free(s[i].shapes);
    }
    free(s);
}

/* The domain of the shapes in[] (1: this group) among the task's visible shapes. */
static char *domain(const kf_task *t, const int *in) {
    for (int k = 0; k < t->nsizes; k++) {
        int64_t gmin = INT64_MAX, gmax = INT64_MIN, omin = INT64_MAX, omax = INT64_MIN;
        for (int s = 0; s < t->nshapes; s++) {
            int64_t v = t->shapes[s].v[k];
            if (in[s]) gmin = v < gmin ? v : gmin, gmax = v > gmax ? v : gmax;
            else omin = v < omin ? v : omin, omax = v > omax ? v : omax;
        }
        if (omax < gmin) return kf__asprintf("%s >= %lld", t->size_names[k], (long long)gmin);
        if (omin > gmax) return kf__asprintf("%s <= %lld", t->size_names[k], (long long)gmax);
    }
    kf_buf b;
    kf_buf_init(&b, 1u << 16);
    int terms = 0;
    for (int s = 0; s < t->nshapes; s++) {
        if (!in[s]) continue;
        kf_buf_printf(&b, "%s%s", terms++ ? " || " : "", t->nsizes > 1 ? "(" : "");
        for (int k = 0; k < t->nsizes; k++)
            kf_buf_printf(&b, "%s%s == %lld", k ? " && " : "", t->size_names[k],
                          (long long)t->shapes[s].v[k]);
        if (t->nsizes > 1) kf_buf_printf(&b, ")");
    }
    if (b.dropped) {
        kf_buf_free(&b);
        return NULL;
    }
    return b.p;
}

static void shapes_text(kf_buf *b, const kf_task *t, const int *in) {
    int first = 1;
    for (int s = 0; s < t->nshapes; s++) {
        if (!in[s]) continue;
        kf_buf_printf(b, "%s", first ? "" : "; ");
        for (int k = 0; k < t->nsizes; k++)
            kf_buf_printf(b, "%s%s=%lld", k ? "," : "", t->size_names[k], (long long)t->shapes[s].v[k]);
        first = 0;
    }
}

kf_status kf_loop_specs(kf_ctx *ctx, const kf_task *t, const kf_builtin *bi, const char *tmpl, size_t tlen,
                        double min_noise, kf_spec **out, int *nout) {
    *out = NULL;
    *nout = 0;
    int ns = t->nshapes;
    if (ns < 2 || ns > MAX_SHAPES || !tmpl) return KF_OK;
    /* the template's own domain would have to be combined with the new one */
    for (size_t i = 0; i + 11 <= tlen; i++)
        if (!memcmp(tmpl + i, "kforge:when", 11)) return KF_OK;
    kf_point per[MAX_SHAPES], comp;
    double gain[MAX_SHAPES];
    int beats[MAX_SHAPES];
    if (kf_builtin_shape_winners(bi, min_noise, per, gain, beats, ns) <= 0 ||
        kf_builtin_best(bi, &comp, NULL))
        return KF_OK;
    kf_spec *sp = calloc((size_t)ns, sizeof *sp);
    if (!sp) return kf__err(ctx, KF_ENOMEM, "out of memory");
    int np = kf_builtin_nparams(bi), n = 0, done[MAX_SHAPES] = {0};
    for (int s = 0; s < ns; s++) {
        if (!beats[s] || done[s]) continue;
        /* the group: every shape this point wins by more than the noise */
        int in[MAX_SHAPES] = {0};
        double least = gain[s];
        for (int u = s; u < ns; u++)
            if (beats[u] && !memcmp(per[u].v, per[s].v, (size_t)np * sizeof per[s].v[0])) {
                in[u] = done[u] = 1;
                least = gain[u] < least ? gain[u] : least;
            }
        kf_spec *x = &sp[n++];
        x->point = per[s];
        x->compromise = comp;
        x->gain = least;
        x->when = domain(t, in);
        json_t *ps = json_object();
        for (int i = 0; ps && i < np; i++)
            json_object_set_new(ps, kf_builtin_param_name(bi, i),
                                json_string(kf_builtin_param_value(bi, i, per[s].v[i])));
        size_t ml = 0;
        char *m = ps ? kf_loop_materialize(tmpl, tlen, ps, &ml) : NULL;
        json_decref(ps);
        char pj[1024];
        kf_builtin_json(bi, &per[s], pj, sizeof pj);
        json_t *pjson = json_loads(pj, 0, NULL);
        x->params_json = pjson ? kf__json_dumps(pjson, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
        json_decref(pjson);
        kf_buf sh;
        kf_buf_init(&sh, 1u << 16);
        shapes_text(&sh, t, in);
        x->shapes = sh.p;
        /* the directive after the text, so the template's line numbers stay */
        if (m && x->when)
            x->text = kf__asprintf(
                "%s%s/* A specialisation: the template at %s, for the shapes where it is fastest. */\n"
                "/* kforge:when %s */\n",
                m, ml && m[ml - 1] != '\n' ? "\n" : "", pj, x->when);
        free(m);
        if (!x->text || !x->params_json || !x->shapes) {
            kf_loop_specs_free(sp, n);
            return kf__err(ctx, KF_ENOMEM, "out of memory");
        }
        x->len = strlen(x->text);
    }
    *out = sp;
    *nout = n;
    return KF_OK;
}

int kf_loop_is_spec(const kf_node *n) {
    return !strcmp(n->category, "specialisation") && n->note &&
           !strncmp(n->note, KF_LOOP_SPEC_NOTE, strlen(KF_LOOP_SPEC_NOTE));
}

int kf_loop_when_line(const char *text, size_t len, char *expr, size_t n) {
    int line = 1;
    for (const char *p = text, *end = text + len; p < end; line++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        /* as the candidate's reader takes it: "kforge:when" then a space, a tab or the end */
        for (const char *q = p; q + 11 <= le; q++) {
            if (memcmp(q, "kforge:when", 11) || (q + 11 < le && q[11] != ' ' && q[11] != '\t')) continue;
            if (expr && n) {
                const char *e = q + 11, *z = le;
                while (e < z && (*e == ' ' || *e == '\t')) e++;
                for (const char *c = e; c + 1 < z; c++)
                    if (c[0] == '*' && c[1] == '/') {
                        z = c;
                        break;
                    }
                while (z > e && (z[-1] == ' ' || z[-1] == '\t' || z[-1] == '\r')) z--;
                snprintf(expr, n, "%.*s", (int)(z - e), e);
            }
            return line;
        }
        p = le + (nl ? 1 : 0);
    }
    return 0;
}

char *kf_loop_category_conflict(const char *text, size_t len, const char *category, const char *path) {
    char expr[256] = "";
    int line = kf_loop_when_line(text, len, expr, sizeof expr);
    int spec = category && !strcmp(category, "specialisation");
    if (line && !spec)
        return kf__asprintf(
            "%s:%d: kforge:when \"%s\" narrows the task's domain, and only a specialisation "
            "may: proposed as '%s', so refused before any evaluation (submit it with --category "
            "specialisation, or remove the line)",
            path, line, expr, category ? category : "other");
    if (!line && spec)
        return kf__asprintf(
            "%s: a specialisation says which shapes it is for with a kforge:when line, and this "
            "file has none: refused before any evaluation (add the line, or choose the category "
            "of the change it makes)",
            path);
    return NULL;
}

int kf_loop_description(const char *in, char *out, size_t n) {
    if (!in || n <= KF_LOOP_DESC_MAX) return -1;
    while (*in == ' ' || *in == '\t') in++;
    size_t k = 0;
    for (const char *p = in; *p && *p != '\n' && *p != '\r' && k < KF_LOOP_DESC_MAX; p++) {
        unsigned char c = (unsigned char)*p;
        out[k++] = c < 0x20 || c == 0x7f ? ' ' : (char)c;
    }
    /* no UTF-8 sequence cut in two: drop a partial one at the end */
    size_t j = k;
    while (j > 0 && ((unsigned char)out[j - 1] & 0xC0) == 0x80) j--;
    if (j > 0 && ((unsigned char)out[j - 1] & 0x80)) {
        unsigned char lead = (unsigned char)out[j - 1];
        size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
        if (k - (j - 1) < need) k = j - 1;
    }
    while (k > 0 && out[k - 1] == ' ') k--;
    out[k] = 0;
    return k ? 0 : -1;
}

kf_status kf_loop_describe(kf_store *st, int64_t node, const char *desc) {
    if (!desc || !*desc) return KF_OK;
    json_t *j = json_pack("{s:o}", "text", kf_text_json(desc));
    char *js = j ? kf__json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    kf_status s = js ? kf_store_event(st, node, "description", js) : KF_ENOMEM;
    free(js);
    return s;
}
