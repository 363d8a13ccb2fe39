/*
 * launch.c - which GPUs `--devices` names (docs/scale.md "Devices"): "all" asks the CUDA
 * driver how many there are (kf_device_info on each index until one is out of range;
 * CUDA_VISIBLE_DEVICES applies as everywhere), "0,2,5" is checked against the same
 * count. One local worker is started per index (pool.c), bound to it by
 * CUDA_VISIBLE_DEVICES, so each sees its GPU as device 0 as kforge always has.
 */
#include "scale.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* How many CUDA devices this machine has: probing each index (the describe slot caches
 * its measured ceilings per device, so a probe after the first costs little). */
static int count_devices(kf_ctx *ctx, int upto) {
    int n = 0;
    for (; n < upto; n++) {
        char *json = NULL;
        kf_status st = kf_device_info(ctx, n, 0, &json);
        free(json);
        if (st == KF_EUSAGE) break; /* past the last */
        if (st) return n ? n : -(int)st;
    }
    return n;
}

int kf_scale_devices(kf_ctx *ctx, const char *spec, int *idx, int max) {
    int have = count_devices(ctx, 64);
    if (have < 0)
        return -(int)kf__err(ctx, (kf_status)-have, "--devices %s: no CUDA device here: %s", spec,
                             kf_errmsg(ctx));
    if (!strcmp(spec, "all")) {
        if (!have) return -(int)kf__err(ctx, KF_EBACKEND, "--devices all: no CUDA device here");
        for (int i = 0; i < have && i < max; i++) idx[i] = i;
        return have < max ? have : max;
    }
    int n = 0;
    const char *s = spec;
    while (*s) {
        char *e;
        long v = strtol(s, &e, 10);
        if (e == s || v < 0 || (*e && *e != ','))
            return -(int)kf__err(ctx, KF_EUSAGE,
                                 "--devices %s: expected all or a list of GPU indices like 0,2,5", spec);
        if (v >= have)
            return -(int)kf__err(ctx, KF_EUSAGE, "--devices %s: GPU %ld: this machine has %d (0 to %d)", spec,
                                 v, have, have - 1);
        for (int k = 0; k < n; k++)
            if (idx[k] == v)
                return -(int)kf__err(ctx, KF_EUSAGE, "--devices %s: GPU %ld named twice", spec, v);
        if (n == max) return -(int)kf__err(ctx, KF_EUSAGE, "--devices %s: at most %d", spec, max);
        idx[n++] = (int)v;
        s = *e ? e + 1 : e;
    }
    if (!n) return -(int)kf__err(ctx, KF_EUSAGE, "--devices: empty");
    return n;
}
