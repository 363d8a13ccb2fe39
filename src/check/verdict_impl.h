/*
 * verdict_impl.h - what verdict.c and verdict_set.c share and nothing else sees: the
 * verdict's string pool.
 */
#ifndef KF_VERDICT_IMPL_H
#define KF_VERDICT_IMPL_H

#include "verdict.h"

/* A copy of s in v's pool (one copy per distinct string: size names repeat on every
 * shape), or NULL when s is NULL or out of memory (v->oom is then set). */
const char *kf__verdict_pool(struct kf_verdict *v, const char *s);

#endif
