/*
 * sysrun.c - a system run's record (docs/system.md "The record"): `kforge system run`
 * keeps what it did as one JSON document, DIR/system.json, beside the loop runs of the
 * slots it worked on (DIR/slot-NAME/). This file writes that document whole and seals it,
 * and reads it back with its seal's state for the report.
 *
 * The seal is the store's (kf_store_seal_bytes): an HMAC-SHA256 of system.json's exact
 * bytes under a random key of the run's own, kept outside the run directory as a loop
 * run's key is. DIR/system.seal holds the key id and the HMAC. Any edit of the record
 * (a figure, an outcome, a reformatting) reads as tampered; a record written before
 * seals reads as unsealed. The slot runs carry their own seals in their run.db. What it
 * does not stop: the same user reading the key file, or deleting system.seal (the record
 * then reads as unsealed, and the report says so).
 *
 * The record is saved after every slot iteration, so a killed run leaves one a reader
 * can trust and `system run --resume` can continue. Each save reuses the run's key and
 * replaces both files by rename (written beside them, fsynced, renamed, the directory
 * fsynced): the seal first, holding the new record's HMAC and, as "prev_mac", the one
 * before, then the record. A kill between the two renames leaves the previous record
 * under a seal that still vouches for it, so no reader sees a half-written record or
 * one its seal does not cover. What it does not stop: putting back the record one save
 * older (it matches prev_mac).
 */
#define _GNU_SOURCE
#include "record.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define REC_MAX (64u << 20) /* a record's bytes, at most */

/* text into a temporary file beside path, fsynced; its name into tmp. 0, or -1 with errno. */
static int write_tmp(const char *path, const char *text, size_t len, char *tmp, size_t tn) {
    snprintf(tmp, tn, "%s.tmp-%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) return -1;
    int bad = fwrite(text, 1, len, f) != len;
    bad |= fflush(f) != 0 || fsync(fileno(f)) != 0;
    bad |= fclose(f) != 0;
    if (bad) {
        int e = errno;
        unlink(tmp);
        errno = e;
        return -1;
    }
    return 0;
}

/* The run's key id from dir's current seal, and into prev the HMAC (the seal's "mac" or
 * "prev_mac") that vouches for the record on disk, "" when none does: 1 when dir has a
 * seal, else 0. */
static int seal_read(kf_ctx *ctx, const char *dir, char key_id[33], char prev[65]) {
    char path[4200], *t = NULL, *rec = NULL;
    size_t len = 0, rlen = 0;
    prev[0] = 0;
    snprintf(path, sizeof path, "%s/system.seal", dir);
    if (kf__read_file(path, 4096, &t, &len)) return 0;
    json_t *j = json_loadb(t, len, 0, NULL);
    free(t);
    const char *id = json_string_value(json_object_get(j, "key_id"));
    int ok = id && strlen(id) == 32;
    if (ok) memcpy(key_id, id, 33);
    snprintf(path, sizeof path, "%s/system.json", dir);
    if (ok && !kf__read_file(path, REC_MAX, &rec, &rlen)) {
        const char *macs[2] = {json_string_value(json_object_get(j, "mac")),
                               json_string_value(json_object_get(j, "prev_mac"))};
        for (int k = 0; k < 2 && !prev[0]; k++) {
            const char *state = "";
            if (macs[k] && strlen(macs[k]) == 64 &&
                !kf_store_check_bytes(ctx, id, rec, rlen, macs[k], &state, NULL, 0) &&
                !strcmp(state, "sealed"))
                memcpy(prev, macs[k], 65);
        }
        free(rec);
    }
    json_decref(j);
    return ok;
}

/* The sha256 of the file at path into hex: 0, or -1. */
static int file_sha(const char *path, char hex[65]) {
    char *t = NULL;
    size_t len = 0;
    if (kf__read_file(path, REC_MAX, &t, &len)) return -1;
    const void *parts[1] = {t};
    size_t lens[1] = {len};
    int rc = kf__sha256_hex(parts, lens, 1, hex);
    free(t);
    return rc;
}

kf_status kf_sysrun_save(kf_ctx *ctx, const char *dir, const char *json) {
    json_error_t je;
    json_t *rec = json_loads(json, 0, &je);
    if (!json_is_object(rec)) {
        json_decref(rec);
        return kf__err(ctx, KF_EUSAGE, "a system run's record must be one JSON object");
    }
    const char *pl = json_string_value(json_object_get(rec, "pipeline"));
    char abs[4096], hex[65];
    if (pl && realpath(pl, abs)) {
        json_object_set_new(rec, "pipeline_file", json_string(abs));
        if (!file_sha(abs, hex)) json_object_set_new(rec, "pipeline_sha256", json_string(hex));
    }
    char *text = kf__json_dumps(rec, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(6));
    json_decref(rec);
    if (!text) return kf__err(ctx, KF_ENOMEM, "out of memory");
    size_t len = strlen(text);
    /* the run's key again after its first save; the seal on disk becomes prev_mac */
    char key_id[33] = "", prev[65] = "", mac[65], path[4200], seal_path[4200], tmp[4300], stmp[4300];
    int had = seal_read(ctx, dir, key_id, prev) && prev[0];
    kf_status st = kf_store_seal_bytes(ctx, key_id, text, len, mac);
    snprintf(path, sizeof path, "%s/system.json", dir);
    snprintf(seal_path, sizeof seal_path, "%s/system.seal", dir);
    char seal[300];
    int k = had ? snprintf(seal, sizeof seal, "{\"key_id\": \"%s\", \"mac\": \"%s\", \"prev_mac\": \"%s\"}\n",
                           key_id, mac, prev)
                : snprintf(seal, sizeof seal, "{\"key_id\": \"%s\", \"mac\": \"%s\"}\n", key_id, mac);
    if (!st && write_tmp(path, text, len, tmp, sizeof tmp))
        st = kf__err(ctx, KF_EIO, "%s: %s", path, strerror(errno));
    else if (!st && write_tmp(seal_path, seal, (size_t)k, stmp, sizeof stmp)) {
        st = kf__err(ctx, KF_EIO, "%s: %s", seal_path, strerror(errno));
        unlink(tmp);
    } else if (!st && (rename(stmp, seal_path) || rename(tmp, path))) {
        st = kf__err(ctx, KF_EIO, "%s: rename: %s", dir, strerror(errno));
        unlink(stmp), unlink(tmp);
    }
    if (!st) {
        int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0 || fsync(dfd)) st = kf__err(ctx, KF_EIO, "%s: fsync: %s", dir, strerror(errno));
        if (dfd >= 0) close(dfd);
    }
    free(text);
    return st;
}

int kf_sysrun_is(const char *dir) {
    char path[4200];
    snprintf(path, sizeof path, "%s/system.json", dir);
    return !access(path, F_OK);
}

kf_status kf_sysrun_load(kf_ctx *ctx, const char *dir, json_t **rec, json_t **integrity, kf_buf *warn) {
    *rec = *integrity = NULL;
    char path[4200], *text = NULL, *seal = NULL;
    size_t len = 0, slen = 0;
    snprintf(path, sizeof path, "%s/system.json", dir);
    if (kf__read_file(path, REC_MAX, &text, &len))
        return kf__err(ctx, KF_EIO, "%s: %s (not a system run's record)", path, strerror(errno));
    json_error_t je;
    json_t *r = json_loadb(text, len, 0, &je);
    if (!json_is_object(r)) {
        json_decref(r);
        free(text);
        return kf__err(ctx, KF_ETASK, "%s:%d: %s (not a system run's record)", path, je.line,
                       r ? "not a JSON object" : je.text);
    }
    snprintf(path, sizeof path, "%s/system.seal", dir);
    const char *state = "unsealed";
    char key_path[4200] = "";
    json_t *sj = NULL;
    if (!kf__read_file(path, 4096, &seal, &slen)) {
        sj = json_loadb(seal, slen, 0, &je);
        const char *id = json_string_value(json_object_get(sj, "key_id"));
        const char *mac = json_string_value(json_object_get(sj, "mac"));
        const char *prev = json_string_value(json_object_get(sj, "prev_mac"));
        kf_status st =
            id ? kf_store_check_bytes(ctx, id, text, len, mac, &state, key_path, sizeof key_path) : KF_OK;
        /* killed between a save's two renames: the record before, which the seal still covers */
        if (!st && id && prev && !strcmp(state, "tampered"))
            st = kf_store_check_bytes(ctx, id, text, len, prev, &state, key_path, sizeof key_path);
        if (!id) state = "tampered";
        if (st) {
            json_decref(sj), json_decref(r);
            free(text), free(seal);
            return st;
        }
    }
    json_t *in = json_pack("{s:s, s:s?}", "seals", state, "key", key_path[0] ? key_path : NULL);
    const char *pf = json_string_value(json_object_get(r, "pipeline_file"));
    const char *ps = json_string_value(json_object_get(r, "pipeline_sha256"));
    char hex[65];
    if (in && pf && ps)
        json_object_set_new(in, "pipeline_matches", json_boolean(!file_sha(pf, hex) && !strcmp(hex, ps)));
    if (warn) {
        if (!strcmp(state, "tampered"))
            kf_buf_printf(warn,
                          "WARNING: system.json was changed outside kforge: it does not match its seal, so "
                          "none of its figures is trusted\n");
        else if (!strcmp(state, "key missing"))
            kf_buf_printf(warn,
                          "warning: system.json's seal key %s is not on this machine: its figures are not "
                          "verified (set KFORGE_KEYS to the directory that holds it)\n",
                          key_path);
        else if (!strcmp(state, "unsealed"))
            kf_buf_printf(warn,
                          "WARNING: system.json has no seal (no system.seal: written before system runs "
                          "were sealed, or the seal was removed): none of its figures is verified\n");
    }
    json_decref(sj);
    free(text), free(seal);
    if (!in) {
        json_decref(r);
        return kf__err(ctx, KF_ENOMEM, "out of memory");
    }
    *rec = r, *integrity = in;
    return KF_OK;
}

kf_status kf_sysrun_resume(kf_ctx *ctx, const char *dir, const char *pipeline, char **json) {
    *json = NULL;
    json_t *rec = NULL, *in = NULL;
    kf_status st = kf_sysrun_load(ctx, dir, &rec, &in, NULL);
    if (st) return st;
    const char *seals = json_string_value(json_object_get(in, "seals"));
    const char *ps = json_string_value(json_object_get(rec, "pipeline_sha256"));
    const char *pf = json_string_value(json_object_get(rec, "pipeline_file"));
    const char *state = json_string_value(json_object_get(rec, "state"));
    char hex[65];
    if (strcmp(seals, "sealed"))
        st = kf__err(ctx, KF_EUSAGE,
                     "%s/system.json: %s: a record its seal does not vouch for is not resumed", dir, seals);
    else if (!ps || !state)
        st = kf__err(ctx, KF_EUSAGE, "%s/system.json: recorded without its %s: it cannot be resumed", dir,
                     !ps ? "pipeline's sha256" : "state");
    else if (file_sha(pipeline, hex)) st = kf__err(ctx, KF_EUSAGE, "%s: %s", pipeline, strerror(errno));
    else if (strcmp(hex, ps))
        st = kf__err(
            ctx, KF_EUSAGE,
            "%s: sha256 %.16s... is not the pipeline this run was started with (%s, sha256 %.16s...): "
            "a system run resumes only on its own pipeline",
            pipeline, hex, pf ? pf : "?", ps);
    else if (!strcmp(state, "finished"))
        st = kf__err(ctx, KF_EUSAGE, "%s: the system run finished: there is nothing to resume", dir);
    else if (!(*json = kf__json_dumps(rec, JSON_COMPACT))) st = kf__err(ctx, KF_ENOMEM, "out of memory");
    json_decref(rec), json_decref(in);
    return st;
}

/* ---- one system run at a time in a directory ---------------------------------------- */

kf_status kf_sysrun_lock_take(kf_ctx *ctx, const char *dir, const char *command, kf_sysrun_lock **out) {
    return kf_store_lock_take(ctx, dir, command, 0, out);
}

void kf_sysrun_unlock(kf_sysrun_lock *l) { kf_store_unlock(l); }
