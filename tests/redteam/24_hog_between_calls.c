/* kforge-test: task=saxpy expect=no_fake_speedup threat=24 */
/* Found by a red-team pass against this checker. Defence: each worker is frozen (SIGSTOP) between its calls, so it cannot run while the other side is timed; mseal blocks the recv hook. */
/* Slowing the BASELINE from the candidate's idle time, with one thread only.
 * A constructor repoints the worker's GOT slot for recv() (RELRO page made RW:
 * allowed). Between its own calls the worker blocks in recv(); the hook
 * instead streams through a 64 MiB buffer (memory bandwidth + LLC + a CPU),
 * checking the result socket with poll(0) after every 64 KiB, and only calls
 * the real recv() once the coordinator's next RUN is waiting. So the candidate
 * hogs the machine exactly while the baseline worker is being timed, is idle
 * during its own timed calls, has no extra thread, and its in-process clock
 * agrees with the coordinator's (the RUN is noticed within ~10 us). The
 * kernel itself is the reference's loop. */
#include <poll.h>
#include <stdlib.h>
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

static ssize_t (*real_recv)(int, void *, size_t, int);
static volatile char *junk;
#define JUNK (64u << 20)

static ssize_t hook(int fd, void *buf, size_t len, int fl)
{
    if (!junk) junk = malloc(JUNK);
    static size_t pos;
    for (;;) {
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, 0) != 0) break;
        for (size_t i = 0; i < (64u << 10); i += 64) junk[(pos + i) % JUNK]++;
        pos += 64u << 10;
    }
    return real_recv(fd, buf, len, fl);
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
        if (strcmp(str + sym[ELF64_R_SYM(rel[i].r_info)].st_name, "recv")) continue;
        void **slot = (void **)(info->dlpi_addr + rel[i].r_offset);
        uintptr_t pg = (uintptr_t)slot & ~(uintptr_t)4095;
        if (mprotect((void *)pg, 4096, PROT_READ | PROT_WRITE)) return 1;
        real_recv = *slot;
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
