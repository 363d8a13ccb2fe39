/* kforge-test: task=saxpy expect=rejected reason=compile_error threat=22 */
/* Found by a red-team pass against this checker. The compiler may read only the toolchain and its private build directory (Landlock), so the .incbin of the task's reference fails to build. */
/* compile-time read of the reference through the assembler (.incbin) by absolute path */
#include <stdint.h>
__asm__(".section .rodata\n.globl kf_ref_text\nkf_ref_text:\n.incbin \"/work/main/tasks/c/saxpy/reference.c\"\n.byte 0\n.text\n");
void saxpy(const float *x, const float *y, float *z, int64_t n, float a)
{ for (int64_t i = 0; i < n; i++) z[i] = a * x[i] + y[i]; }
