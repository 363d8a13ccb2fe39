/*
 * kft.h - kforge's test harness: every test runs in a forked child with a timeout
 * (kernels and the sandbox crash and hang on purpose), may skip with a reason, and the
 * run ends with "N passed, N failed, N skipped".
 */
#ifndef KFT_H
#define KFT_H

#include "kforge.h"

#include "store/store.h"

#include <stdio.h>
#include <stdlib.h>

typedef void (*kft_fn)(const void *arg);

/* Register a test (name is copied; arg is borrowed for the run's life). */
void kft_add(const char *name, kft_fn fn, const void *arg, double timeout_s);
void kft_fail_at(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4), noreturn));
void kft_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

#define CHECK(c)                                                                        \
    do {                                                                                \
        if (!(c)) kft_fail_at(__FILE__, __LINE__, "%s", #c);                            \
    } while (0)
#define CHECKF(c, ...)                                                                  \
    do {                                                                                \
        if (!(c)) kft_fail_at(__FILE__, __LINE__, __VA_ARGS__);                         \
    } while (0)

/* Paths */
const char *kft_src(const char *rel);  /* KF_SOURCE_DIR/rel (static buffer ring) */
const char *kft_bin(const char *rel);  /* KF_BINARY_DIR/rel */

void kft_register_cuda(void);
void kft_register_cupti(void);
void kft_register_cupti_abi(void);

/* 1 when a CUDA driver and a device are usable; 0 with the reason in why. */
int kft_have_gpu(char *why, size_t n);
/* The bundled CUDA tasks (NULL-terminated). */
extern const char *const kft_cuda_tasks[];

/* Load a task or fail the test. */
kf_task *kft_task(kf_ctx *ctx, const char *rel_dir);
/* Check a candidate with default options (plus params); fail the test on a status. */
kf_result *kft_check(kf_ctx *ctx, kf_task *t, const char *cand_path, const char **params,
                     int nparams);
/* "code1,code2" of a result, in a static buffer. */
const char *kft_reasons(kf_result *r);
/* Run a shell command, capture stdout (capped) into out; return exit status. */
int kft_run(const char *cmd, char *out, size_t n);

void kft_register_unit(void);
void kft_register_task(void);
void kft_register_check(void);
void kft_register_corpus(void);
void kft_register_timing(void);
void kft_register_cli(void);
void kft_register_sanitize(void);
void kft_register_agent(void);
void kft_register_store(void);
void kft_register_search(void);
void kft_register_loop(void);
void kft_register_critic(void);
void kft_register_run_agents(void);
void kft_register_export(void);
void kft_register_lessons(void);
void kft_register_pack(void);
void kft_register_diagnose(void);
void kft_register_prior(void);
void kft_register_fault(void);

/* A test's stand-in for the Critic: a node the test marks kept gets an approval on
 * record first (kf_store_finish_node refuses `kept` without one). */
static inline kf_status kft_finish_node(kf_store *s, const kf_node *n) {
    if (n->state == KF_NODE_KEPT)
        kf_store_event(s, n->id, "critic", "{\"decision\":\"approve\",\"why\":\"test fixture\"}");
    return kf_store_finish_node(s, n);
}

#endif
