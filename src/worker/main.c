/*
 * main.c - kforge-worker's entry: the one file that knows every mode of the trusted
 * runner, and picks one from the arguments.
 *
 *   --nvrtc ...          the CUDA backend's NVRTC compile child (backend/cuda/modes.h),
 *                        started already confined by kf_sandbox_exec;
 *   a GPU artifact, "-"  the CUDA backend's GPU worker (a deferred one for "-");
 *   anything else        the CPU worker (sandbox/worker_main.c), which loads a shared
 *                        object and calls its entry.
 *
 * Every mode but the compile child starts the same way (kf_wk_start: arguments, parent
 * check, descriptors, arena, CPUs) before it applies its own confinement. The modes sit
 * in the sandbox and in the backends; this file is above both, so neither has to name
 * the other.
 */
#include "../backend/cuda/modes.h"
#include "../sandbox/worker.h"

#include <string.h>

int main(int argc, char **argv) {
    /* compile mode: started by kf_sandbox_exec, which has already confined it; it runs
     * no candidate code, only NVRTC on candidate text */
    if (argc >= 2 && !strcmp(argv[1], "--nvrtc")) return kf_nvrtc_child_main(argc, argv);
    const char *entry = NULL;
    kf_wk_arena a;
    int rc = kf_wk_start(&argc, &argv, &entry, &a);
    if (rc) return rc;
    /* A GPU kernel-mode artifact: no candidate host code at all; the GPU worker sets up
     * the device before it drops root (the device files must be opened first) */
    if (!strcmp(argv[1], "-") || kf_wk_is_gpu_artifact(argv[1])) /* "-": a deferred GPU worker */
        return kf_gpu_worker_main(argv, a.base, a.size);
    return kf_wk_cpu_main(argv, entry, &a);
}
