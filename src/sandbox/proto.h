/*
 * proto.h - the messages between the coordinator and a kforge-worker, over a
 * SOCK_SEQPACKET socket (fd 3 in the worker). The arena (inputs and outputs) is a
 * shared memfd (fd 4). Everything the worker sends is untrusted once candidate code is
 * loaded: the coordinator checks sizes, magic, type and sequence numbers, and never
 * takes a verdict from the worker, only an in-process time that it cross-checks.
 */
#ifndef KF_PROTO_H
#define KF_PROTO_H

#include <stdint.h>

#define KF_PROTO_MAGIC 0x6b66726bu /* "kfrk" */
#define KF_PROTO_MAXARGS 32
#define KF_WORKER_SOCK_FD 3
#define KF_WORKER_ARENA_FD 4

enum {
    KF_MSG_READY = 1, /* worker -> parent: candidate loaded */
    KF_MSG_LOADFAIL,  /* worker -> parent: dlopen/dlsym failed (text) */
    KF_MSG_RUN,       /* parent -> worker: call the entry once */
    KF_MSG_DONE,      /* worker -> parent: returned; ns = CLOCK_MONOTONIC after */
    KF_MSG_EXIT,      /* parent -> worker: exit now */
    KF_MSG_START,     /* worker -> parent: about to call; ns = CLOCK_MONOTONIC before */
    KF_MSG_SETUP_OK   /* worker -> parent: confined; ns = layers; the candidate loads next */
};

typedef struct {
    uint32_t magic, type, seq, nargs;
    uint64_t off[KF_PROTO_MAXARGS]; /* arena offsets of buffers */
    int64_t ival[KF_PROTO_MAXARGS]; /* integer scalars */
    double fval[KF_PROTO_MAXARGS];  /* float scalars */
} kf_msg_run;

typedef struct {
    uint32_t magic, type, seq, pad;
    uint64_t ns;
} kf_msg_done;

typedef struct {
    uint32_t magic, type;
    char text[1024];
} kf_msg_text;

#endif
