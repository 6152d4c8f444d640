/* kernels.h - cufold's own kernels (the .cu files of rewrite/kernels) as embedded PTX, and their module
 * loaded once per context through the real driver. rewrite layer.
 *
 * The kernels and their tables are described in rewrite/kernels/batch.h; their cards are
 * built in (rewrite/builtin_cards.txt). */
#ifndef RW_KERNELS_H
#define RW_KERNELS_H

#include <cuda.h>
#include <stddef.h>

#include "rewrite/kernels/batch.h"

/* The entry points of the batch module. */
enum rw_kernel {
	RW_K_BATCH_COPY,        /* cufold_batch_copy(struct rw_batch_copy_table) */
	RW_K_BATCH_MEMSET,      /* cufold_batch_memset(struct rw_batch_memset_table) */
	RW_K_BATCH_COPY_BUF,    /* cufold_batch_copy_buf(const struct rw_batch_copy_range *, unsigned) */
	RW_K_BATCH_MEMSET_BUF,  /* cufold_batch_memset_buf(const struct rw_batch_memset_range *, unsigned) */
	RW_K_BATCH_COPY2D,      /* cufold_batch_copy2d(struct rw_batch_copy2d_table) */
	RW_K_COUNT
};

/* The entry name of a kernel ("cufold_batch_copy"). */
const char *rw_kernel_name(enum rw_kernel k);

/* The PTX text of the batch module (rewrite/kernels/batch.cu), NUL-terminated, built for
 * compute_90 (the driver JIT-compiles it for the device at load). */
const char *rw_kernels_ptx(void);
/* The PTX of rewrite/kernels/<name>.cu, or NULL. */
const char *rw_kernels_ptx_named(const char *name);

/* The per-context cache of the batch module: one per engine (replay's part owns it), with its
 * own lock (it is reached under the engine's lock and outside it). A forked child's new engine
 * makes a new one; the parent's is abandoned with the parent's engine. */
struct rw_kernels;

/* An empty cache, or NULL when out of memory. */
struct rw_kernels *rw_kernels_create(void);
/* Free kc (NULL is ignored). The modules are not unloaded (they die with their contexts). */
void rw_kernels_destroy(struct rw_kernels *kc);
/* The batch module in ctx, loaded on first use through the real driver (DRV_REAL), then
 * cached per context in kc. ctx need not be current (it is pushed and popped around the load).
 * Returns CUDA_SUCCESS or the driver's error (not cached: a later call tries again);
 * CUDA_ERROR_INVALID_VALUE when kc is NULL. */
CUresult rw_kernels_load(struct rw_kernels *kc, CUcontext ctx, CUmodule *mod);
/* A kernel of that module, through rw_kernels_load (cached too). */
CUresult rw_kernels_func(struct rw_kernels *kc, CUcontext ctx, enum rw_kernel k, CUfunction *fn);
/* Forget ctx's module (NULL: every context's): call when ctx is destroyed (its modules die with
 * it), so that a new context that reuses the handle loads its own. NULL kc is ignored. */
void rw_kernels_forget(struct rw_kernels *kc, CUcontext ctx);

struct cap_op;
struct cap_func;
/* out: a launch of fn (described by info) standing where first stood (its stream, context,
 * thread, sequence and call site); grid, block and parameters zero, for the caller to set. */
/* An empty op of the given kind (enum cap_op_kind) and entry point standing where first stood: its stream, context,
 * thread, sequence number and call site (a derived op a plan node submits in first's place). */
void rw_op_standing_for(struct cap_op *out, const struct cap_op *first, uint8_t kind, uint16_t api);
void rw_kernels_launch_op(const struct cap_op *first, CUfunction fn, const struct cap_func *info, struct cap_op *out);
/* Whether the kernel launch op names can be run as an instance of a multi-instance variant in
 * op's context (RW_NODE_BATCH_KERNEL). */
bool rw_kernels_multi_possible(struct rw_kernels *kc, const struct cap_op *op);
/* The launch of the variant running members[0..k) (one function, block, grid y and z): the
 * table (its parameter block) written into table (cap bytes), the launch into out (its params
 * point at table). 0, or -CF_EINVAL / -CF_ENOSYS when no variant can run them. */
int rw_kernels_multi_launch(struct rw_kernels *kc, const struct cap_op *const *members, uint32_t k, void *table,
			    uint32_t cap, struct cap_op *out);

#endif
