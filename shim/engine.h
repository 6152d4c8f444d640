/* engine.h - the per-call policy between the hand-written hooks (shim/hooks_*.c) and capture
 * and replay:
 * what each kind of driver call means for the open window, under the engine's mutex, and
 * the plumbing every hand-written hook uses. shim layer (on top of capture and replay).
 *
 * Invariants:
 *  1. A hook forwards at once, touching nothing, when cufold is in mode off (the exported stub
 *     jumps straight to the driver, SHIM_HOOK below) or when cufold itself is running on this
 *     thread (shim_is_inside()).
 *  2. Otherwise every call is counted (shim_note_call) and classified: stream work is recorded
 *     and then sent to the driver with the program's own arguments, and the driver's result is
 *     returned unchanged; in CUFOLD_MODE=replay, replay may instead keep a recorded call (the
 *     hook answers CUDA_SUCCESS; replay submits it later, in order, in a graph or eagerly). A
 *     boundary first makes replay submit everything it keeps, then closes the open window,
 *     BEFORE the call reaches the driver, whichever thread makes it; a neutral call (a pure
 *     query) only counts. Calls cufold does not model are boundaries (shim_note_unmodeled).
 *     Synchronizes, frees and unmaps are boundaries only when what they name could include
 *     work of the open window; queries never are (shim_engine_observe).
 *  3. The engine's mutex orders all recording: windows hold the ops of every thread in the
 *     order their calls took it. No hook holds it while the driver runs the program's call
 *     (cufold's own driver calls do run under it: queries, and replay's graph builds,
 *     launches and eager submissions of kept calls, so those reach the driver in the
 *     program's order). A call replay answers RPL_EAGER is issued after the mutex is
 *     dropped (replay/replay.h says why that keeps the program's order).
 *  4. While any stream of the process is being captured by the program, ops on capturing
 *     streams pass through unrecorded (cuStreamIsCapturing decides, asked only then), and
 *     replay keeps no call at all: every stream-work call is a boundary for it (a wait joins
 *     its stream to a capture in the driver at once). Queries of capture state first make
 *     replay submit what it keeps.
 *  5. Every locked path asks the state again under the mutex: a thread that blocked on it
 *     while exit flushed passes through. Nothing waits on the device under the mutex (replay's
 *     waits after a failure are made after it is dropped).
 *  6. Fork closes the window (FORK, kept calls submitted first) with the mutex held across the
 *     fork; the child abandons the parent's engine (never walks, frees or unlocks it: another
 *     thread of the parent may have been changing it) and makes a new one, so it starts with
 *     nothing recorded and no templates, and writes no outputs unless their path has %p. Exit
 *     closes the window (EXIT, kept calls submitted first) and writes the outputs; calls after
 *     that pass through.
 *  7. No result of the driver is lost: an error of a deferred op's submission is returned by
 *     the context's next observing call (synchronize, query, blocking copy) in place of
 *     success, as the driver reports asynchronous errors (replay/deferred_errors.c). */
#ifndef SHIM_ENGINE_H
#define SHIM_ENGINE_H

#include <pthread.h>
#include <stddef.h>

#include "capture/capture.h"
#include "common/compiler.h"
#include "common/lock.h"
#include "replay/replay.h"
#include "shim/shim_int.h"
#include "shim/signals.h"

/* ------------------------------------------------------------------ the engine */

/* The engine: the one lock and every part that changes while a program runs. Each layer's
 * part is opaque here (its _int.h defines it); the lock is the only thing that orders them:
 *
 *	struct cf_engine --lock--> cap (capture.h: windows, shapes, alloc map, functions,
 *	                   |             streams, events, trie, call sites, trace buffer)
 *	                   +-----> rpl (replay.h: templates, matcher, deferred ops and errors,
 *	                                 totals, notes; it reads cap) --> kernels (rewrite/
 *	                                 kernels.h: cufold's own kernels per context, with a lock
 *	                                 of its own: off-lock builds load them)
 *
 * Invariants:
 *  1. Every capture and replay function that reads or changes a part takes it as its first
 *     argument and is reached only through engine_lock()'s answer (engine.c), so "called with
 *     the lock held" holds by construction; the exceptions are capture's atomic counters
 *     (cap_op_done's success half) and call-site unwinding (cap_callsite_capture: its own
 *     lock), which the hooks reach outside the lock.
 *  2. A process has one current engine (engine.c's `engine`), made on the first recorded call
 *     and replaced only in a forked child; an engine is never freed while the process runs
 *     (a thread may still hold a pointer to it at exit).
 *  3. Parts never point into another engine: two engines side by side share nothing
 *     (tests/unit/test_capture_engines.c). */
/* In a forked child, from the process's one child handler (shim.c): the child abandons the
 * parent's engine and makes a new one (invariant 6 above). */
void shim_engine__atfork_child(void);

/* Stream-ordered frees held behind replay's deferred work at most (32 KiB in the engine). They are
 * issued as soon as nothing is deferred (a segment went to the driver); a full buffer submits the
 * deferred work early, which ends replay of that window. PyTorch with cudaMallocAsync frees
 * about 1.1 tensors per op: 64 filled inside its 64-op segment every step (24 % replayed). */
#define SHIM_HELD_FREES 1024

/* A cuMemFreeAsync replay holds until the deferred work before it reaches the driver. */
struct shim_held_free {
	CUdeviceptr p;               /* what the program freed */
	CUstream stream;             /* on its stream (never a per-thread one) */
	CUcontext ctx;               /* the calling thread's context (the legacy stream's) */
	bool ptsz;                   /* called as cuMemFreeAsync_ptsz */
};

struct cf_engine {
	cf_lock_t lock;              /* orders all recording; guards everything below (common/lock.h:
				      * a futex word, one atomic to take or drop when free) */
	struct cap_engine *cap;      /* capture's part */
	struct rpl_engine *rpl;      /* replay's part; NULL unless CUFOLD_MODE=replay started it */
	int captures;                /* program stream captures in progress (atomic) */
	bool callsites;              /* CUFOLD_CALLSITES */
	bool timestamps;             /* CUFOLD_TRACE is on: ops carry the time of the call */
	bool lane;                   /* replay runs and ops carry neither call site nor time: the
				      * armed lane (replay/lane.c) may take a call (op_begin) */
	bool exit_done;              /* engine_exit flushed and wrote the outputs */
	struct shim_held_free held[SHIM_HELD_FREES]; /* stream-ordered frees behind deferred work, in
						     * the program's order (engine.c: frees_issue) */
	unsigned int nheld;          /* entries of held */
};

/* ------------------------------------------------------------------ stream work */

/* What op_begin hands op_end. */
struct shim_tok {
	struct cf_engine *e;         /* the engine that recorded it (op_end counts it there) */
	struct cap_rec rec;          /* what capture did with the call */
	bool active;                 /* op_end has work to do */
	CUresult err;                /* a deferred op's error this call returns instead of success */
};

/* Before a stream-work call. Returns true when the hook must now call the driver with the
 * program's own arguments and then shim_engine_op_end with the result; false when the engine
 * answered the call itself with *rc (replay's deferral; never in trace mode). */
bool shim_engine_op_begin(const struct cap_call *c, struct shim_tok *t, CUresult *rc);
/* Returns what the hook returns: rc, or the error of a deferred op when the call observes the
 * device (a blocking copy) and the driver succeeded. */
CUresult shim_engine_op_end(struct shim_tok *t, CUresult rc);

/* ------------------------------------------------------------------ other calls */

/* A synchronize or query (kind SYNC or QUERY) of what t names; t's ctx and tid are filled in
 * here. A synchronize ends the window only when t could observe work of the open window
 * (capture's cap_window_observed); a query never ends it, and is answered CUDA_ERROR_NOT_READY
 * without reaching the driver while replay holds the work it asks about (rpl_poll). Either may
 * return the error of a deferred op of the caller's context (rpl_error_take). */
struct shim_obs {
	bool answered;               /* the hook returns `answer` without calling the driver */
	CUresult answer;             /* when answered */
	CUresult err;                /* else: returned instead of the driver's success */
};
void shim_engine_observe(enum cap_boundary kind, enum drv_api_id api, struct cap_target *t, struct shim_obs *o);
/* What the hook returns after the driver answered rc. */
CUresult shim_engine_observed(const struct shim_obs *o, CUresult rc);

/* Count a call that changes nothing cufold tracks (a pure query). */
void shim_engine_neutral(enum drv_api_id api);
/* shim_engine_neutral's common case, inline in a neutral hook (hooks_neutral.c) for an entry
 * point whose flags are the constant `flags`: where the call would only be counted (counting,
 * not a query of capture state) and no signal is pending, counts it and returns true; else false,
 * having done nothing (the hook then calls shim_engine_neutral, out of its line). PyTorch's
 * runtime makes about 11 such calls an op (cuCtxGetDevice 8.5, cuDevicePrimaryCtxGetState 2.7). */
static inline bool shim_engine_neutral_counted(enum drv_api_id api, unsigned flags)
{
	if (cf_likely(__atomic_load_n(&shim__counting, __ATOMIC_ACQUIRE)) && !(flags & DRV_API_CAPTURE_QUERY) &&
	    !__atomic_load_n(&shim__signals_pending, __ATOMIC_RELAXED)) {
		__atomic_fetch_add(&shim__counts[api], 1, __ATOMIC_RELAXED);
		return true;
	}
	return false;
}
/* A boundary: count it and close the open window before the call goes to the driver. */
void shim_engine_boundary(enum cap_boundary kind, enum drv_api_id api);
/* From shim_note_unmodeled: the call was counted; close the window (UNMODELED). */
void shim_engine_unmodeled(enum drv_api_id api);

/* The driver handed out [base, base+size) of kind (after a successful allocation). */
void shim_engine_alloc(enum drv_api_id api, uint64_t base, uint64_t size, enum cap_alloc_kind kind);

/* A free: the allocation leaves the map before the driver frees it, and the window ends first
 * (FREE) when one of its ops names the allocation; shim_engine_free_end puts it back when the
 * driver refused. */
struct shim_free_tok {
	struct cap_alloc alloc;      /* what was removed */
	bool removed;                /* an allocation was removed */
};
void shim_engine_free_begin(enum drv_api_id api, uint64_t base, struct shim_free_tok *t);
void shim_engine_free_end(struct shim_free_tok *t, CUresult rc);
/* A stream-ordered free (cuMemFreeAsync, _ptsz) of memory cufold saw come from a pool is stream
 * work, ordered after the stream's earlier work: it never ends the window. The allocation leaves
 * the map; while replay holds deferred work the free is held too, and reaches the driver after
 * that work (at the next op that finds nothing deferred, or when the window closes); on a
 * per-thread default stream, which no other thread may name, the deferred work is submitted
 * first instead. Returns true
 * when it was held: the hook answers CUDA_SUCCESS without calling the driver. Else the hook
 * calls the driver and shim_engine_free_end. */
bool shim_engine_free_async(enum drv_api_id api, uint64_t base, CUstream s, struct shim_free_tok *t);
/* An allocation failed for want of memory: the deferred work and the frees held behind it
 * reach the driver. Returns true when there were held frees (the hook tries once more). */
bool shim_engine_frees_release(void);
/* cuMemUnmap: every mapped range inside [base, base+size) leaves the map; the window ends first
 * (FREE) when one of its ops names the range. */
void shim_engine_unmap(enum drv_api_id api, uint64_t base, uint64_t size);

/* A stream was created with flags (counted as neutral). */
void shim_engine_stream_created(CUstream s, unsigned int flags);
/* A stream is being destroyed: boundary (DESTROY), then capture forgets it. */
void shim_engine_stream_destroy(enum drv_api_id api, CUstream s);
/* An event is being destroyed: no boundary (an event is a binding); capture forgets it. True:
 * replay holds the destroy back behind deferred ops naming the event and makes it after them
 * (the hook answers CUDA_SUCCESS and does not call the driver). */
bool shim_engine_event_destroy(enum drv_api_id api, CUevent e);

/* The program begins or ends a stream capture: boundary (CAPTURE) before; after the call,
 * shim_engine_capture_done with the result keeps the count of active captures. */
void shim_engine_capture_begin(enum drv_api_id api);
void shim_engine_capture_done(bool begin, CUresult rc);

/* Context calls: cuCtxSetCurrent is a boundary only when it changes the current context; push,
 * pop and destroy always are (CONTEXT). shim_engine_ctx_done records the thread's new current
 * context after a successful call (NULL: unknown, asked again when needed). */
void shim_engine_ctx_set(enum drv_api_id api, CUcontext target);
void shim_engine_ctx_switch(enum drv_api_id api);
void shim_engine_ctx_done(CUresult rc, bool known, CUcontext now);
/* ctx was destroyed (its modules with it): forget what cufold loaded into it. */
void shim_engine_ctx_destroyed(CUcontext ctx);

/* Module and library calls: unload is a boundary (MODULE_UNLOAD) and forgets functions;
 * CUkernel handles are learned after cuLibraryGetKernel / cuLibraryEnumerateKernels (lib: the
 * library they came from, so their functions know its image). */
void shim_engine_module_unload(enum drv_api_id api);
void shim_engine_kernels(enum drv_api_id api, const CUkernel *k, unsigned int n, bool count_call, CUlibrary lib);
/* A module (library: a CUlibrary) the driver loaded, from the bytes at image or the file at
 * path: capture keeps the PTX the device would JIT from it (cap_image_loaded). Not counted (the
 * hook counted the call before it reached the driver). */
void shim_engine_image_loaded(bool library, const void *handle, const void *image, const char *path);
/* A lookup handed out a function or kernel of loaded code (cap_image_link). Not counted. */
void shim_engine_image_link(enum cap_image_link kind, const void *handle, const void *from);
/* A JIT link's input, output and end (cap_link_*), after the driver succeeded. Not counted. */
void shim_engine_link_input(CUlinkState link, CUjitInputType type, const void *data, size_t size, const char *path);
void shim_engine_link_complete(CUlinkState link, const void *out);
void shim_engine_link_destroy(CUlinkState link);

/* ------------------------------------------------------------------ for tests and benchmarks */

/* The engine's totals now (under its lock); false when it is not recording. */
bool shim_engine_totals(struct cap_totals *t);

/* ------------------------------------------------------------------ hook plumbing */

/* Define a hand-written hook of an exported symbol:
 *
 *	SHIM_HOOK(cuMemsetD32Async)(CUdeviceptr_v2 d, unsigned int ui, size_t n, CUstream s)
 *	{
 *		... the slow path, in C, with the exact prototype of cuda_api.def ...
 *	}
 *
 * The exported name (and shim_hand_<symbol>, which the hook table uses) is a three-instruction
 * stub, as for generated hooks: in mode off it tail-jumps to the driver's function through the
 * real table, so passthrough costs one predictable branch whatever the argument count; else
 * it tail-jumps to the C function shim_rec_<symbol> that follows the macro. */
#define SHIM_HOOK(symbol) \
	__attribute__((used)) static void shim_hoff_fn_##symbol(void) \
	{ \
		__asm__(".set shim_hoff_" #symbol ", %c0" ::"i"(offsetof(struct drv_real_table, p_##symbol))); \
	} \
	__asm__(SHIM_STUB_ASM(#symbol, "shim_hand_" #symbol, "shim_hoff_" #symbol, "shim_rec_" #symbol)); \
	CF_HIDDEN __typeof__(shim_hand_##symbol) shim_rec_##symbol; \
	CUresult CUDAAPI shim_rec_##symbol

/* Define the whole hook of a stream-work entry point: decls and args as in cuda_api.def, fill a
 * statement that describes the call in `struct cap_call c_` (api and stream preset to 0). The
 * program's call goes to the driver with its own arguments, after the engine recorded it. */
#define SHIM_OP_HOOK(symbol, decls, args, fill) SHIM_OP_HOOK_C(symbol, decls, args, fill, args)

/* SHIM_OP_HOOK where the call's arguments can be read back from what fill stored in c_: cargs,
 * the same arguments as expressions of c_ (which the engine does not change), pass the call to
 * the driver after the engine. The program's arguments then need not live across the engine's
 * call: a copy's hook saved and restored five registers for them, a launch's spilled and
 * reloaded five more, on every call the engine kept too (issue 22). */
#define SHIM_OP_HOOK_C(symbol, decls, args, fill, cargs) \
	SHIM_HOOK(symbol) decls \
	{ \
		struct cap_call c_; \
		struct shim_tok t_; \
		CUresult rc_; \
		if (shim_is_inside()) \
			return drv_real.p_##symbol args; \
		c_.api = DRV_ID_##symbol; \
		c_.stream = 0; \
		fill; \
		if (!shim_engine_op_begin(&c_, &t_, &rc_)) \
			return rc_; \
		rc_ = drv_real.p_##symbol cargs; \
		return shim_engine_op_end(&t_, rc_); \
	}

/* ------------------------------------------------------------------ outputs while running */

/* Write the outputs now (shim/signals.c). final: the program is being stopped by a signal: the
 * window closes (EXIT, kept calls submitted first), replay stops, calls after this pass through,
 * and the report, trace and pictures are written, as at exit; the lock is waited for at most
 * about 2 s. Not final: only the report is rewritten (CUFOLD_REPORT_EVERY), and only when the
 * lock is free at once. Returns 0 (written, or nothing to write), -CF_EBUSY (the lock was not
 * free: try again later) or -CF_ESTATE (the final wait ran out; nothing written, said in the
 * log). */
int shim_engine_write_outputs(bool final);

#endif
