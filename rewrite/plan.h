/* plan.h - a rewrite plan: the rewritten node list of one window plus the guards (conditions on
 * the bindings of the ORIGINAL window's ops) the rules relied on. rewrite layer: includes only
 * capture/capture.h.
 *
 * Replay's contract (per launch of a template built from a plan):
 *  1. rw_plan_guards_hold(plan, ops) on the matched (deferred) original ops; when false the plan
 *     is not valid for these bindings: issue the original ops eagerly, in order, and re-plan.
 *  2. for each plan node k: rw_plan_node_op(plan, k, ops, &op) derives the op to submit (or
 *     to patch the node with) from the original ops' bindings of THIS launch.
 * Ops are passed as an array of pointers indexed by original op index (0 .. norig-1). */
#ifndef RW_PLAN_H
#define RW_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "capture/capture.h"

/* What a plan node stands for. */
enum rw_node_kind {
	RW_NODE_OP = 0,   /* one original op, unchanged */
	RW_NODE_COPY = 1, /* one 1-D copy over the union of abutting original 1-D copies (orig, in
			   * order): src and dst of orig[0], bytes summed */
	RW_NODE_FORWARD = 2, /* one 1-D copy over abutting glue copies (orig, in order): dst of
			      * orig[0], bytes summed, src of the op a of the plan's guard
			      * forwards(a, orig[0]) (the copy that wrote orig[0]'s source) */
};

/* X(name, label): the conditions a rule can rely on. a and b are original op indices. */
#define RW_GUARD_LIST(X) \
	X(SRC_ABUTS, "src_abuts")          /* ops[b] src == ops[a] src + ops[a] bytes */ \
	X(DST_ABUTS, "dst_abuts")          /* ops[b] dst == ops[a] dst + ops[a] bytes */ \
	X(SAME_STREAM, "same_stream")      /* ops[a] and ops[b] name the same stream handle */ \
	X(LINEAR_DTOD, "linear_dtod")      /* ops[a] is a 1-D device-to-device linear copy (b unused) */ \
	X(DISJOINT, "disjoint")            /* [src a, src b + bytes b) misses [dst a, dst b + bytes b) */ \
	X(FORWARDS, "forwards")            /* ops[b] src == ops[a] dst and the same bytes */ \
	X(MISSES, "misses")                /* ops[b]'s dst range misses ops[a]'s src range and, when \
					    * a != b, ops[a]'s dst range */

enum rw_guard_kind {
#define RW_GUARD_ENUM_(name, label) RW_G_##name,
	RW_GUARD_LIST(RW_GUARD_ENUM_)
#undef RW_GUARD_ENUM_
	RW_G_COUNT
};

struct rw_guard {
	uint8_t kind;                /* enum rw_guard_kind */
	uint32_t a, b;               /* original op indices */
};

struct rw_plan_node {
	uint8_t kind;                /* enum rw_node_kind */
	uint32_t norig;              /* original ops it covers (1 for RW_NODE_OP) */
	uint32_t *orig;              /* their indices, in window order (owned) */
	const char *rule;            /* the rule that made it (static), NULL for an untouched op */
};

/* How often one rule fired while making the plan (report). */
struct rw_plan_stat {
	const char *rule;            /* rule name (static) */
	uint32_t count;              /* applications */
};

struct rw_plan {
	uint32_t norig;              /* ops of the original window */
	uint32_t nnodes;             /* nodes, in submission order */
	struct rw_plan_node *nodes;  /* nnodes entries (owned) */
	uint32_t nguards;            /* guards */
	struct rw_guard *guards;     /* nguards entries (owned), in the order rules added them */
	uint32_t nstats;             /* rules that fired */
	struct rw_plan_stat *stats;  /* nstats entries (owned) */
};

const char *rw_guard_name(enum rw_guard_kind k); /* "src_abuts" */

/* Whether one guard holds for the bindings of ops (original op indices). */
bool rw_guard_holds(const struct rw_guard *g, const struct cap_op *const *ops);
/* Whether every guard holds; *failed (may be NULL) gets the index of the first that does not. */
bool rw_plan_guards_hold(const struct rw_plan *p, const struct cap_op *const *ops, uint32_t *failed);
/* The op plan node k submits for the bindings of ops: the original op itself for RW_NODE_OP,
 * a derived copy for RW_NODE_COPY (out's pointers alias ops'; key and bind are recomputed only
 * by the caller if it needs them). 0, or -CF_EINVAL (k out of range, or a node kind whose
 * originals are not what it needs). Only meaningful when the guards hold. */
int rw_plan_node_op(const struct rw_plan *p, uint32_t k, const struct cap_op *const *ops, struct cap_op *out);
/* Whether the plan is the window unchanged (no rule fired). */
bool rw_plan_is_identity(const struct rw_plan *p);
/* A one-line description for golden tests and logs: nodes, then guards, e.g.
 * "copy(0,1) op(2) | src_abuts(0,1) dst_abuts(0,1)". Returns the length it needed (as snprintf). */
int rw_plan_format(const struct rw_plan *p, char *buf, size_t cap);
void rw_plan_destroy(struct rw_plan *p);

/* ------------------------------------------------------------------ runs (replay's segments) */

struct rw_config;

/* A plan over a run of consecutive ops that replay lays out one graph node per op: a plan node
 * stands at the position of its first op, the other ops it covers become empty nodes. Only a
 * plan whose nodes each cover a contiguous run of ops and that erases none fits this layout. */
struct rw_run {
	struct rw_plan *plan;        /* the plan (never the identity) */
	uint32_t n;                  /* ops of the run */
	int32_t *node_of;            /* per op: the plan node it heads, or -1 (folded into an
				      * earlier op's node: an empty node) */
	const struct cap_op **ops;   /* scratch: the ops of one launch, by run index */
};

/* Rewrite ops[0..n) with the rules cfg enables. NULL when nothing fires, the plan does not fit
 * the layout, or out of memory: the ops then go as they are. */
struct rw_run *rw_run_create(const struct cap_op *const *ops, uint32_t n, const struct rw_config *cfg);
void rw_run_destroy(struct rw_run *r);
/* Whether the guards hold for one launch's ops def[0..n) (contiguous); points the scratch at
 * them for rw_run_op. */
bool rw_run_guards_hold(struct rw_run *r, const struct cap_op *def);
/* Whether op i is folded into an earlier op's node (an empty node). */
bool rw_run_is_folded(const struct rw_run *r, uint32_t i);
/* The op node i stands for, for the ops last given to rw_run_guards_hold (def): &def[i], tmp
 * filled with a derived op, or NULL for a folded op. */
const struct cap_op *rw_run_op(const struct rw_run *r, uint32_t i, const struct cap_op *def, struct cap_op *tmp);

#endif
