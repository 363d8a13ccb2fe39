/*
 * backend.c - backend registry and the checked wrappers around the vtable.
 */
#include "backend.h"

#include <elf.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

kf_backend *kf_backend_get(const char *name) {
    if (name && !strcmp(name, "c")) return kf_backend_c();
    if (name && !strcmp(name, "cuda")) return kf_backend_cuda();
    return NULL;
}

kf_status kf_backend_compile(kf_backend *b, kf_ctx *ctx, const kf_task *t, const char *path,
                             const char *text, size_t len, const kf_param *params, int nparams,
                             const char *workdir, double timeout_s, kf_build *out) {
    memset(out, 0, sizeof *out);
    if (!b || !t || !text || !workdir || nparams < 0 || (nparams && !params))
        return kf__err(ctx, KF_EUSAGE, "kf_backend_compile: bad arguments");
    if (!b->iface.compile)
        return kf__err(ctx, KF_EBACKEND, "backend %s cannot compile", b->iface.name);
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

int kf_build_eval_launches(const kf_build *b, const kf_task *t, const int64_t *sizes,
                           uint32_t lx[][7], char *err, size_t n) {
    const char *names[64];
    int64_t vals[64];
    int nv = 0;
    for (int i = 0; i < t->nsizes && nv < 64; i++, nv++) names[nv] = t->size_names[i], vals[nv] = sizes[i];
    for (int i = 0; i < b->nparams && nv < 64; i++, nv++) names[nv] = b->pnames[i], vals[nv] = b->pvals[i];
    kf_vars v = {names, vals, nv};
    static const char *const what[7] = {"grid.x", "grid.y", "grid.z", "block.x", "block.y",
                                        "block.z", "smem"};
    for (int i = 0; i < b->nlaunch; i++) {
        int64_t threads = 1;
        for (int d = 0; d < 7; d++) {
            int64_t x = d == 6 ? 0 : 1;
            char e[256];
            if (b->launch[i].dim[d] && kf_expr_eval(b->launch[i].dim[d], &v, &x, e, sizeof e)) {
                snprintf(err, n, "line %d: kforge:launch %s: %s", b->launch[i].line, what[d], e);
                return -1;
            }
            int64_t lim = d == 6 ? (int64_t)1 << 30 : d == 0 ? INT32_MAX : d < 3 ? 65535 : 1024;
            if (x < (d == 6 ? 0 : 1) || x > lim) {
                snprintf(err, n, "line %d: kforge:launch %s = %lld is out of range [%d, %lld]",
                         b->launch[i].line, what[d], (long long)x, d == 6 ? 0 : 1, (long long)lim);
                return -1;
            }
            if (d >= 3 && d < 6) threads *= x;
            lx[i][d] = (uint32_t)x;
        }
        if (threads > 1024) {
            snprintf(err, n, "line %d: kforge:launch block has %lld threads (at most 1024)",
                     b->launch[i].line, (long long)threads);
            return -1;
        }
    }
    return 0;
}

const char *kf_launch_mode_name(kf_launch_mode m) {
    static const char *const n[] = {"cpu", "kernel", "host", "graph"};
    return (unsigned)m < 4 ? n[m] : "?";
}

int kf_launch_host_timing(const kf_build *a, const kf_build *b) {
    return (a && a->host) || (b && b->host);
}

int kf_launch_fair(kf_launch_mode cand, kf_launch_mode base, int graph_known, char *why, size_t n) {
    if (n) why[0] = 0;
    if (cand == KF_MODE_GRAPH && base != KF_MODE_GRAPH) {
        snprintf(why, n, "the candidate replays a CUDA graph and the baseline is launched %s, "
                         "so the launch overhead the graph saves is not a kernel speedup",
                 base == KF_MODE_HOST ? "by its own host code (which kforge cannot capture as a graph)"
                                      : "kernel by kernel (no graph use was seen during the check)");
        return 0;
    }
    if (cand == KF_MODE_HOST && !graph_known)
        snprintf(why, n, "graph use unknown (CUPTI not available): a speedup may include launch "
                         "overhead saved by a CUDA graph");
    return 1;
}

/* Does the ELF shared object at path define `name` as an exported function? 1 yes,
 * 0 no, -1 unreadable or not a 64-bit ELF. The dynamic symbol table is what dlsym
 * sees. */
int kf__so_defines(const char *path, const char *name) {
    char *d = NULL;
    size_t n = 0;
    if (kf__read_file(path, 1u << 30, &d, &n)) return -1;
    int found = -1;
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)d;
    if (n < sizeof *eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
        eh->e_shentsize != sizeof(Elf64_Shdr) || eh->e_shoff > n ||
        (size_t)eh->e_shnum * sizeof(Elf64_Shdr) > n - eh->e_shoff)
        goto out;
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
