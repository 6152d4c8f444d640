/* test_rewrite_rewriter.c - the rewriter itself: rules run by benefit then name, deterministically,
 * to a fixed point; erase and replace; a failing rule leaves the window unchanged; a rule that
 * never settles is stopped; registration through the linker section; CUFOLD_RULES and levels.
 * tests layer (cmocka, libcufold.a). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/errors.h"
#include "common/log.h"
#include "rw_test.h"

extern const struct rw_rule rw_rule_coalesce;

/* ------------------------------------------------------------------ toy rules */

/* Tag rules: rewrite an untouched kernel node into a node tagged with the rule's name. */
static bool tag_match(const struct rw_rewriter *rw, uint32_t i)
{
	const struct rw_node *n = rw_node_at(rw, i);

	return n->kind == RW_NODE_OP && !n->rule && n->op.kind == CAP_OP_KERNEL;
}

static int tag_apply_as(struct rw_rewriter *rw, uint32_t i, const char *name)
{
	return rw_replace(rw, i, 1, RW_NODE_OP, RW_NONE, name);
}

static int tag_a_apply(struct rw_rewriter *rw, uint32_t i)
{
	return tag_apply_as(rw, i, "a");
}

static int tag_b_apply(struct rw_rewriter *rw, uint32_t i)
{
	return tag_apply_as(rw, i, "b");
}

static int tag_c_apply(struct rw_rewriter *rw, uint32_t i)
{
	return tag_apply_as(rw, i, "c");
}

static const struct rw_rule rule_a = { "a", 5, 1, tag_match, tag_a_apply, 0, false, false };
static const struct rw_rule rule_b = { "b", 5, 1, tag_match, tag_b_apply, 0, false, false };
static const struct rw_rule rule_c = { "c", 7, 2, tag_match, tag_c_apply, 0, false, false };

/* Erase every memset. */
static bool drop_match(const struct rw_rewriter *rw, uint32_t i)
{
	return rw_node_at(rw, i)->op.kind == CAP_OP_MEMSET;
}

static int drop_apply(struct rw_rewriter *rw, uint32_t i)
{
	int rc = rw_guard(rw, RW_G_SAME_STREAM, rw_node_at(rw, i)->orig[0], rw_node_at(rw, i)->orig[0]);

	return rc ? rc : rw_erase(rw, i);
}

static const struct rw_rule rule_drop = { "drop", 1, 1, drop_match, drop_apply, 0, false, false };

static int fail_apply(struct rw_rewriter *rw, uint32_t i)
{
	(void)rw;
	(void)i;
	return -CF_ENOMEM;
}

static const struct rw_rule rule_fail = { "fail", 0, 1, drop_match, fail_apply, 0, false, false };

/* Never settles: replaces a memset by itself forever. */
static int spin_apply(struct rw_rewriter *rw, uint32_t i)
{
	return rw_replace(rw, i, 1, RW_NODE_OP, RW_NONE, "spin");
}

static const struct rw_rule rule_spin = { "spin", 0, 1, drop_match, spin_apply, 0, false, false };

/* ------------------------------------------------------------------ windows */

static struct cap_op ops[4];
static const struct cap_op *ptr[4];

static int setup(void **state)
{
	(void)state;
	memset(ops, 0, sizeof(ops));
	ops[0].kind = CAP_OP_KERNEL;
	ops[1].kind = CAP_OP_MEMSET;
	ops[2].kind = CAP_OP_KERNEL;
	ops[3].kind = CAP_OP_MEMSET;
	rwt_ptrs(ops, 4, ptr);
	return 0;
}

static struct rw_plan *rewrite(const struct rw_rule *const *rules, size_t n)
{
	struct rw_plan *p = rw_rewrite(ptr, 4, NULL, NULL, rules, n);

	assert_non_null(p);
	return p;
}

static void test_benefit_then_name(void **state)
{
	const struct rw_rule *ab[] = { &rule_b, &rule_a };
	const struct rw_rule *abc[] = { &rule_a, &rule_b, &rule_c };
	struct rw_plan *p;

	(void)state;
	/* same benefit: "a" before "b" whatever the order given */
	p = rewrite(ab, 2);
	assert_string_equal(p->nodes[0].rule, "a");
	assert_string_equal(p->nodes[2].rule, "a");
	assert_null(p->nodes[1].rule);
	assert_int_equal(p->nstats, 1);
	assert_int_equal(p->stats[0].count, 2);
	rw_plan_destroy(p);
	/* higher benefit first */
	p = rewrite(abc, 3);
	assert_string_equal(p->nodes[0].rule, "c");
	assert_string_equal(p->nodes[2].rule, "c");
	rw_plan_destroy(p);
}

static void test_erase(void **state)
{
	const struct rw_rule *r[] = { &rule_drop };
	char buf[256];
	struct rw_plan *p = rewrite(r, 1);

	(void)state;
	rw_plan_format(p, buf, sizeof(buf));
	assert_string_equal(buf, "op(0) op(2) | same_stream(1,1) same_stream(3,3)");
	assert_int_equal(p->norig, 4);
	assert_false(rw_plan_is_identity(p));
	rw_plan_destroy(p);
}

static void test_failing_rule_is_identity(void **state)
{
	const struct rw_rule *r[] = { &rule_a, &rule_fail };
	struct rw_plan *p = rewrite(r, 2);

	(void)state;
	assert_true(rw_plan_is_identity(p));
	assert_int_equal(p->nstats, 0);
	rw_plan_destroy(p);
}

static void test_never_settles(void **state)
{
	const struct rw_rule *r[] = { &rule_spin };
	struct rw_plan *p = rewrite(r, 1);

	(void)state;
	assert_true(rw_plan_is_identity(p));
	rw_plan_destroy(p);
}

static void test_registered(void **state)
{
	size_t n = 0;
	const struct rw_rule *const *reg = rw_rules_registered(&n);
	bool found = false;

	(void)state;
	/* this binary links coalesce.o (it names rw_rule_coalesce): the section holds it */
	for (size_t i = 0; i < n; i++) {
		found |= reg[i] == &rw_rule_coalesce;
		if (i)
			assert_true(reg[i - 1]->benefit > reg[i]->benefit ||
				    (reg[i - 1]->benefit == reg[i]->benefit && strcmp(reg[i - 1]->name, reg[i]->name) < 0));
	}
	assert_true(found);
	assert_string_equal(rw_rule_coalesce.name, "coalesce");
}

static void test_enabled(void **state)
{
	struct rw_config c0 = { 0, NULL, NULL, NULL }, c1 = { 1, NULL, NULL, NULL }, c2 = { 2, "", NULL, NULL };
	struct rw_config off = { 1, "-coalesce", NULL, NULL }, back = { 1, "-coalesce,+coalesce", NULL, NULL };
	struct rw_config plus_c = { 1, "x,+c,-zz", NULL, NULL }, minus_c = { 2, "c,-c", NULL, NULL }, prefix = { 1, "-coal", NULL, NULL };
	struct rw_config none = { -1, "+coalesce,+c", NULL, NULL };

	(void)state;
	assert_false(rw_rule_is_enabled(&rw_rule_coalesce, &c0));
	assert_true(rw_rule_is_enabled(&rw_rule_coalesce, &c1));
	assert_true(rw_rule_is_enabled(&rw_rule_coalesce, &c2));
	assert_false(rw_rule_is_enabled(&rw_rule_coalesce, &off));
	assert_true(rw_rule_is_enabled(&rw_rule_coalesce, &back));
	assert_true(rw_rule_is_enabled(&rw_rule_coalesce, &prefix));
	assert_false(rw_rule_is_enabled(&rule_c, &c1)); /* level 2 */
	assert_true(rw_rule_is_enabled(&rule_c, &c2));
	assert_true(rw_rule_is_enabled(&rule_c, &plus_c));
	assert_false(rw_rule_is_enabled(&rule_c, &minus_c));
	/* a switch turns a rule on whatever the level, OPT=0 included (the README's promise);
	 * a negative level (a shape replayed unrewritten) runs nothing, whatever the switches */
	c0.rules = "+coalesce";
	assert_true(rw_rule_is_enabled(&rw_rule_coalesce, &c0));
	assert_true(rw_config_has_rules(&c0));
	c0.rules = "c";
	assert_true(rw_rule_is_enabled(&rule_c, &c0));
	assert_false(rw_rule_is_enabled(&rw_rule_coalesce, &c0));
	c0.rules = "+coalesce,-coalesce";
	assert_false(rw_rule_is_enabled(&rw_rule_coalesce, &c0));
	c0.rules = NULL;
	assert_false(rw_config_has_rules(&c0));
	assert_true(rw_config_has_rules(&c1));
	assert_false(rw_rule_is_enabled(&rw_rule_coalesce, &none));
	assert_false(rw_rule_is_enabled(&rule_c, &none));
	assert_false(rw_config_has_rules(&none));
}

/* An unknown name in CUFOLD_RULES: one warning on stderr naming it and listing the known rules. */
static void test_rules_check(void **state)
{
	char path[] = "/tmp/cufold-test-rules-XXXXXX", text[2048];
	int fd = mkstemp(path), lines = 0;
	ssize_t n;

	(void)state;
	assert_true(fd >= 0);
	cf_log_set_stderr_fd(fd);
	assert_int_equal(rw_rules_check(NULL), 0);
	assert_int_equal(rw_rules_check("-coalesce,+coalesce,coalesce"), 0);
	assert_int_equal(rw_rules_check("+batch-cpy,-coalesce,nosuch"), 2);
	assert_int_equal(rw_rules_check("-coalesc"), 1);
	cf_log_set_stderr_fd(2);
	n = pread(fd, text, sizeof(text) - 1, 0);
	assert_true(n > 0);
	text[n] = 0;
	close(fd);
	unlink(path);
	fputs(text, stderr);
	assert_non_null(strstr(text, "] W rewriter.c:"));
	assert_non_null(strstr(text, "CUFOLD_RULES=+batch-cpy,-coalesce,nosuch: unknown rules batch-cpy, nosuch ignored "
				     "(known: "));
	assert_non_null(strstr(text, "CUFOLD_RULES=-coalesc: unknown rule coalesc ignored (known: "));
	assert_non_null(strstr(text, "coalesce"));
	for (char *p = text; *p; p++)
		lines += *p == '\n';
	assert_int_equal(lines, 2); /* one per value with unknown names */
}

static void test_registered_run(void **state)
{
	/* through the registered list: opt 0 changes nothing, "-coalesce" neither */
	struct cap_op w[2];
	const struct cap_op *wp[2] = { &w[0], &w[1] };
	struct rw_config c0 = { 0, NULL, NULL, NULL }, off = { 1, "-coalesce", NULL, NULL };
	struct rw_plan *p;

	(void)state;
	memset(w, 0, sizeof(w));
	p = rw_rewrite(wp, 2, NULL, &c0, NULL, 0);
	assert_non_null(p);
	assert_true(rw_plan_is_identity(p));
	rw_plan_destroy(p);
	p = rw_rewrite(wp, 2, NULL, &off, NULL, 0);
	assert_non_null(p);
	assert_true(rw_plan_is_identity(p));
	rw_plan_destroy(p);
	p = rw_rewrite(wp, 2, NULL, NULL, NULL, 0); /* no configuration: no rules */
	assert_non_null(p);
	assert_true(rw_plan_is_identity(p));
	rw_plan_destroy(p);
	p = rw_rewrite(wp, 0, NULL, &off, NULL, 0);
	assert_non_null(p);
	assert_int_equal(p->nnodes, 0);
	rw_plan_destroy(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_benefit_then_name, setup),
		cmocka_unit_test_setup(test_erase, setup),
		cmocka_unit_test_setup(test_failing_rule_is_identity, setup),
		cmocka_unit_test_setup(test_never_settles, setup),
		cmocka_unit_test(test_registered),
		cmocka_unit_test(test_enabled),
		cmocka_unit_test(test_rules_check),
		cmocka_unit_test(test_registered_run),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
