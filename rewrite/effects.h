/* effects.h - what one op reads and writes, as address ranges: the facts every rule's safety
 * condition is made of. rewrite layer: includes capture/capture.h and rewrite/cards.h.
 *
 * Copies and memsets need no card: a copy reads its source and writes its destination, a memset
 * writes its destination (2-D forms as pitched regions, 3-D forms as their whole span: an upper
 * bound). A kernel's ranges come from its card
 * (rewrite/cards.h); a kernel with no card, an `indirect` card, a span the card cannot compute
 * (`unknown`) or a launch that does not fit its card may touch anything: `all`. Events, host
 * functions and anything else are `all` too, so a rule that asks "does anything between these
 * two ops read this range" gets "maybe" for them and leaves the window alone.
 *
 * Ranges are [addr, addr + bytes) in the one virtual address space of the process (device,
 * managed and pinned host memory alike, as unified addressing gives them). */
#ifndef RW_EFFECTS_H
#define RW_EFFECTS_H

#include <stdbool.h>
#include <stdint.h>

#include "capture/capture.h"
#include "rewrite/cards.h"

/* A contiguous range, or (pitch != 0) a pitched region: rows of `width` bytes `pitch` apart,
 * from addr to addr + bytes (the span: the last row ends there), the bytes between rows not
 * touched. */
struct rw_range {
	uint64_t addr;               /* first byte */
	uint64_t bytes;              /* span (0: touches nothing) */
	uint64_t width;              /* pitched: bytes per row (< pitch); else 0 */
	uint64_t pitch;              /* pitched: bytes from a row to the next; 0: contiguous */
};

struct rw_effects {
	bool all;                    /* may read and write anything: the lists say nothing */
	uint32_t nr, nw;             /* ranges read / written */
	struct rw_range r[RW_ACCESS_MAX];
	struct rw_range w[RW_ACCESS_MAX];
};

/* What an unknown span of a card ("somewhere in the allocation the pointer points into",
 * RW_ACC_UNKNOWN) resolves to on this thread: the extent of that allocation, from a snapshot of
 * the allocation map (a template build, which runs outside the engine's lock and must not read
 * the map) or from the live map (a launch's guard check, under the lock). Without a view, or
 * for a pointer the view does not hold, an unknown span is everything (`all`). */
struct rw_alloc_view {
	const struct cap_alloc *snap; /* sorted by base (cap_alloc_snapshot), or NULL */
	size_t nsnap;                 /* its entries */
	struct cap_engine *live;      /* else the live map (the caller holds the engine's lock) */
	uint64_t gen;                 /* cap_alloc_gen when the snapshot was taken / now */
	bool asked;                   /* set when an unknown span was looked up through it */
};
/* Make v this thread's view (NULL: none); returns the one it replaces, to put back after. */
struct rw_alloc_view *rw_alloc_view_use(struct rw_alloc_view *v);
struct rw_alloc_view *rw_alloc_view_current(void);

/* What op may read and write. Never fails: what cannot be known is `all`. */
void rw_op_effects(const struct cap_op *op, struct rw_effects *e);

/* The access set of a kernel op from its card: 0, or -CF_ENOENT (no card) / -CF_EINVAL (the
 * launch does not fit the card). */
int rw_op_kernel_access(const struct cap_op *op, struct rw_access_set *set);

/* Whether two ranges share a byte (pitched regions exactly when their pitches are equal or one
 * of them is contiguous; otherwise by span, which may say yes for regions that interleave). */
bool rw_range_overlap(const struct rw_range *x, const struct rw_range *y);
/* Whether q overlaps any range of the list (the lists of an `all` effects say nothing: check
 * `all` first). */
bool rw_ranges_overlap(const struct rw_range *list, uint32_t n, const struct rw_range *q);

/* The one range op surely writes whole (every byte of it, whatever the data): a 1-D copy's
 * destination, a 1-D memset's span. False for everything else (2-D forms skip pitch gaps; a
 * kernel's card gives upper bounds). */
bool rw_op_sure_write(const struct cap_op *op, struct rw_range *out);

/* Whether op, run again on the same inputs, writes the same bytes and does nothing else: a
 * memset; a copy whose source misses its destination; a kernel whose card is `pure` with a
 * complete access set whose writes miss its reads. */
bool rw_op_is_pure(const struct cap_op *op);

/* Whether b is a with the same bindings: the same entry point, stream, context and every
 * argument (a kernel: function, grid, block, shared bytes and parameter bytes; attributes make
 * it different; a copy from pageable memory never is: its bytes are taken at each call; an
 * event op: the same event and flags). */
bool rw_op_same(const struct cap_op *a, const struct cap_op *b);

/* Whether op is an asynchronous 1-D memset (height 1) replay may defer. */
bool rw_op_is_set_1d(const struct cap_op *op);

/* The bytes a 1-D memset sets (width * element size). */
uint64_t rw_set_bytes(const struct cap_op *op);

#endif
