/*
 * registry.h - the backends by name, extension and capability, for code that needs no
 * more of a backend than what it is called and what it can do: the task loader, the
 * loop's file names, context packs, lessons. It includes nothing of the task, data or
 * sandbox layers, so they can ask it without reaching up into backend.h.
 *
 * The registry is a table of constructors in backend.c (one line per backend) and, for
 * an embedding program or a test, backends added at run time with kf_backend_register
 * before any other kforge call. It is read-only after that: lookups take no lock.
 */
#ifndef KF_BACKEND_REGISTRY_H
#define KF_BACKEND_REGISTRY_H

#include "kforge.h"

/* The version of struct kf_backend_i (backend.h) this build speaks; a backend carries the
 * one it was written for and is refused when they differ. */
#define KF_BACKEND_API_VERSION 4

/* Capabilities (kf_backend_i.caps), read as SQLite's pager reads a VFS's
 * xDeviceCharacteristics: each bit licenses a behaviour of the core, named here. */
/* The candidate runs on this machine's CPUs and works in the worker's shared arena
 * itself: the checking calls vary its CPUs (one CPU, every CPU; docs/checker.md), writes
 * through pointers kept from earlier calls are tracked (kf_spent), every worker is under
 * seccomp, and lessons are scoped to this CPU's architecture. */
#define KF_BACKEND_CPU 0x01u
/* Calls run on a device other processes may share and this machine may lack: the worker
 * waits for an idle device before a timed span and says so (bench leaves out the rounds
 * that shared it and reports them), it stamps the steps of a call (bench -v), and export
 * writes a dispatcher that cannot be run here unverified when it builds. */
#define KF_BACKEND_DEVICE 0x02u
#define KF_BACKEND_HALF 0x04u        /* f16 and bf16 arguments */
#define KF_BACKEND_LAUNCH_MODE 0x08u /* a task's "launch_mode" ("kernel" or "host") */
#define KF_BACKEND_SANITIZE 0x10u    /* kforge check --sanitize (compute-sanitizer) */

typedef struct kf_backend kf_backend;

/* The backend registered under name, or NULL. */
kf_backend *kf_backend_get(const char *name);
/* The i-th registered backend (built-in ones first, in the table's order), or NULL past
 * the last: for (i = 0; (b = kf_backend_at(i)); i++). */
kf_backend *kf_backend_at(int i);
/* The backend whose candidates end in ".ext" (ext without the dot), or NULL. */
kf_backend *kf_backend_by_ext(const char *ext);
/* 1 for a name a task may give that no backend of this build runs (reserved for one to
 * come: the task is refused as not available rather than as malformed). */
int kf_backend_reserved(const char *name);
/* The registered names as "\"c\", \"cuda\"" with sep before the last one (" or ",
 * " and ") and, with reserved set, the reserved names too, into out. */
void kf_backend_names(int reserved, const char *sep, char *out, size_t n);

/* A backend's fields (backend.h); b must not be NULL. */
const char *kf_backend_name(const kf_backend *b);
const char *kf_backend_ext(const kf_backend *b);
const char *kf_backend_reference(const kf_backend *b);
const char *kf_backend_lang(const kf_backend *b);
/* 1 when b has every capability in caps (KF_BACKEND_*); 0 for b NULL. */
int kf_backend_has(const kf_backend *b, unsigned caps);

/* Add b to the registry (not thread-safe: before any other kforge call). KF_EUSAGE with
 * why on ctx when b is incomplete (another api_version, a name, extension, reference or
 * language missing, no compile slot), its name or extension is taken or reserved, or the
 * table is full. b is borrowed for the life of the process. */
kf_status kf_backend_register(kf_ctx *ctx, kf_backend *b);

#endif
