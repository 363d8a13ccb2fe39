/*
 * fault.h - the test binary's failure seams: make the Nth allocation, the Nth process or
 * thread start, or the Nth file write fail, and count them (SQLite's
 * sqlite3_test_control faults and its faultsim loops, docs/design.md "Failure seams").
 *
 * The seams are linker wraps (-Wl,--wrap=malloc,... on kf-tests only, tests/CMakeLists.txt)
 * plus the hooks the libraries offer for the same purpose (SQLite's SQLITE_CONFIG_MALLOC
 * and a VFS of its own, OpenSSL's CRYPTO_set_mem_functions).
 * The library is built as for users: nothing in src/ knows about them. While no fault is
 * armed every wrapper is a pass-through.
 */
#ifndef KFT_FAULT_H
#define KFT_FAULT_H

/* What a fault hits:
 *  ALLOC  malloc calloc realloc strdup strndup vasprintf realpath(p, NULL) (jansson's
 *         allocations among them: libkforge's allocator for it calls malloc), and
 *         SQLite's and OpenSSL's once kft_fault_libs ran;
 *  SPAWN  fork posix_spawn posix_spawnp pthread_create;
 *  WRITE  open/openat/fopen for writing or creating, write fwrite ftruncate fsync fdatasync
 *         rename renameat mkdir mkdtemp mkstemp, and SQLite's opens for creating, writes,
 *         truncations and syncs.
 * Nothing counts inside jansson's parsers (json_loads, json_loadb, json_load_file): they
 * do not survive a failed allocation (fault.c says why).
 * A failed call returns what the real one returns on failure, with errno ENOMEM, EAGAIN
 * or EIO; SQLite gets SQLITE_NOMEM, SQLITE_CANTOPEN or SQLITE_IOERR_*. */
typedef enum { KFT_FAULT_ALLOC, KFT_FAULT_SPAWN, KFT_FAULT_WRITE, KFT_FAULT_KINDS } kft_fault_kind;

/* "alloc", "spawn", "write" */
const char *kft_fault_name(kft_fault_kind kind);

/* Start counting every kind from zero; the nth event of `kind` (1-based) fails, and with
 * persist every later one of that kind too. nth 0: none fails (counting only). Threads
 * count together; a forked child neither counts nor fails. */
void kft_fault_arm(kft_fault_kind kind, long nth, int persist);
/* Start counting as kft_fault_arm does; at the nth event of `kind` the process kills
 * itself (SIGKILL) before the call happens: a kill at that step, for the tests of what a
 * killed writer leaves behind. Arm it in a forked child. */
void kft_fault_arm_kill(kft_fault_kind kind, long nth);
/* Stop counting and failing. */
void kft_fault_disarm(void);
/* A seam of its own for fsync and fdatasync, apart from the countdown above (whose WRITE
 * kind counts them too): from now on the nth such call (1-based, any thread) fails with
 * errno err (EIO, ENOSPC), or with err 0 kills the process (SIGKILL) before it happens;
 * nth 0 fails none and only counts. Only libkforge's own calls are seen: SQLite's syncs
 * happen inside its shared library. */
void kft_fault_fsync(long nth, int err);
/* fsync and fdatasync calls since kft_fault_fsync; *on_caller (may be NULL): how many of
 * them the thread that called kft_fault_fsync made. */
long kft_fault_fsyncs(long *on_caller);
/* on 1: every successful malloc, calloc and realloc leaves errno ENOMEM, as glibc's may
 * (a large calloc did on the H200 host, after a failed attempt inside). A caller that
 * reads errno after a NULL-free success reports an out-of-memory that never happened.
 * Independent of arming; 0 turns it off. */
void kft_fault_stale_errno(int on);
/* Events of `kind` seen since the last kft_fault_arm. */
long kft_fault_count(kft_fault_kind kind);
/* How many events failed since the last kft_fault_arm. */
long kft_fault_fired(void);

/* The function that failed first since the last kft_fault_arm: a wrapper ("__wrap_malloc",
 * "__wrap_fork"), or a library's hook ("sql_malloc", "ossl_malloc",
 * "v_write" for SQLite's writes); "" when none failed. */
const char *kft_fault_site(void);
/* Print on stderr the stack of that first failure, one frame a line (BINARY(+OFFSET):
 * `addr2line -e BINARY OFFSET` names the line). */
void kft_fault_print_stack(void);

/* Route SQLite's and OpenSSL's allocations, and SQLite's file writes, through
 * the seams. Once per process, before the first use of any of them (a test's child
 * calls it first); SQLite is shut down and set up again. 0, or -1 when a library refused
 * (its message on stderr). */
int kft_fault_libs(void);

/* LeakSanitizer's verdict on the heap now: 0 when nothing is leaked or the build has no
 * LeakSanitizer; else non-zero, the report on stderr. */
int kft_fault_leaks(void);

#endif
