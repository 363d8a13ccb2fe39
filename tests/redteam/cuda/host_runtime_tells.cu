/* kforge-test: task=tasks/cuda/sum expect=rejected reason=wrong_result threat=31 */
/*
 * Threat 31 in CUDA host mode: a kernel right only when it can tell kforge runs it.
 * kforge once force-included its header kf_host.h (found by __has_include), put a shim
 * kforge_host_call__ into the object (a weak reference to it was non-null), started the
 * GPU worker as "kforge-worker" with eight arguments, loaded the object from a memfd
 * named "kforge-candidate", and passed KFORGE_ variables in its environment. Any of
 * these takes the "checker" branch here; in a user's program the result is off by one.
 * kforge now builds the file as a user would, calls kforge_launch itself, and runs an
 * anonymous worker: the user's branch runs: wrong_result. (This file's own name must
 * not name the checker, as its object is named after it, as a user's build names it.)
 */
// kforge:host
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/prctl.h>
#include <unistd.h>

#if __has_include("kf_host.h")
#define KF_HEADER 1
#else
#define KF_HEADER 0
#endif

extern "C" int kforge_host_call__(void *const *, const int64_t *, const double *, void *) __attribute__((weak));
extern char **environ;

static int under_checker(void)
{
    if (KF_HEADER || kforge_host_call__) return 1;
    char comm[17] = "";
    prctl(PR_GET_NAME, comm);
    const char *exe = (const char *)getauxval(AT_EXECFN);
    Dl_info di;
    const char *so = dladdr((void *)under_checker, &di) && di.dli_fname ? di.dli_fname : "";
    if (strstr(comm, "kforge") || strstr(program_invocation_name, "kforge") || (exe && strstr(exe, "kforge")) ||
        strstr(so, "kforge") || strstr(so, "candidate.so") || strstr(so, "/proc/self/fd") || !environ || !environ[0])
        return 1;
    for (char **e = environ; *e; e++)
        if (strstr(*e, "KFORGE") || strstr(*e, "kforge")) return 1;
    /* more than a name on the command line */
    char cl[4096];
    int fd = open("/proc/self/cmdline", O_RDONLY);
    ssize_t n = fd >= 0 ? read(fd, cl, sizeof cl) : -1;
    if (fd >= 0) close(fd);
    if (n > 0 && memchr(cl, 0, (size_t)n) && (char *)memchr(cl, 0, (size_t)n) + 1 < cl + n) return 1;
    return 0;
}

/* one block, double accumulators: exact enough for any n the task allows */
__global__ void sum_one_block(const float *x, float *out, int64_t n, float extra)
{
    __shared__ double red[1024];
    double a = 0.0;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) a += x[i];
    red[threadIdx.x] = a;
    __syncthreads();
    for (int s = 512; s > 0; s >>= 1) {
        if ((int)threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[0] = (float)red[0] + extra;
}

extern "C" int kforge_launch(const float *x, float *out, int64_t n, cudaStream_t stream)
{
    static int checked = -1;
    if (checked < 0) checked = under_checker();
    sum_one_block<<<1, 1024, 0, stream>>>(x, out, n, checked ? 0.0f : 1.0f);
    return 0;
}
