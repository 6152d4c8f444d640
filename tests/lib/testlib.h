/* testlib.h - small helpers shared by the test programs, workloads and device unit tests:
 * checked driver calls, loading the test kernels' PTX, deterministic data and checksums.
 * tests layer; programs using it know nothing of cufold. */
#ifndef TESTLIB_H
#define TESTLIB_H

#include <cuda.h>
#include <stddef.h>
#include <stdint.h>

/* Abort the test program with the failing call, its location and the driver's error name. */
#define CHECK(call) tl_check((call), #call, __FILE__, __LINE__)
void tl_check(CUresult rc, const char *what, const char *file, int line);

/* cuInit, device 0, retain its primary context and make it current. */
CUcontext tl_init(void);
/* Load tests/kernels/<name>.cu's PTX (built into TEST_PTX_DIR, or $TEST_PTX_DIR). */
CUmodule tl_load_module(const char *name);
/* The PTX text of a test kernel file, NUL-terminated, malloc'd. */
char *tl_read_ptx(const char *name);
CUfunction tl_func(CUmodule mod, const char *entry);

/* Deterministic pseudo-random floats in [-1, 1) from a seed (xorshift). */
void tl_fill_random(float *p, size_t n, uint32_t seed);
/* FNV-1a over bytes: the bit-exact fingerprint programs print and tests compare. */
uint64_t tl_hash(const void *p, size_t n, uint64_t h);
#define TL_HASH_INIT 1469598103934665603ull
/* Copy n bytes of device memory to the host (synchronously) and hash them. */
uint64_t tl_hash_device(CUdeviceptr p, size_t n, uint64_t h);

/* The program's own host time per operation it enqueues, the framework code a real program runs
 * between its driver calls (PyTorch eager: 5-15 us per op). tl_app_op charges it, before each
 * call that enqueues work (app_time.h puts it in front of those calls), to the software
 * device's modeled host clock (simcuda_host_work, looked up at run time: against a real driver
 * the time is not modeled and a note says so once). The amount is APP_US (microseconds) from
 * the environment unless tl_app_set_us (the workloads' --app-us) was called before the first
 * tl_app_op. */
void tl_app_set_us(double us);
void tl_app_op(void);

#endif
