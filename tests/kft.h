/*
 * kft.h - kforge's test harness: every test runs in a forked child with a timeout
 * (kernels and the sandbox crash and hang on purpose), may skip with a reason, and the
 * run ends with "N passed, N failed, N skipped". The suites and the fast tier are listed
 * in test-list.h; tests/README.md says how to list, select and debug tests.
 */
#ifndef KFT_H
#define KFT_H

#include "kforge.h"

#include "store/store.h"
#include "test-list.h"

#include <stdio.h>
#include <stdlib.h>

typedef void (*kft_fn)(const void *arg);

/* Register a test: name is GROUP/NAME (test-list.h; copied), arg is borrowed for the
 * run's life, timeout_s is its wall-clock limit (<= 0: 120 s). A bad or repeated name
 * stops the run (exit 2). */
void kft_add(const char *name, kft_fn fn, const void *arg, double timeout_s);
/* Fail the test: print "FAIL at file:line: message" and end its process with 1. */
void kft_fail_at(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4), noreturn));
/* Skip the test with a reason: its process ends with 77. */
void kft_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

#define CHECK(c)                                             \
    do {                                                     \
        if (!(c)) kft_fail_at(__FILE__, __LINE__, "%s", #c); \
    } while (0)
#define CHECKF(c, ...)                                          \
    do {                                                        \
        if (!(c)) kft_fail_at(__FILE__, __LINE__, __VA_ARGS__); \
    } while (0)

/* Paths */
const char *kft_src(const char *rel); /* KF_SOURCE_DIR/rel (static buffer ring) */
const char *kft_bin(const char *rel); /* KF_BINARY_DIR/rel */

/* 1 when a CUDA driver and a device are usable; 0 with the reason in why. */
int kft_have_gpu(char *why, size_t n);
/* Skip the test unless the python3 kforge would use for PyTorch references imports torch. */
void kft_need_torch(void);
/* The bundled CUDA tasks (NULL-terminated). */
extern const char *const kft_cuda_tasks[];

/* Load a task or fail the test. */
kf_task *kft_task(kf_ctx *ctx, const char *rel_dir);
/* Check a candidate with default options (plus params); fail the test on a status. */
kf_result *kft_check(kf_ctx *ctx, kf_task *t, const char *cand_path, const char **params, int nparams);
/* "code1,code2" of a result, in a static buffer. */
const char *kft_reasons(kf_result *r);
/* Run a shell command, capture stdout (capped) into out; return exit status. */
int kft_run(const char *cmd, char *out, size_t n);

/* Each suite's registration (test-list.h) */
#define KFT_DECLARE(suite) void kft_register_##suite(void);
KFT_SUITES(KFT_DECLARE)
#undef KFT_DECLARE

/* A test's stand-in for the Critic: a node the test marks kept gets an approval on
 * record first (kf_store_finish_node refuses `kept` without one). */
static inline kf_status kft_finish_node(kf_store *s, const kf_node *n) {
    if (n->state == KF_NODE_KEPT)
        kf_store_event(s, n->id, "critic", "{\"decision\":\"approve\",\"why\":\"test fixture\"}");
    return kf_store_finish_node(s, n);
}

/* A kept node of st (proposer builtin, category other) with text src (ext its
 * extension), timed at every visible shape of t at the given speedup, a win each: what
 * export needs of a run. Its id; the test fails on a store error. */
int64_t kft_kept_node(kf_store *st, const kf_task *t, const char *src, size_t len, const char *ext,
                      double speedup);

#endif
