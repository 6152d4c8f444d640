/* test_rewrite_cards.c - kernel cards: the parser (good cards, every kind of malformed card with its
 * line and reason, override order, CUFOLD_CARDS with missing and bad files, FIFOs and
 * devices), expressions, name matching (mangled names), the access set of every built-in card
 * against hand-computed spans, table decoding (cat, split, cufold's batch tables), and cufold's
 * embedded kernels loaded once per context through the real-driver table. tests layer (cmocka,
 * libcufold.a; the last test needs the software device on LD_LIBRARY_PATH, as tests/run sets
 * it). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/config.h"
#include "common/errors.h"
#include "common/log.h"
#include "driver/real.h"
#include "rewrite/cards.h"
#include "rewrite/kernels.h"
#include "shim/shim.h"

/* ------------------------------------------------------------------ log capture */

static char log_path[64];
static int log_fd = -1;

static void log_begin(void)
{
	snprintf(log_path, sizeof(log_path), "/tmp/cufold-test-cards-XXXXXX");
	log_fd = mkstemp(log_path);
	assert_true(log_fd >= 0);
	cf_log_set_fd(log_fd);
}

/* Stop capturing; the lines logged meanwhile, malloc'd (echoed to stderr for the test log). */
static char *log_end(void)
{
	off_t n = lseek(log_fd, 0, SEEK_END);
	char *text = calloc(1, (size_t)(n > 0 ? n : 0) + 1);

	assert_non_null(text);
	assert_int_equal(pread(log_fd, text, (size_t)n, 0), n);
	cf_log_set_fd(-1);
	close(log_fd);
	unlink(log_path);
	fputs(text, stderr);
	return text;
}

static int count_lines_with(const char *text, const char *needle)
{
	int n = 0;

	for (const char *line = text; line && *line;) {
		const char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);

		if (memmem(line, len, needle, strlen(needle)))
			n++;
		line = end ? end + 1 : NULL;
	}
	return n;
}

static int count_lines(const char *text)
{
	int n = 0;

	for (; *text; text++)
		n += *text == '\n';
	return n;
}

/* Parse text into a fresh set; the number rejected. */
static int parse(struct rw_cards **set, const char *text)
{
	*set = rw_cards_create();
	assert_non_null(*set);
	return rw_cards_parse(*set, "t.cards", text, strlen(text));
}

/* ------------------------------------------------------------------ parameter buffers */

/* Builds a packed parameter buffer with each parameter at its natural alignment (what
 * cuFuncGetParamInfo reports for these kernels). */
struct pbuf {
	unsigned char buf[2048];        /* the bytes */
	size_t size;                    /* used */
	struct rw_param_info info[40];  /* layout */
	unsigned n;                     /* parameters */
};

static void pb_add(struct pbuf *b, const void *p, size_t size, size_t align)
{
	b->size = (b->size + align - 1) & ~(align - 1);
	assert_true(b->size + size <= sizeof(b->buf));
	memcpy(b->buf + b->size, p, size);
	b->info[b->n].offset = b->size;
	b->info[b->n].size = size;
	b->n++;
	b->size += size;
}

static void pb_ptr(struct pbuf *b, uint64_t v)
{
	pb_add(b, &v, 8, 8);
}

static void pb_i32(struct pbuf *b, int32_t v)
{
	pb_add(b, &v, 4, 4);
}

static void pb_f32(struct pbuf *b, float v)
{
	pb_add(b, &v, 4, 4);
}

static struct rw_launch_args pb_args(const struct pbuf *b, unsigned gx, unsigned gy, unsigned gz,
				     unsigned bx)
{
	struct rw_launch_args a = {
		.buf = b->buf, .buf_size = b->size, .params = b->info, .nparams = b->n,
		.grid = { gx, gy, gz }, .block = { bx, 1, 1 },
	};

	return a;
}

/* Evaluate the built-in card for name over b. */
static void access_of(const char *name, const struct pbuf *b, unsigned gx, unsigned gy,
		      unsigned gz, unsigned bx, struct rw_access_set *set)
{
	const struct rw_card *card = rw_card_lookup(name);
	struct rw_launch_args a = pb_args(b, gx, gy, gz, bx);

	if (!card)
		fail_msg("no built-in card for %s", name);
	assert_int_equal(rw_card_access(card, &a, set), 0);
}

static void expect_acc(const struct rw_access_set *set, unsigned i, uint64_t addr, uint64_t bytes,
		       unsigned flags, unsigned param)
{
	if (i >= set->n)
		fail_msg("access %u missing (%u accesses)", i, set->n);
	if (set->acc[i].addr != addr || set->acc[i].bytes != bytes || set->acc[i].flags != flags ||
	    set->acc[i].param != param)
		fail_msg("access %u: addr 0x%llx bytes %llu flags %u param %u; want 0x%llx %llu %u %u", i,
			 (unsigned long long)set->acc[i].addr, (unsigned long long)set->acc[i].bytes,
			 set->acc[i].flags, set->acc[i].param, (unsigned long long)addr,
			 (unsigned long long)bytes, flags, param);
}

/* Device addresses (never dereferenced: cards are pure computation). */
#define A0 0x7f0000001000ull
#define A1 0x7f0000200000ull
#define A2 0x7f0000300000ull
#define A3 0x7f0000400000ull
#define A4 0x7f0000500000ull

#define R RW_ACC_READ
#define W RW_ACC_WRITE
#define RWA (RW_ACC_READ | RW_ACC_WRITE)
#define UNK RW_ACC_UNKNOWN

/* ------------------------------------------------------------------ the parser */

static void test_builtin_cards_all_load(void **state)
{
	static const char *const own[] = {
		"cufold_batch_copy", "cufold_batch_memset", "cufold_batch_copy_buf", "cufold_batch_memset_buf",
		"cufold_batch_copy2d",
	};
	static const char *const names[] = {
		"fill", "copy", "axpy", "add", "mul", "scale", "relu",
		"tanh_kernel", "plugin_square", "gemm", "reduce_sum", "embedding_bag_sum",
		"layernorm_row", "softmax_row", "cat", "split_copy",
		"ncclDevKernel_AllReduce_Sum_f32_RING_LL", "bias_add", "bias_grad", "relu_backward",
		"tanh_backward", "gemm_ex", "embedding_bag_backward", "dot_interaction",
		"dot_interaction_backward", "concat2_rows", "split2_rows", "layernorm_backward_row",
		"layernorm_param_grad", "softmax_backward_row", "bce_logits", "mse_loss",
	};
	struct rw_cards *set = rw_cards_create();
	char *log;

	(void)state;
	log_begin();
	assert_int_equal(rw_cards_add_builtin(set), 0);
	log = log_end();
	assert_int_equal(count_lines(log), 0);
	free(log);
	/* built in: cufold's own kernels, and no test kernel (a common name must not be believed
	 * for whatever kernel a program calls by it) */
	for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++) {
		const struct rw_card *c = rw_cards_find(set, own[i]);

		if (!c)
			fail_msg("no built-in card for %s", own[i]);
		assert_string_equal(rw_card_file(c), "builtin_cards.txt");
	}
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (rw_cards_find(set, names[i]))
			fail_msg("%s has a built-in card", names[i]);
	/* the test kernels' cards load from their file without a warning */
	log_begin();
	assert_int_equal(rw_cards_load_file(set, TEST_CARDS_FILE), 0);
	log = log_end();
	assert_int_equal(count_lines(log), 0);
	free(log);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		const struct rw_card *c = rw_cards_find(set, names[i]);

		if (!c)
			fail_msg("no card for %s in %s", names[i], TEST_CARDS_FILE);
		assert_string_equal(rw_card_file(c), TEST_CARDS_FILE);
	}
	assert_null(rw_cards_find(set, "unknown_kernel"));
	assert_null(rw_cards_find(set, "fill_"));
	/* properties as the kernels are written */
	assert_int_equal(rw_card_flags(rw_cards_find(set, "fill")),
			 RW_CARD_ELEMENTWISE | RW_CARD_PURE | RW_CARD_COUNT);
	assert_int_equal(rw_card_flags(rw_cards_find(set, "axpy")), RW_CARD_ELEMENTWISE | RW_CARD_COUNT);
	assert_int_equal(rw_card_flags(rw_cards_find(set, "gemm")), 0);
	assert_int_equal(rw_card_flags(rw_cards_find(set, "cat")), RW_CARD_CAT | RW_CARD_PURE);
	assert_int_equal(rw_card_flags(rw_cards_find(set, "split_copy")), RW_CARD_SPLIT | RW_CARD_PURE);
	assert_int_equal(rw_card_flags(rw_cards_find(set, "cufold_batch_copy_buf")), RW_CARD_INDIRECT);
	assert_int_equal(rw_card_flags(rw_cards_find(set, "bias_add")), RW_CARD_COUNT);
	assert_int_equal(rw_card_count_param(rw_cards_find(set, "axpy")), 3);
	assert_int_equal(rw_card_count_param(rw_cards_find(set, "bias_add")), -1);
	assert_int_equal(rw_card_param_count(rw_cards_find(set, "gemm_ex")), 13);
	assert_int_equal(rw_card_param_index(rw_cards_find(set, "gemm_ex"), "sc"), 12);
	assert_int_equal(rw_card_param_index(rw_cards_find(set, "gemm_ex"), "zz"), -1);
	rw_cards_destroy(set);
}

static const char good_text[] =
	"# a comment line\n"
	"\n"
	"kernel saxpy _Z5saxpy*   # trailing comment\n"
	"  param y ptr rw n * 4\n"
	"  param x ptr r (n)*4\n"
	"  param a f32\n"
	"  param n i32\n"
	"  param flag u32\n"
	"  param big i64\n"
	"  param ubig u64\n"
	"  param d f64\n"
	"  param unused ptr none\n"
	"  count n\n"
	"  elementwise\n"
	"  pure\n"
	"end\n"
	"kernel\tgather\r\n"
	"  param t struct 48\n"
	"  param out ptr w table\n"
	"  cat t ptr=0+8i len=32+4i:u32 count=44 max=4 unit=2\n"
	"end\n"
	"kernel scatter\n"
	"  param src ptr r table\n"
	"  param t struct 48\n"
	"  split t ptr=0+8i len=32+4i count=44:i32 max=4\n"
	"end\n"
	"kernel fwd\n"
	"  param x ptr r later*2\n"   /* a span may name a parameter declared below */
	"  param later i32\n"
	"  indirect\n"
	"end\n"
	"kernel named\n"              /* keywords of a span are still parameter names */
	"  param table ptr r unknown\n"
	"  param unknown i32\n"
	"  param p ptr w (unknown)*4\n"
	"end\n";

static void test_good_cards(void **state)
{
	struct rw_cards *set;
	const struct rw_card *c;
	char *log;

	(void)state;
	log_begin();
	assert_int_equal(parse(&set, good_text), 0);
	log = log_end();
	assert_int_equal(count_lines(log), 0);
	free(log);
	c = rw_cards_find(set, "saxpy");
	assert_non_null(c);
	assert_string_equal(rw_card_name(c), "saxpy");
	assert_string_equal(rw_card_file(c), "t.cards");
	assert_int_equal(rw_card_line(c), 3);
	assert_int_equal(rw_card_param_count(c), 9);
	assert_int_equal(rw_card_count_param(c), 3);
	assert_int_equal(rw_card_flags(c), RW_CARD_ELEMENTWISE | RW_CARD_PURE | RW_CARD_COUNT);
	assert_ptr_equal(rw_cards_find(set, "_Z5saxpyPfPKffi"), c);
	c = rw_cards_find(set, "gather");
	assert_non_null(c);
	assert_int_equal(rw_card_flags(c), RW_CARD_CAT);
	assert_int_equal(rw_card_line(c), 17);
	assert_int_equal(rw_card_flags(rw_cards_find(set, "scatter")), RW_CARD_SPLIT);
	assert_int_equal(rw_card_flags(rw_cards_find(set, "fwd")), RW_CARD_INDIRECT);
	assert_int_equal(rw_cards_count(set), 5);
	{
		struct pbuf b;
		struct rw_access_set s;
		struct rw_launch_args a;

		memset(&b, 0, sizeof(b));
		pb_ptr(&b, 0x1000), pb_i32(&b, 6), pb_ptr(&b, 0x2000);
		a = pb_args(&b, 1, 1, 1, 1);
		assert_int_equal(rw_card_access(rw_cards_find(set, "named"), &a, &s), 0);
		assert_int_equal(s.n, 2);
		assert_int_equal(s.acc[0].flags, RW_ACC_READ | RW_ACC_UNKNOWN);
		assert_int_equal(s.acc[1].bytes, 24);
	}
	rw_cards_destroy(set);
}

struct bad_case {
	const char *text;               /* one file */
	unsigned line;                  /* line the warning names */
	const char *reason;             /* part of the reason */
};

#define K "kernel k\n"              /* line 1 of most cases */

static const struct bad_case bad_cases[] = {
	{ K "  frob x\nend\n", 2, "unknown statement 'frob'" },
	{ "param x ptr r 4\n", 1, "'param' outside a card" },
	{ "end\n", 1, "'end' outside a card" },
	{ "kernel\nparam x i32\nend\n", 1, "needs at least one name pattern" },
	{ "kernel a b c d e f g h i\nend\n", 1, "more than 8 patterns" },
	{ K "  param n i32\n", 1, "no 'end' before the end of the file" },
	{ K "  param x i32\n  param x i32\nend\n", 3, "parameter 'x' declared twice" },
	{ K "  param x float\nend\n", 2, "unknown type 'float'" },
	{ K "  param x\nend\n", 2, "needs a name and a type" },
	{ K "  param 1x i32\nend\n", 2, "bad parameter name '1x'" },
	{ K "  param gx i32\nend\n", 2, "'gx' is a reserved word" },
	{ K "  param i i32 7\nend\n", 2, "unexpected '7' after the type of 'i'" },
	{ K "  param p ptr\nend\n", 2, "needs an access" },
	{ K "  param p ptr x 4\nend\n", 2, "needs an access" },
	{ K "  param p ptr r\nend\n", 2, "needs a span" },
	{ K "  param p ptr none 4\nend\n", 2, "access none has no span" },
	{ K "  param s struct\nend\n", 2, "'struct' needs one size" },
	{ K "  param s struct 0\nend\n", 2, "'struct' needs one size" },
	{ K "  param s struct 40000\nend\n", 2, "'struct' needs one size" },
	{ K "  param p ptr r n*\n  param n i32\nend\n", 2, "span of 'p': expression ends early" },
	{ K "  param p ptr r (n*4\n  param n i32\nend\n", 2, "missing ')'" },
	{ K "  param p ptr r n*4)\n  param n i32\nend\n", 2, "unexpected ')'" },
	{ K "  param p ptr r m*4\n  param n i32\nend\n", 2, "unknown name 'm'" },
	{ K "  param p ptr r a*4\n  param a f32\nend\n", 2, "parameter 'a' is not an integer" },
	{ K "  param p ptr r q*4\n  param q ptr r 4\nend\n", 2, "parameter 'q' is not an integer" },
	{ K "  param p ptr r 4$\nend\n", 2, "unexpected '$'" },
	{ K "  param p ptr r 99999999999999999999\nend\n", 2, "bad number" },
	{ K "  param p ptr r 4x\nend\n", 2, "bad number" },
	{ K "  param p ptr r min(4)\nend\n", 2, "min() takes two arguments" },
	{ K "  param n i32\n  count n\n  count n\nend\n", 4, "'count' given twice" },
	{ K "  param n i32\n  count\nend\n", 3, "'count' needs an expression" },
	{ K "  param n i32\n  count m\nend\n", 3, "count: unknown name 'm'" },
	{ K "  param n i32\n  elementwise\nend\n", 3, "elementwise needs 'count NAME'" },
	{ K "  param r i32\n  param c i32\n  count r*c\n  elementwise\nend\n", 5,
	  "elementwise needs 'count NAME'" },
	{ K "  pure yes\nend\n", 2, "'pure' takes no argument" },
	{ K "  end now\n", 2, "'end' takes no argument" },
	{ K "  param t i32\n  table t r ptr=0+8i len=0+4i count=0 max=1\nend\n", 3,
	  "table parameter 't' is not a struct" },
	{ K "  table t r ptr=0+8i len=0+4i count=0 max=1\nend\n", 2, "table parameter 't' is not declared" },
	{ K "  param t struct 16\n  table t r ptr=0+8i len=8+4i max=1\nend\n", 3,
	  "needs ptr=, len=, count= and max=" },
	{ K "  param t struct 16\n  table t r ptr=0+8i len=8+4i count=12 max=1 size=3\nend\n", 3,
	  "unknown table key 'size'" },
	{ K "  param t struct 16\n  table t r ptr=0+8 len=8+4i count=12 max=1\nend\n", 3,
	  "bad value '0+8' for table key 'ptr'" },
	{ K "  param t struct 16\n  table t r ptr=0+8i len=8+4i:f32 count=12 max=1\nend\n", 3,
	  "bad value '8+4i:f32' for table key 'len'" },
	{ K "  param t struct 16\n  table t r ptr=0+8i len=8+4i count=12 max=0\nend\n", 3,
	  "bad value '0' for table key 'max'" },
	{ K "  param t struct 16\n  table t r ptr=0+8i len=8+4i count=12 max=3\nend\n", 3,
	  "table fields reach past the 16 bytes of 't'" },
	{ K "  param t struct 16\n  table t r ptr=0+8i len=8+4i:i64 count=12 max=2\nend\n", 3,
	  "table fields reach past the 16 bytes of 't'" },
	{ K "  param t struct 16\n  table t x ptr=0+8i len=8+4i count=12 max=1\nend\n", 3,
	  "a table's access is r, w or rw" },
	{ K "  param t struct 16\n  table t r ptr=0+8i len=8+4i count=12 max=1 oops\nend\n", 3,
	  "expected key=value" },
	{ K "  param t struct 16\n  cat t ptr=0+8i len=8+4i count=12 max=1\nend\n", 3,
	  "cat needs one pointer with access w and span table" },
	{ K "  param t struct 16\n  param o ptr r table\n  cat t ptr=0+8i len=8+4i count=12 max=1\nend\n", 4,
	  "cat needs one pointer with access w and span table" },
	{ K "  param t struct 16\n  param o ptr w table\n  split t ptr=0+8i len=8+4i count=12 max=1\nend\n", 4,
	  "split needs one pointer with access r and span table" },
	{ K "  param o ptr w table\nend\n", 1, "span table needs exactly one table" },
	{ K "  param t struct 16\n  param o ptr w table\n  param p ptr w table\n"
	    "  cat t ptr=0+8i len=8+4i count=12 max=1\nend\n", 1, "more than one pointer has span table" },
	{ K "  param t struct 16\n  param u struct 16\n"
	    "  cat t ptr=0+8i len=8+4i count=12 max=1\n  table u r ptr=0+8i len=8+4i count=12 max=1\nend\n",
	  4, "a cat or split card has exactly one table" },
	{ K "  param t struct 1024\n  table t r ptr=0+8i len=512+4i count=1020 max=40\n"
	    "  table t w ptr=0+8i len=512+4i count=1020 max=40\nend\n", 3, "more than 64 entries" },
	{ K "  param t struct 1024\n  table t r ptr=0+8i len=512+4i count=1020 max=65\nend\n", 3,
	  "bad value '65' for table key 'max'" },
};

static void test_every_malformed_card(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
		const struct bad_case *bc = &bad_cases[i];
		struct rw_cards *set;
		char where[32], *log;
		int rc;

		log_begin();
		rc = parse(&set, bc->text);
		log = log_end();
		snprintf(where, sizeof(where), "t.cards:%u: ", bc->line);
		if (rc != 1 || count_lines(log) != 1 || !strstr(log, where) || !strstr(log, bc->reason) ||
		    !strstr(log, "kernel card rejected"))
			fail_msg("case %zu: rejected %d; want 1 warning at line %u with '%s', got: %s", i, rc,
				 bc->line, bc->reason, log);
		assert_int_equal(rw_cards_count(set), 0);
		free(log);
		rw_cards_destroy(set);
	}
}

static void test_too_many_params_and_long_line(void **state)
{
	char text[4096], *log;
	size_t at = 0;
	struct rw_cards *set;

	(void)state;
	at += (size_t)snprintf(text + at, sizeof(text) - at, "kernel many\n");
	for (int i = 0; i < 33; i++)
		at += (size_t)snprintf(text + at, sizeof(text) - at, "param p%d i32\n", i);
	snprintf(text + at, sizeof(text) - at, "end\n");
	log_begin();
	assert_int_equal(parse(&set, text), 1);
	log = log_end();
	assert_int_equal(count_lines_with(log, "t.cards:34: kernel card rejected: more than 32 parameters"), 1);
	free(log);
	rw_cards_destroy(set);

	at = (size_t)snprintf(text, sizeof(text), "kernel long\n  param p ptr r ");
	memset(text + at, '1', 1100);
	snprintf(text + at + 1100, sizeof(text) - at - 1100, "\nend\nkernel ok\nend\n");
	log_begin();
	assert_int_equal(parse(&set, text), 1);
	log = log_end();
	assert_int_equal(count_lines_with(log, "t.cards:2: kernel card rejected: line longer than 1023"), 1);
	assert_int_equal(count_lines(log), 1);
	assert_non_null(rw_cards_find(set, "ok"));
	assert_null(rw_cards_find(set, "long"));
	free(log);
	rw_cards_destroy(set);
}

/* A bad card costs one warning and only itself: the cards around it load. */
static void test_rest_still_loads(void **state)
{
	static const char text[] =
		"kernel first\n  param n i32\nend\n"
		"kernel broken\n  param n i32\n  param p ptr r n*\n  param q bogus\n  frob\nend\n"
		"kernel unclosed\n  param n i32\n"
		"kernel second\n  param n i32\n  count n\nend\n"
		"stray one\nstray two\n"
		"kernel third\nend\n";
	struct rw_cards *set;
	char *log;

	(void)state;
	log_begin();
	assert_int_equal(parse(&set, text), 3);
	log = log_end();
	assert_int_equal(count_lines(log), 3);
	/* statements are checked as they come, the card as a whole at its end: the bad type on
	 * line 7 is found before the bad span on line 6 */
	assert_int_equal(count_lines_with(log, "t.cards:7: kernel card rejected: unknown type 'bogus'"), 1);
	assert_int_equal(count_lines_with(log, "t.cards:10: kernel card rejected: no 'end' before the next 'kernel' at line 12"), 1);
	assert_int_equal(count_lines_with(log, "t.cards:16: kernel card rejected: 'stray' outside a card"), 1);
	assert_int_equal(rw_cards_count(set), 3);
	assert_non_null(rw_cards_find(set, "first"));
	assert_non_null(rw_cards_find(set, "second"));
	assert_non_null(rw_cards_find(set, "third"));
	assert_null(rw_cards_find(set, "broken"));
	assert_null(rw_cards_find(set, "unclosed"));
	free(log);
	rw_cards_destroy(set);
}

/* A later card overrides an earlier one for the names both match, and says so at info. */
static void test_override_order(void **state)
{
	static const char a[] = "kernel foo bar\n  pure\nend\nkernel baz\nend\n";
	static const char b[] = "kernel foo\n  indirect\nend\n";
	static const char c[] = "kernel ba?\n  param n i32\n  count n\n  elementwise\nend\n";
	struct rw_cards *set = rw_cards_create();
	enum cf_log_level old = cf_log_get_level();
	char *log;

	(void)state;
	assert_int_equal(rw_cards_parse(set, "a.cards", a, strlen(a)), 0);
	assert_int_equal(rw_card_flags(rw_cards_find(set, "foo")), RW_CARD_PURE); /* cached ... */
	cf_log_set_level(CF_LOG_INFO);
	log_begin();
	assert_int_equal(rw_cards_parse(set, "b.cards", b, strlen(b)), 0);
	log = log_end();
	cf_log_set_level(old);
	assert_int_equal(count_lines_with(log, "b.cards:1: kernel card for 'foo' overrides the one at a.cards:1"), 1);
	free(log);
	/* ... and the cache was emptied by the new card */
	assert_int_equal(rw_card_flags(rw_cards_find(set, "foo")), RW_CARD_INDIRECT);
	assert_int_equal(rw_card_flags(rw_cards_find(set, "bar")), RW_CARD_PURE);
	assert_int_equal(rw_card_flags(rw_cards_find(set, "baz")), 0);
	/* a later, wider pattern wins too */
	assert_int_equal(rw_cards_parse(set, "c.cards", c, strlen(c)), 0);
	assert_int_equal(rw_card_flags(rw_cards_find(set, "bar")), RW_CARD_ELEMENTWISE | RW_CARD_COUNT);
	assert_int_equal(rw_card_flags(rw_cards_find(set, "baz")), RW_CARD_ELEMENTWISE | RW_CARD_COUNT);
	assert_int_equal(rw_card_flags(rw_cards_find(set, "foo")), RW_CARD_INDIRECT);
	rw_cards_destroy(set);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* CUFOLD_CARDS=missing:bad:good: one warning for the missing file, one for the bad card; the
 * built-in cards and every good card load. */
static void test_cards_path_list(void **state)
{
	char dir[] = "/tmp/cufold-test-cards-dir-XXXXXX", bad[128], good[128], missing[128];
	struct cf_config cfg;
	struct rw_cards *set;
	char *log;
	int rc;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(bad, sizeof(bad), "%s/bad.cards", dir);
	snprintf(good, sizeof(good), "%s/good.cards", dir);
	snprintf(missing, sizeof(missing), "%s/missing.cards", dir);
	write_file(bad, "kernel user_ok_1\nend\nkernel user_bad\n  param x wrong\nend\n");
	write_file(good, "kernel user_ok_2\n  pure\nend\nkernel fill\n  indirect\nend\n");
	cf_config_defaults(&cfg);
	snprintf(cfg.cards, sizeof(cfg.cards), "%s::%s:%s:", missing, bad, good);
	set = rw_cards_create();
	log_begin();
	rc = rw_cards__load_config(set, &cfg);
	log = log_end();
	assert_int_equal(rc, 2);
	assert_int_equal(count_lines(log), 2);
	assert_int_equal(count_lines_with(log, "missing.cards"), 1);
	assert_int_equal(count_lines_with(log, "cannot read"), 1);
	assert_int_equal(count_lines_with(log, "bad.cards:4: kernel card rejected: unknown type 'wrong'"), 1);
	assert_non_null(rw_cards_find(set, "user_ok_1"));
	assert_non_null(rw_cards_find(set, "user_ok_2"));
	assert_null(rw_cards_find(set, "user_bad"));
	assert_non_null(rw_cards_find(set, "cufold_batch_copy"));            /* built-in */
	assert_int_equal(rw_card_flags(rw_cards_find(set, "fill")), RW_CARD_INDIRECT); /* the user's */
	free(log);
	rw_cards_destroy(set);

	/* a directory is not a cards file */
	set = rw_cards_create();
	log_begin();
	assert_int_equal(rw_cards_load_file(set, dir), -CF_EIO);
	log = log_end();
	assert_int_equal(count_lines_with(log, "cannot read"), 1);
	free(log);
	rw_cards_destroy(set);

	unlink(bad);
	unlink(good);
	rmdir(dir);
}

/* Only regular files are read: a FIFO (which would block the program in open or read for
 * ever: the alarm turns that into a failure) and a character device are refused, each with one
 * warning naming CUFOLD_CARDS, the path and what it is; the next file still loads. */
static void test_cards_not_regular(void **state)
{
	char dir[] = "/tmp/cufold-test-cards-fifo-XXXXXX", fifo[128], good[128], list[300];
	struct rw_cards *set;
	char *log;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(fifo, sizeof(fifo), "%s/cards.fifo", dir);
	snprintf(good, sizeof(good), "%s/good.cards", dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	write_file(good, "kernel user_after_fifo\n  pure\nend\n");
	snprintf(list, sizeof(list), "%s:/dev/null:%s", fifo, good);
	alarm(20);
	set = rw_cards_create();
	log_begin();
	assert_int_equal(rw_cards_load_list(set, list), 2);
	log = log_end();
	alarm(0);
	assert_int_equal(count_lines(log), 2);
	assert_int_equal(count_lines_with(log, "CUFOLD_CARDS"), 2);
	assert_int_equal(count_lines_with(log, "cards.fifo: it is a FIFO, not a regular file"), 1);
	/* /dev/null is a character device, not "Is a directory" */
	assert_int_equal(count_lines_with(log, "/dev/null: it is a character device, not a regular file"), 1);
	assert_null(strstr(log, "directory"));
	assert_non_null(rw_cards_find(set, "user_after_fifo"));
	free(log);
	rw_cards_destroy(set);
	unlink(fifo);
	unlink(good);
	rmdir(dir);
}

/* The example and malformed files of tests/data/cards, as CUFOLD_CARDS would load them. */
static void test_data_files(void **state)
{
	static const struct {
		unsigned line;                  /* where malformed.cards says it fails */
		const char *reason;             /* part of the reason */
	} bad[] = {
		{ 11, "unknown type 'int'" },
		{ 16, "span of 'p': unknown name 'count'" },
		{ 20, "no 'end' before the next 'kernel' at line 23" },
		{ 31, "'pure' outside a card" },
		{ 36, "cat needs one pointer with access w and span table" },
	};
	const char *root = getenv("ROOT");
	char list[1024], where[64];
	struct rw_cards *set = rw_cards_create();
	struct rw_access_set s;
	struct rw_launch_args a;
	struct pbuf b;
	char *log;

	(void)state;
	snprintf(list, sizeof(list), "%s/tests/data/cards/example.cards:%s/tests/data/cards/malformed.cards",
		 root ? root : ".", root ? root : ".");
	log_begin();
	assert_int_equal(rw_cards_load_list(set, list), 5);
	log = log_end();
	assert_int_equal(count_lines(log), 5);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(where, sizeof(where), "malformed.cards:%u: kernel card rejected: ", bad[i].line);
		if (!strstr(log, where) || !strstr(strstr(log, where), bad[i].reason))
			fail_msg("no warning '%s%s' in: %s", where, bad[i].reason, log);
	}
	free(log);
	assert_int_equal(rw_cards_count(set), 6 + 3);
	assert_non_null(rw_cards_find(set, "good_before"));
	assert_non_null(rw_cards_find(set, "good_between"));
	assert_non_null(rw_cards_find(set, "good_after"));
	assert_null(rw_cards_find(set, "no_end"));
	assert_null(rw_cards_find(set, "bad_cat"));

	/* the example's cards, as a launch sees them */
	assert_non_null(rw_cards_find(set, "_ZN5mylib7vec_addIfEEvPT_PKS1_S4_i"));
	assert_ptr_equal(rw_cards_find(set, "_ZN5mylib7vec_addIdEEvPT_PKS1_S4_i"),
			 rw_cards_find(set, "vec_add"));
	assert_non_null(rw_cards_find(set, "row_bias_relu"));
	memset(&b, 0, sizeof(b));
	pb_ptr(&b, A0), pb_ptr(&b, A1), pb_f32(&b, 0.5f), pb_i32(&b, 1000);
	a = pb_args(&b, 2, 1, 1, 128);
	assert_int_equal(rw_card_access(rw_cards_find(set, "bounded_fill"), &a, &s), 0);
	assert_int_equal(s.n, 1);                 /* scratch is not dereferenced */
	expect_acc(&s, 0, A0, 256 * 4, W, 0);     /* min(1000, 2*128) floats */
	{
		struct {
			uint64_t p;             /* input */
			int64_t len;            /* floats */
		} in[4] = { { A1, 3 }, { A2, 4 }, { A3, 99 }, { A4, 99 } };
		unsigned char tab[72] = { 0 };
		int32_t count = 2;

		memcpy(tab, in, sizeof(in));
		memcpy(tab + 64, &count, 4);
		memset(&b, 0, sizeof(b));
		pb_add(&b, tab, sizeof(tab), 8), pb_ptr(&b, A0);
		a = pb_args(&b, 1, 1, 1, 64);
		assert_int_equal(rw_card_access(rw_cards_find(set, "gather4"), &a, &s), 0);
		assert_int_equal(s.n, 3);
		expect_acc(&s, 0, A0, 28, W, 1);
		expect_acc(&s, 1, A1, 12, R, 0);
		expect_acc(&s, 2, A2, 16, R, 0);
		assert_int_equal(s.flags, RW_SET_PURE | RW_SET_CAT | RW_SET_COUNT | RW_SET_COVERS);
	}
	rw_cards_destroy(set);
}

/* The process's cards come from CUFOLD_CARDS (read once, at first use). */
static void test_global_cards_from_environment(void **state)
{
	char path[] = "/tmp/cufold-test-cards-env-XXXXXX";
	int fd = mkstemp(path);
	static const char text[] = "kernel env_kernel\n  pure\nend\n";

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	{
		char list[256];

		/* the test file, then the test kernels' cards as the runner gives them */
		snprintf(list, sizeof(list), "%s:%s", path, TEST_CARDS_FILE);
		setenv("CUFOLD_CARDS", list, 1);
	}
	assert_non_null(rw_cards_global());
	assert_int_equal(rw_card_flags(rw_card_lookup("env_kernel")), RW_CARD_PURE);
	assert_non_null(rw_card_lookup("layernorm_row"));
	assert_null(rw_card_lookup("not_a_kernel"));
	unsetenv("CUFOLD_CARDS");
	unlink(path);
}

/* ------------------------------------------------------------------ names */

static void test_demangle(void **state)
{
	static const struct {
		const char *mangled;            /* input */
		const char *qual;               /* qualified name, NULL: not understood */
		const char *base;               /* base name */
	} cases[] = {
		{ "_Z4axpyPfPKffi", "axpy", "axpy" },
		{ "_ZL6kernelPf", "kernel", "kernel" },
		{ "_ZN2ns6kernelEPf", "ns::kernel", "kernel" },
		{ "_ZN2at6native6detail4fillEv", "at::native::detail::fill", "fill" },
		{ "_Z6kernelIfEvPT_i", "kernel", "kernel" },
		{ "_ZN2ns6kernelIiLi4EEEvPT_", "ns::kernel", "kernel" },
		{ "_ZN3foo3barIiE3bazEv", "foo::bar::baz", "baz" },
		{ "_ZN3foo3barINS_4EvilILb1EEEE3bazEv", "foo::bar::baz", "baz" },
		{ "_ZNSt6vectorIiE4sizeEv", "std::vector::size", "size" },
		{ "_ZSt4swapIiEvRT_S1_", "std::swap", "swap" },
		{ "_ZNK3Foo3getEv", "Foo::get", "get" },
		{ "_ZN12_GLOBAL__N_16kernelEv", "_GLOBAL__N_1::kernel", "kernel" },
		{ "axpy", NULL, NULL },
		{ "_Z", NULL, NULL },
		{ "_Z12truncated", NULL, NULL },
		{ "_ZN3Foo3barIiEv", NULL, NULL },        /* unterminated nested name */
		{ "_ZZ4mainE1f", NULL, NULL },            /* local name */
		{ "_ZN3FooC1Ev", NULL, NULL },            /* constructor */
		{ "_Z0x", NULL, NULL },
	};
	char qual[64];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int base = rw_demangle_base(cases[i].mangled, qual, sizeof(qual));

		if (!cases[i].qual) {
			if (base != -1)
				fail_msg("%s: understood as %s", cases[i].mangled, qual);
			continue;
		}
		if (base < 0 || strcmp(qual, cases[i].qual) || strcmp(qual + base, cases[i].base))
			fail_msg("%s: got %d '%s'; want '%s' / '%s'", cases[i].mangled, base, qual,
				 cases[i].qual, cases[i].base);
	}
	/* too long for the buffer: not understood rather than cut */
	assert_int_equal(rw_demangle_base("_ZN10abcdefghij10abcdefghijEv", qual, 16), -1);
	assert_int_equal(rw_demangle_base(NULL, qual, sizeof(qual)), -1);
}

static void test_lookup_mangled_names(void **state)
{
	static const char text[] =
		"kernel axpy\nend\n"
		"kernel ns::scale\nend\n"
		"kernel *_f32\nend\n";
	struct rw_cards *set;
	const struct rw_card *axpy, *scale, *f32;

	(void)state;
	assert_int_equal(parse(&set, text), 0);
	axpy = rw_cards_find(set, "axpy");
	scale = rw_cards_find(set, "_ZN2ns5scaleEPfPKffi");
	f32 = rw_cards_find(set, "reduce_f32");
	assert_non_null(axpy);
	assert_non_null(scale);
	assert_non_null(f32);
	assert_ptr_equal(rw_cards_find(set, "_Z4axpyPfPKffi"), axpy);        /* base name */
	assert_ptr_equal(rw_cards_find(set, "_ZN5inner4axpyIfEEvPT_"), axpy); /* base name, templated */
	assert_ptr_equal(rw_cards_find(set, "_ZN2ns5scaleEPfPKffi"), scale); /* cached */
	assert_ptr_equal(rw_cards_find(set, "_ZN5other8pack_f32Ev"), f32);
	assert_null(rw_cards_find(set, "_ZN5other5scaleEPf"));              /* other namespace */
	assert_null(rw_cards_find(set, "axpy2"));
	assert_null(rw_cards_find(set, "axpy2"));                           /* cached miss */
	assert_null(rw_cards_find(set, "_Z5axpy2v"));
	/* many names: the cache grows and stays right */
	for (int i = 0; i < 3000; i++) {
		char name[32];

		snprintf(name, sizeof(name), "k%d_f32", i);
		assert_ptr_equal(rw_cards_find(set, name), f32);
		snprintf(name, sizeof(name), "k%d", i);
		assert_null(rw_cards_find(set, name));
	}
	assert_ptr_equal(rw_cards_find(set, "axpy"), axpy);
	rw_cards_destroy(set);
}

/* Lookups from several threads at once (while the cache grows) agree with one thread's. */
struct lookup_job {
	struct rw_cards *set;           /* shared */
	const struct rw_card *want;     /* the card every *_f32 name maps to */
	int seed;                       /* makes each thread's names differ in part */
	int wrong;                      /* answers that differed */
};

static void *lookup_thread(void *arg)
{
	struct lookup_job *j = arg;

	for (int i = 0; i < 2000; i++) {
		char name[32];

		snprintf(name, sizeof(name), "t%d_%d_f32", (i + j->seed) % 700, i % 3);
		j->wrong += rw_cards_find(j->set, name) != j->want;
		snprintf(name, sizeof(name), "t%d", i % 500);
		j->wrong += rw_cards_find(j->set, name) != NULL;
	}
	return NULL;
}

static void test_concurrent_lookups(void **state)
{
	struct rw_cards *set;
	struct lookup_job jobs[4];
	pthread_t th[4];

	(void)state;
	assert_int_equal(parse(&set, "kernel *_f32\nend\n"), 0);
	for (int i = 0; i < 4; i++) {
		jobs[i] = (struct lookup_job){ .set = set, .want = rw_cards_find(set, "x_f32"), .seed = i * 97 };
		assert_int_equal(pthread_create(&th[i], NULL, lookup_thread, &jobs[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		assert_int_equal(pthread_join(th[i], NULL), 0);
		assert_int_equal(jobs[i].wrong, 0);
	}
	rw_cards_destroy(set);
}

/* ------------------------------------------------------------------ expressions */

static int64_t ev(const char *text)
{
	static const char *const names[] = { "n", "m", "k", "neg", "big" };
	static const int64_t values[] = { 10, 3, 7, -5, INT64_MAX };
	char err[128];
	int64_t v = 0;
	int rc = rw_expr_eval_text(text, names, values, 5, &v, err, sizeof(err));

	if (rc != 0)
		fail_msg("'%s': rc %d (%s)", text, rc, err);
	return v;
}

static int ev_rc(const char *text, char *err, size_t size)
{
	static const char *const names[] = { "n", "m", "big" };
	static const int64_t values[] = { 10, 3, INT64_MAX };
	int64_t v;

	err[0] = 0;
	return rw_expr_eval_text(text, names, values, 3, &v, err, size);
}

static void test_expressions(void **state)
{
	char err[128];

	(void)state;
	assert_int_equal(ev("42"), 42);
	assert_int_equal(ev("0x10"), 16);
	assert_int_equal(ev("n*4"), 40);
	assert_int_equal(ev(" n * m * 4 "), 120);
	assert_int_equal(ev("n+m*k"), 31);
	assert_int_equal(ev("(n+m)*k"), 91);
	assert_int_equal(ev("n-m-k"), 0);           /* left associative */
	assert_int_equal(ev("n/m"), 3);
	assert_int_equal(ev("neg/m"), -1);          /* C truncation */
	assert_int_equal(ev("neg%m"), -2);
	assert_int_equal(ev("n%m"), 1);
	assert_int_equal(ev("-n+3"), -7);
	assert_int_equal(ev("--n"), 10);
	assert_int_equal(ev("+n"), 10);
	assert_int_equal(ev("n*-m"), -30);
	assert_int_equal(ev("min(n, m)"), 3);
	assert_int_equal(ev("max(n,m*k)*4"), 84);
	assert_int_equal(ev("min(max(neg,0),n)"), 0);
	assert_int_equal(ev("((((n))))"), 10);
	assert_int_equal(ev("big"), INT64_MAX);
	assert_int_equal(ev("n*(n-1)/2"), 45);

	assert_int_equal(ev_rc("big+1", err, sizeof(err)), -CF_ERANGE);
	assert_int_equal(ev_rc("big*2", err, sizeof(err)), -CF_ERANGE);
	assert_int_equal(ev_rc("-big-2", err, sizeof(err)), -CF_ERANGE);
	assert_int_equal(ev_rc("n/0", err, sizeof(err)), -CF_ERANGE);
	assert_int_equal(ev_rc("n%(m-3)", err, sizeof(err)), -CF_ERANGE);
	assert_int_equal(ev_rc("", err, sizeof(err)), -CF_EINVAL);
	assert_string_equal(err, "expression ends early");
	assert_int_equal(ev_rc("n +", err, sizeof(err)), -CF_EINVAL);
	assert_string_equal(err, "expression ends early");
	assert_int_equal(ev_rc("n m", err, sizeof(err)), -CF_EINVAL);
	assert_string_equal(err, "unexpected 'm' at column 3");
	assert_int_equal(ev_rc("x", err, sizeof(err)), -CF_EINVAL);
	assert_string_equal(err, "unknown name 'x'");
	assert_int_equal(ev_rc("(n", err, sizeof(err)), -CF_EINVAL);
	assert_string_equal(err, "missing ')' at column 3");
	assert_int_equal(ev_rc("max(n)", err, sizeof(err)), -CF_EINVAL);
	assert_int_equal(ev_rc("min", err, sizeof(err)), -CF_EINVAL);     /* a name, unknown */
	assert_int_equal(ev_rc("((((((((((((((((((n))))))))))))))))))", err, sizeof(err)), -CF_EINVAL);
	assert_string_equal(err, "expression nested too deeply");
	assert_int_equal(ev_rc("1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1+1",
			       err, sizeof(err)), -CF_EINVAL);
	assert_string_equal(err, "expression too long (more than 64 operations)");
	assert_int_equal(ev_rc("9223372036854775808", err, sizeof(err)), -CF_EINVAL);
}

/* ------------------------------------------------------------------ access sets of the built-in cards */

static void test_access_elementwise(void **state)
{
	struct rw_access_set s;
	struct pbuf b;

	(void)state;
	/* fill(x, v, n) */
	memset(&b, 0, sizeof(b));
	pb_ptr(&b, A0), pb_f32(&b, 1.5f), pb_i32(&b, 1000);
	access_of("fill", &b, 4, 1, 1, 256, &s);
	assert_int_equal(s.n, 1);
	expect_acc(&s, 0, A0, 4000, W, 0);
	assert_int_equal(s.flags, RW_SET_PURE | RW_SET_ELEMENTWISE | RW_SET_COUNT | RW_SET_COVERS);
	assert_int_equal(s.count, 1000);
	assert_int_equal(s.count_param, 2);
	assert_false(rw_access_set_self_overlaps(&s));
	/* a short grid: still elementwise, but it does not cover n */
	access_of("fill", &b, 3, 1, 1, 256, &s);
	assert_int_equal(s.flags, RW_SET_PURE | RW_SET_ELEMENTWISE | RW_SET_COUNT);
	/* a 2-D launch is not the elementwise form */
	access_of("fill", &b, 4, 2, 1, 256, &s);
	assert_int_equal(s.flags, RW_SET_PURE | RW_SET_COUNT);

	/* copy(dst, src, n) */
	memset(&b, 0, sizeof(b));
	pb_ptr(&b, A0), pb_ptr(&b, A1), pb_i32(&b, 77);
	access_of("copy", &b, 1, 1, 1, 128, &s);
	assert_int_equal(s.n, 2);
	expect_acc(&s, 0, A0, 308, W, 0);
	expect_acc(&s, 1, A1, 308, R, 1);
	assert_false(rw_access_set_self_overlaps(&s));
	/* copy onto itself shifted by one float overlaps */
	memset(&b, 0, sizeof(b));
	pb_ptr(&b, A0 + 4), pb_ptr(&b, A0), pb_i32(&b, 77);
	access_of("copy", &b, 1, 1, 1, 128, &s);
	assert_true(rw_access_set_self_overlaps(&s));

	/* axpy(y, x, a, n): y read and written */
	memset(&b, 0, sizeof(b));
	pb_ptr(&b, A0), pb_ptr(&b, A1), pb_f32(&b, 2.0f), pb_i32(&b, 33);
	access_of("axpy", &b, 1, 1, 1, 64, &s);
	expect_acc(&s, 0, A0, 132, RWA, 0);
	expect_acc(&s, 1, A1, 132, R, 1);
	assert_int_equal(s.flags, RW_SET_ELEMENTWISE | RW_SET_COUNT | RW_SET_COVERS);
	assert_true(rw_access_set_self_overlaps(&s));

	/* add / mul(out, a, b, n) */
	for (int k = 0; k < 2; k++) {
		memset(&b, 0, sizeof(b));
		pb_ptr(&b, A0), pb_ptr(&b, A1), pb_ptr(&b, A2), pb_i32(&b, 5);
		access_of(k ? "mul" : "add", &b, 1, 1, 1, 32, &s);
		assert_int_equal(s.n, 3);
		expect_acc(&s, 0, A0, 20, W, 0);
		expect_acc(&s, 1, A1, 20, R, 1);
		expect_acc(&s, 2, A2, 20, R, 2);
		assert_int_equal(s.count_param, 3);
	}

	/* scale(out, in, s, n); relu, tanh_kernel(out, in, n) */
	memset(&b, 0, sizeof(b));
	pb_ptr(&b, A0), pb_ptr(&b, A1), pb_f32(&b, 3.0f), pb_i32(&b, 9);
	access_of("scale", &b, 1, 1, 1, 32, &s);
	expect_acc(&s, 0, A0, 36, W, 0);
	expect_acc(&s, 1, A1, 36, R, 1);
	for (int k = 0; k < 2; k++) {
		memset(&b, 0, sizeof(b));
		pb_ptr(&b, A0), pb_ptr(&b, A1), pb_i32(&b, 17);
		access_of(k ? "tanh_kernel" : "relu", &b, 1, 1, 1, 32, &s);
		expect_acc(&s, 0, A0, 68, W, 0);
		expect_acc(&s, 1, A1, 68, R, 1);
		assert_int_equal(s.flags, RW_SET_PURE | RW_SET_ELEMENTWISE | RW_SET_COUNT | RW_SET_COVERS);
	}

	/* a negative count touches nothing */
	memset(&b, 0, sizeof(b));
	pb_ptr(&b, A0), pb_ptr(&b, A1), pb_i32(&b, -4);
	access_of("relu", &b, 1, 1, 1, 32, &s);
	expect_acc(&s, 0, A0, 0, W, 0);
	expect_acc(&s, 1, A1, 0, R, 1);
	assert_int_equal(s.count, -4);

	/* the all-reduce: buf read and written, not pure */
	memset(&b, 0, sizeof(b));
	pb_ptr(&b, A0), pb_i32(&b, 256);
	access_of("ncclDevKernel_AllReduce_Sum_f32_RING_LL", &b, 1, 1, 1, 256, &s);
	assert_int_equal(s.n, 1);
	expect_acc(&s, 0, A0, 1024, RWA, 0);
	assert_int_equal(s.flags & RW_SET_PURE, 0);
}

static void test_access_linalg_nn(void **state)
{
	struct rw_access_set s;
	struct pbuf b;

	(void)state;
	/* gemm(C, A, B, m, n, k, beta): C m*n, A m*k, B k*n floats */
	memset(&b, 0, sizeof(b));
	pb_ptr(&b, A0), pb_ptr(&b, A1), pb_ptr(&b, A2), pb_i32(&b, 6), pb_i32(&b, 10), pb_i32(&b, 3),
		pb_f32(&b, 0.0f);
	access_of("gemm", &b, 1, 1, 1, 16, &s);
	assert_int_equal(s.n, 3);
	expect_acc(&s, 0, A0, 6 * 10 * 4, RWA, 0);
	expect_acc(&s, 1, A1, 6 * 3 * 4, R, 1);
	expect_acc(&s, 2, A2, 3 * 10 * 4, R, 2);
	assert_int_equal(s.flags, 0);

	/* reduce_sum(out, in, n) */
	memset(&b, 0, sizeof(b));
	pb_ptr(&b, A0), pb_ptr(&b, A1), pb_i32(&b, 1001);
	access_of("reduce_sum", &b, 1, 1, 1, 256, &s);
	expect_acc(&s, 0, A0, 4, W, 0);
	expect_acc(&s, 1, A1, 4004, R, 1);
	assert_true(s.flags & RW_SET_PURE);
	assert_false(s.flags & RW_SET_ELEMENTWISE);

	/* embedding_bag_sum(table, indices, offsets, nbags, dim, out) */
	memset(&b, 0, sizeof(b));
	pb_ptr(&b, A0), pb_ptr(&b, A1), pb_ptr(&b, A2), pb_i32(&b, 4), pb_i32(&b, 16), pb_ptr(&b, A3);
	access_of("embedding_bag_sum", &b, 1, 1, 1, 64, &s);
	assert_int_equal(s.n, 4);
	expect_acc(&s, 0, A0, 0, R | UNK, 0);
	expect_acc(&s, 1, A1, 0, R | UNK, 1);
	expect_acc(&s, 2, A2, 5 * 4, R, 2);
	expect_acc(&s, 3, A3, 4 * 16 * 4, W, 5);
	assert_true(s.flags & RW_SET_UNKNOWN_SPAN);
	assert_int_equal(s.count, 64);
	assert_int_equal(s.count_param, -1);
	assert_true(rw_access_set_self_overlaps(&s)); /* unknown spans may overlap anything */

	/* layernorm_row(out, in, gamma, beta, cols, eps): gridDim.x rows */
	memset(&b, 0, sizeof(b));
	pb_ptr(&b, A0), pb_ptr(&b, A1), pb_ptr(&b, A2), pb_ptr(&b, A3), pb_i32(&b, 96), pb_f32(&b, 1e-5f);
	access_of("layernorm_row", &b, 12, 1, 1, 128, &s);
	assert_int_equal(s.n, 4);
	expect_acc(&s, 0, A0, 12 * 96 * 4, W, 0);
	expect_acc(&s, 1, A1, 12 * 96 * 4, R, 1);
	expect_acc(&s, 2, A2, 96 * 4, R, 2);
	expect_acc(&s, 3, A3, 96 * 4, R, 3);
	assert_int_equal(s.flags, RW_SET_PURE);

	/* softmax_row(out, in, cols) */
	memset(&b, 0, sizeof(b));
	pb_ptr(&b, A0), pb_ptr(&b, A1), pb_i32(&b, 50);
	access_of("softmax_row", &b, 7, 1, 1, 64, &s);
	expect_acc(&s, 0, A0, 7 * 50 * 4, W, 0);
	expect_acc(&s, 1, A1, 7 * 50 * 4, R, 1);
}

static void test_access_train(void **state)
{
	struct rw_access_set s;
	struct pbuf b;

	(void)state;
	/* bias_add(out, bias, rows, cols) */
	memset(&b, 0, sizeof(b));
	pb_ptr(&b, A0), pb_ptr(&b, A1), pb_i32(&b, 8), pb_i32(&b, 5);
	access_of("bias_add", &b, 1, 1, 1, 64, &s);
	expect_acc(&s, 0, A0, 160, RWA, 0);
	expect_acc(&s, 1, A1, 20, R, 1);
	assert_int_equal(s.flags, RW_SET_COUNT | RW_SET_COVERS);
	assert_int_equal(s.count, 40);

	/* bias_grad(db, dy, rows, cols) */
	memset(&b, 0, sizeof(b));
	pb_ptr(&b, A0), pb_ptr(&b, A1), pb_i32(&b, 8), pb_i32(&b, 5);
	access_of("bias_grad", &b, 1, 1, 1, 64, &s);
	expect_acc(&s, 0, A0, 20, RWA, 0);
	expect_acc(&s, 1, A1, 160, R, 1);

	/* relu_backward / tanh_backward(dx, dy, y, n) */
	memset(&b, 0, sizeof(b));
	pb_ptr(&b, A0), pb_ptr(&b, A1), pb_ptr(&b, A2), pb_i32(&b, 3);
	access_of("tanh_backward", &b, 1, 1, 1, 32, &s);
	expect_acc(&s, 0, A0, 12, W, 0);
	expect_acc(&s, 1, A1, 12, R, 1);
	expect_acc(&s, 2, A2, 12, R, 2);
	assert_true(s.flags & RW_SET_ELEMENTWISE);

	/* gemm_ex(C, A, B, m, n, k, ta, tb, alpha, beta, sa, sb, sc) over 3 batches */
	memset(&b, 0, sizeof(b));
	pb_ptr(&b, A0), pb_ptr(&b, A1), pb_ptr(&b, A2), pb_i32(&b, 4), pb_i32(&b, 5), pb_i32(&b, 6),
		pb_i32(&b, 1), pb_i32(&b, 0), pb_f32(&b, 1.0f), pb_f32(&b, 0.5f), pb_i32(&b, 24),
		pb_i32(&b, 0), pb_i32(&b, 20);
	access_of("gemm_ex", &b, 1, 1, 3, 16, &s);
	expect_acc(&s, 0, A0, (2 * 20 + 4 * 5) * 4, RWA, 0);
	expect_acc(&s, 1, A1, (2 * 24 + 4 * 6) * 4, R, 1);
	expect_acc(&s, 2, A2, (0 + 6 * 5) * 4, R, 2);

	/* embedding_bag_backward(gtable, indices, offsets, nbags, dim, dout) */
	memset(&b, 0, sizeof(b));
	pb_ptr(&b, A0), pb_ptr(&b, A1), pb_ptr(&b, A2), pb_i32(&b, 3), pb_i32(&b, 8), pb_ptr(&b, A3);
	access_of("embedding_bag_backward", &b, 1, 1, 1, 8, &s);
	expect_acc(&s, 0, A0, 0, RWA | UNK, 0);
	expect_acc(&s, 1, A1, 0, R | UNK, 1);
	expect_acc(&s, 2, A2, 16, R, 2);
	expect_acc(&s, 3, A3, 96, R, 5);

	/* dot_interaction(out, T, nf, nb, dim) and its backward(dT, dZ, T, nf, nb, dim) */
	memset(&b, 0, sizeof(b));
	pb_ptr(&b, A0), pb_ptr(&b, A1), pb_i32(&b, 5), pb_i32(&b, 4), pb_i32(&b, 3);
	access_of("dot_interaction", &b, 1, 1, 1, 64, &s);
	expect_acc(&s, 0, A0, 4 * 10 * 4, W, 0);
	expect_acc(&s, 1, A1, 5 * 4 * 3 * 4, R, 1);
	memset(&b, 0, sizeof(b));
	pb_ptr(&b, A0), pb_ptr(&b, A1), pb_ptr(&b, A2), pb_i32(&b, 5), pb_i32(&b, 4), pb_i32(&b, 3);
	access_of("dot_interaction_backward", &b, 1, 1, 1, 64, &s);
	expect_acc(&s, 0, A0, 5 * 4 * 3 * 4, W, 0);
	expect_acc(&s, 1, A1, 4 * 10 * 4, R, 1);
	expect_acc(&s, 2, A2, 5 * 4 * 3 * 4, R, 2);

	/* concat2_rows(out, a, acols, b, bcols, rows) and split2_rows(a, acols, b, bcols, src, rows) */
	memset(&b, 0, sizeof(b));
	pb_ptr(&b, A0), pb_ptr(&b, A1), pb_i32(&b, 3), pb_ptr(&b, A2), pb_i32(&b, 5), pb_i32(&b, 7);
	access_of("concat2_rows", &b, 1, 1, 1, 64, &s);
	expect_acc(&s, 0, A0, 7 * 8 * 4, W, 0);
	expect_acc(&s, 1, A1, 7 * 3 * 4, R, 1);
	expect_acc(&s, 2, A2, 7 * 5 * 4, R, 3);
	memset(&b, 0, sizeof(b));
	pb_ptr(&b, A1), pb_i32(&b, 3), pb_ptr(&b, A2), pb_i32(&b, 5), pb_ptr(&b, A0), pb_i32(&b, 7);
	access_of("split2_rows", &b, 1, 1, 1, 64, &s);
	expect_acc(&s, 0, A1, 7 * 3 * 4, W, 0);
	expect_acc(&s, 1, A2, 7 * 5 * 4, W, 2);
	expect_acc(&s, 2, A0, 7 * 8 * 4, R, 4);

	/* layernorm_backward_row(dx, xhat, dy, in, gamma, cols, eps) */
	memset(&b, 0, sizeof(b));
	pb_ptr(&b, A0), pb_ptr(&b, A1), pb_ptr(&b, A2), pb_ptr(&b, A3), pb_ptr(&b, A4), pb_i32(&b, 10),
		pb_f32(&b, 1e-5f);
	access_of("layernorm_backward_row", &b, 6, 1, 1, 32, &s);
	assert_int_equal(s.n, 5);
	expect_acc(&s, 0, A0, 240, W, 0);
	expect_acc(&s, 1, A1, 240, W, 1);
	expect_acc(&s, 2, A2, 240, R, 2);
	expect_acc(&s, 3, A3, 240, R, 3);
	expect_acc(&s, 4, A4, 40, R, 4);

	/* layernorm_param_grad(dgamma, dbeta, dy, xhat, rows, cols) */
	memset(&b, 0, sizeof(b));
	pb_ptr(&b, A0), pb_ptr(&b, A1), pb_ptr(&b, A2), pb_ptr(&b, A3), pb_i32(&b, 6), pb_i32(&b, 10);
	access_of("layernorm_param_grad", &b, 1, 1, 1, 32, &s);
	expect_acc(&s, 0, A0, 40, RWA, 0);
	expect_acc(&s, 1, A1, 40, RWA, 1);
	expect_acc(&s, 2, A2, 240, R, 2);
	expect_acc(&s, 3, A3, 240, R, 3);

	/* softmax_backward_row(dx, dy, out, cols) */
	memset(&b, 0, sizeof(b));
	pb_ptr(&b, A0), pb_ptr(&b, A1), pb_ptr(&b, A2), pb_i32(&b, 10);
	access_of("softmax_backward_row", &b, 6, 1, 1, 32, &s);
	expect_acc(&s, 0, A0, 240, W, 0);
	expect_acc(&s, 2, A2, 240, R, 2);

	/* bce_logits / mse_loss(terms, dz, z, y, n, inv_n) */
	memset(&b, 0, sizeof(b));
	pb_ptr(&b, A0), pb_ptr(&b, A1), pb_ptr(&b, A2), pb_ptr(&b, A3), pb_i32(&b, 100), pb_f32(&b, 0.01f);
	access_of("mse_loss", &b, 1, 1, 1, 128, &s);
	assert_int_equal(s.n, 4);
	expect_acc(&s, 0, A0, 400, W, 0);
	expect_acc(&s, 1, A1, 400, W, 1);
	expect_acc(&s, 2, A2, 400, R, 2);
	expect_acc(&s, 3, A3, 400, R, 3);
	assert_int_equal(s.flags, RW_SET_PURE | RW_SET_ELEMENTWISE | RW_SET_COUNT | RW_SET_COVERS);
}

/* The test kernels' by-value tables (tests/kernels/copy.cu). */
struct cat_args {
	uint64_t src[8];                /* input pointers */
	int32_t len[8];                 /* floats from each */
	int32_t count;                  /* inputs used */
	int32_t pad;                    /* to 104 bytes */
};

static void test_cat_and_split_tables(void **state)
{
	struct cat_args t;
	struct rw_access_set s;
	struct pbuf b;

	(void)state;
	assert_int_equal(sizeof(t), 104);
	memset(&t, 0, sizeof(t));
	t.src[0] = A1, t.len[0] = 5;
	t.src[1] = A2, t.len[1] = 0;
	t.src[2] = A3 + 12, t.len[2] = 7;
	t.src[3] = A4, t.len[3] = 100; /* beyond count: not read */
	t.count = 3;
	memset(&b, 0, sizeof(b));
	pb_add(&b, &t, sizeof(t), 8), pb_ptr(&b, A0);
	access_of("cat", &b, 1, 1, 1, 12, &s);
	assert_int_equal(s.n, 4);
	expect_acc(&s, 0, A0, 12 * 4, W, 1); /* the output, span = the table's total */
	assert_int_equal(s.cat_out, 0);
	assert_int_equal(s.ntables, 1);
	assert_int_equal(s.tables[0].first, 1);
	assert_int_equal(s.tables[0].n, 3);
	expect_acc(&s, 1, A1, 20, R, 0);
	expect_acc(&s, 2, A2, 0, R, 0);
	expect_acc(&s, 3, A3 + 12, 28, R, 0);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(s.acc[1 + i].entry, i);
		assert_int_equal(s.acc[1 + i].table, 0);
	}
	assert_int_equal(s.acc[0].entry, -1);
	assert_int_equal(s.count, 12);
	assert_int_equal(s.flags, RW_SET_PURE | RW_SET_CAT | RW_SET_COUNT | RW_SET_COVERS);
	/* a grid of 11 threads does not cover the 12 elements */
	access_of("cat", &b, 1, 1, 1, 11, &s);
	assert_int_equal(s.flags, RW_SET_PURE | RW_SET_CAT | RW_SET_COUNT);

	/* count beyond the 8 slots: clamped, as the kernel's loop is */
	for (int i = 0; i < 8; i++)
		t.src[i] = A1 + 0x1000u * (unsigned)i, t.len[i] = i + 1;
	t.count = 1000;
	memset(&b, 0, sizeof(b));
	pb_add(&b, &t, sizeof(t), 8), pb_ptr(&b, A0);
	access_of("cat", &b, 1, 1, 1, 64, &s);
	assert_int_equal(s.n, 9);
	expect_acc(&s, 0, A0, 36 * 4, W, 1);
	expect_acc(&s, 8, A1 + 0x7000u, 32, R, 0);
	/* a negative count reads nothing */
	t.count = -2;
	memset(&b, 0, sizeof(b));
	pb_add(&b, &t, sizeof(t), 8), pb_ptr(&b, A0);
	access_of("cat", &b, 1, 1, 1, 64, &s);
	assert_int_equal(s.n, 1);
	expect_acc(&s, 0, A0, 0, W, 1);
	/* a negative length shifts the kernel's placement: not decodable */
	t.count = 2, t.len[1] = -3;
	memset(&b, 0, sizeof(b));
	pb_add(&b, &t, sizeof(t), 8), pb_ptr(&b, A0);
	access_of("cat", &b, 1, 1, 1, 64, &s);
	expect_acc(&s, 0, A0, 0, W | UNK, 1);
	expect_acc(&s, 2, A1 + 0x1000u, 0, R | UNK, 0);
	assert_int_equal(s.flags & (RW_SET_CAT | RW_SET_COUNT), 0);
	assert_true(s.flags & RW_SET_UNKNOWN_SPAN);

	/* split_copy(src, args): src read over the total, the ranges written */
	memset(&t, 0, sizeof(t));
	t.src[0] = A1, t.len[0] = 4;
	t.src[1] = A2, t.len[1] = 6;
	t.count = 2;
	memset(&b, 0, sizeof(b));
	pb_ptr(&b, A0), pb_add(&b, &t, sizeof(t), 8);
	access_of("split_copy", &b, 1, 1, 1, 10, &s);
	assert_int_equal(s.n, 3);
	expect_acc(&s, 0, A0, 40, R, 0);
	expect_acc(&s, 1, A1, 16, W, 1);
	expect_acc(&s, 2, A2, 24, W, 1);
	assert_int_equal(s.cat_out, 0);
	assert_int_equal(s.flags, RW_SET_PURE | RW_SET_SPLIT | RW_SET_COUNT | RW_SET_COVERS);
}

static void test_batch_kernel_cards(void **state)
{
	struct rw_batch_copy_table ct;
	struct rw_batch_memset_table mt;
	struct rw_access_set s;
	struct pbuf b;

	(void)state;
	/* the offsets the cards spell out */
	assert_int_equal(sizeof(ct), RW_BATCH_TABLE_SIZE);
	assert_int_equal(sizeof(mt), RW_BATCH_TABLE_SIZE);
	assert_int_equal(offsetof(struct rw_batch_copy_table, count), RW_BATCH_COUNT_OFFSET);
	assert_int_equal(offsetof(struct rw_batch_memset_table, count), RW_BATCH_COUNT_OFFSET);
	assert_int_equal(sizeof(struct rw_batch_copy_range), RW_BATCH_RANGE_SIZE);
	assert_int_equal(offsetof(struct rw_batch_copy_range, src), 8);
	assert_int_equal(offsetof(struct rw_batch_copy_range, bytes), 16);
	assert_int_equal(offsetof(struct rw_batch_memset_range, bytes), 8);

	memset(&ct, 0, sizeof(ct));
	ct.count = 3;
	for (unsigned i = 0; i < 4; i++) {
		ct.r[i].dst = A0 + 0x100 * i;
		ct.r[i].src = A1 + 0x100 * i + 1;
		ct.r[i].bytes = 10 + i;
	}
	memset(&b, 0, sizeof(b));
	pb_add(&b, &ct, sizeof(ct), 8);
	access_of("cufold_batch_copy", &b, 1, 3, 1, 256, &s);
	assert_int_equal(s.n, 6);
	assert_int_equal(s.ntables, 2);
	assert_int_equal(s.tables[0].first, 0);
	assert_int_equal(s.tables[0].n, 3);
	assert_int_equal(s.tables[1].first, 3);
	for (unsigned i = 0; i < 3; i++) {
		expect_acc(&s, i, A0 + 0x100 * i, 10 + i, W, 0);
		expect_acc(&s, 3 + i, A1 + 0x100 * i + 1, 10 + i, R, 0);
	}
	assert_int_equal(s.flags, RW_SET_PURE);
	assert_false(rw_access_set_self_overlaps(&s));
	/* a count above 32 is clamped like the kernel clamps it */
	ct.count = 0xffffffffu;
	memset(&b, 0, sizeof(b));
	pb_add(&b, &ct, sizeof(ct), 8);
	access_of("cufold_batch_copy", &b, 1, 3, 1, 256, &s);
	assert_int_equal(s.n, 64);

	memset(&mt, 0, sizeof(mt));
	mt.count = 2;
	mt.r[0].dst = A2, mt.r[0].bytes = 6, mt.r[0].value = 0xab, mt.r[0].elem_size = 1;
	mt.r[1].dst = A3, mt.r[1].bytes = 400, mt.r[1].value = 0x3f800000, mt.r[1].elem_size = 4;
	memset(&b, 0, sizeof(b));
	pb_add(&b, &mt, sizeof(mt), 8);
	access_of("cufold_batch_memset", &b, 1, 2, 1, 256, &s);
	assert_int_equal(s.n, 2);
	expect_acc(&s, 0, A2, 6, W, 0);
	expect_acc(&s, 1, A3, 400, W, 0);

	/* the device-buffer variants: only the table is known */
	memset(&b, 0, sizeof(b));
	pb_ptr(&b, A4), pb_i32(&b, 100);
	access_of("cufold_batch_memset_buf", &b, 1, 100, 1, 256, &s);
	assert_int_equal(s.n, 1);
	expect_acc(&s, 0, A4, 2400, R, 0);
	assert_int_equal(s.flags, RW_SET_INDIRECT);
}

/* The card is not used for a launch whose parameters differ from it. */
static void test_layout_mismatch(void **state)
{
	const struct rw_card *card = rw_card_lookup("copy");
	struct rw_access_set s;
	struct rw_launch_args a;
	struct pbuf b;

	(void)state;
	memset(&b, 0, sizeof(b));
	pb_ptr(&b, A0), pb_ptr(&b, A1);
	a = pb_args(&b, 1, 1, 1, 32);
	assert_int_equal(rw_card_access(card, &a, &s), -CF_EINVAL); /* too few */
	memset(&b, 0, sizeof(b));
	pb_ptr(&b, A0), pb_ptr(&b, A1), pb_ptr(&b, 4);
	a = pb_args(&b, 1, 1, 1, 32);
	assert_int_equal(rw_card_access(card, &a, &s), -CF_EINVAL); /* wrong size */
	memset(&b, 0, sizeof(b));
	pb_ptr(&b, A0), pb_ptr(&b, A1), pb_i32(&b, 4);
	a = pb_args(&b, 1, 1, 1, 32);
	a.buf_size -= 1;
	assert_int_equal(rw_card_access(card, &a, &s), -CF_EINVAL); /* outside the buffer */
	a.buf_size += 1;
	b.info[2].offset = (size_t)-2;
	assert_int_equal(rw_card_access(card, &a, &s), -CF_EINVAL);
	b.info[2].offset = 16;
	assert_int_equal(rw_card_access(card, &a, &s), 0);
}

/* Spans that cannot be computed become unknown, never small. */
static void test_span_overflow_is_unknown(void **state)
{
	static const char text[] =
		"kernel big\n"
		"  param p ptr w n*m\n"
		"  param q ptr r u*1\n"
		"  param r ptr r 64/(n-n)\n"
		"  param s ptr r gx*by*gz*bx\n"
		"  param n i64\n"
		"  param m i64\n"
		"  param u u64\n"
		"end\n";
	struct rw_cards *set;
	struct rw_access_set s;
	struct rw_launch_args a;
	struct pbuf b;
	uint64_t u = 1ull << 63;
	int64_t n = INT64_MAX / 2, m = 3;

	(void)state;
	assert_int_equal(parse(&set, text), 0);
	memset(&b, 0, sizeof(b));
	pb_ptr(&b, A0), pb_ptr(&b, A1), pb_ptr(&b, A2), pb_ptr(&b, A3);
	pb_add(&b, &n, 8, 8), pb_add(&b, &m, 8, 8), pb_add(&b, &u, 8, 8);
	a = pb_args(&b, 2, 1, 5, 64);
	a.block[1] = 3;
	assert_int_equal(rw_card_access(rw_cards_find(set, "big"), &a, &s), 0);
	expect_acc(&s, 0, A0, 0, W | UNK, 0);
	expect_acc(&s, 1, A1, 0, R | UNK, 1);
	expect_acc(&s, 2, A2, 0, R | UNK, 2);
	expect_acc(&s, 3, A3, 2 * 3 * 5 * 64, R, 3);
	assert_int_equal(s.flags, RW_SET_UNKNOWN_SPAN);
	rw_cards_destroy(set);
}

/* ------------------------------------------------------------------ cufold's kernels */

static void test_embedded_ptx(void **state)
{
	const char *ptx = rw_kernels_ptx();

	(void)state;
	assert_non_null(ptx);
	assert_ptr_equal(rw_kernels_ptx_named("batch"), ptx);
	assert_null(rw_kernels_ptx_named("nope"));
	assert_non_null(strstr(ptx, ".target sm_90"));
	for (int k = 0; k < RW_K_COUNT; k++) {
		char entry[64];

		snprintf(entry, sizeof(entry), ".entry %s(", rw_kernel_name((enum rw_kernel)k));
		if (!strstr(ptx, entry))
			fail_msg("%s not in the embedded PTX", entry);
		/* and each has a built-in card */
		assert_non_null(rw_card_lookup(rw_kernel_name((enum rw_kernel)k)));
	}
	assert_non_null(strstr(ptx, ".param .align 8 .b8 cufold_batch_copy_param_0[776]"));
}

/* Loaded once per context through the real-driver table; the module runs. */
static void test_kernels_load_once_per_context(void **state)
{
	CUdevice dev;
	CUcontext ctx, other;
	CUmodule m1, m2, m3, m4;
	struct rw_kernels *kc = rw_kernels_create(), *other_kc = rw_kernels_create();
	CUfunction f, f2;
	CUdeviceptr d;
	struct rw_batch_copy_table t;
	void *params[] = { &t };
	unsigned char host[64];

	(void)state;
	assert_non_null(kc);
	assert_non_null(other_kc);
	if (shim_init() != 0)
		fail_msg("shim_init failed: is the software device on LD_LIBRARY_PATH (tests/run sets it)?");
	assert_int_equal(DRV_REAL(cuInit)(0), CUDA_SUCCESS);
	assert_int_equal(DRV_REAL(cuDeviceGet)(&dev, 0), CUDA_SUCCESS);
	assert_int_equal(DRV_REAL(cuDevicePrimaryCtxRetain)(&ctx, dev), CUDA_SUCCESS);
	/* not current: pushed for the load, popped after */
	assert_int_equal(rw_kernels_load(kc, ctx, &m1), CUDA_SUCCESS);
	assert_int_equal(DRV_REAL(cuCtxGetCurrent)(&other), CUDA_SUCCESS);
	assert_null(other);
	assert_int_equal(DRV_REAL(cuCtxSetCurrent)(ctx), CUDA_SUCCESS);
	assert_int_equal(rw_kernels_load(kc, ctx, &m2), CUDA_SUCCESS);
	assert_ptr_equal(m1, m2);
	assert_int_equal(rw_kernels_func(kc, ctx, RW_K_BATCH_COPY, &f), CUDA_SUCCESS);
	assert_int_equal(rw_kernels_func(kc, ctx, RW_K_BATCH_COPY, &f2), CUDA_SUCCESS);
	assert_ptr_equal(f, f2);
	for (int k = 0; k < RW_K_COUNT; k++)
		assert_int_equal(rw_kernels_func(kc, ctx, (enum rw_kernel)k, &f2), CUDA_SUCCESS);
	assert_int_equal(rw_kernels_func(kc, ctx, RW_K_COUNT, &f2), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(rw_kernels_load(kc, NULL, &m3), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(rw_kernels_load(NULL, ctx, &m3), CUDA_ERROR_INVALID_VALUE); /* no cache */
	/* another engine's cache: its own module, nothing shared */
	assert_int_equal(rw_kernels_load(other_kc, ctx, &m4), CUDA_SUCCESS);
	assert_ptr_not_equal(m4, m1);

	/* run it: copy 13 bytes to an odd address */
	assert_int_equal(DRV_REAL(cuMemAlloc_v2)(&d, 64), CUDA_SUCCESS);
	assert_int_equal(DRV_REAL(cuMemsetD8_v2)(d, 0x11, 64), CUDA_SUCCESS);
	memset(&t, 0, sizeof(t));
	t.count = 1;
	t.r[0].dst = d + 33;
	t.r[0].src = d + 2;
	t.r[0].bytes = 13;
	assert_int_equal(DRV_REAL(cuMemsetD8_v2)(d + 2, 0x5a, 13), CUDA_SUCCESS);
	assert_int_equal(DRV_REAL(cuLaunchKernel)(f, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL), CUDA_SUCCESS);
	assert_int_equal(DRV_REAL(cuMemcpyDtoH_v2)(host, d, 64), CUDA_SUCCESS);
	for (int i = 0; i < 64; i++)
		assert_int_equal(host[i], (i >= 2 && i < 15) || (i >= 33 && i < 46) ? 0x5a : 0x11);
	assert_int_equal(DRV_REAL(cuMemFree_v2)(d), CUDA_SUCCESS);

	/* forgotten (the context was destroyed): the next use loads afresh */
	rw_kernels_forget(kc, ctx);
	assert_int_equal(rw_kernels_load(kc, ctx, &m3), CUDA_SUCCESS);
	assert_ptr_not_equal(m3, m1);
	assert_int_equal(DRV_REAL(cuCtxSetCurrent)(NULL), CUDA_SUCCESS);
	assert_int_equal(DRV_REAL(cuDevicePrimaryCtxRelease_v2)(dev), CUDA_SUCCESS);
	rw_kernels_destroy(kc);
	rw_kernels_destroy(other_kc);
	rw_kernels_destroy(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		/* first: the process's cards read CUFOLD_CARDS once */
		cmocka_unit_test(test_global_cards_from_environment),
		cmocka_unit_test(test_builtin_cards_all_load),
		cmocka_unit_test(test_good_cards),
		cmocka_unit_test(test_every_malformed_card),
		cmocka_unit_test(test_too_many_params_and_long_line),
		cmocka_unit_test(test_rest_still_loads),
		cmocka_unit_test(test_override_order),
		cmocka_unit_test(test_cards_path_list),
		cmocka_unit_test(test_cards_not_regular),
		cmocka_unit_test(test_data_files),
		cmocka_unit_test(test_demangle),
		cmocka_unit_test(test_lookup_mangled_names),
		cmocka_unit_test(test_concurrent_lookups),
		cmocka_unit_test(test_expressions),
		cmocka_unit_test(test_access_elementwise),
		cmocka_unit_test(test_access_linalg_nn),
		cmocka_unit_test(test_access_train),
		cmocka_unit_test(test_cat_and_split_tables),
		cmocka_unit_test(test_batch_kernel_cards),
		cmocka_unit_test(test_layout_mismatch),
		cmocka_unit_test(test_span_overflow_is_unknown),
		cmocka_unit_test(test_embedded_ptx),
		cmocka_unit_test(test_kernels_load_once_per_context),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
