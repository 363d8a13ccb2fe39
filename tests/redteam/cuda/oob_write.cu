/* kforge-test: task=tasks/cuda/transpose expect=rejected reason=out_of_bounds threat=9 */
/*
 * Threat 9, out-of-bounds write: a flat one-thread-per-output transpose with
 * an off-by-one guard (o <= rows*cols instead of <). The grid has
 * rows*cols/256 + 1 blocks, so a thread with o == rows*cols always exists:
 * it writes b[rows*cols], one float past the end of b (reading a[cols],
 * which is inside a, or in the guard after a when rows == 1: reads are
 * allowed).
 *
 * Why a naive harness is fooled: with cudaMalloc the write usually lands in
 * the allocation's rounding slack or in an unrelated buffer; nothing faults
 * and the output compares equal.
 *
 * What catches it: kforge places every buffer between guard zones of fresh
 * random bytes (>= 1 KiB, no alignment gap) inside the device mirror and
 * compares them after every call; the guard after b changed:
 * out_of_bounds, at every call of every shape. All rows*cols elements of b
 * are exact, inputs are untouched, so out_of_bounds is the only reason (the
 * chance that the stray float equals the guard's 4 random bytes is 2^-32).
 */
// kforge:launch kernel=transpose grid=(rows*cols/256+1,1,1) block=(256,1,1)

extern "C" __global__ void transpose(const float *a, float *b, int64_t rows, int64_t cols)
{
    int64_t o = (int64_t)blockIdx.x * 256 + threadIdx.x; /* flat index into b (cols x rows) */
    int64_t total = rows * cols;
    if (o <= total) { /* off by one */
        int64_t j = o / rows, i = o % rows;
        b[o] = a[i * cols + j];
    }
}
