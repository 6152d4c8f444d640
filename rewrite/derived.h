/* derived.h - the card a rule uses for a kernel: the user's (CUFOLD_CARDS, built-in), else one
 * derived from the kernel's PTX (derived.c, issue 23). rewrite layer. */
#ifndef RW_DERIVED_H
#define RW_DERIVED_H

struct cap_func;
struct rw_card;

enum rw_card_source {
	RW_CARD_NONE = 0,            /* no card: no user card, and no image known or CUFOLD_DERIVE=0 */
	RW_CARD_USER,                /* a user card (or a built-in one) names the kernel */
	RW_CARD_DERIVED,             /* derived from its PTX */
	RW_CARD_REFUSED,             /* its PTX is at hand, the analysis refused it (rw_card_refused_why) */
	RW_CARD_NO_PTX,              /* its image has no PTX (machine code only, or none) */
};

/* The card for f's kernel and where it came from (source may be NULL); NULL when there is none
 * (the kernel may touch anything). The first call for a record derives its card (a template
 * build, never a launch): thread-safe. */
const struct rw_card *rw_card_for(const struct cap_func *f, enum rw_card_source *source);
/* "user card", "derived", "refused", "no PTX", "none" (the report's words). */
const char *rw_card_source_name(enum rw_card_source s);
/* Why the analysis refused f's kernel, NULL unless it did. */
const char *rw_card_refused_why(const struct cap_func *f);
/* Where f's card comes from, without deriving one: RW_CARD_NONE also when no rule has asked
 * about the kernel yet (it ran in no template) or CUFOLD_DERIVE=0. For the report. */
enum rw_card_source rw_card_source_of(const struct cap_func *f);

#endif
