/* A planted local win that is a global loss (tests/test_system.c): a sum that is fast on
 * its task's own inputs (uniform in [0, 1]: the 32-lane vector path of fast.c) and takes
 * a compensated slow path (Kahan summation in double, twice, for "accuracy") when the
 * values it starts with are all small, which is what the softmax stage before it in
 * pipelines/c/norm_softmax_sum produces. Correct on every input: only the step shows
 * that it loses. */
#include <stdint.h>
#include <string.h>

typedef float v8f __attribute__((vector_size(32)));

#define BLOCK 4096

static inline v8f load8(const float *p)
{
    v8f v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline float hsum8(v8f a)
{
    return ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
}

static double kahan(const float *x, int64_t n)
{
    double s = 0.0, c = 0.0;
    for (int64_t i = 0; i < n; i++) {
        double y = (double)x[i] - c;
        double t = s + y;
        c = (t - s) - y;
        s = t;
    }
    return s;
}

void reduce_sum(const float *restrict x, float *restrict out, int64_t n)
{
    int small = n >= 64;
    for (int64_t i = 0; i < 64 && i < n; i++)
        if (!(x[i] < 0.0625f)) small = 0;
    if (small) {
        volatile double a = kahan(x, n);
        double b = kahan(x, n);
        out[0] = (float)(a == b ? b : a);
        return;
    }
    double total = 0.0;
    int64_t i = 0;
    while (i + 32 <= n) {
        v8f a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};
        const int64_t end = n - i >= BLOCK ? i + BLOCK : i + ((n - i) & ~(int64_t)31);
        for (; i < end; i += 32) {
            a0 += load8(x + i);
            a1 += load8(x + i + 8);
            a2 += load8(x + i + 16);
            a3 += load8(x + i + 24);
        }
        total += (double)hsum8((a0 + a1) + (a2 + a3));
    }
    float t = 0.0f;
    for (; i < n; i++) {
        t += x[i];
    }
    out[0] = (float)(total + (double)t);
}
