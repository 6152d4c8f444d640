/* derived.c - the card a rule uses for a kernel: the user's card when one names it, else the
 * card derived from the kernel's PTX (issue 23 part 4; rewrite/derive_card.c does the analysis),
 * once per function record. rewrite layer.
 *
 * The PTX is what capture kept of the image the kernel was loaded from (cap_func_ptx). A derived
 * card is a pure function of that text and the kernel's name, so it is made once, the first time
 * a rule asks about the kernel (when a template is built, never per launch), and published in the
 * function record with one atomic store: a build runs outside the engine's lock, and two builds
 * asking at once derive twice and keep one. CUFOLD_DERIVE=0 turns derivation off (only user
 * cards, as before). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture/capture.h"
#include "common/config.h"
#include "common/errors.h"
#include "common/log.h"
#include "driver/ptx.h"
#include "rewrite/cards.h"
#include "rewrite/derive_card.h"
#include "rewrite/derived.h"

#define CARD_TEXT_MAX 16384 /* derive_card.h: 16 KiB holds every card of the corpus */

/* What became of one kernel (hung on its cap_func, never freed: records live as long as their
 * engine, and an abandoned engine's are not freed either). */
struct rw_derived {
	enum rw_card_source source;  /* DERIVED or REFUSED / NO_PTX */
	struct rw_cards *set;        /* the derived card's own set (one card), NULL unless DERIVED */
	const struct rw_card *card;  /* its card */
	char why[160];               /* REFUSED: the analysis's reason */
};

static struct rw_derived *derive(const struct cap_func *f)
{
	struct rw_derived *d = calloc(1, sizeof(*d));
	char err[160], *card = NULL;
	const struct ptx_module *m;
	int rc;

	if (!d)
		return NULL;
	d->source = RW_CARD_NO_PTX;
	if (!cap_func_ptx(f, NULL))
		return d;
	d->source = RW_CARD_REFUSED;
	m = cap_func_module(f, err, sizeof(err)); /* parsed once per image */
	card = malloc(CARD_TEXT_MAX);
	if (!m || !card) {
		snprintf(d->why, sizeof(d->why), "%s", m ? "out of memory" : err);
		goto out;
	}
	rc = rw_card_derive(m, f->name, card, CARD_TEXT_MAX, d->why, sizeof(d->why));
	if (rc != 0) {
		if (!d->why[0])
			snprintf(d->why, sizeof(d->why), "%s", cf_strerror(rc));
		goto out;
	}
	d->set = rw_cards_create();
	if (!d->set || rw_cards_parse(d->set, "(derived)", card, strlen(card)) != 0 ||
	    !(d->card = rw_cards_find(d->set, f->name))) {
		snprintf(d->why, sizeof(d->why), "the derived card did not parse");
		rw_cards_destroy(d->set);
		d->set = NULL;
		d->card = NULL;
		goto out;
	}
	d->source = RW_CARD_DERIVED;
out:
	if (d->source == RW_CARD_REFUSED)
		cf_log_info("kernel %s: no card derived from its PTX: %s", f->name, d->why);
	free(card);
	return d;
}

static const struct rw_derived *derived_of(const struct cap_func *f)
{
	struct cap_func *w = (struct cap_func *)f; /* the one field rewrite owns in the record */
	void *cur = __atomic_load_n(&w->derived, __ATOMIC_ACQUIRE), *expected = NULL;
	struct rw_derived *d;

	if (cur)
		return cur;
	d = derive(f);
	if (!d)
		return NULL;
	if (!__atomic_compare_exchange_n(&w->derived, &expected, d, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		/* another build derived it first: keep that one */
		rw_cards_destroy(d->set);
		free(d);
		return expected;
	}
	return d;
}

/* What f->user_card holds for "looked up: the user has no card for it". */
static const char no_user_card;

/* The user's card for f (rw_card_lookup of its name), kept on f's record: the user's cards are
 * loaded once, so the answer never changes. Only records with an image are written (capture
 * made them; a hand-made record may be read-only), as derived_of writes only those. */
static const struct rw_card *user_card_of(const struct cap_func *f)
{
	struct cap_func *w = (struct cap_func *)f; /* the other field rewrite owns in the record */
	void *m = f->image ? __atomic_load_n(&w->user_card, __ATOMIC_ACQUIRE) : NULL;
	const struct rw_card *card;

	if (m)
		return m == (const void *)&no_user_card ? NULL : m;
	card = rw_card_lookup(f->name);
	if (f->image)
		__atomic_store_n(&w->user_card, card ? (void *)card : (void *)&no_user_card, __ATOMIC_RELEASE);
	return card;
}

const struct rw_card *rw_card_for(const struct cap_func *f, enum rw_card_source *source)
{
	const struct rw_card *card = f ? user_card_of(f) : NULL;
	const struct rw_derived *d;
	enum rw_card_source s = RW_CARD_NONE;

	if (card) {
		s = RW_CARD_USER;
	} else if (f && cf_config_get()->derive && f->image) {
		d = derived_of(f);
		if (d) {
			s = d->source;
			card = d->card;
		}
	}
	if (source)
		*source = s;
	return card;
}

const char *rw_card_source_name(enum rw_card_source s)
{
	switch (s) {
	case RW_CARD_USER: return "user card";
	case RW_CARD_DERIVED: return "derived";
	case RW_CARD_REFUSED: return "refused";
	case RW_CARD_NO_PTX: return "no PTX";
	default: return "none";
	}
}

const char *rw_card_refused_why(const struct cap_func *f)
{
	const struct rw_derived *d = f ? __atomic_load_n(&((struct cap_func *)f)->derived, __ATOMIC_ACQUIRE) : NULL;

	return d && d->source == RW_CARD_REFUSED ? d->why : NULL;
}

enum rw_card_source rw_card_source_of(const struct cap_func *f)
{
	const struct rw_derived *d;

	if (!f)
		return RW_CARD_NONE;
	if (user_card_of(f))
		return RW_CARD_USER;
	d = __atomic_load_n(&((struct cap_func *)f)->derived, __ATOMIC_ACQUIRE);
	return d ? d->source : RW_CARD_NONE;
}
