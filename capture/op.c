/* op.c - one op: its key and bindings, the normalized copy descriptor, staging of pageable
 * sources, and re-issuing it through the real driver with exactly the entry point and arguments
 * the program used. capture layer.
 *
 * Key (what decides a graph's shape) and bindings (what a graph node can be patched with):
 *   all ops   key: kind, entry point, stream slot and kind        bind: stream handle, context
 *   kernel    key: function (name and layout), grid, block, shared  bind: parameter bytes,
 *                  bytes, parameter size, extra or not, launch        function handle
 *                  attributes (id and the union member it uses)
 *   memcpy    key: memory types as named, direction, pageable      bind: first addresses, pitches,
 *                  sides, width, height, depth                           slice heights, contexts
 *   memset    key: element size, width, height                     bind: address, pitch, value
 *   event     key: event slot, flags                                bind: event handle
 *   host fn   key: (common part only)                               bind: function, data
 * The entry point is in the key so a template never turns a synchronous call into an
 * asynchronous one (or a _ptsz form into a legacy one). */
#include <stdlib.h>
#include <string.h>

#include "capture/capture_int.h"
#include "common/errors.h"
#include "common/hash.h"

const char *cap_op_kind_name(enum cap_op_kind kind)
{
	static const char *const names[CAP_OP_KIND_COUNT] = { "kernel", "memcpy", "memset", "event_record",
							       "event_wait", "host_fn" };

	return (unsigned)kind < CAP_OP_KIND_COUNT ? names[kind] : "?";
}

const char *cap_op_name(const struct cap_op *op)
{
	if (op->kind == CAP_OP_KERNEL && op->u.kernel.info)
		return op->u.kernel.info->name;
	return op->api < DRV_API_COUNT ? drv_api[op->api].base : "?";
}

uint64_t cap_op_bytes(const struct cap_op *op)
{
	if (op->kind == CAP_OP_MEMCPY)
		return op->u.memcpy.bytes;
	if (op->kind == CAP_OP_MEMSET)
		return (uint64_t)op->u.memset.width * op->u.memset.height * op->u.memset.elem_size;
	return 0;
}

/* ------------------------------------------------------------------ hashing */

/* A launch attribute: its id and the union member that id uses, field by field (never padding
 * or the unused bytes of the union, which the program need not have cleared). An id this
 * build does not know hashes the whole value: possibly churning keys, never merging two. */
static uint64_t hash_attr(const CUlaunchAttribute *a, uint64_t h)
{
	const CUlaunchAttributeValue *v = &a->value;

	h = cf_hash_combine(h, (uint64_t)a->id);
	switch (a->id) {
	case CU_LAUNCH_ATTRIBUTE_IGNORE:
		break;
	case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW: {
		uint32_t ratio;

		memcpy(&ratio, &v->accessPolicyWindow.hitRatio, sizeof(ratio));
		h = cf_hash_combine(h, (uint64_t)(uintptr_t)v->accessPolicyWindow.base_ptr);
		h = cf_hash_combine(h, v->accessPolicyWindow.num_bytes);
		h = cf_hash_combine(h, ((uint64_t)ratio << 32) | ((uint64_t)v->accessPolicyWindow.hitProp << 16) |
					       (uint64_t)v->accessPolicyWindow.missProp);
		break;
	}
	case CU_LAUNCH_ATTRIBUTE_COOPERATIVE:
		h = cf_hash_combine(h, (uint64_t)(uint32_t)v->cooperative);
		break;
	case CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY:
		h = cf_hash_combine(h, (uint64_t)v->syncPolicy);
		break;
	case CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION:
		h = cf_hash_combine(h, ((uint64_t)v->clusterDim.x << 32) | v->clusterDim.y);
		h = cf_hash_combine(h, v->clusterDim.z);
		break;
	case CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
		h = cf_hash_combine(h, (uint64_t)v->clusterSchedulingPolicyPreference);
		break;
	case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION:
		h = cf_hash_combine(h, (uint64_t)(uint32_t)v->programmaticStreamSerializationAllowed);
		break;
	case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT:
		h = cf_hash_combine(h, (uint64_t)(uintptr_t)v->programmaticEvent.event);
		h = cf_hash_combine(h, ((uint64_t)(uint32_t)v->programmaticEvent.flags << 32) |
					       (uint32_t)v->programmaticEvent.triggerAtBlockStart);
		break;
	case CU_LAUNCH_ATTRIBUTE_PRIORITY:
		h = cf_hash_combine(h, (uint64_t)(uint32_t)v->priority);
		break;
	case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP:
		h = cf_hash_combine(h, ((uint64_t)v->memSyncDomainMap.default_ << 8) | v->memSyncDomainMap.remote);
		break;
	case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN:
		h = cf_hash_combine(h, (uint64_t)v->memSyncDomain);
		break;
	case CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION:
		h = cf_hash_combine(h, ((uint64_t)v->preferredClusterDim.x << 32) | v->preferredClusterDim.y);
		h = cf_hash_combine(h, v->preferredClusterDim.z);
		break;
	case CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT:
		h = cf_hash_combine(h, (uint64_t)(uintptr_t)v->launchCompletionEvent.event);
		h = cf_hash_combine(h, (uint64_t)(uint32_t)v->launchCompletionEvent.flags);
		break;
	case CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE:
		h = cf_hash_combine(h, (uint64_t)(uint32_t)v->deviceUpdatableKernelNode.deviceUpdatable);
		break;
	case CU_LAUNCH_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
		h = cf_hash_combine(h, v->sharedMemCarveout);
		break;
	case CU_LAUNCH_ATTRIBUTE_NVLINK_UTIL_CENTRIC_SCHEDULING:
		h = cf_hash_combine(h, v->nvlinkUtilCentricScheduling);
		break;
	default:
		h = cf_hash_bytes(v, sizeof(*v), h);
		break;
	}
	return h;
}

/* One step of hash_params' streams: a bijection of s for a fixed word and of the word for a fixed
 * s (xor, multiply by an odd constant, rotate), three instructions; the rotation carries a top
 * bit's change down, so two equal changes to one stream's words do not cancel. */
static inline uint64_t stream_step(uint64_t s, uint64_t w)
{
	s = (s ^ w) * 0x9fb21c651e98df25ull;
	return (s << 31) | (s >> 33);
}

/* A kernel's parameter bytes folded into h (the caller finalizes): four words at a time into four
 * streams (stream_step), folded into h at the end, then the rest a word at a time (cf_hash_step).
 * PyTorch's kernels take a few hundred bytes of parameters; one stream of cf_hash_step cost about
 * 34 instructions for 32 bytes there (issue 22), this 15, and no step waits on the one before.
 * Each stream is a chain of bijections, so two parameter blocks that differ in one word never
 * meet. */
static __attribute__((noinline)) uint64_t hash_params(const void *p, uint32_t n, uint64_t h)
{
	const unsigned char *c = p;

	h = cf_hash_step(h, n);
	if (n >= 32) {
		uint64_t s0 = h, s1 = h ^ 0x2545f4914f6cdd1dull, s2 = h ^ 0x9e3779b97f4a7c15ull,
			 s3 = h ^ 0xbf58476d1ce4e5b9ull;

		for (; n >= 32; n -= 32, c += 32) {
			uint64_t w0, w1, w2, w3;

			memcpy(&w0, c, 8);
			memcpy(&w1, c + 8, 8);
			memcpy(&w2, c + 16, 8);
			memcpy(&w3, c + 24, 8);
			s0 = stream_step(s0, w0);
			s1 = stream_step(s1, w1);
			s2 = stream_step(s2, w2);
			s3 = stream_step(s3, w3);
		}
		h = cf_hash_step(cf_hash_step(cf_hash_step(cf_hash_step(h, s0), s1), s2), s3);
	}
	for (; n >= 8; n -= 8, c += 8) {
		uint64_t w;

		memcpy(&w, c, 8);
		h = cf_hash_step(h, w);
	}
	if (n) {
		uint64_t w = 0;

		memcpy(&w, c, n);
		h = cf_hash_step(h, w);
	}
	return h;
}

/* An op's key: its kind, entry point, stream slot and what makes it the same work whatever
 * memory it names (cap_op_hash). One pass of cf_hash_step over the fields, one cf_hash64 at the
 * end: a third of what a full finalizer per field cost (issue 22). */
static inline uint64_t key_hash(const struct cap_op *op)
{
	uint64_t k = cf_hash_step(CF_HASH_SEED, op->kind);

	k = cf_hash_step(k, op->api);
	k = cf_hash_step(k, ((uint64_t)op->stream_slot << 8) | op->stream_kind);
	switch (op->kind) {
	case CAP_OP_KERNEL: {
		const struct cap_kernel *kn = &op->u.kernel;

		k = cf_hash_step(k, kn->info ? kn->info->id : (uint64_t)(uintptr_t)kn->func);
		k = cf_hash_step(k, ((uint64_t)kn->grid[0] << 32) | kn->grid[1]);
		k = cf_hash_step(k, ((uint64_t)kn->grid[2] << 32) | kn->block[0]);
		k = cf_hash_step(k, ((uint64_t)kn->block[1] << 32) | kn->block[2]);
		k = cf_hash_step(k, ((uint64_t)kn->shared_bytes << 32) | kn->param_size);
		k = cf_hash_step(k, ((uint64_t)kn->nattrs << 1) | kn->via_extra);
		for (uint32_t i = 0; i < kn->nattrs; i++)
			k = hash_attr(&kn->attrs[i], k);
		break;
	}
	case CAP_OP_MEMCPY: {
		const struct cap_memcpy *c = &op->u.memcpy;

		k = cf_hash_step(k, ((uint64_t)c->d.srcMemoryType << 24) | ((uint64_t)c->d.dstMemoryType << 16) |
					    ((uint64_t)c->dir << 8) | ((uint64_t)c->src_pageable << 1) |
					    c->dst_pageable);
		k = cf_hash_step(k, c->d.WidthInBytes);
		k = cf_hash_step(k, c->d.Height);
		k = cf_hash_step(k, c->d.Depth);
		break;
	}
	case CAP_OP_MEMSET:
		k = cf_hash_step(k, op->u.memset.elem_size);
		k = cf_hash_step(k, op->u.memset.width);
		k = cf_hash_step(k, op->u.memset.height);
		break;
	case CAP_OP_EVENT_RECORD:
	case CAP_OP_EVENT_WAIT:
		k = cf_hash_step(k, ((uint64_t)op->u.event.slot << 32) | op->u.event.flags);
		break;
	default:
		break;
	}
	return cf_hash64(k);
}

/* An op's bindings: the stream, context and memory it names (cap_op_hash). */
static inline uint64_t bind_hash(const struct cap_op *op)
{
	uint64_t b = CF_HASH_SEED;

	b = cf_hash_step(b, (uint64_t)(uintptr_t)op->stream);
	b = cf_hash_step(b, (uint64_t)(uintptr_t)op->ctx);
	switch (op->kind) {
	case CAP_OP_KERNEL: {
		const struct cap_kernel *kn = &op->u.kernel;

		b = hash_params(kn->params, kn->param_size, b);
		b = cf_hash_step(b, (uint64_t)(uintptr_t)kn->handle);
		b = cf_hash_step(b, (uint64_t)(uintptr_t)kn->func);
		break;
	}
	case CAP_OP_MEMCPY: {
		const struct cap_memcpy *c = &op->u.memcpy;

		b = cf_hash_step(b, c->src_first);
		b = cf_hash_step(b, c->dst_first);
		b = cf_hash_step(b, c->d.srcPitch);
		b = cf_hash_step(b, c->d.dstPitch);
		b = cf_hash_step(b, c->d.srcHeight);
		b = cf_hash_step(b, c->d.dstHeight);
		b = cf_hash_step(b, (uint64_t)(uintptr_t)c->src_ctx);
		b = cf_hash_step(b, (uint64_t)(uintptr_t)c->dst_ctx);
		break;
	}
	case CAP_OP_MEMSET:
		b = cf_hash_step(b, op->u.memset.dst);
		b = cf_hash_step(b, op->u.memset.pitch);
		b = cf_hash_step(b, op->u.memset.value);
		break;
	case CAP_OP_EVENT_RECORD:
	case CAP_OP_EVENT_WAIT:
		b = cf_hash_step(b, (uint64_t)(uintptr_t)op->u.event.event);
		break;
	case CAP_OP_HOST_FN: {
		uint64_t fn;

		memcpy(&fn, &op->u.host_fn.fn, sizeof(fn));
		b = cf_hash_step(b, fn);
		b = cf_hash_step(b, (uint64_t)(uintptr_t)op->u.host_fn.data);
		break;
	}
	}
	return cf_hash64(b);
}

uint64_t cap__op_bind(const struct cap_op *op)
{
	return bind_hash(op);
}

void cap_op_hash(struct cap_op *op)
{
	op->key = key_hash(op);
	op->bind = bind_hash(op);
}

/* Whether every field key_hash reads is equal in op and p (so their keys are equal). An op with
 * launch attributes never is (they are not compared here). */
static bool key_same(const struct cap_op *op, const struct cap_op *p)
{
	if (op->kind != p->kind || op->api != p->api || op->stream_slot != p->stream_slot ||
	    op->stream_kind != p->stream_kind)
		return false;
	switch (op->kind) {
	case CAP_OP_KERNEL: {
		const struct cap_kernel *a = &op->u.kernel, *b = &p->u.kernel;

		return (a->info ? a->info->id : (uint64_t)(uintptr_t)a->func) ==
			       (b->info ? b->info->id : (uint64_t)(uintptr_t)b->func) &&
		       !a->nattrs && !b->nattrs && a->grid[0] == b->grid[0] && a->grid[1] == b->grid[1] &&
		       a->grid[2] == b->grid[2] && a->block[0] == b->block[0] && a->block[1] == b->block[1] &&
		       a->block[2] == b->block[2] && a->shared_bytes == b->shared_bytes &&
		       a->param_size == b->param_size && a->via_extra == b->via_extra;
	}
	case CAP_OP_MEMCPY: {
		const struct cap_memcpy *a = &op->u.memcpy, *b = &p->u.memcpy;

		return a->d.srcMemoryType == b->d.srcMemoryType && a->d.dstMemoryType == b->d.dstMemoryType &&
		       a->dir == b->dir && a->src_pageable == b->src_pageable && a->dst_pageable == b->dst_pageable &&
		       a->d.WidthInBytes == b->d.WidthInBytes && a->d.Height == b->d.Height && a->d.Depth == b->d.Depth;
	}
	case CAP_OP_MEMSET:
		return op->u.memset.elem_size == p->u.memset.elem_size && op->u.memset.width == p->u.memset.width &&
		       op->u.memset.height == p->u.memset.height;
	case CAP_OP_EVENT_RECORD:
	case CAP_OP_EVENT_WAIT:
		return op->u.event.slot == p->u.event.slot && op->u.event.flags == p->u.event.flags;
	default:
		return true;
	}
}

/* Whether every field bind_hash reads is equal in op and p (whose keys are equal). */
static bool bind_same(const struct cap_op *op, const struct cap_op *p)
{
	if (op->stream != p->stream || op->ctx != p->ctx)
		return false;
	switch (op->kind) {
	case CAP_OP_KERNEL: {
		const struct cap_kernel *a = &op->u.kernel, *b = &p->u.kernel;

		return a->handle == b->handle && a->func == b->func && a->param_size == b->param_size &&
		       (!a->param_size || memcmp(a->params, b->params, a->param_size) == 0);
	}
	case CAP_OP_MEMCPY: {
		const struct cap_memcpy *a = &op->u.memcpy, *b = &p->u.memcpy;

		return a->src_first == b->src_first && a->dst_first == b->dst_first && a->d.srcPitch == b->d.srcPitch &&
		       a->d.dstPitch == b->d.dstPitch && a->d.srcHeight == b->d.srcHeight &&
		       a->d.dstHeight == b->d.dstHeight && a->src_ctx == b->src_ctx && a->dst_ctx == b->dst_ctx;
	}
	case CAP_OP_MEMSET:
		return op->u.memset.dst == p->u.memset.dst && op->u.memset.pitch == p->u.memset.pitch &&
		       op->u.memset.value == p->u.memset.value;
	case CAP_OP_EVENT_RECORD:
	case CAP_OP_EVENT_WAIT:
		return op->u.event.event == p->u.event.event;
	default:
		return op->u.host_fn.fn == p->u.host_fn.fn && op->u.host_fn.data == p->u.host_fn.data;
	}
}

/* Whether op, whose key and bindings compared equal to p's, may take p's vid (capture.h): the
 * fields neither hash reads are equal too, and the op is of a kind whose every field vid
 * covers the hashes read. A pageable source is read at each call (never the same bytes), a
 * launch with attributes is never compared. */
static inline bool vid_same(const struct cap_op *op, const struct cap_op *p)
{
	switch (op->kind) {
	case CAP_OP_KERNEL:
		return !op->u.kernel.nattrs && !p->u.kernel.nattrs;
	case CAP_OP_MEMCPY:
		return !op->u.memcpy.src_pageable && !p->u.memcpy.src_pageable &&
		       op->u.memcpy.d.srcArray == p->u.memcpy.d.srcArray && op->u.memcpy.d.dstArray == p->u.memcpy.d.dstArray;
	case CAP_OP_MEMSET:
	case CAP_OP_EVENT_RECORD:
	case CAP_OP_EVENT_WAIT:
		return true;
	default:
		return false;
	}
}

bool cap_op_hash_like(struct cap_op *op, const struct cap_op *p)
{
	op->vid = 0;
	if (!p || !key_same(op, p)) {
		cap_op_hash(op);
		return false;
	}
	op->key = p->key;
	if (bind_same(op, p)) {
		op->bind = p->bind;
		if (vid_same(op, p))
			op->vid = p->vid;
	} else {
		op->bind = bind_hash(op);
	}
	return true;
}

bool cap_op_hash_copy_like(struct cap_op *op, const struct cap_op *p)
{
	const struct cap_memcpy *a = &op->u.memcpy, *b = &p->u.memcpy;

	/* of key_same's and bind_same's fields, resolves_same compared the descriptor's and the
	 * resolution (sides, direction, pageable) is p's own: the rest is the header and contexts */
	op->vid = 0;
	if (op->api != p->api || op->stream_slot != p->stream_slot || op->stream_kind != p->stream_kind) {
		cap_op_hash(op);
		return false;
	}
	op->key = p->key;
	if (op->stream == p->stream && op->ctx == p->ctx && a->src_ctx == b->src_ctx && a->dst_ctx == b->dst_ctx) {
		op->bind = p->bind;
		if (vid_same(op, p))
			op->vid = p->vid;
	} else {
		op->bind = bind_hash(op);
	}
	return true;
}

bool cap_op_take_like(struct cap_op *op, const struct cap_call *c, const struct cap_op *p, bool held)
{
	if (op->kind != p->kind || op->api != p->api || op->stream != p->stream || op->ctx != p->ctx ||
	    op->stream_slot != p->stream_slot || op->stream_kind != p->stream_kind || !p->vid ||
	    !cap__call_repeats(c, p))
		return false;
	if (op->kind == CAP_OP_MEMCPY) {
		/* an op of p's vid, 1-D too, is p in every field of the part (capture.h): the fields
		 * vid covers, and the constants of cap_call_copy_1d */
		if (!held || !op->u.memcpy.oned)
			op->u.memcpy = p->u.memcpy;
		op->u.memcpy.staged = NULL;
	} else if (!held) {
		op->u.memset = p->u.memset; /* else every field is in the key or the bindings: p's */
	}
	/* what building sets: ENDS_WINDOW from the direction (p's resolution) and the entry point,
	 * or from the allocation map (unchanged since p, the caller's condition) */
	op->flags = p->flags & CAP_OPF_ENDS_WINDOW;
	op->key = p->key;
	op->bind = p->bind;
	op->vid = p->vid;
	return true;
}

/* ------------------------------------------------------------------ copy descriptors */

void cap_call_copy_2d(struct cap_call *c, const CUDA_MEMCPY2D *p)
{
	CUDA_MEMCPY3D *d = &c->u.memcpy.d;

	memset(d, 0, sizeof(*d));
	d->srcXInBytes = p->srcXInBytes;
	d->srcY = p->srcY;
	d->srcMemoryType = p->srcMemoryType;
	d->srcHost = p->srcHost;
	d->srcDevice = p->srcDevice;
	d->srcArray = p->srcArray;
	d->srcPitch = p->srcPitch;
	d->srcHeight = p->Height;
	d->dstXInBytes = p->dstXInBytes;
	d->dstY = p->dstY;
	d->dstMemoryType = p->dstMemoryType;
	d->dstHost = p->dstHost;
	d->dstDevice = p->dstDevice;
	d->dstArray = p->dstArray;
	d->dstPitch = p->dstPitch;
	d->dstHeight = p->Height;
	d->WidthInBytes = p->WidthInBytes;
	d->Height = p->Height;
	d->Depth = 1;
	c->u.memcpy.dst_ctx = NULL;
	c->u.memcpy.src_ctx = NULL;
	c->u.memcpy.oned = false;
}

void cap_call_copy_3d_peer(struct cap_call *c, const CUDA_MEMCPY3D_PEER *p)
{
	CUDA_MEMCPY3D *d = &c->u.memcpy.d;

	memset(d, 0, sizeof(*d));
	d->srcXInBytes = p->srcXInBytes;
	d->srcY = p->srcY;
	d->srcZ = p->srcZ;
	d->srcLOD = p->srcLOD;
	d->srcMemoryType = p->srcMemoryType;
	d->srcHost = p->srcHost;
	d->srcDevice = p->srcDevice;
	d->srcArray = p->srcArray;
	d->srcPitch = p->srcPitch;
	d->srcHeight = p->srcHeight;
	d->dstXInBytes = p->dstXInBytes;
	d->dstY = p->dstY;
	d->dstZ = p->dstZ;
	d->dstLOD = p->dstLOD;
	d->dstMemoryType = p->dstMemoryType;
	d->dstHost = p->dstHost;
	d->dstDevice = p->dstDevice;
	d->dstArray = p->dstArray;
	d->dstPitch = p->dstPitch;
	d->dstHeight = p->dstHeight;
	d->WidthInBytes = p->WidthInBytes;
	d->Height = p->Height;
	d->Depth = p->Depth;
	c->u.memcpy.dst_ctx = p->dstContext;
	c->u.memcpy.src_ctx = p->srcContext;
	c->u.memcpy.oned = false;
}

/* ------------------------------------------------------------------ staging */

int cap_op_stage(struct cap_op *op, struct cf_arena *a)
{
	struct cap_memcpy *c = &op->u.memcpy;
	void *buf;

	if (op->kind != CAP_OP_MEMCPY || !c->src_pageable || !c->src_span || (op->flags & CAP_OPF_STAGED))
		return 0;
	buf = cf_arena_dup(a, (const void *)(uintptr_t)c->src_first, c->src_span);
	if (!buf)
		return -CF_ENOMEM;
	c->staged = buf;
	op->flags |= CAP_OPF_STAGED;
	return 0;
}

/* ------------------------------------------------------------------ re-issuing */

/* The source of a copy as it is to be re-issued: the staged bytes when there are. */
static void issue_desc(const struct cap_op *op, CUDA_MEMCPY3D *d)
{
	const struct cap_memcpy *c = &op->u.memcpy;

	*d = c->d;
	if (op->flags & CAP_OPF_STAGED) {
		/* the staged buffer holds the source span from its first byte: same pitch and
		 * slice height, no offset */
		d->srcXInBytes = 0;
		d->srcY = 0;
		d->srcZ = 0;
		if (d->srcMemoryType == CU_MEMORYTYPE_HOST)
			d->srcHost = c->staged;
		else
			d->srcDevice = (CUdeviceptr)(uintptr_t)c->staged;
	}
}

static const CUDA_MEMCPY2D *desc_2d(const CUDA_MEMCPY3D *d, CUDA_MEMCPY2D *p)
{
	memset(p, 0, sizeof(*p));
	p->srcXInBytes = d->srcXInBytes;
	p->srcY = d->srcY;
	p->srcMemoryType = d->srcMemoryType;
	p->srcHost = d->srcHost;
	p->srcDevice = d->srcDevice;
	p->srcArray = d->srcArray;
	p->srcPitch = d->srcPitch;
	p->dstXInBytes = d->dstXInBytes;
	p->dstY = d->dstY;
	p->dstMemoryType = d->dstMemoryType;
	p->dstHost = d->dstHost;
	p->dstDevice = d->dstDevice;
	p->dstArray = d->dstArray;
	p->dstPitch = d->dstPitch;
	p->WidthInBytes = d->WidthInBytes;
	p->Height = d->Height;
	return p;
}

static const CUDA_MEMCPY3D_PEER *desc_peer(const struct cap_op *op, const CUDA_MEMCPY3D *d, CUDA_MEMCPY3D_PEER *p)
{
	memset(p, 0, sizeof(*p));
	p->srcXInBytes = d->srcXInBytes;
	p->srcY = d->srcY;
	p->srcZ = d->srcZ;
	p->srcLOD = d->srcLOD;
	p->srcMemoryType = d->srcMemoryType;
	p->srcHost = d->srcHost;
	p->srcDevice = d->srcDevice;
	p->srcArray = d->srcArray;
	p->srcContext = op->u.memcpy.src_ctx;
	p->srcPitch = d->srcPitch;
	p->srcHeight = d->srcHeight;
	p->dstXInBytes = d->dstXInBytes;
	p->dstY = d->dstY;
	p->dstZ = d->dstZ;
	p->dstLOD = d->dstLOD;
	p->dstMemoryType = d->dstMemoryType;
	p->dstHost = d->dstHost;
	p->dstDevice = d->dstDevice;
	p->dstArray = d->dstArray;
	p->dstContext = op->u.memcpy.dst_ctx;
	p->dstPitch = d->dstPitch;
	p->dstHeight = d->dstHeight;
	p->WidthInBytes = d->WidthInBytes;
	p->Height = d->Height;
	p->Depth = d->Depth;
	return p;
}

/* Every copy and memset entry point an op may name, one exported name per entry, with the form
 * of its arguments (ISSUE_CPY_* and ISSUE_SET_* below) and whether a stream follows them (S)
 * or not (N): a new variant is one entry here, and the call is typed by DRV_REAL, so an
 * entry with the wrong form does not compile. */
#define ISSUE_MEMCPY_LIST(X)                                                                                \
	X(cuMemcpy, LINEAR, N) X(cuMemcpy_ptds, LINEAR, N)                                                   \
	X(cuMemcpyAsync, LINEAR, S) X(cuMemcpyAsync_ptsz, LINEAR, S)                                         \
	X(cuMemcpyPeer, PEER, N) X(cuMemcpyPeer_ptds, PEER, N)                                               \
	X(cuMemcpyPeerAsync, PEER, S) X(cuMemcpyPeerAsync_ptsz, PEER, S)                                     \
	X(cuMemcpyHtoD_v2, HTOD, N) X(cuMemcpyHtoD_v2_ptds, HTOD, N)                                         \
	X(cuMemcpyHtoDAsync_v2, HTOD, S) X(cuMemcpyHtoDAsync_v2_ptsz, HTOD, S)                               \
	X(cuMemcpyDtoH_v2, DTOH, N) X(cuMemcpyDtoH_v2_ptds, DTOH, N)                                         \
	X(cuMemcpyDtoHAsync_v2, DTOH, S) X(cuMemcpyDtoHAsync_v2_ptsz, DTOH, S)                               \
	X(cuMemcpyDtoD_v2, LINEAR, N) X(cuMemcpyDtoD_v2_ptds, LINEAR, N)                                     \
	X(cuMemcpyDtoDAsync_v2, LINEAR, S) X(cuMemcpyDtoDAsync_v2_ptsz, LINEAR, S)                           \
	X(cuMemcpy2D_v2, 2D, N) X(cuMemcpy2D_v2_ptds, 2D, N)                                                 \
	X(cuMemcpy2DUnaligned_v2, 2D, N) X(cuMemcpy2DUnaligned_v2_ptds, 2D, N)                               \
	X(cuMemcpy2DAsync_v2, 2D, S) X(cuMemcpy2DAsync_v2_ptsz, 2D, S)                                       \
	X(cuMemcpy3D_v2, 3D, N) X(cuMemcpy3D_v2_ptds, 3D, N)                                                 \
	X(cuMemcpy3DAsync_v2, 3D, S) X(cuMemcpy3DAsync_v2_ptsz, 3D, S)                                       \
	X(cuMemcpy3DPeer, 3DPEER, N) X(cuMemcpy3DPeer_ptds, 3DPEER, N)                                       \
	X(cuMemcpy3DPeerAsync, 3DPEER, S) X(cuMemcpy3DPeerAsync_ptsz, 3DPEER, S)

/* The same for memsets, with the value's type (the element size) as well. */
#define ISSUE_MEMSET_LIST(X)                                                                                \
	X(cuMemsetD8_v2, 1D, uc, N) X(cuMemsetD8_v2_ptds, 1D, uc, N)                                         \
	X(cuMemsetD16_v2, 1D, us, N) X(cuMemsetD16_v2_ptds, 1D, us, N)                                       \
	X(cuMemsetD32_v2, 1D, ui, N) X(cuMemsetD32_v2_ptds, 1D, ui, N)                                       \
	X(cuMemsetD8Async, 1D, uc, S) X(cuMemsetD8Async_ptsz, 1D, uc, S)                                     \
	X(cuMemsetD16Async, 1D, us, S) X(cuMemsetD16Async_ptsz, 1D, us, S)                                   \
	X(cuMemsetD32Async, 1D, ui, S) X(cuMemsetD32Async_ptsz, 1D, ui, S)                                   \
	X(cuMemsetD2D8_v2, 2D, uc, N) X(cuMemsetD2D8_v2_ptds, 2D, uc, N)                                     \
	X(cuMemsetD2D16_v2, 2D, us, N) X(cuMemsetD2D16_v2_ptds, 2D, us, N)                                   \
	X(cuMemsetD2D32_v2, 2D, ui, N) X(cuMemsetD2D32_v2_ptds, 2D, ui, N)                                   \
	X(cuMemsetD2D8Async, 2D, uc, S) X(cuMemsetD2D8Async_ptsz, 2D, uc, S)                                 \
	X(cuMemsetD2D16Async, 2D, us, S) X(cuMemsetD2D16Async_ptsz, 2D, us, S)                               \
	X(cuMemsetD2D32Async, 2D, ui, S) X(cuMemsetD2D32Async_ptsz, 2D, ui, S)

/* The arguments of each form, from the descriptor d (and d2, dp) of issue_memcpy and the memset
 * m of issue_memset; then the stream s, or nothing. */
#define ISSUE_CPY_LINEAR d.dstDevice, d.srcDevice, d.WidthInBytes
#define ISSUE_CPY_PEER d.dstDevice, op->u.memcpy.dst_ctx, d.srcDevice, op->u.memcpy.src_ctx, d.WidthInBytes
#define ISSUE_CPY_HTOD d.dstDevice, d.srcHost, d.WidthInBytes
#define ISSUE_CPY_DTOH d.dstHost, d.srcDevice, d.WidthInBytes
#define ISSUE_CPY_2D desc_2d(&d, &d2)
#define ISSUE_CPY_3D &d
#define ISSUE_CPY_3DPEER desc_peer(op, &d, &dp)
#define ISSUE_SET_1D(v) m->dst, v, m->width
#define ISSUE_SET_2D(v) m->dst, m->pitch, v, m->width, m->height
#define ISSUE_STREAM_N
#define ISSUE_STREAM_S , s

static CUresult issue_memcpy(const struct cap_op *op)
{
	CUDA_MEMCPY3D d;
	CUDA_MEMCPY2D d2;
	CUDA_MEMCPY3D_PEER dp;
	CUstream s = op->stream;
	CUresult rc;

	issue_desc(op, &d);
	switch ((enum drv_api_id)op->api) {
#define ISSUE_CPY_CASE_(sym, form, st)                                                                      \
	case DRV_ID_##sym:                                                                                  \
		rc = DRV_REAL(sym)(ISSUE_CPY_##form ISSUE_STREAM_##st);                                     \
		break;
		ISSUE_MEMCPY_LIST(ISSUE_CPY_CASE_)
#undef ISSUE_CPY_CASE_
	default:
		rc = CUDA_ERROR_NOT_SUPPORTED;
		break;
	}
	return rc;
}

static CUresult issue_memset(const struct cap_op *op)
{
	const struct cap_memset *m = &op->u.memset;
	unsigned char uc = (unsigned char)m->value;
	unsigned short us = (unsigned short)m->value;
	unsigned int ui = m->value;
	CUstream s = op->stream;
	CUresult rc;

	switch ((enum drv_api_id)op->api) {
#define ISSUE_SET_CASE_(sym, form, val, st)                                                                 \
	case DRV_ID_##sym:                                                                                  \
		rc = DRV_REAL(sym)(ISSUE_SET_##form(val) ISSUE_STREAM_##st);                                \
		break;
		ISSUE_MEMSET_LIST(ISSUE_SET_CASE_)
#undef ISSUE_SET_CASE_
	default:
		rc = CUDA_ERROR_NOT_SUPPORTED;
		break;
	}
	return rc;
}

#define ISSUE_INLINE_PARAMS 64 /* parameter pointers on the stack; more are malloc'd */

static CUresult issue_kernel(const struct cap_op *op)
{
	const struct cap_kernel *k = &op->u.kernel;
	void *inline_ptrs[ISSUE_INLINE_PARAMS];
	void **ptrs = NULL, **extra = NULL;
	size_t extra_size = k->param_size;
	void *extra_buf[5];
	CUlaunchConfig cfg;
	CUresult rc;

	if (k->via_extra) {
		extra_buf[0] = CU_LAUNCH_PARAM_BUFFER_POINTER;
		extra_buf[1] = k->params;
		extra_buf[2] = CU_LAUNCH_PARAM_BUFFER_SIZE;
		extra_buf[3] = &extra_size;
		extra_buf[4] = CU_LAUNCH_PARAM_END;
		extra = extra_buf;
	} else {
		uint32_t n = k->info ? k->info->nparams : 0;

		ptrs = inline_ptrs;
		if (n > ISSUE_INLINE_PARAMS) {
			ptrs = malloc(n * sizeof(*ptrs));
			if (!ptrs)
				return CUDA_ERROR_OUT_OF_MEMORY;
		}
		for (uint32_t i = 0; i < n; i++)
			ptrs[i] = (char *)k->params + k->info->offset[i];
	}
	memset(&cfg, 0, sizeof(cfg));
	cfg.gridDimX = k->grid[0];
	cfg.gridDimY = k->grid[1];
	cfg.gridDimZ = k->grid[2];
	cfg.blockDimX = k->block[0];
	cfg.blockDimY = k->block[1];
	cfg.blockDimZ = k->block[2];
	cfg.sharedMemBytes = k->shared_bytes;
	cfg.hStream = op->stream;
	cfg.attrs = k->attrs;
	cfg.numAttrs = k->nattrs;
	switch ((enum drv_api_id)op->api) {
	case DRV_ID_cuLaunchKernel:
		rc = DRV_REAL(cuLaunchKernel)(k->handle, k->grid[0], k->grid[1], k->grid[2], k->block[0], k->block[1],
					       k->block[2], k->shared_bytes, op->stream, ptrs, extra);
		break;
	case DRV_ID_cuLaunchKernel_ptsz:
		rc = DRV_REAL(cuLaunchKernel_ptsz)(k->handle, k->grid[0], k->grid[1], k->grid[2], k->block[0],
						    k->block[1], k->block[2], k->shared_bytes, op->stream, ptrs, extra);
		break;
	case DRV_ID_cuLaunchCooperativeKernel:
		rc = DRV_REAL(cuLaunchCooperativeKernel)(k->handle, k->grid[0], k->grid[1], k->grid[2], k->block[0],
							  k->block[1], k->block[2], k->shared_bytes, op->stream, ptrs);
		break;
	case DRV_ID_cuLaunchCooperativeKernel_ptsz:
		rc = DRV_REAL(cuLaunchCooperativeKernel_ptsz)(k->handle, k->grid[0], k->grid[1], k->grid[2],
							       k->block[0], k->block[1], k->block[2], k->shared_bytes,
							       op->stream, ptrs);
		break;
	case DRV_ID_cuLaunchKernelEx:
		rc = DRV_REAL(cuLaunchKernelEx)(&cfg, k->handle, ptrs, extra);
		break;
	case DRV_ID_cuLaunchKernelEx_ptsz:
		rc = DRV_REAL(cuLaunchKernelEx_ptsz)(&cfg, k->handle, ptrs, extra);
		break;
	default:
		rc = CUDA_ERROR_NOT_SUPPORTED;
		break;
	}
	if (ptrs && ptrs != inline_ptrs)
		free(ptrs);
	return rc;
}

CUresult cap_op_issue(const struct cap_op *op)
{
	const struct cap_event_op *e = &op->u.event;

	switch (op->kind) {
	case CAP_OP_KERNEL:
		return issue_kernel(op);
	case CAP_OP_MEMCPY:
		return issue_memcpy(op);
	case CAP_OP_MEMSET:
		return issue_memset(op);
	case CAP_OP_EVENT_RECORD:
		switch ((enum drv_api_id)op->api) {
		case DRV_ID_cuEventRecord:
			return DRV_REAL(cuEventRecord)(e->event, op->stream);
		case DRV_ID_cuEventRecord_ptsz:
			return DRV_REAL(cuEventRecord_ptsz)(e->event, op->stream);
		case DRV_ID_cuEventRecordWithFlags:
			return DRV_REAL(cuEventRecordWithFlags)(e->event, op->stream, e->flags);
		case DRV_ID_cuEventRecordWithFlags_ptsz:
			return DRV_REAL(cuEventRecordWithFlags_ptsz)(e->event, op->stream, e->flags);
		default:
			return CUDA_ERROR_NOT_SUPPORTED;
		}
	case CAP_OP_EVENT_WAIT:
		if (op->api == DRV_ID_cuStreamWaitEvent)
			return DRV_REAL(cuStreamWaitEvent)(op->stream, e->event, e->flags);
		if (op->api == DRV_ID_cuStreamWaitEvent_ptsz)
			return DRV_REAL(cuStreamWaitEvent_ptsz)(op->stream, e->event, e->flags);
		return CUDA_ERROR_NOT_SUPPORTED;
	case CAP_OP_HOST_FN:
		if (op->api == DRV_ID_cuLaunchHostFunc)
			return DRV_REAL(cuLaunchHostFunc)(op->stream, op->u.host_fn.fn, op->u.host_fn.data);
		if (op->api == DRV_ID_cuLaunchHostFunc_ptsz)
			return DRV_REAL(cuLaunchHostFunc_ptsz)(op->stream, op->u.host_fn.fn, op->u.host_fn.data);
		return CUDA_ERROR_NOT_SUPPORTED;
	}
	return CUDA_ERROR_NOT_SUPPORTED;
}
