/*
 * record.c - a run's records read back, for every reader of a run: its nodes copied out
 * of the store, the report on its seals (docs/run.md "Seals"), the best kept node per
 * visible shape, and a node's first message. It reads the store, the task and the
 * verdict, and nothing above them: tree, best, tool mode and resume (the loop) and
 * export all use it, and export reaches no code of the loop through it.
 */
#include "record.h"

#include "../check/verdict.h"
#include "../task/task.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int kf_record_collect(void *arg, const kf_node *n) {
    kf_node_vec *a = arg;
    if (a->n == a->cap) {
        size_t c = a->cap ? a->cap * 2 : 64;
        kf_node *p = realloc(a->v, c * sizeof *p);
        if (!p) return -1;
        a->v = p, a->cap = c;
    }
    kf_node *d = &a->v[a->n++];
    *d = *n;
    d->params_json = n->params_json ? strdup(n->params_json) : NULL;
    d->reasons = n->reasons ? strdup(n->reasons) : NULL;
    d->verdict_json = NULL; /* not needed here, and large */
    d->shapes_json = n->shapes_json ? strdup(n->shapes_json) : NULL;
    d->note = n->note ? strdup(n->note) : NULL;
    return 0;
}

void kf_record_vec_free(kf_node_vec *a) {
    for (size_t i = 0; i < a->n; i++) kf_node_free(&a->v[i]);
    free(a->v);
}

json_t *kf_record_integrity(kf_store *st, const kf_node *v, size_t n, kf_buf *b) {
    const char *state = kf_store_seal_state(st), *kp = kf_store_key_path(st);
    /* the task the run names (task_dir is where it was; the fingerprint is what it was) */
    kf_ctx *tc = kf_ctx_new();
    kf_task *tk = NULL;
    int task_ok = tc && kf_task_load(tc, kf_store_task_dir(st), &tk) == KF_OK &&
                  !strcmp(tk->fingerprint, kf_store_task_fingerprint(st));
    if (b && !task_ok)
        kf_buf_printf(b,
                      "note: the task at %s is not the one this run was made for (changed, moved or gone: "
                      "fingerprint %.12s recorded): its verdicts hold for the recorded task only\n",
                      kf_store_task_dir(st), kf_store_task_fingerprint(st));
    kf_task_free(tk);
    kf_ctx_free(tc);
    json_t *ids = json_array();
    for (size_t i = 0; i < n; i++)
        if (v[i].tampered) json_array_append_new(ids, json_integer((json_int_t)v[i].id));
    if (b && json_array_size(ids)) {
        kf_buf_printf(b, "WARNING: run.db was changed outside kforge: node%s",
                      json_array_size(ids) == 1 ? "" : "s");
        size_t i;
        json_t *x;
        json_array_foreach(ids, i, x)
            kf_buf_printf(b, "%s %lld", i ? "," : "", (long long)json_integer_value(x));
        kf_buf_printf(b, " %s not match %s seal%s: read as rejected (tampered), trusted for nothing\n",
                      json_array_size(ids) == 1 ? "does" : "do", json_array_size(ids) == 1 ? "its" : "their",
                      json_array_size(ids) == 1 ? "" : "s");
    }
    if (b && !strcmp(state, "unsealed"))
        kf_buf_printf(b,
                      "WARNING: this run has no seals (made before kforge sealed outcomes, or its key id was "
                      "removed from run.db): nothing it records is verified, and it cannot be resumed\n");
    if (b && !strcmp(state, "tampered"))
        kf_buf_printf(
            b, "WARNING: run.db was changed outside kforge: the run's own row (task fingerprint, settings or "
               "counts of rows) "
               "does not match its seal: nothing more can be recorded in this run, and its settings are "
               "not to be trusted\n");
    if (b && !strcmp(state, "key missing"))
        kf_buf_printf(b,
                      "warning: this run's seal key %s is not on this machine: its recorded outcomes are not "
                      "verified (set KFORGE_KEYS to the directory that holds it)\n",
                      kp);
    int64_t bad_ev = 0;
    kf_store_tampered_events(st, &bad_ev);
    if (b && bad_ev > 0)
        kf_buf_printf(
            b,
            "WARNING: run.db was changed outside kforge: %lld event%s or constraint%s (Critic decisions, "
            "diagnoses, tool-mode actions, learnt rules...) %s not match %s seal%s and %s ignored\n",
            (long long)bad_ev, bad_ev == 1 ? "" : "s", bad_ev == 1 ? "" : "s", bad_ev == 1 ? "does" : "do",
            bad_ev == 1 ? "its" : "their", bad_ev == 1 ? "" : "s", bad_ev == 1 ? "is" : "are");
    int64_t gn = 0, ge = 0;
    kf_store_gaps(st, &gn, &ge);
    if (b && (gn > 0 || ge > 0))
        kf_buf_printf(b,
                      "WARNING: run.db was changed outside kforge: %lld node%s and %lld event%s were deleted "
                      "(gaps in their numbering)\n",
                      (long long)gn, gn == 1 ? "" : "s", (long long)ge, ge == 1 ? "" : "s");
    return json_pack("{s:s, s:s?, s:o, s:I, s:I, s:I, s:b}", "seals", state, "key", kp, "tampered", ids,
                     "events_tampered", (json_int_t)bad_ev, "nodes_deleted", (json_int_t)gn, "events_deleted",
                     (json_int_t)ge, "task_matches", task_ok);
}

kf_status kf_record_seals_usable(kf_ctx *ctx, const char *dir, kf_store *st) {
    const char *s = kf_store_seal_state(st);
    if (!strcmp(s, "key missing"))
        return kf__err(ctx, KF_EUSAGE,
                       "%s: this run's seal key %s is not on this machine: its outcomes cannot be "
                       "verified or recorded (copy the key there, or set KFORGE_KEYS to its directory)",
                       dir, kf_store_key_path(st));
    if (!strcmp(s, "tampered"))
        return kf__err(
            ctx, KF_EUSAGE,
            "%s: run.db was changed outside kforge: the run's own row (task fingerprint, settings or "
            "counts of rows) does not match its seal, so nothing more is recorded in it",
            dir);
    /* its settings (the Critic's, --hidden, an agent command) could be anyone's */
    if (!strcmp(s, "unsealed"))
        return kf__err(ctx, KF_EUSAGE,
                       "%s: this run has no seals (made before kforge sealed outcomes, or its key id "
                       "was removed from run.db): its recorded settings are not trusted, so it is not "
                       "resumed; start a new run",
                       dir);
    return KF_OK;
}

json_t *kf_record_best_shapes(const kf_node *v, size_t n) {
    json_t *best = json_array();
    for (size_t i = 0; best && i < n; i++) {
        const kf_node *nd = &v[i];
        if (nd->state != KF_NODE_KEPT) continue; /* only what the Critic kept */
        struct kf_verdict sh;
        kf_verdict_from_text(nd->shapes_json, &sh);
        for (int k = 0; k < sh.nshapes; k++) {
            const kf_verdict_shape *sv = &sh.shapes[k];
            json_t *sizes = kf_verdict_sizes_json(&sv->sizes);
            double sp = sv->speedup;
            int win = (sv->has & KF_VS_WIN) && sv->win;
            size_t j;
            json_t *e, *slot = NULL;
            json_array_foreach(best, j, e) if (json_equal(json_object_get(e, "sizes"), sizes)) slot = e;
            if (!slot) {
                json_array_append_new(best, json_pack("{s:o, s:I, s:f, s:b}", "sizes", sizes, "node",
                                                      (json_int_t)nd->id, "speedup", sp, "win", win));
                sizes = NULL;
            } else if (sp > json_number_value(json_object_get(slot, "speedup"))) {
                json_object_set_new(slot, "node", json_integer(nd->id));
                json_object_set_new(slot, "speedup", json_real(sp));
                json_object_set_new(slot, "win", json_boolean(win));
            }
            json_decref(sizes);
        }
        kf_verdict_free(&sh);
    }
    return best;
}

char *kf_record_first_message(const kf_node *n) {
    struct kf_verdict v;
    kf_verdict_from_text(n->verdict_json, &v);
    const char *m = v.nreasons ? v.reasons[0].message : NULL;
    char *out = m ? strdup(m) : n->note ? strdup(n->note) : NULL;
    kf_verdict_free(&v);
    return out;
}
