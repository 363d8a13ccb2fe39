/*
 * policy.h - the confinement layers a process applies to itself before it runs
 * untrusted code: rlimits, Landlock (filesystem), no_new_privs, and the worker's
 * seccomp allow-list. Used by kforge-worker (candidate execution) and by the compile
 * child (which may exec the compiler, so it gets no seccomp layer).
 */
#ifndef KF_POLICY_H
#define KF_POLICY_H

#include <stdint.h>
#include <sys/types.h>

typedef struct {
    double cpu_s;    /* RLIMIT_CPU soft (hard = soft + 1) */
    uint64_t as;     /* RLIMIT_AS, 0 = leave */
    uint64_t fsize;  /* RLIMIT_FSIZE */
    uint64_t nofile; /* RLIMIT_NOFILE */
} kf_limits;

int kf_policy_rlimits(const kf_limits *l);

/* Landlock: allow reading (and executing) beneath each of ro[], and reading+writing
 * beneath each of rw[]; everything else is denied. Returns the ABI used (>= 1), 0 when
 * Landlock is unavailable (the caller records the missing layer), -1 on error. */
int kf_policy_landlock(const char *const *ro, int nro, const char *const *rw, int nrw);

/* no_new_privs + not dumpable + the worker's seccomp allow-list (self_pid is the only
 * pid that kill/tgkill may target; landlock says whether Landlock already denies all
 * writes). 0, or -1 with errno. */
int kf_policy_seccomp_worker(pid_t self_pid, int landlock);
/* The GPU host-mode worker's filter (policy.c): the worker's list plus what the CUDA
 * driver needs; every thread; a forbidden call raises SIGSYS (the worker reports its
 * number) instead of killing. 0, or -1 with errno. */
int kf_policy_seccomp_gpu_host(pid_t self_pid);
/* The name of system call nr on this architecture, or NULL; caller frees. */
char *kf_policy_syscall_name(int nr);

#endif
