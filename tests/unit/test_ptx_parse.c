/* test_ptx_parse.c - the PTX front end (driver/ptx_parse.c) on the whole test bed: every PTX the
 * tests run (the kernels of tests/kernels and cufold's own, built into $B; numba's and NVRTC's in
 * tests/data/ptx) parses, and its entries, parameter layouts and module variables are those the
 * software device's reader found before the parser existed (tests/unit/ptx_oracle.inc, the
 * oracle); every operand is resolved in range. Hand-written modules check the constructs the
 * test bed lacks (indirect calls, inline asm scoping, address initialisers, ...), malformed text
 * gives "line N: ..." with the right line, and every corpus file cut short at many points or
 * with bytes overwritten is refused or parsed, never crashes (run it under `make SAN=address`).
 * tests layer (cmocka, libcufold.a). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver/ptx.h"

#include "ptx_oracle.inc"

#define MAX_CORPUS 64

struct corpus_file {
	char path[512];              /* where it was read */
	char *text;                  /* its bytes, NUL-terminated */
	size_t len;                  /* bytes */
};

static struct corpus_file corpus[MAX_CORPUS];
static unsigned ncorpus;

static char *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *text = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
		text = malloc((size_t)n + 1);
		if (text && fread(text, 1, (size_t)n, f) != (size_t)n) {
			free(text);
			text = NULL;
		}
		if (text) {
			text[n] = 0;
			*len = (size_t)n;
		}
	}
	fclose(f);
	return text;
}

/* Every .ptx file of dir (sorted names, so failures repeat). */
static void add_dir(const char *dir)
{
	struct dirent **names;
	int n = scandir(dir, &names, NULL, alphasort);

	for (int i = 0; i < n; i++) {
		size_t l = strlen(names[i]->d_name);
		struct corpus_file *c = &corpus[ncorpus];

		if (l > 4 && !strcmp(names[i]->d_name + l - 4, ".ptx") && ncorpus < MAX_CORPUS) {
			snprintf(c->path, sizeof(c->path), "%s/%s", dir, names[i]->d_name);
			c->text = read_file(c->path, &c->len);
			if (c->text)
				ncorpus++;
		}
		free(names[i]);
	}
	if (n >= 0)
		free(names);
}

static int load_corpus(void **state)
{
	const char *root = getenv("ROOT"), *b = getenv("B");
	char dir[512];

	(void)state;
	if (!root)
		root = ".";
	if (!b)
		b = "build";
	snprintf(dir, sizeof(dir), "%s%s%s/kernels", b[0] == '/' ? "" : root, b[0] == '/' ? "" : "/", b);
	add_dir(dir);
	snprintf(dir, sizeof(dir), "%s%s%s/rwkernels", b[0] == '/' ? "" : root, b[0] == '/' ? "" : "/", b);
	add_dir(dir);
	snprintf(dir, sizeof(dir), "%s/tests/data/ptx", root);
	add_dir(dir);
	return 0;
}

static int free_corpus(void **state)
{
	(void)state;
	for (unsigned i = 0; i < ncorpus; i++)
		free(corpus[i].text);
	return 0;
}

static struct ptx_module *parse_ok(const char *text)
{
	char err[256] = "";
	struct ptx_module *m = ptx_parse(text, strlen(text), err, sizeof(err));

	if (!m)
		fail_msg("parse failed: %s", err);
	return m;
}

/* The message of a parse that must fail. */
static void parse_fails(const char *text, const char *want)
{
	char err[256] = "";
	struct ptx_module *m = ptx_parse(text, strlen(text), err, sizeof(err));

	if (m) {
		ptx_module_free(m);
		fail_msg("parsed, but should fail with \"%s\"", want);
	}
	if (!strstr(err, want))
		fail_msg("message \"%s\", want \"%s\"", err, want);
}

/* ------------------------------------------------------------------ resolved in range */

static void check_operand(const struct ptx_module *m, const struct ptx_func *f, const struct ptx_operand *o, bool nested)
{
	switch (o->kind) {
	case PTX_OP_REG:
		assert_true(o->reg < f->nregs);
		break;
	case PTX_OP_PAIR:
		assert_true(o->reg < f->nregs && o->index < f->nregs);
		break;
	case PTX_OP_SPECIAL:
		assert_true(o->index < PTX_SR_COUNT);
		break;
	case PTX_OP_SYM:
	case PTX_OP_ADDR:
		if (o->kind == PTX_OP_ADDR && o->index == PTX_NONE) {
			assert_true(o->reg == PTX_NONE || o->reg < f->nregs);
			break;
		}
		assert_true(o->kind == PTX_OP_SYM || o->reg == PTX_NONE);
		switch (o->scope) {
		case PTX_SCOPE_PARAM: assert_true(o->index < f->nparams); break;
		case PTX_SCOPE_RET: assert_true(o->index < f->nrets); break;
		case PTX_SCOPE_VAR: assert_true(o->index < f->nvars); break;
		case PTX_SCOPE_GLOBAL: assert_true(o->index < m->nvars); break;
		case PTX_SCOPE_FUNC: assert_true(o->index < m->nfuncs); break;
		default: fail_msg("scope %u", o->scope);
		}
		break;
	case PTX_OP_VEC:
	case PTX_OP_LIST:
		assert_false(nested);
		assert_true(o->first + o->nelem <= m->noperands);
		for (uint32_t i = 0; i < o->nelem; i++)
			check_operand(m, f, ptx_elem(m, o, i), true);
		break;
	case PTX_OP_LABEL:
		assert_true(o->index <= f->ninsns);
		break;
	case PTX_OP_IMM:
	case PTX_OP_SINK:
	case PTX_OP_PROTO:
		break;
	default:
		fail_msg("operand kind %u", o->kind);
	}
}

static void check_resolved(const struct ptx_module *m)
{
	for (uint32_t i = 0; i < m->nfuncs; i++) {
		const struct ptx_func *f = &m->funcs[i];

		assert_non_null(f->name);
		assert_true(f->text >= m->text && f->text + f->text_len <= m->text + m->text_len);
		assert_true(f->text[0] == '.');
		if (!f->is_decl) {
			assert_true(f->body_off > 0 && f->body_off < m->text_len);
			assert_int_equal(m->text[f->body_off], '{');
			assert_int_equal(f->text[f->text_len - 1], '}');
		}
		for (uint32_t k = 0; k < f->ninsns; k++) {
			const struct ptx_insn *in = &f->insns[k];

			assert_non_null(in->opcode);
			assert_true(in->guard == PTX_NONE || in->guard < f->nregs);
			assert_true(in->block < f->nblocks);
			for (unsigned j = 0; j < in->nops; j++)
				check_operand(m, f, &in->ops[j], false);
		}
	}
}

/* ------------------------------------------------------------------ the oracle */

static const struct ptx_var *module_var(const struct ptx_module *m, const char *name)
{
	for (uint32_t i = 0; i < m->nvars; i++)
		if (!strcmp(m->vars[i].name, name))
			return &m->vars[i];
	return NULL;
}

static void compare_entries(const struct corpus_file *c, const struct ptx_module *m, const struct oracle_ptx *o)
{
	unsigned k = 0;

	assert_int_equal(o->version, (int)(m->version_major * 10 + m->version_minor));
	assert_int_equal(o->target_sm, (int)m->sm);
	for (uint32_t i = 0; i < m->nfuncs; i++) {
		const struct ptx_func *f = &m->funcs[i];
		const struct oracle_entry *e = &o->entries[k];

		if (!f->is_entry || f->is_decl)
			continue;
		if (k == o->nentries)
			fail_msg("%s: entry %s not in the oracle", c->path, f->name);
		if (strcmp(e->name, f->name))
			fail_msg("%s: entry %u is %s, the oracle's %s", c->path, k, f->name, e->name);
		if (e->nparams != f->nparams || e->param_bytes != f->param_bytes)
			fail_msg("%s: %s: %u parameters in %llu bytes, the oracle %u in %zu", c->path, f->name,
				 f->nparams, (unsigned long long)f->param_bytes, e->nparams, e->param_bytes);
		for (uint32_t j = 0; j < f->nparams; j++)
			if (e->params[j].offset != f->params[j].offset || e->params[j].size != f->params[j].size ||
			    e->params[j].align != f->params[j].align)
				fail_msg("%s: %s: parameter %u at %llu, %llu bytes, align %u; the oracle %zu, %zu, %zu",
					 c->path, f->name, j, (unsigned long long)f->params[j].offset,
					 (unsigned long long)f->params[j].size, f->params[j].align, e->params[j].offset,
					 e->params[j].size, e->params[j].align);
		k++;
	}
	if (k != o->nentries)
		fail_msg("%s: %u entries, the oracle %u", c->path, k, o->nentries);
}

/* The parser's init bytes with its address words, which the oracle cannot read, left out. */
static void compare_vars(const struct corpus_file *c, const struct ptx_module *m, const struct dec_index *ix)
{
	for (uint32_t i = 0; i < ix->nglobals; i++) {
		const struct dec_sym *g = &ix->globals[i];
		const struct ptx_var *v = module_var(m, g->name);

		if (!v)
			fail_msg("%s: variable %s not parsed", c->path, g->name);
		if (v->space != (g->space == II_SP_CONST ? PTX_SPACE_CONST : PTX_SPACE_GLOBAL) ||
		    v->size != g->size || v->ninit_addrs)
			fail_msg("%s: variable %s: space %u, %llu bytes, the oracle's %u, %llu", c->path, g->name,
				 v->space, (unsigned long long)v->size, g->space, (unsigned long long)g->size);
		for (uint64_t k = 0; k < g->size; k++)
			if ((v->init ? v->init[k] : 0) != ((const unsigned char *)(uintptr_t)g->off)[k])
				fail_msg("%s: variable %s: byte %llu differs from the oracle's", c->path, g->name,
					 (unsigned long long)k);
	}
	for (uint32_t i = 0; i < ix->nunsupported; i++) {
		const struct ptx_var *v = module_var(m, ix->unsupported[i]);

		if (!v)
			fail_msg("%s: variable %s not parsed", c->path, ix->unsupported[i]);
		assert_true(v->is_extern || v->ninit_addrs > 0);
	}
	for (uint32_t i = 0; i < ix->nshared; i++) {
		const struct ptx_var *v = module_var(m, ix->shared[i].name);

		if (!v)
			fail_msg("%s: shared variable %s not parsed", c->path, ix->shared[i].name);
		assert_int_equal(v->space, PTX_SPACE_SHARED);
		assert_int_equal(v->size, ix->shared[i].size);
	}
}

static void test_corpus_matches_oracle(void **state)
{
	(void)state;
	/* 10 built kernel files, cufold's batch kernels, 7 numba/NVRTC/nvcc: a missing build fails */
	if (ncorpus < 18)
		fail_msg("only %u PTX files found: build first (make), run from tests/run", ncorpus);
	for (unsigned i = 0; i < ncorpus; i++) {
		const struct corpus_file *c = &corpus[i];
		char err[256] = "", oerr[256] = "";
		struct ptx_module *m = ptx_parse(c->text, c->len, err, sizeof(err));
		struct oracle_ptx o;
		struct dec_index ix = { 0 };

		if (!m)
			fail_msg("%s: %s", c->path, err);
		if (oracle_parse(c->text, &o, oerr, sizeof(oerr)))
			fail_msg("%s: the oracle fails: %s", c->path, oerr);
		assert_int_equal(oracle_vars(o.text, &ix), 0);
		compare_entries(c, m, &o);
		compare_vars(c, m, &ix);
		check_resolved(m);
		oracle_vars_free(&ix);
		oracle_fini(&o);
		ptx_module_free(m);
	}
}

/* nvcc -rdc's indirect call (a .callprototype operand) and its table of function addresses. */
static void test_corpus_indirect_call(void **state)
{
	const struct corpus_file *c = NULL;
	struct ptx_module *m;
	const struct ptx_func *f;
	const struct ptx_var *tab;
	bool proto = false;

	(void)state;
	for (unsigned i = 0; i < ncorpus; i++)
		if (strstr(corpus[i].path, "nvcc_rdc.ptx"))
			c = &corpus[i];
	if (!c)
		fail_msg("tests/data/ptx/nvcc_rdc.ptx not found");
	m = parse_ok(c->text);
	f = ptx_find_func(m, "indirect");
	assert_non_null(f);
	for (uint32_t i = 0; i < f->ninsns; i++)
		if (!strcmp(f->insns[i].opcode, "call")) {
			const struct ptx_insn *in = &f->insns[i];

			assert_int_equal(in->ops[1].kind, PTX_OP_REG);
			assert_int_equal(in->ops[in->nops - 1].kind, PTX_OP_PROTO);
			proto = true;
		}
	assert_true(proto);
	tab = module_var(m, "tab");
	assert_non_null(tab);
	assert_int_equal(tab->ninit_addrs, 2);
	assert_int_equal(tab->init_addrs[1].scope, PTX_SCOPE_FUNC);
	assert_string_equal(m->funcs[tab->init_addrs[1].index].name, "_Z3deci");
	assert_int_equal(tab->init_addrs[1].offset, 8);
	ptx_module_free(m);
}

/* ------------------------------------------------------------------ never a crash */

/* A refusal names a line within the text; a success is a consistent module. */
static void parse_any(const char *text, size_t len)
{
	char err[256] = "";
	struct ptx_module *m = ptx_parse(text, len, err, sizeof(err));
	unsigned line = 0, lines = 1;

	if (m) {
		check_resolved(m);
		ptx_module_free(m);
		return;
	}
	for (size_t i = 0; i < len; i++)
		lines += text[i] == '\n';
	if (sscanf(err, "line %u: ", &line) != 1 && strcmp(err, "NUL byte in text: not PTX"))
		fail_msg("message without a line: \"%s\"", err);
	if (line > lines)
		fail_msg("line %u past the end (%u lines): %s", line, lines, err);
}

static void test_truncated_and_garbled(void **state)
{
	unsigned seed = 12345;

	(void)state;
	for (unsigned i = 0; i < ncorpus; i++) {
		const struct corpus_file *c = &corpus[i];
		size_t step = c->len / 300 + 1;
		char *buf = malloc(c->len + 1);

		assert_non_null(buf);
		for (size_t cut = 0; cut < c->len; cut += step) {
			memcpy(buf, c->text, cut); /* exactly cut bytes: no NUL after them */
			parse_any(buf, cut);
		}
		for (unsigned k = 0; k < 200; k++) {
			static const char junk[] = "{}()[];,.%@!|<>=+-_x9\"/*\n\0";

			memcpy(buf, c->text, c->len + 1);
			for (unsigned j = 0; j < 3; j++) {
				seed = seed * 1103515245u + 12345u;
				buf[(seed >> 8) % c->len] = junk[(seed >> 20) % (sizeof(junk) - 1)];
			}
			parse_any(buf, c->len);
		}
		free(buf);
	}
}

/* ------------------------------------------------------------------ constructs */

#define HEAD ".version 8.4\n.target sm_90a\n.address_size 64\n"

static const char calls_ptx[] = HEAD
	".extern .func (.param .b32 func_retval0) vprintf(.param .b64 p0, .param .b64 p1);\n"
	".func (.param .b32 rv) twice(.param .b32 a)\n"                            /* line 5 */
	"{\n"
	"\t.reg .b32 %r<3>;\n"
	"\tld.param.b32 %r1, [a];\n"
	"\tadd.s32 %r2, %r1, %r1;\n"
	"\tst.param.b32 [rv], %r2;\n"                                             /* line 10 */
	"\tret;\n"
	"}\n"
	".visible .entry k(.param .u64 .ptr .global .align 16 out, .param .align 8 .b8 s[24], .param .u32 n)\n"
	".maxntid 128, 1, 1\n"
	"{\n"                                                                     /* line 15 */
	"\t.reg .pred %p<3>;\n"
	"\t.reg .b32 %r<6>;\n"
	"\t.reg .b64 %rd<4>;\n"
	"\t.local .align 8 .b8 depot[16];\n"
	"\tmov.u32 %r1, %tid.x;\n"                                                /* line 20 */
	"\tsetp.lt.u32 %p1|%p2, %r1, 7;\n"
	"\t@!%p1 bra $L_end;\n"
	"\t{\n"
	"\t.reg .pred p;\n"
	"\tsetp.ne.b32 p, %r1, 0;\n"                                              /* line 25 */
	"\tselp.u32 %r2, 1, -2, p;\n"
	"\t}\n"
	"\t{\n"
	"\t.param .b32 param0;\n"
	"\tst.param.b32 [param0], %r2;\n"                                         /* line 30 */
	"\t.param .b32 retval0;\n"
	"\tcall.uni (retval0), twice, (param0);\n"
	"\tld.param.b32 %r3, [retval0];\n"
	"\t}\n"
	"\t{\n"                                                                   /* line 35 */
	"\t.param .b64 param0;\n"
	"\t.param .b32 param1;\n"
	"\tproto_0: .callprototype (.param .b32 _) _ (.param .b32 _);\n"
	"\tmov.u64 %rd1, twice;\n"
	"\tcall (param1), %rd1, (param0), proto_0;\n"                             /* line 40 */
	"\t}\n"
	"\tld.param.v2.u32 {%r4, %r5}, [s+8];\n"
	"\tld.param.u64 %rd2, [out];\n"
	"\tst.global.f32 [%rd2+-4], 0f3F800000;\n"
	"\tst.local.f64 [depot+8], 0d3FF0000000000000;\n"                          /* line 45 */
	"\tmov.u32 %r5, %envreg3;\n"
	"$L_end:\n"
	"\tret;\n"
	"}\n";

static void test_calls_and_scopes(void **state)
{
	struct ptx_module *m = parse_ok(calls_ptx);
	const struct ptx_func *k = ptx_find_func(m, "k"), *tw = ptx_find_func(m, "twice");
	const struct ptx_insn *in;

	(void)state;
	check_resolved(m);
	assert_int_equal(m->version_major, 8);
	assert_int_equal(m->version_minor, 4);
	assert_int_equal(m->sm, 90);
	assert_int_equal(m->nfuncs, 3);
	assert_true(ptx_find_func(m, "vprintf")->is_decl);
	assert_int_equal(tw->nrets, 1);
	assert_int_equal(tw->nparams, 1);
	/* parameters: out at 0 (.align after .ptr is the pointee's), s at 8 (24 bytes), n at 32 */
	assert_int_equal(k->nparams, 3);
	assert_true(k->params[0].is_ptr);
	assert_int_equal(k->params[0].ptr_space, PTX_SPACE_GLOBAL);
	assert_int_equal(k->params[0].align, 8);
	assert_int_equal(k->params[1].offset, 8);
	assert_int_equal(k->params[1].size, 24);
	assert_int_equal(k->params[2].offset, 32);
	assert_int_equal(k->param_bytes, 36);
	assert_int_equal(k->maxntid[0], 128);
	assert_int_equal(k->maxntid[1], 1);
	assert_int_equal(k->nregs, 3 + 6 + 4 + 1);
	assert_string_equal(k->regs[3 + 5].name, "%r5");
	/* call-block params: each top-level block's area starts at 0 */
	assert_int_equal(k->nvars, 1 + 2 + 2);
	assert_int_equal(k->vars[1].offset, 0);
	assert_int_equal(k->vars[2].offset, 4);
	assert_int_equal(k->vars[3].offset, 0);
	assert_int_equal(k->vars[4].offset, 8);
	assert_int_equal(k->vars[3].block, k->vars[4].block);
	assert_int_equal(k->nblocks, 4);

	in = &k->insns[0]; /* mov.u32 %r1, %tid.x */
	assert_int_equal(in->ops[1].kind, PTX_OP_SPECIAL);
	assert_int_equal(in->ops[1].index, PTX_SR_TID_X);
	in = &k->insns[1]; /* setp p|q */
	assert_int_equal(in->ops[0].kind, PTX_OP_PAIR);
	assert_int_equal(in->ops[0].reg, 1);
	assert_int_equal(in->ops[0].index, 2);
	assert_int_equal(in->type, PTX_T_U32);
	in = &k->insns[2]; /* @!%p1 bra $L_end: forward */
	assert_int_equal(in->guard, 1);
	assert_true(in->guard_neg);
	assert_int_equal(in->ops[0].kind, PTX_OP_LABEL);
	assert_int_equal(in->ops[0].index, k->ninsns - 1);
	in = &k->insns[3]; /* the inline block's p is its own register */
	assert_int_equal(in->ops[0].kind, PTX_OP_REG);
	assert_string_equal(k->regs[in->ops[0].reg].name, "p");
	assert_int_equal(in->block, 1);
	in = &k->insns[4]; /* selp's -2 */
	assert_int_equal(in->ops[2].kind, PTX_OP_IMM);
	assert_int_equal(in->ops[2].imm, -2);
	in = &k->insns[6]; /* call.uni (retval0), twice, (param0) */
	assert_string_equal(in->opcode, "call");
	assert_int_equal(in->nops, 3);
	assert_int_equal(in->ops[0].kind, PTX_OP_LIST);
	assert_int_equal(in->ops[1].kind, PTX_OP_SYM);
	assert_int_equal(in->ops[1].scope, PTX_SCOPE_FUNC);
	assert_int_equal(in->ops[1].index, ptx_func_index(m, "twice"));
	assert_int_equal(ptx_elem(m, &in->ops[2], 0)->scope, PTX_SCOPE_VAR);
	assert_int_equal(ptx_elem(m, &in->ops[2], 0)->index, 1);
	in = &k->insns[9]; /* call (param1), %rd1, (param0), proto_0 */
	assert_int_equal(in->nops, 4);
	assert_int_equal(in->ops[1].kind, PTX_OP_REG);
	assert_int_equal(in->ops[3].kind, PTX_OP_PROTO);
	assert_int_equal(in->ops[3].index, 0);
	assert_int_equal(ptx_elem(m, &in->ops[2], 0)->index, 3); /* the second block's param0 */
	in = &k->insns[10]; /* ld.param.v2.u32 {%r4, %r5}, [s+8] */
	assert_int_equal(in->vec, 2);
	assert_int_equal(in->space, PTX_SPACE_PARAM);
	assert_int_equal(in->ops[0].kind, PTX_OP_VEC);
	assert_int_equal(in->ops[0].nelem, 2);
	assert_int_equal(in->ops[1].kind, PTX_OP_ADDR);
	assert_int_equal(in->ops[1].scope, PTX_SCOPE_PARAM);
	assert_int_equal(in->ops[1].index, 1);
	assert_int_equal(in->ops[1].imm, 8);
	in = &k->insns[12]; /* st.global.f32 [%rd2+-4], 0f3F800000 */
	assert_int_equal(in->ops[0].imm, -4);
	assert_int_equal(in->ops[1].is_float, 1);
	assert_int_equal(in->ops[1].imm, 0x3F800000);
	in = &k->insns[13];
	assert_int_equal(in->ops[0].scope, PTX_SCOPE_VAR);
	assert_int_equal(in->ops[1].is_float, 2);
	in = &k->insns[14];
	assert_int_equal(in->ops[1].index, PTX_SR_ENVREG);
	assert_int_equal(in->ops[1].imm, 3);
	assert_int_equal(in->line, 46);
	assert_int_equal(k->line, 13);
	assert_true(!strncmp(m->text + k->body_off, "{\n\t.reg .pred", 13));
	ptx_module_free(m);
}

static const char vars_ptx[] = HEAD
	".global .align 4 .u32 counter;\n"
	".const .align 4 .f32 coeffs[4] = {0f3F000000, -1.25, 2.0, 0.125};\n"
	".global .align 1 .b8 $str[3] = {104, 105};\n"
	".global .align 8 .u64 ptrs[3] = {generic($str), counter+4, 0};\n"
	".extern .shared .align 16 .b8 dyn[];\n"
	".global .align 4 .s32 table[] = {1, -1, 2};\n"
	".shared .align 4 .b8 tile[64];\n";

static void test_module_vars(void **state)
{
	struct ptx_module *m = parse_ok(vars_ptx);
	const struct ptx_var *v;
	float f[4];
	int32_t t[3];

	(void)state;
	assert_int_equal(m->nvars, 7);
	v = module_var(m, "counter");
	assert_int_equal(v->size, 4);
	assert_null(v->init);
	v = module_var(m, "coeffs");
	assert_int_equal(v->space, PTX_SPACE_CONST);
	memcpy(f, v->init, sizeof(f));
	assert_true(f[0] == 0.5f && f[1] == -1.25f && f[2] == 2.0f && f[3] == 0.125f);
	v = module_var(m, "$str");
	assert_int_equal(v->size, 3);
	assert_memory_equal(v->init, "hi", 3);
	v = module_var(m, "ptrs");
	assert_int_equal(v->ninit_addrs, 2);
	assert_int_equal(v->init_addrs[0].offset, 0);
	assert_true(v->init_addrs[0].generic);
	assert_int_equal(v->init_addrs[0].index, 2);
	assert_int_equal(v->init_addrs[0].scope, PTX_SCOPE_GLOBAL);
	assert_int_equal(v->init_addrs[1].offset, 8);
	assert_false(v->init_addrs[1].generic);
	assert_int_equal(v->init_addrs[1].addend, 4);
	assert_int_equal(v->init_addrs[1].bytes, 8);
	v = module_var(m, "dyn");
	assert_true(v->is_extern);
	assert_int_equal(v->size, 0);
	assert_int_equal(v->align, 16);
	v = module_var(m, "table");
	assert_int_equal(v->size, 12);
	memcpy(t, v->init, sizeof(t));
	assert_true(t[0] == 1 && t[1] == -1 && t[2] == 2);
	assert_int_equal(module_var(m, "tile")->space, PTX_SPACE_SHARED);
	ptx_module_free(m);
}

/* The software device links PTX by concatenating files: each file's internal names shadow an
 * earlier file's (resolved as read), .extern and .weak ones merge, visible ones clash. */
static void test_linked_by_concatenation(void **state)
{
	static const char one[] = HEAD
		".extern .func (.param .b32 r) vprintf(.param .b64 a, .param .b64 b);\n"
		".extern .global .align 4 .u32 shared_count;\n"
		".global .align 1 .b8 $str[2] = {65, 0};\n"
		".func h() { ret; }\n"
		".entry k1() { .reg .b64 %rd1; mov.u64 %rd1, $str; call.uni h, (); ret; }\n";
	static const char two[] = "// " HEAD
		".extern .func (.param .b32 r) vprintf(.param .b64 a, .param .b64 b);\n"
		".visible .global .align 4 .u32 shared_count = 7;\n"
		".global .align 1 .b8 $str[2] = {66, 0};\n"
		".func h() { ret; }\n"
		".entry k2() { .reg .b64 %rd1; mov.u64 %rd1, $str; call.uni h, (); ret; }\n";
	char text[2048];
	struct ptx_module *m;
	const struct ptx_func *k1, *k2;

	(void)state;
	snprintf(text, sizeof(text), "%s%s", one, two);
	m = parse_ok(text);
	k1 = ptx_find_func(m, "k1");
	k2 = ptx_find_func(m, "k2");
	assert_int_equal(m->nvars, 3); /* shared_count once, $str twice */
	assert_int_equal(*module_var(m, "shared_count")->init, 7);
	assert_false(module_var(m, "shared_count")->is_extern);
	assert_int_equal(m->vars[k1->insns[0].ops[1].index].init[0], 'A');
	assert_int_equal(m->vars[k2->insns[0].ops[1].index].init[0], 'B');
	assert_int_not_equal(k1->insns[1].ops[0].index, k2->insns[1].ops[0].index);
	assert_int_equal(m->nfuncs, 5); /* vprintf, h, k1, h, k2 */
	ptx_module_free(m);
	parse_fails(HEAD ".visible .global .u32 x;\n.visible .global .u32 x;\n", "line 5: variable x defined twice");
	parse_fails(HEAD ".visible .func f() { ret; }\n.func f() { ret; }\n", "line 5: function f defined twice");
}

/* Debug sections, .loc/.file without ';', comments, pragmas, a recursive .func. */
static void test_debug_and_recursion(void **state)
{
	static const char text[] = "//\n// Generated\n" HEAD
		".file 1 \"/tmp/x.cu\"\n"
		"/* a\n comment */\n"
		".func (.param .b32 r) f(.param .b32 a) .noreturn\n"
		"{\n"
		"\t.reg .b32 %r<2>;\n"
		"\t.loc 1 5 3, function_name $L__info_string0, inlined_at 1 7 1\n"
		"\t.pragma \"nounroll\";\n"
		"\t{ .param .b32 p; .param .b32 q; call.uni (q), f, (p); }\n"
		"\tret;\n"
		"}\n"
		".section .debug_str\n{\n$L__info_string0:\n.b8 95,0\n}\n";
	struct ptx_module *m = parse_ok(text);

	(void)state;
	assert_int_equal(m->nfuncs, 1);
	assert_int_equal(m->funcs[0].ninsns, 2);
	assert_int_equal(m->funcs[0].insns[0].ops[1].index, 0);
	assert_int_equal(m->funcs[0].insns[0].line, 14);
	ptx_module_free(m);
}

static void test_errors_name_the_line(void **state)
{
	(void)state;
	parse_fails("", "no .version directive");
	parse_fails(".target sm_90\n.entry k() { ret; }\n", "line 2: .entry before .version");
	parse_fails(HEAD ".entry k()\n{\n\t.reg .b32 %r<2>;\n\tmov.u32 %r2, 1;\n}\n", "line 7: unknown register %r2");
	parse_fails(HEAD ".entry k()\n{\n\tbra $nowhere;\n}\n", "line 6: unknown name $nowhere");
	parse_fails(HEAD ".entry k()\n{\n\tret;\n", "unterminated body");
	parse_fails(HEAD "/* open\n\n", "line 4: unterminated /* comment");
	parse_fails(HEAD ".entry k(.param .u32 a,)\n{ ret; }\n", "line 4: trailing comma");
	parse_fails(HEAD ".entry k(.param .u32 a) { ret; }\n.entry k() { ret; }\n", "line 5: entry k defined twice");
	parse_fails(HEAD ".entry k() { .reg .v4 .f32 %v; ret; }\n", "vector registers");
	parse_fails(HEAD ".entry k() { .reg .b32 %r1; ld.shared::cluster.u32 %r1, [0]; }\n", ".shared::cluster");
	parse_fails(HEAD ".entry k() { .reg .b32 %r; mov.b32 %r, 0f3F80; }\n", "bad float literal");
	parse_fails(HEAD ".global .u32 x = {1, 2};\n", "too many initial values");
	parse_fails(HEAD ".global .u64 x = nowhere;\n", "unknown symbol nowhere");
	parse_fails(HEAD ".alias a, b;\n", "line 4: directive .alias is not supported");
	parse_fails(".version 9.0\n.entry k() { \x01 }\n", "line 2: byte 0x01");
	{
		/* nesting deep enough to overflow a recursive parser's stack */
		size_t n = 200000;
		char *deep = malloc(sizeof(HEAD) + 2 * n + 64), *q;

		if (!deep) {
			fail_msg("out of memory");
			return;
		}
		q = deep + sprintf(deep, HEAD ".global .u32 x[1] = ");
		memset(q, '{', n);
		q[n] = 0;
		parse_fails(deep, "nested too deeply");
		q = deep + sprintf(deep, HEAD ".entry k() { .reg .pred %%p; @");
		memset(q, '!', n);
		strcpy(q + n, "%p bra k; }");
		parse_fails(deep, "line 4: bad guard");
		q = deep + sprintf(deep, HEAD ".entry k() { .reg .pred %%p; .reg .b32 %%r; selp.b32 %%r, 1, 2, ");
		memset(q, '!', n);
		strcpy(q + n, "%p; }");
		parse_fails(deep, "'!' before an operand");
		free(deep);
	}
	parse_fails(HEAD ".entry k() { .reg .b32 %r<2>; { .reg .b32 %q; } mov.b32 %q, %r1; }\n", "unknown register %q");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_corpus_matches_oracle),
		cmocka_unit_test(test_corpus_indirect_call),
		cmocka_unit_test(test_truncated_and_garbled),
		cmocka_unit_test(test_calls_and_scopes),
		cmocka_unit_test(test_module_vars),
		cmocka_unit_test(test_linked_by_concatenation),
		cmocka_unit_test(test_debug_and_recursion),
		cmocka_unit_test(test_errors_name_the_line),
	};
	return cmocka_run_group_tests(tests, load_corpus, free_corpus);
}
