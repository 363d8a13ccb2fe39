/*
 * backend.c - the backend registry and the wrappers around the vtable: every call core
 * code makes into a backend comes through here, which checks its arguments and supplies
 * the default of an optional slot left NULL (backend.h says which).
 *
 * Adding a backend to the build is one line of KF_BACKENDS (backend.h) and its folder
 * under src/backend/, which the build picks up by itself (src/backend/CMakeLists.txt).
 */
#include "backend.h"

#include <elf.h>
#include <errno.h>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ENTRY(NAME) kf_backend_##NAME,
static kf_backend *(*const builtin[])(void) = {KF_BACKENDS(ENTRY)};
#undef ENTRY
#define NBUILTIN ((int)(sizeof builtin / sizeof builtin[0]))

/* names a task may give that this build has no backend for (docs/tasks.md) */
static const char *const reserved[] = {"opencl"};
#define NRESERVED ((int)(sizeof reserved / sizeof reserved[0]))

#define MAX_ADDED 8
static kf_backend *added[MAX_ADDED]; /* kf_backend_register; read-only once kforge runs */
static int nadded;

kf_backend *kf_backend_at(int i) {
    if (i < 0) return NULL;
    if (i < NBUILTIN) return builtin[i]();
    return i - NBUILTIN < nadded ? added[i - NBUILTIN] : NULL;
}

kf_backend *kf_backend_get(const char *name) {
    kf_backend *b;
    for (int i = 0; name && (b = kf_backend_at(i)); i++)
        if (!strcmp(b->iface.name, name)) return b;
    return NULL;
}

kf_backend *kf_backend_by_ext(const char *ext) {
    kf_backend *b;
    for (int i = 0; ext && (b = kf_backend_at(i)); i++)
        if (!strcmp(b->iface.ext, ext)) return b;
    return NULL;
}

int kf_backend_reserved(const char *name) {
    for (int i = 0; name && i < NRESERVED; i++)
        if (!strcmp(reserved[i], name)) return 1;
    return 0;
}

void kf_backend_names(int with_reserved, const char *sep, char *out, size_t n) {
    const char *v[NBUILTIN + MAX_ADDED + NRESERVED];
    int k = 0;
    kf_backend *b;
    for (int i = 0; (b = kf_backend_at(i)); i++) v[k++] = b->iface.name;
    for (int i = 0; with_reserved && i < NRESERVED; i++) v[k++] = reserved[i];
    size_t o = 0;
    if (n) out[0] = 0;
    for (int i = 0; i < k && o < n; i++) {
        int w = snprintf(out + o, n - o, "%s\"%s\"", i == 0 ? "" : i + 1 == k ? sep : ", ", v[i]);
        if (w < 0) break;
        o += (size_t)w;
    }
}

const char *kf_backend_name_at(int i) {
    kf_backend *b = kf_backend_at(i);
    return b ? b->iface.name : NULL;
}

const char *kf_backend_name(const kf_backend *b) { return b->iface.name; }
const char *kf_backend_ext(const kf_backend *b) { return b->iface.ext; }
const char *kf_backend_reference(const kf_backend *b) { return b->iface.reference; }
const char *kf_backend_lang(const kf_backend *b) { return b->iface.lang; }
int kf_backend_has(const kf_backend *b, unsigned caps) { return b && (b->iface.caps & caps) == caps; }

static int named(const char *s) { return s && *s && !strchr(s, '/') && !strchr(s, '.'); }

kf_status kf_backend_register(kf_ctx *ctx, kf_backend *b) {
    if (!b) return kf__err(ctx, KF_EUSAGE, "kf_backend_register: NULL backend");
    const struct kf_backend_i *f = &b->iface;
    const char *who = f->name ? f->name : "(unnamed)";
    if (f->api_version != KF_BACKEND_API_VERSION)
        return kf__err(ctx, KF_EUSAGE, "backend %s: interface version %d, this build speaks %d", who,
                       f->api_version, KF_BACKEND_API_VERSION);
    if (!named(f->name) || !named(f->ext) || !f->reference || !*f->reference || strchr(f->reference, '/') ||
        !f->lang || !*f->lang)
        return kf__err(ctx, KF_EUSAGE,
                       "backend %s: a name, an extension, a reference file and a language "
                       "are required (plain names, no '/' or '.')",
                       who);
    if (!f->compile) return kf__err(ctx, KF_EUSAGE, "backend %s: no compile slot", who);
    if (kf_backend_get(f->name) || kf_backend_reserved(f->name))
        return kf__err(ctx, KF_EUSAGE, "backend %s: the name is taken", who);
    if (kf_backend_by_ext(f->ext))
        return kf__err(ctx, KF_EUSAGE, "backend %s: extension .%s is taken", who, f->ext);
    if (nadded == MAX_ADDED) return kf__err(ctx, KF_EUSAGE, "backend %s: the registry is full", who);
    added[nadded++] = b;
    return KF_OK;
}

kf_status kf_backend_compile(kf_backend *b, kf_ctx *ctx, const kf_task *t, const char *path, const char *text,
                             size_t len, const kf_param *params, int nparams, const char *workdir,
                             double timeout_s, kf_build *out) {
    memset(out, 0, sizeof *out);
    if (!b || !t || !text || !workdir || nparams < 0 || (nparams && !params))
        return kf__err(ctx, KF_EUSAGE, "kf_backend_compile: bad arguments");
    if (!b->iface.compile) return kf__err(ctx, KF_EBACKEND, "backend %s cannot compile", b->iface.name);
    return b->iface.compile(b, ctx, t, path, text, len, params, nparams, workdir, timeout_s, out);
}

void kf_build_free(kf_build *b) {
    if (!b) return;
    free(b->so_path);
    free(b->message);
    free(b->log);
    free(b->libraries);
    for (int i = 0; i < b->nlaunch; i++)
        for (int d = 0; d < 7; d++) kf_expr_free(b->launch[i].dim[d]);
    for (int i = 0; i < b->nkernels; i++) free(b->kernels[i].name);
    for (int i = 0; i < b->nparams; i++) free(b->pnames[i]);
    memset(b, 0, sizeof *b);
}

/* ---- the optional slots: their defaults ---------------------------------------------- */

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>

/* clflushopt evicts the same lines from every cache level as clflush, but the flushes of
 * one thread are not ordered against each other, so they overlap: 3-5x less of the
 * coordinator's time per staged call (bench/history/loop.md). The fence after the loop
 * orders them before the call's START. */
__attribute__((target("clflushopt"))) static void flush_opt(const unsigned char *arena,
                                                            const kf_layout *lay) {
    for (size_t p = lay->lo & ~(size_t)63; p < lay->end; p += 64) _mm_clflushopt((void *)(arena + p));
    for (size_t p = lay->ro_lo & ~(size_t)63; p < lay->ro_end; p += 64) _mm_clflushopt((void *)(arena + p));
    _mm_mfence();
}

/* 1 when this CPU has clflushopt (CPUID.7.0:EBX bit 23) and KFORGE_CLFLUSH (a
 * measurement's A/B switch) is not set. */
static int use_clflushopt(void) {
    static _Atomic int known = -1;
    int k = known;
    if (k < 0) {
        unsigned a, b, c, d;
        k = __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & (1u << 23)) != 0 && !getenv("KFORGE_CLFLUSH");
        known = k;
    }
    return k;
}

void kf_stage_flush(const kf_stage *st) {
    /* clflush from the coordinator evicts the lines from every core's caches; the
     * candidate's process cannot skip or shorten it */
    const unsigned char *arena = st->arena;
    const kf_layout *lay = st->lay;
    if (use_clflushopt()) {
        flush_opt(arena, lay);
        return;
    }
    for (size_t p = lay->lo & ~(size_t)63; p < lay->end; p += 64) _mm_clflush(arena + p);
    for (size_t p = lay->ro_lo & ~(size_t)63; p < lay->ro_end; p += 64) _mm_clflush(arena + p);
    _mm_mfence();
}
#else
void kf_stage_flush(const kf_stage *st) {
    /* no portable line flush: stream through a buffer larger than common LLCs */
    static unsigned char *junk;
    static const size_t n = 256u << 20;
    (void)st;
    if (!junk && !(junk = calloc(1, n))) return;
    for (size_t i = 0; i < n; i += 64) junk[i]++;
}
#endif

void kf_backend_worker_opts(kf_backend *b, const kf_build *build, kf_worker_opts *o) {
    if (b->iface.worker_opts && build) b->iface.worker_opts(b, build, o);
}

int kf_backend_starts_early(kf_backend *b, kf_worker_opts *o) {
    return b->iface.worker_opts ? b->iface.worker_opts(b, NULL, o) : 0;
}

int kf_backend_stage(kf_backend *b, const kf_build *build, const kf_stage *st, kf_msg_run *m, char *err,
                     size_t n) {
    if (b->iface.stage) return b->iface.stage(b, build, st, m, err, n);
    kf_stage_flush(st);
    return 0;
}

uint64_t kf_backend_clock(kf_backend *b, const kf_call_result *cr) {
    return b->iface.clock ? b->iface.clock(b, cr) : cr->worker_ns;
}

int kf_backend_timing_rounds(const kf_backend *b) {
    return b->iface.timing_rounds > 0 ? b->iface.timing_rounds : 0;
}
int kf_backend_ceilings_early(const kf_backend *b) { return b->iface.ceilings_early != 0; }
int kf_backend_has_ceilings(const kf_backend *b) { return b->iface.ceilings != NULL; }

void *kf_backend_ceilings(kf_backend *b, kf_ctx *ctx, kf_ceil_out *out) {
    memset(out, 0, sizeof *out);
    return b->iface.ceilings ? b->iface.ceilings(b, ctx, out) : NULL;
}

int kf_backend_roofline(kf_backend *b, const void *ceil, const kf_roof_in *in, kf_roof_out *out, char *why,
                        size_t n) {
    if (n) why[0] = 0;
    memset(out, 0, sizeof *out);
    return b->iface.roofline ? b->iface.roofline(b, ceil, in, out, why, n) : 0;
}

void kf_backend_plan(kf_backend *b, const kf_build *cand, const kf_build *base, int cand_graph,
                     int *host_timing, int *base_graph) {
    *host_timing = *base_graph = 0;
    if (b->iface.plan) b->iface.plan(b, cand, base, cand_graph, host_timing, base_graph);
}

int kf_backend_fair(kf_backend *b, const kf_build *cand, const kf_launch_seen *cs, const kf_build *base,
                    int base_graph, const kf_launch_seen *bs, kf_fair_out *out) {
    memset(out, 0, sizeof *out);
    out->launches = -1;
    return b->iface.fair ? b->iface.fair(b, cand, cs, base, base_graph, bs, out) : 1;
}

int kf_backend_watches_libraries(kf_backend *b, const kf_build *build) {
    return b->iface.libraries && b->iface.libraries(b, build, NULL, NULL, 0) >= 0;
}

int kf_backend_undeclared(kf_backend *b, const kf_build *build, const char *loaded, char *bad, size_t n) {
    if (n) bad[0] = 0;
    if (!b->iface.libraries || !loaded) return 0;
    int k = b->iface.libraries(b, build, loaded, bad, n);
    return k > 0 ? k : 0;
}

void kf_backend_report_build(kf_backend *b, const kf_build *build, kf_build_out *out) {
    memset(out, 0, sizeof *out);
    if (b->iface.report_build) b->iface.report_build(b, build, out);
}

void kf_backend_report_sandbox(kf_backend *b, const kf_build *build, kf_worker *w, kf_sandbox_out *out) {
    memset(out, 0, sizeof *out);
    if (b->iface.report_sandbox) b->iface.report_sandbox(b, build, w, out);
    else out->seccomp = 1;
}

void kf_backend_report_call(kf_backend *b, const kf_build *build, const kf_call_result *cr,
                            kf_call_out *out) {
    memset(out, 0, sizeof *out);
    if (b->iface.report_call) b->iface.report_call(b, build, cr, out);
}

void kf_backend_resources(kf_backend *b, const kf_build *build, const kf_task *t, const int64_t *sizes,
                          const char *info, const uint32_t *occ, kf_resources_out *out) {
    memset(out, 0, sizeof *out);
    if (b->iface.resources) b->iface.resources(b, build, t, sizes, info, occ, out);
}

kf_status kf_backend_describe(kf_backend *b, kf_ctx *ctx, int device, int refresh, char **json) {
    *json = NULL;
    if (!b->iface.describe)
        return kf__err(ctx, KF_EBACKEND, "backend %s has no devices to describe", b->iface.name);
    return b->iface.describe(b, ctx, device, refresh, json);
}

int kf_backend_has_dispatcher(const kf_backend *b) { return b->iface.dispatcher != NULL; }

kf_status kf_backend_dispatcher(kf_backend *b, kf_ctx *ctx, const kf_task *t, const char *run_dir,
                                const kf_winner *w, int nw, int fallback, const kf_best_shape *best,
                                int nbest, kf_buf *out, kf_dispatch_out *d, int *alone) {
    memset(d, 0, sizeof *d);
    *alone = 1;
    if (!b->iface.dispatcher)
        return kf__err(ctx, KF_EUSAGE, "backend %s has no dispatcher slot", b->iface.name);
    *alone = 0;
    if (fallback < 0 || fallback >= nw) return kf__err(ctx, KF_EUSAGE, "kf_backend_dispatcher: no fallback");
    kf_status s = b->iface.dispatcher(b, ctx, t, run_dir, w, nw, fallback, best, nbest, out, d, alone);
    if (!s && d->oom) s = kf__err(ctx, KF_ENOMEM, "out of memory");
    return s;
}

/* kforge device-info: the first backend that describes devices answers */
kf_status kf_device_info(kf_ctx *ctx, int device, int refresh, char **json) {
    *json = NULL;
    kf_backend *b;
    for (int i = 0; (b = kf_backend_at(i)); i++)
        if (b->iface.describe) return kf_backend_describe(b, ctx, device, refresh, json);
    return kf__err(ctx, KF_EBACKEND, "no backend of this build has devices to describe");
}

/* Does the ELF shared object at path define `name` as an exported function? 1 yes,
 * 0 no, -1 unreadable (errno from the read) or not a 64-bit ELF (errno ENOEXEC). The
 * dynamic symbol table is what dlsym sees. */
int kf__so_defines(const char *path, const char *name) {
    char *d = NULL;
    size_t n = 0;
    if (kf__read_file(path, 1u << 30, &d, &n)) return -1;
    int found = -1;
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)d;
    if (n < sizeof *eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
        eh->e_shentsize != sizeof(Elf64_Shdr) || eh->e_shoff > n ||
        (size_t)eh->e_shnum * sizeof(Elf64_Shdr) > n - eh->e_shoff) {
        errno = ENOEXEC; /* not what a successful read may have left there */
        goto out;
    }
    const Elf64_Shdr *sh = (const Elf64_Shdr *)(d + eh->e_shoff);
    found = 0;
    for (int i = 0; i < eh->e_shnum && !found; i++) {
        if (sh[i].sh_type != SHT_DYNSYM || sh[i].sh_link >= eh->e_shnum) continue;
        const Elf64_Shdr *str = &sh[sh[i].sh_link];
        if (sh[i].sh_offset > n || sh[i].sh_size > n - sh[i].sh_offset || str->sh_offset > n ||
            str->sh_size > n - str->sh_offset)
            continue;
        const Elf64_Sym *sym = (const Elf64_Sym *)(d + sh[i].sh_offset);
        size_t ns = sh[i].sh_size / sizeof *sym;
        for (size_t k = 0; k < ns && !found; k++) {
            int type = ELF64_ST_TYPE(sym[k].st_info), bind = ELF64_ST_BIND(sym[k].st_info);
            if (sym[k].st_shndx == SHN_UNDEF || sym[k].st_name >= str->sh_size ||
                (type != STT_FUNC && type != STT_GNU_IFUNC) || (bind != STB_GLOBAL && bind != STB_WEAK) ||
                ELF64_ST_VISIBILITY(sym[k].st_other) != STV_DEFAULT)
                continue;
            const char *nm = d + str->sh_offset + sym[k].st_name;
            found = strnlen(nm, str->sh_size - sym[k].st_name) == strlen(name) && !strcmp(nm, name);
        }
    }
out:
    free(d);
    return found;
}
