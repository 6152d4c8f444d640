/* hash.h - 64-bit hashing for keys and bindings: a finalizer, a combiner and a hash of a byte
 * range. common layer; header only.
 *
 * Not cryptographic; chosen for speed on short inputs (an op's key is a dozen words) with good
 * avalanche, so a 64-bit value can stand for a sequence in a hash table. Anything that must be
 * exact compares the underlying values as well (the trie compares keys, not hashes of keys). */
#ifndef CF_HASH_H
#define CF_HASH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define CF_HASH_SEED 0x9e3779b97f4a7c15ull /* any odd constant; the golden ratio's bits */

/* Finalizer of splitmix64: every input bit affects every output bit. */
static inline uint64_t cf_hash64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}

/* Fold v into h (order matters: combine(combine(h, a), b) != combine(combine(h, b), a)). */
static inline uint64_t cf_hash_combine(uint64_t h, uint64_t v)
{
	return cf_hash64(h ^ (v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2)));
}

/* One step of a streamed hash: folds v into h in four instructions. Each step is a bijection of h
 * for a fixed v and of v for a fixed h (xor, multiply by an odd constant, xor-shift), so two
 * sequences that differ in one word never meet; finish the stream with cf_hash64 for avalanche.
 * For per-op keys on the hot path, where cf_hash_combine's full finalizer per word cost most
 * of an op's recording (issue 22). */
static inline uint64_t cf_hash_step(uint64_t h, uint64_t v)
{
	h = (h ^ v) * 0x9fb21c651e98df25ull;
	return h ^ (h >> 29);
}

/* Hash of n bytes at p, eight at a time, folded into seed. */
static inline uint64_t cf_hash_bytes(const void *p, size_t n, uint64_t seed)
{
	const unsigned char *b = p;
	uint64_t h = seed ^ (n * 0xff51afd7ed558ccdull);

	while (n >= 8) {
		uint64_t w;

		memcpy(&w, b, 8);
		h = (h ^ cf_hash64(w)) * 0x9fb21c651e98df25ull;
		b += 8;
		n -= 8;
	}
	if (n) {
		uint64_t w = 0;

		memcpy(&w, b, n);
		h = (h ^ cf_hash64(w ^ ((uint64_t)n << 56))) * 0x9fb21c651e98df25ull;
	}
	return cf_hash64(h);
}

#endif
