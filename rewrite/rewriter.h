/* rewriter.h - the rewriter: applies rules (the files of rewrite/rules/) to a window's ops until none
 * matches, and the API through which a rule edits. rewrite layer: includes capture/ and
 * rewrite/plan.h.
 *
 * Model (MLIR's PatternRewriter): the rewriter holds a list of nodes, at first one per original
 * op. A rule's `match` looks (const) at node i and its neighbours, asking its conditions with
 * rw_need(rw, NULL, ...); its `apply` edits only with rw_erase / rw_replace / rw_gather / rw_unorder and
 * records with rw_need(rw, rw, ...) (or rw_guard, on original ops) every binding condition it
 * relied on. Rules run in order of benefit (higher first) then name: the first rule that
 * matches, at the first node it matches, then again from the first rule, until none matches;
 * the result is deterministic. Every rule must make the list strictly shorter or stop matching
 * what it made, so the fixed point is reached; as a belt, a window that has not settled after
 * RW_MAX_APPLY applications per original op (plus 16) is left unchanged (the identity plan), as
 * it is when an apply fails.
 *
 * Registration: each rule file defines `const struct rw_rule rw_rule_<name>` and registers it
 * with RW_RULE_REGISTER(<name>), which puts a pointer to it in the linker section "rw_rules";
 * the rewriter walks the section, so adding a rule is adding its file (no central list). */
#ifndef RW_REWRITER_H
#define RW_REWRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "capture/capture.h"
#include "rewrite/plan.h"

#define RW_MAX_APPLY 4 /* applications per original op (+16 per window) before the rewriter gives up */

struct rw_rewriter;
struct rw_kernels;

/* One node of the list a rule sees. */
struct rw_node {
	uint8_t kind;                /* enum rw_node_kind */
	uint32_t norig;              /* original ops it covers */
	uint32_t *orig;              /* their indices, in window order (rewriter's arena) */
	uint32_t from;               /* FORWARD, CHAIN: the op it reads its source from, else RW_NONE */
	uint32_t nmembers;           /* BATCH_*: the nodes merged into it (rewriter's arena) */
	struct rw_member *members;
	struct cap_op op;            /* the op it stands for with the bindings seen at rewrite time
				      * (derived by rewrite/derive.c, as replay will at each launch) */
	const char *rule;            /* the rule that made it, or NULL */
	void *scratch;               /* derived parameter bytes (rewriter's arena), or NULL */
	int32_t snap;                /* its snapshot once a guard named it, else -1 */
};

struct rw_rule {
	const char *name;            /* "coalesce": what CUFOLD_RULES names */
	int benefit;                 /* higher runs first */
	int level;                   /* lowest CUFOLD_OPT that enables it (1 or 2) */
	/* Whether the rule applies at node i. Pure: looks only, through the const rewriter. */
	bool (*match)(const struct rw_rewriter *rw, uint32_t i);
	/* Rewrite at node i (match said yes): edits only through rw_erase / rw_replace /
	 * rw_unorder, records guards with rw_need (or rw_guard). 0 or a negative CF_E* code (the
	 * rewrite is abandoned: the plan is the window unchanged). */
	int (*apply)(struct rw_rewriter *rw, uint32_t i);
	/* Nodes match reads: i .. i + reach - 1 and nothing before i or elsewhere (the original
	 * ops aside), so a "no" at i stays true until an edit reaches those nodes and the driver
	 * need not ask again. 0: unknown, asked at every pass. */
	uint32_t reach;
	/* match reads nodes before i too (any of them, the original ops aside), and i + reach - 1
	 * at most after it: an answer stays true until an edit reaches a node before that, so no
	 * answer after an edit is kept (batch-kernel: a passed wait's record and its ancestry). */
	bool reads_before;
	/* match reads nodes only through rw_node_at, rw_is_plain, rw_need, rw_first_failing,
	 * rw_first_holding and rw_plain_between (and rw_count for its bounds), which note the
	 * furthest node it read: a "no" at i then stays true until an edit reaches that node, not
	 * merely i + reach - 1 (most scans stop at the first node in the way). Needs a reach. */
	bool reads_tracked;
};

#define RW_RULE_REGISTER(name) \
	static const struct rw_rule *const rw_rule_ptr_##name __attribute__((used, section("rw_rules"))) = \
		&rw_rule_##name

/* Which rules run: those whose level is at most opt, then the switches of rules, which turn a
 * rule on or off whatever its level (at opt 0 too); a negative opt runs no rule at all. */
struct rw_config {
	int opt;                     /* CUFOLD_OPT 0..2: rules with level <= opt run; negative: none,
				      * whatever rules says */
	const char *rules;           /* CUFOLD_RULES: "-name,+name" (later wins), or NULL */
	struct rw_kernels *kernels;  /* the engine's cache of cufold's kernels (rewrite/kernels.h)
				      * that batch nodes launch; NULL: none can be loaded (tests
				      * resolve them with rw__set_kernel_resolver) */
	struct rw_rename_budget *rename; /* the engine's budget for writing elsewhere
				      * (rewrite/plan.h; NULL or a max of 0: nothing is renamed) */
};

/* The registered rules (linker section), in run order (benefit, then name); *n gets how many.
 * The array is static and sorted once; thread-safe after the first call returns. */
const struct rw_rule *const *rw_rules_registered(size_t *n);
/* Whether cfg enables r. */
bool rw_rule_is_enabled(const struct rw_rule *r, const struct rw_config *cfg);
/* Whether cfg enables any registered rule. The first configuration with switches that reaches
 * this or rw_rewrite has them checked (rw_rules_check), once per process. */
bool rw_config_has_rules(const struct rw_config *cfg);
/* Names in rules ("+a,-b,c") that no registered rule has: one warning on stderr naming them and
 * listing the known rules. Returns how many (0 when no rule is linked in). */
int rw_rules_check(const char *rules);

/* Rewrite the window ops[0..n) (tg: its trace graph, or NULL to rely on window order only)
 * with the registered rules cfg enables (none when cfg is NULL), or, when rules is not NULL,
 * exactly with rules[0..nrules) (tests, sorted into run order). Returns the plan
 * (rw_plan_destroy), the identity plan when nothing fires, a rule failed or the window did not
 * settle, NULL only when out of memory. */
struct rw_plan *rw_rewrite(const struct cap_op *const *ops, uint32_t n, const struct cap_graph *tg,
			   const struct rw_config *cfg, const struct rw_rule *const *rules, size_t nrules);
/* Tests: whether the driver remembers where a rule with a reach said no (default true); off, it
 * asks every rule at every node after each application, as the plan is defined. */
void rw__set_memo(bool on);

/* ------------------------------------------------------------------ for rules */

uint32_t rw_count(const struct rw_rewriter *rw);
/* Node i (valid until the next edit). */
const struct rw_node *rw_node_at(const struct rw_rewriter *rw, uint32_t i);
/* The nodes as one array, 0 .. rw_count - 1 (valid until the next edit): for a rule's scan over
 * many of them. */
const struct rw_node *rw_nodes(const struct rw_rewriter *rw);
/* Whether an op of the window is on the legacy stream (implicit synchronization with every
 * blocking stream). */
bool rw_has_legacy(const struct rw_rewriter *rw);
/* Original op j as captured. */
const struct cap_op *rw_orig(const struct rw_rewriter *rw, uint32_t j);
/* Whether original op b's only ordering inputs are original op a and what a already waits for
 * (trace graph: preds(b) is a subset of preds(a) + {a}); without a trace graph, whether every
 * op between a and b (b > a) was erased. Rules use it to prove nothing else can come between
 * a and b. */
bool rw_orig_follows(const struct rw_rewriter *rw, uint32_t a, uint32_t b);
/* Whether the original op is a 1-D device-to-device copy in linear memory that replay may
 * defer (asynchronous, not host-visible, not refused, no peer contexts). */
bool rw_op_is_linear_dtod(const struct cap_op *op);
/* The same for a 1-D or 2-D (one layer of rows, pitches at least the width) copy. */
bool rw_op_is_pitched_dtod(const struct cap_op *op);

/* Remove node i (its original ops are not submitted). 0 or -CF_EINVAL. */
int rw_erase(struct rw_rewriter *rw, uint32_t i);
/* Replace nodes [i, i+count) by one node of kind covering their original ops in order; from is
 * the op a FORWARD or CHAIN node reads its source from (else RW_NONE). A BATCH_* node keeps the
 * replaced nodes as its members (one table range each). The node's op is derived
 * from the window's ops (rewrite/derive.c). 0, -CF_EINVAL (also when it cannot be derived) or
 * -CF_ENOMEM. */
int rw_replace(struct rw_rewriter *rw, uint32_t i, uint32_t count, enum rw_node_kind kind, uint32_t from,
	       const char *rule);
/* Replace the nodes idx[0..count) (ascending, count >= 2) by one node of kind standing at
 * idx[0] and covering their original ops in order; the nodes between them keep their order
 * after it. Only for kinds that may reorder (RW_NODE_BATCH_KERNEL): the caller has recorded the
 * guards that make running idx[1..] before the nodes they pass safe. 0, -CF_EINVAL (also when
 * the node cannot be derived) or -CF_ENOMEM. */
int rw_gather(struct rw_rewriter *rw, const uint32_t *idx, uint32_t count, enum rw_node_kind kind, const char *rule);
/* Record a condition on original ops a and b. 0 or -CF_ENOMEM. */
int rw_guard(struct rw_rewriter *rw, enum rw_guard_kind kind, uint32_t a, uint32_t b);

/* A condition between nodes i and j of the list as they are now. With rec NULL: evaluate it
 * on the nodes' ops (pure), 0 when it holds, else 1. With rec (the same rewriter, in apply):
 * record it as a guard on what the nodes stand for (an untouched op by its index, a merged or
 * derived node by a snapshot re-derived at every check), 0 or a negative CF_E* code. Rules
 * write their conditions once and call them both ways. */
int rw_need(const struct rw_rewriter *rw, struct rw_rewriter *rec, enum rw_guard_kind kind, uint32_t i, uint32_t j);

/* Whether every node strictly between i and j (i < j <= rw_count) is a kernel, copy or memset on node i's
 * stream (slot), so the only ops between them in time are those, in list order. Ops of one
 * slot name one stream handle in every window of the shape, so this needs no guard. */
bool rw_plain_between(const struct rw_rewriter *rw, uint32_t i, uint32_t j);
/* The first j in (i, last] where condition kind does not hold between nodes i and j
 * (rw_need(rw, NULL, kind, i, j) != 0), or last + 1 when it holds for all of them: a rule's scan
 * for the first node that stops it, at a few instructions per node where the nodes' ranges are
 * far apart. */
uint32_t rw_first_failing(const struct rw_rewriter *rw, enum rw_guard_kind kind, uint32_t i, uint32_t last);
/* The first j in (i, last] where condition kind holds between nodes i and j, or last + 1. */
uint32_t rw_first_holding(const struct rw_rewriter *rw, enum rw_guard_kind kind, uint32_t i, uint32_t last);
/* Let node j run without waiting for node i (i < j): the order between them in the window is
 * dropped from the plan (the caller has recorded the guards that make that safe). Pairs not
 * dropped keep their order. Any later edit of the list forgets every dropped pair (node
 * indices would no longer mean the same nodes). 0, -CF_EINVAL or -CF_ENOMEM. */
int rw_unorder(struct rw_rewriter *rw, uint32_t i, uint32_t j);
/* Whether any pair was dropped since the list last changed. */
bool rw_any_unordered(const struct rw_rewriter *rw);
/* Whether node i is a kernel launch a multi-instance variant can run (rw_multi_possible with the
 * engine's cache of kernels). */
bool rw_can_multi(const struct rw_rewriter *rw, uint32_t i);
/* Whether node i is an unmerged original op (RW_NODE_OP). */
bool rw_is_plain(const struct rw_rewriter *rw, uint32_t i);

#endif
