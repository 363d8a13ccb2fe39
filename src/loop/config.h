/*
 * config.h - a run's configuration (config.c): the options recorded when the run is
 * created, and taken back from the record by --resume and tool mode for what their
 * command does not say. One field table serves both, so what is recorded and what is
 * taken back cannot drift apart.
 */
#ifndef KF_LOOP_CONFIG_H
#define KF_LOOP_CONFIG_H

#include "kforge.h"

#include <jansson.h>

/* The run's config as recorded at create (one JSON object, caller frees; NULL when out
 * of memory): the proposer, its endpoint settings (never a key: only the name of the
 * variable holding it), the budgets, the checks' and timings' settings, the Critic's. */
char *kf_config_json(const kf_run_opts *o);

/* --resume: every setting the command leaves unset in *o is taken from the run's
 * recorded cfg (strings point into cfg, which must outlive *o). */
void kf_config_resume(kf_run_opts *o, json_t *cfg);

/* Tool mode judges every node of a run alike: the Critic's settings and the number of
 * hidden shapes are the run's (recorded in cfg; hidden_count: the task's, when the run
 * recorded none), never the submitter's (o); timing rounds not given take the run's too.
 * *own: o with the run's settings. KF_EUSAGE (naming run_dir) when o gives the Critic's
 * settings or fewer hidden shapes than the run checks with. */
kf_status kf_config_tool(kf_ctx *ctx, const char *run_dir, int hidden_count, const kf_run_opts *o,
                         json_t *cfg, kf_run_opts *own);

#endif
