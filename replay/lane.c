/* lane.c - the armed lane (issue 22): one function that records and defers a call that repeats
 * the predicted window's op where replay follows one template exactly. replay layer; reads and
 * writes capture's open window directly (capture/capture_int.h), the one place outside capture
 * that does, because the two halves it joins otherwise re-establish the same facts on every call.
 *
 * Why an arm. Before the lane, a copy the loop repeated went through cap_record (is the window
 * predicted, is the prediction's window current, does the slot repeat, ...), capture's lane
 * (repeat), rpl_op (is replay ready, matching, following one candidate, ...), its lane (follow)
 * and cap_op_done, each a call, each asking again what the op before had just established. Most
 * of those facts cannot change between two calls unless some other engine entry ran in between,
 * and every entry takes the engine's lock. So when replay defers an op capture's lane recorded
 * (follow, or op_long), it arms the lane (rpl__lane_arm: a flag and the thread, in the head
 * the engine reads inline), and every other acquisition of the lock clears the flag
 * (rpl_lane_disarm: shim/engine.c lock_hold and the report writer's trylock), as does the next
 * stream-work call itself when it takes it (rpl_lane_take_arm). That call, by the same thread,
 * then comes here: the state the op before left is checked once (arm_holds, at the first use
 * after an arming; later lane ops keep what it found), and the call only on what varies with its
 * position (the predicted op, the slot, the stream, the template's op and its segment) and on
 * its own arguments, and is taken: recorded and deferred, the stores the two lanes made and the
 * counts left for one pass over the ops taken (rpl_lane_settle), made before anything else can
 * read them (any other acquisition, a refusal, a change of stream, the segment's end). Anything
 * else (another thread, a bound reached, a condition failing) takes the usual path, which leaves
 * what it always did: the lane changed nothing but settle what it took before.
 *
 * What the arm relies on, each argued from "no other acquisition since the arming op":
 *  - capture: ce->cur is the armed window (a window closes only under the lock; the arming op
 *    did not close it, else replay would not have deferred it); the prediction's last window
 *    pw is the same (it changes only when a window closes or a shape is evicted); the allocation
 *    map's generation equals pw's (allocations and frees take the lock); w->filled and pw->nops
 *    only grow under the lock; the function records' generation likewise (kernel lookups).
 *  - replay: mstate, ncand, cand[0], nfailed, def_copied, stopped, def_win change only inside
 *    replay's calls, all under the lock; depth equals w->nops (arm_holds) and both advance by one
 *    per lane op.
 * A build published by another thread, a query, an allocation or a free, a stream destroyed, a
 * signal's report: each takes the lock and disarms it. */
#include <stddef.h>
#include <string.h>

#include "capture/capture_int.h"
#include "common/compiler.h"
#include "replay/replay_int.h"

/* What the arming op established, checked when the lane is first taken after it (most arms are
 * never used: another acquisition comes first, where a program allocates or queries between
 * ops); true with the arm's fields set. */
static bool arm_holds(struct rpl_engine *re)
{
	struct cap_engine *ce = re->cap;
	struct rpl_lane *a = &re->st.lane;
	const struct rpl_template *t = re->st.cand[0];
	const struct cap_window *pw = ce->pred ? ce->pred->last : NULL;
	struct cap_window *w = ce->cur;
	uint32_t limit;

	if (!ce->head.ready || !w || ce->cfg.no_fast_lane || !pw || pw->alloc_gen_begin != ce->alloc.gen ||
	    re->st.stopped || !re->st.ready) {
		/* these hold for the rest of the window (an allocation changed the map since its
		 * prediction began, ...): not armed again in it */
		a->refused_win = w ? w->seq : 0;
		return false;
	}
	if (re->st.mstate != RPL_M_MATCHING || re->st.ncand != 1 || re->st.nfailed || re->st.def_copied ||
	    re->st.depth != w->nops || (re->st.ndef && re->st.def_win != w->seq))
		return false; /* two candidates, say, until the window shows which it is */
	/* below pw's last op: the only one that can end a window (CAP_OPF_ENDS_WINDOW: capture
	 * closes the window at its record), so the lane never compares the flag */
	limit = pw->nops - 1 < w->filled ? pw->nops - 1 : w->filled;
	if (limit > ce->cfg.window_max_ops - 1)
		limit = ce->cfg.window_max_ops - 1;
	if (limit > t->nops - 1)
		limit = t->nops - 1;
	a->op_end = &w->ops[limit];
	a->w = w;
	a->pw = pw;
	a->t = t;
	/* no lookup's answer changed since p's window began: a kernel op's function record is its
	 * own (record.c: repeat_kernel) */
	a->funcs_same = pw->funcs_gen_begin == pw->funcs_gen_end && pw->funcs_gen_end == ce->funcs.gen;
	/* the arena changes only under the lock: empty now, empty for the held run */
	a->borrow = w->arena.used == 0;
	a->op = &w->ops[w->nops];
	a->p = &pw->ops[w->nops];
	a->o = &t->ops[w->nops];
	a->s = NULL;
	a->seg_last = NULL;
	if (w->nops < limit && t->ops[w->nops].seg >= 0) {
		const struct rpl_seg *g = &t->segs[t->ops[w->nops].seg];

		a->seg_last = &w->ops[g->first + g->n - 1];
	}
	a->held = true;
	return true;
}

/* Whether the parameters of kernel call c repeat pb's (p's, laid out as f says, which has some):
 * cap__params_repeat, inlined, and never with no kernelParams. The bytes are not copied: the op
 * borrows p's (issue 22, capture_int.h: lender). Out of line (as it was, to keep its loop's
 * pointers in registers while it compared by the layout's sizes), the compare by size
 * (cap_func.by_size) cost recsys 6 instructions an op more. */
static inline bool params_same(const struct cap_call *c, const struct cap_func *f, const char *pb)
{
	return c->u.kernel.params && cap__params_repeat(c, f, pb);
}

/* The kernel call c launches p's function as p did (record.c: repeat_kernel's conditions where
 * no lookup changed, but the parameters: params_same): its function record, else NULL. */
static inline struct cap_func *kernel_same_launch(const struct cap_call *c, const struct cap_op *p)
{
	const struct cap_kernel *pk = &p->u.kernel;
	struct cap_func *f = (struct cap_func *)pk->info;

	if (!cap__kernel_call_same_launch(c, pk) || !f)
		return NULL; /* (kernelParams NULL with parameters: params_same refuses it) */
	cf_assert(!f->barrier && f->layout_known && f->param_bytes == pk->param_size);
	return f;
}

/* The stores and counts of the ops the lane took since it last settled: w->ops[w->nops ..
 * w->nops + pending), each of p's vid, all on the stream a->s, by the armed thread (rpl_lane:
 * a stream change settles first). Each is what capture's lane_store and cap_op_done, and
 * replay's follow, would have left; made here in one pass, they cost a third of what they did
 * op by op (issue 22). */
static void rpl_lane_settle(struct rpl_engine *re)
{
	struct rpl_lane *a = &re->st.lane;
	struct cap_engine *ce = re->cap;
	struct cap_window *w = a->w;
	struct cap_stream *s = a->s;
	uint32_t n = re->head.lane_pending, from = w->nops, end = from + n, tid = re->head.lane_tid, d0;
	uint64_t copies = 0, bytes_copied = 0, memsets = 0, bytes_set = 0, launches = 0, seq = ce->op_seq;
	const uint16_t sslot = s->slot; /* (locals: the ops' stores could alias s) */
	/* an op's flags (0) and stream kind, side by side: one store (issue 22) */
	const uint16_t flags_kind = (uint16_t)((unsigned)s->kind << 8);

	_Static_assert(offsetof(struct cap_op, stream_kind) == offsetof(struct cap_op, flags) + 1 &&
			       __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
		       "cap_op: flags, then stream_kind, stored as one little-endian word");

	cf_assert(n && a->held && ce->cur == w && re->st.depth == from && &w->ops[end] <= a->op_end);
	re->head.lane_pending = 0;
	for (struct cap_op *op = &w->ops[from], *last = &w->ops[end]; op < last; op++) {
		/* cap_op_done's counts (the lane takes kernels, copies and memsets only) */
		if (op->kind == CAP_OP_KERNEL) {
			/* the slot holds p's kernel part (capture.h: vid): its function record */
			launches++;
			__atomic_fetch_add(&((struct cap_func *)op->u.kernel.info)->launches, 1, __ATOMIC_RELAXED);
		} else {
			uint64_t bytes = cap_op_bytes(op);

			if (op->kind == CAP_OP_MEMCPY) {
				op->u.memcpy.staged = NULL;
				copies += bytes != 0;
				bytes_copied += bytes;
			} else {
				cf_assert(op->kind == CAP_OP_MEMSET);
				memsets += bytes != 0;
				bytes_set += bytes;
			}
		}
		/* capture's common stores (record.c: lane_store). The slot holds an op of p's vid: its
		 * kind, api, stream and context are the call's already (capture.h: vid), and its call
		 * site and time stamp are 0 as every op's where neither is recorded; key, bind and vid
		 * are p's (the stream's handle is the call's: a legacy stream's record may have been
		 * named 0 or CU_STREAM_LEGACY first) */
		cf_assert(!op->callsite && !op->t_ns);
		memcpy(&op->flags, &flags_kind, sizeof(flags_kind)); /* flags 0, stream_kind */
		op->stream_slot = sslot;
		op->tid = tid;
		op->seq = ++seq;
	}
	ce->op_seq = seq;
	s->last = end - 1;
	w->nops = end;
	if (launches && a->borrow) {
		/* its launches borrowed p's bytes (rpl_lane): pw is the window's lender */
		cf_assert(!w->lender || w->lender == a->pw);
		w->lender = a->pw;
		w->borrow_hi = end;
	}
	if (launches)
		__atomic_fetch_add(&ce->totals.launches, launches, __ATOMIC_RELAXED);
	if (copies) {
		__atomic_fetch_add(&ce->totals.copies, copies, __ATOMIC_RELAXED);
		__atomic_fetch_add(&ce->totals.bytes_copied, bytes_copied, __ATOMIC_RELAXED);
	}
	if (memsets) {
		__atomic_fetch_add(&ce->totals.memsets, memsets, __ATOMIC_RELAXED);
		__atomic_fetch_add(&ce->totals.bytes_set, bytes_set, __ATOMIC_RELAXED);
	}
	ce->totals.ops_fast += n;
	/* replay's (follow), each op matched exactly and deferred in the window's run */
	re->totals.matched_ops += n;
	re->totals.lane_ops += n;
	re->st.ended = NULL;
	re->st.depth = end;
	d0 = re->st.ndef;
	if (!re->st.ndef) { /* the run's first: rpl__defer_in_window and rpl__note_exact */
		rpl__defer_in_window(re, from, w->seq);
		rpl__note_exact(re, a->t, true);
		n--;
	}
	cf_assert(re->st.def_win == w->seq && re->st.win_deferred);
	/* op by op, nexact followed ndef while they were equal (rpl__note_exact) */
	if (re->st.exact_t == a->t && re->st.nexact == re->st.ndef)
		re->st.nexact += n;
	re->st.ndef += n;
	re->totals.ops_deferred += n;
	/* one stream's ops: what device_idle would walk over at the segment's end, done once */
	cf_assert(re->st.def_first + d0 == from && re->st.ndef == d0 + (end - from));
	rpl__idle_note_run(re, d0, end - from, w->ops[from].stream);
}

void rpl_lane_settle_pending(struct rpl_engine *re)
{
	if (re->head.lane_pending)
		rpl_lane_settle(re);
}

void rpl_lane_disarm(struct rpl_engine *re)
{
	re->head.lane_armed_tid = 0;
	rpl_lane_settle_pending(re);
}

bool rpl_lane_take_arm(struct rpl_engine *re, uint32_t tid)
{
	bool armed = re->head.lane_armed_tid == tid;

	cf_assert(tid);
	re->head.lane_armed_tid = 0;
	if (!armed)
		rpl_lane_settle_pending(re); /* another thread's call: what the lane took is settled */
	return armed;
}

/* The lane refuses the call: what it took before is settled first (the usual path reads it). */
static enum rpl_lane_took __attribute__((noinline)) refuse(struct rpl_engine *re)
{
	rpl_lane_settle_pending(re);
	return RPL_LANE_REFUSED;
}

enum rpl_lane_took rpl_lane(struct rpl_engine *re, const struct cap_call *c, CUcontext ctx)
{
	struct rpl_lane *a = &re->st.lane;
	struct cap_engine *ce = re->cap;
	struct cap_func *f = NULL;
	const struct cap_op *p;
	const struct rpl_top *o;
	struct cap_stream *s;
	struct cap_op *op;
	uint32_t pending = re->head.lane_pending;

	if (!a->held && !arm_holds(re))
		return RPL_LANE_REFUSED; /* (nothing pending: only a lane op since the arming holds it) */
	op = a->op; /* the slot of index w->nops + pending: settled ops, then those taken since */
	if (op >= a->op_end)
		return refuse(re);
	p = a->p;
	o = a->o;
	cf_assert(ce->cur == a->w && re->st.depth == a->w->nops && re->st.cand[0] == a->t &&
		  re->st.mstate == RPL_M_MATCHING);
	cf_assert(p == &a->pw->ops[a->w->nops + pending] && op == &a->w->ops[a->w->nops + pending] &&
		  o == &a->t->ops[a->w->nops + pending]);
	/* capture's lane (record.c: cap_record, repeat, repeat_kernel); a window's op has a value
	 * identity (capture.h: vid), and only its last can end it (arm_holds: limit). Not capture's
	 * guess that a launch whose p had its own vid moves again (repeat_kernel): the parameters are
	 * compared here anyway, and the slot holding p's vid is what makes the op p's (3 an op) */
	cf_assert(p->vid && !(p->flags & CAP_OPF_ENDS_WINDOW));
	if (op->vid != p->vid || c->api != p->api || c->stream != p->stream || ctx != p->ctx)
		return refuse(re);
	/* an entry point's hook gives its calls one kind (but a copy's with no descriptor, which
	 * cap__call_repeats refuses: it compares the kinds) */
	cf_assert(c->kind == p->kind || c->kind == CAP_OP_KIND_COUNT);
	/* replay's (match.c: follow): the op will have p's vid, hence its key (capture.h: vid), and
	 * flags 0 */
	if (o->vid != p->vid || !rpl__top_graph_plain(o))
		return refuse(re);
	cf_assert(o->key == p->key);
	if (c->kind == CAP_OP_KERNEL) {
		if (!a->funcs_same || !(f = kernel_same_launch(c, p)))
			return refuse(re);
	} else if (!cap__call_repeats(c, p) || (c->kind == CAP_OP_MEMCPY && !op->u.memcpy.oned)) {
		return refuse(re);
	}
	/* the stream. A slot names one stream record in a window (record.c: stream_slot numbers a
	 * record once per window), so p on the slot the last lane op's p was on is on the same
	 * handle, entry point's kind and context, and so is the call (compared with p above): its
	 * record is the last lane op's (held: records change only under the lock), whose slot in
	 * this window was found equal. Else it is looked up: its record must name it in this window
	 * (a stream's first op of the window takes the usual path), in p's slot. The ops taken are
	 * settled before another stream's (rpl_lane_settle sets one stream's last). */
	if (cf_likely(a->s && p->stream_slot == a->s_slot && p->stream_kind == a->s_kind)) {
		s = a->s;
		cf_assert(s == cap__stream_get(ce, c->stream, drv_api[c->api].pt, ctx, re->head.lane_tid));
	} else {
		s = cap__stream_get(ce, c->stream, drv_api[c->api].pt, ctx, re->head.lane_tid);
		if (!s || s->win != a->w->seq || s->slot != p->stream_slot || s->kind != p->stream_kind)
			return refuse(re);
		if (pending) {
			rpl_lane_settle(re);
			pending = 0;
		}
		a->s = s;
		a->s_slot = s->slot;
		a->s_kind = s->kind;
	}
	cf_assert(s->win == a->w->seq && s->slot == p->stream_slot && s->kind == p->stream_kind);
	if (f) { /* (a kernel's: f is its function record) */
		/* the parameters, compared now (the driver is not called, so the op cannot fail once
		 * taken), and p's bytes borrowed: the window's lender is pw (rpl_lane_settle notes
		 * it), whose arena the close hands over or copies from (record.c: close_window);
		 * copied where the window has bytes of its own (a->borrow). A slot of p's vid holds
		 * p's kernel part but for them (capture.h). None: not NULL, as capture's lanes do
		 * (capture_int.h: cap__no_param_bytes) */
		void *buf = (void *)cap__no_param_bytes;

		if (f->param_bytes) {
			if (!params_same(c, f, p->u.kernel.params))
				return refuse(re);
			buf = p->u.kernel.params;
			if (cf_unlikely(!a->borrow) && !(buf = cf_arena_dup(&a->w->arena, buf, f->param_bytes)))
				return refuse(re); /* (the arena refused) */
		}
		cf_assert(op->u.kernel.info == f);
		op->u.kernel.params = buf;
	}
	cf_assert(op->kind == c->kind && op->api == c->api && op->stream == c->stream && op->ctx == ctx &&
		  op->key == p->key && op->bind == p->bind && op->vid == p->vid);
	re->head.lane_pending = pending + 1;
	a->op = op + 1;
	a->p = p + 1;
	a->o = o + 1;
	re->head.lane_armed_tid = re->head.lane_tid; /* the thread's next call may take it again */
	cf_assert(o->seg >= 0 && a->seg_last == &a->w->ops[a->t->segs[o->seg].first + a->t->segs[o->seg].n - 1]);
	if (cf_unlikely(op == a->seg_last)) {
		/* its segment ends with it: as op_long, launched or kept while the device is busy
		 * (launch.c), not a matching sample; what the launch changed is checked again at the
		 * lane's next use */
		rpl_lane_settle(re);
		rpl__segment_end(re);
		a->held = false;
		return RPL_LANE_TOOK_END;
	}
	return RPL_LANE_TOOK;
}

void rpl_lane_sampled(struct rpl_engine *re, uint64_t ns)
{
	rpl__match_sampled(re, ns);
}
