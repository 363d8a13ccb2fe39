/*
 * memory.h - what the loop remembers for and about context packs (memory.c): the pack of
 * an action (the parent, its verdict, related failures, the run's constraints), the
 * lessons retrieved for each pack, each pack's per-section token counts in the run's
 * event log, and their split over a run (docs/run.md "The context pack").
 */
#ifndef KF_LOOP_MEMORY_H
#define KF_LOOP_MEMORY_H

#include "../agent/agent.h"
#include "../store/store.h"

#include <jansson.h>

#define KF_LOOP_LESSONS_K 5       /* lessons retrieved per pack */
#define KF_LOOP_LESSONS_TRUST 0.4 /* the trust threshold (as `kforge lessons search`) */

typedef struct kf_loop_memory kf_loop_memory;

/* Open the lessons database for a run's packs. path NULL: the default database
 * (kf_lessons_default_path) when it exists, else none (not an error); "none": no lessons;
 * another path must exist (KF_EUSAGE "--lessons PATH: no such file" otherwise). *out is
 * NULL when there are no lessons to use, else the caller's: kf_loop_memory_close. */
kf_status kf_loop_memory_open(kf_ctx *ctx, const char *path, kf_loop_memory **out);
void kf_loop_memory_close(kf_loop_memory *m); /* accepts NULL */

/* Retrieve the lessons for a pack about task t (its backend, op/<name>, the host's
 * architecture for C tasks, its visible shapes; text: the category and the parent's
 * feedback) and point in->lessons_db and in->lesson_hits at them (owned by m, valid until
 * the next call). m NULL: nothing. KF_EBACKEND (an embeddings endpoint), KF_EIO. */
kf_status kf_loop_memory_lessons(kf_loop_memory *m, const kf_task *t, const char *text, kf_pack_in *in);

/* The pack for improving node parent (0: the reference) of the run in st along category
 * (NULL: any), within budget tokens (0: the pack's default): task.json, the visible
 * shapes, the parent's source, its verdict and per-shape timings, recent failures of its
 * children and siblings (latest first), the run's constraints, lessons from m (NULL:
 * none). *out is the caller's (kf_pack_free). KF_EIO, store errors, KF_ENOMEM. */
kf_status kf_loop_pack_for(kf_ctx *ctx, const kf_task *t, kf_store *st, kf_loop_memory *m, int64_t budget,
                           int64_t parent, const char *category, kf_pack *out);
/* The source extension of the task's backend: "cu" for CUDA, else "c". */
const char *kf_loop_task_ext(const kf_task *t);

/* Record pack's per-section token counts as a "pack" event of node (0: run-wide, as
 * tool mode's next). prompt_tokens: what the endpoint reported for the prompt, or -1
 * when it reported nothing (the pack's estimate is used). */
kf_status kf_loop_pack_record(kf_store *st, int64_t node, const kf_pack *pk, int64_t prompt_tokens,
                              int64_t pending);

/* The split of prompt tokens over every pack the run recorded: {packs, reported,
 * prompt_tokens, sections: {task: N, ...}, frame, memory_tokens, memory_share}. An
 * endpoint's reported count is apportioned over the pack's sections in proportion to
 * their estimates. *out NULL when the run has no pack. Caller decrefs. */
kf_status kf_loop_pack_split(kf_store *st, json_t **out);
/* "prompt tokens 12345 over 10 packs (estimated): parent 61%, ..., memory 12.0%" into buf. */
void kf_loop_pack_split_text(const json_t *split, char *buf, size_t n);

#endif
