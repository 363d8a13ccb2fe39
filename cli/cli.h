/*
 * cli.h - shared pieces of the kforge command line. The CLI uses only kforge.h.
 */
#ifndef KF_CLI_H
#define KF_CLI_H

#include "kforge.h"

/* 3: export only: everything was written but the dispatcher could not be verified here
 * (a CUDA dispatcher without a GPU); it is written as <task>_dispatch.unverified.cu.
 * 4: run, next, submit: the run directory is held by another writer (KF_EBUSY).
 * 5: run, submit: the environment failed an evaluation (KF_EENV); resume when fixed. */
enum {
    KF_EXIT_OK = 0,
    KF_EXIT_REJECTED = 1,
    KF_EXIT_USAGE = 2,
    KF_EXIT_UNVERIFIED = 3,
    KF_EXIT_BUSY = 4,
    KF_EXIT_ENV = 5
};

/* The exit code of a failed run, next or submit: 4 for KF_EBUSY, 5 for KF_EENV, else 2. */
int kf_cli_run_exit(kf_status st);

int kf_cli_check(int argc, char **argv, int bench);
int kf_cli_validate(int argc, char **argv);
int kf_cli_device_info(int argc, char **argv);
int kf_cli_run(int argc, char **argv);
int kf_cli_tree(int argc, char **argv, int best);
int kf_cli_tool(int argc, char **argv, int submit); /* next (0), submit (1) */
int kf_cli_export(int argc, char **argv);
int kf_cli_lessons(int argc, char **argv);
int kf_cli_report(int argc, char **argv);
/* The report of run_dir (format "html" or "md") into path (NULL: RUN/report.html, or
 * stdout for md; "-": stdout). from_run: the command ("run", "system run") that writes
 * it when it ends: a failure is one line on stderr, not an error (0 then); NULL for
 * `kforge report`. Else the exit code. */
int kf_cli_report_write(const char *run_dir, const char *format, const char *path, const char *from_run);
int kf_cli_system(int argc, char **argv); /* system check|bench */
/* kforge export of a system run's directory (it holds system.json): the kept slots'
 * dispatchers and the knobs into out, re-verified end to end; an exit code. */
int kf_cli_system_export(const char *dir, const char *out, int json);
int kf_cli_worker(int argc, char **argv);
int kf_cli_drain(int argc, char **argv);
int kf_cli_import(int argc, char **argv);
/* Report an error (and a JSON object on stdout when json), return KF_EXIT_USAGE. */
int kf_cli_fail(int json, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The same with a reason code in the JSON object ("code": "degenerate_task"). */
int kf_cli_fail_code(int json, const char *code, const char *msg);
/* An option's numeric value in [lo, hi] into *out: 0, or -1 after saying what is wrong
 * ("kforge: error: --budget abc: expected a number in [0, 1e+06]"). */
int kf_cli_number(const char *opt, const char *s, double lo, double hi, double *out);

#endif
