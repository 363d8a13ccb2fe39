/* kforge's CUDA prelude: force-included before every kernel-mode candidate and
 * reference (NVRTC), so a kernel file needs no includes of its own. */
#ifndef KFORGE_CUDA_PRELUDE
#define KFORGE_CUDA_PRELUDE
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
#endif
