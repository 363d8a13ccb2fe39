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
 */
#define _GNU_SOURCE
#include "record.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define REC_MAX (64u << 20) /* a record's bytes, at most */

/* text into path whole: written beside it, then renamed over it. 0, or -1 with errno. */
static int write_whole(const char *path, const char *text, size_t len) {
    char tmp[4300];
    snprintf(tmp, sizeof tmp, "%s.tmp-%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) return -1;
    int bad = fwrite(text, 1, len, f) != len;
    bad |= fflush(f) != 0 || fsync(fileno(f)) != 0;
    bad |= fclose(f) != 0;
    if (bad || rename(tmp, path)) {
        int e = errno;
        unlink(tmp);
        errno = e;
        return -1;
    }
    return 0;
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
    char key_id[33] = "", mac[65], path[4200];
    kf_status st = kf_store_seal_bytes(ctx, key_id, text, len, mac);
    snprintf(path, sizeof path, "%s/system.json", dir);
    if (!st && write_whole(path, text, len)) st = kf__err(ctx, KF_EIO, "%s: %s", path, strerror(errno));
    if (!st) {
        char seal[200];
        int k = snprintf(seal, sizeof seal, "{\"key_id\": \"%s\", \"mac\": \"%s\"}\n", key_id, mac);
        snprintf(path, sizeof path, "%s/system.seal", dir);
        if (write_whole(path, seal, (size_t)k)) st = kf__err(ctx, KF_EIO, "%s: %s", path, strerror(errno));
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
        kf_status st =
            id ? kf_store_check_bytes(ctx, id, text, len, mac, &state, key_path, sizeof key_path) : KF_OK;
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
