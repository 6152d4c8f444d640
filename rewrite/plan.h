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

/* What a plan node stands for. The op a node submits is derived afresh at every launch from
 * the bindings of the original ops it covers (rw_plan_node_op), so a plan never holds an
 * address; `from` names the one other original op a node reads its source from. */
#define RW_NODE_LIST(X) \
	X(OP, "op")             /* one original op, unchanged */ \
	X(COPY, "copy")         /* one 1-D copy over abutting original 1-D copies (orig, in order): \
				 * src and dst of orig[0], bytes summed */ \
	X(FORWARD, "forward")   /* one 1-D copy over abutting glue copies (orig, in order): dst of \
				 * orig[0], bytes summed, source where `from` (the slice copy that \
				 * wrote orig[0]'s source) read */ \
	X(CHAIN, "chain")       /* copy orig[0] reading from where `from` read instead of where \
				 * `from` wrote: src = from.src + (orig[0].src - from.dst) */ \
	X(SET, "set")           /* one 1-D memset over abutting 1-D memsets of one value: dst of \
				 * orig[0], widths summed */ \
	X(BATCH_COPY, "batch_copy") /* one launch of cufold_batch_copy over the 1-D copies orig */ \
	X(BATCH_SET, "batch_set")   /* one launch of cufold_batch_memset over the 1-D memsets orig */ \
	X(BATCH_COPY2D, "batch_copy2d") /* one launch of cufold_batch_copy2d over 1-D and 2-D copies */ \
	X(CAT_COPY, "cat_copy")     /* one 1-D copy doing what the cat kernel orig[0] does (its \
				     * inputs abut in order: from the first input to its output) */ \
	X(ELEMENTWISE, "elementwise") /* one launch of the elementwise kernel orig[0] over the \
				       * counts of orig summed (grid derived from the count) */ \
	X(BATCH_KERNEL, "batch_kernel") /* one launch of the multi-instance variant of the kernel \
				       * orig[0] runs every launch of orig (same function, block, \
				       * grid y and z), each instance with its own parameters and grid \
				       * x; orig need not be adjacent: the ops between were proved \
				       * independent of the members hoisted over them */ \
	X(RENAME_BACK, "rename_back") /* a 1-D device copy, at the position of the launch orig[0] \
				       * that writes elsewhere (plan->ren[from]), from cufold's buffer \
				       * to the span the launch would have written (its bindings) */

enum rw_node_kind {
#define RW_NODE_ENUM_(name, label) RW_NODE_##name,
	RW_NODE_LIST(RW_NODE_ENUM_)
#undef RW_NODE_ENUM_
	RW_NODE_KIND_COUNT
};

#define RW_NONE UINT32_MAX /* no op (a node's `from` when it has none) */
#define RW_TOUCH_MAX 4     /* rules remembered per original op (report) */

/* X(name, label): the conditions a rule can rely on. a and b are ops: original ops, or the op a
 * node of the rewriter's list stood for when the guard was recorded (a snapshot, re-derived
 * from the original ops at every check). "Ranges" are what rewrite/effects.h says an op reads
 * and writes. */
#define RW_GUARD_LIST(X) \
	X(SRC_ABUTS, "src_abuts")          /* b's src == a's src + a's bytes (copies) */ \
	X(DST_ABUTS, "dst_abuts")          /* b's dst == a's dst + a's bytes (copies) */ \
	X(SAME_STREAM, "same_stream")      /* a and b name the same stream handle */ \
	X(LINEAR_DTOD, "linear_dtod")      /* a is a 1-D device-to-device linear copy (b unused) */ \
	X(PITCHED_DTOD, "pitched_dtod")    /* a is a 1-D or 2-D device-to-device linear copy (b unused) */ \
	X(DISJOINT, "disjoint")            /* [src a, src b + bytes b) misses [dst a, dst b + bytes b) */ \
	X(FORWARDS, "forwards")            /* b's src == a's dst and the same bytes */ \
	X(MISSES, "misses")                /* b's dst range misses a's src range and, when a is not \
					    * b, a's dst range */ \
	X(SET_1D, "set_1d")                /* a is an asynchronous 1-D memset (b unused) */ \
	X(SET_ABUTS, "set_abuts")          /* memsets: b's dst == a's dst + a's bytes, the same \
					    * element size and value */ \
	X(COVERS, "covers")                /* b surely writes every byte a may write */ \
	X(UNREAD, "unread")                /* b reads nothing a may write (b's effects known) */ \
	X(UNWRITTEN, "unwritten")          /* b writes nothing a may read or write */ \
	X(INDEPENDENT, "independent")      /* unwritten(a, b) and b reads nothing a may write */ \
	X(SAME_OP, "same_op")              /* b is a again with the same bindings */ \
	X(PURE, "pure")                    /* a is pure (rw_op_is_pure; b unused) */ \
	X(WITHIN, "within")                /* copies: b's source lies inside a's destination */ \
	X(ELEM_ABUTS, "elem_abuts")        /* elementwise launches of one kernel: b's pointers start \
					    * where a's spans end, other parameters equal, grids \
					    * derived from the counts */ \
	X(ELEM_SAFE, "elem_safe")          /* the launches from a to b (elem_abuts pairwise): every \
					    * written pointer's union misses every other pointer's \
					    * union (or is the same pointer at every launch) */ \
	X(CAT_IDENTITY, "cat_identity")    /* a is a cat kernel whose inputs abut in order and miss \
					    * its output (b unused) */

enum rw_guard_kind {
#define RW_GUARD_ENUM_(name, label) RW_G_##name,
	RW_GUARD_LIST(RW_GUARD_ENUM_)
#undef RW_GUARD_ENUM_
	RW_G_COUNT
};

struct rw_guard {
	uint8_t kind;                /* enum rw_guard_kind */
	uint32_t a, b;               /* original op indices (a snapshot's first op) */
	int32_t na, nb;              /* snapshots (plan->snaps) standing for a and b, or -1: the
				      * original op itself */
};

/* One member of a batch node: a node that was merged into it whole (a copy or memset of any
 * kind above), covering orig[first .. first+count) of the batch node. */
struct rw_member {
	uint8_t kind;                /* enum rw_node_kind of the member */
	uint32_t first, count;       /* its original ops within the batch node's orig */
	uint32_t from;               /* its `from` */
};

struct rw_plan_node {
	uint8_t kind;                /* enum rw_node_kind */
	uint32_t norig;              /* original ops it covers (1 for RW_NODE_OP) */
	uint32_t *orig;              /* their indices, in window order (owned) */
	uint32_t from;               /* FORWARD, CHAIN: the op whose source it reads; else RW_NONE */
	const struct rw_ren *ren;    /* RENAME_BACK: what it copies back (the plan's); else NULL */
	uint32_t nmembers;           /* BATCH_*: members (one table range each); 0: every original
				      * op is a member of kind OP */
	struct rw_member *members;   /* nmembers entries (owned), in order */
	const char *rule;            /* the rule that made it (static), NULL for an untouched op */
	void *scratch;               /* BATCH_*, ELEMENTWISE: the derived launch's parameter bytes
				      * (owned; rewritten by each derivation) */
	uint32_t scratch_size;       /* bytes of scratch */
};

struct rw_kernels;
struct rw_range;
/* One op's effects in a plan's check cache (ranges at r.., w.. of the plan's eff_pool). */
struct rw_eff_slot {
	bool valid;                  /* worked out in this check */
	bool all;                    /* may touch anything */
	uint32_t r, nr, w, nw;       /* first index and count of the reads and the writes */
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
	uint32_t nsnaps;             /* snapshots guards refer to */
	struct rw_plan_node *snaps;  /* nsnaps entries (owned) */
	struct cap_op *snap_ops;     /* nsnaps entries: scratch for one check (owned) */
	struct rw_eff_slot *eff;     /* norig + nsnaps entries: each op's effects, worked out at most
				      * once per check (owned, made on the first check) */
	struct rw_range *eff_pool;   /* their ranges (owned, grows) */
	uint32_t eff_used, eff_cap;  /* ranges in use / allocated */
	uint32_t *dep_start;         /* NULL: nodes keep the window's order (stream order and event
				      * edges); else (the parallel rule) node k waits exactly for the
				      * nodes dep_list[dep_start[k] .. dep_start[k+1]) (nnodes+1
				      * entries, owned) */
	uint32_t *dep_list;          /* node indices, each < k (owned) */
	const char **erased_by;      /* norig entries (owned): the rule that erased each original op,
				      * NULL for ops a node covers; NULL for the identity plan */
	const char *(*touched_by)[RW_TOUCH_MAX]; /* norig entries (owned): the rules that merged or
				      * rewrote each original op, in order (NULL-padded); NULL for
				      * the identity plan */
	uint32_t nstats;             /* rules that fired */
	struct rw_plan_stat *stats;  /* nstats entries (owned) */
	struct rw_kernels *kernels;  /* the engine's cache of cufold's kernels its batch nodes
				      * launch (rw_config's; not owned), or NULL */
	/* writing elsewhere (rewrite/rename.c): the plan was made over the window with these
	 * launches and their readers patched, and checks and derives over the ops so patched */
	uint32_t nren;               /* launches writing elsewhere */
	struct rw_ren *ren;          /* nren entries (owned; their buffers too) */
	struct rw_rename_use *uses;  /* readers patched, ren[k].first_use .. + nuse (owned) */
	uint32_t *hoist;             /* ops moved above a copy back's position (owned) */
	int32_t *patched_of;         /* norig entries: index in patched[] of the op's patched copy,
				      * or -1 (owned; NULL without renames) */
	struct cap_op *patched;      /* npatched patched copies, remade from the originals at every
				      * check and derivation (owned) */
	uint8_t *patched_params;     /* their parameter bytes (owned) */
	uint32_t *patched_orig;      /* per patched copy: its original op */
	uint32_t npatched;           /* entries of patched */
	const struct cap_op **view;  /* norig entries: the ops as patched, for one check (owned) */
	struct rw_rename_tab *rename_tab; /* which pointers each patched copy has patched (owned) */
	struct rw_rename_budget *budget; /* what the buffers are counted against (not owned) */
	uint64_t eff_tag;            /* the run's pass (struct rw_run gen) whose bindings the valid
				      * slots of eff were worked out from, kept across checks; 0: none
				      * (the slots serve one check only) */
	uint32_t eff_fresh;          /* eff_used after the last check that started the pool afresh
				      * (bounds what slots given up leave behind) */
};

const char *rw_node_kind_name(enum rw_node_kind k); /* "forward" */
const char *rw_guard_name(enum rw_guard_kind k); /* "src_abuts" */

/* Whether a condition holds between two ops (same: a and b are one op). */
bool rw_cond_holds(enum rw_guard_kind kind, const struct cap_op *a, const struct cap_op *b, bool same);

struct rw_range;
/* An op's effects as lists (struct rw_effects, or a slot of a cache of them). */
struct rw_eff_view {
	bool all;                    /* may touch anything: the lists say nothing */
	const struct rw_range *r, *w; /* ranges read / written */
	uint32_t nr, nw;             /* how many */
};
/* Append e's reads, then its writes, to a growing pool of ranges (*pool holds *used of *cap; it
 * starts at 256 and doubles): *r and *w are where they start. false when out of memory. The
 * effects caches of the rewriter (rw_need) and of a plan's check (rw_plan_guards_hold) share it. */
struct rw_effects;
bool rw_eff_pool_put(struct rw_range **pool, uint32_t *used, uint32_t *cap, const struct rw_effects *e,
		     uint32_t *r, uint32_t *w);
/* The effects of a batch-kernel node over ops[orig[0..n)] (RW_NODE_BATCH_KERNEL: the union of its
 * instances', each from its card), appended to the pool as rw_eff_pool_put appends one op's:
 * into s (all, r, nr, w, nw; valid untouched). false when out of memory. */
bool rw_eff_pool_put_batch(struct rw_range **pool, uint32_t *used, uint32_t *cap, const struct cap_op *const *ops,
			   const uint32_t *orig, uint32_t n, struct rw_eff_slot *s);
/* rw_cond_holds for the kinds judged on effects alone (unread, unwritten, independent: a's and
 * b's effects; covers: a's effects and op b), with effects worked out beforehand: 1 or 0, the
 * answer rw_cond_holds gives; -1 for any other kind. */
int rw_cond_holds_eff(enum rw_guard_kind kind, const struct rw_eff_view *ea, const struct rw_eff_view *eb,
		      const struct cap_op *b);
/* The op node n stands for with the bindings of ops: 0, or -CF_EINVAL (the originals are not
 * what the kind needs, or cufold's kernels cannot be loaded from kc, the engine's cache: NULL
 * loads none). out's pointers may alias ops' and n's scratch; key and bind are not recomputed. */
int rw_node_derive(struct rw_kernels *kc, const struct rw_plan_node *n, const struct cap_op *const *ops,
		   struct cap_op *out);
/* Multi-instance launches (RW_NODE_BATCH_KERNEL): the most launches one runs, and the bytes of
 * its table (the variant's parameter block: the driver's 4 KB limit on a launch's parameters). */
#define RW_MULTI_MAX 32u
#define RW_MULTI_TABLE_BYTES 4096u
/* Whether launch op's kernel can be run by a multi-instance variant (its PTX is at hand and the
 * variant was made, or can be: rewrite/kernels.h rw_kernels_multi_possible). */
bool rw_multi_possible(struct rw_kernels *kc, const struct cap_op *op);
/* Whether launch b may be an instance beside launch a: both kernels, one function, block and
 * grid y and z (the variant's one shape), one dynamic shared size of at most
 * RW_MULTI_SHARED_MAX, b without launch attributes. */
#define RW_MULTI_SHARED_MAX (48u * 1024u) /* dynamic shared bytes a function has without the attribute */
bool rw_multi_fits(const struct cap_op *a, const struct cap_op *b);
/* For tests without a driver: what stands for the variants (NULL: rewrite/kernels.c's). */
struct rw_multi_hooks {
	bool (*possible)(const struct cap_op *op);
	/* one launch running members[0..k): its table into table (cap bytes), the launch into out */
	int (*launch)(const struct cap_op *const *members, uint32_t k, void *table, uint32_t cap,
		      struct cap_op *out);
};
void rw__set_multi_hooks(const struct rw_multi_hooks *h);
/* Why a kernel launch was left to run alone (report): X(name, key). */
#define RW_APART_LIST(X) \
	X(NO_VARIANT, "no_variant")       /* no multi-instance variant: no PTX for it (machine code \
					   * only), or its PTX cannot be made into one */ \
	X(EFFECTS, "effects_unknown")     /* no card and none derived, or one that says indirect or \
					   * unknown: never independent of anything */ \
	X(ALONE, "alone")                 /* no other launch of its kernel and shape in its \
					   * segment */ \
	X(UNKNOWN_BETWEEN, "unknown_between") /* others exist, some of them past a kernel whose \
					   * effects are unknown (no card, or one that says indirect or \
					   * unknown): nothing is moved past one */ \
	X(REUSED, "memory_reused")        /* the nearest other before or after it reads nothing \
					   * the ops between them write, but writes what they read or \
					   * write: memory the program (CuPy's pool) hands out again \
					   * orders them, which only writing elsewhere would undo */ \
	X(ORDERED, "ordered")             /* others exist, but a dependence (through memory, or \
					   * through events across streams), a wait whose record is not \
					   * in the segment, the legacy stream, an op of another kind on \
					   * its stream, the scan's reach or a full launch keeps them \
					   * apart */
enum rw_apart {
#define RW_APART_ENUM_(name, key) RW_APART_##name,
	RW_APART_LIST(RW_APART_ENUM_)
#undef RW_APART_ENUM_
	RW_APART_COUNT
};
const char *rw_apart_name(enum rw_apart a); /* "no_variant" */
/* Why launch ops[i] of the run ops[0..n), left a launch of its own by the rewrite, was not
 * fused with others of its kernel. */
enum rw_apart rw_multi_apart(struct rw_kernels *kc, const struct cap_op *const *ops, uint32_t n, uint32_t i);
/* Writing elsewhere (output renaming), the report's analysis of the launches left apart (what
 * renames is rewrite/rename.c, below: rw__rename_target and rw__rename_scan). A launch kept
 * apart by reused memory (RW_APART_REUSED: a later launch L of its kernel writes, over exact
 * spans, what the ops between read or write) could be fused if L wrote a buffer of cufold's own
 * instead and every later reader of what it wrote read that buffer (a pointer patched) until the
 * range is written again, with a copy back from the buffer where eager's bytes are needed.
 * rw_multi_renamable says whether that would hold for ops[i] of the run ops[0..n): L's renamed
 * writes are exact spans through a pointer parameter or struct field (never `unknown`, never a
 * table entry), L reads none of them, and every op after L that reads one before it is written
 * again reads it through an exact span inside it (a kernel's pointer parameter or field, or a
 * 1-D device copy's source): an `all` op, an unknown span or a read straddling the range there
 * refuses. */
struct rw_rename {
	uint32_t renamed;            /* the launch that would write elsewhere (i or its partner) */
	uint64_t bytes;              /* bytes of buffer its renamed writes would take */
	bool whole;                  /* every renamed range is surely written whole (RW_ACC_WHOLE,
				      * or an elementwise launch with RW_SET_COVERS), what a copy
				      * back of the whole range needs */
};
bool rw_multi_renamable(const struct cap_op *const *ops, uint32_t n, uint32_t i, struct rw_rename *out);

/* Writing elsewhere, done (rewrite/rename.c, at level 1 with batch-kernel): before the rules
 * run, a launch L that rw__rename_target picks writes its one conflicting range R to a buffer of
 * cufold's own (its pointer patched); every reader that follows it, up to the next write into R,
 * reads the buffer (a pointer or a copy's source patched) or, where no patch follows its read
 * (a table entry, an unknown span, a copy that is not 1-D), is kept reading R (RW_USE_KEPT): R
 * then gets L's bytes back before it, so the copy back is forced, the reader must stay a node
 * of its own on L's stream, and rw__rename_scan refuses only an op that may touch anything; a
 * RENAME_BACK node at L's position copies the buffer to R unless the next write covers all of
 * L's writes and no reader was kept, and then nothing after that write may read R. A launch whose
 * rename did not let it join a batch (as a later member, on the first member's stream) is not
 * renamed: the plan is made again without it. Every check redoes the scan on the launch's
 * bindings and fails unless it finds what the plan relied on, kept readers included. */
struct rw_rename_use {
	uint32_t op;                 /* a reader of R, after L */
	uint32_t word;               /* its pointer's offset in its parameters, or
				      * RW_USE_COPY_SOURCE: a 1-D device copy's source */
};
#define RW_USE_COPY_SOURCE UINT32_MAX
#define RW_USE_KEPT (UINT32_MAX - 1) /* a reader no patch follows, left reading R after the copy back */
#define RW_RENAME_USES 64u           /* readers patched per renamed launch, at most */
struct rw_rename_scan {
	uint32_t end;                /* the next op writing into R, RW_NONE: none in the run */
	bool back;                   /* a copy back is needed */
	bool refused;                /* no renaming: an op after L that may touch anything, more
				      * readers than use[] holds, or, with a copy back, any read of R
				      * after the next write */
	uint32_t nuse;               /* readers patched or kept */
	uint32_t nkept;              /* of them, kept (RW_USE_KEPT): they force the copy back */
	struct rw_rename_use use[RW_RENAME_USES]; /* in order */
};
struct rw_ren {
	uint32_t op;                 /* the launch L */
	uint32_t word;               /* its pointer's offset in its parameters */
	uint64_t buf;                /* cufold's buffer (device address) */
	uint64_t cap;                /* its bytes */
	CUcontext ctx;               /* the context it was allocated in */
	bool back;                   /* copied back at L's position (a RENAME_BACK node) */
	uint32_t end;                /* the scan's end */
	uint32_t first_use, nuse;    /* its readers: plan->uses[first_use ..] */
	uint32_t nkept;              /* of them, kept reading R (RW_USE_KEPT) */
	uint32_t first_hoist, nhoist; /* with back: ops the plan moved above L's position and ops after
				      * it the plan erased, which must touch nothing of R, and nodes
				      * made by rules after it, which must not read R
				      * (plan->hoist[first_hoist ..]) */
	uint32_t batch;              /* the batch node L is a member of (plan node index) */
};
/* The bytes of buffer renames may hold at once (engine-owned; used is changed atomically). */
struct rw_rename_budget {
	uint64_t max;                /* CUFOLD_RENAME_MAX_BYTES */
	uint64_t used;               /* held now */
	uint64_t peak;               /* most held at once */
	uint64_t refused;            /* renames not made: budget spent or allocation failed */
};
/* Whether ops[i]'s reuse partner (rw_multi_apart's REUSED) can write elsewhere: *op the launch
 * that would (i or its partner), *word its pointer (one range, exact, written whole, not read). */
bool rw__rename_target(const struct cap_op *const *ops, uint32_t n, uint32_t i, uint32_t *op, uint32_t *word);
/* The span launch op writes through the pointer at word, if it still may be written elsewhere:
 * 0, or -CF_EINVAL. */
struct rw_range;
int rw__rename_access(const struct cap_op *op, uint32_t word, struct rw_range *out);
/* The readers of r after launch l in ops[0..n) and whether a copy back is needed. */
void rw__rename_scan(const struct cap_op *const *ops, uint32_t n, uint32_t l, const struct rw_range *r,
		     struct rw_rename_scan *out);
/* For tests without a driver: how buffers are allocated and freed (NULL: the real driver). */
struct rw_rename_hooks {
	int (*alloc)(CUcontext ctx, uint64_t bytes, uint64_t *out); /* 0 or a negative code */
	void (*free)(CUcontext ctx, uint64_t buf);
	bool keep_all;               /* keep renames that leave the plan no fewer nodes (the fuzzer:
				      * its small windows would otherwise exercise few renames) */
};
void rw__set_rename_hooks(const struct rw_rename_hooks *h);
/* The plan for ops[0..n) with renames where they let launches fuse (rw_rewrite's answer when
 * none does, or cfg's budget is NULL or 0, or batch-kernel is off). */
struct rw_config;
struct rw_plan *rw__rename_rewrite(const struct cap_op *const *ops, uint32_t n, const struct rw_config *cfg);
/* A plan with renames: check them on ops (step 1 and 2 of rename.c) and make p->view the ops
 * patched. false: they do not hold. */
bool rw__rename_view(struct rw_plan *p, const struct cap_op *const *ops);
/* p->view with node n's ops (and its `from`) remade from ops; NULL when a patch cannot be made. */
const struct cap_op *const *rw__rename_node_view(struct rw_plan *p, const struct rw_plan_node *n,
						 const struct cap_op *const *ops);
/* The copy of a RENAME_BACK node from the original ops. 0 or -CF_EINVAL. */
int rw__rename_back_derive(const struct rw_plan_node *n, const struct cap_op *const *ops, struct cap_op *out);
/* Free p's renames and their buffers (rw_plan_destroy). */
void rw__rename_release(struct rw_plan *p);
/* Bytes of scratch a node of kind needs (first: its first original op). */
uint32_t rw_node_scratch_bytes(enum rw_node_kind kind, const struct cap_op *first);
/* For tests without a driver: how cufold's kernels are resolved (NULL: rw_kernels_func on the
 * plan's cache). */
void rw__set_kernel_resolver(CUresult (*fn)(CUcontext ctx, int kernel, CUfunction *out));
/* Whether every guard holds; *failed (may be NULL) gets the index of the first that does not. */
/* *failed is set to the failing guard's index, or RW_GUARD_NO_SNAPSHOT when a snapshot could not
 * be derived from ops. */
#define RW_GUARD_NO_SNAPSHOT UINT32_MAX
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

#define RW_RUN_SEEN 16 /* launches' bindings a run remembers as passed (an entry is allocated
			* when first filled: bindings that stay put take one) */

/* A plan over a run of consecutive ops that replay lays out by position: a plan node stands at
 * the position of its first op; the other ops it covers and the ops the plan erased get no graph
 * node (replay hands the order they carried to the nodes after them). Only a plan whose nodes
 * each cover a run of ops with nothing but erased ops inside fits this layout. */
struct rw_run {
	struct rw_plan *plan;        /* the plan (never the identity) */
	uint32_t n;                  /* ops of the run */
	int32_t *node_of;            /* per op: the plan node it heads, or -1 (folded into an
				      * earlier op's node, or erased: no node of its own) */
	const struct cap_op **ops;   /* scratch: the ops of one launch, by run index */
	const struct cap_op *ops_def; /* the array ops points into op by op (&ops_def[i]), NULL:
				      * none; filled only where read (run_ops): a launch whose
				      * remembered pass holds reads none (issue 22) */
	/* The bindings of the last launches whose check passed, so that a launch with the very
	 * same bindings as one of them needs no new check. Guards and derivations are functions of
	 * the bindings alone, so a remembered pass stays true. Several, because programs cycle
	 * their buffers (ping-pong, a pool's thirds: copy_loop move checked every launch, 3,300
	 * instructions per op, issue 22). Sixteen, because each pass also keeps the effects its
	 * ops had (eff_recall): CuPy's pool cycles an op's buffers with periods of 3 to 15 launches,
	 * so a check finds most ops' effects in some pass although no two passes are alike. */
	struct rw_run_seen {
		struct cap_op *ops;  /* n ops (kernel parameters copied into params), NULL: empty */
		uint8_t *params;     /* their kernel parameter bytes */
		size_t cap;          /* bytes params can hold (kept: reused by the next pass) */
		uint64_t gen;        /* which pass it holds (rw_run_bindings_gen), 0: none */
		bool exact;          /* its ops had the value identities and flags of the ops the
				      * run was made from (rw_run_guards_hold_exact) */
		struct rw_eff_slot *eff; /* n slots: each op's effects as that pass worked them out
				      * (valid: it did), ranges in pool; NULL: none kept */
		struct rw_range *pool; /* their ranges */
		uint32_t pool_cap;   /* ranges pool can hold */
	} seen[RW_RUN_SEEN];
	int32_t cur;                 /* the entry the last rw_run_guards_hold matched or filled, -1 */
	uint32_t victim;             /* the entry the next new pass replaces (round robin) */
	uint64_t gen;                /* passes remembered so far */
	/* A pass that resolved an unknown span to its allocation's extent (rw_alloc_view) holds
	 * only while the allocation map is as it was then: a free and a new allocation at the same
	 * address with another size leaves the bindings the same and the extent stale. */
	bool extents;                /* some remembered pass looked an extent up */
	uint64_t alloc_gen;          /* the map's generation those passes saw */
	/* Incremental checks (rw_run_guards_hold): a launch whose bindings match no remembered
	 * pass is checked only where they moved relative to the pass the plan's effects cache was
	 * worked out for (plan->eff_tag). */
	uint8_t *moved;              /* scratch, n entries: op i's bindings differ from that pass's */
	uint8_t *snap_mark;          /* scratch, one per snapshot of the plan (RUN_SNAP_* flags) */
	uint64_t nfull, npart;       /* checks made in full / incrementally (tests) */
};

/* Rewrite ops[0..n) with the rules cfg enables. NULL when nothing fires, the plan does not fit
 * the layout, or out of memory: the ops then go as they are. */
struct rw_run *rw_run_create(const struct cap_op *const *ops, uint32_t n, const struct rw_config *cfg);
void rw_run_destroy(struct rw_run *r);
/* Heap bytes its remembered passes hold (their ops, parameter bytes and effects; issue 22). */
size_t rw_run_remembered_bytes(const struct rw_run *r);
/* Whether the guards hold for one launch's ops def[0..n) (contiguous). */
bool rw_run_guards_hold(struct rw_run *r, const struct cap_op *def);
/* The same, told by the caller whether every op of def has the value identity (capture.h: vid)
 * and flags of the op the run was made from at its position (exact): two such passes have the
 * very same bindings, so a pass after an exact one it remembers last is not compared op by op. */
bool rw_run_guards_hold_exact(struct rw_run *r, const struct cap_op *def, bool exact);
/* After rw_run_guards_hold returned true: which bindings it was given, for a caller that keeps
 * what it made of them. Two launches with the same nonzero generation had the very same
 * bindings, so rw_run_op derived the very same ops for both (replay skips patching its graph
 * nodes). 0: not known (nothing could be remembered). */
uint64_t rw_run_bindings_gen(const struct rw_run *r);
/* Whether op i has no node of its own (folded into an earlier op's node, or erased). */
bool rw_run_is_folded(const struct rw_run *r, uint32_t i);
/* The op node i stands for, for the ops last given to rw_run_guards_hold (def): &def[i], tmp
 * filled with a derived op, or NULL: a folded or erased op (rw_run_is_folded), or a node that
 * could not be derived (a failure: the launch must not go ahead). Points r's scratch at def's
 * ops for the derivation. */
const struct cap_op *rw_run_op(struct rw_run *r, uint32_t i, const struct cap_op *def, struct cap_op *tmp);

#endif
