/* test_capture_alloc_log.c - the allocation map's change log (capture/alloc.c:
 * cap__alloc_same_since, issue 22): an address is said to resolve as it did at an older gen only
 * when it does (what cap_alloc_find answers, and whether a probe of it was forgotten), over
 * random adds, removes, unmaps, reallocations at the same address and probe resets, for every
 * gen back to beyond what the log holds; and the answer is yes where nothing touched the address
 * and the log reaches back (what keeps capture's fast lanes on in a program that allocates and
 * frees every step). tests layer (cmocka, libcufold.a; no driver). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "capture/capture.h"
#include "capture/capture_int.h"

#define SLOTS 24                     /* allocation slots of 0x1000 bytes from SPACE */
#define SPACE 0x100000ull
#define NADDR (SLOTS * 4)            /* sampled addresses: four per slot */
#define STEPS 120

/* What resolving an address gives: the allocation's id and kind, or 0 outside the map; with
 * `outside_epoch`, the probe resets seen (an address outside the map reads the probes' answers,
 * which a reset forgets). */
struct answer {
	uint64_t id;
	uint8_t kind;
	uint64_t epoch;
};

static uint64_t addr_of(int k)
{
	return SPACE + (uint64_t)(k / 4) * 0x1000 + (uint64_t)(k % 4) * 0x3f0;
}

static struct answer resolve(struct cap_engine *ce, uint64_t a, uint64_t epoch)
{
	const struct cap_alloc *x = cap_alloc_find(ce, a);

	if (x)
		return (struct answer){ .id = x->id, .kind = x->kind, .epoch = 0 };
	return (struct answer){ .id = 0, .kind = 0, .epoch = epoch };
}

static bool same(struct answer x, struct answer y)
{
	return x.id == y.id && x.kind == y.kind && x.epoch == y.epoch;
}

/* One random change of the map. Returns whether the probes were reset. */
static bool change(struct cap_engine *ce, unsigned int *seed)
{
	int r = rand_r(seed) % 10, slot = rand_r(seed) % SLOTS;
	uint64_t base = SPACE + (uint64_t)slot * 0x1000;

	switch (r) {
	case 0: case 1: case 2: /* an allocation of one or two slots (may replace what overlaps) */
		cap_alloc_add(ce, base, (uint64_t)(1 + rand_r(seed) % 2) * 0x1000 - (uint64_t)(rand_r(seed) % 2) * 0x800,
			      (enum cap_alloc_kind)(rand_r(seed) % 3 == 0 ? CAP_ALLOC_HOST_PINNED : CAP_ALLOC_DEVICE));
		break;
	case 3: case 4: case 5: /* a free (of whatever starts there, if anything) */
		cap_alloc_remove(ce, base, NULL);
		break;
	case 6: /* an unmap of a few slots */
		cap_alloc_remove_range(ce, base, (uint64_t)(1 + rand_r(seed) % 3) * 0x1000);
		break;
	case 7: /* a change far from every sampled address */
		cap_alloc_add(ce, 0x900000 + (uint64_t)(rand_r(seed) % 4) * 0x1000, 0x1000, CAP_ALLOC_DEVICE);
		break;
	case 8:
		cap_alloc_remove(ce, 0x900000 + (uint64_t)(rand_r(seed) % 4) * 0x1000, NULL);
		break;
	default:
		if (rand_r(seed) % 4 == 0) {
			cap__alloc_probe_reset(ce);
			return true;
		}
		break;
	}
	return false;
}

/* Random histories: at every gen, every sampled address said to resolve as at an older gen does
 * (soundness); over the recent past, said so wherever it does and nothing touched it. */
static void test_sound(void **state)
{
	static struct answer past[STEPS + 1][NADDR];
	static uint64_t gens[STEPS + 1];
	uint64_t yes = 0, no = 0, asked = 0;

	(void)state;
	for (unsigned int seed = 1; seed <= 20; seed++) {
		struct cap_config cfg = { .max_templates = 4 };
		struct cap_engine *ce = cap_engine_create(&cfg);
		uint64_t epoch = 1;
		unsigned int s = seed;

		assert_non_null(ce);
		for (int st = 0; st <= STEPS; st++) {
			if (st && change(ce, &s))
				epoch++;
			gens[st] = cap_alloc_gen(ce);
			for (int k = 0; k < NADDR; k++)
				past[st][k] = resolve(ce, addr_of(k), epoch);
			/* every earlier step, every address */
			for (int o = 0; o <= st; o++) {
				for (int k = 0; k < NADDR; k++) {
					bool said = cap__alloc_same_since(ce, gens[o], addr_of(k), addr_of((k + 5) % NADDR));
					bool is = same(past[o][k], past[st][k]) &&
						  same(past[o][(k + 5) % NADDR], past[st][(k + 5) % NADDR]);

					asked++;
					if (said && !is)
						fail_msg("seed %u: step %d: address %d said to resolve as at step %d, but it does not",
							 seed, st, k, o);
					said ? yes++ : no++;
				}
			}
		}
		cap_engine_destroy(ce);
	}
	print_message("%llu questions: %llu yes, %llu no\n", (unsigned long long)asked, (unsigned long long)yes,
		      (unsigned long long)no);
	assert_true(yes > asked / 20); /* the log answers yes often enough to matter */
}

/* The program's step: free the batch of two steps ago, allocate a fresh one; the ops' own buffers
 * stay. An address in those buffers resolves as at the gen of the step before, and of every step
 * the log reaches back to; one in the freed batch does not. */
static void test_step(void **state)
{
	struct cap_config cfg = { .max_templates = 4 };
	struct cap_engine *ce = cap_engine_create(&cfg);
	uint64_t gen[64], batch[64];

	(void)state;
	assert_non_null(ce);
	assert_int_equal(cap_alloc_add(ce, 0x10000, 0x1000, CAP_ALLOC_DEVICE), 0); /* a weight */
	assert_int_equal(cap_alloc_add(ce, 0x20000, 0x1000, CAP_ALLOC_HOST_PINNED), 0); /* a staging buffer */
	for (int st = 0; st < 64; st++) {
		gen[st] = cap_alloc_gen(ce);
		if (st >= 2)
			assert_int_equal(cap_alloc_remove(ce, batch[st - 2], NULL), 0);
		batch[st] = 0x100000 + (uint64_t)(st % 3) * 0x1000; /* the allocator reuses addresses */
		assert_int_equal(cap_alloc_add(ce, batch[st], 0x1000, CAP_ALLOC_DEVICE), 0);
		assert_true(cap__alloc_same_since(ce, gen[st], 0x10010, 0x20020));
		if (st >= 1)
			assert_true(cap__alloc_same_since(ce, gen[st - 1], 0x10010, 0x20020));
		if (st >= 8) /* 2 log entries a step: 8 steps back is well inside CAP_ALLOC_LOG */
			assert_true(cap__alloc_same_since(ce, gen[st - 8], 0x10010, 0x20020));
		/* the batch's address came back from a free: not the same allocation */
		assert_false(cap__alloc_same_since(ce, gen[st], batch[st] + 8, 0x10010));
		assert_false(cap__alloc_same_since(ce, gen[st], 0x10010, batch[st] + 8));
	}
	/* older than the log reaches: no answer but "not known" */
	assert_false(cap__alloc_same_since(ce, gen[0], 0x10010, 0x20020));
	/* forgetting the probes touches every address outside the map, none inside */
	gen[0] = cap_alloc_gen(ce);
	cap__alloc_probe_reset(ce);
	assert_true(cap__alloc_same_since(ce, gen[0], 0x10010, 0x20020));
	assert_false(cap__alloc_same_since(ce, gen[0], 0x10010, 0x500000));
	cap_engine_destroy(ce);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sound),
		cmocka_unit_test(test_step),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
