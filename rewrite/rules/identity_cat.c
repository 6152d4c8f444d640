/* identity_cat.c - rule: a concatenation kernel whose inputs already lie end to end, in order,
 * in one buffer becomes one copy. rewrite layer.
 *
 *   before:  cat(out, {A, A+n1, A+n1+n2, ..}, {n1, n2, n3, ..})    (a kernel whose card says
 *                                                                   `cat`; stream s)
 *   after:   copy A -> out   n1+n2+.. bytes                         (stream s)
 *
 * This is what is left of torch.cat over the views of one split, or of a cat whose inputs an
 * earlier slice-glue already made contiguous.
 *
 * Safe when (a guard checked on every launch, on the bindings of that launch):
 *  - cat_identity: the kernel's card is cat-like and its table decodes; entry i+1 starts where
 *    entry i ends; the output is exactly the entries' total length; the kernel reads and writes
 *    nothing but the entries and the output; and the inputs miss the output. Then the kernel's
 *    effect is byte for byte the copy's.
 *
 * Why it pays: the copy engine moves a contiguous block at bandwidth without the gather's index
 * arithmetic, and the result is a copy the other copy rules (coalesce, copy-chain, dead-write,
 * batch-copy) can work on. */
#include "common/errors.h"
#include "rewrite/rewriter.h"

static bool cat_match(const struct rw_rewriter *rw, uint32_t i)
{
	const struct rw_node *x = rw_node_at(rw, i);

	return x && rw_is_plain(rw, i) && x->op.kind == CAP_OP_KERNEL &&
	       rw_need(rw, NULL, RW_G_CAT_IDENTITY, i, i) == 0;
}

static int cat_apply(struct rw_rewriter *rw, uint32_t i)
{
	int rc = rw_need(rw, rw, RW_G_CAT_IDENTITY, i, i);

	return rc ? rc : rw_replace(rw, i, 1, RW_NODE_CAT_COPY, RW_NONE, "identity-cat");
}

const struct rw_rule rw_rule_identity_cat = {
	.name = "identity-cat",
	.benefit = 25,
	.level = 1,
	.match = cat_match,
	.apply = cat_apply,
	.reach = 1, /* match reads i alone */
};
RW_RULE_REGISTER(identity_cat);
