/*
 * test-list.h - the table of kf-tests: every suite (a tests/test_*.c file and the
 * kft_register_<suite>() that adds its tests with kft_add), in run order, and the rules
 * that put a test in the fast tier (`kf-tests --fast`, `make test-fast`).
 *
 * Names: every test is GROUP/NAME. GROUP is one lower-case word ([a-z0-9_]); NAME is
 * the rest, and may have /-separated parts of its own (a corpus file's path:
 * `redteam/cuda/oob_write.cu`). Names hold no spaces and are unique; kft_add refuses
 * others, so the run stops before any test starts.
 *
 * To add a test file: write its kft_register_<suite>(), add X(<suite>) below, add the
 * file to tests/CMakeLists.txt, and give its groups a tier rule when they are fast.
 */
#ifndef KFT_TEST_LIST_H
#define KFT_TEST_LIST_H

#define KFT_SUITES(X) \
    X(runner)         \
    X(unit)           \
    X(task)           \
    X(check)          \
    X(corpus)         \
    X(xref)           \
    X(torch)          \
    X(cli)            \
    X(cuda)           \
    X(cupti)          \
    X(cupti_abi)      \
    X(sanitize)       \
    X(agent)          \
    X(store)          \
    X(search)         \
    X(loop)           \
    X(run_agents)     \
    X(screen)         \
    X(run_safe)       \
    X(export)         \
    X(report)         \
    X(lessons)        \
    X(prior)          \
    X(critic)         \
    X(pack)           \
    X(diagnose)       \
    X(timing)         \
    X(backend)        \
    X(cuda_run)       \
    X(system)         \
    X(scale)          \
    X(fault)

/* The fast tier: X(pattern, fast). For each test the LAST rule whose fnmatch(3) pattern
 * matches its name decides; a test no rule matches is slow, and a rule that matches no
 * test is reported. The tier is the edit-compile-test loop's: the groups that judge a
 * single call or a single check (the checker, the corpora, the CLI contract, the
 * modules' unit tests), without the searches, runs and exports that take seconds each;
 * it stays well under 90 s in the normal build on a 2-CPU machine (tests/README.md has
 * the figure). */
#define KFT_TIERS(X)                                                                                         \
    X("runner/*", 1)                                                                                         \
    X("unit/*", 1)                                                                                           \
    X("task/*", 1)                                                                                           \
    X("store/*", 1)                                                                                          \
    X("scale/*", 1)                                                                                          \
    X("scale/worker_killed", 0)                                                                              \
    X("scale/coordinator_resume", 0)                                                                         \
    X("scale/devices", 0)                                                                                    \
    X("scale/drain", 0)                                                                                      \
    X("scale/slurm", 0)                                                                                      \
    X("scale/same_names", 0)                                                                                 \
    X("search/*", 1)                                                                                         \
    X("agent/*", 1)                                                                                          \
    X("lessons/*", 1)                                                                                        \
    X("report/*", 1)                                                                                         \
    X("report/browser_*", 0)                                                                                 \
    X("report/large", 0)                                                                                     \
    X("report/run_page", 0)                                                                                  \
    X("cli/*", 1)                                                                                            \
    X("check/*", 1)                                                                                          \
    X("check/bench_fields", 0)                                                                               \
    X("critic/*", 1)                                                                                         \
    X("critic/advisory", 0)                                                                                  \
    X("validate/*", 1)                                                                                       \
    X("xref/*", 1)                                                                                           \
    X("cuda/*", 1)                                                                                           \
    X("backend/*", 1)                                                                                        \
    X("cuda/host_errors", 0)                                                                                 \
    X("cupti/*", 1)                                                                                          \
    X("sanitize/*", 1)                                                                                       \
    X("system/load_errors", 1)                                                                               \
    X("system/check_small", 1)                                                                               \
    X("system/record_atomic", 1)                                                                             \
    X("timing/determinism_bits", 1)                                                                          \
    X("honest/*", 1)                                                                                         \
    /* the red-team corpus: one file per threat, the quickest (make test runs all);                          \
     * for races (32) the secret one-CPU draw, not the race, which a loaded machine                          \
     * can hide */                                                                                           \
    X("redteam/01_skip_last_row.c", 1)                                                                       \
    X("redteam/02_memo_sgemm_shape.c", 1) X("redteam/03_sysv_shm_cache.c", 1)                                \
        X("redteam/04_count_then_skip.c", 1) X("redteam/05_fork_child.c", 1)                                 \
            X("redteam/06_sigcont_handler.c", 1) X("redteam/07_report_injection.c", 1)                       \
                X("redteam/08_zero_input.c", 1) X("redteam/09_sgemm_tile_overrun.c", 1)                      \
                    X("redteam/10_sum_drop_tail.c", 1) X("redteam/11_i64_in_double.c", 1)                    \
                        X("redteam/12_sum_half_sample.c", 1) X("redteam/14_iabs_wrap.c", 1)                  \
                            X("redteam/15_static_not_reset.c", 1) X("redteam/16_ctor_exit.c", 1)             \
                                X("redteam/17_infinite_loop.c", 1) X("redteam/18_process_vm_readv.c", 1)     \
                                    X("redteam/22_include_dev_zero.c", 1)                                    \
                                        X("redteam/23_edit_task_json.c", 1) X("redteam/24_sum_comment.c", 1) \
                                            X("redteam/25_sum_same_work.c", 1)                               \
                                                X("redteam/26_when_overflow.c", 1)                           \
                                                    X("redteam/27_layernorm_one_pass.c", 1)                  \
                                                        X("redteam/28_kept_pointer_earlier_shape.c", 1)      \
                                                            X("redteam/29_const_negate_restore.c", 1)        \
                                                                X("redteam/30_sqrt_nan_payload.c", 1)        \
                                                                    X("redteam/31_has_include_proto.c", 1)   \
                                                                        X("redteam/32_one_cpu_gate.c", 1)    \
                                                                            X("bundled/*", 1)

#endif
