/* streams.c - what capture knows of streams and events: a process-wide record per stream (its
 * kind, learned once with cuStreamGetFlags unless capture saw it created) and per event, and
 * their slots in the open window. capture layer.
 *
 * The stream an op names depends on the entry point: handle 0 is the legacy default stream for
 * the plain forms and the calling thread's per-thread default stream for _ptsz/_ptds forms;
 * CU_STREAM_LEGACY and CU_STREAM_PER_THREAD name them explicitly. Both default streams are per
 * context, and per-thread streams also per thread.
 *
 * Threads come and go without telling anyone, so per-thread stream records are bounded: when
 * PT_MAX of them exist, those not used in the open window are dropped (a live thread that
 * comes back gets a new record; only its trace track number changes). */
#include <stdlib.h>

#include "capture/capture_int.h"
#include "common/compiler.h"
#include "common/errors.h"
#include "common/hash.h"

static struct cf_map streams;    /* created stream handle, or hash of a default stream -> record */
static struct cf_map events;     /* event handle -> struct cap_event_rec */
static uint32_t next_stream_id = 1; /* number of the next stream record */
static size_t nbytes;            /* bytes of records */
static uint32_t npt;             /* per-thread stream records */

#define PT_MAX 256u              /* per-thread stream records kept before a sweep */

static uint64_t default_key(int which, CUcontext ctx, uint32_t tid)
{
	/* created handles are pointers; these hashes practically never equal one */
	return cf_hash_combine(cf_hash_combine(0x5354524dull + (uint64_t)which, (uint64_t)(uintptr_t)ctx), tid);
}

static struct cap_stream *add(uint64_t key, CUstream h, CUcontext ctx, uint32_t tid, enum cap_stream_kind kind)
{
	struct cap_stream *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->handle = h;
	s->ctx = ctx;
	s->tid = tid;
	s->kind = (uint8_t)kind;
	s->id = next_stream_id++;
	if (cf_map_put(&streams, key, s) != 0) {
		free(s);
		return NULL;
	}
	nbytes += sizeof(*s);
	if (kind == CAP_STREAM_PER_THREAD)
		npt++;
	return s;
}

/* Drop the per-thread stream records not used in the open window (their threads may be gone). */
static void sweep_per_thread(void)
{
	uint64_t *keys, k;
	size_t n = 0;
	void *v;

	keys = malloc(npt * sizeof(*keys));
	if (!keys)
		return;
	for (size_t i = 0; cf_map_next(&streams, &i, &k, &v) && n < npt;) {
		const struct cap_stream *s = v;

		if (s->kind == CAP_STREAM_PER_THREAD && (!cap__s.cur || s->win != cap__s.cur->seq))
			keys[n++] = k;
	}
	for (size_t i = 0; i < n; i++) {
		free(cf_map_del(&streams, keys[i]));
		nbytes -= sizeof(struct cap_stream);
		npt--;
	}
	free(keys);
}

struct cap_stream *cap__stream_find(CUstream h, int pt, CUcontext ctx, uint32_t tid)
{
	if (h == CU_STREAM_LEGACY || (!h && pt == SHIM_PT_NONE))
		return cf_map_get(&streams, default_key(1, ctx, 0));
	if (h == CU_STREAM_PER_THREAD || !h)
		return cf_map_get(&streams, default_key(2, ctx, tid));
	return cf_map_get(&streams, (uint64_t)(uintptr_t)h);
}

struct cap_stream *cap__stream_get(CUstream h, int pt, CUcontext ctx, uint32_t tid)
{
	struct cap_stream *s;
	unsigned int flags = 0;
	uint64_t key;

	if (h == CU_STREAM_LEGACY || (!h && pt == SHIM_PT_NONE)) {
		key = default_key(1, ctx, 0);
		s = cf_map_get(&streams, key);
		return s ? s : add(key, h, ctx, 0, CAP_STREAM_LEGACY);
	}
	if (h == CU_STREAM_PER_THREAD || !h) {
		key = default_key(2, ctx, tid);
		s = cf_map_get(&streams, key);
		if (s)
			return s;
		if (npt >= PT_MAX)
			sweep_per_thread();
		return add(key, h, ctx, tid, CAP_STREAM_PER_THREAD);
	}
	key = (uint64_t)(uintptr_t)h;
	s = cf_map_get(&streams, key);
	if (s)
		return s;
	cap__own_call(SHIM_ID_cuStreamGetFlags);
	if (SHIM_REAL(cuStreamGetFlags)(h, &flags) != CUDA_SUCCESS)
		flags = 0; /* the call itself will fail; blocking is the conservative guess */
	return add(key, h, NULL, 0, (flags & CU_STREAM_NON_BLOCKING) ? CAP_STREAM_NON_BLOCKING : CAP_STREAM_BLOCKING);
}

void cap_stream_created(CUstream h, unsigned int flags)
{
	uint64_t key = (uint64_t)(uintptr_t)h;
	struct cap_stream *old;

	cf_assert(cf_serial_is_held()); /* the caller's lock (capture.h) */
	if (!h || h == CU_STREAM_LEGACY || h == CU_STREAM_PER_THREAD)
		return;
	old = cf_map_del(&streams, key); /* a record made before the create was seen, or a reused handle */
	if (old)
		nbytes -= sizeof(*old);
	free(old);
	add(key, h, NULL, 0, (flags & CU_STREAM_NON_BLOCKING) ? CAP_STREAM_NON_BLOCKING : CAP_STREAM_BLOCKING);
}

void cap_stream_forget(CUstream h)
{
	struct cap_stream *s;

	cf_assert(cf_serial_is_held());
	if (!h || h == CU_STREAM_LEGACY || h == CU_STREAM_PER_THREAD)
		return;
	s = cf_map_del(&streams, (uint64_t)(uintptr_t)h);
	if (s)
		nbytes -= sizeof(*s);
	free(s);
}

struct cap_event_rec *cap__event_find(CUevent e)
{
	return cf_map_get(&events, (uint64_t)(uintptr_t)e);
}

struct cap_event_rec *cap__event_get(CUevent e)
{
	struct cap_event_rec *r = cf_map_get(&events, (uint64_t)(uintptr_t)e);

	if (r)
		return r;
	r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->handle = e;
	if (cf_map_put(&events, (uint64_t)(uintptr_t)e, r) != 0) {
		free(r);
		return NULL;
	}
	nbytes += sizeof(*r);
	return r;
}

void cap_event_forget(CUevent e)
{
	struct cap_event_rec *r;

	cf_assert(cf_serial_is_held());
	r = cf_map_del(&events, (uint64_t)(uintptr_t)e);
	if (r)
		nbytes -= sizeof(*r);
	free(r);
}

void cap__streams_fini(void)
{
	void *v;

	for (size_t i = 0; !cap__leaking && cf_map_next(&streams, &i, NULL, &v);)
		free(v);
	for (size_t i = 0; !cap__leaking && cf_map_next(&events, &i, NULL, &v);)
		free(v);
	cap__map_drop(&streams);
	cap__map_drop(&events);
	next_stream_id = 1;
	nbytes = 0;
	npt = 0;
}

size_t cap__streams_bytes(void)
{
	return nbytes + cf_map_bytes(&streams) + cf_map_bytes(&events);
}
