/*
 * verdict_impl.h - what verdict.c and verdict_set.c share and nothing else sees: the
 * verdict's string pool and the freeing of its object reports.
 */
#ifndef KF_VERDICT_IMPL_H
#define KF_VERDICT_IMPL_H

#include "verdict.h"

/* A copy of s in v's pool (one copy per distinct string: size names repeat on every
 * shape), or NULL when s is NULL or out of memory (v->oom is then set). */
const char *kf__verdict_pool(struct kf_verdict *v, const char *s);
/* Free what x, the ceilings' extras and the resource report hold, and empty them. */
void kf__verdict_extras_free(kf_verdict_extras *x);
void kf__verdict_resources_free(kf_verdict_resources *r);

#endif
