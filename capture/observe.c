/* observe.c - what a synchronize, query or free can observe of the open window: whether the
 * stream, event or context it names has work there, and whether an op there names a range of
 * memory. The engine ends a window only when it can (shim/engine.c). capture layer.
 *
 * Every answer is a function of the program's calls alone (which ops were recorded, on which
 * stream, which event each record names), never of what replay deferred or of the device's
 * progress, so a shape is cut at the same place in every sighting. Each stream and event record
 * remembers the window and index of its last op or record (record.c), so the stream and event
 * questions cost a hash lookup. */
#include <string.h>

#include "capture/capture_int.h"

static bool in_window(struct cap_engine *ce, uint64_t win, uint32_t index, uint32_t from)
{
	return ce->cur && win == ce->cur->seq && index >= from && index < ce->cur->nops;
}

bool cap_window_observed(struct cap_engine *ce, const struct cap_target *t, uint32_t from)
{
	const struct cap_window *w = ce->cur;

	if (!w || from >= w->nops)
		return false;
	switch (t->kind) {
	case CAP_TARGET_STREAM: {
		const struct cap_stream *s;

		/* the legacy stream orders with every blocking stream: keep it simple and safe */
		if (t->stream == CU_STREAM_LEGACY || (!t->stream && t->pt == DRV_PT_NONE))
			return true;
		s = cap__stream_find(ce, t->stream, t->pt, t->ctx, t->tid);
		return s && in_window(ce, s->win, s->last, from);
	}
	case CAP_TARGET_EVENT: {
		const struct cap_event_rec *r = cap__event_find(ce, t->event);

		return r && r->rec_win && in_window(ce, r->rec_win, r->rec_index, from);
	}
	default:
		return true;
	}
}

static bool overlaps(uint64_t first, uint64_t span, uint64_t base, uint64_t size)
{
	return span && first < base + size && base < first + span;
}

static bool op_references(const struct cap_op *op, uint64_t base, uint64_t size)
{
	switch (op->kind) {
	case CAP_OP_KERNEL:
		for (uint32_t off = 0; off + 8 <= op->u.kernel.param_size; off += 8) {
			uint64_t v;

			memcpy(&v, (const char *)op->u.kernel.params + off, 8);
			if (v >= base && v - base < size)
				return true;
		}
		return false;
	case CAP_OP_MEMCPY:
		return overlaps(op->u.memcpy.src_first, op->u.memcpy.src_span, base, size) ||
		       overlaps(op->u.memcpy.dst_first, op->u.memcpy.dst_span, base, size);
	case CAP_OP_MEMSET: {
		const struct cap_memset *m = &op->u.memset;
		uint64_t span = m->height ? (uint64_t)m->pitch * (m->height - 1) + (uint64_t)m->width * m->elem_size : 0;

		return overlaps(m->dst, span, base, size);
	}
	case CAP_OP_HOST_FN:
		return true; /* the program's own code may touch anything */
	default:
		return false;
	}
}

bool cap_window_references(struct cap_engine *ce, uint64_t base, uint64_t size)
{
	const struct cap_window *w = ce->cur;

	if (!w)
		return false;
	for (uint32_t i = 0; i < w->nops; i++)
		if (op_references(&w->ops[i], base, size))
			return true;
	return false;
}

bool cap_window_has_thread(struct cap_engine *ce, uint32_t tid)
{
	const struct cap_window *w = ce->cur;

	for (uint32_t i = 0; w && i < w->nops; i++)
		if (w->ops[i].tid == tid)
			return true;
	return false;
}

void cap_boundary_seen(struct cap_engine *ce, enum cap_boundary kind)
{
	if ((unsigned)kind < CAP_BOUNDARY_COUNT)
		ce->totals.boundaries[kind]++;
}
