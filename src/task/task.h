/*
 * task.h - the loaded task: sizes, constraints, arguments, tolerance, visible shapes,
 * hidden-shape policy and cost model; plus shape drawing and per-shape evaluation of
 * buffer extents and scalar values.
 */
#ifndef KF_TASK_H
#define KF_TASK_H

#include "../util/util.h"

typedef enum { KF_T_F32, KF_T_F64, KF_T_I32, KF_T_I64, KF_T_U8, KF_T_F16, KF_T_BF16 } kf_dtype;
typedef enum { KF_IO_IN, KF_IO_OUT, KF_IO_INOUT } kf_io;
typedef enum { KF_DIST_NORMAL, KF_DIST_UNIFORM, KF_DIST_INT } kf_dist;

size_t kf_dtype_size(kf_dtype t);
const char *kf_dtype_name(kf_dtype t);
int kf_dtype_is_float(kf_dtype t);

typedef struct {
    kf_dist dist;
    double a, b; /* normal: mean, std; uniform/int: lo, hi */
} kf_init;

typedef struct {
    char *name;
    kf_dtype type;
    int is_buffer;
    /* buffer */
    int ndim;
    kf_expr **shape;
    kf_io io;
    kf_init init;
    char *data_file;     /* "data": an in buffer's fixed contents, a file of the task directory
                          * (raw little-endian elements of type, row-major), or NULL: drawn */
    unsigned char *data; /* those bytes, read at load (the buffer's size at every shape) */
    size_t data_len;
    int has_tol; /* the buffer's own tolerance (outputs), over the task's */
    double rtol, atol, mtol;
    /* scalar */
    kf_expr *value_expr; /* NULL: value_num */
    double value_num;
} kf_arg;

typedef enum { KF_SHAPE_VISIBLE, KF_SHAPE_HIDDEN, KF_SHAPE_EDGE } kf_shape_kind;

/* One concrete shape: a value per task size (same order as task->size_names). */
typedef struct {
    int64_t *v;
    kf_shape_kind kind;
    int light; /* checked with two calls only, spiked and rescaled/narrow inputs (the
                * large-corner edge: it is there for size-dependent bugs, and four calls
                * there would dominate the check) */
} kf_shape;

struct kf_task {
    char *dir, *name, *backend, *entry;
    char *ref_path;
    char *ref_file; /* that name, or NULL */
    int ref_torch;  /* "reference": "NAME.py": a PyTorch reference (docs/torch.md), run by
                     * python3 with torch in a trusted process; else the backend's file */
    int nsizes;
    char **size_names;
    int64_t *size_min, *size_max;
    int ncons;
    kf_expr **cons;
    int nargs;
    kf_arg *args;
    int has_tol;
    double rtol, atol, mtol; /* mtol: relative to the magnitude of what was summed */
    char *mag_fn;            /* "tolerance": {"magnitude": NAME}: the C reference's function that
                              * writes M on the input set itself, or NULL: M is the reference's
                              * output on the absolute values of the float inputs */
    int nshapes;
    kf_shape *shapes;
    int hidden_count;
    kf_expr *cost_flops, *cost_bytes;
    int determinism_exact; /* 1: bitwise-equal reruns ("exact", the default, and "bits");
                            * 0: within tolerance ("tolerance") */
    int determinism_bits;  /* 1 ("bits"): bitwise-equal at other buffer addresses too;
                            * 0: the determinism pair reuses one set of addresses */
    int launch_host;       /* cuda: "launch_mode": "host" (files without kforge:launch) */
    char fingerprint[65];  /* sha256(task.json, reference) */
    char **ops;            /* "ops": op-family tags ("op/rowwise"), for lessons; may be NULL */
    int nops;
};

#define KF_MAX_ARGS 32
#define KF_MAX_SIZES 16
#define KF_MAX_DIMS 8

/* Tolerance for an output: its own, else the task's, else its type's default. */
void kf_task_tolerance(const kf_task *t, const kf_arg *a, double *rtol, double *atol);
/* The output's tolerance relative to the magnitude M of what was summed (its own, else
 * the task's; 0 when none): an element passes when |out - ref| <= atol + rtol*|ref| +
 * mtol*M, M being the reference's output on the absolute values of its float inputs, or the
 * output of the task's magnitude function (t->mag_fn) on the inputs themselves. */
double kf_task_mtol(const kf_task *t, const kf_arg *a);
/* 1 when some float output has mtol > 0: the reference makes a magnitude run per input set. */
int kf_task_has_mtol(const kf_task *t);

/* Evaluate every buffer's element count and every scalar's value at shape s.
 * counts[i] for buffers, ivals/fvals[i] for scalars. 0, or -1 with err. */
int kf_task_eval_shape(const kf_task *t, const kf_shape *s, int64_t *counts, int64_t *ivals, double *fvals,
                       char *err, size_t errlen);
/* Total bytes of all buffers at s (saturating), or UINT64_MAX on evaluation error. */
uint64_t kf_task_shape_bytes(const kf_task *t, const kf_shape *s);
/* Does s satisfy the task's constraints and the extra predicate `when` (may be NULL,
 * evaluated over sizes plus the given params)? 1 yes, 0 no, -1 a constraint failed to
 * evaluate (the task's fault), -2 `when` failed to evaluate (overflow, division by
 * zero: the candidate's fault); err names the expression and, for -2, the shape. */
int kf_task_shape_ok(const kf_task *t, const kf_shape *s, const kf_expr *when, const kf_vars *params,
                     char *err, size_t errlen);
/* vars view of a shape (names borrowed from the task) */
kf_vars kf_task_vars(const kf_task *t, const kf_shape *s);
/* Format "rows=4, cols=7" into buf. */
void kf_shape_format(const kf_task *t, const kf_shape *s, char *buf, size_t n);

/* Draw `count` log-uniform hidden shapes, four family shapes (aligned, aligned128, model, mixed)
 * and the edge shapes (minimum, primes, 2^k +/- 1, the large corner, equal sizes), all
 * satisfying the constraints, `when`, and the buffer cap (shapes.c says how). *out is an
 * array of *nout shapes, freed with kf_shapes_free. Returns 0; -1 (err set) when the
 * constraints cannot be met or fail to evaluate; -2 (err names the expression and the
 * shape) when `when` fails to evaluate at a shape inside the constraints; -3 when memory
 * ran out. */
int kf_task_draw_hidden(const kf_task *t, kf_rng *rng, int count, const kf_expr *when, const kf_vars *params,
                        uint64_t buffer_cap, kf_shape **out, int *nout, char *err, size_t errlen);
void kf_shapes_free(kf_shape *s, int n);

#endif
