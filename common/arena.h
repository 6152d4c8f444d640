/* arena.h - a bump allocator: many small allocations freed at once. common layer.
 *
 * A window's variable-size data (parameter bytes, launch attributes, staged host data) lives in
 * its arena; closing the window hands the arena over with it, and recycling a window resets the
 * arena while keeping its first block, so steady-state recording does not call malloc. Not
 * thread-safe: the owner serializes. */
#ifndef CF_ARENA_H
#define CF_ARENA_H

#include <stdbool.h>
#include <stddef.h>

struct cf_arena_block;

struct cf_arena {
	struct cf_arena_block *head; /* block being filled (newest); older ones follow */
	size_t block_size;           /* size of an ordinary new block (payload bytes) */
	size_t used;                 /* bytes handed out since the last reset (statistics) */
	size_t reserved;             /* bytes held in blocks (statistics: cufold's own memory) */
	unsigned char *cur;          /* the head block's first free byte (NULL: no head) */
	unsigned char *end;          /* one past the head block's payload */
};

/* An empty arena whose blocks hold block_size bytes (0: 64 KiB); allocates nothing yet. */
void cf_arena_init(struct cf_arena *a, size_t block_size);
/* Free every block. The arena may be used again. */
void cf_arena_fini(struct cf_arena *a);
/* Forget every allocation but keep the largest block for reuse. */
void cf_arena_reset(struct cf_arena *a);
/* cf_arena_alloc when the head block has no room (or n is 0 or absurd). */
void *cf__arena_alloc_slow(struct cf_arena *a, size_t n);

/* n bytes aligned to 16, or NULL when out of memory. Never returns NULL for n == 0. Inline: a
 * bump of the head block's free range, taken per recorded kernel and per deferred one (issue 22);
 * need - 1 < room is 0 < need <= room (need is 0 for n == 0 and for an n that wraps). */
static inline void *cf_arena_alloc(struct cf_arena *a, size_t n)
{
	size_t need = (n + 15) & ~(size_t)15;

	if (__builtin_expect(need - 1 < (size_t)(a->end - a->cur), 1)) {
		void *p = a->cur;

		a->cur += need;
		a->used += need;
		return p;
	}
	return cf__arena_alloc_slow(a, n);
}
/* A copy of n bytes at p in the arena, or NULL. */
void *cf_arena_dup(struct cf_arena *a, const void *p, size_t n);
/* Whether p lies in one of a's blocks (handed out or not): a walk of the blocks. */
bool cf_arena_holds(const struct cf_arena *a, const void *p);
/* Move everything of src into dst (dst keeps its own blocks too); src is left empty. */
void cf_arena_move(struct cf_arena *dst, struct cf_arena *src);

#endif
