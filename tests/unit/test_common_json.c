/* test_common_json.c - the JSON writer: commas placed by the writer at every depth, keys and
 * strings through the one escaper (quotes, backslashes, control bytes, bytes >= 0x7f; long
 * strings), numbers (u64 extremes, negative, doubles with fixed decimals, NaN as null), the
 * layout of cf_json_nl, and a buffer that fills: cut, NUL-terminated, failed. tests layer
 * (cmocka, libcufold.a). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/json.h"

static void test_nesting_and_commas(void **state)
{
	char buf[512];
	struct cf_json j;

	(void)state;
	cf_json_init_buf(&j, buf, sizeof(buf));
	cf_json_obj_begin(&j);
	cf_json_ku64(&j, "a", 1);
	cf_json_key(&j, "b");
	cf_json_arr_begin(&j);
	cf_json_u64(&j, 2);
	cf_json_obj_begin(&j);
	cf_json_obj_end(&j);
	cf_json_arr_begin(&j);
	cf_json_arr_end(&j);
	cf_json_null(&j);
	cf_json_arr_end(&j);
	cf_json_kbool(&j, "c", false);
	cf_json_kstr(&j, "d", NULL);
	cf_json_key(&j, "e");
	cf_json_obj_begin(&j);
	cf_json_key(&j, "f");
	cf_json_i64(&j, INT64_MIN);
	cf_json_ku64(&j, "g", UINT64_MAX);
	cf_json_obj_end(&j);
	cf_json_obj_end(&j);
	assert_false(cf_json_failed(&j));
	assert_string_equal(buf, "{\"a\": 1, \"b\": [2, {}, [], null], \"c\": false, \"d\": null, "
				 "\"e\": {\"f\": -9223372036854775808, \"g\": 18446744073709551615}}");
}

static void test_escapes(void **state)
{
	char buf[2048], big[600], out[16];
	struct cf_json j;

	(void)state;
	cf_json_init_buf(&j, buf, sizeof(buf));
	cf_json_obj_begin(&j);
	cf_json_kstr(&j, "q\"uote", "back\\slash \x01\x1b[31m\t\x7f\xc3\xa9");
	cf_json_obj_end(&j);
	assert_string_equal(buf, "{\"q\\\"uote\": \"back\\\\slash \\u0001\\u001b[31m\\u0009\\u007f\\u00c3\\u00a9\"}");
	/* longer than the writer's stack copy: escaped piece by piece, same rule */
	memset(big, '"', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	cf_json_init_buf(&j, buf, sizeof(buf));
	cf_json_str(&j, big);
	assert_false(cf_json_failed(&j));
	assert_int_equal(strlen(buf), 2 + 2 * 599);
	assert_memory_equal(buf, "\"\\\"\\\"", 5);
	/* the escaper alone: the needed length, and a cut at a whole escape */
	assert_int_equal(cf_json_escape(out, sizeof(out), "a\x01"), 7);
	assert_string_equal(out, "a\\u0001");
	assert_int_equal(cf_json_escape(out, 5, "ab\x01"), 8);
	assert_string_equal(out, "ab");
	assert_int_equal(cf_json_escape(out, sizeof(out), NULL), 0);
	assert_string_equal(out, "");
}

static void test_numbers(void **state)
{
	char buf[256];
	struct cf_json j;

	(void)state;
	cf_json_init_buf(&j, buf, sizeof(buf));
	cf_json_arr_begin(&j);
	cf_json_f64(&j, 12.345, 1);
	cf_json_f64(&j, 0.0005, 3);
	cf_json_f64(&j, NAN, 1);
	cf_json_f64(&j, INFINITY, 1);
	cf_json_f64(&j, -2.5, 0);
	cf_json_arr_end(&j);
	assert_string_equal(buf, "[12.3, 0.001, null, null, -2]");
}

static void test_layout(void **state)
{
	char buf[256];
	struct cf_json j;

	(void)state;
	cf_json_init_buf(&j, buf, sizeof(buf));
	cf_json_obj_begin(&j);
	cf_json_ku64(&j, "a", 1);
	cf_json_nl(&j, 1);
	cf_json_key(&j, "b");
	cf_json_arr_begin(&j);
	cf_json_nl(&j, 2);
	cf_json_u64(&j, 1);
	cf_json_nl(&j, 2);
	cf_json_u64(&j, 2);
	cf_json_nl(&j, 1);
	cf_json_arr_end(&j);
	cf_json_nl(&j, 0);
	cf_json_obj_end(&j);
	assert_string_equal(buf, "{\"a\": 1,\n \"b\": [\n  1,\n  2\n ]\n}");
}

static void test_full_buffer(void **state)
{
	char buf[16];
	struct cf_json j;

	(void)state;
	cf_json_init_buf(&j, buf, sizeof(buf));
	cf_json_obj_begin(&j);
	cf_json_kstr(&j, "key", "a value that does not fit");
	cf_json_obj_end(&j);
	assert_true(cf_json_failed(&j));
	assert_int_equal(strlen(buf), sizeof(buf) - 1);
	assert_memory_equal(buf, "{\"key\": \"a valu", 15);
}

static void test_file(void **state)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	struct cf_json j;

	(void)state;
	assert_non_null(f);
	cf_json_init_file(&j, f);
	cf_json_obj_begin(&j);
	cf_json_kstr(&j, "k", "v");
	cf_json_key(&j, "n");
	cf_json_raw(&j, "[1,2]", 5);
	cf_json_obj_end(&j);
	assert_false(cf_json_failed(&j));
	fclose(f);
	assert_string_equal(text, "{\"k\": \"v\", \"n\": [1,2]}");
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nesting_and_commas), cmocka_unit_test(test_escapes),
		cmocka_unit_test(test_numbers),            cmocka_unit_test(test_layout),
		cmocka_unit_test(test_full_buffer),        cmocka_unit_test(test_file),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
