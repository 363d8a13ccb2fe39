/* kforge-test: task=tasks/cuda/transpose expect=rejected reason=unwritten_output threat=1 */
/*
 * Threat 1, stale output in device memory (the Sakana case): the kernel does
 * no work at all and relies on b already holding the right answer.
 *
 * Why a naive harness is fooled: a harness that runs the reference into the
 * same device buffer (or reuses the buffer of an earlier, correct call) and
 * then compares b after the candidate's launch finds the correct transpose
 * still sitting there, and times a kernel that does nothing.
 *
 * What catches it: every call stages b from the host with a fresh finite
 * sentinel (|x| in [2^124, 2^127)); the mirror starts poisoned and is
 * re-poisoned after each call; the reference runs in another process and
 * context. Every element of b still holds the sentinel: unwritten_output, on
 * every call of every shape (no element is ever written, so no other reason
 * can apply; both determinism calls fail, so nondeterministic is suppressed).
 */
// kforge:launch kernel=transpose grid=(1,1,1) block=(32,1,1)

extern "C" __global__ void transpose(const float *a, float *b, int64_t rows, int64_t cols)
{
    /* "the output is already there" */
    (void)a;
    (void)b;
    (void)rows;
    (void)cols;
}
