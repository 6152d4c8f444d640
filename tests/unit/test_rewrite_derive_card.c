/* test_rewrite_derive_card.c - the refusal screen of the PTX-derived card (rewrite/derive_card.c,
 * first increment): each construct the contract refuses is refused with its reason (calls,
 * textures, module .global variables, struct parameters as "indirect"), bad arguments and
 * unknown kernels get their codes, and a clean kernel gets its card. Modules are built by
 * hand, so the test does not depend on the parser. tests layer (cmocka, libcufold.a; no driver). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/errors.h"
#include "rewrite/derive_card.h"

/* One hand-built module: an entry "k" with one instruction and one parameter, a .func "f",
 * and a module .global variable "g". */
struct fixture {
	struct ptx_module m;
	struct ptx_func funcs[2];
	struct ptx_var params[1];
	struct ptx_var gvars[1];
	struct ptx_insn insns[1];
	char card[256];
	char why[256];
};

static void build(struct fixture *fx, const char *opcode, uint64_t param_size, bool param_is_ptr)
{
	memset(fx, 0, sizeof(*fx));
	fx->params[0] = (struct ptx_var){ .name = "k_param_0", .space = PTX_SPACE_PARAM,
					  .type = param_is_ptr ? PTX_T_U64 : PTX_T_B8,
					  .is_ptr = param_is_ptr, .size = param_size };
	fx->gvars[0] = (struct ptx_var){ .name = "g", .space = PTX_SPACE_GLOBAL, .type = PTX_T_U32,
					 .size = 4 };
	fx->insns[0] = (struct ptx_insn){ .opcode = opcode, .guard = PTX_NONE, .line = 7, .vec = 1 };
	fx->funcs[0] = (struct ptx_func){ .name = "f", .is_entry = false };
	fx->funcs[1] = (struct ptx_func){ .name = "k", .is_entry = true, .params = fx->params,
					  .nparams = 1, .insns = fx->insns, .ninsns = 1 };
	fx->m = (struct ptx_module){ .funcs = fx->funcs, .nfuncs = 2, .vars = fx->gvars,
				     .nvars = 1, .address_size = 64 };
}

static int derive(struct fixture *fx, const char *kernel)
{
	strcpy(fx->card, "stale");
	return rw_card_derive(&fx->m, kernel, fx->card, sizeof(fx->card), fx->why, sizeof(fx->why));
}

static void test_arguments(void **state)
{
	struct fixture fx;

	(void)state;
	build(&fx, "ret", 8, true);
	assert_int_equal(rw_card_derive(NULL, "k", fx.card, 1, NULL, 0), -CF_EINVAL);
	assert_int_equal(rw_card_derive(&fx.m, NULL, fx.card, 1, NULL, 0), -CF_EINVAL);
	assert_int_equal(rw_card_derive(&fx.m, "k", fx.card, 1, NULL, 4), -CF_EINVAL);
	assert_int_equal(derive(&fx, "nope"), -CF_ENOENT);
	assert_int_equal(derive(&fx, "f"), -CF_ENOENT); /* a .func is not a kernel */
}

static void test_refuses_call(void **state)
{
	struct fixture fx;

	(void)state;
	build(&fx, "call", 8, true);
	assert_int_equal(derive(&fx, "k"), -CF_ENOSYS);
	assert_non_null(strstr(fx.why, "line 7: calls a function"));
	assert_string_equal(fx.card, "");
}

/* A call to a device function with a body and no memory access is no effect: the kernel gets a
 * card; the same call to a declaration only (vprintf, cudaLaunchDevice, grid sync) is refused. */
static void test_pure_call_allowed(void **state)
{
	struct fixture fx;

	(void)state;
	build(&fx, "call", 8, true);
	fx.insns[0].nops = 1;
	fx.insns[0].ops[0] = (struct ptx_operand){ .kind = PTX_OP_SYM, .scope = PTX_SCOPE_FUNC, .index = 0,
						   .reg = PTX_NONE };
	assert_int_equal(derive(&fx, "k"), 0);
	fx.funcs[0].is_decl = true;
	assert_int_equal(derive(&fx, "k"), -CF_ENOSYS);
	assert_non_null(strstr(fx.why, "calls a function"));
}

static void test_refuses_texture(void **state)
{
	struct fixture fx;

	(void)state;
	build(&fx, "tex", 8, true);
	assert_int_equal(derive(&fx, "k"), -CF_ENOSYS);
	assert_non_null(strstr(fx.why, "texture"));
}

static void test_refuses_module_variable(void **state)
{
	struct fixture fx;

	(void)state;
	build(&fx, "ld", 8, true);
	fx.insns[0].nops = 2;
	fx.insns[0].ops[1] = (struct ptx_operand){ .kind = PTX_OP_ADDR, .scope = PTX_SCOPE_GLOBAL,
						   .index = 0, .reg = PTX_NONE };
	assert_int_equal(derive(&fx, "k"), -CF_ENOSYS);
	assert_non_null(strstr(fx.why, "module variable g"));
}

/* A by-value struct parameter is no longer refused as such: pointers it holds at fixed
 * offsets become `field` lines; one never read is an opaque block. */
static void test_struct_param_gets_card(void **state)
{
	struct fixture fx;

	(void)state;
	build(&fx, "ret", 16, false);
	assert_int_equal(derive(&fx, "k"), 0);
	assert_non_null(strstr(fx.card, "param p0 struct 16"));
}

/* A kernel past the screen gets a card: its one parameter, never dereferenced, is a plain u64,
 * and a card that does not fit is -CF_ERANGE rather than a truncated card. */
static void test_clean_kernel_gets_card(void **state)
{
	struct fixture fx;

	(void)state;
	build(&fx, "ret", 8, true);
	assert_int_equal(derive(&fx, "k"), 0);
	assert_non_null(strstr(fx.card, "kernel k\n"));
	assert_non_null(strstr(fx.card, "  param p0 u64\n"));
	assert_non_null(strstr(fx.card, "end\n"));
	assert_int_equal(rw_card_derive(&fx.m, "k", fx.card, 8, fx.why, sizeof(fx.why)), -CF_ERANGE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_arguments),
		cmocka_unit_test(test_refuses_call),
		cmocka_unit_test(test_pure_call_allowed),
		cmocka_unit_test(test_refuses_texture),
		cmocka_unit_test(test_refuses_module_variable),
		cmocka_unit_test(test_struct_param_gets_card),
		cmocka_unit_test(test_clean_kernel_gets_card),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
