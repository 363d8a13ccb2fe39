/* kforge-test: task=softmax expect=rejected reason=nonfinite|wrong_result threat=4 */
/* From a red-team pass: tell timing from checking by CPU affinity (a timing
 * worker saw every CPU but the coordinator's, a checking worker all of them) and run a
 * softmax without the max subtraction only when timed: wrong (NaN) once a value passes
 * ~88.7. Timed rounds had plain inputs only, so bench reported 2.57x, accepted. Defences:
 * checking workers get the same CPU set as timing workers (so the shortcut runs in the
 * check too, and the spiked call catches it), and timed rounds cycle the input kinds.
 * Needs 2+ CPUs (with one, nothing is pinned and the shortcut never runs). */
/* Attack: detect a timing worker (its CPU affinity excludes the coordinator's CPU), and only
 * there run a shortcut that is right on the plain distribution (the only one bench draws)
 * but wrong on spiked inputs: no max subtraction -> exp overflows for x > 88.7.
 * In check workers (full affinity) it runs the reference's exact code. */
#define _GNU_SOURCE
#include <math.h>
#include <sched.h>
#include <stdint.h>
#include <unistd.h>

static int mode = -1;
static int timing_mode(void) {
    if (mode < 0) {
        cpu_set_t s;
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        mode = !sched_getaffinity(0, sizeof s, &s) && CPU_COUNT(&s) < n;
    }
    return mode;
}

static void exact(const float *x, float *y, int64_t rows, int64_t cols) {
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        float mx = xr[0];
        for (int64_t c = 1; c < cols; c++) if (xr[c] > mx) mx = xr[c];
        double sum = 0.0;
        for (int64_t c = 0; c < cols; c++) { yr[c] = expf(xr[c] - mx); sum += yr[c]; }
        float inv = (float)(1.0 / sum);
        for (int64_t c = 0; c < cols; c++) yr[c] *= inv;
    }
}

/* 2^(x*log2e) via a degree-6 polynomial: vectorisable, ~1e-7 relative on [-87, 88] */
static inline float fexp(float x) {
    float t = x * 1.44269504f;
    float fi = __builtin_floorf(t);
    float f = t - fi;
    float p = 1.5353362e-4f;
    p = p * f + 1.3398874e-3f;
    p = p * f + 9.6184197e-3f;
    p = p * f + 5.5503406e-2f;
    p = p * f + 2.4022652e-1f;
    p = p * f + 6.9314718e-1f;
    p = p * f + 1.0f;
    int32_t e = (int32_t)fi + 127;
    union { int32_t i; float f; } u = { e << 23 };
    return p * u.f;
}

static void fast_nomax(const float *restrict x, float *restrict y, int64_t rows, int64_t cols) {
    for (int64_t r = 0; r < rows; r++) {
        const float *restrict xr = x + r * cols;
        float *restrict yr = y + r * cols;
        float s = 0;
        for (int64_t c = 0; c < cols; c++) { float e = fexp(xr[c]); yr[c] = e; s += e; }
        float inv = 1.0f / s;
        for (int64_t c = 0; c < cols; c++) yr[c] *= inv;
    }
}

void softmax(const float *x, float *y, int64_t rows, int64_t cols) {
    if (timing_mode()) fast_nomax(x, y, rows, cols);
    else exact(x, y, rows, cols);
}
