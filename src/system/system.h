/*
 * system.h - a pipeline of kforge tasks judged as a whole (docs/system.md): the loaded
 * pipeline.json (pipeline.c) and what kf_system_check and kf_system_bench (system.c)
 * share. A pipeline names tasks (slots), binds their buffers to named pipeline buffers,
 * and runs its stages in order for a number of steps, N layers by repetition. A fusion
 * is one task that implements a run of adjacent stages in one call: a stage of its own
 * (after the pipeline's) whose slot is named after it, used in place of those stages
 * when the configuration gives it a candidate.
 */
#ifndef KF_SYSTEM_H
#define KF_SYSTEM_H

#include "../task/task.h"

typedef enum {
    KF_SYS_TEMP,   /* written by a stage before any stage reads it, every step */
    KF_SYS_INPUT,  /* fresh adversarial values every step (or carried from a buffer) */
    KF_SYS_WEIGHT, /* drawn once per check from the secret seed */
    KF_SYS_STATE,  /* drawn once, then carried from step to step (a KV cache) */
    KF_SYS_OUTPUT  /* compared end to end after every step */
} kf_sys_role;

typedef struct {
    char *name;
    kf_dtype type;
    int ndim;
    kf_expr *shape[KF_MAX_DIMS];
    kf_sys_role role;
    int per_layer; /* one buffer per layer (weights, caches) */
    kf_init init;
    double rtol, atol; /* outputs: the end-to-end tolerance */
    int carry;         /* inputs: the buffer whose value it takes for the next step, or -1 */
    int64_t count;     /* elements at the pipeline's dims */
    int line;
} kf_sys_buffer;

typedef struct {
    char *name;
    int slot;                    /* index into slots */
    kf_expr *size[KF_MAX_SIZES]; /* per size of the slot's task: over dims, tuning knobs, step, layer */
    int bind[KF_MAX_ARGS];       /* per argument of the task: a buffer, or -1 (scalars) */
    int first, last;             /* a fusion: the stages it replaces (indices); else -1 */
    int line;
} kf_sys_stage;

typedef struct {
    char *name;
    char *task_dir;
    kf_task *task;
    int line;
} kf_sys_slot;

typedef struct {
    char *name;
    char **values;
    int nvalues;
    int chosen; /* index into values */
    int dim;    /* the dim it sets (a workload knob, never searched), or -1 (a tuning knob) */
    int numeric; /* every value an integer: a tuning one is a name of the stage sizes */
    int line;
} kf_sys_knob;

typedef struct kf_pipeline {
    char *path, *dir, *name, *backend;
    int ndims;
    char **dim_names;
    int64_t *dims;
    int steps, layers;
    int nbufs;
    kf_sys_buffer *bufs;
    int nstages; /* the stages, then the fusions (a stage each, its own slot) */
    int nplain;  /* stages[0..nplain) are the pipeline's stages, in order */
    kf_sys_stage *stages;
    int nslots;
    kf_sys_slot *slots;
    int nknobs;
    kf_sys_knob *knobs;
} kf_pipeline;

/* Load and validate path (a pipeline.json), its tasks (relative to its folder) and the
 * knob selections ("NAME=VALUE", which may set a dim) and overrides (steps, layers > 0).
 * Errors are KF_ETASK (KF_EUSAGE for a bad selection) with "FILE:LINE: ..." on ctx.
 * Caller frees with kf_pipeline_free. */
kf_status kf_pipeline_load(kf_ctx *ctx, const char *path, const char *const *knobs, int nknobs, int steps,
                           int layers, kf_pipeline **out);
void kf_pipeline_free(kf_pipeline *p);
/* The slot named name, or -1. */
int kf_pipeline_slot(const kf_pipeline *p, const char *name);
/* The sizes of stage st's task at step and layer into v (the task's order): 0, or -1
 * with err. */
int kf_pipeline_stage_sizes(const kf_pipeline *p, const kf_sys_stage *st, int step, int layer, int64_t *v,
                            char *err, size_t n);

#endif
