/* record.c - the recording state: the open window, what goes into it, and closing it at a
 * boundary. capture layer; owns capture's part of the engine (struct cap_engine,
 * capture_int.h), made and destroyed here: every mutable thing capture keeps (windows, the
 * trie, the allocation map, function, stream and event records, call sites, the trace buffer)
 * is a field of it, and every capture function that reads or changes one takes the part as its
 * first argument. Two parts never share anything; a forked child abandons its parent's (the
 * engine makes a new one) and nothing here ever walks or frees it.
 *
 * Invariants:
 *  1. Callers serialize (the engine's mutex): ops of all threads land in one window, in the
 *     order their calls took the lock. One process-wide window is what the host can observe as
 *     one unit: a boundary on any thread observes the device for every thread's earlier work.
 *  2. An op is recorded before the driver sees the call and is never changed afterwards except
 *     for CAP_OPF_FAILED (the driver refused it); failed ops are dropped when the window closes,
 *     so a shape only ever holds calls the driver accepted. An op refused after its window
 *     closed (invariant 4, or another thread's boundary) is taken out again: its shape is
 *     dropped and the window filed anew without it (cap_op_done).
 *  3. Everything an op keeps is a deep copy in its window's arena or array: nothing points into
 *     the caller's memory after cap_record returns (staging pageable copy sources is optional,
 *     cap_op_stage, because only a deferred op needs it).
 *  4. A window closes before the boundary call reaches the driver; an op that is itself
 *     host-visible (CAP_OPF_ENDS_WINDOW) closes its own window right after being recorded, so
 *     the window's last op is that call.
 *  5. Stream and event slots are numbered per window by first use; a record's (win, slot) pair
 *     is only meaningful while win is the open window's number, which changes at every close.
 *  6. A pinned window (cap_shape_pin_last: a template build reads it outside the lock) is never
 *     changed, recycled or freed: when it leaves its shape it becomes an orphan, recycled by
 *     cap_window_unpin.
 *
 * States of the open window:
 *
 *     EMPTY --cap_record--> OPEN --cap_record--> OPEN
 *       ^                     |
 *       |          boundary, ENDS_WINDOW op, or full
 *       |                     v
 *       +---- recycled <-- CLOSED (failed ops dropped; empty -> recycled, else trie insert:
 *                                  it becomes its shape's last window)
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "capture/capture_int.h"
#include "common/clock.h"
#include "common/compiler.h"
#include "common/errors.h"
#include "common/log.h"


static const char *const boundary_names[CAP_BOUNDARY_COUNT] = {
#define CAP_BOUNDARY_NAME_(name, label) #name,
	CAP_BOUNDARY_LIST(CAP_BOUNDARY_NAME_)
#undef CAP_BOUNDARY_NAME_
};
static const char *const boundary_labels[CAP_BOUNDARY_COUNT] = {
#define CAP_BOUNDARY_LABEL_(name, label) label,
	CAP_BOUNDARY_LIST(CAP_BOUNDARY_LABEL_)
#undef CAP_BOUNDARY_LABEL_
};

const char *cap_boundary_name(enum cap_boundary b)
{
	return (unsigned)b < CAP_BOUNDARY_COUNT ? boundary_names[b] : "?";
}

const char *cap_boundary_label(enum cap_boundary b)
{
	return (unsigned)b < CAP_BOUNDARY_COUNT ? boundary_labels[b] : "?";
}

void cap__own_call(struct cap_engine *ce, enum drv_api_id id)
{
	ce->totals.own_calls++;
	if (ce->cfg.note_driver_call)
		ce->cfg.note_driver_call(id);
}

/* ------------------------------------------------------------------ windows */

struct cap_window *cap__window_new(void)
{
	struct cap_window *w = calloc(1, sizeof(*w));

	if (w) {
		cf_arena_init(&w->arena, 0);
		w->binds_new_from = UINT32_MAX;
	}
	return w;
}

void cap__window_free(struct cap_window *w)
{
	if (!w)
		return;
	cf_arena_fini(&w->arena);
	free(w->ops);
	free(w->streams);
	free(w->events);
	free(w);
}

void cap__window_reset(struct cap_window *w)
{
	cf_arena_reset(&w->arena);
	cap__borrow_none(w);
	w->nops = 0;
	w->binds_new_from = UINT32_MAX;
	w->nstreams = 0;
	w->nevents = 0;
	w->nfailed = 0;
	w->t_begin = w->t_end = 0;
	w->closed_by = 0;
	w->closed_api = 0;
	w->closed_site = 0;
}

size_t cap__window_bytes(const struct cap_window *w)
{
	return sizeof(*w) + w->cap * sizeof(*w->ops) + w->arena.reserved + w->capstreams * sizeof(*w->streams) +
	       w->capevents * sizeof(*w->events);
}

const struct cap_window *cap_window_current(struct cap_engine *ce)
{
	return ce->cur;
}

uint32_t cap_window_nops(const struct cap_window *w)
{
	return w->nops;
}

const struct cap_op *cap_window_op(const struct cap_window *w, uint32_t i)
{
	return i < w->nops ? &w->ops[i] : NULL;
}

uint32_t cap_window_nstreams(const struct cap_window *w)
{
	return w->nstreams;
}

const struct cap_wstream *cap_window_stream(const struct cap_window *w, uint32_t slot)
{
	return slot < w->nstreams ? &w->streams[slot] : NULL;
}

uint32_t cap_window_nevents(const struct cap_window *w)
{
	return w->nevents;
}

CUevent cap_window_event(const struct cap_window *w, uint32_t slot)
{
	return slot < w->nevents ? w->events[slot] : NULL;
}

uint64_t cap_window_holds(const struct cap_engine *ce, const struct cap_op *op, uint32_t i)
{
	const struct cap_window *w = ce->cur;

	return w && i < w->nops && &w->ops[i] == op ? w->seq : 0;
}

uint64_t cap_window_seq(const struct cap_window *w)
{
	return w->seq;
}

enum cap_boundary cap_window_closed_by(const struct cap_window *w)
{
	return (enum cap_boundary)w->closed_by;
}

uint16_t cap_window_closed_api(const struct cap_window *w)
{
	return w->closed_api;
}

uint64_t cap_window_closed_site(const struct cap_window *w)
{
	return w->closed_site;
}

/* ------------------------------------------------------------------ set-up */

struct cap_engine *cap_engine_create(const struct cap_config *cfg)
{
	struct cap_engine *ce = calloc(1, sizeof(*ce));

	if (!ce)
		return NULL;
	ce->cfg = *cfg;
	if (!ce->cfg.window_max_ops)
		ce->cfg.window_max_ops = CAP_DEFAULT_WINDOW_MAX_OPS;
	if (!ce->cfg.max_templates)
		ce->cfg.max_templates = 1;
	snprintf(ce->barrier, sizeof(ce->barrier), "%s", cfg->barrier_kernels ? cfg->barrier_kernels : "");
	ce->cfg.barrier_kernels = ce->barrier;
	ce->alloc.next_id = 1;
	ce->funcs.next_id = 1;
	ce->streams.next_id = 1;
	ce->trie.next_shape_id = 1;
	cap__images_init(ce);
	pthread_mutex_init(&ce->sites.lock, NULL);
	ce->cur = cap__window_new();
	if (!ce->cur) {
		free(ce);
		return NULL;
	}
	ce->cur->seq = ce->win_seq = 1;
	ce->head.ready = true;
	return ce;
}

void cap_set_replay(struct cap_engine *ce, void (*shape_evicted)(void *arg, struct cap_shape *s),
		    void (*report_extra)(void *arg, struct cf_json *j), void *arg)
{
	ce->cfg.shape_evicted = shape_evicted;
	ce->cfg.report_extra = report_extra;
	ce->cfg.arg = arg;
}

void cap_set_window_closing(struct cap_engine *ce, void (*fn)(void *arg), void *arg)
{
	ce->window_closing = fn;
	ce->closing_arg = arg;
}

void cap_engine_destroy(struct cap_engine *ce)
{
	if (!ce)
		return;
	cap__trie_fini(ce);
	cap__window_free(ce->cur);
	cap__window_free(ce->spare);
	cap__funcs_fini(ce);
	cap__images_fini(ce); /* after the function records, which name images */
	cap__streams_fini(ce);
	cap__alloc_fini(ce);
	cap__trace_fini(ce);
	cap__callsite_fini(ce);
	pthread_mutex_destroy(&ce->sites.lock);
	free(ce);
}

void cap_get_totals(struct cap_engine *ce, struct cap_totals *t)
{
	*t = ce->totals;
	t->launches = __atomic_load_n(&ce->totals.launches, __ATOMIC_RELAXED);
	t->copies = __atomic_load_n(&ce->totals.copies, __ATOMIC_RELAXED);
	t->memsets = __atomic_load_n(&ce->totals.memsets, __ATOMIC_RELAXED);
	t->bytes_copied = __atomic_load_n(&ce->totals.bytes_copied, __ATOMIC_RELAXED);
	t->bytes_set = __atomic_load_n(&ce->totals.bytes_set, __ATOMIC_RELAXED);
	t->ptx_texts_kept = ce->images.texts;
	t->ptx_bytes_kept = ce->images.text_bytes;
}

size_t cap_memory_parts(struct cap_engine *ce, struct cap_memory_parts *p)
{
	*p = (struct cap_memory_parts){
		.windows = sizeof(*ce) + (ce->cur ? cap__window_bytes(ce->cur) : 0) +
			   (ce->spare ? cap__window_bytes(ce->spare) : 0),
		.shapes = cap__trie_bytes(ce),
		.functions = cap__funcs_bytes(ce),
		.images = cap__images_bytes(ce),
		.streams = cap__streams_bytes(ce),
		.allocations = cap__alloc_bytes(ce),
		.trace = cap__trace_bytes(ce),
		.call_sites = cap__callsite_bytes(ce),
	};
	return p->windows + p->shapes + p->functions + p->images + p->streams + p->allocations + p->trace +
	       p->call_sites;
}

size_t cap_memory_bytes(struct cap_engine *ce)
{
	struct cap_memory_parts p;

	return cap_memory_parts(ce, &p);
}

static void keep_spare(struct cap_engine *ce, struct cap_window *w);

/* The open window w's borrowed parameters (capture_int.h: lender) become copies in its own
 * arena, and w->lender NULL. 0, or -CF_ENOMEM (then some may be copied, the others still
 * borrowed: w->lender stays). */
static int borrow_end(struct cap_window *w)
{
	const struct cap_window *l = w->lender;
	uint32_t n = w->nops < l->nops ? w->nops : l->nops;

	/* an op that borrowed holds the pointer of l's op at its index (the lanes borrow only
	 * their predicted op's bytes, and l's ops do not move while it lends: retract_closed);
	 * any other's bytes are w's own; none borrowed past borrow_hi */
	if (n > w->borrow_hi)
		n = w->borrow_hi;
	for (uint32_t i = 0; i < n; i++) {
		struct cap_kernel *k = &w->ops[i].u.kernel;
		void *buf;

		if (w->ops[i].kind != CAP_OP_KERNEL || l->ops[i].kind != CAP_OP_KERNEL || !k->param_size ||
		    k->params != l->ops[i].u.kernel.params)
			continue;
		cf_assert(cf_arena_holds(&l->arena, k->params));
		buf = cf_arena_dup(&w->arena, k->params, k->param_size);
		if (!buf)
			return -CF_ENOMEM;
		k->params = buf;
	}
	for (uint32_t i = 0; i < w->nops; i++) /* (debug builds: none is left) */
		cf_assert(w->ops[i].kind != CAP_OP_KERNEL || !w->ops[i].u.kernel.param_size ||
			  !cf_arena_holds(&l->arena, w->ops[i].u.kernel.params));
	cap__borrow_none(w);
	return 0;
}

/* Window l is about to be reset or freed: the open window's ops that borrowed from it get
 * copies (borrow_end), or, with no memory for them, l's blocks (l leaves its shape, and
 * nothing else reads its bytes: a pinned window is not reset until its build is done). */
static void lender_leaves(struct cap_engine *ce, struct cap_window *l)
{
	struct cap_window *w = ce->cur;

	if (!w || w == l || w->lender != l)
		return;
	cf_assert(!l->pinned);
	if (borrow_end(w) != 0) {
		cf_arena_move(&w->arena, &l->arena);
		cap__borrow_none(w);
	}
}

void cap__window_drop(struct cap_engine *ce, struct cap_window *w)
{
	keep_spare(ce, w);
}

const struct cap_window *cap_shape_pin_last(struct cap_engine *ce, struct cap_shape *s)
{
	(void)ce;
	if (s->last)
		s->last->pinned = true;
	return s->last;
}

void cap_window_unpin(struct cap_engine *ce, const struct cap_window *cw)
{
	struct cap_window *w = (struct cap_window *)cw; /* capture's own window, handed out read-only */

	if (!w)
		return;
	w->pinned = false;
	if (w->orphan) {
		w->orphan = false;
		lender_leaves(ce, w);
		cap__window_reset(w);
		keep_spare(ce, w);
	}
}

/* ------------------------------------------------------------------ closing */

/* Drop failed ops, keeping the order of the others. */
static void compact(struct cap_window *w)
{
	uint32_t j = 0;

	cf_assert(w->nfailed <= w->nops);
	if (!w->nfailed)
		return;
	for (uint32_t i = 0; i < w->nops; i++)
		if (!(w->ops[i].flags & CAP_OPF_FAILED))
			w->ops[j++] = w->ops[i];
	w->nops = j;
	w->nfailed = 0;
}

static int open_next(struct cap_engine *ce)
{
	struct cap_window *w = ce->spare;

	if (w) {
		ce->spare = NULL;
		cap__window_reset(w);
	} else {
		w = cap__window_new();
		if (!w)
			return -CF_ENOMEM;
	}
	ce->cur = w;
	w->seq = ++ce->win_seq;
	return 0;
}

/* Keep a window no longer needed as the spare (or free it when there is one); a pinned one is
 * left to its build (cap_window_unpin). */
static void keep_spare(struct cap_engine *ce, struct cap_window *w)
{
	if (!w)
		return;
	if (w->pinned) {
		w->orphan = true;
		return;
	}
	lender_leaves(ce, w);
	if (ce->spare)
		cap__window_free(w);
	else
		ce->spare = w;
}

/* ------------------------------------------------------------------ prediction */

/* The window that closed was shape s (NULL: not filed): the next window is expected to repeat
 * the shape that followed s last time, else s again. Only hashing uses the prediction
 * (cap_op_hash_like): a wrong one costs a compare, never a wrong key. */
static void predict_next(struct cap_engine *ce, struct cap_shape *s)
{
	if (ce->prev_shape && s)
		ce->prev_shape->succ = s;
	ce->prev_shape = s;
	ce->pred = s ? (s->succ ? s->succ : s) : NULL;
}

void cap__shape_gone(struct cap_engine *ce, struct cap_shape *s)
{
	if (ce->prev_shape == s)
		ce->prev_shape = NULL;
	if (ce->pred == s)
		ce->pred = NULL;
	for (struct cap_shape *o = ce->trie.mru; o; o = o->next)
		if (o->succ == s)
			o->succ = NULL;
}

/* resolves_now when the map changed since pw began: asked of the change log. Out of line: a
 * program whose map stays put pays only resolves_now's compare. */
static __attribute__((noinline)) bool resolves_now_slow(struct cap_engine *ce, const struct cap_window *pw,
							const struct cap_op *p)
{
	if (p->kind == CAP_OP_MEMCPY)
		return cap__alloc_same_since_slow(ce, pw->alloc_gen_begin, p->u.memcpy.src_first, p->u.memcpy.dst_first);
	if (p->kind == CAP_OP_MEMSET)
		return cap__alloc_same_since_slow(ce, pw->alloc_gen_begin, p->u.memset.dst, p->u.memset.dst);
	return true;
}

/* Whether op p of window pw resolves now as it did when it was recorded: no change of the
 * allocation map (or of the probes' answers) since pw began touched an address its recording
 * looked up (a copy's sides, a memset's target; a kernel or an event looks up none). */
static inline bool resolves_now(struct cap_engine *ce, const struct cap_window *pw, const struct cap_op *p)
{
	return cf_likely(pw->alloc_gen_begin == ce->alloc.gen) || resolves_now_slow(ce, pw, p);
}

/* The predicted shape's op at the index the open window w records next, or NULL. *resolved:
 * that op resolves now as it did (resolves_now). */
static const struct cap_op *predicted(struct cap_engine *ce, const struct cap_window *w, bool *resolved)
{
	const struct cap_window *pw = ce->pred ? ce->pred->last : NULL;

	*resolved = false;
	if (!pw || w->nops >= pw->nops)
		return NULL;
	*resolved = resolves_now(ce, pw, &pw->ops[w->nops]);
	return &pw->ops[w->nops];
}

/* The key and bindings of op, about to be the open window's next: from the predicted op p when
 * their fields are equal; the first op that differs ends the prediction for the rest of the
 * window. */
static void op_hash(struct cap_engine *ce, struct cap_op *op, const struct cap_op *p, bool copy_like)
{
	if (!(copy_like ? cap_op_hash_copy_like(op, p) : cap_op_hash_like(op, p)))
		ce->pred = NULL;
}

/* Whether every parameter byte w's kernel ops point to is in w's own arena (what a closed window
 * holds: capture_int.h, lender), and every launch through kernelParams points somewhere, none
 * included (the lanes: cap__no_param_bytes; replay classifies a NULL one eager, so a window's
 * NULL would change the template built from it). For debug builds' asserts. */
static inline bool owns_params(const struct cap_window *w)
{
	for (uint32_t i = 0; i < w->nops; i++) {
		const struct cap_kernel *k = &w->ops[i].u.kernel;

		if (w->ops[i].kind != CAP_OP_KERNEL)
			continue;
		if (!k->via_extra && !k->params)
			return false;
		if (k->param_size && !cf_arena_holds(&w->arena, k->params))
			return false;
	}
	return true;
}

/* Whether the closing window w's borrowed bytes can stay where they are: w put nothing in its own
 * arena, and it closes as its lender's shape again (close_window's known path, the lender no
 * build's), so keep_small gives w the lender's arena as the lender leaves (trie.c). Else they
 * are copied first (borrow_end). Steady state takes this: no window copies its launches'
 * parameters (issue 22). */
static bool lender_handed_over(const struct cap_engine *ce, const struct cap_window *w)
{
	return w->arena.used == 0 && ce->pred && ce->pred->last == w->lender && ce->pred->nops == w->nops &&
	       !w->nfailed && !w->lender->pinned;
}

/* Close the open window (it has ops). */
static struct cap_shape *close_window(struct cap_engine *ce, enum cap_boundary kind, enum drv_api_id api)
{
	struct cap_window *w = ce->cur, *spare = NULL;
	struct cap_shape *s = NULL;
	uint32_t nfailed;

	/* state diagram: only the OPEN window closes, once (t_end is set by closing, reset by recycling) */
	cf_assert(w->nops > 0 && w->t_end == 0);
	if (ce->window_closing)
		ce->window_closing(ce->closing_arg); /* its ops move from here on (compact, recycling) */
	if (w->lender && !lender_handed_over(ce, w) && borrow_end(w) != 0) {
		/* (no memory for its borrowed bytes: its ops go as failed ones do) */
		cf_log_warn_once("out of memory keeping a window's kernel parameters; a window is not remembered");
		cap__borrow_none(w);
		w->nops = 0;
		w->nfailed = 0;
	}
	nfailed = w->nfailed;
	compact(w);
	w->closed_by = (uint8_t)kind;
	w->closed_api = (uint16_t)api;
	/* which call of the program ended it ("which call broke it"): rare, so unwound here */
	w->closed_site = ce->cfg.callsites && kind != CAP_BOUNDARY_EXIT && kind != CAP_BOUNDARY_FORK ?
				 cap_callsite_capture(ce) :
				 0;
	w->t_end = cf_now_ns();
	w->alloc_gen_end = ce->alloc.gen;
	w->funcs_gen_end = ce->funcs.gen;
	if (w->nops == 0) {
		spare = w; /* every op failed: nothing to remember */
	} else {
		ce->totals.windows++;
		ce->totals.windows_by[kind]++;
		/* the prediction held for every op (op_hash): the window is that shape again, its
		 * ops of the shape's kinds (counted once, not an op at a time: issue 22) */
		if (ce->pred && ce->pred->nops == w->nops && ce->pred->last && !nfailed) {
			for (int k = 0; k < CAP_OP_KIND_COUNT; k++)
				ce->totals.ops[k] += ce->pred->kinds[k];
			s = cap__trie_insert_known(ce, w, ce->pred, &spare);
		} else {
			for (uint32_t i = 0; i < w->nops; i++)
				ce->totals.ops[w->ops[i].kind]++;
			s = cap__trie_insert(ce, w, &spare);
		}
		cf_assert(!w->lender && (!s || s->last != w || owns_params(w)));
		if (ce->cfg.trace_max_bytes)
			cap__trace_window(ce, w, s);
	}
	predict_next(ce, s);
	keep_spare(ce, spare);
	if (open_next(ce) != 0) {
		/* keep a window open at any cost: reuse the spare we just gave away, if any */
		cf_log_err_once("out of memory opening a capture window; recording stops");
		ce->head.ready = false;
		ce->cur = cap__window_new();
		if (!ce->cur) {
			ce->cur = ce->spare;
			ce->spare = NULL;
		}
		if (ce->cur)
			cap__window_reset(ce->cur);
	}
	return s;
}

struct cap_shape *cap_boundary(struct cap_engine *ce, enum cap_boundary kind, enum drv_api_id api)
{
	cf_assert(cf_serial_is_held()); /* the caller's lock (capture.h) */
	if ((unsigned)kind >= CAP_BOUNDARY_COUNT || !ce->cur)
		return NULL;
	ce->totals.boundaries[kind]++;
	if (kind == CAP_BOUNDARY_FREE || kind == CAP_BOUNDARY_UNMODELED || kind == CAP_BOUNDARY_CONTEXT)
		cap__alloc_probe_reset(ce); /* the call may map or unmap memory capture does not see */
	if (ce->cur->nops == 0)
		return NULL;
	return close_window(ce, kind, api);
}

void cap_note_passthrough(struct cap_engine *ce, enum drv_api_id api)
{
	(void)api;
	cf_assert(cf_serial_is_held());
	ce->totals.passthrough++;
}

/* ------------------------------------------------------------------ recording */

static int reserve_op(struct cap_window *w)
{
	if (w->nops == w->cap) {
		uint32_t ncap = w->cap ? 2 * w->cap : 16;
		struct cap_op *n = realloc(w->ops, ncap * sizeof(*n));

		if (!n)
			return -CF_ENOMEM;
		w->ops = n;
		w->cap = ncap;
	}
	return 0;
}

/* The slot of the op's stream in w; -1 when out of memory or slots. */
static int stream_slot(struct cap_engine *ce, struct cap_window *w, struct cap_op *op, CUcontext ctx, uint32_t tid)
{
	struct cap_stream *s = cap__stream_get(ce, op->stream, drv_api[op->api].pt, ctx, tid);

	if (!s)
		return -1;
	op->stream_kind = s->kind;
	if (s->win != w->seq) {
		if (w->nstreams >= CAP_MAX_SLOTS)
			return -1;
		if (w->nstreams == w->capstreams) {
			uint32_t ncap = w->capstreams ? 2 * w->capstreams : 8;
			struct cap_wstream *n = realloc(w->streams, ncap * sizeof(*n));

			if (!n)
				return -1;
			w->streams = n;
			w->capstreams = ncap;
		}
		w->streams[w->nstreams] = (struct cap_wstream){
			.handle = op->stream, .ctx = ctx, .id = s->id, .tid = s->tid, .kind = s->kind,
		};
		s->win = w->seq;
		s->slot = (uint16_t)w->nstreams++;
	}
	/* invariant 5: the record's slot is one of this window's */
	cf_assert(s->win == w->seq && s->slot < w->nstreams && w->nstreams <= CAP_MAX_SLOTS);
	s->last = w->nops; /* the op being recorded is the window's next */
	return s->slot;
}

static int event_slot(struct cap_engine *ce, struct cap_window *w, CUevent e, bool record)
{
	struct cap_event_rec *r = cap__event_get(ce, e);

	if (!r)
		return -1;
	if (record) {
		/* what a synchronize or query of e observes from now on (observe.c) */
		r->rec_win = w->seq;
		r->rec_index = w->nops;
	}
	if (r->win != w->seq) {
		if (w->nevents >= CAP_MAX_SLOTS)
			return -1;
		if (w->nevents == w->capevents) {
			uint32_t ncap = w->capevents ? 2 * w->capevents : 8;
			CUevent *n = realloc(w->events, ncap * sizeof(*n));

			if (!n)
				return -1;
			w->events = n;
			w->capevents = ncap;
		}
		w->events[w->nevents] = e;
		r->win = w->seq;
		r->slot = (uint16_t)w->nevents++;
	}
	cf_assert(r->win == w->seq && r->slot < w->nevents && w->nevents <= CAP_MAX_SLOTS); /* invariant 5 */
	return r->slot;
}

/* Parameters from an `extra` list: the buffer verbatim. -CF_EINVAL when unusable. */
static int copy_extra(struct cap_kernel *k, void **extra, struct cf_arena *a)
{
	const void *buf = NULL;
	const size_t *sizep = NULL;

	for (unsigned int i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
		if (i + 1 >= CAP_EXTRA_MAX_WORDS)
			return -CF_EINVAL;
		if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
			buf = extra[i + 1];
		else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE)
			sizep = extra[i + 1];
		else
			return -CF_EINVAL;
	}
	if (!sizep || !buf) {
		/* no buffer: only a kernel without parameters */
		if (k->info && k->info->layout_known && k->info->nparams == 0) {
			k->param_size = 0;
			k->params = cf_arena_alloc(a, 0);
			return k->params ? 0 : -CF_ENOMEM;
		}
		return -CF_EINVAL;
	}
	if (*sizep > CAP_MAX_PARAM_BYTES)
		return -CF_EINVAL;
	k->param_size = (uint32_t)*sizep;
	k->params = cf_arena_dup(a, buf, *sizep);
	k->via_extra = true;
	return k->params ? 0 : -CF_ENOMEM;
}

/* Lay kernel call c's parameters out in buf (f->param_bytes) as f says, padding zeroed, so that
 * equal parameters are equal bytes; false where the call names a parameter with NULL. */
static bool pack_params(char *buf, const struct cap_call *c, const struct cap_func *f)
{
	if (!f->dense) /* (a dense layout's parameters write every byte) */
		memset(buf, 0, f->param_bytes);
	for (uint32_t i = 0; i < f->nparams; i++) {
		const void *src = c->u.kernel.params[i];
		char *dst = buf + f->offset[i];

		if (!src)
			return false;
		/* pointers and ints, most parameters, as one move each rather than a call (issue 22) */
		switch (f->size[i]) {
		case 8:
			memcpy(dst, src, 8);
			break;
		case 4:
			memcpy(dst, src, 4);
			break;
		default:
			memcpy(dst, src, f->size[i]);
			break;
		}
	}
	return true;
}

/* A kernel's parameters, deep-copied. -CF_EINVAL when they cannot be recorded. */
static int build_kernel(struct cap_op *op, const struct cap_call *c, struct cf_arena *a)
{
	struct cap_kernel *k = &op->u.kernel;
	const struct cap_func *f = k->info;
	char *buf;

	memcpy(k->grid, c->u.kernel.grid, sizeof(k->grid));
	memcpy(k->block, c->u.kernel.block, sizeof(k->block));
	k->shared_bytes = c->u.kernel.shared_bytes;
	if (c->u.kernel.nattrs) {
		if (!c->u.kernel.attrs || c->u.kernel.nattrs > 256)
			return -CF_EINVAL;
		k->attrs = cf_arena_dup(a, c->u.kernel.attrs, c->u.kernel.nattrs * sizeof(*k->attrs));
		if (!k->attrs)
			return -CF_ENOMEM;
		k->nattrs = c->u.kernel.nattrs;
	}
	if (c->u.kernel.params && c->u.kernel.extra)
		return -CF_EINVAL; /* the driver refuses this */
	if (c->u.kernel.extra)
		return copy_extra(k, c->u.kernel.extra, a);
	if (!f->layout_known)
		return -CF_EINVAL;
	if (!c->u.kernel.params && f->nparams)
		return -CF_EINVAL;
	buf = cf_arena_alloc(a, f->param_bytes);
	if (!buf)
		return -CF_ENOMEM;
	if (!pack_params(buf, c, f))
		return -CF_EINVAL;
	k->params = buf;
	k->param_size = f->param_bytes;
	return 0;
}

/* Bytes from the first to one past the last byte of a w x h x d box; false on overflow. */
static inline bool box_span(uint64_t w, uint64_t h, uint64_t d, uint64_t pitch, uint64_t rows, uint64_t *out)
{
	uint64_t slices, tail;

	*out = 0;
	if (w == 0 || h == 0 || d == 0)
		return true;
	if (h == 1 && d == 1) { /* a row: most copies, and what follows gives w too */
		*out = w;
		return true;
	}
	return !__builtin_mul_overflow(d - 1, rows, &slices) && !__builtin_mul_overflow(slices, pitch, &slices) &&
	       !__builtin_mul_overflow(h - 1, pitch, &tail) && !__builtin_add_overflow(slices, tail, &tail) &&
	       !__builtin_add_overflow(tail, w, out);
}

/* One side of a copy: its first byte, span, whether it is device memory and pageable. Inlined:
 * the call with thirteen arguments cost more than its body (issue 22). */
static inline __attribute__((always_inline)) void resolve_side(struct cap_engine *ce, CUmemorytype type, uint64_t base,
							       uint64_t x, uint64_t y, uint64_t z, uint64_t pitch,
							       uint64_t rows, const CUDA_MEMCPY3D *d, uint64_t *first,
							       uint64_t *span, bool *dev, bool *pageable, bool *unknown)
{
	const struct cap_alloc *a;
	uint64_t w = d->WidthInBytes, h = d->Height, dp = d->Depth;

	if (h <= 1 && dp <= 1 && pitch < w)
		pitch = w;
	if (dp <= 1 && rows < h)
		rows = h;
	*first = base + (z * rows + y) * pitch + x;
	if (!box_span(w, h, dp, pitch, rows, span))
		*span = 0;
	a = cap_alloc_find(ce, *first);
	*dev = type == CU_MEMORYTYPE_DEVICE || type == CU_MEMORYTYPE_ARRAY ||
	       (type == CU_MEMORYTYPE_UNIFIED && cap_alloc_is_device(a));
	*pageable = !*dev && !a;
	*unknown = false;
	if (type == CU_MEMORYTYPE_UNIFIED && !a) {
		/* outside the map: pageable host memory, or memory cufold never saw allocated;
		 * staging the latter would read a device address with a host memcpy */
		enum cap_probe p = cap__alloc_probe(ce, *first);

		if (p != CAP_PROBE_PAGEABLE) {
			*pageable = false;
			*dev = p != CAP_PROBE_HOST;
			*unknown = true;
		}
	}
}

/* Whether two copy descriptors are equal in every field resolve_side reads. */
static bool resolves_same(const CUDA_MEMCPY3D *a, const CUDA_MEMCPY3D *b)
{
	return a->srcMemoryType == b->srcMemoryType && a->dstMemoryType == b->dstMemoryType &&
	       a->srcHost == b->srcHost && a->srcDevice == b->srcDevice && a->dstHost == b->dstHost &&
	       a->dstDevice == b->dstDevice && a->WidthInBytes == b->WidthInBytes && a->Height == b->Height &&
	       a->Depth == b->Depth && a->srcXInBytes == b->srcXInBytes && a->srcY == b->srcY && a->srcZ == b->srcZ &&
	       a->srcPitch == b->srcPitch && a->srcHeight == b->srcHeight && a->dstXInBytes == b->dstXInBytes &&
	       a->dstY == b->dstY && a->dstZ == b->dstZ && a->dstPitch == b->dstPitch && a->dstHeight == b->dstHeight;
}

/* Writes every field of op->u.memcpy (op_clear leaves a copy's part as the slot had it). p: the
 * predicted op, resolved at the allocation map's present gen, or NULL: a copy of the same
 * bytes as p resolves as p did (both sides known memory: an op resolved with the driver's help,
 * CAP_OPF_NO_DEFER, is resolved again), without the map's searches (issue 22). Returns whether
 * it did (then op_hash need not compare what resolves_same did, cap_op_hash_copy_like). */
static bool build_memcpy(struct cap_engine *ce, struct cap_op *op, const struct cap_call *c, const struct cap_op *p)
{
	struct cap_memcpy *m = &op->u.memcpy;
	const CUDA_MEMCPY3D *d = &c->u.memcpy.d;
	bool sdev, ddev, sunk, dunk, like = false;

	if (c->u.memcpy.oned)
		cap__copy_1d_complete(&m->d, d);
	else
		m->d = *d;
	d = &m->d; /* complete: what follows reads it */
	m->oned = c->u.memcpy.oned;
	m->dst_ctx = c->u.memcpy.dst_ctx;
	m->src_ctx = c->u.memcpy.src_ctx;
	m->bytes = (uint64_t)d->WidthInBytes * d->Height * d->Depth;
	if (p && p->kind == CAP_OP_MEMCPY && !(p->flags & CAP_OPF_NO_DEFER) && resolves_same(&p->u.memcpy.d, d)) {
		m->src_first = p->u.memcpy.src_first;
		m->src_span = p->u.memcpy.src_span;
		m->src_pageable = p->u.memcpy.src_pageable;
		m->dst_first = p->u.memcpy.dst_first;
		m->dst_span = p->u.memcpy.dst_span;
		m->dst_pageable = p->u.memcpy.dst_pageable;
		m->dir = p->u.memcpy.dir;
		like = true;
		goto resolved;
	}
	resolve_side(ce, d->srcMemoryType,
		     d->srcMemoryType == CU_MEMORYTYPE_HOST ? (uint64_t)(uintptr_t)d->srcHost : d->srcDevice,
		     d->srcXInBytes, d->srcY, d->srcZ, d->srcPitch, d->srcHeight, d, &m->src_first, &m->src_span, &sdev,
		     &m->src_pageable, &sunk);
	resolve_side(ce, d->dstMemoryType,
		     d->dstMemoryType == CU_MEMORYTYPE_HOST ? (uint64_t)(uintptr_t)d->dstHost : d->dstDevice,
		     d->dstXInBytes, d->dstY, d->dstZ, d->dstPitch, d->dstHeight, d, &m->dst_first, &m->dst_span, &ddev,
		     &m->dst_pageable, &dunk);
	if (sunk || dunk)
		op->flags |= CAP_OPF_NO_DEFER;
	m->dir = (uint8_t)(sdev ? (ddev ? CAP_DIR_DTOD : CAP_DIR_DTOH) : (ddev ? CAP_DIR_HTOD : CAP_DIR_HTOH));
resolved:
	/* A synchronous copy touching host memory returns only when the host can see its
	 * effect (and waits for earlier work); a copy into host memory is how programs read
	 * results, asynchronous or not (DESIGN.md). Device-to-device synchronous copies do not
	 * block the host. */
	if (m->dir != CAP_DIR_HTOD && m->dir != CAP_DIR_DTOD)
		op->flags |= CAP_OPF_ENDS_WINDOW;
	else if (m->dir == CAP_DIR_HTOD && !drv_api_is(op->api, DRV_API_ASYNC))
		op->flags |= CAP_OPF_ENDS_WINDOW;
	m->staged = NULL;
	return like;
}

static void build_memset(struct cap_engine *ce, struct cap_op *op, const struct cap_call *c)
{
	const struct cap_alloc *a;

	op->u.memset = c->u.memset;
	/* A synchronous memset blocks the host when its target is host-visible (pinned,
	 * registered or managed memory); of device memory it does not. */
	if (drv_api_is(op->api, DRV_API_ASYNC))
		return;
	a = cap_alloc_find(ce, op->u.memset.dst);
	if (!a || (a->kind != CAP_ALLOC_DEVICE && a->kind != CAP_ALLOC_ASYNC && a->kind != CAP_ALLOC_MAPPED))
		op->flags |= CAP_OPF_ENDS_WINDOW;
}

static void rec_closed(struct cap_rec *rec, struct cap_shape *s)
{
	if (s)
		rec->closed = s;
}

/* A call that does not go into the window: why (rec->result) and the boundary that makes. */
static void refuse(struct cap_engine *ce, struct cap_rec *rec, enum cap_rec_result why, enum cap_boundary kind,
		   uint16_t api)
{
	rec->result = (uint8_t)why;
	rec_closed(rec, cap_boundary(ce, kind, (enum drv_api_id)api));
}

/* The part of op that depends on its kind (the common part is filled). Returns 0, -CF_ENOMEM,
 * or -CF_EINVAL when a kernel's parameters cannot be recorded. *copy_like: op is a copy that
 * took p's resolution (build_memcpy). */
static int build_op(struct cap_engine *ce, struct cap_op *op, const struct cap_call *c, struct cap_window *w,
		    struct cap_rec *rec, const struct cap_op *p, bool *copy_like)
{
	int slot, rc = 0;

	switch (c->kind) {
	case CAP_OP_KERNEL:
		rc = build_kernel(op, c, &w->arena);
		break;
	case CAP_OP_MEMCPY:
		*copy_like = build_memcpy(ce, op, c, p);
		rec->bytes = op->u.memcpy.bytes;
		break;
	case CAP_OP_MEMSET:
		build_memset(ce, op, c);
		rec->bytes = cap_op_bytes(op);
		break;
	case CAP_OP_EVENT_RECORD:
	case CAP_OP_EVENT_WAIT:
		op->u.event = c->u.event;
		slot = event_slot(ce, w, c->u.event.event, c->kind == CAP_OP_EVENT_RECORD);
		if (slot < 0)
			rc = -CF_ENOMEM;
		else
			op->u.event.slot = (uint16_t)slot;
		break;
	default: /* CAP_OP_HOST_FN (cap_record turned away anything else) */
		op->u.host_fn = c->u.host_fn;
		break;
	}
	return rc;
}

/* The op append just made, where it is now: in the open window, or in the window the call
 * closed, filed as its shape's last; NULL when that window was not filed (recycled). While
 * replay matches no op of the window failed, so the index is exact. */
static const struct cap_op *recorded_op(const struct cap_engine *ce, const struct cap_rec *rec)
{
	const struct cap_window *w = ce->cur;

	if (w && w->seq == rec->window)
		return &w->ops[rec->index];
	if (rec->closed && (w = rec->closed->last) && w->seq == rec->window && rec->index < w->nops)
		return &w->ops[rec->index];
	return NULL;
}

/* The built op becomes the window's next: numbered, counted, and the window closed behind it
 * when it ends the window itself or fills it. taken: cap_op_take_like made it from p (hashed,
 * and the prediction held). */
static void append(struct cap_engine *ce, struct cap_window *w, struct cap_op *op, const struct cap_who *who,
		   struct cap_rec *rec, const struct cap_op *p, bool copy_like, bool taken)
{
	if (!taken)
		op_hash(ce, op, p, copy_like);
	if (w->nops < w->binds_new_from && (!p || op->bind != p->bind))
		w->binds_new_from = w->nops; /* (the fast lanes take p's) */
	op->seq = ++ce->op_seq;
	if (!op->vid)
		op->vid = op->seq; /* equal to no op before it (capture.h) */
	if (w->nops == 0) {
		w->t_begin = who->t_ns;
		w->alloc_gen_begin = ce->alloc.gen;
		w->funcs_gen_begin = ce->funcs.gen;
	}
	if (who->callsite)
		cap__callsite_count(ce, who->callsite);
	rec->index = w->nops++;
	if (w->nops > w->filled)
		w->filled = w->nops;
	rec->window = w->seq;
	rec->seq = op->seq;
	rec->result = CAP_REC_RECORDED;
	rec->op = op; /* in the open window, unless a close below moves where it is filed */
	if (op->flags & CAP_OPF_ENDS_WINDOW) {
		rec->ends_window = true;
		rec_closed(rec, cap_boundary(ce, CAP_BOUNDARY_HOST_COPY, (enum drv_api_id)op->api));
		/* invariant 4: the op was its window's last; the open window is a new one */
		cf_assert(!ce->cur || ce->cur->nops == 0);
		rec->op = recorded_op(ce, rec);
	} else if (cf_unlikely(w->nops >= ce->cfg.window_max_ops)) {
		rec_closed(rec, cap_boundary(ce, CAP_BOUNDARY_FULL, (enum drv_api_id)op->api));
		rec->op = recorded_op(ce, rec);
	}
}

/* The fields of an op that come from the call and its caller, set alike by both of
 * cap_record's paths (the fast lane and the long one). */
static inline void op_stamp(struct cap_op *op, const struct cap_call *c, const struct cap_who *who)
{
	op->api = c->api;
	op->tid = who->tid;
	op->stream = c->stream;
	op->ctx = who->ctx;
	op->callsite = who->callsite;
	op->t_ns = who->t_ns;
}

/* A slot about to hold an op of this kind, cleared: every header field, and of the union the
 * member the kind uses, except a copy's or a memset's, which build_memcpy, build_memset and
 * cap_op_take_like write whole (clearing the whole op
 * cost a sixth of recording one, issue 22). Padding is left as it is: nothing compares ops
 * bytewise. */
static void op_clear(struct cap_op *op, enum cap_op_kind kind)
{
	op->flags = 0;
	op->stream_kind = 0;
	op->stream_slot = 0;
	op->key = op->bind = op->seq = op->vid = 0;
	/* a constant size per case, so each is a few stores rather than a call */
	switch (kind) {
	case CAP_OP_MEMCPY:
	case CAP_OP_MEMSET: /* build_memset and cap_op_take_like store the member whole */
		break;
	case CAP_OP_KERNEL:
		memset(&op->u.kernel, 0, sizeof(op->u.kernel));
		break;
	case CAP_OP_EVENT_RECORD:
	case CAP_OP_EVENT_WAIT:
		memset(&op->u.event, 0, sizeof(op->u.event));
		break;
	default:
		memset(&op->u.host_fn, 0, sizeof(op->u.host_fn));
		break;
	}
}

/* cap_record's long path (below). */
static __attribute__((noinline)) int record_long(struct cap_engine *ce, const struct cap_call *c,
						 const struct cap_who *who, struct cap_rec *rec);

/* The stores both lanes make once the call is known to repeat p into slot i of the open window w,
 * on stream record s (the long path's effect: op_clear, the common part, stream_slot, the
 * hashes taken from p, append). The kind's part of the op is the caller's. */
static inline __attribute__((always_inline)) void lane_store_as(struct cap_engine *ce, struct cap_window *w,
								const struct cap_call *c, const struct cap_who *who,
								struct cap_rec *rec, const struct cap_op *p,
								struct cap_stream *s, struct cap_op *op, uint32_t i,
								uint64_t bind, bool same)
{
	s->last = i;
	op->flags = 0; /* ENDS_WINDOW is not set in p (the callers checked) */
	op->stream_kind = s->kind;
	op->stream_slot = s->slot;
	op_stamp(op, c, who);
	op->key = p->key;
	op->bind = bind;
	op->seq = ++ce->op_seq;
	op->vid = same ? p->vid : op->seq; /* append's rule: p's where equal, else its own */
	if (i == 0) {
		w->t_begin = who->t_ns;
		w->alloc_gen_begin = ce->alloc.gen;
		w->funcs_gen_begin = ce->funcs.gen;
	}
	if (who->callsite)
		cap__callsite_count(ce, who->callsite);
	w->nops = i + 1; /* below filled: filled stays */
	ce->totals.ops_fast++;
	rec->result = CAP_REC_RECORDED;
	rec->kind = c->kind;
	rec->ends_window = false;
	rec->repeated = same;
	rec->index = i;
	rec->window = w->seq;
	rec->seq = op->seq;
	rec->closed = NULL;
	rec->op = op;
}

/* lane_store for a call that repeats p: its key, bindings and value identity are p's. */
static inline __attribute__((always_inline)) void lane_store(struct cap_engine *ce, struct cap_window *w,
							     const struct cap_call *c, const struct cap_who *who,
							     struct cap_rec *rec, const struct cap_op *p,
							     struct cap_stream *s, struct cap_op *op, uint32_t i)
{
	lane_store_as(ce, w, c, who, rec, p, s, op, i, p->bind, true);
}

/* The stream record of the call when it is p's stream in slot p->stream_slot of w, else NULL
 * (the long path asks the same question of the stream cache). */
static inline struct cap_stream *lane_stream(struct cap_engine *ce, const struct cap_window *w,
					     const struct cap_call *c, const struct cap_who *who,
					     const struct cap_op *p)
{
	struct cap_stream *s = cap__stream_get(ce, c->stream, drv_api[c->api].pt, who->ctx, who->tid);

	if (!s || s->win != w->seq || s->slot != p->stream_slot || s->kind != p->stream_kind)
		return NULL;
	return s;
}

/* The fast lane (issue 22): the call is the predicted op again, a copy or memset whose slot in
 * the recycled open window already holds an op of the predicted op's value identity, on a
 * stream the window already numbered, and it neither ends nor fills the window. Then the op
 * is recorded here with exactly the stores the long path below would make (op_clear, the
 * common part, stream_slot, cap_op_take_like with held, append), without clearing, building,
 * resolving or hashing anything, and returns 0. When any condition fails it has changed nothing
 * but the stream cache (the long path asks the same question of it), and the long path records
 * the call as it always did (a tail call: the lane's misses pay no frame of their own). p: the predicted op at the slot, resolved, whose position
 * repeated last time (cap_record checked). */
static __attribute__((noinline)) int repeat(struct cap_engine *ce, struct cap_window *w, const struct cap_call *c,
					    const struct cap_who *who, struct cap_rec *rec, const struct cap_op *p)
{
	struct cap_stream *s;
	struct cap_op *op;
	uint32_t i = w->nops;

	op = &w->ops[i];
	if (op->vid != p->vid || op->kind != p->kind || c->api != p->api ||
	    c->stream != p->stream || who->ctx != p->ctx || (p->flags & CAP_OPF_ENDS_WINDOW) ||
	    i + 1 >= ce->cfg.window_max_ops || !cap__call_repeats(c, p))
		return record_long(ce, c, who, rec);
	/* a held 1-D copy's part is p's but for staged (cap_op_take_like) */
	if (c->kind == CAP_OP_MEMCPY && !op->u.memcpy.oned)
		return record_long(ce, c, who, rec);
	s = lane_stream(ce, w, c, who, p);
	if (!s)
		return record_long(ce, c, who, rec);
	/* what the long path stores, in its order's effect */
	if (c->kind == CAP_OP_MEMCPY)
		op->u.memcpy.staged = NULL;
	lane_store(ce, w, c, who, rec, p, s, op, i);
	rec->bytes = c->kind == CAP_OP_MEMCPY ? op->u.memcpy.bytes : /* cap_op_bytes, inline */
		     (uint64_t)op->u.memset.width * op->u.memset.height * op->u.memset.elem_size;
	rec->func = NULL;
	return 0;
}

/* cap__params_repeat's compare from parameter k on, where every parameter from there is compared
 * whole (memcmp): a call, so kept out of its loop (cold: few kernels take a parameter of another
 * size than 4 or 8 bytes). */
bool cap__params_repeat_from(const struct cap_call *c, const struct cap_func *f, const char *pb, uint32_t k)
{
	void *const *pp = c->u.kernel.params;

	for (; k < f->nparams; k++) {
		const void *src = pp[k];

		if (!src || memcmp(src, pb + f->offset[k], f->size[k]) != 0)
			return false;
	}
	return true;
}

const unsigned char cap__no_param_bytes[16] __attribute__((aligned(16)));

/* repeat_kernel where the parameters are not (or may not be) p's: the call is p's launch (the
 * same function handle, record and per-context function, geometry and shared memory, through
 * kernelParams with no attributes, on p's stream in the window's slot), so the long path would
 * give it p's key (key_same: every field the key reads is p's) and lay its parameters out anew.
 * That is done here: the parameters laid out from the call, p's kernel part but for them, the
 * bindings p's where the bytes are p's (then the value identity too: cap_op_hash_like) and
 * hashed otherwise, without the function lookup, the slot's clearing, the stream's numbering or
 * the key's compare. PyTorch's launches are this: every step's tensors at other addresses, so
 * no position repeats (issue 22). A NULL parameter, a full window or another stream take the
 * long path, which answers them as it always did. */
static __attribute__((noinline)) int kernel_moved(struct cap_engine *ce, struct cap_window *w,
						  const struct cap_call *c, const struct cap_who *who,
						  struct cap_rec *rec, const struct cap_op *p, struct cap_func *f)
{
	const struct cap_kernel *pk = &p->u.kernel;
	struct cap_stream *s = lane_stream(ce, w, c, who, p);
	uint32_t i = w->nops;
	struct cap_op *op;
	char *buf = (char *)cap__no_param_bytes; /* (none: see repeat_kernel) */
	bool same;

	if (!s)
		return record_long(ce, c, who, rec);
	if (f->param_bytes) {
		buf = cf_arena_alloc(&w->arena, f->param_bytes);
		/* (a NULL parameter leaves the bytes in the arena: the long path refuses the call) */
		if (!buf || !pack_params(buf, c, f))
			return record_long(ce, c, who, rec);
	}
	same = !f->param_bytes || memcmp(buf, pk->params, f->param_bytes) == 0;
	op = &w->ops[i];
	op->kind = CAP_OP_KERNEL;
	op->u.kernel = *pk;
	op->u.kernel.params = buf;
	lane_store_as(ce, w, c, who, rec, p, s, op, i, same ? p->bind : 0, same);
	if (!same) { /* hashed from the op's fields, which lane_store_as has just set */
		op->bind = cap__op_bind(op);
		if (i < w->binds_new_from)
			w->binds_new_from = i;
	}
	rec->bytes = 0;
	rec->func = f;
	return 0;
}

/* The fast lane for a kernel launch (issue 22): the call is the predicted kernel op p again (the
 * same function handle, resolved to the same record and per-context function, geometry, shared
 * memory and parameter bytes), launched through kernelParams with no attributes, on p's stream
 * in the window's slot, and neither ends nor fills the window. Then the long path would record
 * the op with p's kernel part but for the parameters' copy (build_kernel lays them out with
 * zeroed padding: p's bytes), and cap_op_hash_like would give it p's key, bindings and value
 * identity: that is stored here, with p's parameter bytes borrowed (w->lender), not copied.
 * Anything else takes the long path (a tail call), having changed nothing but the function and
 * stream caches, which the long path fills alike. */
static __attribute__((noinline)) int repeat_kernel(struct cap_engine *ce, struct cap_window *w,
						   const struct cap_call *c, const struct cap_who *who,
						   struct cap_rec *rec, const struct cap_window *pw,
						   const struct cap_op *p)
{
	const struct cap_kernel *pk = &p->u.kernel;
	struct cap_func *f;
	struct cap_stream *s;
	struct cap_op *op;
	CUfunction func = NULL;
	uint32_t i = w->nops;
	void *buf;

	if (p->kind != CAP_OP_KERNEL || c->api != p->api || c->stream != p->stream || who->ctx != p->ctx ||
	    i + 1 >= ce->cfg.window_max_ops || !cap__kernel_call_same_launch(c, pk))
		return record_long(ce, c, who, rec);
	if (pw->funcs_gen_begin == pw->funcs_gen_end && pw->funcs_gen_end == ce->funcs.gen) {
		/* no lookup's answer changed since p's window began: the handle in p's context is
		 * p's function record and function now (cap__func_get would answer them), and that
		 * record's fields are set once, when it is made: p was recorded with it through
		 * kernelParams (not via_extra), so it is no barrier, its layout is known and its
		 * parameter bytes are p's (build_kernel). Asked again, they cost a launch a dozen
		 * instructions (issue 22). */
		f = (struct cap_func *)pk->info;
		if (!f || (f->nparams && !c->u.kernel.params))
			return record_long(ce, c, who, rec);
		cf_assert(!f->barrier && f->layout_known && f->param_bytes == pk->param_size);
	} else {
		f = cap__func_get(ce, c->u.kernel.f, who->ctx, &func);
		if (!f || f != pk->info || func != pk->func || f->barrier || !f->layout_known ||
		    f->param_bytes != pk->param_size || (f->nparams && !c->u.kernel.params))
			return record_long(ce, c, who, rec);
	}
	/* where the position moved last time (p has its own identity) it is likely to move again:
	 * the parameters are laid out from the call instead of compared first */
	if (p->vid == p->seq || (f->param_bytes && !cap__params_repeat(c, f, pk->params)))
		return kernel_moved(ce, w, c, who, rec, p, f);
	s = lane_stream(ce, w, c, who, p);
	if (!s)
		return record_long(ce, c, who, rec);
	/* p's bytes, borrowed from pw's arena while w's own is empty (w->lender: resolved before
	 * pw can go), else copied. A kernel with none gets a pointer to nothing that is not NULL,
	 * as the long path's empty allocation is (a NULL one is classified eager: template.c) */
	buf = (void *)cap__no_param_bytes;
	if (f->param_bytes && cf_likely(w->arena.used == 0)) {
		cf_assert(!w->lender || w->lender == pw);
		w->lender = pw;
		w->borrow_hi = i + 1;
		buf = pk->params;
	} else if (f->param_bytes) {
		/* (inline: cf_arena_dup's call cost dataparallel, whose windows copy, 5 an op) */
		buf = cf_arena_alloc(&w->arena, f->param_bytes);
		if (!buf)
			return record_long(ce, c, who, rec);
		memcpy(buf, pk->params, f->param_bytes);
	}
	op = &w->ops[i];
	/* a slot holding an op of p's vid (a recycled window's) holds p's kernel part already, but
	 * for the parameters' copy: vid covers every other field of it (capture.h) */
	if (op->vid != p->vid || op->kind != CAP_OP_KERNEL) {
		op->kind = CAP_OP_KERNEL;
		op->u.kernel = *pk;
	}
	op->u.kernel.params = buf;
	lane_store(ce, w, c, who, rec, p, s, op, i);
	rec->bytes = 0;
	rec->func = f;
	return 0;
}

/* cap_record's long path: every call the fast lane (repeat) does not take. Out of line, so the
 * fast lane pays none of its frame. */
static __attribute__((noinline)) int record_long(struct cap_engine *ce, const struct cap_call *c,
						 const struct cap_who *who, struct cap_rec *rec)
{
	struct cap_window *w = ce->cur;
	struct cap_func *f = NULL;
	CUfunction func = NULL;
	const struct cap_op *p;
	struct cap_op *op;
	bool resolved, copy_like = false, take, held, taken;
	uint64_t slot_vid;
	uint8_t slot_kind;
	int slot, rc = 0;

	memset(rec, 0, sizeof(*rec));
	rec->kind = c->kind;
	if (!ce->head.ready || !w || (unsigned)c->kind >= CAP_OP_KIND_COUNT) {
		rec->result = !ce->head.ready || !w ? CAP_REC_NOMEM : CAP_REC_OPAQUE;
		rc = !ce->head.ready || !w ? -CF_ESTATE : -CF_EINVAL;
		goto out;
	}
	cf_assert(w->nops < ce->cfg.window_max_ops); /* a full window closed when it filled */
	if (c->kind == CAP_OP_KERNEL) {
		f = rec->func = cap__func_get(ce, c->u.kernel.f, who->ctx, &func);
		if (!f) {
			rc = -CF_EINVAL;
			refuse(ce, rec, CAP_REC_OPAQUE, CAP_BOUNDARY_OPAQUE, c->api);
			goto out;
		}
		if (f->barrier) {
			refuse(ce, rec, CAP_REC_BARRIER, CAP_BOUNDARY_BARRIER, c->api);
			goto out;
		}
	}
	rc = reserve_op(w);
	if (rc != 0)
		goto out_nomem;
	op = &w->ops[w->nops];
	/* what the slot held (a recycled window's op, when below filled), before it is cleared */
	slot_vid = w->nops < w->filled ? op->vid : 0;
	slot_kind = op->kind;
	op_clear(op, c->kind);
	op->kind = c->kind;
	op_stamp(op, c, who);
	if (f) {
		op->u.kernel.handle = c->u.kernel.f;
		op->u.kernel.func = func;
		op->u.kernel.info = f;
	}
	slot = stream_slot(ce, w, op, who->ctx, who->tid);
	if (slot < 0) {
		rc = -CF_ENOMEM;
		goto out_nomem;
	}
	op->stream_slot = (uint16_t)slot;
	p = predicted(ce, w, &resolved);
	/* the call may be the predicted op again (cap_op_take_like): where the position repeated
	 * last time (p took its vid from the op before it, not its own seq; where it moved it is
	 * likely to move again, and the compare would be wasted), and the slot may hold an op of
	 * that value identity already (a recycled window's), whose fields then need no copy */
	take = (c->kind == CAP_OP_MEMCPY || c->kind == CAP_OP_MEMSET) && resolved && p->vid != p->seq;
	held = take && slot_vid == p->vid && slot_kind == p->kind;
	/* the call is the predicted op again, compared from its arguments: no building, resolving
	 * or hashing (kernels and events take the long path) */
	taken = take && cap_op_take_like(op, c, p, held);
	if (taken) {
		rec->bytes = cap_op_bytes(op);
	} else {
		rc = build_op(ce, op, c, w, rec, resolved ? p : NULL, &copy_like);
		if (rc == -CF_ENOMEM)
			goto out_nomem;
		if (rc != 0) {
			refuse(ce, rec, CAP_REC_OPAQUE, CAP_BOUNDARY_OPAQUE, c->api);
			goto out;
		}
	}
	append(ce, w, op, who, rec, p, copy_like, taken);
	goto out;
out_nomem:
	cf_log_warn_once("out of memory recording an op; the window is cut there");
	refuse(ce, rec, CAP_REC_NOMEM, CAP_BOUNDARY_FULL, c->api);
out:
	return rc;
}

/* cap_record's copy and memset lane when the allocation map changed since the predicted window
 * began: p's resolution asked of the change log first (resolves_now). Out of line, so
 * cap_record's lanes stay tail calls with no frame of its own. */
static __attribute__((noinline)) int lanes_after_change(struct cap_engine *ce, struct cap_window *w,
							const struct cap_call *c, const struct cap_who *who,
							struct cap_rec *rec, const struct cap_window *pw,
							const struct cap_op *p)
{
	if (!resolves_now_slow(ce, pw, p))
		return record_long(ce, c, who, rec);
	return repeat(ce, w, c, who, rec, p);
}

int cap_record(struct cap_engine *ce, const struct cap_call *c, const struct cap_who *who, struct cap_rec *rec)
{
	struct cap_window *w = ce->cur;

	cf_assert(cf_serial_is_held()); /* the caller's lock (capture.h) */
	cf_assert(!w || w->filled <= w->cap); /* the slots below filled are the array's (trie.c) */
	if (cf_likely(ce->head.ready && w && !ce->cfg.no_fast_lane) &&
	    (c->kind == CAP_OP_MEMCPY || c->kind == CAP_OP_MEMSET || c->kind == CAP_OP_KERNEL)) {
		/* predicted() with resolved, and take's condition: the position repeated last time
		 * (where it moved, as where pointers move every step, the lane is not tried) */
		const struct cap_window *pw = ce->pred ? ce->pred->last : NULL;
		const struct cap_op *p = pw && w->nops < pw->nops && w->nops < w->filled ? &pw->ops[w->nops] : NULL;

		if (c->kind == CAP_OP_KERNEL) {
			/* a launch looks no address up (resolves_now), and where its position moved
			 * last time the kernel lane lays its parameters out without a compare
			 * (kernel_moved) */
			if (p && p->vid)
				return repeat_kernel(ce, w, c, who, rec, pw, p);
		} else if (p && p->vid != p->seq && p->vid) {
			if (cf_unlikely(pw->alloc_gen_begin != ce->alloc.gen))
				return lanes_after_change(ce, w, c, who, rec, pw, p); /* a tail call: no frame here */
			return repeat(ce, w, c, who, rec, p);
		}
	}
	return record_long(ce, c, who, rec);
}

/* A refused op whose window closed before the answer: if that window is still its shape's
 * last sighting, drop the shape and file the window again without the op. (A window that is
 * no shape's last any more was recycled: nothing holds the op.) */
static void retract_closed(struct cap_engine *ce, const struct cap_rec *rec)
{
	struct cap_shape *s;
	struct cap_window *w, *spare = NULL;
	uint32_t i;
	uint8_t kind;

	for (s = cap_shape_first(ce); s; s = cap_shape_next(s))
		if (s->last && s->last->seq == rec->window)
			break;
	if (!s)
		return;
	w = s->last;
	for (i = 0; i < w->nops && w->ops[i].seq != rec->seq; i++)
		;
	if (i == w->nops)
		return;
	kind = w->closed_by;
	ce->totals.ops[w->ops[i].kind]--;
	w = cap__trie_retract(ce, s);
	if (w->pinned) {
		/* a build reads it outside the lock: it is not filed again (its shape is gone, and
		 * replay discards that build, told through shape_evicted) */
		ce->totals.windows--;
		ce->totals.windows_by[kind]--;
		w->orphan = true;
		return;
	}
	/* the open window may have borrowed from w, whose ops are about to move (borrow_end
	 * finds a borrowed op at its lender's index): copied first; with no memory for copies, w
	 * is not filed again, and its blocks go to the open window (lender_leaves) */
	if (ce->cur && ce->cur->lender == w && borrow_end(ce->cur) != 0) {
		w->nops = 0;
	} else {
		memmove(&w->ops[i], &w->ops[i + 1], (w->nops - i - 1) * sizeof(*w->ops));
		w->nops--;
	}
	if (w->nops == 0) {
		ce->totals.windows--;
		ce->totals.windows_by[kind]--;
		keep_spare(ce, w);
		return;
	}
	if (!cap__trie_insert(ce, w, &spare))
		cf_log_debug("window %llu not tracked again after a refused op", (unsigned long long)w->seq);
	keep_spare(ce, spare);
}

/* cap_op_done's failing half: out of line, so the counting half is a leaf without a frame. */
static __attribute__((noinline)) void op_failed(struct cap_engine *ce, const struct cap_rec *rec)
{
	struct cap_window *w = ce->cur;
	uint32_t i;

	cf_assert(cf_serial_is_held()); /* the failing half only (capture.h) */
	if (rec->result != CAP_REC_RECORDED)
		return;
	if (!w || rec->window != w->seq) {
		retract_closed(ce, rec);
		return;
	}
	/* the index, unless something moved the ops since (it never does in the open window) */
	cf_assert(rec->index < w->nops && w->ops[rec->index].seq == rec->seq);
	i = rec->index < w->nops && w->ops[rec->index].seq == rec->seq ? rec->index : w->nops;
	if (i < w->nops && !(w->ops[i].flags & CAP_OPF_FAILED)) {
		w->ops[i].flags |= CAP_OPF_FAILED;
		w->nfailed++;
	}
}

void cap_op_done(struct cap_engine *ce, const struct cap_rec *rec, bool failed)
{
	if (failed) {
		op_failed(ce, rec);
		return;
	}
	switch (rec->kind) {
	case CAP_OP_KERNEL:
		__atomic_fetch_add(&ce->totals.launches, 1, __ATOMIC_RELAXED);
		if (rec->func)
			__atomic_fetch_add(&rec->func->launches, 1, __ATOMIC_RELAXED);
		break;
	case CAP_OP_MEMCPY:
		if (rec->bytes) {
			__atomic_fetch_add(&ce->totals.copies, 1, __ATOMIC_RELAXED);
			__atomic_fetch_add(&ce->totals.bytes_copied, rec->bytes, __ATOMIC_RELAXED);
		}
		break;
	case CAP_OP_MEMSET:
		if (rec->bytes) {
			__atomic_fetch_add(&ce->totals.memsets, 1, __ATOMIC_RELAXED);
			__atomic_fetch_add(&ce->totals.bytes_set, rec->bytes, __ATOMIC_RELAXED);
		}
		break;
	default:
		break;
	}
}
