/*
 * cmd_device.c - `kforge device-info`: a CUDA device's attributes, measured ceilings
 * and theoretical figures, as a short table or (--json) the library's JSON object.
 */
#include "cli.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double num(json_t *o, const char *k) { return json_number_value(json_object_get(o, k)); }

/* "4.21 TB/s"-style figure, or "-" when unknown. */
static const char *rate(double v, const char *unit, char *buf, size_t n) {
    if (!(v > 0)) return "-";
    const char *pre[] = {"", "K", "M", "G", "T", "P"};
    int i = 0;
    while (v >= 1000 && i < 5) v /= 1000, i++;
    snprintf(buf, n, "%.3g %s%s", v, pre[i], unit);
    return buf;
}

static void print_table(json_t *o) {
    json_t *m = json_object_get(o, "measured"), *t = json_object_get(o, "theoretical");
    char a[64], b[64];
    printf("device %lld: %s (%s, %s)\n", (long long)num(o, "device"),
           json_string_value(json_object_get(o, "name")), json_string_value(json_object_get(o, "arch")),
           json_string_value(json_object_get(o, "uuid")));
    printf("  SMs %lld, SM clock %lld kHz, memory clock %lld kHz, bus %lld bits\n", (long long)num(o, "sms"),
           (long long)num(o, "sm_clock_khz"), (long long)num(o, "mem_clock_khz"),
           (long long)num(o, "mem_bus_width_bits"));
    const char *kd = json_string_value(json_object_get(o, "kernel_driver"));
    printf("  L2 %.1f MiB, memory %.1f GiB, driver %lld%s%s%s, NVRTC %s\n", num(o, "l2_bytes") / 1048576.0,
           num(o, "total_mem_bytes") / 1073741824.0, (long long)num(o, "driver_version"), kd ? " (" : "",
           kd ? kd : "", kd ? ")" : "", json_string_value(json_object_get(o, "nvrtc_version")));
    printf("  %-22s %-14s %s\n", "ceiling", "measured", "theoretical");
    printf("  %-22s %-14s %s\n", "copy bandwidth", rate(num(m, "copy_bytes_per_s"), "B/s", a, sizeof a),
           rate(num(t, "mem_bytes_per_s"), "B/s", b, sizeof b));
    printf("  %-22s %-14s %s\n", "f32 FMA", rate(num(m, "fp32_flops_per_s"), "FLOP/s", a, sizeof a),
           rate(num(t, "fp32_flops_per_s"), "FLOP/s", b, sizeof b));
    printf("  %-22s %-14s %s\n", "bf16 tensor",
           rate(num(m, "bf16_tensor_flops_per_s"), "FLOP/s", a, sizeof a),
           rate(num(t, "bf16_flops_per_s"), "FLOP/s", b, sizeof b));
    printf("  %-22s %-14s %s\n", "fastest dense path", "",
           rate(num(t, "peak_flops_per_s"), "FLOP/s", b, sizeof b));
    printf("  (%s)\n", !strcmp(json_string_value(json_object_get(o, "source")), "cache")
                           ? "measured earlier, from the cache; --refresh measures again"
                           : "measured now, and cached");
}

int kf_cli_device_info(int argc, char **argv) {
    int json = 0, refresh = 0;
    long dev = 0;
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--json")) json = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json")) continue;
        if (!strcmp(argv[i], "--refresh")) refresh = 1;
        else if (!strcmp(argv[i], "--device") && i + 1 < argc) {
            char *end;
            errno = 0;
            dev = strtol(argv[++i], &end, 10);
            if (errno || *end || end == argv[i] || dev < 0 || dev > 1024)
                return kf_cli_fail(json, "--device needs a device number, got '%s'", argv[i]);
        } else {
            return kf_cli_fail(json, "unknown or incomplete option '%s' (see kforge help)", argv[i]);
        }
    }
    kf_ctx *ctx = kf_ctx_new();
    if (!ctx) return kf_cli_fail(json, "out of memory");
    char *out = NULL;
    kf_status st = kf_device_info(ctx, (int)dev, refresh, &out);
    int code = KF_EXIT_OK;
    if (st) {
        code = kf_cli_fail(json, "%s", kf_errmsg(ctx));
    } else if (json) {
        printf("%s\n", out);
    } else {
        json_t *o = json_loads(out, 0, NULL);
        if (o) print_table(o);
        else code = kf_cli_fail(0, "unreadable device description");
        json_decref(o);
    }
    free(out);
    kf_ctx_free(ctx);
    return code;
}
