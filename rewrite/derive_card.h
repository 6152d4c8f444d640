/* derive_card.h - a kernel card derived from the kernel's PTX instead of written by hand (issue
 * 23 part 3). rewrite layer: includes driver/ptx.h. Implemented by derive_card.c (the refusal
 * screen and the interpretation) and derive_bound.c (values and bounds, derive_int.h); not yet
 * wired into the rewriter: a caller parses the module with ptx_parse, calls rw_card_derive per
 * kernel and hands the card text to rw_cards_parse.
 *
 * The result is a card in the existing card language (rewrite/cards.h), so the one card parser
 * and evaluator is reused: the caller hands the text to the card parser exactly as it would a
 * hand-written card. Parameters are named p0 .. pN-1 in declaration order; what the analysis
 * wants a reader to know (why a span is unknown, which loop it guessed a bound for) is written
 * as `#` note lines.
 *
 * Contract (conservative by construction): every span in a derived card is equal to or wider
 * than what the kernel can touch, never narrower; a span the analysis cannot bound is written
 * `unknown` (the whole allocation the pointer points into). `elementwise` is claimed only when
 * every access is p + i*size with i the global thread index and a guard i < count dominates it.
 *
 * Refusals (no card; the caller treats the kernel as touching anything, as for a kernel with no
 * card): calls to .func, grid sync / cooperative launch, device-side launch, textures and
 * surfaces, module-scope .global variables (a hidden input: the oracle once found exactly this
 * miss), and any address the analysis cannot follow. Pointers loaded from memory (global,
 * local, or a struct parameter at an offset that is not constant) are refused with a reason
 * starting "indirect", so a caller can count them apart. A pointer a by-value struct parameter
 * holds at a fixed offset (an ld.param from the struct at a constant offset) is a pointer like
 * a parameter: it gets a `field` line with its access and span. An address that joins pointers
 * of different bases (cat's src[s] unrolled, `c < k ? a[..] : b[..]`) is split into one access
 * per incoming edge, each bounded under that edge's constraints. */
#ifndef RW_DERIVE_CARD_H
#define RW_DERIVE_CARD_H

#include <stddef.h>

#include "driver/ptx.h"

/* Derives the card of entry `kernel` of parsed module m into card[0 .. cardlen) (NUL-terminated).
 * Returns 0 with the card written; -CF_ENOSYS when the kernel is refused, with the reason in
 * why[0 .. whylen) (one line, no trailing newline; "indirect: ..." for indirect pointers);
 * -CF_ENOENT when m has no entry of that name; -CF_ERANGE when the card does not fit in cardlen;
 * -CF_EINVAL for a NULL argument. why may be NULL when whylen is 0. Pure: reads m only, no global
 * state, safe to call from any thread. */
int rw_card_derive(const struct ptx_module *m, const char *kernel, char *card, size_t cardlen,
		   char *why, size_t whylen);

#endif
