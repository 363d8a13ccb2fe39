/* Fast transpose: 64-row x 16-column cache tiles of 8x8 in-register GCC-vector shuffle transposes, scalar edges. */
#include <stdint.h>
#include <string.h>

typedef float v8f __attribute__((vector_size(32)));
typedef int32_t v8i __attribute__((vector_size(32)));

#define TILE_R 64 /* rows of a per tile */
#define TILE_C 16 /* columns of a per tile */

/* Two-input 8-lane shuffle with constant indices (lane i < 8 from x, 8 + i from y). */
#if defined(__clang__)
#define SHUF8(x, y, ...) __builtin_shufflevector(x, y, __VA_ARGS__)
#else
#define SHUF8(x, y, ...) __builtin_shuffle(x, y, (v8i){__VA_ARGS__})
#endif

static inline v8f load8(const float *p)
{
    v8f v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline void store8(float *p, v8f v)
{
    memcpy(p, &v, sizeof v);
}

/* dst[c * ds + r] = src[r * ss + c] for r, c in [0, 8). */
static inline void transpose8x8(const float *restrict src, int64_t ss,
                                float *restrict dst, int64_t ds)
{
    v8f r0 = load8(src + 0 * ss), r1 = load8(src + 1 * ss);
    v8f r2 = load8(src + 2 * ss), r3 = load8(src + 3 * ss);
    v8f r4 = load8(src + 4 * ss), r5 = load8(src + 5 * ss);
    v8f r6 = load8(src + 6 * ss), r7 = load8(src + 7 * ss);

    v8f t0 = SHUF8(r0, r1, 0, 8, 1, 9, 4, 12, 5, 13);
    v8f t1 = SHUF8(r0, r1, 2, 10, 3, 11, 6, 14, 7, 15);
    v8f t2 = SHUF8(r2, r3, 0, 8, 1, 9, 4, 12, 5, 13);
    v8f t3 = SHUF8(r2, r3, 2, 10, 3, 11, 6, 14, 7, 15);
    v8f t4 = SHUF8(r4, r5, 0, 8, 1, 9, 4, 12, 5, 13);
    v8f t5 = SHUF8(r4, r5, 2, 10, 3, 11, 6, 14, 7, 15);
    v8f t6 = SHUF8(r6, r7, 0, 8, 1, 9, 4, 12, 5, 13);
    v8f t7 = SHUF8(r6, r7, 2, 10, 3, 11, 6, 14, 7, 15);

    v8f u0 = SHUF8(t0, t2, 0, 1, 8, 9, 4, 5, 12, 13);
    v8f u1 = SHUF8(t0, t2, 2, 3, 10, 11, 6, 7, 14, 15);
    v8f u2 = SHUF8(t1, t3, 0, 1, 8, 9, 4, 5, 12, 13);
    v8f u3 = SHUF8(t1, t3, 2, 3, 10, 11, 6, 7, 14, 15);
    v8f u4 = SHUF8(t4, t6, 0, 1, 8, 9, 4, 5, 12, 13);
    v8f u5 = SHUF8(t4, t6, 2, 3, 10, 11, 6, 7, 14, 15);
    v8f u6 = SHUF8(t5, t7, 0, 1, 8, 9, 4, 5, 12, 13);
    v8f u7 = SHUF8(t5, t7, 2, 3, 10, 11, 6, 7, 14, 15);

    store8(dst + 0 * ds, SHUF8(u0, u4, 0, 1, 2, 3, 8, 9, 10, 11));
    store8(dst + 1 * ds, SHUF8(u1, u5, 0, 1, 2, 3, 8, 9, 10, 11));
    store8(dst + 2 * ds, SHUF8(u2, u6, 0, 1, 2, 3, 8, 9, 10, 11));
    store8(dst + 3 * ds, SHUF8(u3, u7, 0, 1, 2, 3, 8, 9, 10, 11));
    store8(dst + 4 * ds, SHUF8(u0, u4, 4, 5, 6, 7, 12, 13, 14, 15));
    store8(dst + 5 * ds, SHUF8(u1, u5, 4, 5, 6, 7, 12, 13, 14, 15));
    store8(dst + 6 * ds, SHUF8(u2, u6, 4, 5, 6, 7, 12, 13, 14, 15));
    store8(dst + 7 * ds, SHUF8(u3, u7, 4, 5, 6, 7, 12, 13, 14, 15));
}

void transpose(const float *restrict a, float *restrict b, int64_t rows, int64_t cols)
{
    const int64_t r8 = rows - rows % 8;
    const int64_t c8 = cols - cols % 8;

    for (int64_t i0 = 0; i0 < r8; i0 += TILE_R) {
        int64_t i1 = i0 + TILE_R < r8 ? i0 + TILE_R : r8;
        for (int64_t j0 = 0; j0 < c8; j0 += TILE_C) {
            int64_t j1 = j0 + TILE_C < c8 ? j0 + TILE_C : c8;
            for (int64_t i = i0; i < i1; i += 8) {
                for (int64_t j = j0; j < j1; j += 8) {
                    transpose8x8(a + i * cols + j, cols, b + j * rows + i, rows);
                }
            }
        }
    }
    /* Right edge: columns [c8, cols) of every row. */
    for (int64_t j = c8; j < cols; j++) {
        for (int64_t i = 0; i < rows; i++) {
            b[j * rows + i] = a[i * cols + j];
        }
    }
    /* Bottom edge: rows [r8, rows) of the first c8 columns. */
    for (int64_t i = r8; i < rows; i++) {
        for (int64_t j = 0; j < c8; j++) {
            b[j * rows + i] = a[i * cols + j];
        }
    }
}
