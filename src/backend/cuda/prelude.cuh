/* kforge's CUDA prelude: put before every kernel-mode candidate and reference (NVRTC),
 * once, so a kernel file needs no includes of its own. It defines no macro of its own:
 * a kernel cannot tell it is being checked by looking for one (only what a user's own
 * build would have too: the fixed-width types and the 16-bit float headers). */
typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef long long int64_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
#include <cuda_fp16.h>
#include <cuda_bf16.h>
