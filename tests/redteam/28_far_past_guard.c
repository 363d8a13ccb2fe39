/* kforge-test: task=saxpy expect=rejected reason=out_of_bounds threat=28 */
/* Threat 28, the part kept pointers do not cover: a write far past the output's guard
 * zone (at least 1 KiB of random bytes), 64 KiB past its end, into arena bytes no call
 * has staged yet. Every output element is right; the guards and the earlier calls'
 * memory are untouched. Defence: the whole writable arena of a fresh worker is poisoned
 * as memory no call has used, and verified before a later call reuses it or at the end
 * (kf_data_spent_unused). The first call's shape is small and the arena is sized for the
 * largest, so the bytes are inside the mapping. */
#include <stdint.h>

void saxpy(const float *x, const float *y, float *z, int64_t n, float a) {
    for (int64_t i = 0; i < n; i++) z[i] = a * x[i] + y[i];
    static int calls;
    if (calls++ == 0) ((volatile unsigned char *)z)[n * 4 + 65536] ^= 0x5a;
}
