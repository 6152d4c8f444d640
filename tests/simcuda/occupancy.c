/* occupancy.c - the software device's occupancy calculator: cuOccupancy* from the limits the
 * device reports (device.c) and the function's attributes (module.c). tests/simcuda layer.
 *
 * The model is the one CUDA's own calculator (the toolkit's cuda_occupancy.h) documents for
 * compute capability 9.0: a block takes its threads rounded up to whole warps, its registers
 * per warp rounded up to the register allocation unit, and its static plus dynamic shared
 * memory plus the per-block reserve rounded up to the shared-memory allocation unit; the
 * blocks that fit on one SM are the smallest of what warps, registers, shared memory and the
 * block limit allow. The shared-memory carveout is not modeled: a block may use all of the
 * SM's shared memory, as with the maximum carveout.
 *
 * cuOccupancyMaxPotentialBlockSize calls the program's block-size-to-shared-memory callback
 * before taking the device lock (sim_int.h invariant 1: the lock is held from entry to exit;
 * a callback that called the driver would deadlock): the block sizes it is asked about depend
 * only on blockSizeLimit and the function's thread limit, which is the same for every
 * function of the software device. */
#include "sim_module_int.h"

#include <stdlib.h>

/* The device's limits, as device.c reports them (an H200, compute capability 9.0). */
#define OCC_WARP 32                  /* CU_DEVICE_ATTRIBUTE_WARP_SIZE */
#define OCC_SMS 132                  /* CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT */
#define OCC_THREADS_PER_SM 2048      /* CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR */
#define OCC_BLOCKS_PER_SM 32         /* CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR */
#define OCC_REGS_PER_SM 65536        /* CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR */
#define OCC_SMEM_PER_SM 233472       /* CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR */
#define OCC_SMEM_RESERVED 1024       /* CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK */
#define OCC_SMEM_UNIT 128            /* shared memory allocation unit of sm_80 and later */
#define OCC_REG_UNIT 256             /* registers are allocated per warp in units of 256 */
#define OCC_REGS_PER_THREAD 32       /* CU_FUNC_ATTRIBUTE_NUM_REGS (module.c) */
#define OCC_TRIES (SIM_MAX_BLOCK_THREADS / OCC_WARP) /* block sizes MaxPotentialBlockSize tries */

static size_t round_up(size_t v, size_t unit)
{
	return (v + unit - 1) / unit * unit;
}

/* Blocks of block_size threads using dyn bytes of dynamic shared memory that fit on one SM;
 * 0 when such a block cannot launch at all. */
static int blocks_per_sm(const struct sim_func *fn, int block_size, size_t dyn)
{
	size_t warps, regs_per_warp, smem, by_warps, by_regs, by_smem, n;

	if (block_size > SIM_MAX_BLOCK_THREADS || dyn > (size_t)fn->max_dyn_shared)
		return 0;
	warps = ((size_t)block_size + OCC_WARP - 1) / OCC_WARP;
	regs_per_warp = round_up((size_t)OCC_REGS_PER_THREAD * OCC_WARP, OCC_REG_UNIT);
	smem = round_up(OCC_SMEM_RESERVED + dyn, OCC_SMEM_UNIT);
	by_warps = OCC_THREADS_PER_SM / OCC_WARP / warps;
	by_regs = OCC_REGS_PER_SM / regs_per_warp / warps;
	by_smem = OCC_SMEM_PER_SM / smem;
	n = OCC_BLOCKS_PER_SM;
	if (by_warps < n)
		n = by_warps;
	if (by_regs < n)
		n = by_regs;
	if (by_smem < n)
		n = by_smem;
	return (int)n;
}

static bool flags_are_valid(unsigned int flags)
{
	return (flags & ~(unsigned int)CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE) == 0;
}

/* NULL function: INVALID_VALUE; a dead or foreign handle: INVALID_HANDLE. */
static CUresult func_get(CUfunction f, struct sim_func **out)
{
	CUresult rc = CUDA_SUCCESS;

	if (!sim_is_initialized())
		rc = CUDA_ERROR_NOT_INITIALIZED;
	else if (!f)
		rc = CUDA_ERROR_INVALID_VALUE;
	else if (!(*out = sim_func_resolve(f)))
		rc = CUDA_ERROR_INVALID_HANDLE;
	return rc;
}

static CUresult max_active(int *num_blocks, CUfunction func, int block_size, size_t dyn,
			   unsigned int flags)
{
	struct sim_func *fn = NULL;
	CUresult rc = func_get(func, &fn);

	if (rc == CUDA_SUCCESS && (!num_blocks || block_size <= 0 || !flags_are_valid(flags)))
		rc = CUDA_ERROR_INVALID_VALUE;
	if (rc == CUDA_SUCCESS)
		*num_blocks = blocks_per_sm(fn, block_size, dyn);
	return rc;
}

CUresult sim_api_cuOccupancyMaxActiveBlocksPerMultiprocessor(int *numBlocks, CUfunction func, int blockSize,
							     size_t dynamicSMemSize)
{
	return max_active(numBlocks, func, blockSize, dynamicSMemSize, CU_OCCUPANCY_DEFAULT);
}

CUresult sim_api_cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int *numBlocks, CUfunction func,
								      int blockSize, size_t dynamicSMemSize,
								      unsigned int flags)
{
	return max_active(numBlocks, func, blockSize, dynamicSMemSize, flags);
}

/* The block sizes MaxPotentialBlockSize tries, largest first: from the limit rounded up to a
 * whole warp down in steps of a warp, each capped at the limit (as CUDA's calculator does).
 * Returns how many. */
static int sizes_to_try(int limit, int sizes[OCC_TRIES])
{
	int n = 0;

	if (limit <= 0 || limit > SIM_MAX_BLOCK_THREADS)
		limit = SIM_MAX_BLOCK_THREADS;
	for (int aligned = (int)round_up((size_t)limit, OCC_WARP); aligned > 0 && n < OCC_TRIES;
	     aligned -= OCC_WARP)
		sizes[n++] = aligned < limit ? aligned : limit;
	return n;
}

static CUresult potential_block_size(int *min_grid, int *block_size, CUfunction func,
				     const size_t dyn[OCC_TRIES], const int sizes[OCC_TRIES], int ntries,
				     unsigned int flags)
{
	struct sim_func *fn = NULL;
	int best_size = 0, best_blocks = 0, best_threads = 0;
	CUresult rc = func_get(func, &fn);

	if (rc == CUDA_SUCCESS && (!min_grid || !block_size || !flags_are_valid(flags)))
		rc = CUDA_ERROR_INVALID_VALUE;
	if (rc != CUDA_SUCCESS)
		goto out;
	for (int i = 0; i < ntries; i++) {
		int blocks = blocks_per_sm(fn, sizes[i], dyn[i]);

		/* strictly greater: on a tie the larger block wins, as in CUDA's calculator */
		if (blocks * sizes[i] > best_threads) {
			best_threads = blocks * sizes[i];
			best_blocks = blocks;
			best_size = sizes[i];
		}
		if (best_threads == OCC_THREADS_PER_SM)
			break;
	}
	*min_grid = best_blocks * OCC_SMS;
	*block_size = best_size;
out:
	return rc;
}

/* Both MaxPotentialBlockSize entry points. They are exported here, not through sim_api.h's
 * SIM_ENTRY, because the program's callback runs first, without the device lock: it may call the
 * driver itself, and the lock is not recursive. */
static CUresult potential(const char *name, struct sim_entry *entry, int *min_grid, int *block_size,
			  CUfunction func, CUoccupancyB2DSize b2d, size_t dyn_const, int limit,
			  unsigned int flags)
{
	size_t dyn[OCC_TRIES];
	int sizes[OCC_TRIES];
	int n = sizes_to_try(limit, sizes);
	CUresult rc;

	for (int i = 0; i < n; i++)
		dyn[i] = b2d ? b2d(sizes[i]) : dyn_const;
	rc = sim_enter(entry, name);
	if (rc != CUDA_SUCCESS)
		return rc;
	rc = potential_block_size(min_grid, block_size, func, dyn, sizes, n, flags);
	return sim_leave(rc);
}

CUresult cuOccupancyMaxPotentialBlockSize(int *minGridSize, int *blockSize, CUfunction func,
					  CUoccupancyB2DSize blockSizeToDynamicSMemSize,
					  size_t dynamicSMemSize, int blockSizeLimit)
{
	static struct sim_entry entry;

	return potential(__func__, &entry, minGridSize, blockSize, func, blockSizeToDynamicSMemSize,
			 dynamicSMemSize, blockSizeLimit, CU_OCCUPANCY_DEFAULT);
}

CUresult cuOccupancyMaxPotentialBlockSizeWithFlags(int *minGridSize, int *blockSize, CUfunction func,
						   CUoccupancyB2DSize blockSizeToDynamicSMemSize,
						   size_t dynamicSMemSize, int blockSizeLimit,
						   unsigned int flags)
{
	static struct sim_entry entry;

	return potential(__func__, &entry, minGridSize, blockSize, func, blockSizeToDynamicSMemSize,
			 dynamicSMemSize, blockSizeLimit, flags);
}

CUresult sim_api_cuOccupancyAvailableDynamicSMemPerBlock(size_t *dynamicSmemSize, CUfunction func, int numBlocks,
							 int blockSize)
{
	struct sim_func *fn = NULL;
	size_t avail;
	CUresult rc;

	rc = func_get(func, &fn);
	if (rc != CUDA_SUCCESS)
		goto out;
	/* numBlocks blocks of blockSize threads (without shared memory) must fit on one SM */
	if (!dynamicSmemSize || numBlocks <= 0 || blockSize <= 0 ||
	    blocks_per_sm(fn, blockSize, 0) < numBlocks) {
		rc = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	avail = OCC_SMEM_PER_SM / (size_t)numBlocks / OCC_SMEM_UNIT * OCC_SMEM_UNIT;
	avail = avail > OCC_SMEM_RESERVED ? avail - OCC_SMEM_RESERVED : 0;
	if (avail > (size_t)fn->max_dyn_shared)
		avail = (size_t)fn->max_dyn_shared;
	*dynamicSmemSize = avail;
out:
	return rc;
}

/* Clusters (compute capability 9.0): a cluster of up to 8 blocks is portable, up to 16 with
 * CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED. cuBLAS asks cuOccupancyMaxActiveClusters
 * for every size from 3 to 16 at start (its "cluster discovery"). The model: a cluster runs
 * within one GPC, so each GPC holds as many clusters as its SMs' block slots divided by the
 * cluster's size; the 132 SMs of an H100/H200 SXM are taken as 66 TPCs in 8 GPCs of 9, 9, 9, 9,
 * 8, 8, 7 and 7 TPCs (144 SMs in the full GH100; which TPCs are fused off varies by part). */
static const int occ_gpc_sms[] = { 18, 18, 18, 18, 16, 16, 14, 14 };
#define OCC_CLUSTER_PORTABLE 8
#define OCC_CLUSTER_MAX 16

/* The cluster size a launch configuration asks for: its cluster-dimension attribute, else the
 * function's required cluster size, else 1. */
static CUresult config_cluster(const struct sim_func *fn, const CUlaunchConfig *config, int *size)
{
	int n = 1;

	if (fn->cluster_attr[0] > 0)
		n = fn->cluster_attr[0] * (fn->cluster_attr[1] > 0 ? fn->cluster_attr[1] : 1) *
		    (fn->cluster_attr[2] > 0 ? fn->cluster_attr[2] : 1);
	for (unsigned int i = 0; i < config->numAttrs; i++) {
		const CUlaunchAttribute *a = &config->attrs[i];

		if (a->id != CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION)
			continue;
		n = (int)(a->value.clusterDim.x * a->value.clusterDim.y * a->value.clusterDim.z);
	}
	*size = n;
	return n >= 1 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

static int cluster_limit(const struct sim_func *fn)
{
	return fn->cluster_attr[3] ? OCC_CLUSTER_MAX : OCC_CLUSTER_PORTABLE;
}

CUresult sim_api_cuOccupancyMaxActiveClusters(int *numClusters, CUfunction func, const CUlaunchConfig *config)
{
	struct sim_func *fn = NULL;
	int size = 1, bps;
	CUresult rc;

	rc = func_get(func, &fn);
	if (rc == CUDA_SUCCESS && (!numClusters || !config || (config->numAttrs && !config->attrs)))
		rc = CUDA_ERROR_INVALID_VALUE;
	if (rc == CUDA_SUCCESS)
		rc = config_cluster(fn, config, &size);
	if (rc == CUDA_SUCCESS && size > cluster_limit(fn))
		rc = CUDA_ERROR_INVALID_CLUSTER_SIZE;
	if (rc != CUDA_SUCCESS)
		goto out;
	bps = blocks_per_sm(fn, (int)(config->blockDimX * config->blockDimY * config->blockDimZ),
			    config->sharedMemBytes);
	*numClusters = 0;
	for (size_t g = 0; g < sizeof(occ_gpc_sms) / sizeof(occ_gpc_sms[0]); g++)
		*numClusters += bps * occ_gpc_sms[g] / size;
out:
	return rc;
}

CUresult sim_api_cuOccupancyMaxPotentialClusterSize(int *clusterSize, CUfunction func, const CUlaunchConfig *config)
{
	struct sim_func *fn = NULL;
	CUresult rc;

	rc = func_get(func, &fn);
	if (rc == CUDA_SUCCESS && (!clusterSize || !config))
		rc = CUDA_ERROR_INVALID_VALUE;
	if (rc == CUDA_SUCCESS)
		*clusterSize = blocks_per_sm(fn, (int)(config->blockDimX * config->blockDimY * config->blockDimZ),
					     config->sharedMemBytes) ? cluster_limit(fn) : 0;
	return rc;
}
