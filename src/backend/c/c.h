/*
 * c.h - the C backend's files: the compile (c_backend.c), this machine's ceilings with
 * the roofline judged against them (ceilings.c), and export's dispatcher (dispatch.c).
 */
#ifndef KF_C_BACKEND_H
#define KF_C_BACKEND_H

#include "../backend.h"

typedef struct {
    double bytes_per_s; /* single-core copy bandwidth, read + write */
    double flops_per_s; /* single-core peak */
    int cores;
} kf_c_ceilings;

/* The ceilings slot: this machine's ceilings (a kf_c_ceilings, caller frees), measured
 * on the calling thread's CPU with the timing lock held (the cache it fills is not
 * locked itself); KFORGE_CEILINGS pins them. */
void *kf__c_ceilings(kf_backend *b, kf_ctx *ctx, kf_ceil_out *out);
/* The roofline slot: a time beyond twice the all-core roofline is impossible. */
int kf__c_roofline(kf_backend *b, const void *ceil, const kf_roof_in *in, kf_roof_out *out, char *why,
                   size_t n);
/* The dispatcher slot (dispatch.c): one C file; an argument type C cannot declare fails
 * the export (KF_EUSAGE, *alone clear). */
kf_status kf__c_dispatcher(kf_backend *be, kf_ctx *ctx, const kf_task *t, const char *run_dir,
                           const kf_winner *w, int nw, int fallback, const kf_best_shape *best, int nbest,
                           kf_buf *b, kf_dispatch_out *d, int *alone);

#endif
