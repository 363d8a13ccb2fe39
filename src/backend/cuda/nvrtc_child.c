/*
 * nvrtc_child.c - kforge-worker's compile mode: one NVRTC compile in a process of its
 * own, so that the coordinator can bound it in time and confine what it reads.
 *
 * The coordinator runs it through kf_sandbox_exec (its own session, rlimits, Landlock:
 * the toolkit and the system libraries read-only, its private build directory
 * read-write, nothing else), with KFORGE_NVRTC naming the library to load:
 *
 *     kforge-worker --nvrtc SRC NAME CUBIN LOG OPTION...
 *
 * It compiles the text in SRC (the prelude and the candidate, as one program called
 * NAME, for messages) with the options, writes NVRTC's log to LOG and, when the
 * compile succeeded, the cubin to CUBIN. Exit 0: built; 1: NVRTC refused the program
 * (the log says why); 3: the child itself failed (a message on stderr). A kernel that
 * makes NVRTC run too long is the coordinator's to kill: this process holds nothing
 * that outlives it.
 */
#define _GNU_SOURCE
#include "cuda_api.h"
#include "modes.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SRC_CAP (16u << 20)

static int put(const char *path, const void *data, size_t n) {
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) return -1;
    size_t off = 0;
    while (off < n) {
        ssize_t w = write(fd, (const char *)data + off, n - off);
        if (w <= 0) break;
        off += (size_t)w;
    }
    return close(fd) || off != n ? -1 : 0;
}

int kf_nvrtc_child_main(int argc, char **argv) {
    if (argc < 6 || argc > 6 + 64) {
        fprintf(stderr, "kforge-worker --nvrtc: bad arguments\n");
        return 3;
    }
    char err[512];
    const kf_nvrtc_api *rtc = kf_nvrtc_load(err, sizeof err);
    if (!rtc) {
        fprintf(stderr, "kforge-worker --nvrtc: %s\n", err);
        return 3;
    }
    int fd = open(argv[2], O_RDONLY | O_CLOEXEC);
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) || sb.st_size < 0 || (size_t)sb.st_size > SRC_CAP) {
        fprintf(stderr, "kforge-worker --nvrtc: cannot read %s\n", argv[2]);
        return 3;
    }
    char *src = malloc((size_t)sb.st_size + 1);
    if (!src || read(fd, src, (size_t)sb.st_size) != sb.st_size) {
        fprintf(stderr, "kforge-worker --nvrtc: cannot read %s\n", argv[2]);
        return 3;
    }
    close(fd);
    src[sb.st_size] = 0;
    nvrtcProgram prog = NULL;
    int rc = rtc->CreateProgram(&prog, src, argv[3], 0, NULL, NULL);
    if (rc) {
        fprintf(stderr, "nvrtcCreateProgram: %s\n", rtc->GetErrorString(rc));
        return 3;
    }
    rc = rtc->CompileProgram(prog, argc - 6, (const char *const *)argv + 6);
    size_t ls = 0;
    rtc->GetProgramLogSize(prog, &ls);
    char *log = calloc(1, ls + 1);
    if (!log || (ls && rtc->GetProgramLog(prog, log)) || put(argv[5], log, strlen(log))) {
        fprintf(stderr, "kforge-worker --nvrtc: cannot write the log\n");
        return 3;
    }
    if (rc) return 1;
    size_t cs = 0;
    rtc->GetCUBINSize(prog, &cs);
    char *cubin = malloc(cs ? cs : 1);
    if (!cubin || rtc->GetCUBIN(prog, cubin) || put(argv[4], cubin, cs)) {
        fprintf(stderr, "kforge-worker --nvrtc: nvrtcGetCUBIN failed or the cubin cannot be written\n");
        return 3;
    }
    return 0;
}
