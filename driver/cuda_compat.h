/* cuda_compat.h - cuda.h plus the legacy (_v1) types that cuda_api.def's oldest ABIs name but
 * cuda.h declares only for the driver's own build. driver layer.
 *
 * The structs are used only through pointers, so an incomplete declaration is exact; the
 * typedefs repeat cuda.h's own (C11 allows the repeat when cuda.h already declared them). */
#ifndef DRIVER_CUDA_COMPAT_H
#define DRIVER_CUDA_COMPAT_H

#include <cuda.h>

typedef unsigned int CUdeviceptr_v1;                                  /* cuda.h: 32-bit device pointer */
typedef struct CUDA_MEMCPY2D_v1_st CUDA_MEMCPY2D_v1;                  /* 32-bit 2-D copy */
typedef struct CUDA_MEMCPY3D_v1_st CUDA_MEMCPY3D_v1;                  /* 32-bit 3-D copy */
typedef struct CUDA_ARRAY_DESCRIPTOR_v1_st CUDA_ARRAY_DESCRIPTOR_v1;  /* 32-bit array descriptor */
typedef struct CUDA_ARRAY3D_DESCRIPTOR_v1_st CUDA_ARRAY3D_DESCRIPTOR_v1; /* 32-bit 3-D descriptor */

#endif
