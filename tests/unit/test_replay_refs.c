/* test_replay_refs.c - the index of what a template's graphs reference (replay/refs.c, issue 22):
 * rpl__template_references answers every free as the scan of every node does
 * (rpl__template_references_scan), over random templates (segments, buddy blocks over them,
 * kernel, copy, memset and event nodes), random launches of segments and blocks (which graph
 * holds a segment's bindings), ops that went eagerly, patched nodes (rpl__refs_touch, as
 * launch.c's patch calls it) and frees of ranges of every size, including ranges that only touch
 * a value at their first or last byte; the first few questions of a template are answered by the
 * scan itself (RPL_REFS_SCANS), the rest by the index. tests layer (cmocka, libcufold.a; no driver: the
 * template is made by hand, with no graphs). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "replay/replay_int.h"

#define POOL 48 /* the addresses the nodes point at: 0x10000 apart */

static uint64_t rnd(unsigned int *s, uint64_t n)
{
	return (uint64_t)rand_r(s) % n;
}

/* A value a node may hold: one of the pool's addresses with an offset, a small scalar, or 0. */
static uint64_t value(unsigned int *s)
{
	switch (rnd(s, 6)) {
	case 0:
		return 0;
	case 1:
		return rnd(s, 1000); /* a scalar */
	default:
		return 0x7f0000000000ull + rnd(s, POOL) * 0x10000 + rnd(s, 4) * 0x100;
	}
}

static void node_set(struct rpl_node *n, unsigned int *s, bool keep_kind)
{
	if (!keep_kind)
		n->kind = (uint8_t)(rnd(s, 8) < 4 ? CAP_OP_KERNEL : rnd(s, 4) == 0 ? CAP_OP_EVENT_RECORD :
				    rnd(s, 2) ? CAP_OP_MEMCPY : CAP_OP_MEMSET);
	switch (n->kind) {
	case CAP_OP_KERNEL:
		if (!keep_kind) {
			free(n->params);
			n->param_size = (uint32_t)(rnd(s, 6) * 8 + rnd(s, 2) * 4); /* a 4-byte tail: no word */
			n->params = calloc(1, n->param_size + 8);
			assert_non_null(n->params);
		}
		for (uint32_t off = 0; off + 8 <= n->param_size; off += 8) {
			uint64_t v = value(s);

			memcpy((char *)n->params + off, &v, 8);
		}
		break;
	case CAP_OP_MEMCPY:
		memset(&n->copy, 0, sizeof(n->copy));
		n->copy.srcMemoryType = rnd(s, 3) ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
		n->copy.dstMemoryType = rnd(s, 3) ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
		/* a host side's device address is not a reference; its host address is */
		n->copy.srcDevice = value(s);
		n->copy.dstDevice = value(s);
		if (n->copy.srcMemoryType == CU_MEMORYTYPE_HOST)
			n->copy.srcHost = (const void *)(uintptr_t)value(s);
		if (n->copy.dstMemoryType == CU_MEMORYTYPE_HOST)
			n->copy.dstHost = (void *)(uintptr_t)value(s);
		break;
	case CAP_OP_MEMSET:
		memset(&n->set, 0, sizeof(n->set));
		n->set.dst = value(s);
		break;
	default:
		break;
	}
}

/* A template of nops ops: runs of segments (2-5 ops each) split by eager ops, and over each run
 * buddy blocks of 2 and 4 segments; every graph's nodes random. */
static struct rpl_template *make(unsigned int *s)
{
	struct rpl_template *t = calloc(1, sizeof(*t));
	uint32_t op = 0, nops = 20 + (uint32_t)rnd(s, 60);

	assert_non_null(t);
	t->nops = nops;
	t->ops = calloc(nops, sizeof(*t->ops));
	t->segs = calloc(nops, sizeof(*t->segs));
	t->blocks = calloc(nops, sizeof(*t->blocks));
	assert_true(t->ops && t->segs && t->blocks);
	while (op < nops) {
		uint32_t run_first = t->nsegs;

		if (rnd(s, 4) == 0) { /* an eager op */
			t->ops[op++].seg = -1;
			continue;
		}
		for (uint32_t k = 0; k < 1 + rnd(s, 5) && op < nops; k++) {
			struct rpl_seg *g = &t->segs[t->nsegs];
			uint32_t n = 2 + (uint32_t)rnd(s, 4);

			if (op + n > nops)
				n = nops - op;
			g->first = op;
			g->n = n;
			g->block = -1;
			for (uint32_t i = 0; i < n; i++)
				t->ops[op + i].seg = (int32_t)t->nsegs;
			op += n;
			t->nsegs++;
		}
		for (uint32_t size = 2; size <= 4; size *= 2) /* blocks aligned in the run */
			for (uint32_t k = run_first; k + size <= t->nsegs; k += size) {
				struct rpl_seg *b = &t->blocks[t->nblocks++];

				b->first = t->segs[k].first;
				b->n = t->segs[k + size - 1].first + t->segs[k + size - 1].n - b->first;
				b->nseg = size;
			}
	}
	for (uint32_t k = 0; k < t->nsegs + t->nblocks; k++) {
		struct rpl_seg *g = k < t->nsegs ? &t->segs[k] : &t->blocks[k - t->nsegs];

		g->nodes = calloc(g->n, sizeof(*g->nodes));
		assert_non_null(g->nodes);
		for (uint32_t i = 0; i < g->n; i++)
			node_set(&g->nodes[i], s, false);
	}
	return t;
}

static void destroy(struct rpl_template *t)
{
	rpl__refs_free(t);
	for (uint32_t k = 0; k < t->nsegs + t->nblocks; k++) {
		struct rpl_seg *g = k < t->nsegs ? &t->segs[k] : &t->blocks[k - t->nsegs];

		for (uint32_t i = 0; i < g->n; i++)
			free(g->nodes[i].params);
		free(g->nodes);
	}
	free(t->segs);
	free(t->blocks);
	free(t->ops);
	free(t);
}

/* A free the program might make: around a pool address (its whole slot, part of it, a range
 * ending at a value's byte or starting one past it), or anywhere. */
static void a_free(unsigned int *s, uint64_t *base, uint64_t *size)
{
	uint64_t a = 0x7f0000000000ull + rnd(s, POOL) * 0x10000;

	switch (rnd(s, 6)) {
	case 0:
		*base = a, *size = 0x10000;
		break;
	case 1:
		*base = a + rnd(s, 4) * 0x100, *size = 1;
		break;
	case 2:
		*base = a - 0x100, *size = 0x101 + rnd(s, 2) * 0x100; /* ends at a or a + 0x100 */
		break;
	case 3:
		*base = a + 1, *size = 0xff; /* between values */
		break;
	case 4:
		*base = a, *size = rnd(s, 8) * 0x10000 + 1; /* several slots */
		break;
	default:
		*base = 1 + rnd(s, 2000), *size = 1 + rnd(s, 100); /* the scalars' range */
		break;
	}
}

static void test_index_is_scan(void **state)
{
	uint64_t asked = 0, yes = 0;

	(void)state;
	for (unsigned int seed = 1; seed <= 300; seed++) {
		unsigned int s = seed;
		struct rpl_template *t = make(&s);
		uint64_t launches = 0;

		for (int ev = 0; ev < 300; ev++) {
			uint32_t r = (uint32_t)rnd(&s, 10);

			if (r < 3) { /* a launch of a segment or a block: it holds those ops' bindings */
				uint32_t k = (uint32_t)rnd(&s, t->nsegs + t->nblocks);
				struct rpl_seg *g = k < t->nsegs ? &t->segs[k] : &t->blocks[k - t->nsegs];

				g->last_launch = ++launches;
				g->went_eager = false;
				/* its patch: some nodes take new values */
				for (uint32_t i = 0; i < g->n; i++) {
					if (rnd(&s, 3) == 0) {
						node_set(&g->nodes[i], &s, true);
						rpl__refs_touch(t, g, i);
					}
				}
			} else if (r == 3 && t->nsegs) { /* a segment's ops went eagerly */
				struct rpl_seg *g = &t->segs[rnd(&s, t->nsegs)];

				g->last_launch = ++launches;
				g->went_eager = true;
			} else { /* a free */
				uint64_t base, size;
				bool want, got;

				a_free(&s, &base, &size);
				want = rpl__template_references_scan(t, base, size);
				got = rpl__template_references(t, base, size);
				asked++;
				yes += want;
				if (want != got)
					fail_msg("seed %u event %d: a free of [%#llx, +%#llx) is %s by the index and %s by the scan",
						 seed, ev, (unsigned long long)base, (unsigned long long)size,
						 got ? "referenced" : "not referenced", want ? "referenced" : "not referenced");
			}
		}
		destroy(t);
	}
	print_message("%llu frees, %llu referenced\n", (unsigned long long)asked, (unsigned long long)yes);
	assert_true(yes > asked / 10 && yes < asked - asked / 10); /* both answers are exercised */
}

/* Many patches between two frees: past the dirty share the index is made again, and still
 * answers as the scan; and a value patched into a node is seen at the very next free. */
static void test_remake(void **state)
{
	unsigned int s = 7;
	struct rpl_template *t = make(&s);

	(void)state;
	t->segs[0].last_launch = 1;
	while (!t->refs) /* past the first few questions (scanned), the index is made */
		assert_false(rpl__template_references(t, 0x10, 0x10));
	assert_true(t->refs_asked > 0);
	/* node 0 of segment 0 points at a fresh address */
	t->segs[0].nodes[0].kind = CAP_OP_MEMSET;
	t->segs[0].nodes[0].set.dst = 0x123450000ull;
	assert_false(rpl__template_references(t, 0x123450000ull, 0x10)); /* not told yet: the old values */
	rpl__refs_touch(t, &t->segs[0], 0);
	assert_true(rpl__template_references(t, 0x123450000ull, 0x10));
	assert_true(rpl__template_references(t, 0x12344ffffull, 2)); /* its last byte */
	assert_false(rpl__template_references(t, 0x123450001ull, 0x10)); /* one past */
	for (int round = 0; round < 50; round++) {
		for (uint32_t k = 0; k < t->nsegs + t->nblocks; k++) {
			struct rpl_seg *g = k < t->nsegs ? &t->segs[k] : &t->blocks[k - t->nsegs];

			for (uint32_t i = 0; i < g->n; i++)
				if (rnd(&s, 2)) {
					node_set(&g->nodes[i], &s, true);
					rpl__refs_touch(t, g, i);
				}
		}
		for (int f = 0; f < 20; f++) {
			uint64_t base, size;

			a_free(&s, &base, &size);
			assert_int_equal(rpl__template_references(t, base, size), rpl__template_references_scan(t, base, size));
		}
	}
	destroy(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_index_is_scan),
		cmocka_unit_test(test_remake),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
