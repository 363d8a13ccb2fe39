/*
 * prior.c - lessons as the builtin proposer's prior (docs/run.md "Lessons as the builtin's
 * prior").
 *
 * `kforge run --lessons PATH` retrieves, once when the run starts, the lessons scoped to
 * the task (backend, op tags op/<task> and the task's "ops", its visible shapes) whose
 * trust is at least KF_PRIOR_MIN_TRUST, and reads each one's action as distill writes it:
 *   "Set K=V..."            favour V for parameter K: weight +trust x G, G the greatest
 *                           gain over the parent the action reports (distill writes
 *                           "moving to it beat the parent at 2 shapes, 1.18x to 1.31x
 *                           over the parent": 1.31), what changing to V did where it
 *                           was tried, so of two wins the larger gain counts for more;
 *                           G = 1 when the action reports none, or reports speedups
 *                           "over the reference" (lessons distilled before the gain
 *                           rule: a node's speedup over the reference is mostly what
 *                           it inherited, not what V did); a shape-specific win ("...
 *                           for this shape") half that
 *   "Avoid K=V..."          disfavour it (-trust: its candidates failed)
 *   "Do not expect K=V..."  disfavour it (-trust/2: they only lost)
 * A lesson applies when the template has a parameter named K with V among its values
 * (exact names and values: lessons do not guess what a parameter of another template
 * means). What applied is recorded as one run-wide `lessons` event; a resumed run
 * applies the recorded list again and does not read the database, so resume replays the
 * same walk whatever the database holds by then (the builtin proposer reads it only for a
 * run killed before its event was written, which had proposed nothing). Other lessons
 * (techniques, prose) are for agents' context packs, not for this proposer. The event is
 * read back here too: kf_loop_lessons_event, and kf_loop_lessons_text for tree and run.
 */
#define _GNU_SOURCE
#include "loop.h"

#include "../lessons/lessons.h"
#include "../search/builtin.h"
#include "../util/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define KF_PRIOR_MIN_TRUST 0.5 /* a new lesson (0.5) applies; one refuted more than confirmed does not */
#define KF_PRIOR_K 200         /* lessons read per run (the best ranked of those in scope) */

/* The setting an action names and its sign: +1 "Set", -1 "Avoid", -0.5 "Do not expect";
 * 0 when it names none. key/val get K and V. */
static double parse_action(const char *a, char *key, size_t nk, char *val, size_t nv) {
    double sign = 0;
    size_t skip = 0;
    if (!strncmp(a, "Set ", 4)) sign = 1, skip = 4;
    else if (!strncmp(a, "Avoid ", 6)) sign = -1, skip = 6;
    else if (!strncmp(a, "Do not expect ", 14)) sign = -0.5, skip = 14;
    if (!sign) return 0;
    a += skip;
    size_t n = strcspn(a, " :;,\n");
    const char *eq = memchr(a, '=', n);
    if (!eq || eq == a || eq + 1 == a + n) return 0;
    size_t lk = (size_t)(eq - a), lv = n - lk - 1;
    if (lk >= nk || lv >= nv) return 0;
    memcpy(key, a, lk);
    key[lk] = 0;
    memcpy(val, eq + 1, lv);
    val[lv] = 0;
    if (sign > 0 && strstr(a + n, "for this shape")) sign = 0.5; /* a shape-specific win */
    return sign;
}

/* The greatest "N.NNx" in an action (the gains over the parent distill writes); 1 when
 * none, or when the figures are speedups over the reference (an older distill's). */
static double best_gain(const char *a) {
    double best = 1;
    if (strstr(a, "over the reference")) return best;
    for (const char *p = a; *p; p++) {
        if (!(*p >= '0' && *p <= '9') || (p > a && ((p[-1] >= '0' && p[-1] <= '9') || p[-1] == '.')))
            continue;
        char *e;
        double v = strtod(p, &e);
        if (e > p && *e == 'x' && v > best && v < 1e6) best = v;
    }
    return best;
}

/* Parameter i and value j of the template named by key=val; -1 when it has none. */
static int find_setting(const kf_builtin *b, const char *key, const char *val, int *i, int *j) {
    for (*i = 0; *i < kf_builtin_nparams(b); (*i)++) {
        if (strcmp(kf_builtin_param_name(b, *i), key)) continue;
        for (*j = 0; *j < kf_builtin_param_nvalues(b, *i); (*j)++)
            if (!strcmp(kf_builtin_param_value(b, *i, *j), val)) return 0;
        return -1;
    }
    return -1;
}

kf_status kf_loop_lessons_check(kf_ctx *ctx, const char *path) {
    struct stat sb;
    if (stat(path, &sb))
        return kf__err(ctx, KF_EUSAGE,
                       "--lessons %s: %s (a lessons database: kforge lessons distill RUN "
                       "--lessons %s makes one)",
                       path, strerror(errno), path);
    if (!S_ISREG(sb.st_mode)) return kf__err(ctx, KF_EUSAGE, "--lessons %s: not a file", path);
    FILE *f = fopen(path, "rb");
    char head[16] = "";
    if (!f) return kf__err(ctx, KF_EUSAGE, "--lessons %s: %s", path, strerror(errno));
    size_t got = fread(head, 1, sizeof head, f);
    fclose(f);
    if (got < sizeof head || memcmp(head, "SQLite format 3", 16))
        return kf__err(ctx, KF_EUSAGE, "--lessons %s: not a lessons database (not an SQLite file)", path);
    return KF_OK;
}

kf_status kf_loop_lessons_prior(kf_ctx *ctx, const kf_task *t, const char *path, kf_builtin *b,
                                char **event) {
    *event = NULL;
    kf_status st = kf_loop_lessons_check(ctx, path);
    if (st) return st;
    kf_lessons *db = NULL;
    if ((st = kf_lessons_open(ctx, path, NULL, &db))) return st;
    if (st) return st;
    /* the query: the task's scope; the text names the template's settings */
    char op[160];
    snprintf(op, sizeof op, "op/%s", kf_task_name(t));
    for (char *p = op + 3; *p; p++) {
        *p = (char)(*p >= 'A' && *p <= 'Z' ? *p + 32 : *p);
        if (!strchr("abcdefghijklmnopqrstuvwxyz0123456789_.=+-", *p)) *p = '_';
    }
    const char *ops[17] = {op};
    int nops = 1;
    for (int k = 0; k < t->nops && nops < 17; k++) ops[nops++] = t->ops[k];
    int64_t *shapes = malloc(sizeof *shapes * (size_t)(t->nshapes * t->nsizes + 1));
    kf_lesson_hit *hits = malloc(sizeof *hits * KF_PRIOR_K);
    kf_buf text;
    kf_buf_init(&text, 1 << 20);
    json_t *applied = json_array();
    if (!shapes || !hits || !applied) {
        st = kf__err(ctx, KF_ENOMEM, "out of memory");
        goto out;
    }
    for (int s = 0; s < t->nshapes; s++)
        for (int k = 0; k < t->nsizes; k++) shapes[s * t->nsizes + k] = t->shapes[s].v[k];
    kf_buf_printf(&text, "%s template parameters:", kf_task_name(t));
    for (int i = 0; i < kf_builtin_nparams(b); i++)
        for (int j = 0; j < kf_builtin_param_nvalues(b, i); j++)
            kf_buf_printf(&text, " Set %s=%s", kf_builtin_param_name(b, i), kf_builtin_param_value(b, i, j));
    kf_lesson_query q = {0};
    q.backend = t->backend;
    q.ops = ops;
    q.nops = nops;
    q.shape_names = (const char *const *)t->size_names;
    q.nshape_names = t->nsizes;
    q.shapes = shapes;
    q.nshapes = t->nshapes;
    q.text = text.p;
    q.rank = KF_LESSON_RANK_HYBRID;
    int n = 0;
    if ((st = kf_lessons_retrieve(db, &q, KF_PRIOR_K, KF_PRIOR_MIN_TRUST, hits, &n))) goto out;
    for (int h = 0; h < n && !st; h++) {
        kf_lesson l;
        if ((st = kf_lessons__get(db, hits[h].id, &l))) break;
        char key[64], val[64];
        int i, j;
        double sign = parse_action(l.action, key, sizeof key, val, sizeof val);
        if (sign != 0 && !find_setting(b, key, val, &i, &j)) {
            double w = sign * hits[h].trust * (sign > 0 ? best_gain(l.action) : 1);
            if (kf_builtin_prior(b, i, j, w)) st = kf__err(ctx, KF_ENOMEM, "out of memory");
            char setting[140];
            snprintf(setting, sizeof setting, "%s=%s", key, val);
            json_array_append_new(applied, json_pack("{s:s, s:s, s:f, s:f}", "id", l.id, "setting", setting,
                                                     "weight", w, "trust", hits[h].trust));
        }
        kf_lesson_free(&l);
    }
    if (st) goto out;
    kf_point p;
    kf_builtin_prior_start(b, &p);
    char pj[1024];
    json_t *start = json_loads(kf_builtin_json(b, &p, pj, sizeof pj), 0, NULL);
    json_t *ev = json_pack("{s:s, s:s, s:i, s:O, s:o}", "db", path, "embedding", kf_lessons_embedding(db),
                           "retrieved", n, "applied", applied, "start", start ? start : json_null());
    *event = ev ? kf__json_dumps(ev, JSON_COMPACT) : NULL;
    json_decref(ev);
    if (!*event) st = kf__err(ctx, KF_ENOMEM, "out of memory");
out:
    json_decref(applied);
    kf_buf_free(&text);
    free(hits);
    free(shapes);
    kf_lessons_close(db);
    return st;
}

kf_status kf_loop_lessons_replay(kf_ctx *ctx, const char *event, kf_builtin *b) {
    json_t *ev = json_loads(event, 0, NULL);
    json_t *applied = json_object_get(ev, "applied");
    if (!json_is_array(applied)) {
        json_decref(ev);
        return kf__err(ctx, KF_EIO, "the run's lessons event is damaged (no \"applied\" array)");
    }
    size_t k;
    json_t *a;
    kf_status st = KF_OK;
    json_array_foreach(applied, k, a) {
        const char *s = json_string_value(json_object_get(a, "setting"));
        const char *eq = s ? strchr(s, '=') : NULL;
        char key[64];
        int i, j;
        if (!eq || (size_t)(eq - s) >= sizeof key) continue;
        memcpy(key, s, (size_t)(eq - s));
        key[eq - s] = 0;
        /* a template that lost the parameter since: the task's fingerprint check refuses
         * that run before this, so a miss here is only skipped */
        if (!find_setting(b, key, eq + 1, &i, &j) &&
            kf_builtin_prior(b, i, j, json_number_value(json_object_get(a, "weight")))) {
            st = kf__err(ctx, KF_ENOMEM, "out of memory");
            break;
        }
    }
    json_decref(ev);
    return st;
}

/* ---- the run's `lessons` event -------------------------------------------------------- */

/* kf_store_each_event callback: a copy of the first event's JSON into *(char **)arg. */
static int first_event(void *arg, int64_t id, int64_t node, const char *json, double created) {
    (void)id, (void)node, (void)created;
    char **out = arg;
    if (!*out && json) *out = strdup(json);
    return 1;
}

kf_status kf_loop_lessons_event(kf_store *st, char **json) {
    *json = NULL;
    return kf_store_each_event(st, "lessons", first_event, json);
}

void kf_loop_lessons_text(kf_buf *b, kf_store *st) {
    char *ev = NULL;
    kf_loop_lessons_event(st, &ev);
    json_t *j = ev ? json_loads(ev, 0, NULL) : NULL;
    free(ev);
    if (!j) return;
    json_t *ap = json_object_get(j, "applied");
    kf_buf_printf(b, "lessons from %s: %zu applied of %lld retrieved",
                  json_string_value(json_object_get(j, "db")), json_array_size(ap),
                  (long long)json_integer_value(json_object_get(j, "retrieved")));
    size_t i;
    json_t *a;
    json_array_foreach(ap, i, a) kf_buf_printf(
        b, "%s%s %s %+.2f", i ? ", " : ": ", json_string_value(json_object_get(a, "id")),
        json_string_value(json_object_get(a, "setting")), json_number_value(json_object_get(a, "weight")));
    const char *k;
    json_t *v;
    int first = 1;
    json_object_foreach(json_object_get(j, "start"), k, v) {
        kf_buf_printf(b, "%s%s=", first ? "; the walk started at " : ", ", k);
        if (json_is_string(v)) kf_buf_printf(b, "%s", json_string_value(v));
        else kf_buf_printf(b, "%lld", (long long)json_integer_value(v));
        first = 0;
    }
    kf_buf_printf(b, "\n");
    json_decref(j);
}
