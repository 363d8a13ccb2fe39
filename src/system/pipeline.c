/*
 * pipeline.c - pipeline.json loading and validation (the format is docs/system.md, with
 * its JSON Schema, docs/pipeline.schema.json).
 *
 * The file is input: every problem is a KF_ETASK with "FILE:LINE: what" on the
 * context, the line found from the text (jansson keeps no position per value, so the
 * line is that of the first mention of the offending name at or after its parent's).
 * Validation proves at load what a run would otherwise find half way: every stage's
 * task loads and is of the pipeline's backend, every buffer argument is bound to a
 * pipeline buffer of its type and element count at every step, no stage writes an
 * input or a weight, every temporary is written before it is read, and every output is
 * written; a fusion's stages are adjacent, and its inputs and outputs stand in for its
 * span's (check_fusion). Loading runs nothing.
 */
#define _GNU_SOURCE
#include "system.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define PIPE_MAX_BYTES (1u << 20)
#define PIPE_MAX_BUFS 256
#define PIPE_MAX_STAGES 128
#define PIPE_MAX_DIMS 32
#define PIPE_MAX_STEPS 4096
#define PIPE_MAX_LAYERS 256

typedef struct {
    kf_ctx *ctx;
    const char *path;
    const char *text;
    kf_pipeline *p;
} lctx;

/* The line of the first `"name"` at or after line `from` (1 when not found). */
static int line_of(const lctx *l, const char *name, int from) {
    int line = 1;
    const char *s = l->text;
    size_t k = strlen(name);
    for (; *s; s++) {
        if (*s == '\n') line++;
        if (line >= from && *s == '"' && !strncmp(s + 1, name, k) && s[1 + k] == '"') return line;
    }
    return from > 0 ? from : 1;
}

static kf_status bad(const lctx *l, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static kf_status bad(const lctx *l, int line, const char *fmt, ...) {
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return kf__err(l->ctx, KF_ETASK, "%s:%d: %s", l->path, line, msg);
}

static int known_keys(json_t *o, const char *const *keys, const char **unknown) {
    const char *k;
    json_t *v;
    json_object_foreach(o, k, v) {
        int ok = 0;
        for (int i = 0; keys[i]; i++) ok |= !strcmp(k, keys[i]);
        if (!ok) {
            *unknown = k;
            return 0;
        }
    }
    return 1;
}

static int parse_dtype(const char *s, kf_dtype *t) {
    static const struct {
        const char *n;
        kf_dtype t;
    } map[] = {{"f32", KF_T_F32}, {"f64", KF_T_F64}, {"i32", KF_T_I32},  {"i64", KF_T_I64},
               {"u8", KF_T_U8},   {"f16", KF_T_F16}, {"bf16", KF_T_BF16}};
    for (size_t i = 0; s && i < sizeof map / sizeof *map; i++)
        if (!strcmp(s, map[i].n)) return *t = map[i].t, 0;
    return -1;
}

static kf_status parse_init(lctx *l, json_t *v, int line, const char *who, kf_init *in) {
    const char *d = json_string_value(json_object_get(v, "dist"));
    if (!json_is_object(v) || !d) return bad(l, line, "buffer %s: \"init\" needs a \"dist\"", who);
    json_t *a, *b;
    if (!strcmp(d, "normal")) {
        in->dist = KF_DIST_NORMAL;
        a = json_object_get(v, "mean"), b = json_object_get(v, "std");
    } else if (!strcmp(d, "uniform") || !strcmp(d, "int")) {
        in->dist = !strcmp(d, "int") ? KF_DIST_INT : KF_DIST_UNIFORM;
        a = json_object_get(v, "lo"), b = json_object_get(v, "hi");
    } else {
        return bad(l, line, "buffer %s: init dist \"%s\": expected normal, uniform or int", who, d);
    }
    if (!json_is_number(a) || !json_is_number(b))
        return bad(l, line, "buffer %s: init %s needs %s", who, d,
                   in->dist == KF_DIST_NORMAL ? "\"mean\" and \"std\"" : "\"lo\" and \"hi\"");
    in->a = json_number_value(a), in->b = json_number_value(b);
    if (in->dist == KF_DIST_NORMAL ? !(in->b >= 0) : !(in->b >= in->a))
        return bad(l, line, "buffer %s: init %s: empty or negative spread", who, d);
    return KF_OK;
}

static kf_expr *parse_expr(lctx *l, json_t *v, int line, const char *who, const char *const *names, int n,
                           kf_status *st) {
    char src[64], err[256];
    const char *s = json_string_value(v);
    if (json_is_integer(v)) snprintf(src, sizeof src, "%lld", (long long)json_integer_value(v)), s = src;
    if (!s) {
        *st = bad(l, line, "%s: expected an integer or an expression", who);
        return NULL;
    }
    kf_expr *e = kf_expr_parse(s, err, sizeof err);
    if (!e) {
        *st = errno == ENOMEM ? kf__err(l->ctx, KF_ENOMEM, "out of memory")
                              : bad(l, line, "%s: \"%s\": %s", who, s, err);
        return NULL;
    }
    if (kf_expr_check_names(e, names, n, err, sizeof err)) {
        kf_expr_free(e);
        *st = bad(l, line, "%s: \"%s\": %s", who, s, err);
        return NULL;
    }
    *st = KF_OK;
    return e;
}

static int find_buf(const kf_pipeline *p, const char *name) {
    for (int i = 0; i < p->nbufs; i++)
        if (!strcmp(p->bufs[i].name, name)) return i;
    return -1;
}

int kf_pipeline_slot(const kf_pipeline *p, const char *name) {
    for (int i = 0; i < p->nslots; i++)
        if (!strcmp(p->slots[i].name, name)) return i;
    return -1;
}

/* The names a stage's size expression may use: dims, the tuning knobs of integer values
 * (their chosen value: how a knob reaches a stage, e.g. a task's `threads` size passed as
 * a scalar), then step and layer (values in vals). Buffer shapes use the dims alone, so
 * a tuning knob never changes the workload. */
#define PIPE_MAX_VARS (PIPE_MAX_DIMS + 16 + 2)
static void vars_of(const kf_pipeline *p, const char **names, int64_t *vals, int step, int layer, int *n) {
    int k = 0;
    for (int i = 0; i < p->ndims; i++) names[k] = p->dim_names[i], vals[k++] = p->dims[i];
    for (int i = 0; i < p->nknobs; i++)
        if (p->knobs[i].numeric && p->knobs[i].dim < 0)
            names[k] = p->knobs[i].name,
            vals[k++] = strtoll(p->knobs[i].values[p->knobs[i].chosen], NULL, 10);
    names[k] = "step", vals[k++] = step;
    names[k] = "layer", vals[k++] = layer;
    *n = k;
}

int kf_pipeline_stage_sizes(const kf_pipeline *p, const kf_sys_stage *st, int step, int layer, int64_t *v,
                            char *err, size_t n) {
    const char *names[PIPE_MAX_VARS];
    int64_t vals[PIPE_MAX_VARS];
    int nv;
    vars_of(p, names, vals, step, layer, &nv);
    kf_vars vars = {names, vals, nv};
    const kf_task *t = p->slots[st->slot].task;
    for (int i = 0; i < t->nsizes; i++)
        if (kf_expr_eval(st->size[i], &vars, &v[i], err, n)) return -1;
    return 0;
}

static kf_status load_buffers(lctx *l, json_t *bj) {
    kf_pipeline *p = l->p;
    if (!json_is_object(bj) || !json_object_size(bj))
        return bad(l, line_of(l, "buffers", 1), "\"buffers\" must be a non-empty object");
    if (json_object_size(bj) > PIPE_MAX_BUFS) return bad(l, line_of(l, "buffers", 1), "too many buffers");
    if (!(p->bufs = calloc(json_object_size(bj), sizeof *p->bufs)))
        return kf__err(l->ctx, KF_ENOMEM, "out of memory");
    int from = line_of(l, "buffers", 1);
    const char *names[PIPE_MAX_DIMS];
    for (int i = 0; i < p->ndims; i++) names[i] = p->dim_names[i];
    const char *k;
    json_t *v;
    static const char *const keys[] = {"type", "shape", "role", "init", "per_layer", "tolerance", "carry", 0};
    json_object_foreach(bj, k, v) {
        kf_sys_buffer *b = &p->bufs[p->nbufs++];
        b->carry = -1;
        b->line = line_of(l, k, from);
        if (!(b->name = kf__strdup(k))) return kf__err(l->ctx, KF_ENOMEM, "out of memory");
        const char *unk;
        if (!json_is_object(v)) return bad(l, b->line, "buffer %s: expected an object", k);
        if (!known_keys(v, keys, &unk)) return bad(l, b->line, "buffer %s: unknown key \"%s\"", k, unk);
        if (parse_dtype(json_string_value(json_object_get(v, "type")), &b->type))
            return bad(l, b->line, "buffer %s: \"type\" must be f32, f64, i32, i64, u8, f16 or bf16", k);
        json_t *sh = json_object_get(v, "shape");
        if (!json_is_array(sh) || !json_array_size(sh) || json_array_size(sh) > KF_MAX_DIMS)
            return bad(l, b->line, "buffer %s: \"shape\" must be an array of 1 to %d extents", k,
                       KF_MAX_DIMS);
        b->count = 1;
        for (size_t d = 0; d < json_array_size(sh); d++) {
            kf_status st;
            char who[160];
            snprintf(who, sizeof who, "buffer %s: shape[%zu]", k, d);
            if (!(b->shape[d] = parse_expr(l, json_array_get(sh, d), b->line, who, names, p->ndims, &st)))
                return st;
            b->ndim++;
            int64_t e;
            char err[256];
            kf_vars vars = {names, p->dims, p->ndims};
            if (kf_expr_eval(b->shape[d], &vars, &e, err, sizeof err))
                return bad(l, b->line, "%s: %s", who, err);
            if (e < 1 || b->count > INT64_MAX / e / 8)
                return bad(l, b->line, "%s: extent %lld out of range", who, (long long)e);
            b->count *= e;
        }
        const char *role = json_string_value(json_object_get(v, "role"));
        static const char *const roles[] = {"temp", "input", "weight", "state", "output"};
        b->role = (kf_sys_role)-1;
        for (int r = 0; r < 5; r++)
            if (role && !strcmp(role, roles[r])) b->role = (kf_sys_role)r;
        if (!role) b->role = KF_SYS_TEMP;
        if ((int)b->role < 0)
            return bad(l, b->line, "buffer %s: \"role\" must be temp, input, weight, state or output", k);
        json_t *init = json_object_get(v, "init");
        int needs = b->role == KF_SYS_INPUT || b->role == KF_SYS_WEIGHT || b->role == KF_SYS_STATE;
        if (needs && !init && !json_object_get(v, "carry"))
            return bad(l, b->line, "buffer %s: a %s needs an \"init\" distribution", k, roles[b->role]);
        if (!needs && init) return bad(l, b->line, "buffer %s: a %s has no \"init\"", k, roles[b->role]);
        if (init) {
            kf_status st = parse_init(l, init, b->line, k, &b->init);
            if (st) return st;
        }
        json_t *pl = json_object_get(v, "per_layer");
        if (pl && !json_is_boolean(pl))
            return bad(l, b->line, "buffer %s: \"per_layer\" must be a boolean", k);
        b->per_layer = json_is_true(pl);
        if (b->per_layer && b->role != KF_SYS_WEIGHT && b->role != KF_SYS_STATE)
            return bad(l, b->line, "buffer %s: only weights and state are per layer", k);
        json_t *tol = json_object_get(v, "tolerance");
        if (b->role == KF_SYS_OUTPUT) {
            json_t *rt = json_object_get(tol, "rtol"), *at = json_object_get(tol, "atol");
            if (!json_is_object(tol) || !json_is_number(rt) || !json_is_number(at))
                return bad(l, b->line, "buffer %s: an output needs \"tolerance\": {\"rtol\", \"atol\"}", k);
            b->rtol = json_number_value(rt), b->atol = json_number_value(at);
            if (!(b->rtol >= 0 && b->atol >= 0))
                return bad(l, b->line, "buffer %s: tolerances must be >= 0", k);
            if (!kf_dtype_is_float(b->type))
                return bad(l, b->line, "buffer %s: outputs are float buffers", k);
        } else if (tol) {
            return bad(l, b->line, "buffer %s: only outputs have a \"tolerance\"", k);
        }
    }
    /* carries, once every name is known */
    for (int i = 0; i < p->nbufs; i++) {
        kf_sys_buffer *b = &p->bufs[i];
        const char *c = json_string_value(json_object_get(json_object_get(bj, b->name), "carry"));
        if (!c && json_object_get(json_object_get(bj, b->name), "carry"))
            return bad(l, b->line, "buffer %s: \"carry\" must name a buffer", b->name);
        if (!c) continue;
        if (b->role != KF_SYS_INPUT) return bad(l, b->line, "buffer %s: only an input is carried", b->name);
        int j = find_buf(p, c);
        if (j < 0 || j == i) return bad(l, b->line, "buffer %s: \"carry\": no other buffer %s", b->name, c);
        if (p->bufs[j].type != b->type || p->bufs[j].count != b->count || p->bufs[j].per_layer)
            return bad(l, b->line, "buffer %s: carried from %s, which differs in type or size", b->name, c);
        b->carry = j;
        if (!json_object_get(json_object_get(bj, b->name), "init"))
            return bad(l, b->line, "buffer %s: a carried input still needs an \"init\" for step 0", b->name);
    }
    return KF_OK;
}

static kf_status load_slot(lctx *l, const char *name, const char *task, int line, int *idx) {
    kf_pipeline *p = l->p;
    int k = kf_pipeline_slot(p, name);
    char dir[PATH_MAX];
    if (task[0] == '/') snprintf(dir, sizeof dir, "%s", task);
    else snprintf(dir, sizeof dir, "%s/%s", p->dir, task);
    if (k >= 0) {
        if (strcmp(p->slots[k].task_dir, dir))
            return bad(l, line, "slot %s names two tasks (%s and %s)", name, p->slots[k].task_dir, dir);
        *idx = k;
        return KF_OK;
    }
    kf_sys_slot *s = &p->slots[p->nslots];
    s->line = line;
    if (!(s->name = kf__strdup(name)) || !(s->task_dir = kf__strdup(dir)))
        return kf__err(l->ctx, KF_ENOMEM, "out of memory");
    p->nslots++;
    kf_status st = kf_task_load(l->ctx, dir, &s->task);
    if (st) {
        char why[600];
        snprintf(why, sizeof why, "%s", kf_errmsg(l->ctx));
        return st == KF_ENOMEM ? st : bad(l, line, "slot %s: task %s: %s", name, task, why);
    }
    if (strcmp(s->task->backend, p->backend))
        return bad(l, line, "slot %s: task %s is a %s task in a %s pipeline", name, task, s->task->backend,
                   p->backend);
    *idx = k < 0 ? p->nslots - 1 : k;
    return KF_OK;
}

/* One stage (or fusion) object v into st: its name, task (slot), sizes and bindings.
 * slot_name NULL: the stage's "slot", else its task folder's name. */
static kf_status load_stage(lctx *l, json_t *v, const char *what, size_t i, int *from, kf_sys_stage *st,
                            const char *const *keys, int fusion) {
    kf_pipeline *p = l->p;
    const char *names[PIPE_MAX_VARS];
    int64_t vals[PIPE_MAX_VARS];
    int nv;
    vars_of(p, names, vals, 0, 0, &nv);
    st->first = st->last = -1;
    const char *nm = json_string_value(json_object_get(v, "name"));
    const char *task = json_string_value(json_object_get(v, "task"));
    st->line = nm ? line_of(l, nm, *from) : *from;
    *from = st->line;
    const char *unk;
    if (!json_is_object(v) || !nm || !task)
        return bad(l, st->line, "%s[%zu]: needs \"name\" and \"task\"", what, i);
    if (!known_keys(v, keys, &unk)) return bad(l, st->line, "%s %s: unknown key \"%s\"", what, nm, unk);
    for (int j = 0; j < p->nstages; j++)
        if (p->stages[j].name && st != &p->stages[j] && !strcmp(p->stages[j].name, nm))
            return bad(l, st->line, "%s %s: a second stage or fusion of that name", what, nm);
    if (!(st->name = kf__strdup(nm))) return kf__err(l->ctx, KF_ENOMEM, "out of memory");
    const char *slot = fusion ? nm : json_string_value(json_object_get(v, "slot"));
    if (!slot) {
        slot = strrchr(task, '/') ? strrchr(task, '/') + 1 : task;
        if (!*slot) return bad(l, st->line, "stage %s: \"task\" names no folder", nm);
    }
    if (fusion && kf_pipeline_slot(p, slot) >= 0)
        return bad(l, st->line, "fusion %s: a slot of that name exists: a fusion is a slot of its own", nm);
    kf_status s = load_slot(l, slot, task, st->line, &st->slot);
    if (s) return s;
    const kf_task *t = p->slots[st->slot].task;
    json_t *sz = json_object_get(v, "sizes"), *bind = json_object_get(v, "bind");
    if (!json_is_object(sz)) return bad(l, st->line, "%s %s: \"sizes\" must be an object", what, nm);
    if (!json_is_object(bind)) return bad(l, st->line, "%s %s: \"bind\" must be an object", what, nm);
    for (int k = 0; k < t->nsizes; k++) {
        json_t *e = json_object_get(sz, t->size_names[k]);
        if (!e)
            return bad(l, st->line, "%s %s: \"sizes\" lacks the task's size %s", what, nm, t->size_names[k]);
        char who[160];
        snprintf(who, sizeof who, "%s %s: size %s", what, nm, t->size_names[k]);
        if (!(st->size[k] = parse_expr(l, e, st->line, who, names, nv, &s))) return s;
    }
    const char *key;
    json_t *e;
    json_object_foreach(sz, key, e) {
        int ok = 0;
        for (int k = 0; k < t->nsizes; k++) ok |= !strcmp(key, t->size_names[k]);
        if (!ok) return bad(l, st->line, "%s %s: \"sizes\": the task has no size %s", what, nm, key);
    }
    json_object_foreach(bind, key, e) {
        int a = -1;
        for (int k = 0; k < t->nargs; k++)
            if (!strcmp(t->args[k].name, key)) a = k;
        if (a < 0 || !t->args[a].is_buffer)
            return bad(l, st->line, "%s %s: \"bind\": the task has no buffer argument %s", what, nm, key);
    }
    for (int k = 0; k < t->nargs; k++) {
        st->bind[k] = -1;
        const kf_arg *a = &t->args[k];
        if (!a->is_buffer) continue;
        const char *b = json_string_value(json_object_get(bind, a->name));
        if (!b) return bad(l, st->line, "%s %s: buffer argument %s is not bound", what, nm, a->name);
        int j = find_buf(p, b);
        if (j < 0)
            return bad(l, st->line, "%s %s: %s is bound to %s, which is no buffer", what, nm, a->name, b);
        const kf_sys_buffer *pb = &p->bufs[j];
        if (pb->type != a->type)
            return bad(l, st->line, "%s %s: %s is %s, buffer %s is %s", what, nm, a->name,
                       kf_dtype_name(a->type), b, kf_dtype_name(pb->type));
        if (a->io != KF_IO_IN && (pb->role == KF_SYS_INPUT || pb->role == KF_SYS_WEIGHT))
            return bad(l, st->line, "%s %s: writes %s through %s, which is an input or a weight", what, nm, b,
                       a->name);
        if (fusion && a->io == KF_IO_INOUT)
            return bad(l, st->line,
                       "fusion %s: %s is inout: a fused task reads its inputs and writes its outputs", nm,
                       a->name);
        for (int q = 0; q < k; q++)
            if (st->bind[q] == j && (a->io != KF_IO_IN || t->args[q].io != KF_IO_IN))
                return bad(l, st->line, "%s %s: %s and %s are both bound to %s, which one writes", what, nm,
                           t->args[q].name, a->name, b);
        st->bind[k] = j;
    }
    return KF_OK;
}

static int stage_writes(const kf_pipeline *p, const kf_sys_stage *s, int b) {
    const kf_task *t = p->slots[s->slot].task;
    for (int k = 0; k < t->nargs; k++)
        if (s->bind[k] == b && t->args[k].io != KF_IO_IN) return 1;
    return 0;
}

static int stage_reads(const kf_pipeline *p, const kf_sys_stage *s, int b) {
    const kf_task *t = p->slots[s->slot].task;
    for (int k = 0; k < t->nargs; k++)
        if (s->bind[k] == b && t->args[k].io != KF_IO_OUT) return 1;
    return 0;
}

/* A fusion's span and data flow: adjacent stages, none in another fusion; it reads only
 * what the span finds on entry, writes only what the span writes, and writes everything
 * the span writes that is seen after it (a later stage's input, the next layer's or
 * step's through a stage before the span, a carry, an output or a state). */
static kf_status check_fusion(lctx *l, json_t *v, kf_sys_stage *f) {
    kf_pipeline *p = l->p;
    json_t *sj = json_object_get(v, "stages"), *e;
    size_t i;
    if (!json_is_array(sj) || json_array_size(sj) < 2)
        return bad(l, f->line, "fusion %s: \"stages\" must name at least 2 adjacent stages", f->name);
    json_array_foreach(sj, i, e) {
        const char *n = json_string_value(e);
        int j = -1;
        for (int q = 0; n && q < p->nplain; q++)
            if (!strcmp(p->stages[q].name, n)) j = q;
        if (j < 0) return bad(l, f->line, "fusion %s: %s is no stage of the pipeline", f->name, n ? n : "?");
        if (i == 0) f->first = j;
        else if (j != f->last + 1)
            return bad(l, f->line,
                       "fusion %s: %s does not follow %s: a fusion's stages are adjacent, in order", f->name,
                       n, p->stages[f->last].name);
        f->last = j;
    }
    for (int q = p->nplain; q < p->nstages; q++) {
        const kf_sys_stage *o = &p->stages[q];
        if (o != f && o->first >= 0 && o->first <= f->last && f->first <= o->last)
            return bad(l, f->line, "fusion %s: its stages overlap fusion %s's", f->name, o->name);
    }
    const kf_task *t = p->slots[f->slot].task;
    for (int k = 0; k < t->nargs; k++) {
        int b = f->bind[k];
        if (b < 0) continue;
        for (int j = f->first; j <= f->last; j++) {
            if (t->args[k].io == KF_IO_IN && stage_writes(p, &p->stages[j], b))
                return bad(l, f->line,
                           "fusion %s: reads %s (%s), which stage %s of its span writes: a fusion reads what "
                           "its first stage finds",
                           f->name, p->bufs[b].name, t->args[k].name, p->stages[j].name);
        }
        int w = 0;
        for (int j = f->first; j <= f->last; j++) w |= stage_writes(p, &p->stages[j], b);
        if (t->args[k].io != KF_IO_IN && !w)
            return bad(l, f->line, "fusion %s: writes %s (%s), which no stage of its span writes", f->name,
                       p->bufs[b].name, t->args[k].name);
    }
    for (int b = 0; b < p->nbufs; b++) {
        int w = -1, fw = 0;
        for (int j = f->first; j <= f->last; j++)
            if (stage_writes(p, &p->stages[j], b)) w = j;
        for (int k = 0; k < t->nargs; k++) fw |= f->bind[k] == b && t->args[k].io != KF_IO_IN;
        if (w < 0 || fw) continue;
        char by[200] = "";
        if (p->bufs[b].role == KF_SYS_OUTPUT || p->bufs[b].role == KF_SYS_STATE)
            snprintf(by, sizeof by, "it is %s", p->bufs[b].role == KF_SYS_OUTPUT ? "an output" : "a state");
        for (int q = 0; q < p->nbufs && !by[0]; q++)
            if (p->bufs[q].role == KF_SYS_INPUT && p->bufs[q].carry == b)
                snprintf(by, sizeof by, "input %s carries it", p->bufs[q].name);
        for (int j = 0; j < p->nplain && !by[0]; j++)
            if ((j < f->first || j > f->last) && stage_reads(p, &p->stages[j], b))
                snprintf(by, sizeof by, "stage %s reads it", p->stages[j].name);
        if (by[0])
            return bad(
                l, f->line,
                "fusion %s: stage %s writes %s, which is seen after the span (%s): the fused task must "
                "write it too",
                f->name, p->stages[w].name, p->bufs[b].name, by);
    }
    return KF_OK;
}

static kf_status load_stages(lctx *l, json_t *sj, json_t *fj) {
    kf_pipeline *p = l->p;
    if (!json_is_array(sj) || !json_array_size(sj) || json_array_size(sj) > PIPE_MAX_STAGES)
        return bad(l, line_of(l, "stages", 1), "\"stages\" must be an array of 1 to %d stages",
                   PIPE_MAX_STAGES);
    if (fj && (!json_is_array(fj) || json_array_size(fj) > PIPE_MAX_STAGES))
        return bad(l, line_of(l, "fusions", 1), "\"fusions\" must be an array of at most %d fusions",
                   PIPE_MAX_STAGES);
    size_t n = json_array_size(sj), nf = json_array_size(fj);
    if (!(p->stages = calloc(n + nf, sizeof *p->stages)) || !(p->slots = calloc(n + nf, sizeof *p->slots)))
        return kf__err(l->ctx, KF_ENOMEM, "out of memory");
    int from = line_of(l, "stages", 1);
    static const char *const keys[] = {"name", "task", "slot", "sizes", "bind", 0};
    for (size_t i = 0; i < n; i++) {
        kf_sys_stage *st = &p->stages[p->nstages++];
        kf_status s = load_stage(l, json_array_get(sj, i), "stage", i, &from, st, keys, 0);
        if (s) return s;
    }
    p->nplain = p->nstages;
    static const char *const fkeys[] = {"name", "task", "stages", "sizes", "bind", 0};
    from = line_of(l, "fusions", 1);
    for (size_t i = 0; i < nf; i++) {
        kf_sys_stage *st = &p->stages[p->nstages++];
        kf_status s = load_stage(l, json_array_get(fj, i), "fusion", i, &from, st, fkeys, 1);
        if (!s) s = check_fusion(l, json_array_get(fj, i), st);
        if (s) return s;
    }
    return KF_OK;
}

/* At every step: element counts match, constraints hold, temporaries are written before
 * they are read, outputs are written. */
static kf_status check_flow(lctx *l) {
    kf_pipeline *p = l->p;
    char *written = calloc((size_t)p->nbufs, 1);
    if (!written) return kf__err(l->ctx, KF_ENOMEM, "out of memory");
    kf_status st = KF_OK;
    int steps_to_check[2] = {0, p->steps - 1};
    for (int si = 0; si < 2 && !st; si++) {
        int step = steps_to_check[si];
        memset(written, 0, (size_t)p->nbufs);
        for (int j = 0; j < p->nstages && !st; j++) {
            const kf_sys_stage *s = &p->stages[j];
            int fused = j >= p->nplain; /* a fusion: its counts and constraints; the flow is its span's */
            const kf_task *t = p->slots[s->slot].task;
            int64_t v[KF_MAX_SIZES], counts[KF_MAX_ARGS], iv[KF_MAX_ARGS];
            double fv[KF_MAX_ARGS];
            char err[512];
            for (int layer = 0; layer < p->layers && !st; layer += p->layers > 1 ? p->layers - 1 : 1) {
                if (kf_pipeline_stage_sizes(p, s, step, layer, v, err, sizeof err)) {
                    st = bad(l, s->line, "stage %s at step %d: %s", s->name, step, err);
                    break;
                }
                kf_shape sh = {v, KF_SHAPE_VISIBLE, 0};
                int ok = kf_task_shape_ok(t, &sh, NULL, NULL, err, sizeof err);
                if (ok != 1) {
                    char txt[256];
                    kf_shape_format(t, &sh, txt, sizeof txt);
                    st = bad(l, s->line, "stage %s at step %d: %s breaks the task's constraints%s%s", s->name,
                             step, txt, ok < 0 ? ": " : "", ok < 0 ? err : "");
                    break;
                }
                if (kf_task_eval_shape(t, &sh, counts, iv, fv, err, sizeof err)) {
                    st = bad(l, s->line, "stage %s at step %d: %s", s->name, step, err);
                    break;
                }
                for (int k = 0; k < t->nargs && !st; k++) {
                    if (s->bind[k] < 0) continue;
                    const kf_sys_buffer *b = &p->bufs[s->bind[k]];
                    if (counts[k] != b->count)
                        st = bad(l, s->line,
                                 "stage %s at step %d: %s needs %lld elements, buffer %s has %lld", s->name,
                                 step, t->args[k].name, (long long)counts[k], b->name, (long long)b->count);
                }
            }
            for (int k = 0; k < t->nargs && !st && !fused; k++) {
                int b = s->bind[k];
                if (b < 0) continue;
                if (t->args[k].io == KF_IO_OUT) continue;
                if ((p->bufs[b].role == KF_SYS_TEMP || p->bufs[b].role == KF_SYS_OUTPUT) && !written[b])
                    st = bad(l, s->line, "stage %s reads %s before any stage writes it", s->name,
                             p->bufs[b].name);
            }
            for (int k = 0; k < t->nargs && !st && !fused; k++)
                if (s->bind[k] >= 0 && t->args[k].io != KF_IO_IN) written[s->bind[k]] = 1;
        }
        for (int b = 0; b < p->nbufs && !st; b++)
            if (p->bufs[b].role == KF_SYS_OUTPUT && !written[b])
                st = bad(l, p->bufs[b].line, "output %s is written by no stage", p->bufs[b].name);
    }
    free(written);
    return st;
}

static kf_status load_knobs(lctx *l, json_t *kj, const char *const *sel, int nsel) {
    kf_pipeline *p = l->p;
    if (kj && (!json_is_object(kj) || json_object_size(kj) > 16))
        return bad(l, line_of(l, "knobs", 1), "\"knobs\" must be an object of at most 16 value lists");
    if (kj && !(p->knobs = calloc(json_object_size(kj), sizeof *p->knobs)))
        return kf__err(l->ctx, KF_ENOMEM, "out of memory");
    int from = line_of(l, "knobs", 1);
    const char *k;
    json_t *v;
    json_object_foreach(kj, k, v) {
        kf_sys_knob *kn = &p->knobs[p->nknobs++];
        kn->line = line_of(l, k, from);
        kn->dim = -1;
        if (!(kn->name = kf__strdup(k))) return kf__err(l->ctx, KF_ENOMEM, "out of memory");
        if (!json_is_array(v) || !json_array_size(v) || json_array_size(v) > 64)
            return bad(l, kn->line, "knob %s: expected a list of 1 to 64 values", k);
        if (!(kn->values = calloc(json_array_size(v), sizeof *kn->values)))
            return kf__err(l->ctx, KF_ENOMEM, "out of memory");
        for (size_t i = 0; i < json_array_size(v); i++) {
            json_t *x = json_array_get(v, i);
            char num[32];
            const char *s = json_string_value(x);
            if (json_is_integer(x))
                snprintf(num, sizeof num, "%lld", (long long)json_integer_value(x)), s = num;
            if (!s) return bad(l, kn->line, "knob %s: values are strings or integers", k);
            if (!(kn->values[kn->nvalues++] = kf__strdup(s)))
                return kf__err(l->ctx, KF_ENOMEM, "out of memory");
        }
        for (int d = 0; d < p->ndims; d++)
            if (!strcmp(p->dim_names[d], k)) kn->dim = d;
        if (!strcmp(k, "step") || !strcmp(k, "layer"))
            return bad(l, kn->line, "knob %s: step and layer are reserved", k);
        kn->numeric = 1;
        for (int i = 0; i < kn->nvalues; i++) {
            char *end;
            errno = 0;
            (void)strtoll(kn->values[i], &end, 10);
            if (errno || *end || end == kn->values[i]) kn->numeric = 0;
        }
        if (!strcmp(k, "launch"))
            for (int i = 0; i < kn->nvalues; i++)
                if (strcmp(kn->values[i], "eager") && strcmp(kn->values[i], "graph"))
                    return bad(l, kn->line, "knob launch: \"%s\": expected eager or graph", kn->values[i]);
        if (kn->dim >= 0 || !strcmp(k, "threads"))
            for (int i = 0; i < kn->nvalues; i++) {
                char *end;
                errno = 0;
                long long x = strtoll(kn->values[i], &end, 10);
                if (errno || *end || x < 1)
                    return bad(l, kn->line, "knob %s: \"%s\" is not a positive integer", k, kn->values[i]);
            }
    }
    for (int i = 0; i < nsel; i++) {
        const char *eq = strchr(sel[i], '=');
        if (!eq) return kf__err(l->ctx, KF_EUSAGE, "--knob %s: expected NAME=VALUE", sel[i]);
        kf_sys_knob *kn = NULL;
        for (int j = 0; j < p->nknobs; j++)
            if (strlen(p->knobs[j].name) == (size_t)(eq - sel[i]) &&
                !strncmp(p->knobs[j].name, sel[i], eq - sel[i]))
                kn = &p->knobs[j];
        if (!kn) return kf__err(l->ctx, KF_EUSAGE, "--knob %s: the pipeline declares no such knob", sel[i]);
        int c = -1;
        for (int j = 0; j < kn->nvalues; j++)
            if (!strcmp(kn->values[j], eq + 1)) c = j;
        if (c < 0) return kf__err(l->ctx, KF_EUSAGE, "--knob %s: not one of the knob's values", sel[i]);
        kn->chosen = c;
    }
    for (int j = 0; j < p->nknobs; j++)
        if (p->knobs[j].dim >= 0)
            p->dims[p->knobs[j].dim] = strtoll(p->knobs[j].values[p->knobs[j].chosen], NULL, 10);
    return KF_OK;
}

kf_status kf_pipeline_load(kf_ctx *ctx, const char *path, const char *const *knobs, int nknobs, int steps,
                           int layers, kf_pipeline **out) {
    *out = NULL;
    char *text = NULL;
    size_t len = 0;
    if (kf__read_file(path, PIPE_MAX_BYTES, &text, &len))
        return kf__err(ctx, kf__io_status(errno), "%s: %s", path, strerror(errno));
    kf_pipeline *p = calloc(1, sizeof *p);
    lctx l = {ctx, path, text, p};
    kf_status st = KF_OK;
    json_error_t je;
    json_t *root = NULL;
    if (!p) {
        st = kf__err(ctx, KF_ENOMEM, "out of memory");
        goto out;
    }
    if (!(root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je))) {
        st = kf__err(ctx, KF_ETASK, "%s:%d: %s", path, je.line, je.text);
        goto out;
    }
    static const char *const keys[] = {"name",   "backend", "dims",        "steps",   "layers", "buffers",
                                       "stages", "knobs",   "description", "fusions", 0};
    const char *unk;
    if (!json_is_object(root)) {
        st = bad(&l, 1, "a pipeline is a JSON object");
        goto out;
    }
    if (!known_keys(root, keys, &unk)) {
        st = bad(&l, line_of(&l, unk, 1), "unknown key \"%s\"", unk);
        goto out;
    }
    const char *nm = json_string_value(json_object_get(root, "name"));
    const char *be = json_string_value(json_object_get(root, "backend"));
    if (!nm || !be) {
        st = bad(&l, 1, "a pipeline needs \"name\" and \"backend\"");
        goto out;
    }
    char *slash = strrchr(path, '/');
    if (!(p->path = kf__strdup(path)) || !(p->name = kf__strdup(nm)) || !(p->backend = kf__strdup(be)) ||
        !(p->dir = slash ? kf__asprintf("%.*s", (int)(slash - path), path) : kf__strdup("."))) {
        st = kf__err(ctx, KF_ENOMEM, "out of memory");
        goto out;
    }
    json_t *dims = json_object_get(root, "dims");
    if (dims && (!json_is_object(dims) || json_object_size(dims) > PIPE_MAX_DIMS)) {
        st = bad(&l, line_of(&l, "dims", 1), "\"dims\" must be an object of at most %d integers",
                 PIPE_MAX_DIMS);
        goto out;
    }
    size_t nd = json_object_size(dims);
    if (!(p->dim_names = calloc(nd + 1, sizeof *p->dim_names)) ||
        !(p->dims = calloc(nd + 1, sizeof *p->dims))) {
        st = kf__err(ctx, KF_ENOMEM, "out of memory");
        goto out;
    }
    const char *k;
    json_t *v;
    json_object_foreach(dims, k, v) {
        if (!json_is_integer(v) || json_integer_value(v) < 0 || !strcmp(k, "step") || !strcmp(k, "layer")) {
            st = bad(&l, line_of(&l, k, line_of(&l, "dims", 1)),
                     "dim %s: expected a non-negative integer (step and layer are reserved)", k);
            goto out;
        }
        if (!(p->dim_names[p->ndims] = kf__strdup(k))) {
            st = kf__err(ctx, KF_ENOMEM, "out of memory");
            goto out;
        }
        p->dims[p->ndims++] = json_integer_value(v);
    }
    json_t *sj = json_object_get(root, "steps"), *lj = json_object_get(root, "layers");
    if ((sj &&
         (!json_is_integer(sj) || json_integer_value(sj) < 1 || json_integer_value(sj) > PIPE_MAX_STEPS)) ||
        (lj &&
         (!json_is_integer(lj) || json_integer_value(lj) < 1 || json_integer_value(lj) > PIPE_MAX_LAYERS))) {
        st = bad(&l, line_of(&l, sj ? "steps" : "layers", 1),
                 "\"steps\" (1..%d) and \"layers\" (1..%d) are integers", PIPE_MAX_STEPS, PIPE_MAX_LAYERS);
        goto out;
    }
    p->steps = sj ? (int)json_integer_value(sj) : 1;
    p->layers = lj ? (int)json_integer_value(lj) : 1;
    if (steps > 0) p->steps = steps < PIPE_MAX_STEPS ? steps : PIPE_MAX_STEPS;
    if (layers > 0) p->layers = layers < PIPE_MAX_LAYERS ? layers : PIPE_MAX_LAYERS;
    if ((st = load_knobs(&l, json_object_get(root, "knobs"), knobs, nknobs))) goto out;
    if ((st = load_buffers(&l, json_object_get(root, "buffers")))) goto out;
    if ((st = load_stages(&l, json_object_get(root, "stages"), json_object_get(root, "fusions")))) goto out;
    st = check_flow(&l);
out:
    json_decref(root);
    free(text);
    if (st) kf_pipeline_free(p);
    else *out = p;
    return st;
}

void kf_pipeline_free(kf_pipeline *p) {
    if (!p) return;
    for (int i = 0; i < p->nbufs; i++) {
        free(p->bufs[i].name);
        for (int d = 0; d < p->bufs[i].ndim; d++) kf_expr_free(p->bufs[i].shape[d]);
    }
    for (int i = 0; i < p->nstages; i++) {
        free(p->stages[i].name);
        for (int k = 0; k < KF_MAX_SIZES; k++) kf_expr_free(p->stages[i].size[k]);
    }
    for (int i = 0; i < p->nslots; i++) {
        free(p->slots[i].name);
        free(p->slots[i].task_dir);
        kf_task_free(p->slots[i].task);
    }
    for (int i = 0; i < p->nknobs; i++) {
        free(p->knobs[i].name);
        for (int j = 0; j < p->knobs[i].nvalues; j++) free(p->knobs[i].values[j]);
        free(p->knobs[i].values);
    }
    for (int i = 0; p->dim_names && i < p->ndims; i++) free(p->dim_names[i]);
    free(p->dim_names);
    free(p->dims);
    free(p->bufs);
    free(p->stages);
    free(p->slots);
    free(p->knobs);
    free(p->path);
    free(p->dir);
    free(p->name);
    free(p->backend);
    free(p);
}
