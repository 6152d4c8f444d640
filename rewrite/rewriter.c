/* rewriter.c - the rewriter: the node list rules edit, the fixed-point driver (rules by benefit
 * then name, restart after every application), rule registration through the "rw_rules" linker
 * section, CUFOLD_RULES, and turning the final list into a plan. rewrite layer.
 *
 * Invariants of the node list (checked after every application in debug builds):
 *  1. every original op index appears in at most one node (erased ops in none);
 *  2. the indices, read node by node, are strictly ascending (rules never reorder), except that a
 *     BATCH_KERNEL node's later indices may pass nodes after it (rw_gather: members hoisted
 *     over ops they were proved independent of); each node's own indices ascend, and the
 *     nodes' first indices ascend;
 *  3. every index is < the window's op count. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/arena.h"
#include "common/compiler.h"
#include "common/errors.h"
#include "common/hash.h"
#include "common/log.h"
#include "driver/api.h"
#include "rewrite/effects.h"
#include "rewrite/rewriter.h"

#define RW_MAX_RULES 64 /* registered rules kept (more are ignored, with an error) */

/* A node's effects, worked out once (rw_need): lists in the rewriter's pool, and the bounds of
 * what it reads and writes, so most pairs are found apart without comparing lists. */
struct node_eff {
	bool valid;                  /* worked out for the node now at this place */
	bool all;                    /* may touch anything */
	uint32_t r, nr, w, nw;       /* first pool index and count of the reads, the writes */
	uint64_t rlo, rhi;           /* the reads lie in [rlo, rhi) (rlo == rhi: none) */
	uint64_t wlo, whi;           /* the writes lie in [wlo, whi) */
	bool wraps;                  /* a range ends past 2^64: the bounds say nothing */
	bool sure;                   /* rw_op_sure_write says yes: it writes all of... */
	struct rw_range sure_r;      /* ...this range */
	int8_t pure;                 /* RW_G_PURE of the node: -1 not asked yet, else 0 or 1 (a
				      * kernel's answer reads its card and access set: asked once) */
};

struct rw_rewriter {
	const struct cap_op *const *ops; /* the original window (by index) */
	uint32_t norig;              /* its op count */
	const struct cap_graph *tg;  /* its trace graph, or NULL */
	struct rw_kernels *kernels;  /* the engine's cache of cufold's kernels (rw_config's), or NULL */
	struct rw_node *nodes;       /* the list rules edit */
	uint32_t n;                  /* nodes in it */
	struct rw_guard *guards;     /* conditions recorded so far */
	uint32_t nguards, gcap;      /* used / allocated guards */
	uint32_t *gset;              /* open-addressing set of guard indices + 1 (0: empty), so a
				      * repeated condition is found without a scan */
	uint32_t gset_cap;           /* slots (a power of two, at least twice nguards) */
	struct rw_plan_node *snaps;  /* nodes guards named (orig in the arena, scratch not set) */
	uint32_t nsnaps, scap;       /* used / allocated snapshots */
	struct cf_arena arena;       /* orig arrays of merged nodes */
	bool *erased;                /* per original op: erased by a rule */
	const char **erased_by;      /* per original op: the rule that erased it, or NULL */
	const char *(*touched_by)[RW_TOUCH_MAX]; /* per original op: rules that merged or rewrote it */
	const char *applying;        /* the rule being applied (its name) */
	uint8_t *unordered;          /* n x n (nodes at the time): pair (i, j) may run in any order,
				      * or NULL when none is */
	uint32_t unordered_n;        /* the node count it was made for */
	/* Caches of facts about the current list, so a rule's scan costs O(1) per node looked at:
	 * kept in step with the nodes by rw_erase / rw_replace (rw_plain_between, rw_need) */
	uint32_t *plain_end;         /* per node i: the first k > i that is not plain after i (a
				      * kernel, copy or memset on i's stream and context), or n */
	bool plain_ok;               /* plain_end matches the list */
	struct node_eff *eff;        /* per node: its effects in eff_pool, once worked out */
	struct rw_range *eff_pool;   /* ranges of the slots (never shrinks during a rewrite) */
	uint32_t eff_used, eff_cap;  /* ranges used / allocated */
	uint32_t edit_lo;            /* since the driver last looked: the first node an edit
				      * touched (UINT32_MAX: none) */
	uint32_t edit_tail;          /* and how many nodes at the end no edit touched */
	uint32_t read_hi;            /* the furthest node the match being asked has read through
				      * the noting accessors (struct rw_rule's reads_tracked) */
	bool legacy;                 /* an op of the window is on the legacy stream */
};

/* ------------------------------------------------------------------ registration */

/* Bounds of the section the linker makes of every RW_RULE_REGISTER; weak so a link with no
 * rule objects (a unit test not naming any) still links, with no rules. */
extern const struct rw_rule *const __start_rw_rules[] __attribute__((weak, visibility("hidden")));
extern const struct rw_rule *const __stop_rw_rules[] __attribute__((weak, visibility("hidden")));

static const struct rw_rule *sorted_rules[RW_MAX_RULES];
static size_t nsorted_rules;
static pthread_once_t rules_once = PTHREAD_ONCE_INIT;

static int rule_cmp(const void *pa, const void *pb)
{
	const struct rw_rule *a = *(const struct rw_rule *const *)pa, *b = *(const struct rw_rule *const *)pb;

	if (a->benefit != b->benefit)
		return a->benefit > b->benefit ? -1 : 1;
	return strcmp(a->name, b->name);
}

static void sort_rules_once(void)
{
	const struct rw_rule *const *p;

	if (!__start_rw_rules || !__stop_rw_rules)
		return;
	for (p = __start_rw_rules; p < __stop_rw_rules; p++) {
		if (nsorted_rules == RW_MAX_RULES) {
			cf_log_err("more than %d rewrite rules registered; the rest are ignored", RW_MAX_RULES);
			break;
		}
		sorted_rules[nsorted_rules++] = *p;
	}
	qsort(sorted_rules, nsorted_rules, sizeof(sorted_rules[0]), rule_cmp);
}

const struct rw_rule *const *rw_rules_registered(size_t *n)
{
	pthread_once(&rules_once, sort_rules_once);
	*n = nsorted_rules;
	return sorted_rules;
}

bool rw_rule_is_enabled(const struct rw_rule *r, const struct rw_config *cfg)
{
	bool on = cfg->opt > 0 && r->level <= cfg->opt;
	size_t len = strlen(r->name);
	const char *s = cfg->rules;

	/* negative: no rewriting at all, whatever the switches say */
	if (cfg->opt < 0)
		return false;
	/* "-a,+b,c": each token switches one rule, at any level (0 included); later tokens win */
	while (s && *s) {
		const char *end = strchr(s, ',');
		size_t tl = end ? (size_t)(end - s) : strlen(s);
		bool plus = true;
		const char *name = s;

		if (tl && (*name == '+' || *name == '-')) {
			plus = *name == '+';
			name++;
			tl--;
		}
		if (tl == len && strncmp(name, r->name, len) == 0)
			on = plus;
		s = end ? end + 1 : NULL;
	}
	return on;
}

/* Append n bytes of s to the string in buf (cap bytes), after sep when buf is not empty. */
static void append(char *buf, size_t cap, const char *sep, const char *s, size_t n)
{
	size_t used = strlen(buf);

	if (used < cap)
		snprintf(buf + used, cap - used, "%s%.*s", used ? sep : "", (int)n, s);
}

int rw_rules_check(const char *rules)
{
	const struct rw_rule *by_name[RW_MAX_RULES];
	char unknown[256] = "", known[512] = "";
	size_t nreg;
	const struct rw_rule *const *reg = rw_rules_registered(&nreg);
	int bad = 0;

	/* with no rule linked in (a unit test), there is nothing to tell a name from a typo */
	if (!rules || !nreg)
		return 0;
	for (const char *s = rules; *s;) {
		size_t tl = strcspn(s, ",");
		const char *name = s;
		size_t nl = tl;
		bool found = false;

		if (nl && (*name == '+' || *name == '-')) {
			name++;
			nl--;
		}
		for (size_t k = 0; k < nreg && !found; k++)
			found = strlen(reg[k]->name) == nl && strncmp(name, reg[k]->name, nl) == 0;
		if (!found && nl) {
			append(unknown, sizeof(unknown), ", ", name, nl);
			bad++;
		}
		s += tl;
		if (*s == ',')
			s++;
	}
	if (!bad)
		return 0;
	/* the known names in alphabetical order, easier to scan than the run order */
	memcpy(by_name, reg, nreg * sizeof(*by_name));
	for (size_t i = 1; i < nreg; i++)
		for (size_t j = i; j > 0 && strcmp(by_name[j - 1]->name, by_name[j]->name) > 0; j--) {
			const struct rw_rule *t = by_name[j];

			by_name[j] = by_name[j - 1];
			by_name[j - 1] = t;
		}
	for (size_t k = 0; k < nreg; k++)
		append(known, sizeof(known), ", ", by_name[k]->name, strlen(by_name[k]->name));
	/* a configuration error: on stderr whatever CUFOLD_LOG and CUFOLD_LOG_FILE say */
	cf_log_write_fd(cf_log_get_stderr_fd(), CF_LOG_WARN, __FILE__, __LINE__,
			"CUFOLD_RULES=%s: unknown rule%s %s ignored (known: %s)", rules, bad > 1 ? "s" : "", unknown,
			known);
	return bad;
}

/* CUFOLD_RULES is checked the first time a configuration is used: once per process. */
static void rules_check_once(const struct rw_config *cfg)
{
	static int checked;

	if (cfg->rules && *cfg->rules && !__atomic_exchange_n(&checked, 1, __ATOMIC_RELAXED))
		rw_rules_check(cfg->rules);
}

bool rw_config_has_rules(const struct rw_config *cfg)
{
	size_t nreg;
	const struct rw_rule *const *reg = rw_rules_registered(&nreg);

	rules_check_once(cfg);
	for (size_t k = 0; k < nreg; k++)
		if (rw_rule_is_enabled(reg[k], cfg))
			return true;
	return false;
}

/* ------------------------------------------------------------------ for rules */

/* The match being asked read node k (the accessors' scratch, as the effects cache: rules see the
 * rewriter const, one thread rewrites a window). */
static inline void note_read(const struct rw_rewriter *rw, uint32_t k)
{
	if (k > rw->read_hi)
		((struct rw_rewriter *)rw)->read_hi = k;
}

uint32_t rw_count(const struct rw_rewriter *rw)
{
	return rw->n;
}

const struct rw_node *rw_nodes(const struct rw_rewriter *rw)
{
	return rw->nodes;
}

bool rw_has_legacy(const struct rw_rewriter *rw)
{
	return rw->legacy;
}

const struct rw_node *rw_node_at(const struct rw_rewriter *rw, uint32_t i)
{
	if (i >= rw->n)
		return NULL;
	note_read(rw, i);
	return &rw->nodes[i];
}

const struct cap_op *rw_orig(const struct rw_rewriter *rw, uint32_t j)
{
	return j < rw->norig ? rw->ops[j] : NULL;
}

bool rw_orig_follows(const struct rw_rewriter *rw, uint32_t a, uint32_t b)
{
	const uint32_t *pred;
	uint32_t np;

	if (a >= rw->norig || b >= rw->norig || b <= a)
		return false;
	if (!rw->tg || cap_graph_nnodes(rw->tg) != rw->norig) {
		for (uint32_t k = a + 1; k < b; k++)
			if (!rw->erased[k])
				return false;
		return true;
	}
	np = cap_graph_npred(rw->tg, b);
	pred = cap_graph_pred(rw->tg, b);
	for (uint32_t k = 0; k < np; k++)
		if (pred[k] != a && !cap_graph_has_edge(rw->tg, pred[k], a))
			return false;
	return true;
}

/* Whether an entry point is an asynchronous form (a generated flag of driver/cuda_api_flags.def). */
static bool is_async_api(uint16_t api)
{
	return drv_api_is(api, DRV_API_ASYNC);
}

static bool is_linear_type(CUmemorytype t)
{
	return t == CU_MEMORYTYPE_DEVICE || t == CU_MEMORYTYPE_UNIFIED;
}

bool rw_op_is_pitched_dtod(const struct cap_op *op)
{
	const struct cap_memcpy *c;

	if (op->kind != CAP_OP_MEMCPY)
		return false;
	c = &op->u.memcpy;
	if (op->flags & (CAP_OPF_ENDS_WINDOW | CAP_OPF_FAILED | CAP_OPF_NO_DEFER | CAP_OPF_STAGED))
		return false;
	if (op->stream_kind == CAP_STREAM_PER_THREAD || !is_async_api(op->api))
		return false;
	if (c->dir != CAP_DIR_DTOD || c->src_ctx || c->dst_ctx || c->src_pageable || c->dst_pageable ||
	    !is_linear_type(c->d.srcMemoryType) || !is_linear_type(c->d.dstMemoryType))
		return false;
	/* a span of 0 is an overflow in capture's arithmetic: nothing can be said of such a copy */
	if (c->d.Depth != 1 || !c->d.Height || !c->d.WidthInBytes || c->bytes != c->d.WidthInBytes * c->d.Height ||
	    !c->src_span || !c->dst_span)
		return false;
	return c->d.Height == 1 || (c->d.srcPitch >= c->d.WidthInBytes && c->d.dstPitch >= c->d.WidthInBytes);
}

bool rw_op_is_linear_dtod(const struct cap_op *op)
{
	return rw_op_is_pitched_dtod(op) && op->u.memcpy.d.Height == 1;
}

/* Remember that the rule being applied merged or rewrote original op k. */
static void touch(struct rw_rewriter *rw, uint32_t k)
{
	const char **t = rw->touched_by[k];

	for (uint32_t i = 0; i < RW_TOUCH_MAX; i++) {
		if (t[i] == rw->applying)
			return;
		if (!t[i]) {
			t[i] = rw->applying;
			return;
		}
	}
}

static void order_forget(struct rw_rewriter *rw)
{
	free(rw->unordered);
	rw->unordered = NULL;
	rw->unordered_n = 0;
}

int rw_unorder(struct rw_rewriter *rw, uint32_t i, uint32_t j)
{
	if (i >= j || j >= rw->n)
		return -CF_EINVAL;
	if (!rw->unordered) {
		rw->unordered = calloc((size_t)rw->n * rw->n, 1);
		if (!rw->unordered)
			return -CF_ENOMEM;
		rw->unordered_n = rw->n;
	}
	rw->unordered[(size_t)i * rw->unordered_n + j] = 1;
	return 0;
}

bool rw_any_unordered(const struct rw_rewriter *rw)
{
	return rw->unordered != NULL;
}

/* The plan's dependency lists from the dropped pairs: node k waits for every earlier node whose
 * pair was not dropped, less those another of its waits already waits for (transitively).
 * 0 or -CF_ENOMEM. */
static int plan_deps(const struct rw_rewriter *rw, struct rw_plan *p)
{
	uint32_t n = rw->n, at = 0;
	uint8_t *reach = calloc((size_t)n * n, 1); /* reach[k*n+j]: k waits for j, maybe transitively */
	int rc = -CF_ENOMEM;

	p->dep_start = malloc((n + 1) * sizeof(*p->dep_start));
	p->dep_list = malloc(((size_t)n * n / 2 + 1) * sizeof(*p->dep_list));
	if (!reach || !p->dep_start || !p->dep_list)
		goto out;
	for (uint32_t k = 0; k < n; k++) {
		p->dep_start[k] = at;
		/* nearest first: a wait implied by a nearer one is not needed */
		for (uint32_t j = k; j-- > 0;) {
			if (rw->unordered[(size_t)j * n + k] || reach[(size_t)k * n + j])
				continue;
			p->dep_list[at++] = j;
			reach[(size_t)k * n + j] = 1;
			for (uint32_t m = 0; m < j; m++)
				if (reach[(size_t)j * n + m])
					reach[(size_t)k * n + m] = 1;
		}
	}
	p->dep_start[n] = at;
	rc = 0;
out:
	free(reach);
	return rc;
}

/* Nodes i .. i + count - 1 are about to change: the caches after them move with the nodes,
 * plain_end is worked out again when next asked, and the driver learns what it must ask again. */
static void edit_note(struct rw_rewriter *rw, uint32_t i, uint32_t count)
{
	uint32_t tail = rw->n - i - count;

	if (i < rw->edit_lo)
		rw->edit_lo = i;
	if (tail < rw->edit_tail)
		rw->edit_tail = tail;
	rw->plain_ok = false;
}

int rw_erase(struct rw_rewriter *rw, uint32_t i)
{
	if (i >= rw->n)
		return -CF_EINVAL;
	order_forget(rw);
	for (uint32_t k = 0; k < rw->nodes[i].norig; k++) {
		cf_assert(!rw->erased[rw->nodes[i].orig[k]]); /* invariant 1: erased ops are in no node */
		rw->erased[rw->nodes[i].orig[k]] = true;
		rw->erased_by[rw->nodes[i].orig[k]] = rw->applying;
	}
	edit_note(rw, i, 1);
	memmove(&rw->nodes[i], &rw->nodes[i + 1], (rw->n - i - 1) * sizeof(rw->nodes[0]));
	if (rw->eff)
		memmove(&rw->eff[i], &rw->eff[i + 1], (rw->n - i - 1) * sizeof(rw->eff[0]));
	rw->n--;
	return 0;
}

/* Node k of a replacement: the nodes [i, i+count) when idx is NULL, else nodes idx[0..count). */
static inline uint32_t pick(const uint32_t *idx, uint32_t i, uint32_t k)
{
	return idx ? idx[k] : i + k;
}

/* The node of kind that replaces the nodes picked (pick), built into *nn and derived from the
 * window's ops. 0, -CF_EINVAL (also when it cannot be derived) or -CF_ENOMEM. */
static int node_make(struct rw_rewriter *rw, const uint32_t *idx, uint32_t i, uint32_t count, enum rw_node_kind kind,
		     uint32_t from, const char *rule, struct rw_node *nn)
{
	struct rw_plan_node pn;
	uint32_t norig = 0, at = 0;

	for (uint32_t k = 0; k < count; k++)
		norig += rw->nodes[pick(idx, i, k)].norig;
	memset(nn, 0, sizeof(*nn));
	nn->orig = cf_arena_alloc(&rw->arena, norig * sizeof(uint32_t));
	if (!nn->orig)
		return -CF_ENOMEM;
	for (uint32_t k = 0; k < count; k++) {
		const struct rw_node *m = &rw->nodes[pick(idx, i, k)];

		memcpy(&nn->orig[at], m->orig, m->norig * sizeof(uint32_t));
		at += m->norig;
	}
	nn->kind = (uint8_t)kind;
	nn->norig = norig;
	nn->from = from;
	nn->rule = rule;
	nn->snap = -1;
	memset(&pn, 0, sizeof(pn));
	pn.kind = (uint8_t)kind;
	pn.norig = norig;
	pn.orig = nn->orig;
	pn.from = from;
	if (kind == RW_NODE_BATCH_COPY || kind == RW_NODE_BATCH_SET || kind == RW_NODE_BATCH_COPY2D) {
		/* each replaced node is one range of the table, whatever it was */
		nn->members = cf_arena_alloc(&rw->arena, count * sizeof(*nn->members));
		if (!nn->members)
			return -CF_ENOMEM;
		at = 0;
		for (uint32_t k = 0; k < count; k++) {
			const struct rw_node *m = &rw->nodes[pick(idx, i, k)];

			if (m->nmembers) /* a batch inside a batch: the table has one level */
				return -CF_EINVAL;
			nn->members[k] = (struct rw_member){ m->kind, at, m->norig, m->from };
			at += m->norig;
		}
		nn->nmembers = count;
	}
	pn.nmembers = nn->nmembers;
	pn.members = nn->members;
	pn.scratch_size = rw_node_scratch_bytes(kind, rw->ops[nn->orig[0]]);
	if (pn.scratch_size) {
		pn.scratch = nn->scratch = cf_arena_alloc(&rw->arena, pn.scratch_size);
		if (!pn.scratch)
			return -CF_ENOMEM;
	}
	/* what the node stands for now, built as replay will build it at each launch */
	if (rw_node_derive(rw->kernels, &pn, rw->ops, &nn->op) != 0)
		return -CF_EINVAL;
	for (uint32_t k = 0; k < nn->norig; k++)
		touch(rw, nn->orig[k]);
	return 0;
}

int rw_replace(struct rw_rewriter *rw, uint32_t i, uint32_t count, enum rw_node_kind kind, uint32_t from,
	       const char *rule)
{
	struct rw_node nn;
	int rc;

	if (!count || i >= rw->n || count > rw->n - i || (from != RW_NONE && from >= rw->norig))
		return -CF_EINVAL;
	rc = node_make(rw, NULL, i, count, kind, from, rule, &nn);
	if (rc)
		return rc;
	order_forget(rw);
	edit_note(rw, i, count);
	rw->nodes[i] = nn;
	memmove(&rw->nodes[i + 1], &rw->nodes[i + count], (rw->n - i - count) * sizeof(rw->nodes[0]));
	if (rw->eff) {
		rw->eff[i].valid = false;
		memmove(&rw->eff[i + 1], &rw->eff[i + count], (rw->n - i - count) * sizeof(rw->eff[0]));
	}
	rw->n -= count - 1;
	return 0;
}

int rw_gather(struct rw_rewriter *rw, const uint32_t *idx, uint32_t count, enum rw_node_kind kind, const char *rule)
{
	struct rw_node nn;
	uint32_t to;
	int rc;

	if (count < 2 || idx[count - 1] >= rw->n)
		return -CF_EINVAL;
	for (uint32_t k = 1; k < count; k++)
		if (idx[k] <= idx[k - 1])
			return -CF_EINVAL;
	rc = node_make(rw, idx, 0, count, kind, RW_NONE, rule, &nn);
	if (rc)
		return rc;
	order_forget(rw);
	edit_note(rw, idx[0], idx[count - 1] - idx[0] + 1);
	rw->nodes[idx[0]] = nn;
	if (rw->eff)
		rw->eff[idx[0]].valid = false;
	/* close the gaps the later nodes leave, keeping every other node's order (and its cached
	 * effects, which move with it) */
	to = idx[1];
	for (uint32_t k = 1; k < count; k++) {
		uint32_t end = k + 1 < count ? idx[k + 1] : rw->n;

		for (uint32_t x = idx[k] + 1; x < end; x++, to++) {
			rw->nodes[to] = rw->nodes[x];
			if (rw->eff)
				rw->eff[to] = rw->eff[x];
		}
	}
	rw->n -= count - 1;
	return 0;
}

static uint64_t guard_hash(const struct rw_guard *g)
{
	uint64_t h = cf_hash_combine(CF_HASH_SEED, ((uint64_t)g->kind << 32) | g->a);

	h = cf_hash_combine(h, ((uint64_t)g->b << 32) | (uint32_t)g->na);
	return cf_hash_combine(h, (uint32_t)g->nb);
}

static bool guard_equal(const struct rw_guard *x, const struct rw_guard *y)
{
	return x->kind == y->kind && x->a == y->a && x->b == y->b && x->na == y->na && x->nb == y->nb;
}

/* Put guard index k in the set (which has room). */
static void gset_put(struct rw_rewriter *rw, uint32_t k)
{
	uint32_t mask = rw->gset_cap - 1, at = (uint32_t)guard_hash(&rw->guards[k]) & mask;

	while (rw->gset[at])
		at = (at + 1) & mask;
	rw->gset[at] = k + 1;
}

static int guard_add(struct rw_rewriter *rw, enum rw_guard_kind kind, uint32_t a, uint32_t b, int32_t na, int32_t nb)
{
	struct rw_guard g = { (uint8_t)kind, a, b, na, nb };

	if (a >= rw->norig || b >= rw->norig)
		return -CF_EINVAL;
	/* the same condition twice would only cost a check per launch */
	if (rw->gset_cap) {
		uint32_t mask = rw->gset_cap - 1;

		for (uint32_t at = (uint32_t)guard_hash(&g) & mask; rw->gset[at]; at = (at + 1) & mask)
			if (guard_equal(&rw->guards[rw->gset[at] - 1], &g))
				return 0;
	}
	if (rw->nguards == rw->gcap) {
		uint32_t cap = rw->gcap ? 2 * rw->gcap : 16;
		struct rw_guard *ng = realloc(rw->guards, cap * sizeof(*ng));

		if (!ng)
			return -CF_ENOMEM;
		rw->guards = ng;
		rw->gcap = cap;
	}
	if (2 * (rw->nguards + 1) > rw->gset_cap) {
		uint32_t cap = rw->gset_cap ? 2 * rw->gset_cap : 64;
		uint32_t *set = calloc(cap, sizeof(*set));

		if (!set)
			return -CF_ENOMEM;
		free(rw->gset);
		rw->gset = set;
		rw->gset_cap = cap;
		for (uint32_t k = 0; k < rw->nguards; k++)
			gset_put(rw, k);
	}
	rw->guards[rw->nguards] = g;
	gset_put(rw, rw->nguards);
	rw->nguards++;
	return 0;
}

int rw_guard(struct rw_rewriter *rw, enum rw_guard_kind kind, uint32_t a, uint32_t b)
{
	return guard_add(rw, kind, a, b, -1, -1);
}

bool rw_can_multi(const struct rw_rewriter *rw, uint32_t i)
{
	return i < rw->n && rw_multi_possible(rw->kernels, &rw->nodes[i].op);
}

bool rw_is_plain(const struct rw_rewriter *rw, uint32_t i)
{
	if (i >= rw->n)
		return false;
	note_read(rw, i);
	return rw->nodes[i].kind == RW_NODE_OP;
}

/* The snapshot standing for node i (made on first use), or -1 for an untouched op; -2 when out
 * of memory. */
static int32_t snap_of(struct rw_rewriter *rw, uint32_t i)
{
	struct rw_node *n = &rw->nodes[i];
	struct rw_plan_node *s;

	if (n->kind == RW_NODE_OP)
		return -1;
	if (n->snap >= 0)
		return n->snap;
	if (rw->nsnaps == rw->scap) {
		uint32_t cap = rw->scap ? 2 * rw->scap : 8;
		struct rw_plan_node *p = realloc(rw->snaps, cap * sizeof(*p));

		if (!p)
			return -2;
		rw->snaps = p;
		rw->scap = cap;
	}
	s = &rw->snaps[rw->nsnaps];
	memset(s, 0, sizeof(*s));
	s->kind = n->kind;
	s->norig = n->norig;
	s->orig = n->orig; /* arena: lives as long as the rewriter */
	s->from = n->from;
	s->rule = n->rule;
	s->nmembers = n->nmembers;
	s->members = n->members; /* arena too */
	n->snap = (int32_t)rw->nsnaps++;
	return n->snap;
}

/* [*lo, *hi): the bytes ranges list[0..n) may touch (a pitched region: its span); true when a
 * range wraps past 2^64 (then the bounds are not used). */
static bool bounds_of(const struct rw_range *list, uint32_t n, uint64_t *lo, uint64_t *hi)
{
	bool wraps = false;

	*lo = *hi = 0;
	for (uint32_t k = 0; k < n; k++) {
		if (!list[k].bytes)
			continue;
		wraps |= list[k].addr + list[k].bytes < list[k].addr;
		if (*lo == *hi || list[k].addr < *lo)
			*lo = list[k].addr;
		if (list[k].addr + list[k].bytes > *hi)
			*hi = list[k].addr + list[k].bytes;
	}
	return wraps;
}

/* Node i's effects worked out into its slot; NULL when out of memory. */
static const struct node_eff *node_effects_make(struct rw_rewriter *rw, uint32_t i)
{
	struct node_eff *s;

	if (!rw->eff) {
		rw->eff = calloc(rw->norig ? rw->norig : 1, sizeof(*rw->eff));
		if (!rw->eff)
			return NULL;
	}
	s = &rw->eff[i];
	if (!s->valid && rw->nodes[i].kind == RW_NODE_BATCH_KERNEL) {
		/* a multi-instance launch touches what its instances touch (the derived launch's own
		 * kernel has no card) */
		struct rw_eff_slot u;

		if (!rw_eff_pool_put_batch(&rw->eff_pool, &rw->eff_used, &rw->eff_cap, rw->ops, rw->nodes[i].orig,
					   rw->nodes[i].norig, &u))
			return NULL;
		s->all = u.all;
		s->r = u.r;
		s->nr = u.nr;
		s->w = u.w;
		s->nw = u.nw;
		s->wraps = bounds_of(rw->eff_pool ? &rw->eff_pool[u.r] : NULL, u.nr, &s->rlo, &s->rhi);
		s->wraps |= bounds_of(rw->eff_pool ? &rw->eff_pool[u.w] : NULL, u.nw, &s->wlo, &s->whi);
		s->sure = false;
		s->pure = -1;
		s->valid = true;
	}
	if (!s->valid) {
		struct rw_effects e;

		rw_op_effects(&rw->nodes[i].op, &e);
		if (!rw_eff_pool_put(&rw->eff_pool, &rw->eff_used, &rw->eff_cap, &e, &s->r, &s->w))
			return NULL;
		s->all = e.all;
		s->nr = e.nr;
		s->nw = e.nw;
		s->wraps = bounds_of(e.r, e.nr, &s->rlo, &s->rhi);
		s->wraps |= bounds_of(e.w, e.nw, &s->wlo, &s->whi);
		s->sure = rw_op_sure_write(&rw->nodes[i].op, &s->sure_r);
		s->pure = -1;
		s->valid = true;
	}
	return s;
}

/* Node i's effects from the cache (worked out on first use); NULL when out of memory. */
static inline const struct node_eff *node_effects(struct rw_rewriter *rw, uint32_t i)
{
	if (cf_likely(rw->eff && rw->eff[i].valid))
		return &rw->eff[i];
	return node_effects_make(rw, i);
}

static bool bounds_meet(uint64_t alo, uint64_t ahi, uint64_t blo, uint64_t bhi)
{
	return alo < ahi && blo < bhi && alo < bhi && blo < ahi;
}

/* RW_G_COVERS from the bounds (a's do not wrap): a writes nothing outside what b surely writes. */
static bool covers_by_bounds(const struct node_eff *a, const struct node_eff *b)
{
	if (a->all || !b->sure)
		return false;
	return a->wlo == a->whi || (a->wlo >= b->sure_r.addr && a->whi <= b->sure_r.addr + b->sure_r.bytes);
}

/* A condition judged on effects alone between nodes i and j, each side's effects worked out once
 * per node; -1 when the cache cannot serve (another kind, or out of memory). Two nodes whose
 * bounds do not meet are apart without a look at their lists: the answer apart_eff would give. */
static int need_on_effects(struct rw_rewriter *rw, enum rw_guard_kind kind, uint32_t i, uint32_t j)
{
	const struct node_eff *a, *b = NULL;
	struct rw_eff_view va, vb;

	if (kind != RW_G_UNREAD && kind != RW_G_UNWRITTEN && kind != RW_G_INDEPENDENT && kind != RW_G_COVERS)
		return -1;
	a = node_effects(rw, i);
	if (a && kind != RW_G_COVERS)
		b = node_effects(rw, j);
	if (!a || (kind != RW_G_COVERS && !b))
		return -1;
	if (kind == RW_G_COVERS && !a->wraps) {
		/* covers_eff: every write of a (those of any bytes) inside what op j surely writes */
		b = j < rw->n ? node_effects(rw, j) : NULL;
		if (b)
			return covers_by_bounds(a, b);
	}
	if (kind != RW_G_COVERS) {
		bool reads = kind != RW_G_UNWRITTEN, writes = kind != RW_G_UNREAD;

		if (a->all || b->all)
			return 0;
		if (a->wraps || b->wraps)
			goto lists;
		/* b reads nothing a writes (reads); b writes nothing a touches (writes) */
		if ((!reads || !bounds_meet(a->wlo, a->whi, b->rlo, b->rhi)) &&
		    (!writes || (!bounds_meet(a->wlo, a->whi, b->wlo, b->whi) &&
				 !bounds_meet(a->rlo, a->rhi, b->wlo, b->whi))))
			return 1;
lists:
		vb = (struct rw_eff_view){ b->all, &rw->eff_pool[b->r], &rw->eff_pool[b->w], b->nr, b->nw };
	}
	va = (struct rw_eff_view){ a->all, &rw->eff_pool[a->r], &rw->eff_pool[a->w], a->nr, a->nw };
	return rw_cond_holds_eff(kind, &va, kind != RW_G_COVERS ? &vb : NULL, &rw->nodes[j].op);
}

uint32_t rw_first_failing(const struct rw_rewriter *rw_const, enum rw_guard_kind kind, uint32_t i, uint32_t last)
{
	/* the effects cache is the rewriter's scratch: rules see it const, one thread rewrites */
	struct rw_rewriter *rw = (struct rw_rewriter *)rw_const;
	bool fast = kind == RW_G_UNREAD || kind == RW_G_UNWRITTEN || kind == RW_G_INDEPENDENT;
	bool reads = kind != RW_G_UNWRITTEN, writes = kind != RW_G_UNREAD;
	const struct node_eff *a = fast && i < rw->n ? node_effects(rw, i) : NULL;
	uint64_t wlo = 0, whi = 0, rlo = 0, rhi = 0;
	uint32_t j;

	if (a && (a->all || a->wraps))
		a = NULL; /* the bounds say nothing: every pair is asked */
	if (a) {
		/* node i's bounds, read once (the loop writes the cache, so the compiler would not) */
		wlo = a->wlo, whi = a->whi, rlo = a->rlo, rhi = a->rhi;
	}
	for (j = i + 1; j <= last; j++) {
		const struct node_eff *b;

		if (a && j < rw->n && (b = node_effects(rw, j)) != NULL && !b->all && !b->wraps &&
		    (!reads || !bounds_meet(wlo, whi, b->rlo, b->rhi)) &&
		    (!writes || (!bounds_meet(wlo, whi, b->wlo, b->whi) && !bounds_meet(rlo, rhi, b->wlo, b->whi))))
			continue; /* apart by their bounds: the condition holds */
		if (rw_need(rw, NULL, kind, i, j) != 0)
			break;
	}
	note_read(rw, j <= last ? j : last);
	return j;
}

uint32_t rw_first_holding(const struct rw_rewriter *rw_const, enum rw_guard_kind kind, uint32_t i, uint32_t last)
{
	struct rw_rewriter *rw = (struct rw_rewriter *)rw_const; /* the cache: as rw_first_failing */
	const struct node_eff *a = kind == RW_G_COVERS && i < rw->n ? node_effects(rw, i) : NULL;
	uint32_t j, from = i + 1;

	if (a && !a->wraps) {
		/* covers_by_bounds with node i's side read once: a write of nothing is covered by
		 * any node; one that may touch anything by none */
		uint64_t wlo = a->wlo, whi = a->whi;
		bool none = wlo == whi, all = a->all;

		for (j = i + 1; j <= last && j < rw->n; j++) {
			const struct node_eff *b = node_effects(rw, j);

			if (!b)
				break; /* out of memory for the cache: asked one by one below */
			if (all || !b->sure)
				continue;
			if (none || (wlo >= b->sure_r.addr && whi <= b->sure_r.addr + b->sure_r.bytes))
				goto found;
		}
		from = j; /* the rest (none when the loop ran out) asked one by one */
	}
	for (j = from; j <= last; j++)
		if (rw_need(rw, NULL, kind, i, j) == 0)
			break;
found:
	note_read(rw, j <= last ? j : last);
	return j;
}

int rw_need(const struct rw_rewriter *rw, struct rw_rewriter *rec, enum rw_guard_kind kind, uint32_t i, uint32_t j)
{
	int32_t si, sj;

	if (i >= rw->n || j >= rw->n)
		return rec ? -CF_EINVAL : 1;
	note_read(rw, i > j ? i : j);
	if (!rec && kind == RW_G_PURE && i == j) {
		/* a property of the node alone: kept with its effects (rw_cond_holds, once) */
		struct node_eff *s = (struct node_eff *)node_effects((struct rw_rewriter *)rw, i);

		if (s) {
			if (s->pure < 0)
				s->pure = rw_cond_holds(kind, &rw->nodes[i].op, &rw->nodes[i].op, true) ? 1 : 0;
			return s->pure ? 0 : 1;
		}
	}
	if (!rec) {
		int held = need_on_effects((struct rw_rewriter *)rw, kind, i, j);

		if (held < 0)
			held = rw_cond_holds(kind, &rw->nodes[i].op, &rw->nodes[j].op, i == j);
		return held ? 0 : 1;
	}
	si = snap_of(rec, i);
	sj = snap_of(rec, j);
	if (si < -1 || sj < -1)
		return -CF_ENOMEM;
	return guard_add(rec, kind, rw->nodes[i].orig[0], rw->nodes[j].orig[0], si, sj);
}

/* Whether node k may lie between plain nodes after node i (same stream and context). */
static bool plain_after(const struct rw_rewriter *rw, uint32_t i, uint32_t k)
{
	const struct cap_op *op = &rw->nodes[k].op;

	return (op->kind == CAP_OP_KERNEL || op->kind == CAP_OP_MEMCPY || op->kind == CAP_OP_MEMSET) &&
	       op->stream_slot == rw->nodes[i].op.stream_slot && op->ctx == rw->nodes[i].op.ctx;
}

/* plain_end for the current list, in one sweep from the end: when node i + 1 is plain after i
 * it has i's stream and context, so what is plain after it is plain after i. */
static bool plain_make(struct rw_rewriter *rw)
{
	if (!rw->plain_end) {
		rw->plain_end = malloc((rw->norig ? rw->norig : 1) * sizeof(*rw->plain_end));
		if (!rw->plain_end)
			return false;
	}
	for (uint32_t i = rw->n; i-- > 0;)
		rw->plain_end[i] = i + 1 < rw->n && plain_after(rw, i, i + 1) ? rw->plain_end[i + 1] : i + 1;
	rw->plain_ok = true;
	return true;
}

bool rw_plain_between(const struct rw_rewriter *rw, uint32_t i, uint32_t j)
{
	if (i >= j || j > rw->n)
		return false;
	note_read(rw, j - 1);
	/* the cache is the rewriter's scratch: rules see it const, one thread rewrites a window */
	if (rw->plain_ok || plain_make((struct rw_rewriter *)rw))
		return j <= rw->plain_end[i];
	for (uint32_t k = i + 1; k < j; k++) /* out of memory for the cache: ask node by node */
		if (!plain_after(rw, i, k))
			return false;
	return true;
}

/* ------------------------------------------------------------------ the driver */

/* The invariants at the top of this file. */
static bool list_is_valid(const struct rw_rewriter *rw)
{
	int64_t last = -1, first = -1;
	bool *seen = calloc(rw->norig ? rw->norig : 1, 1);
	bool ok = seen != NULL;

	for (uint32_t k = 0; ok && k < rw->n; k++) {
		const struct rw_node *n = &rw->nodes[k];

		if (!n->norig || (int64_t)n->orig[0] <= first)
			ok = false;
		first = ok ? n->orig[0] : first;
		for (uint32_t i = 0; ok && i < n->norig; i++) {
			bool gathered = n->kind == RW_NODE_BATCH_KERNEL;

			if (n->orig[i] >= rw->norig || seen[n->orig[i]] ||
			    (int64_t)n->orig[i] <= (gathered && i ? (int64_t)n->orig[i - 1] : last))
				ok = false;
			else
				seen[n->orig[i]] = true;
			if (!gathered || !i)
				last = n->orig[i];
		}
	}
	free(seen);
	return ok;
}

static void count_rule(struct rw_plan_stat *stats, uint32_t *nstats, const char *name)
{
	for (uint32_t k = 0; k < *nstats; k++) {
		if (stats[k].rule == name) {
			stats[k].count++;
			return;
		}
	}
	stats[*nstats].rule = name;
	stats[*nstats].count = 1;
	(*nstats)++;
}

/* Give plan node d the scratch its kind needs (owned). 0 or -CF_ENOMEM. */
static int node_scratch(const struct rw_rewriter *rw, struct rw_plan_node *d)
{
	d->scratch_size = rw_node_scratch_bytes((enum rw_node_kind)d->kind, rw->ops[d->orig[0]]);
	if (!d->scratch_size)
		return 0;
	d->scratch = calloc(1, d->scratch_size);
	return d->scratch ? 0 : -CF_ENOMEM;
}

/* Give plan node d its own copy of members. 0 or -CF_ENOMEM. */
static int node_members(struct rw_plan_node *d, const struct rw_member *m, uint32_t n)
{
	d->members = NULL;
	d->nmembers = 0;
	if (!n)
		return 0;
	d->members = malloc(n * sizeof(*m));
	if (!d->members)
		return -CF_ENOMEM;
	memcpy(d->members, m, n * sizeof(*m));
	d->nmembers = n;
	return 0;
}

/* A malloc'd copy of the n elements of size bytes at src, with room for one at least (an empty
 * array is not NULL); NULL when out of memory. */
static void *dup_array(const void *src, size_t n, size_t size)
{
	void *q = malloc((n ? n : 1) * size);

	if (q && n)
		memcpy(q, src, n * size);
	return q;
}

/* Plan node d as a copy of list node s (its own orig, members and scratch), or, with s NULL,
 * the identity's node for original op k. 0 or -CF_ENOMEM (what d got is freed with the plan). */
static int plan_node(const struct rw_rewriter *rw, struct rw_plan_node *d, const struct rw_node *s, uint32_t k)
{
	int rc = -CF_ENOMEM;

	d->norig = s ? s->norig : 1;
	d->orig = malloc(d->norig * sizeof(uint32_t));
	if (!d->orig)
		goto out;
	if (s)
		memcpy(d->orig, s->orig, d->norig * sizeof(uint32_t));
	else
		d->orig[0] = k;
	d->kind = s ? s->kind : RW_NODE_OP;
	d->rule = s ? s->rule : NULL;
	d->from = s ? s->from : RW_NONE;
	if (s && node_members(d, s->members, s->nmembers) != 0)
		goto out;
	rc = node_scratch(rw, d);
out:
	return rc;
}

/* Plan snapshot d as a copy of the list's snapshot s, with its own orig, members and scratch. */
static int plan_snap(const struct rw_rewriter *rw, struct rw_plan_node *d, const struct rw_plan_node *s)
{
	int rc = -CF_ENOMEM;

	*d = *s;
	d->scratch = NULL;
	d->members = NULL;
	d->nmembers = 0;
	d->orig = malloc(d->norig * sizeof(uint32_t));
	if (!d->orig)
		goto out;
	memcpy(d->orig, s->orig, d->norig * sizeof(uint32_t));
	if (node_members(d, s->members, s->nmembers) != 0)
		goto out;
	rc = node_scratch(rw, d);
out:
	return rc;
}

/* What a rewritten plan has besides its nodes: snapshots, guards, the dependencies of an
 * unordered list, which rule erased or touched each op, and the rules' counts. 0 or
 * -CF_ENOMEM. */
static int plan_rest(const struct rw_rewriter *rw, struct rw_plan *p, const struct rw_plan_stat *stats,
		     uint32_t nstats)
{
	int rc = -CF_ENOMEM;

	if (rw->nsnaps) {
		p->snaps = calloc(rw->nsnaps, sizeof(*p->snaps));
		if (!p->snaps)
			goto out;
		for (uint32_t k = 0; k < rw->nsnaps; k++) {
			p->nsnaps = k + 1;
			if (plan_snap(rw, &p->snaps[k], &rw->snaps[k]) != 0)
				goto out;
		}
		p->snap_ops = calloc(rw->nsnaps, sizeof(*p->snap_ops));
		if (!p->snap_ops)
			goto out;
	}
	if (rw->nguards) {
		p->guards = dup_array(rw->guards, rw->nguards, sizeof(*p->guards));
		if (!p->guards)
			goto out;
		p->nguards = rw->nguards;
	}
	if (rw->unordered && rw->unordered_n == rw->n && plan_deps(rw, p) != 0)
		goto out;
	p->erased_by = dup_array(rw->erased_by, rw->norig, sizeof(*p->erased_by));
	p->touched_by = dup_array(rw->touched_by, rw->norig, sizeof(*p->touched_by));
	if (!p->erased_by || !p->touched_by)
		goto out;
	if (nstats) {
		p->stats = dup_array(stats, nstats, sizeof(*p->stats));
		if (!p->stats)
			goto out;
		p->nstats = nstats;
	}
	rc = 0;
out:
	return rc;
}

/* The plan of rw's list (identity: ignore the list and guards, one node per original op). */
static struct rw_plan *plan_make(const struct rw_rewriter *rw, bool identity, const struct rw_plan_stat *stats,
				 uint32_t nstats)
{
	struct rw_plan *p = calloc(1, sizeof(*p));
	uint32_t nn = identity ? rw->norig : rw->n;

	if (!p)
		return NULL;
	p->norig = rw->norig;
	p->kernels = rw->kernels;
	p->nodes = calloc(nn ? nn : 1, sizeof(*p->nodes));
	if (!p->nodes)
		goto out_nomem;
	for (uint32_t k = 0; k < nn; k++) {
		p->nnodes = k + 1; /* calloc'd: a half-made node is freed with the plan */
		if (plan_node(rw, &p->nodes[k], identity ? NULL : &rw->nodes[k], k) != 0)
			goto out_nomem;
	}
	if (!identity && plan_rest(rw, p, stats, nstats) != 0)
		goto out_nomem;
	return p;

out_nomem:
	rw_plan_destroy(p);
	return NULL;
}

/* The rules to run, in run order, into run[]: the given ones sorted, else those cfg enables
 * (registered ones come sorted). Returns how many. */
static uint32_t rules_to_run(const struct rw_config *cfg, const struct rw_rule *const *rules, size_t nrules,
			     const struct rw_rule **run)
{
	uint32_t nrun = 0;

	if (rules) {
		for (size_t k = 0; k < nrules && nrun < RW_MAX_RULES; k++)
			run[nrun++] = rules[k];
		qsort(run, nrun, sizeof(run[0]), rule_cmp);
	} else if (cfg) {
		size_t nreg;
		const struct rw_rule *const *reg = rw_rules_registered(&nreg);

		rules_check_once(cfg);
		for (size_t k = 0; k < nreg; k++)
			if (rw_rule_is_enabled(reg[k], cfg))
				run[nrun++] = reg[k];
	}
	return nrun;
}

/* The list before any rule: one plain node per original op. 0 or -CF_ENOMEM. */
static int list_init(struct rw_rewriter *rw)
{
	uint32_t n = rw->norig;
	int rc = -CF_ENOMEM;

	rw->nodes = calloc(n ? n : 1, sizeof(*rw->nodes));
	rw->erased = calloc(n ? n : 1, sizeof(*rw->erased));
	rw->erased_by = calloc(n ? n : 1, sizeof(*rw->erased_by));
	rw->touched_by = calloc(n ? n : 1, sizeof(*rw->touched_by));
	if (!rw->nodes || !rw->erased || !rw->erased_by || !rw->touched_by)
		goto out;
	rw->n = n;
	for (uint32_t i = 0; i < n; i++) {
		struct rw_node *nd = &rw->nodes[i];

		nd->kind = RW_NODE_OP;
		nd->norig = 1;
		nd->orig = cf_arena_alloc(&rw->arena, sizeof(uint32_t));
		if (!nd->orig)
			goto out;
		nd->orig[0] = i;
		nd->op = *rw->ops[i];
		nd->from = RW_NONE;
		nd->snap = -1;
		rw->legacy |= rw->ops[i]->stream_kind == CAP_STREAM_LEGACY;
	}
	rc = 0;
out:
	return rc;
}

static bool memo_on = true; /* rw__set_memo (tests) */

void rw__set_memo(bool on)
{
	memo_on = on;
}


/* What the driver knows of where rules do not match: per rule with a reach, one byte per node
 * (1: match said no there, and no edit has reached the nodes it read since). */
struct nomatch {
	uint8_t *no;                 /* nrun rows of norig bytes, or NULL (ask every time) */
	uint32_t *hi;                /* nrun rows of norig: for a rule with reads_tracked, the
				      * furthest node the "no" at k read; or NULL (reach alone) */
	uint32_t norig;              /* bytes per row */
};

/* After an application: what edits left alone keeps its answers. Match at k reads nodes
 * k .. k + reach - 1 only (struct rw_rule), so an answer stays true before the first edited node
 * by more than the reach, and in the untouched tail (which moved with the nodes); for a rule
 * that reads before k too (reads_before), only before the first edited node by more than the
 * reach. A rule whose reads are tracked (reads_tracked) read k .. hi[k]: its answer before the
 * first edited node stays true when hi[k] is before it too (edits never add nodes, so the
 * bounds it took from rw_count cannot grow past what it read). */
static void nomatch_update(struct nomatch *nm, const struct rw_rewriter *rw, const struct rw_rule *const *run,
			   uint32_t nrun, uint32_t n_before)
{
	uint32_t lo = rw->edit_lo, tail = rw->edit_tail;

	if (!nm->no || lo == UINT32_MAX)
		return;
	if (tail > rw->n)
		tail = rw->n;
	for (uint32_t r = 0; r < nrun; r++) {
		uint8_t *row = &nm->no[(size_t)r * nm->norig];
		uint32_t reach = run[r]->reach, keep = lo + 1 > reach ? lo + 1 - reach : 0;
		uint32_t kept_tail = run[r]->reads_before ? 0 : tail; /* it read the edit from there */
		uint32_t *hi = nm->hi && run[r]->reads_tracked ? &nm->hi[(size_t)r * nm->norig] : NULL;

		if (!reach)
			continue;
		if (keep > rw->n - kept_tail)
			keep = rw->n - kept_tail;
		memmove(&row[rw->n - kept_tail], &row[n_before - kept_tail], kept_tail);
		if (hi) {
			/* the tail's answers read the tail only: they moved with it */
			memmove(&hi[rw->n - kept_tail], &hi[n_before - kept_tail], kept_tail * sizeof(*hi));
			for (uint32_t k = rw->n - kept_tail; k < rw->n; k++)
				hi[k] -= n_before - rw->n;
			for (uint32_t k = keep; k < lo && k < rw->n - kept_tail; k++)
				if (row[k] && hi[k] >= lo)
					row[k] = 0;
			keep = lo < rw->n - kept_tail ? lo : rw->n - kept_tail;
		}
		memset(&row[keep], 0, rw->n - kept_tail - keep);
		memset(&row[rw->n], 0, nm->norig - rw->n);
	}
}

/* Apply the rules until none matches: the first rule in run order that matches, at the first
 * node it matches, then again from the start. Counts each application in stats. Returns false
 * when the list must be dropped for the identity (a rule failed, the list broke an invariant,
 * or it did not settle within the budget). A match that said no is not asked again until an edit
 * reaches the nodes it read (rules with a reach): the same answers in the same order, so the same
 * plan, without going over the whole window again after each application. */
static bool apply_rules(struct rw_rewriter *rw, const struct rw_rule *const *run, uint32_t nrun,
			struct rw_plan_stat *stats, uint32_t *nstats)
{
	uint64_t applied = 0, budget = (uint64_t)RW_MAX_APPLY * rw->norig + 16;
	struct nomatch nm = { memo_on ? calloc((size_t)nrun * (rw->norig ? rw->norig : 1), 1) : NULL, NULL,
			      rw->norig ? rw->norig : 1 };
	bool ok = true;

	if (nm.no)
		nm.hi = malloc((size_t)nrun * nm.norig * sizeof(*nm.hi)); /* NULL: by the reach alone */

	for (bool changed = nrun > 0; changed && ok;) {
		changed = false;
		for (uint32_t r = 0; r < nrun && !changed && ok; r++) {
			uint8_t *no = nm.no && run[r]->reach ? &nm.no[(size_t)r * nm.norig] : NULL;

			for (uint32_t i = 0; i < rw->n && !changed && ok; i++) {
				uint32_t n_before = rw->n;
				int rc;

				if (no && no[i])
					continue;
				rw->read_hi = i;
				if (!run[r]->match(rw, i)) {
					if (no)
						no[i] = 1;
					if (no && nm.hi)
						nm.hi[(size_t)r * nm.norig + i] = rw->read_hi;
					continue;
				}
				rw->applying = run[r]->name;
				rw->edit_lo = UINT32_MAX;
				rw->edit_tail = UINT32_MAX;
				rc = run[r]->apply(rw, i);
				if (rc != 0) {
					cf_log_debug("rule %s failed (%s): window left unchanged", run[r]->name,
						     cf_strerror(rc));
					ok = false;
					break;
				}
				nomatch_update(&nm, rw, run, nrun, n_before);
				count_rule(stats, nstats, run[r]->name);
				changed = true;
#ifdef CF_DEBUG
				if (CF_NEVER(!list_is_valid(rw)))
					ok = false;
#endif
			}
		}
		if (ok && changed && ++applied > budget) {
			cf_log_warn("rewrite of a %u-op window did not settle after %llu applications; left unchanged",
				    rw->norig, (unsigned long long)applied);
			ok = false;
		}
	}
	free(nm.no);
	free(nm.hi);
	return ok;
}

struct rw_plan *rw_rewrite(const struct cap_op *const *ops, uint32_t n, const struct cap_graph *tg,
			   const struct rw_config *cfg, const struct rw_rule *const *rules, size_t nrules)
{
	const struct rw_rule *run[RW_MAX_RULES];
	struct rw_plan_stat stats[RW_MAX_RULES];
	uint32_t nstats = 0, nrun;
	struct rw_rewriter rw;
	struct rw_plan *p = NULL;
	bool ok;

	memset(&rw, 0, sizeof(rw));
	rw.ops = ops;
	rw.norig = n;
	rw.tg = tg;
	rw.kernels = cfg ? cfg->kernels : NULL;
	cf_arena_init(&rw.arena, 4096);
	nrun = rules_to_run(cfg, rules, nrules, run);
	if (list_init(&rw) != 0)
		goto out;
	ok = apply_rules(&rw, run, nrun, stats, &nstats);
	(void)list_is_valid;
	p = plan_make(&rw, !ok, stats, nstats);
out:
	free(rw.nodes);
	free(rw.erased);
	free(rw.erased_by);
	free(rw.touched_by);
	free(rw.unordered);
	free(rw.guards);
	free(rw.gset);
	free(rw.snaps);
	free(rw.plain_end);
	free(rw.eff);
	free(rw.eff_pool);
	cf_arena_fini(&rw.arena);
	return p;
}
