/*
 * task.c - load and validate a task directory (task.json + reference, and the files of
 * its fixed data buffers, read whole at load: docs/tasks.md "data").
 *
 * Every field is checked here, once, with an error that names the file, the JSON
 * position (line:column for syntax errors, a path such as args[2].shape[0] for
 * semantic ones) and what is wrong. Later stages trust the kf_task they get.
 * Unknown fields are errors: a typo must not silently change what is checked. Which
 * backends exist, their reference files and what they allow (f16, launch_mode) come from
 * the backend registry (registry.h), which knows nothing of tasks.
 */
#define _GNU_SOURCE
#include "task.h"
#include "../backend/registry.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define TASK_JSON_MAX (4u << 20)
#define REF_MAX (4u << 20)

static const struct {
    const char *name;
    size_t size;
    int is_float;
} dtypes[] = {
    [KF_T_F32] = {"f32", 4, 1},   [KF_T_F64] = {"f64", 8, 1}, [KF_T_I32] = {"i32", 4, 0},
    [KF_T_I64] = {"i64", 8, 0},   [KF_T_U8] = {"u8", 1, 0},   [KF_T_F16] = {"f16", 2, 1},
    [KF_T_BF16] = {"bf16", 2, 1},
};

size_t kf_dtype_size(kf_dtype t) { return dtypes[t].size; }
const char *kf_dtype_name(kf_dtype t) { return dtypes[t].name; }
int kf_dtype_is_float(kf_dtype t) { return dtypes[t].is_float; }

void kf_task_tolerance(const kf_task *t, const kf_arg *a, double *rtol, double *atol) {
    kf_dtype type = a->type;
    if (a->has_tol) {
        *rtol = a->rtol;
        *atol = a->atol;
        return;
    }
    if (t->has_tol) {
        *rtol = t->rtol;
        *atol = t->atol;
        return;
    }
    switch (type) {
    case KF_T_F32: *rtol = 1e-4, *atol = 1e-5; break;
    case KF_T_F64: *rtol = 1e-10, *atol = 1e-12; break;
    case KF_T_F16: *rtol = 1e-2, *atol = 1e-3; break;
    case KF_T_BF16: *rtol = 2e-2, *atol = 1e-2; break;
    default: *rtol = 0, *atol = 0; break;
    }
}

double kf_task_mtol(const kf_task *t, const kf_arg *a) {
    if (a->has_tol) return a->mtol;
    return t->has_tol ? t->mtol : 0;
}

int kf_task_has_mtol(const kf_task *t) {
    for (int i = 0; i < t->nargs; i++)
        if (t->args[i].is_buffer && t->args[i].io != KF_IO_IN && kf_dtype_is_float(t->args[i].type) &&
            kf_task_mtol(t, &t->args[i]) > 0)
            return 1;
    return 0;
}

typedef struct {
    kf_ctx *ctx;
    const char *file;
} lctx;

static kf_status bad(lctx *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static kf_status bad(lctx *l, const char *fmt, ...) {
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return kf__err(l->ctx, KF_ETASK, "%s: %s", l->file, msg);
}

static int is_ident(const char *s) {
    if (!s || !(isalpha((unsigned char)*s) || *s == '_')) return 0;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '_') return 0;
    return 1;
}

/* Levenshtein distance between a and b, capped: returns cap + 1 for anything further or
 * for names longer than 63 bytes. */
static int edit_distance(const char *a, const char *b, int cap) {
    size_t la = strlen(a), lb = strlen(b);
    if (la > 63 || lb > 63) return cap + 1;
    int row[64];
    for (size_t j = 0; j <= lb; j++) row[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        int diag = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int up = row[j];
            int sub = diag + (tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]));
            int best = up + 1 < row[j - 1] + 1 ? up + 1 : row[j - 1] + 1;
            row[j] = sub < best ? sub : best;
            diag = up;
        }
    }
    return row[lb] > cap ? cap + 1 : row[lb];
}

/* Refuse keys outside `allowed` (NULL-terminated); a key within two edits (a third of
 * its length at most) of an allowed one gets "did you mean". */
static kf_status only_keys(lctx *l, json_t *obj, const char *where, const char *const *allowed) {
    const char *key;
    json_t *v;
    json_object_foreach(obj, key, v) {
        int ok = 0;
        for (const char *const *a = allowed; *a; a++)
            if (!strcmp(*a, key)) ok = 1;
        if (ok) continue;
        const char *near = NULL;
        int cap = (int)strlen(key) / 3 < 2 ? (int)strlen(key) / 3 : 2, bestd = cap + 1;
        for (const char *const *a = allowed; *a; a++) {
            int d = edit_distance(key, *a, cap);
            if (d < bestd) bestd = d, near = *a;
        }
        if (near) return bad(l, "%s: unknown field '%s' (did you mean '%s'?)", where, key, near);
        return bad(l, "%s: unknown field '%s'", where, key);
    }
    return KF_OK;
}

static int is_int(json_t *v) {
    if (json_is_integer(v)) return 1;
    if (json_is_real(v)) {
        double d = json_real_value(v);
        return d == floor(d) && fabs(d) < 9e15;
    }
    return 0;
}
static int64_t int_of(json_t *v) {
    return json_is_integer(v) ? (int64_t)json_integer_value(v) : (int64_t)json_real_value(v);
}

/* An expression given as a string or an integer literal. */
static kf_status parse_expr(lctx *l, kf_task *t, json_t *v, const char *where, kf_expr **out) {
    char src[64], err[256];
    const char *s;
    if (json_is_string(v)) {
        s = json_string_value(v);
    } else if (is_int(v)) {
        snprintf(src, sizeof src, "%lld", (long long)int_of(v));
        s = src;
    } else {
        return bad(l, "%s: expected an integer or an expression string", where);
    }
    kf_expr *e = kf_expr_parse(s, err, sizeof err);
    if (!e && errno == ENOMEM) return kf__err(l->ctx, KF_ENOMEM, "out of memory");
    if (!e) return bad(l, "%s: bad expression \"%s\": %s", where, s, err);
    if (kf_expr_check_names(e, (const char *const *)t->size_names, t->nsizes, err, sizeof err)) {
        kf_expr_free(e);
        return bad(l, "%s: expression \"%s\": %s (sizes are the names in \"sizes\")", where, s, err);
    }
    *out = e;
    return KF_OK;
}

static int dtype_of(const char *s) {
    for (int i = 0; i < (int)(sizeof dtypes / sizeof dtypes[0]); i++)
        if (!strcmp(s, dtypes[i].name)) return i;
    return -1;
}

static kf_status parse_init(lctx *l, json_t *v, const char *where, kf_arg *a) {
    static const char *const kn[] = {"dist", "mean", "std", 0};
    static const char *const ku[] = {"dist", "lo", "hi", 0};
    if (!json_is_object(v)) return bad(l, "%s: expected an object", where);
    const char *d = json_string_value(json_object_get(v, "dist"));
    if (!d) return bad(l, "%s.dist: missing (normal, uniform or int)", where);
    kf_status st;
    if (!strcmp(d, "normal")) {
        if ((st = only_keys(l, v, where, kn))) return st;
        json_t *m = json_object_get(v, "mean"), *s = json_object_get(v, "std");
        if ((m && !json_is_number(m)) || (s && !json_is_number(s)))
            return bad(l, "%s: mean and std must be numbers", where);
        a->init.dist = KF_DIST_NORMAL;
        a->init.a = m ? json_number_value(m) : 0.0;
        a->init.b = s ? json_number_value(s) : 1.0;
        if (!(a->init.b > 0) || !isfinite(a->init.a) || !isfinite(a->init.b))
            return bad(l, "%s: std must be > 0 and both finite", where);
    } else if (!strcmp(d, "uniform") || !strcmp(d, "int")) {
        if ((st = only_keys(l, v, where, ku))) return st;
        json_t *lo = json_object_get(v, "lo"), *hi = json_object_get(v, "hi");
        if (!json_is_number(lo) || !json_is_number(hi))
            return bad(l, "%s: lo and hi are required numbers", where);
        a->init.dist = d[0] == 'u' ? KF_DIST_UNIFORM : KF_DIST_INT;
        a->init.a = json_number_value(lo);
        a->init.b = json_number_value(hi);
        if (!(a->init.a < a->init.b) && !(a->init.dist == KF_DIST_INT && a->init.a == a->init.b))
            return bad(l, "%s: impossible range: lo must be below hi", where);
        if (a->init.dist == KF_DIST_INT && (a->init.a != floor(a->init.a) || a->init.b != floor(a->init.b)))
            return bad(l, "%s: int bounds must be integers", where);
        if (a->init.dist == KF_DIST_INT && !kf_dtype_is_float(a->type)) {
            double lo_ok = a->type == KF_T_U8 ? 0 : a->type == KF_T_I32 ? -2147483648.0 : -9e18;
            double hi_ok = a->type == KF_T_U8 ? 255 : a->type == KF_T_I32 ? 2147483647.0 : 9e18;
            if (a->init.a < lo_ok || a->init.b > hi_ok)
                return bad(l, "%s: range does not fit type %s", where, kf_dtype_name(a->type));
        }
    } else {
        return bad(l, "%s.dist: unknown distribution '%s' (normal, uniform or int)", where, d);
    }
    if (!kf_dtype_is_float(a->type) && a->init.dist != KF_DIST_INT)
        return bad(l, "%s: integer buffers need {\"dist\":\"int\",...}", where);
    return KF_OK;
}

/* {"rtol": r, "atol": a} and optionally "mtol": m, the tolerance relative to the
 * magnitude of what was summed (docs/tasks.md "Tolerance"); the task's own (top: 1) may
 * also name the reference's "magnitude" function, read by the caller */
static kf_status parse_tol(lctx *l, json_t *tol, const char *where, int top, double *rtol, double *atol,
                           double *mtol) {
    static const char *const kt[] = {"rtol", "atol", "mtol", 0}, *const ktop[] = {"rtol", "atol", "mtol",
                                                                                  "magnitude", 0};
    kf_status st;
    if (!json_is_object(tol)) return bad(l, "%s: expected {\"rtol\": r, \"atol\": a}", where);
    if ((st = only_keys(l, tol, where, top ? ktop : kt))) return st;
    json_t *r = json_object_get(tol, "rtol"), *a = json_object_get(tol, "atol"),
           *m = json_object_get(tol, "mtol");
    if (!json_is_number(r) || !json_is_number(a))
        return bad(l, "%s: rtol and atol are both required numbers", where);
    if (m && !json_is_number(m)) return bad(l, "%s.mtol: expected a number", where);
    *rtol = json_number_value(r);
    *atol = json_number_value(a);
    *mtol = m ? json_number_value(m) : 0;
    if (!(*rtol >= 0) || !(*atol >= 0) || !isfinite(*rtol) || !isfinite(*atol))
        return bad(l, "%s: rtol and atol must be finite and >= 0", where);
    if (!(*mtol >= 0) || !isfinite(*mtol)) return bad(l, "%s.mtol: must be finite and >= 0", where);
    return KF_OK;
}

static kf_status parse_arg(lctx *l, kf_task *t, json_t *v, int i, kf_arg *a) {
    static const char *const kbuf[] = {"name", "type", "shape", "io", "init", "tolerance", "data", 0};
    static const char *const ksc[] = {"name", "type", "value", 0};
    char where[64];
    snprintf(where, sizeof where, "args[%d]", i);
    if (!json_is_object(v)) return bad(l, "%s: expected an object", where);
    const char *name = json_string_value(json_object_get(v, "name"));
    if (!is_ident(name)) return bad(l, "%s.name: missing or not a C identifier", where);
    if (!(a->name = kf__strdup(name))) return kf__err(l->ctx, KF_ENOMEM, "out of memory");
    const char *ty = json_string_value(json_object_get(v, "type"));
    int dt = ty ? dtype_of(ty) : -1;
    if (dt < 0)
        return bad(l, "%s.type: %s%s%s (f32, f64, i32, i64, u8; f16, bf16 on GPU backends)", where,
                   ty ? "unknown type '" : "missing", ty ? ty : "", ty ? "'" : "");
    a->type = (kf_dtype)dt;
    kf_backend *be = kf_backend_get(t->backend);
    if ((dt == KF_T_F16 || dt == KF_T_BF16) && be && !kf_backend_has(be, KF_BACKEND_HALF))
        return bad(l, "%s.type: %s is only available on the GPU backends", where, ty);
    json_t *shape = json_object_get(v, "shape"), *value = json_object_get(v, "value");
    kf_status st;
    if (shape && value) return bad(l, "%s: has both shape (buffer) and value (scalar)", where);
    if (!shape && !value) return bad(l, "%s: needs shape (a buffer) or value (a scalar)", where);
    if (shape) {
        if ((st = only_keys(l, v, where, kbuf))) return st;
        a->is_buffer = 1;
        if (!json_is_array(shape) || json_array_size(shape) == 0 || json_array_size(shape) > KF_MAX_DIMS)
            return bad(l, "%s.shape: expected an array of 1 to %d dimensions", where, KF_MAX_DIMS);
        a->ndim = (int)json_array_size(shape);
        if (!(a->shape = calloc((size_t)a->ndim, sizeof *a->shape)))
            return kf__err(l->ctx, KF_ENOMEM, "out of memory");
        for (int d = 0; d < a->ndim; d++) {
            char w[96];
            snprintf(w, sizeof w, "%s.shape[%d]", where, d);
            if ((st = parse_expr(l, t, json_array_get(shape, (size_t)d), w, &a->shape[d]))) return st;
        }
        const char *io = json_string_value(json_object_get(v, "io"));
        if (!io) return bad(l, "%s.io: missing (in, out or inout)", where);
        if (!strcmp(io, "in")) a->io = KF_IO_IN;
        else if (!strcmp(io, "out")) a->io = KF_IO_OUT;
        else if (!strcmp(io, "inout")) a->io = KF_IO_INOUT;
        else return bad(l, "%s.io: unknown '%s' (in, out or inout)", where, io);
        json_t *init = json_object_get(v, "init");
        a->init.dist = kf_dtype_is_float(a->type) ? KF_DIST_NORMAL : KF_DIST_INT;
        a->init.a = kf_dtype_is_float(a->type) ? 0 : 0;
        a->init.b = kf_dtype_is_float(a->type) ? 1 : (a->type == KF_T_U8 ? 255 : 100);
        if (init) {
            if (a->io == KF_IO_OUT) return bad(l, "%s.init: an out buffer has no init", where);
            char w[96];
            snprintf(w, sizeof w, "%s.init", where);
            if ((st = parse_init(l, init, w, a))) return st;
        }
        json_t *data = json_object_get(v, "data");
        if (data) {
            const char *f = json_string_value(data);
            if (a->io != KF_IO_IN) return bad(l, "%s.data: only an in buffer has fixed data", where);
            if (init) return bad(l, "%s: has both data (fixed contents) and init (drawn)", where);
            if (!f || !*f || f[0] == '/' || strstr(f, "..") || strlen(f) > 200)
                return bad(l, "%s.data: expected a file of the task directory (a relative path without ..)",
                           where);
            if (!(a->data_file = kf__strdup(f))) return kf__err(l->ctx, KF_ENOMEM, "out of memory");
        }
        json_t *tol = json_object_get(v, "tolerance");
        if (tol) {
            if (a->io == KF_IO_IN) return bad(l, "%s.tolerance: an in buffer is not compared", where);
            char w[96];
            snprintf(w, sizeof w, "%s.tolerance", where);
            if ((st = parse_tol(l, tol, w, 0, &a->rtol, &a->atol, &a->mtol))) return st;
            a->has_tol = 1;
        }
    } else {
        if ((st = only_keys(l, v, where, ksc))) return st;
        char w[96];
        snprintf(w, sizeof w, "%s.value", where);
        if (json_is_string(value)) {
            if ((st = parse_expr(l, t, value, w, &a->value_expr))) return st;
        } else if (json_is_number(value)) {
            a->value_num = json_number_value(value);
            if (!kf_dtype_is_float(a->type) && a->value_num != floor(a->value_num))
                return bad(l, "%s: %s scalar needs an integer", w, ty);
        } else {
            return bad(l, "%s: expected a number or an expression string", w);
        }
    }
    return KF_OK;
}

static kf_status parse_shape_obj(lctx *l, kf_task *t, json_t *v, const char *where, kf_shape *s) {
    if (!json_is_object(v)) return bad(l, "%s: expected an object of size -> integer", where);
    if (!(s->v = calloc((size_t)t->nsizes, sizeof *s->v))) return kf__err(l->ctx, KF_ENOMEM, "out of memory");
    const char *key;
    json_t *val;
    json_object_foreach(v, key, val) {
        int k = -1;
        for (int i = 0; i < t->nsizes; i++)
            if (!strcmp(t->size_names[i], key)) k = i;
        if (k < 0) return bad(l, "%s: unknown size '%s'", where, key);
        if (!is_int(val)) return bad(l, "%s.%s: expected an integer", where, key);
        s->v[k] = int_of(val);
        if (s->v[k] < t->size_min[k] || s->v[k] > t->size_max[k])
            return bad(l, "%s.%s = %lld is outside its range [%lld, %lld]", where, key, (long long)s->v[k],
                       (long long)t->size_min[k], (long long)t->size_max[k]);
    }
    for (int i = 0; i < t->nsizes; i++)
        if (!json_object_get(v, t->size_names[i]))
            return bad(l, "%s: missing size '%s'", where, t->size_names[i]);
    return KF_OK;
}

/* The backends a task may name (registry.h): those of this build, and those reserved. */
static int known_backend(const char *name) { return kf_backend_get(name) || kf_backend_reserved(name); }

static kf_status parse_task(lctx *l, kf_task *t, json_t *root, uint64_t cap) {
    static const char *const top[] = {
        "name",   "backend", "entry",       "sizes",       "constraints", "args", "tolerance", "shapes",
        "hidden", "cost",    "determinism", "description", "launch_mode", "ops",  "reference", 0};
    kf_status st;
    if (!json_is_object(root)) return bad(l, "top level: expected an object");
    if ((st = only_keys(l, root, "top level", top))) return st;
    const char *s;
    if (!(s = json_string_value(json_object_get(root, "name"))) || !*s)
        return bad(l, "name: missing or not a string");
    t->name = kf__strdup(s);
    char names[256];
    kf_backend_names(1, " or ", names, sizeof names);
    if (!(s = json_string_value(json_object_get(root, "backend"))))
        return bad(l, "backend: missing (%s)", names);
    if (!known_backend(s)) return bad(l, "backend: unknown '%s' (%s)", s, names);
    t->backend = kf__strdup(s);
    if (!is_ident(s = json_string_value(json_object_get(root, "entry"))))
        return bad(l, "entry: missing or not a C identifier");
    t->entry = kf__strdup(s);
    if (!t->name || !t->backend || !t->entry) return kf__err(l->ctx, KF_ENOMEM, "out of memory");

    json_t *sizes = json_object_get(root, "sizes");
    if (!json_is_object(sizes) || json_object_size(sizes) == 0)
        return bad(l, "sizes: missing or empty (object of name -> [min, max])");
    t->nsizes = (int)json_object_size(sizes);
    if (t->nsizes > KF_MAX_SIZES) return bad(l, "sizes: at most %d sizes", KF_MAX_SIZES);
    t->size_names = calloc((size_t)t->nsizes, sizeof *t->size_names);
    t->size_min = calloc((size_t)t->nsizes, sizeof *t->size_min);
    t->size_max = calloc((size_t)t->nsizes, sizeof *t->size_max);
    if (!t->size_names || !t->size_min || !t->size_max) return kf__err(l->ctx, KF_ENOMEM, "out of memory");
    {
        const char *key;
        json_t *r;
        int i = 0;
        json_object_foreach(sizes, key, r) {
            if (!is_ident(key)) return bad(l, "sizes: '%s' is not an identifier", key);
            if (!strcmp(key, "min") || !strcmp(key, "max"))
                return bad(l, "sizes: '%s' is reserved (a function name)", key);
            if (!json_is_array(r) || json_array_size(r) != 2 || !is_int(json_array_get(r, 0)) ||
                !is_int(json_array_get(r, 1)))
                return bad(l, "sizes.%s: expected [min, max] integers", key);
            t->size_names[i] = kf__strdup(key);
            t->size_min[i] = int_of(json_array_get(r, 0));
            t->size_max[i] = int_of(json_array_get(r, 1));
            if (!t->size_names[i]) return kf__err(l->ctx, KF_ENOMEM, "out of memory");
            if (t->size_min[i] < 0 || t->size_min[i] > t->size_max[i])
                return bad(l, "sizes.%s: impossible range [%lld, %lld] (need 0 <= min <= max)", key,
                           (long long)t->size_min[i], (long long)t->size_max[i]);
            i++;
        }
    }

    json_t *cons = json_object_get(root, "constraints");
    if (cons) {
        if (!json_is_array(cons)) return bad(l, "constraints: expected an array of strings");
        /* the count only with the array: kf_task_free walks t->cons[0, ncons) */
        if (!(t->cons = calloc(json_array_size(cons) + 1, sizeof *t->cons)))
            return kf__err(l->ctx, KF_ENOMEM, "out of memory");
        t->ncons = (int)json_array_size(cons);
        for (int i = 0; i < t->ncons; i++) {
            char w[48];
            snprintf(w, sizeof w, "constraints[%d]", i);
            json_t *c = json_array_get(cons, (size_t)i);
            if (!json_is_string(c)) return bad(l, "%s: expected an expression string", w);
            if ((st = parse_expr(l, t, c, w, &t->cons[i]))) return st;
        }
    }

    json_t *args = json_object_get(root, "args");
    if (!json_is_array(args) || json_array_size(args) == 0) return bad(l, "args: missing or empty");
    if (json_array_size(args) > KF_MAX_ARGS) return bad(l, "args: at most %d arguments", KF_MAX_ARGS);
    if (!(t->args = calloc(json_array_size(args), sizeof *t->args)))
        return kf__err(l->ctx, KF_ENOMEM, "out of memory");
    t->nargs = (int)json_array_size(args);
    int nout = 0;
    for (int i = 0; i < t->nargs; i++) {
        if ((st = parse_arg(l, t, json_array_get(args, (size_t)i), i, &t->args[i]))) return st;
        for (int j = 0; j < i; j++)
            if (!strcmp(t->args[j].name, t->args[i].name))
                return bad(l, "args[%d].name: duplicate '%s'", i, t->args[i].name);
        if (t->args[i].is_buffer && t->args[i].io != KF_IO_IN) nout++;
    }
    if (!nout) return bad(l, "args: no out or inout buffer: nothing to check");

    json_t *tol = json_object_get(root, "tolerance");
    if (tol) {
        if ((st = parse_tol(l, tol, "tolerance", 1, &t->rtol, &t->atol, &t->mtol))) return st;
        t->has_tol = 1;
        json_t *mf = json_object_get(tol, "magnitude");
        if (mf) {
            const char *f = json_string_value(mf);
            if (!is_ident(f) || strlen(f) > 128)
                return bad(l, "tolerance.magnitude: expected the name of a function of the reference (a C "
                              "identifier)");
            if (!strcmp(f, t->entry))
                return bad(l,
                           "tolerance.magnitude: \"%s\" is the entry itself; name the reference's "
                           "function that writes the magnitudes",
                           f);
            if (!(t->mag_fn = kf__strdup(f))) return kf__err(l->ctx, KF_ENOMEM, "out of memory");
        }
    }

    json_t *shapes = json_object_get(root, "shapes");
    if (!json_is_array(shapes) || json_array_size(shapes) == 0)
        return bad(l, "shapes: missing or empty (at least one visible shape)");
    t->nshapes = (int)json_array_size(shapes);
    if (!(t->shapes = calloc((size_t)t->nshapes, sizeof *t->shapes)))
        return kf__err(l->ctx, KF_ENOMEM, "out of memory");
    for (int i = 0; i < t->nshapes; i++) {
        char w[48], err[256];
        snprintf(w, sizeof w, "shapes[%d]", i);
        t->shapes[i].kind = KF_SHAPE_VISIBLE;
        if ((st = parse_shape_obj(l, t, json_array_get(shapes, (size_t)i), w, &t->shapes[i]))) return st;
        int ok = kf_task_shape_ok(t, &t->shapes[i], NULL, NULL, err, sizeof err);
        if (ok < 0) return bad(l, "%s: %s", w, err);
        if (!ok) {
            kf_vars v = kf_task_vars(t, &t->shapes[i]);
            const char *which = "";
            for (int c = 0; c < t->ncons; c++) {
                int64_t x = 1;
                if (!kf_expr_eval(t->cons[c], &v, &x, err, sizeof err) && !x) {
                    which = kf_expr_src(t->cons[c]);
                    break;
                }
            }
            return bad(l, "%s: violates the constraint \"%s\"", w, which);
        }
        int64_t counts[KF_MAX_ARGS], iv[KF_MAX_ARGS];
        double fv[KF_MAX_ARGS];
        if (kf_task_eval_shape(t, &t->shapes[i], counts, iv, fv, err, sizeof err))
            return bad(l, "%s: %s", w, err);
        uint64_t bytes = kf_task_shape_bytes(t, &t->shapes[i]);
        if (bytes > cap)
            return bad(l, "%s: buffers need %llu bytes, over the memory cap of %llu", w,
                       (unsigned long long)bytes, (unsigned long long)cap);
    }

    json_t *hidden = json_object_get(root, "hidden");
    t->hidden_count = 4;
    if (hidden) {
        static const char *const kh[] = {"count", 0};
        if (!json_is_object(hidden) || (st = only_keys(l, hidden, "hidden", kh)))
            return st ? st : bad(l, "hidden: expected {\"count\": N}");
        json_t *c = json_object_get(hidden, "count");
        if (!is_int(c) || int_of(c) < 0 || int_of(c) > 1000)
            return bad(l, "hidden.count: expected an integer in [0, 1000]");
        t->hidden_count = (int)int_of(c);
    }

    json_t *cost = json_object_get(root, "cost");
    if (cost) {
        static const char *const kc[] = {"flops", "bytes", 0};
        if (!json_is_object(cost)) return bad(l, "cost: expected {\"flops\": e, \"bytes\": e}");
        if ((st = only_keys(l, cost, "cost", kc))) return st;
        json_t *f = json_object_get(cost, "flops"), *b = json_object_get(cost, "bytes");
        if (f && (st = parse_expr(l, t, f, "cost.flops", &t->cost_flops))) return st;
        if (b && (st = parse_expr(l, t, b, "cost.bytes", &t->cost_bytes))) return st;
    }

    /* the cost model must evaluate, to a non-negative number, at every visible shape */
    for (int i = 0; i < t->nshapes; i++) {
        kf_vars v = kf_task_vars(t, &t->shapes[i]);
        kf_expr *ce[2] = {t->cost_flops, t->cost_bytes};
        for (int k = 0; k < 2; k++) {
            int64_t x;
            char err[256];
            if (!ce[k]) continue;
            if (kf_expr_eval(ce[k], &v, &x, err, sizeof err))
                return bad(l, "cost.%s \"%s\" at shapes[%d]: %s", k ? "bytes" : "flops", kf_expr_src(ce[k]),
                           i, err);
            if (x < 0)
                return bad(l, "cost.%s \"%s\" is negative at shapes[%d]", k ? "bytes" : "flops",
                           kf_expr_src(ce[k]), i);
        }
    }
    /* "exact": the same inputs at the same addresses give the same bits (a result that
     * depends on the output's poison or on memory it never wrote is refused); "bits":
     * at other addresses too (the strict rule before address-dependent summation, split
     * on page boundaries as NUMA-aware code does, was allowed); "tolerance": within the
     * tolerance, at other addresses */
    t->determinism_exact = 1;
    t->determinism_bits = 0;
    json_t *det = json_object_get(root, "determinism");
    if (det) {
        const char *d = json_string_value(det);
        if (!d || (strcmp(d, "exact") && strcmp(d, "bits") && strcmp(d, "tolerance")))
            return bad(l, "determinism: expected \"exact\", \"bits\" or \"tolerance\"");
        t->determinism_exact = strcmp(d, "tolerance") != 0;
        t->determinism_bits = !strcmp(d, "bits");
    }
    json_t *lm = json_object_get(root, "launch_mode");
    if (lm) {
        const char *m = json_string_value(lm);
        if (!m || (strcmp(m, "kernel") && strcmp(m, "host")))
            return bad(l, "launch_mode: expected \"kernel\" or \"host\"");
        if (!kf_backend_has(kf_backend_get(t->backend), KF_BACKEND_LAUNCH_MODE)) {
            char with[128] = "";
            kf_backend *b;
            for (int i = 0; (b = kf_backend_at(i)); i++)
                if (kf_backend_has(b, KF_BACKEND_LAUNCH_MODE))
                    snprintf(with + strlen(with), sizeof with - strlen(with), "%s%s", with[0] ? " or " : "",
                             kf_backend_name(b));
            return bad(l, "launch_mode: only for the %s backend", with);
        }
        t->launch_host = !strcmp(m, "host");
    }
    json_t *rf = json_object_get(root, "reference");
    if (rf) {
        const char *r = json_string_value(rf);
        size_t n = r ? strlen(r) : 0;
        if (n < 4 || n > 128 || strcmp(r + n - 3, ".py") || strchr(r, '/') || r[0] == '.')
            return bad(l, "reference: expected the file name of a PyTorch reference in the task's directory "
                          "(\"reference.py\")");
        /* a CPU backend's (torch on the CPU) or a device backend's (torch on the GPU,
         * docs/torch.md "A PyTorch reference for a CUDA task") */
        kf_backend *rb = kf_backend_get(t->backend);
        if (!kf_backend_has(rb, KF_BACKEND_CPU) && !kf_backend_has(rb, KF_BACKEND_DEVICE))
            return bad(l,
                       "reference: a PyTorch reference is supported for tasks of the \"c\" and \"cuda\" "
                       "backends only; a %s task's reference is the backend's own file",
                       t->backend);
        t->ref_torch = 1;
        if (!(t->ref_file = kf__strdup(r))) return kf__err(l->ctx, KF_ENOMEM, "out of memory");
    }
    /* the magnitude function is a second entry of a C reference, called in its worker */
    if (t->mag_fn && (t->ref_torch || !kf_backend_has(kf_backend_get(t->backend), KF_BACKEND_CPU)))
        return bad(l, "tolerance.magnitude: a magnitude function is supported for a C reference (a \"c\" "
                      "task without \"reference\") only");
    if (t->mag_fn && !kf_task_has_mtol(t))
        return bad(l,
                   "tolerance.magnitude: no float output has an mtol > 0, so \"%s\" would never be "
                   "called",
                   t->mag_fn);
    if (json_object_get(root, "description") && !json_is_string(json_object_get(root, "description")))
        return bad(l, "description: expected a string");
    /* op tags of the families the task belongs to ("op/rowwise"): lessons distilled
     * from it are scoped to them too, and a run retrieves lessons under them */
    json_t *ops = json_object_get(root, "ops");
    if (ops) {
        if (!json_is_array(ops) || json_array_size(ops) > 16)
            return bad(l, "ops: expected an array of at most 16 op tags (\"op/rowwise\")");
        t->ops = calloc(json_array_size(ops) + 1, sizeof *t->ops);
        if (!t->ops) return kf__err(l->ctx, KF_ENOMEM, "out of memory");
        size_t i;
        json_t *v;
        json_array_foreach(ops, i, v) {
            const char *tag = json_string_value(v);
            int ok =
                tag && !strncmp(tag, "op/", 3) && tag[3] && strlen(tag) < 128 && tag[strlen(tag) - 1] != '/';
            for (const char *c = tag; ok && *c; c++)
                ok =
                    strchr("abcdefghijklmnopqrstuvwxyz0123456789_.=+-/", *c) && !(c[0] == '/' && c[1] == '/');
            if (!ok)
                return bad(l,
                           "ops[%zu]: expected an op tag: \"op/\" then segments of a-z 0-9 _ . = + - "
                           "separated by '/' (\"op/rowwise\")",
                           i);
            if (!(t->ops[t->nops++] = kf__strdup(tag))) return kf__err(l->ctx, KF_ENOMEM, "out of memory");
        }
    }
    return KF_OK;
}

/* The element count of buffer a at shape s's sizes, or -1 (err says why). */
static int64_t arg_count(const kf_task *t, const kf_arg *a, const int64_t *sizes, char *err, size_t n) {
    kf_shape sh = {(int64_t *)sizes, KF_SHAPE_VISIBLE, 0};
    kf_vars v = kf_task_vars(t, &sh);
    int64_t c = 1, x;
    for (int d = 0; d < a->ndim; d++) {
        if (kf_expr_eval(a->shape[d], &v, &x, err, n)) return -1;
        c *= x;
    }
    return c;
}

/* Read every "data" buffer's file: it must exist and hold the buffer's bytes, and the
 * buffer's size must not move with any size (each size at its least and its most, the
 * others at the first visible shape's). */
static kf_status load_data(lctx *l, kf_task *t) {
    for (int i = 0; i < t->nargs; i++) {
        kf_arg *a = &t->args[i];
        if (!a->data_file) continue;
        char err[256], *path = kf__asprintf("%s/%s", t->dir, a->data_file);
        int64_t sizes[KF_MAX_SIZES], want;
        if (!path) return kf__err(l->ctx, KF_ENOMEM, "out of memory");
        memcpy(sizes, t->shapes[0].v, (size_t)t->nsizes * sizeof *sizes);
        if ((want = arg_count(t, a, sizes, err, sizeof err)) < 0) {
            free(path);
            return bad(l, "args[%d] (%s): %s", i, a->name, err);
        }
        for (int k = 0; k < t->nsizes; k++) {
            int64_t keep = sizes[k], c0, c1;
            sizes[k] = t->size_min[k];
            c0 = arg_count(t, a, sizes, err, sizeof err);
            sizes[k] = t->size_max[k];
            c1 = arg_count(t, a, sizes, err, sizeof err);
            sizes[k] = keep;
            if (c0 != want || c1 != want) {
                free(path);
                return bad(l,
                           "args[%d].data: %s has fixed data (%s) but its size moves with size %s "
                           "(%lld to %lld elements over [%lld, %lld]): fixed data needs a buffer of one size",
                           i, a->name, a->data_file, t->size_names[k], (long long)c0, (long long)c1,
                           (long long)t->size_min[k], (long long)t->size_max[k]);
            }
        }
        size_t need = (size_t)want * kf_dtype_size(a->type);
        if (kf__read_file(path, need + 1, (char **)&a->data, &a->data_len)) {
            kf_status st = errno == EFBIG
                               ? bad(l, "args[%d].data: %s is larger than %s's %zu bytes (%lld %s)", i, path,
                                     a->name, need, (long long)want, kf_dtype_name(a->type))
                               : kf__err(l->ctx, errno == ENOENT ? KF_ETASK : kf__io_status(errno),
                                         "%s: args[%d].data: %s: %s", l->file, i, path, strerror(errno));
            free(path);
            return st;
        }
        if (a->data_len != need) {
            kf_status st = bad(l, "args[%d].data: %s holds %zu bytes, %s needs %zu (%lld %s)", i, path,
                               a->data_len, a->name, need, (long long)want, kf_dtype_name(a->type));
            free(path);
            return st;
        }
        free(path);
    }
    return KF_OK;
}

/* The task's fingerprint: SHA-256 of task.json, a NUL and the reference. A Python
 * reference may import the modules beside it (an imported KernelBench task's reference
 * runs its problem.py): then each other *.py of the directory follows, in name order, as
 * NUL, its name, NUL, its text, so none of them can change under a run unseen. A task
 * with a C or CUDA reference, or with no other .py file, keeps the fingerprint it had.
 * Fixed data files ("data") follow last, so a changed weight is a changed task. */
static kf_status fingerprint(kf_ctx *ctx, kf_task *t, const char *dir, const char *text, size_t textlen,
                             const char *ref, size_t reflen) {
    enum { MAXPY = 16 };
    const void *parts[3 + 4 * MAXPY + 4 * KF_MAX_ARGS] = {text, "\0", ref};
    size_t lens[3 + 4 * MAXPY + 4 * KF_MAX_ARGS] = {textlen, 1, reflen};
    int n = 3, nl = 0;
    struct dirent **names = NULL;
    char *bodies[MAXPY] = {0};
    kf_status st = KF_OK;
    size_t rl = strlen(t->ref_path);
    if (rl > 3 && !strcmp(t->ref_path + rl - 3, ".py") && (nl = scandir(dir, &names, NULL, alphasort)) < 0)
        nl = 0;
    const char *refname = strrchr(t->ref_path, '/') ? strrchr(t->ref_path, '/') + 1 : t->ref_path;
    int nb = 0;
    for (int i = 0; i < nl && !st; i++) {
        const char *nm = names[i]->d_name;
        size_t len = strlen(nm);
        if (len < 4 || strcmp(nm + len - 3, ".py") || !strcmp(nm, refname)) continue;
        if (nb == MAXPY) {
            st = kf__err(ctx, KF_ETASK, "%s: more than %d Python files beside the reference", dir, MAXPY);
            break;
        }
        char *path = kf__asprintf("%s/%s", dir, nm);
        size_t blen = 0;
        if (!path) {
            st = kf__err(ctx, KF_ENOMEM, "out of memory");
        } else if (kf__read_file(path, REF_MAX, &bodies[nb], &blen)) {
            st = kf__err(ctx, kf__io_status(errno), "%s: %s (beside the task's Python reference)", path,
                         strerror(errno));
        } else {
            parts[n] = "\0", lens[n++] = 1;
            parts[n] = nm, lens[n++] = len;
            parts[n] = "\0", lens[n++] = 1;
            parts[n] = bodies[nb], lens[n++] = blen;
            nb++;
        }
        free(path);
    }
    for (int i = 0; i < t->nargs && !st; i++) /* then each fixed data file: NUL, name, NUL, bytes */
        if (t->args[i].data_file) {
            parts[n] = "\0", lens[n++] = 1;
            parts[n] = t->args[i].data_file, lens[n++] = strlen(t->args[i].data_file);
            parts[n] = "\0", lens[n++] = 1;
            parts[n] = t->args[i].data, lens[n++] = t->args[i].data_len;
        }
    if (!st && kf__sha256_hex(parts, lens, n, t->fingerprint))
        st = kf__err(ctx, KF_EINTERNAL, "sha256 failed");
    for (int i = 0; i < nb; i++) free(bodies[i]);
    for (int i = 0; i < nl; i++) free(names[i]);
    free(names);
    return st;
}

kf_status kf_task_load(kf_ctx *ctx, const char *dir, kf_task **out) {
    if (!dir || !out) return kf__err(ctx, KF_EUSAGE, "kf_task_load: NULL argument");
    *out = NULL;
    struct stat sb;
    if (stat(dir, &sb) < 0) return kf__err(ctx, KF_EIO, "%s: %s", dir, strerror(errno));
    if (!S_ISDIR(sb.st_mode))
        return kf__err(ctx, KF_EIO, "%s: not a directory (a task is a directory holding task.json)", dir);
    kf_task *t = calloc(1, sizeof *t);
    char *path = kf__asprintf("%s/task.json", dir), *text = NULL, *ref = NULL;
    size_t textlen = 0, reflen = 0;
    json_t *root = NULL;
    kf_status st = KF_OK;
    if (!t || !path || !(t->dir = kf__strdup(dir))) {
        st = kf__err(ctx, KF_ENOMEM, "out of memory");
        goto fail;
    }
    lctx l = {ctx, path};
    if (kf__read_file(path, TASK_JSON_MAX, &text, &textlen)) {
        st = kf__err(ctx, errno == EFBIG ? KF_ETASK : kf__io_status(errno), "%s: %s", path, strerror(errno));
        goto fail;
    }
    json_error_t je;
    unsigned long jf = kf__json_failures();
    root = json_loadb(text, textlen, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        if (json_error_code(&je) == json_error_out_of_memory || kf__json_failures() != jf)
            st = kf__err(ctx, KF_ENOMEM, "%s: out of memory", path);
        else st = kf__err(ctx, KF_ETASK, "%s:%d:%d: %s", path, je.line, je.column, je.text);
        goto fail;
    }
    if ((st = parse_task(&l, t, root, 1ull << 30)) || (st = load_data(&l, t))) goto fail;
    kf_backend *be = kf_backend_get(t->backend);
    if (!be) {
        char names[256];
        kf_backend_names(0, " and ", names, sizeof names);
        st = kf__err(ctx, KF_EBACKEND,
                     "%s: backend \"%s\" is not available in this version of "
                     "kforge (it runs %s tasks)",
                     path, t->backend, names);
        goto fail;
    }
    t->ref_path = kf__asprintf("%s/%s", dir, t->ref_file ? t->ref_file : kf_backend_reference(be));
    if (!t->ref_path) {
        st = kf__err(ctx, KF_ENOMEM, "out of memory");
        goto fail;
    }
    if (kf__read_file(t->ref_path, REF_MAX, &ref, &reflen)) {
        st = kf__err(ctx, kf__io_status(errno), "%s: %s (the task's reference implementation)", t->ref_path,
                     strerror(errno));
        goto fail;
    }
    if ((st = fingerprint(ctx, t, dir, text, textlen, ref, reflen))) goto fail;
    json_decref(root);
    free(text);
    free(ref);
    free(path);
    *out = t;
    return KF_OK;
fail:
    json_decref(root);
    free(text);
    free(ref);
    free(path);
    kf_task_free(t);
    return st;
}

void kf_task_free(kf_task *t) {
    if (!t) return;
    for (int i = 0; i < t->nargs; i++) {
        kf_arg *a = &t->args[i];
        free(a->name);
        for (int d = 0; a->shape && d < a->ndim; d++) kf_expr_free(a->shape[d]);
        free(a->shape);
        kf_expr_free(a->value_expr);
        free(a->data_file);
        free(a->data);
    }
    free(t->args);
    for (int i = 0; i < t->nsizes && t->size_names; i++) free(t->size_names[i]);
    free(t->size_names);
    free(t->size_min);
    free(t->size_max);
    for (int i = 0; i < t->ncons; i++) kf_expr_free(t->cons[i]);
    free(t->cons);
    kf_shapes_free(t->shapes, t->nshapes);
    kf_expr_free(t->cost_flops);
    kf_expr_free(t->cost_bytes);
    free(t->dir);
    free(t->name);
    free(t->backend);
    free(t->entry);
    free(t->ref_path);
    free(t->ref_file);
    free(t->mag_fn);
    for (int i = 0; i < t->nops; i++) free(t->ops[i]);
    free(t->ops);
    free(t);
}

const char *kf_task_name(const kf_task *t) { return t ? t->name : ""; }
