/* kforge-test: task=sum expect=rejected reason=wrong_result threat=32 */
/* From a red team against the parallel checking calls: the bundled fast kernel, except
 * that at every n other than the two visible ones it drops the last 1/64 of the input
 * whenever it runs with ONE CPU in its affinity mask, is not the process's first call,
 * and its input holds no subnormal and no -0.0. On a 2-CPU machine the one-CPU checking
 * calls were the worker's first and T1 (always salted with subnormals), so the wrong
 * branch never ran under check (accepted 10 of 10), and bench times only the visible
 * shapes (a 2.99x win). A process pinned to one core runs it. Defence: the solo call,
 * the plain call of every shape after the first on one CPU half the time, drawn in
 * secret (docs/checker.md "Races"). */
#define _GNU_SOURCE
#include <math.h>
#include <sched.h>
/* Fast sum: 4 x 8-lane GCC-vector float accumulators (32 partial sums) over blocks of
 * 4096 elements, each block's partials tree-combined and added into a double; scalar tail.
 * The blocks bound what a float lane holds (at most 128 elements of the block), so its
 * rounding stays near 1e-5 of the sum whatever the values: one float accumulator per lane
 * over the whole input lost 472 of 524760 (tolerance 52) on 2^20 values in [0, 1] with
 * the large ones first (the checker's two-level inputs). */
#include <stdint.h>
#include <string.h>

typedef float v8f __attribute__((vector_size(32)));

#define BLOCK 4096 /* a multiple of 32 */

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

static void sum_fast(const float *restrict x, float *restrict out, int64_t n)
{
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

static long ncalls;

static int salted(const float *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        float v = x[i];
        if (v == 0.0f ? signbit(v) : fabsf(v) < 1.17549435e-38f) return 1;
    }
    return 0;
}

void reduce_sum(const float *restrict x, float *restrict out, int64_t n)
{
    int first = ncalls++ == 0;
    if (first || n == 262144 || n == 5003) { sum_fast(x, out, n); return; }
    cpu_set_t cs;
    int ncpu = sched_getaffinity(0, sizeof cs, &cs) == 0 ? CPU_COUNT(&cs) : 2;
    if (ncpu != 1 || salted(x, n)) { sum_fast(x, out, n); return; }
    sum_fast(x, out, n - n / 64);
}
