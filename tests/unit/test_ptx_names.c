/* test_ptx_names.c - the name tables of driver/ptx.h (driver/ptx_names.c): every type's name
 * reads back to the same type with the size PTX gives it, non-types and out-of-range values give
 * NONE / "" (never NULL), every special register has a name, and the modifier and function
 * lookups find what is there and nothing else. tests layer (cmocka, libcufold.a). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "driver/ptx.h"

/* Each type's name parses back to it; the sizes are PTX's (fails on a swapped table row). */
static void test_types_round_trip(void **state)
{
	static const struct { enum ptx_type t; const char *name; unsigned bytes; } want[] = {
		{ PTX_T_PRED, "pred", 0 }, { PTX_T_B8, "b8", 1 }, { PTX_T_B128, "b128", 16 },
		{ PTX_T_U16, "u16", 2 }, { PTX_T_S64, "s64", 8 }, { PTX_T_F16X2, "f16x2", 4 },
		{ PTX_T_BF16, "bf16", 2 }, { PTX_T_F32, "f32", 4 }, { PTX_T_F64, "f64", 8 },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		assert_string_equal(ptx_type_name(want[i].t), want[i].name);
		assert_int_equal(ptx_type_bytes(want[i].t), want[i].bytes);
		assert_int_equal(ptx_type_from_name(want[i].name), want[i].t);
	}
	for (unsigned t = PTX_T_PRED; t <= PTX_T_F64; t++)
		assert_int_equal(ptx_type_from_name(ptx_type_name((enum ptx_type)t)), t);
}

static void test_types_refused(void **state)
{
	(void)state;
	assert_int_equal(ptx_type_from_name("global"), PTX_T_NONE);
	assert_int_equal(ptx_type_from_name(""), PTX_T_NONE);
	assert_int_equal(ptx_type_from_name(NULL), PTX_T_NONE);
	assert_int_equal(ptx_type_from_name("u3"), PTX_T_NONE);
	assert_string_equal(ptx_type_name((enum ptx_type)200), "");
	assert_int_equal(ptx_type_bytes((enum ptx_type)200), 0);
}

static void test_specials_named(void **state)
{
	(void)state;
	for (unsigned s = 0; s < PTX_SR_COUNT; s++)
		assert_true(ptx_special_name((enum ptx_special)s)[0] == '%');
	assert_string_equal(ptx_special_name(PTX_SR_CTAID_Y), "%ctaid.y");
	assert_string_equal(ptx_special_name(PTX_SR_LANEMASK_LT), "%lanemask_lt");
	assert_string_equal(ptx_special_name(PTX_SR_COUNT), "");
}

static void test_lookups(void **state)
{
	struct ptx_func funcs[2] = { { .name = "k0" }, { .name = "helper" } };
	struct ptx_module m = { .funcs = funcs, .nfuncs = 2 };
	struct ptx_insn in = { .opcode = "ld", .mods = { "global", "nc", "u32" }, .nmods = 3 };
	(void)state;
	assert_int_equal(ptx_func_index(&m, "helper"), 1);
	assert_ptr_equal(ptx_find_func(&m, "k0"), &funcs[0]);
	assert_int_equal(ptx_func_index(&m, "k"), PTX_NONE);
	assert_null(ptx_find_func(&m, "absent"));
	assert_true(ptx_insn_has_mod(&in, "nc"));
	assert_false(ptx_insn_has_mod(&in, "shared"));
	in.nmods = 2; /* a modifier past nmods is not the instruction's */
	assert_false(ptx_insn_has_mod(&in, "u32"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_types_round_trip),
		cmocka_unit_test(test_types_refused),
		cmocka_unit_test(test_specials_named),
		cmocka_unit_test(test_lookups),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
