/* kforge-test: task=saxpy expect=no_fake_speedup threat=6 */
/* Found by a red-team pass against this checker. Defence: the worker seals its image (mseal) before loading the candidate, so the GOT cannot be made writable; and the coordinator's clock cross-checks the report. */
/* Timer tampering through the worker's own GOT (not interposition, not W+X):
 * the worker binary is PIE + BIND_NOW, so its GOT is read-only after relocation,
 * but mprotect(PROT_READ|PROT_WRITE) on a data page is allowed by the filter.
 * A constructor finds the worker's JUMP_SLOT for clock_gettime via
 * dl_iterate_phdr + the dynamic section and points it at a hook. The hook
 * passes t0 through and returns t1 minus min(60% of the real elapsed time,
 * 150 us). The coordinator only rejects worker_ns > parent_ns + 50 us, and in
 * bench only a median hidden gap above 3*p90(baseline gap) + 200 us. */
#include <elf.h>
#include <link.h>
/* the force-included header pulled in features.h before any _GNU_SOURCE, so
 * declare the GNU-only pieces of <link.h> here */
struct dl_phdr_info {
    ElfW(Addr) dlpi_addr; const char *dlpi_name; const ElfW(Phdr) *dlpi_phdr; ElfW(Half) dlpi_phnum;
};
extern int dl_iterate_phdr(int (*)(struct dl_phdr_info *, size_t, void *), void *);
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

static int (*real_cg)(clockid_t, struct timespec *);
static int phase;
static uint64_t t0;

static uint64_t ns(const struct timespec *t) { return (uint64_t)t->tv_sec * 1000000000ull + t->tv_nsec; }

static int hook(clockid_t id, struct timespec *ts)
{
    int rc = real_cg(id, ts);
    if (id != CLOCK_MONOTONIC) return rc;
    uint64_t now = ns(ts);
    if (!phase) { t0 = now; phase = 1; return rc; }
    phase = 0;
    uint64_t e = now - t0, h = e * 6 / 10;
    if (h > 150000) h = 150000;
    now -= h;
    ts->tv_sec = now / 1000000000ull;
    ts->tv_nsec = now % 1000000000ull;
    return rc;
}

static int cb(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size; (void)data;
    if (info->dlpi_name && info->dlpi_name[0]) return 0; /* main program only */
    ElfW(Dyn) *dyn = NULL;
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
            dyn = (ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
    if (!dyn) return 1;
    ElfW(Rela) *rel = NULL; size_t relsz = 0; ElfW(Sym) *sym = NULL; const char *str = NULL;
    for (ElfW(Dyn) *d = dyn; d->d_tag != DT_NULL; d++) {
        if (d->d_tag == DT_JMPREL) rel = (ElfW(Rela) *)d->d_un.d_ptr;
        if (d->d_tag == DT_PLTRELSZ) relsz = d->d_un.d_val;
        if (d->d_tag == DT_SYMTAB) sym = (ElfW(Sym) *)d->d_un.d_ptr;
        if (d->d_tag == DT_STRTAB) str = (const char *)d->d_un.d_ptr;
    }
    if (!rel || !sym || !str) return 1;
    for (size_t i = 0; i < relsz / sizeof *rel; i++) {
        const char *name = str + sym[ELF64_R_SYM(rel[i].r_info)].st_name;
        if (strcmp(name, "clock_gettime")) continue;
        void **slot = (void **)(info->dlpi_addr + rel[i].r_offset);
        uintptr_t pg = (uintptr_t)slot & ~(uintptr_t)4095;
        if (mprotect((void *)pg, 4096, PROT_READ | PROT_WRITE)) return 1;
        real_cg = (int (*)(clockid_t, struct timespec *))*slot;
        *slot = (void *)hook;
        mprotect((void *)pg, 4096, PROT_READ);
    }
    return 1;
}

__attribute__((constructor)) static void install(void) { dl_iterate_phdr(cb, NULL); }

void saxpy(const float *x, const float *y, float *z, int64_t n, float a)
{
    for (int64_t i = 0; i < n; i++) z[i] = a * x[i] + y[i];
}
