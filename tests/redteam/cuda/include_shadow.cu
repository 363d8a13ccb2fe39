/* kforge-test: task=tasks/cuda/sum expect=rejected reason=compile_error threat=22 */
/*
 * Threat 22 (and 18), reading files through the compiler: the candidate asks
 * NVRTC to include a file outside its text. Here it is /etc/shadow; the same
 * mechanism with a relative path would reach a task's reference kernel or
 * an earlier candidate's source.
 *
 * Why a naive harness is fooled: compilers read whatever the build process
 * can read; a harness that compiles as root (or as a user who can read the
 * task directory) leaks the file into the compile log shown to the agent,
 * or compiles the reference into the candidate.
 *
 * Expected verdict: compile_error in every case: either the file cannot be
 * opened ("cannot open source file"), or it can and its text is not C++.
 * NOTE for the defence: in kernel mode NVRTC runs inside the coordinator
 * without Landlock, so whether the log quotes the file depends only on the
 * coordinator's privileges; the test checks the reason, not the log.
 */
#include "/etc/shadow"
// kforge:launch kernel=reduce_sum grid=(1,1,1) block=(1,1,1)

extern "C" __global__ void reduce_sum(const float *x, float *out, int64_t n)
{
    out[0] = 0.0f;
}
