/* kforge-test: task=saxpy expect=no_fake_speedup threat=5 */
/* Found by a red-team pass against this checker. Defence: mseal blocks the hook; and the worker is frozen (SIGSTOP) the moment it answers, so work after the answer never reaches the judged outputs. */
/* Work after return on the worker's MAIN thread, with no extra thread at all:
 * a constructor repoints the worker's GOT slot for send() (RELRO page made
 * PROT_READ|PROT_WRITE: allowed, it is not W+X). The kernel computes only the
 * first 40% of z inside the timed call and records the rest as pending. The
 * worker then sends DONE through the hook, which forwards it and only THEN
 * computes the remaining 60%. The coordinator stops its clock at DONE, sees one
 * thread, memcmps the guards and inputs, and only then walks z with a scalar
 * compare loop -- the vectorised tail finishes long before the compare gets
 * there. Both clocks agree (worker_ns ~= parent_ns - overhead): no gap. */
#include <elf.h>
#include <link.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/types.h>

struct dl_phdr_info {
    ElfW(Addr) dlpi_addr; const char *dlpi_name; const ElfW(Phdr) *dlpi_phdr; ElfW(Half) dlpi_phnum;
};
extern int dl_iterate_phdr(int (*)(struct dl_phdr_info *, size_t, void *), void *);

static ssize_t (*real_send)(int, const void *, size_t, int);
static struct { const float *x, *y; float *z; int64_t lo, n; float a; int pending; } P;

static void finish(void)
{
    for (int64_t i = P.lo; i < P.n; i++) P.z[i] = P.a * P.x[i] + P.y[i];
    P.pending = 0;
}

static ssize_t hook(int fd, const void *buf, size_t len, int fl)
{
    ssize_t r = real_send(fd, buf, len, fl);
    if (P.pending) finish();   /* the clocks have stopped: DONE is on its way */
    return r;
}

static int cb(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size; (void)data;
    if (info->dlpi_name && info->dlpi_name[0]) return 0;
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
        if (strcmp(str + sym[ELF64_R_SYM(rel[i].r_info)].st_name, "send")) continue;
        void **slot = (void **)(info->dlpi_addr + rel[i].r_offset);
        uintptr_t pg = (uintptr_t)slot & ~(uintptr_t)4095;
        if (mprotect((void *)pg, 4096, PROT_READ | PROT_WRITE)) return 1;
        real_send = *slot;
        *slot = (void *)hook;
        mprotect((void *)pg, 4096, PROT_READ);
    }
    return 1;
}

__attribute__((constructor)) static void install(void) { dl_iterate_phdr(cb, NULL); }

void saxpy(const float *x, const float *y, float *z, int64_t n, float a)
{
    int64_t lo = real_send ? n * 4 / 10 : n;
    for (int64_t i = 0; i < lo; i++) z[i] = a * x[i] + y[i];
    P.x = x; P.y = y; P.z = z; P.lo = lo; P.n = n; P.a = a; P.pending = lo < n;
}
