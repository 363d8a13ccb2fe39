/*
 * backend_test.c - the smallest complete backend, for the generic backend tests
 * (tests/test_backend.c): it proves the interface is all a backend needs. Its
 * candidates are C files ending in .tc; it "compiles" one by handing the text to the C
 * backend, and leaves every optional slot NULL, so its builds run in CPU workers with
 * the interface's defaults (caches flushed by the coordinator, the worker's clock, no
 * roofline and no ceilings, every comparison fair, no resource report or other report,
 * no dispatcher: export writes its winners alone).
 *
 * Nothing outside this folder knows it: the generic tests register it at run time
 * (kf_backend_register), and its task lives here too (sum/).
 */
#include "backend/backend.h"

#include "backend_test.h"

static kf_status test_compile(kf_backend *b, kf_ctx *ctx, const kf_task *t, const char *path,
                              const char *text, size_t len, const kf_param *params, int nparams,
                              const char *workdir, double timeout_s, kf_build *out) {
    (void)b;
    return kf_backend_compile(kf_backend_get("c"), ctx, t, path, text, len, params, nparams, workdir,
                              timeout_s, out);
}

kf_backend *kft_backend_test(void) {
    static kf_backend b = {{
                               .api_version = KF_BACKEND_API_VERSION,
                               .name = "test",
                               .ext = "tc",
                               .reference = "reference.tc",
                               .lang = "c",
                               .caps = KF_BACKEND_CPU,
                               .compile = test_compile,
                           },
                           NULL};
    return &b;
}
