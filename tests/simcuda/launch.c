/* launch.c - kernel launches on the software device: validation, the kernel payload (a deep
 * copy of the parameter bytes laid out as in the PTX) and running it as its twin, or through
 * the PTX interpreter (interp.h) when it has none, or, for a kernel loaded from machine code
 * (SIMCUDA_MACHINE_CODE=noop), as a no-op that is counted, timed and logged once.
 * tests/simcuda layer.
 *
 * A launch only queues work: the twin runs later, at a synchronization point, so the payload
 * never points into the caller's memory (kernelParams usually point at its stack). Graph
 * kernel nodes build the same payload with sim_kernel_call_new. */
#include "interp.h"
#include "sim_module_int.h"

#include "rewrite/kernels/variant_table.h"

#include <stdlib.h>
#include <string.h>

#define GRID_MAX_X 0x7fffffffu      /* the device's maximum grid, as an H100 reports it */
#define GRID_MAX_YZ 65535u
#define BLOCK_MAX_Z 64u
#define EXTRA_MAX_WORDS 64          /* an `extra` list longer than this is garbage */
#define LAUNCH_INLINE_PARAMS 16     /* parameters described on the stack when running */
/* The last launch attribute this toolkit knows (cuda.h hides CU_LAUNCH_ATTRIBUTE_MAX). */
#define LAUNCH_ATTR_LAST CU_LAUNCH_ATTRIBUTE_NVLINK_UTIL_CENTRIC_SCHEDULING

static CUresult check_dims(struct sim_dim3 grid, struct sim_dim3 block)
{
	if (!grid.x || !grid.y || !grid.z || !block.x || !block.y || !block.z)
		return CUDA_ERROR_INVALID_VALUE;
	if (grid.x > GRID_MAX_X || grid.y > GRID_MAX_YZ || grid.z > GRID_MAX_YZ)
		return CUDA_ERROR_INVALID_VALUE;
	if (block.x > SIM_MAX_BLOCK_THREADS || block.y > SIM_MAX_BLOCK_THREADS ||
	    block.z > BLOCK_MAX_Z ||
	    (uint64_t)block.x * block.y * block.z > SIM_MAX_BLOCK_THREADS)
		return CUDA_ERROR_INVALID_VALUE;
	return CUDA_SUCCESS;
}

/* Copy the parameters from `extra` (CU_LAUNCH_PARAM_BUFFER_POINTER/_SIZE/_END): the buffer is
 * already laid out as the PTX says; its size must be the layout's, with or without the
 * trailing padding a C struct of the parameters would have. */
static CUresult copy_extra(const struct sim_ptx_entry *e, void **extra, char *buf)
{
	const void *src = NULL;
	const size_t *sizep = NULL;
	size_t align = 1, padded;
	unsigned int i = 0;

	while (extra[i] != CU_LAUNCH_PARAM_END) {
		if (i + 1 >= EXTRA_MAX_WORDS)
			return CUDA_ERROR_INVALID_VALUE;
		if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
			src = extra[i + 1];
		else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE)
			sizep = extra[i + 1];
		else
			return CUDA_ERROR_INVALID_VALUE;
		i += 2;
	}
	if (!src || !sizep)
		return e->nparams ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
	for (unsigned int j = 0; j < e->nparams; j++)
		if (e->params[j].align > align)
			align = e->params[j].align;
	padded = (e->param_bytes + align - 1) & ~(align - 1);
	if (*sizep != e->param_bytes && *sizep != padded)
		return CUDA_ERROR_INVALID_VALUE;
	memcpy(buf, src, e->param_bytes);
	return CUDA_SUCCESS;
}

static CUresult copy_params(const struct sim_ptx_entry *e, void **params, char *buf)
{
	for (unsigned int i = 0; i < e->nparams; i++) {
		if (!params[i])
			return CUDA_ERROR_INVALID_VALUE;
		memcpy(buf + e->params[i].offset, params[i], e->params[i].size);
	}
	return CUDA_SUCCESS;
}

CUresult sim_kernel_call_new(CUfunction f, struct sim_dim3 grid, struct sim_dim3 block,
			     unsigned int shared_bytes, void **params, void **extra,
			     struct sim_kernel_call **out)
{
	struct sim_func *fn = sim_func_resolve(f);
	const struct sim_ptx_entry *e;
	struct sim_kernel_call *k;
	CUresult rc;

	if (!fn)
		return CUDA_ERROR_INVALID_HANDLE;
	e = fn->entry;
	rc = check_dims(grid, block);
	if (rc != CUDA_SUCCESS)
		return rc;
	if (shared_bytes > (unsigned int)fn->max_dyn_shared)
		return CUDA_ERROR_INVALID_VALUE;
	if (params && extra)
		return CUDA_ERROR_INVALID_VALUE;
	if (!params && !extra && e->nparams)
		return CUDA_ERROR_INVALID_VALUE;
	/* The twin when there is one (unless SIMCUDA_INTERPRET=1), else the PTX interpreter,
	 * whose decoding (once) refuses a kernel it cannot run: the launch fails, not the run. */
	if (fn->mod->no_binary) {
		sim_log("kernel %s: its image has machine code for sm_%d only, which a device of compute "
			"capability 9.0 cannot run", e->name, fn->mod->ptx.target_sm);
		return CUDA_ERROR_NO_BINARY_FOR_GPU;
	}
	if (!fn->mod->machine_code && (sim_interp_is_forced() || !sim_func_twin(fn))) {
		rc = sim_interp_prepare(fn);
		if (rc != CUDA_SUCCESS)
			return rc;
	}
	k = calloc(1, sizeof(*k));
	if (!k)
		return CUDA_ERROR_OUT_OF_MEMORY;
	/* Zeroed, so padding between parameters is the same bytes in every copy. */
	k->param_buf = calloc(1, e->param_bytes ? e->param_bytes : 1);
	if (!k->param_buf) {
		rc = CUDA_ERROR_OUT_OF_MEMORY;
		goto out_free;
	}
	if (params)
		rc = copy_params(e, params, k->param_buf);
	else if (extra)
		rc = copy_extra(e, extra, k->param_buf);
	if (rc != CUDA_SUCCESS)
		goto out_free;
	k->fn = fn;
	k->grid = grid;
	k->block = block;
	k->shared_bytes = shared_bytes;
	sim_module_ref(fn->mod);
	*out = k;
	return CUDA_SUCCESS;
out_free:
	free(k->param_buf);
	free(k);
	return rc;
}

/* ------------------------------------------------------------------ the work kind */

/* A cufold multi-instance variant whose kernel has a twin (twins.c): each instance of its
 * table (rewrite/kernels/variant_table.h) runs as the kernel's twin over its own blocks. */
static void multi_run(const struct sim_kernel_call *k)
{
	const struct sim_func *base = k->fn->multi_base;
	const struct sim_ptx_entry *be = base->entry;
	const unsigned char *t = k->param_buf;
	const void *ptrs[LAUNCH_INLINE_PARAMS];
	uint32_t n, stride, first[CF_VARIANT_MAX + 1];
	struct sim_launch l;

	memcpy(&n, t, 4);
	memcpy(&stride, t + 4, 4);
	if (n < 1 || n > CF_VARIANT_MAX || be->nparams > LAUNCH_INLINE_PARAMS ||
	    CF_VARIANT_HEADER + (uint64_t)n * stride > CF_VARIANT_TABLE_BYTES || be->param_bytes > stride) {
		sim_log("kernel %s: a variant table the device cannot read; not run", k->fn->entry->name);
		return;
	}
	memcpy(first, t + 8, 4 * (n + 1));
	for (uint32_t j = 0; j < n; j++) {
		for (unsigned int i = 0; i < be->nparams; i++)
			ptrs[i] = t + CF_VARIANT_HEADER + (size_t)j * stride + be->params[i].offset;
		l = (struct sim_launch){
			.grid = k->grid,
			.block = k->block,
			.shared_bytes = k->shared_bytes,
			.param_count = be->nparams,
			.params = ptrs,
			.param_sizes = base->param_sizes,
			.name = be->name,
		};
		l.grid.x = first[j + 1] - first[j];
		base->twin(&l);
	}
}

static void kernel_run(struct sim_work *w, void *payload)
{
	struct sim_kernel_call *k = payload;
	struct sim_func *fn = k->fn;
	const struct sim_ptx_entry *e = fn->entry;
	const void *inline_ptrs[LAUNCH_INLINE_PARAMS];
	const void **ptrs = inline_ptrs;
	struct sim_launch l;

	(void)w;
	if (fn->mod->machine_code) {
		/* SIMCUDA_MACHINE_CODE=noop: counted and timed like any kernel, memory untouched */
		if (!fn->noop_logged) {
			fn->noop_logged = true;
			sim_log("kernel %s: machine code only, launched as a no-op", e->name);
		}
		sim_stats_count("kernels", e->name, 1);
		return;
	}
	if (!fn->twin || (sim_interp_is_forced() && fn->interp)) {
		/* sim_kernel_call_new decoded it (or refused the launch) */
		sim_interp_run(k);
		sim_stats_count("kernels", e->name, 1);
		return;
	}
	if (fn->multi_base) {
		multi_run(k);
		sim_stats_count("kernels", e->name, 1);
		return;
	}
	if (e->nparams > LAUNCH_INLINE_PARAMS) {
		ptrs = malloc(e->nparams * sizeof(*ptrs));
		if (!ptrs) {
			sim_log("kernel %s: out of memory describing its parameters; not run", e->name);
			return;
		}
	}
	for (unsigned int i = 0; i < e->nparams; i++)
		ptrs[i] = (const char *)k->param_buf + e->params[i].offset;
	l = (struct sim_launch){
		.grid = k->grid,
		.block = k->block,
		.shared_bytes = k->shared_bytes,
		.param_count = e->nparams,
		.params = ptrs,
		.param_sizes = fn->param_sizes,
		.name = e->name,
	};
	fn->twin(&l);
	sim_stats_count("kernels", e->name, 1);
	if (ptrs != inline_ptrs)
		free(ptrs);
}

static void kernel_free(void *payload)
{
	struct sim_kernel_call *k = payload;

	if (!k)
		return;
	sim_module_unref(k->fn->mod);
	free(k->param_buf);
	free(k);
}

static void *kernel_clone(const void *payload)
{
	const struct sim_kernel_call *k = payload;
	size_t n = k->fn->entry->param_bytes;
	struct sim_kernel_call *c = malloc(sizeof(*c));

	if (!c)
		return NULL;
	*c = *k;
	c->param_buf = malloc(n ? n : 1);
	if (!c->param_buf) {
		free(c);
		return NULL;
	}
	memcpy(c->param_buf, k->param_buf, n);
	sim_module_ref(c->fn->mod);
	return c;
}

static void kernel_cost(const void *payload, bool in_graph, struct sim_cost_parts *out)
{
	sim_cost_kernel(payload, in_graph, out);
}

static const char *kernel_label(const void *payload)
{
	const struct sim_kernel_call *k = payload;

	return k->fn->entry->name;
}

const struct sim_work_ops sim_kernel_ops = {
	.kind = "kernel",
	.run = kernel_run,
	.free = kernel_free,
	.clone = kernel_clone,
	.cost = kernel_cost,
	.label = kernel_label,
};

/* ------------------------------------------------------------------ entry points */

static CUresult launch(CUfunction f, struct sim_dim3 grid, struct sim_dim3 block,
		       unsigned int shared_bytes, CUstream hstream, enum sim_pt pt, void **params,
		       void **extra)
{
	struct sim_ctx *ctx;
	struct sim_stream *s;
	struct sim_kernel_call *k;
	struct sim_work *w;
	const char *name;
	CUresult rc;

	rc = sim_ctx_require(&ctx);
	if (rc != CUDA_SUCCESS)
		return rc;
	rc = sim_stream_resolve(hstream, pt, &s);
	if (rc != CUDA_SUCCESS)
		return rc;
	rc = sim_kernel_call_new(f, grid, block, shared_bytes, params, extra, &k);
	if (rc != CUDA_SUCCESS)
		return rc;
	name = k->fn->entry->name;
	w = sim_work_new(&sim_kernel_ops, k, s->ctx);
	if (!w) {
		kernel_free(k);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	if (!s->capture) /* a captured launch is a graph node, counted when the graph runs */
		sim_stats_count("launches", name, 1);
	return sim_stream_submit(s, w);
}

static CUresult launch_plain(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
			     unsigned int bx, unsigned int by, unsigned int bz,
			     unsigned int shared_bytes, CUstream hstream, enum sim_pt pt,
			     void **params, void **extra)
{
	struct sim_dim3 grid = { gx, gy, gz }, block = { bx, by, bz };

	return launch(f, grid, block, shared_bytes, hstream, pt, params, extra);
}

CUresult sim_api_cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
				unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
				unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
				void **kernelParams, void **extra)
{
	return launch_plain(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,
			    sharedMemBytes, hStream, SIM_PT_LEGACY, kernelParams, extra);
}

CUresult sim_api_cuLaunchKernel_ptsz(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
				     unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
				     unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
				     void **kernelParams, void **extra)
{
	return launch_plain(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,
			    sharedMemBytes, hStream, SIM_PT_PER_THREAD, kernelParams, extra);
}

CUresult sim_api_cuLaunchCooperativeKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
					   unsigned int gridDimZ, unsigned int blockDimX,
					   unsigned int blockDimY, unsigned int blockDimZ,
					   unsigned int sharedMemBytes, CUstream hStream,
					   void **kernelParams)
{
	return launch_plain(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,
			    sharedMemBytes, hStream, SIM_PT_LEGACY, kernelParams, NULL);
}

CUresult sim_api_cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gridDimX,
						unsigned int gridDimY, unsigned int gridDimZ,
						unsigned int blockDimX, unsigned int blockDimY,
						unsigned int blockDimZ, unsigned int sharedMemBytes,
						CUstream hStream, void **kernelParams)
{
	return launch_plain(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,
			    sharedMemBytes, hStream, SIM_PT_PER_THREAD, kernelParams, NULL);
}

/* The attributes change nothing on the software device; they must still be readable. */
static CUresult launch_ex(const CUlaunchConfig *config, CUfunction f, void **params,
			  void **extra, enum sim_pt pt)
{
	struct sim_dim3 grid, block;

	if (!config || (config->numAttrs && !config->attrs))
		return CUDA_ERROR_INVALID_VALUE;
	for (unsigned int i = 0; i < config->numAttrs; i++)
		if ((unsigned int)config->attrs[i].id > (unsigned int)LAUNCH_ATTR_LAST)
			return CUDA_ERROR_INVALID_VALUE;
	grid = (struct sim_dim3){ config->gridDimX, config->gridDimY, config->gridDimZ };
	block = (struct sim_dim3){ config->blockDimX, config->blockDimY, config->blockDimZ };
	return launch(f, grid, block, config->sharedMemBytes, config->hStream, pt, params, extra);
}

CUresult sim_api_cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **kernelParams,
				  void **extra)
{
	return launch_ex(config, f, kernelParams, extra, SIM_PT_LEGACY);
}

CUresult sim_api_cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f, void **kernelParams,
				       void **extra)
{
	return launch_ex(config, f, kernelParams, extra, SIM_PT_PER_THREAD);
}
