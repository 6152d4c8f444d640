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
#include <string.h>

#include "capture/capture_int.h"
#include "common/compiler.h"
#include "common/errors.h"
#include "common/hash.h"

#define PT_MAX 256u              /* per-thread stream records kept before a sweep */

static uint64_t default_key(int which, CUcontext ctx, uint32_t tid)
{
	/* created handles are pointers; these hashes practically never equal one */
	return cf_hash_combine(cf_hash_combine(0x5354524dull + (uint64_t)which, (uint64_t)(uintptr_t)ctx), tid);
}

static struct cap_stream *add(struct cap_engine *ce, uint64_t key, CUstream h, CUcontext ctx, uint32_t tid,
			      enum cap_stream_kind kind)
{
	struct cap_stream *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->handle = h;
	s->ctx = ctx;
	s->tid = tid;
	s->kind = (uint8_t)kind;
	s->id = ce->streams.next_id++;
	if (cf_map_put(&ce->streams.streams, key, s) != 0) {
		free(s);
		return NULL;
	}
	ce->streams.nbytes += sizeof(*s);
	if (kind == CAP_STREAM_PER_THREAD)
		ce->streams.npt++;
	return s;
}

/* A record is about to be freed: no remembered lookup may answer it any more. */
static void hits_clear(struct cap_engine *ce)
{
	memset(ce->streams.hits, 0, sizeof(ce->streams.hits));
}

/* Drop the per-thread stream records not used in the open window (their threads may be gone). */
static void sweep_per_thread(struct cap_engine *ce)
{
	uint64_t *keys, k;
	size_t n = 0;
	void *v;

	keys = malloc(ce->streams.npt * sizeof(*keys));
	if (!keys)
		return;
	hits_clear(ce);
	for (size_t i = 0; cf_map_next(&ce->streams.streams, &i, &k, &v) && n < ce->streams.npt;) {
		const struct cap_stream *s = v;

		if (s->kind == CAP_STREAM_PER_THREAD && (!ce->cur || s->win != ce->cur->seq))
			keys[n++] = k;
	}
	for (size_t i = 0; i < n; i++) {
		free(cf_map_del(&ce->streams.streams, keys[i]));
		ce->streams.nbytes -= sizeof(struct cap_stream);
		ce->streams.npt--;
	}
	free(keys);
}

struct cap_stream *cap__stream_find(struct cap_engine *ce, CUstream h, int pt, CUcontext ctx, uint32_t tid)
{
	if (h == CU_STREAM_LEGACY || (!h && pt == DRV_PT_NONE))
		return cf_map_get(&ce->streams.streams, default_key(1, ctx, 0));
	if (h == CU_STREAM_PER_THREAD || !h)
		return cf_map_get(&ce->streams.streams, default_key(2, ctx, tid));
	return cf_map_get(&ce->streams.streams, (uint64_t)(uintptr_t)h);
}

static struct cap_stream *stream_lookup(struct cap_engine *ce, CUstream h, int pt, CUcontext ctx, uint32_t tid);

/* The remembered answers are exact: an entry holds the arguments it was asked with, and every
 * record's lifetime ends through hits_clear first. */
struct cap_stream *cap__stream_get_slow(struct cap_engine *ce, struct cap_stream_hit *hit, CUstream h, int pt,
					CUcontext ctx, uint32_t tid)
{
	hit->s = stream_lookup(ce, h, pt, ctx, tid);
	hit->h = h;
	hit->pt = pt;
	hit->ctx = ctx;
	hit->tid = tid;
	return hit->s;
}

static struct cap_stream *stream_lookup(struct cap_engine *ce, CUstream h, int pt, CUcontext ctx, uint32_t tid)
{
	struct cap_stream *s;
	unsigned int flags = 0;
	uint64_t key;

	if (h == CU_STREAM_LEGACY || (!h && pt == DRV_PT_NONE)) {
		key = default_key(1, ctx, 0);
		s = cf_map_get(&ce->streams.streams, key);
		return s ? s : add(ce, key, h, ctx, 0, CAP_STREAM_LEGACY);
	}
	if (h == CU_STREAM_PER_THREAD || !h) {
		key = default_key(2, ctx, tid);
		s = cf_map_get(&ce->streams.streams, key);
		if (s)
			return s;
		if (ce->streams.npt >= PT_MAX)
			sweep_per_thread(ce);
		return add(ce, key, h, ctx, tid, CAP_STREAM_PER_THREAD);
	}
	key = (uint64_t)(uintptr_t)h;
	s = cf_map_get(&ce->streams.streams, key);
	if (s)
		return s;
	cap__own_call(ce, DRV_ID_cuStreamGetFlags);
	if (DRV_REAL(cuStreamGetFlags)(h, &flags) != CUDA_SUCCESS)
		flags = 0; /* the call itself will fail; blocking is the conservative guess */
	return add(ce, key, h, NULL, 0,
		   (flags & CU_STREAM_NON_BLOCKING) ? CAP_STREAM_NON_BLOCKING : CAP_STREAM_BLOCKING);
}

void cap_stream_created(struct cap_engine *ce, CUstream h, unsigned int flags)
{
	uint64_t key = (uint64_t)(uintptr_t)h;
	struct cap_stream *old;

	cf_assert(cf_serial_is_held()); /* the caller's lock (capture.h) */
	if (!h || h == CU_STREAM_LEGACY || h == CU_STREAM_PER_THREAD)
		return;
	hits_clear(ce);
	old = cf_map_del(&ce->streams.streams, key); /* a record made before the create was seen, or a reused handle */
	if (old)
		ce->streams.nbytes -= sizeof(*old);
	free(old);
	add(ce, key, h, NULL, 0, (flags & CU_STREAM_NON_BLOCKING) ? CAP_STREAM_NON_BLOCKING : CAP_STREAM_BLOCKING);
}

void cap_stream_forget(struct cap_engine *ce, CUstream h)
{
	struct cap_stream *s;

	cf_assert(cf_serial_is_held());
	if (!h || h == CU_STREAM_LEGACY || h == CU_STREAM_PER_THREAD)
		return;
	hits_clear(ce);
	s = cf_map_del(&ce->streams.streams, (uint64_t)(uintptr_t)h);
	if (s)
		ce->streams.nbytes -= sizeof(*s);
	free(s);
}

struct cap_event_rec *cap__event_find(struct cap_engine *ce, CUevent e)
{
	return cf_map_get(&ce->streams.events, (uint64_t)(uintptr_t)e);
}

struct cap_event_rec *cap__event_get(struct cap_engine *ce, CUevent e)
{
	struct cap_event_rec *r = cf_map_get(&ce->streams.events, (uint64_t)(uintptr_t)e);

	if (r)
		return r;
	r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->handle = e;
	if (cf_map_put(&ce->streams.events, (uint64_t)(uintptr_t)e, r) != 0) {
		free(r);
		return NULL;
	}
	ce->streams.nbytes += sizeof(*r);
	return r;
}

void cap_event_forget(struct cap_engine *ce, CUevent e)
{
	struct cap_event_rec *r;

	cf_assert(cf_serial_is_held());
	r = cf_map_del(&ce->streams.events, (uint64_t)(uintptr_t)e);
	if (r)
		ce->streams.nbytes -= sizeof(*r);
	free(r);
}

void cap__streams_fini(struct cap_engine *ce)
{
	void *v;

	hits_clear(ce);
	for (size_t i = 0; cf_map_next(&ce->streams.streams, &i, NULL, &v);)
		free(v);
	for (size_t i = 0; cf_map_next(&ce->streams.events, &i, NULL, &v);)
		free(v);
	cf_map_fini(&ce->streams.streams);
	cf_map_fini(&ce->streams.events);
	ce->streams.next_id = 1;
	ce->streams.nbytes = 0;
	ce->streams.npt = 0;
}

size_t cap__streams_bytes(struct cap_engine *ce)
{
	return ce->streams.nbytes + cf_map_bytes(&ce->streams.streams) + cf_map_bytes(&ce->streams.events);
}
