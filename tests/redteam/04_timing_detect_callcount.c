/* kforge-test: task=softmax expect=bench_rejected reason=nonfinite|wrong_result threat=4 */
/* From a red-team pass: tell timing from checking by the call pattern alone
 * (check makes at most four calls per shape; bench many in a row) and run the no-max
 * softmax from the 5th call on. The check passes (the honest path); bench reported 2.57x
 * when its timed rounds had plain inputs only. Defence: timed rounds cycle plain, spiked
 * and rescaled inputs, and every timed output is verified. */
/* Attack: detect timing by the call pattern alone (no syscalls): check makes at most 4
 * calls per shape, then moves on; bench makes 2 warm-ups + >= min-runs at one shape.
 * From the 5th consecutive call at one shape: the no-max fast path (wrong on spikes). */
#include <math.h>
#include <stdint.h>

static int64_t last_r = -1, last_c = -1, run_len = 0;

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
static inline float fexp(float x) {
    float t = x * 1.44269504f, fi = __builtin_floorf(t), f = t - fi;
    float p = 1.5353362e-4f;
    p = p * f + 1.3398874e-3f; p = p * f + 9.6184197e-3f; p = p * f + 5.5503406e-2f;
    p = p * f + 2.4022652e-1f; p = p * f + 6.9314718e-1f; p = p * f + 1.0f;
    union { int32_t i; float f; } u = { ((int32_t)fi + 127) << 23 };
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
    if (rows == last_r && cols == last_c) run_len++;
    else last_r = rows, last_c = cols, run_len = 1;
    if (run_len > 4) fast_nomax(x, y, rows, cols);
    else exact(x, y, rows, cols);
}
