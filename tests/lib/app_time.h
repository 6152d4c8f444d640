/* app_time.h - the program's own host time in front of every call that enqueues work: include
 * after cuda.h and testlib.h in a program (never in a library), and each such call is preceded
 * by tl_app_op() (testlib.h: --app-us / APP_US, charged to the software device's modeled host
 * clock). tests layer.
 *
 * Why macros: a workload enqueues from some fifty places; one list here covers them all, and any
 * added later, so no call can be left uncharged by accident. The names are those the calls
 * resolve to without the per-thread default stream (cuda.h turns cuMemcpyHtoD into
 * cuMemcpyHtoD_v2, and so on); a program built with it would need the _ptsz/_ptds names here.
 * Function-like macros apply only where the name is called, and the expansion's own call is not
 * expanded again, so the driver is still what is called. */
#ifndef APP_TIME_H
#define APP_TIME_H

#include <cuda.h>

#include "testlib.h"

/* launches, the program's own graphs and host functions */
#define cuLaunchKernel(...) (tl_app_op(), cuLaunchKernel(__VA_ARGS__))
#define cuLaunchKernelEx(...) (tl_app_op(), cuLaunchKernelEx(__VA_ARGS__))
#define cuLaunchCooperativeKernel(...) (tl_app_op(), cuLaunchCooperativeKernel(__VA_ARGS__))
#define cuLaunchHostFunc(...) (tl_app_op(), cuLaunchHostFunc(__VA_ARGS__))
#define cuGraphLaunch(...) (tl_app_op(), cuGraphLaunch(__VA_ARGS__))
/* events */
#define cuEventRecord(...) (tl_app_op(), cuEventRecord(__VA_ARGS__))
#define cuEventRecordWithFlags(...) (tl_app_op(), cuEventRecordWithFlags(__VA_ARGS__))
#define cuStreamWaitEvent(...) (tl_app_op(), cuStreamWaitEvent(__VA_ARGS__))
/* copies */
#define cuMemcpy(...) (tl_app_op(), cuMemcpy(__VA_ARGS__))
#define cuMemcpyAsync(...) (tl_app_op(), cuMemcpyAsync(__VA_ARGS__))
#define cuMemcpyHtoD_v2(...) (tl_app_op(), cuMemcpyHtoD_v2(__VA_ARGS__))
#define cuMemcpyDtoH_v2(...) (tl_app_op(), cuMemcpyDtoH_v2(__VA_ARGS__))
#define cuMemcpyDtoD_v2(...) (tl_app_op(), cuMemcpyDtoD_v2(__VA_ARGS__))
#define cuMemcpyHtoDAsync_v2(...) (tl_app_op(), cuMemcpyHtoDAsync_v2(__VA_ARGS__))
#define cuMemcpyDtoHAsync_v2(...) (tl_app_op(), cuMemcpyDtoHAsync_v2(__VA_ARGS__))
#define cuMemcpyDtoDAsync_v2(...) (tl_app_op(), cuMemcpyDtoDAsync_v2(__VA_ARGS__))
#define cuMemcpy2D_v2(...) (tl_app_op(), cuMemcpy2D_v2(__VA_ARGS__))
#define cuMemcpy2DUnaligned_v2(...) (tl_app_op(), cuMemcpy2DUnaligned_v2(__VA_ARGS__))
#define cuMemcpy2DAsync_v2(...) (tl_app_op(), cuMemcpy2DAsync_v2(__VA_ARGS__))
#define cuMemcpy3D_v2(...) (tl_app_op(), cuMemcpy3D_v2(__VA_ARGS__))
#define cuMemcpy3DAsync_v2(...) (tl_app_op(), cuMemcpy3DAsync_v2(__VA_ARGS__))
#define cuMemcpyPeer(...) (tl_app_op(), cuMemcpyPeer(__VA_ARGS__))
#define cuMemcpyPeerAsync(...) (tl_app_op(), cuMemcpyPeerAsync(__VA_ARGS__))
/* memsets */
#define cuMemsetD8_v2(...) (tl_app_op(), cuMemsetD8_v2(__VA_ARGS__))
#define cuMemsetD16_v2(...) (tl_app_op(), cuMemsetD16_v2(__VA_ARGS__))
#define cuMemsetD32_v2(...) (tl_app_op(), cuMemsetD32_v2(__VA_ARGS__))
#define cuMemsetD2D8_v2(...) (tl_app_op(), cuMemsetD2D8_v2(__VA_ARGS__))
#define cuMemsetD2D16_v2(...) (tl_app_op(), cuMemsetD2D16_v2(__VA_ARGS__))
#define cuMemsetD2D32_v2(...) (tl_app_op(), cuMemsetD2D32_v2(__VA_ARGS__))
#define cuMemsetD8Async(...) (tl_app_op(), cuMemsetD8Async(__VA_ARGS__))
#define cuMemsetD16Async(...) (tl_app_op(), cuMemsetD16Async(__VA_ARGS__))
#define cuMemsetD32Async(...) (tl_app_op(), cuMemsetD32Async(__VA_ARGS__))
#define cuMemsetD2D8Async(...) (tl_app_op(), cuMemsetD2D8Async(__VA_ARGS__))
#define cuMemsetD2D16Async(...) (tl_app_op(), cuMemsetD2D16Async(__VA_ARGS__))
#define cuMemsetD2D32Async(...) (tl_app_op(), cuMemsetD2D32Async(__VA_ARGS__))

#endif
