/* arena.c - the bump allocator of arena.h. common layer. */
#include "common/arena.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/compiler.h"

#define ARENA_ALIGN 16
#define ARENA_DEFAULT_BLOCK (64 * 1024)

struct cf_arena_block {
	struct cf_arena_block *next; /* older block */
	size_t size;                 /* payload bytes (the head's free part is the arena's cur..end) */
	_Alignas(16) unsigned char data[]; /* payload */
};

void cf_arena_init(struct cf_arena *a, size_t block_size)
{
	memset(a, 0, sizeof(*a));
	a->block_size = block_size ? block_size : ARENA_DEFAULT_BLOCK;
}

void cf_arena_fini(struct cf_arena *a)
{
	struct cf_arena_block *b = a->head, *next;

	for (; b; b = next) {
		next = b->next;
		free(b);
	}
	a->head = NULL;
	a->used = 0;
	a->reserved = 0;
	a->cur = a->end = NULL;
}

void cf_arena_reset(struct cf_arena *a)
{
	struct cf_arena_block *b, *next, *keep = NULL;

	for (b = a->head; b; b = next) {
		next = b->next;
		if (!keep || b->size > keep->size) {
			if (keep)
				free(keep);
			keep = b;
		} else {
			free(b);
		}
	}
	a->head = keep;
	a->used = 0;
	a->reserved = 0;
	a->cur = a->end = NULL;
	if (keep) {
		keep->next = NULL;
		a->reserved = keep->size;
		a->cur = keep->data;
		a->end = keep->data + keep->size;
	}
}

void *cf__arena_alloc_slow(struct cf_arena *a, size_t n)
{
	struct cf_arena_block *b;
	size_t need = (n + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1), room = (size_t)(a->end - a->cur), size;
	void *p;

	if (need < n)
		return NULL;
	if (need == 0)
		need = ARENA_ALIGN;
	if (need <= room) {
		p = a->cur;
		a->cur += need;
		a->used += need;
		return p;
	}
	size = need > a->block_size ? need : a->block_size;
	if (size > SIZE_MAX - sizeof(*b))
		return NULL;
	b = malloc(sizeof(*b) + size);
	if (!b)
		return NULL;
	b->size = size;
	a->used += need;
	a->reserved += size;
	if (a->head && need > a->block_size && room >= ARENA_ALIGN) {
		/* a big one-off: slot it behind the current block, which still has room */
		b->next = a->head->next;
		a->head->next = b;
		return b->data;
	}
	b->next = a->head;
	a->head = b;
	a->cur = b->data + need;
	a->end = b->data + size;
	cf_assert(((uintptr_t)b->data & (ARENA_ALIGN - 1)) == 0 && a->used <= a->reserved);
	return b->data;
}

void *cf_arena_dup(struct cf_arena *a, const void *p, size_t n)
{
	void *q = cf_arena_alloc(a, n);

	if (q && n)
		memcpy(q, p, n);
	return q;
}

bool cf_arena_holds(const struct cf_arena *a, const void *p)
{
	uintptr_t x = (uintptr_t)p;

	for (const struct cf_arena_block *b = a->head; b; b = b->next)
		if (x >= (uintptr_t)b->data && x - (uintptr_t)b->data < b->size)
			return true;
	return false;
}

void cf_arena_move(struct cf_arena *dst, struct cf_arena *src)
{
	struct cf_arena_block *b = src->head;

	if (!b)
		return;
	while (b->next)
		b = b->next;
	/* src's blocks go behind dst's head so dst keeps filling its current block */
	if (dst->head) {
		b->next = dst->head->next;
		dst->head->next = src->head;
	} else {
		dst->head = src->head;
		dst->cur = src->cur;
		dst->end = src->end;
	}
	dst->used += src->used;
	dst->reserved += src->reserved;
	src->head = NULL;
	src->used = 0;
	src->reserved = 0;
	src->cur = src->end = NULL;
}
