/* interp_decode.c - the PTX interpreter's decoder: one function's body (and the .func bodies
 * it calls) into the compact form of interp_int.h, once, at its first launch.
 * tests/simcuda layer.
 *
 * The text is the module's own copy with comments and strings blanked (ptx.c). A module's
 * top level is indexed once (functions, module-scope .shared); a body is read statement by
 * statement: declarations give register families and symbols, labels give pcs, instructions
 * are split into opcode, modifiers and operands and handed to sim__interp_pick for a handler.
 * Anything not understood stops the decoding with a message naming the instruction, which the
 * launch reports (CUDA_ERROR_NOT_SUPPORTED): an unknown construct is never guessed at. */
#include "interp_int.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEC_MAX_OPS 8                /* operands of one instruction */
#define DEC_MAX_MODS 12              /* modifiers of one opcode */
#define DEC_NAME 1024                /* longest name kept (numba and CUB mangle past 160) */

ii_fn sim__interp_pack_fn(bool unpack);

struct dec_fam {
	char name[DEC_NAME];         /* "%r", or a single register's full name */
	uint32_t base;               /* first slot */
	uint32_t count;              /* registers (1 for a single one) */
	uint8_t bits;                /* declared width */
	bool single;                 /* declared without <N> */
};

struct dec_sym {
	char name[DEC_NAME];         /* as in the PTX */
	uint8_t space;               /* enum ii_space */
	uint64_t off;                /* offset in that space */
};

struct dec_label {
	char name[DEC_NAME];         /* label */
	uint32_t pc;                 /* instruction it precedes */
};

struct dec_fix {
	uint32_t pc;                 /* branch needing a target */
	char name[DEC_NAME];         /* its label */
};

/* A top-level definition of the module. */
struct dec_top {
	char name[DEC_NAME];         /* function name */
	const char *head;            /* start of its header (after .entry/.func) */
	const char *body;            /* its '{' */
	bool is_kernel;              /* .entry */
};

struct dec {
	struct sim_module *mod;      /* the module being read */
	struct sim_imod *im;         /* its interpreter state */
	struct sim_ifunc *f;         /* function being built */
	struct dec_fam *fams;        /* register families */
	uint32_t nfams, capfams;
	struct dec_sym *syms;        /* function-scope symbols */
	uint32_t nsyms, capsyms;
	struct dec_label *labels;    /* labels seen */
	uint32_t nlabels, caplabels;
	struct dec_fix *fixes;       /* branches to resolve */
	uint32_t nfixes, capfixes;
	uint32_t capcode, capconsts; /* allocated f->code, f->consts */
	uint32_t cparam_cur;         /* next free byte of the current call block */
	int depth;                   /* nesting of { } inside the body */
	int line;                    /* line of the statement being decoded */
	char *err;                   /* message buffer */
	size_t errlen;
};

/* Module-scope index, built on first use and kept in sim_imod's tail (see below). */
struct dec_index {
	struct dec_top *tops;        /* function definitions */
	uint32_t ntops;
	struct dec_sym *shared;      /* module-scope .shared variables (offsets from 0) */
	uint32_t nshared;
	uint32_t shared_bytes;       /* their total */
	char (*unsupported)[DEC_NAME]; /* module-scope variables not modeled (.extern, addresses) */
	uint32_t nunsupported;
	struct dec_sym *globals;     /* module-scope .global/.const variables: off = host address */
	uint32_t nglobals;
	void **blocks;               /* their storage, one block each (freed with the module) */
};

struct imod_full {
	struct sim_imod pub;         /* what interp_int.h shows */
	struct dec_index ix;         /* the top-level index */
	bool indexed;                /* ix built */
};

static int fail(struct dec *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(struct dec *d, const char *fmt, ...)
{
	va_list ap;

	if (d->err[0] == 0) {
		va_start(ap, fmt);
		vsnprintf(d->err, d->errlen, fmt, ap);
		va_end(ap);
	}
	return -1;
}

/* Grow an array of n used elements to hold one more. */
static int grow(void **arr, uint32_t n, uint32_t *cap, size_t elem)
{
	void *p;
	uint32_t nc;

	if (n < *cap)
		return 0;
	nc = *cap ? *cap * 2 : 16;
	p = realloc(*arr, (size_t)nc * elem);
	if (!p)
		return -1;
	*arr = p;
	*cap = nc;
	return 0;
}

static int line_at(const char *text, const char *at)
{
	int line = 1;

	for (const char *q = text; q < at; q++)
		line += *q == '\n';
	return line;
}

static const char *skip_ws(const char *p)
{
	while (*p && isspace((unsigned char)*p))
		p++;
	return p;
}

static bool is_ident(int c)
{
	return isalnum(c) || c == '_' || c == '$' || c == '%' || c == '.';
}

/* Copy [a, b) trimmed into buf. */
static void copy_trim(char *buf, size_t len, const char *a, const char *b)
{
	size_t n;

	while (a < b && isspace((unsigned char)*a))
		a++;
	while (b > a && isspace((unsigned char)b[-1]))
		b--;
	n = (size_t)(b - a);
	if (n >= len)
		n = len - 1;
	memcpy(buf, a, n);
	buf[n] = 0;
}

/* The matching close of the bracket at p (same kind), or NULL. */
static const char *match_close(const char *p)
{
	char open = *p, close = open == '{' ? '}' : open == '(' ? ')' : ']';
	int depth = 0;

	for (; *p; p++) {
		if (*p == open)
			depth++;
		else if (*p == close && --depth == 0)
			return p;
	}
	return NULL;
}

static uint32_t type_bytes(const char *t)
{
	int c = sim__interp_type(t + (*t == '.'));

	if (c <= 0)
		return 0;
	return II_T_BITS(c) <= 8 ? 1 : II_T_BITS(c) / 8;
}

/* ------------------------------------------------------------------ module index */

static int parse_imm(const char *s, int type, uint64_t *v);

/* A module-scope `.global`/`.const` variable, [decl, end) up to its ';': host storage with its
 * initializer (numbers only), owned by the module for its life, as device globals are. Returns
 * 1 when it cannot be modeled (an .extern, an address initializer), -1 out of memory. */
static int global_var(struct dec_index *ix, const char *decl, const char *end, uint32_t *capg)
{
	size_t len = (size_t)(end - decl);
	char *buf = malloc(len + 1), *eq, *br, *nm, *q, tname[16] = "";
	uint32_t align = 1, elem, count = 1, k = 0;
	int tc, rc = 1;
	void *block = NULL, **nb;
	struct dec_sym *sym;

	if (!buf)
		return -1;
	memcpy(buf, decl, len);
	buf[len] = 0;
	eq = strchr(buf, '=');
	if (eq)
		*eq++ = 0;
	if (strstr(buf, ".extern"))
		goto out;
	if ((q = strstr(buf, ".align")))
		align = (uint32_t)strtoul(q + 6, NULL, 10);
	for (const char *x = strstr(buf, " ."); x; x = strstr(x + 1, " .")) {
		char tok[16];

		copy_trim(tok, sizeof(tok), x + 1, x + 1 + strcspn(x + 1, " \t\r\n"));
		if (type_bytes(tok))
			snprintf(tname, sizeof(tname), "%s", tok);
	}
	elem = type_bytes(tname);
	tc = sim__interp_type(tname + 1);
	if (!elem || tc <= 0)
		goto out;
	br = strchr(buf, '[');
	nm = br ? br : buf + strlen(buf);
	if (br) {
		count = (uint32_t)strtoul(br + 1, NULL, 10);
		if (!count && eq) { /* name[] = {...}: as many as the initializer has */
			count = 1;
			for (const char *c = eq; *c; c++)
				count += *c == ',';
		}
	}
	while (nm > buf && isspace((unsigned char)nm[-1]))
		nm--;
	q = nm;
	while (q > buf && !isspace((unsigned char)q[-1]))
		q--;
	if (align < 16)
		align = 16;
	block = aligned_alloc(align, ((size_t)elem * (count ? count : 1) + align - 1) / align * align);
	if (!block) {
		rc = -1;
		goto out;
	}
	memset(block, 0, (size_t)elem * (count ? count : 1));
	if (eq) {
		for (char *save = NULL, *t = strtok_r(eq, "{},", &save); t; t = strtok_r(NULL, "{},", &save)) {
			char v[64];
			uint64_t x;

			copy_trim(v, sizeof(v), t, t + strlen(t));
			if (!v[0])
				continue;
			if (parse_imm(v, tc, &x) || k >= count)
				goto out; /* generic(sym), sym+off, or too many values */
			memcpy((char *)block + (size_t)k * elem, &x, elem); /* little-endian host */
			k++;
		}
	}
	if (grow((void **)&ix->globals, ix->nglobals, capg, sizeof(*ix->globals)))
		goto out_oom;
	nb = realloc(ix->blocks, (ix->nglobals + 1) * sizeof(*nb));
	if (!nb)
		goto out_oom;
	ix->blocks = nb;
	ix->blocks[ix->nglobals] = block;
	sym = &ix->globals[ix->nglobals++];
	copy_trim(sym->name, sizeof(sym->name), q, nm);
	sym->space = strstr(buf, ".const") ? II_SP_CONST : II_SP_GLOBAL;
	sym->off = (uint64_t)(uintptr_t)block;
	block = NULL;
	rc = 0;
	goto out;
out_oom:
	rc = -1;
out:
	free(block);
	free(buf);
	return rc;
}

/* A variable the interpreter does not model: its name (before [ or =), so that a kernel using
 * it is refused naming it. */
static int remember_unsupported(struct dec_index *ix, const char *head, uint32_t *cap)
{
	const char *nm = head + strcspn(head, "[="), *q;

	while (nm > head && isspace((unsigned char)nm[-1]))
		nm--;
	q = nm;
	while (q > head && !isspace((unsigned char)q[-1]))
		q--;
	if (grow((void **)&ix->unsupported, ix->nunsupported, cap, sizeof(*ix->unsupported)))
		return -1;
	copy_trim(ix->unsupported[ix->nunsupported++], DEC_NAME, q, nm);
	return 0;
}

static struct dec_index *mod_index(struct sim_module *m, struct sim_imod *im, char *err, size_t errlen)
{
	struct imod_full *full = (struct imod_full *)im;
	struct dec_index *ix = &full->ix;
	const char *p = m->ptx.text;
	uint32_t captops = 0, capsh = 0, capun = 0, capg = 0;

	if (full->indexed)
		return ix;
	while (p && *p) {
		const char *end, *q;
		char head[512];

		p = skip_ws(p);
		if (!*p)
			break;
		end = p + strcspn(p, ";{");
		copy_trim(head, sizeof(head), p, end);
		if (strchr(head, '=')) { /* a variable with an initializer: to its ';' */
			const char *stop = end;

			if (*end == '{') {
				q = match_close(end);
				stop = q ? q + 1 : end + strlen(end);
			}
			stop += strcspn(stop, ";");
			if (strstr(head, ".global") || strstr(head, ".const")) {
				int r = global_var(ix, p, stop, &capg);

				if (r < 0 || (r > 0 && remember_unsupported(ix, head, &capun)))
					goto out_oom;
			}
			p = *stop ? stop + 1 : stop;
			continue;
		}
		if ((q = strstr(head, ".entry")) || (q = strstr(head, ".func"))) {
			bool kern = q[1] == 'e';
			const char *n = skip_ws(q + (kern ? 6 : 5));
			struct dec_top *t;

			if (*n == '(') { /* .func (return param) name */
				const char *c = match_close(n);

				n = c ? skip_ws(c + 1) : n;
			}
			if (*end == '{') {
				if (grow((void **)&ix->tops, ix->ntops, &captops, sizeof(*ix->tops)))
					goto out_oom;
				t = &ix->tops[ix->ntops++];
				memset(t, 0, sizeof(*t));
				copy_trim(t->name, sizeof(t->name), n, n + strcspn(n, " \t\r\n("));
				t->head = p + (q - head) + (kern ? 6 : 5);
				t->body = end;
				t->is_kernel = kern;
				q = match_close(end);
				p = q ? q + 1 : end + strlen(end);
				continue;
			}
		} else if (strstr(head, ".shared")) {
			const char *nm = head + strlen(head);
			uint32_t align = 0, size, count = 1;
			char *al = strstr(head, ".align"), *br = strchr(head, '[');
			char tname[16] = "";
			const char *tp = head;
			struct dec_sym *s;

			if (al)
				align = (uint32_t)strtoul(al + 6, NULL, 10);
			/* the type is the last .bN/.uN/.sN/.fN token */
			for (const char *x = strstr(tp, " ."); x; x = strstr(x + 1, " .")) {
				char tok[16];

				copy_trim(tok, sizeof(tok), x + 1, x + 1 + strcspn(x + 1, " \t"));
				if (type_bytes(tok))
					snprintf(tname, sizeof(tname), "%s", tok);
			}
			size = type_bytes(tname);
			if (br) {
				count = (uint32_t)strtoul(br + 1, NULL, 10);
				nm = br;
			}
			while (nm > head && isspace((unsigned char)nm[-1]))
				nm--;
			q = nm;
			while (q > head && !isspace((unsigned char)q[-1]))
				q--;
			if (!align)
				align = size ? size : 1;
			if (grow((void **)&ix->shared, ix->nshared, &capsh, sizeof(*ix->shared)))
				goto out_oom;
			s = &ix->shared[ix->nshared++];
			copy_trim(s->name, sizeof(s->name), q, nm);
			s->space = II_SP_SHARED;
			if (strstr(head, ".extern")) {
				s->off = II_DYN_SHARED_BASE;
			} else {
				ix->shared_bytes = (ix->shared_bytes + align - 1) & ~(align - 1);
				s->off = ix->shared_bytes;
				ix->shared_bytes += size * count;
			}
		} else if (strstr(head, ".global") || strstr(head, ".const")) {
			int r = global_var(ix, p, end, &capg);

			if (r < 0 || (r > 0 && remember_unsupported(ix, head, &capun)))
				goto out_oom;
		}
		p = *end ? end + 1 : end;
	}
	full->indexed = true;
	return ix;
out_oom:
	snprintf(err, errlen, "out of memory");
	return NULL;
}

/* ------------------------------------------------------------------ slots */

static int new_const(struct dec *d, uint64_t v, uint32_t *slot)
{
	struct sim_ifunc *f = d->f;

	for (uint32_t i = 0; i < f->nconsts; i++)
		if (f->consts[i].value == v) {
			*slot = f->consts[i].slot;
			return 0;
		}
	if (grow((void **)&f->consts, f->nconsts, &d->capconsts, sizeof(*f->consts)))
		return fail(d, "out of memory");
	f->consts[f->nconsts].value = v;
	f->consts[f->nconsts].slot = f->nslots;
	*slot = f->nslots++;
	f->nconsts++;
	return 0;
}

static int special_slot(const char *n, uint32_t *slot)
{
	static const struct {
		const char *name;
		uint32_t slot;
	} sp[] = {
		{ "%tid.x", II_S_TID_X }, { "%tid.y", II_S_TID_Y }, { "%tid.z", II_S_TID_Z },
		{ "%ntid.x", II_S_NTID_X }, { "%ntid.y", II_S_NTID_Y }, { "%ntid.z", II_S_NTID_Z },
		{ "%ctaid.x", II_S_CTAID_X }, { "%ctaid.y", II_S_CTAID_Y }, { "%ctaid.z", II_S_CTAID_Z },
		{ "%nctaid.x", II_S_NCTAID_X }, { "%nctaid.y", II_S_NCTAID_Y },
		{ "%nctaid.z", II_S_NCTAID_Z }, { "%laneid", II_S_LANEID }, { "%warpid", II_S_WARPID },
		{ "%nwarpid", II_S_NWARPID }, { "%lanemask_eq", II_S_LANEMASK_EQ },
		{ "%lanemask_lt", II_S_LANEMASK_LT }, { "%lanemask_le", II_S_LANEMASK_LE },
		{ "%lanemask_gt", II_S_LANEMASK_GT }, { "%lanemask_ge", II_S_LANEMASK_GE },
		{ "%dynamic_smem_size", II_S_DYNSMEM },
	};

	for (unsigned int i = 0; i < sizeof(sp) / sizeof(sp[0]); i++)
		if (!strcmp(n, sp[i].name)) {
			*slot = sp[i].slot;
			return 0;
		}
	return -1;
}

/* A declared register: slot and width. */
static int reg_slot(struct dec *d, const char *n, uint32_t *slot, unsigned int *bits)
{
	/* the latest declaration first: an inline asm block's `.reg .s32 r0` is its own */
	for (uint32_t i = d->nfams; i-- > 0;) {
		const struct dec_fam *fm = &d->fams[i];
		size_t len = strlen(fm->name);
		char *end;
		unsigned long k;

		if (fm->single) {
			if (strcmp(n, fm->name))
				continue;
			*slot = fm->base;
			*bits = fm->bits;
			return 0;
		}
		if (strncmp(n, fm->name, len) || !isdigit((unsigned char)n[len]))
			continue;
		k = strtoul(n + len, &end, 10);
		if (*end || k >= fm->count)
			continue;
		*slot = fm->base + (uint32_t)k;
		*bits = fm->bits;
		return 0;
	}
	return -1;
}

static const struct dec_sym *find_sym(struct dec *d, const struct dec_index *ix, const char *n)
{
	for (uint32_t i = d->nsyms; i-- > 0;)
		if (!strcmp(d->syms[i].name, n))
			return &d->syms[i];
	for (uint32_t i = 0; i < ix->nshared; i++)
		if (!strcmp(ix->shared[i].name, n))
			return &ix->shared[i];
	for (uint32_t i = 0; i < ix->nglobals; i++)
		if (!strcmp(ix->globals[i].name, n))
			return &ix->globals[i];
	return NULL;
}

static int add_sym(struct dec *d, const char *n, uint8_t space, uint64_t off)
{
	if (grow((void **)&d->syms, d->nsyms, &d->capsyms, sizeof(*d->syms)))
		return fail(d, "out of memory");
	snprintf(d->syms[d->nsyms].name, DEC_NAME, "%s", n);
	d->syms[d->nsyms].space = space;
	d->syms[d->nsyms].off = off;
	d->nsyms++;
	return 0;
}

/* An immediate: 0fXXXXXXXX (f32 bits), 0dXXXXXXXXXXXXXXXX (f64 bits), hex, octal or decimal
 * integers (a trailing U allowed), or a decimal float for a float type. */
static int parse_imm(const char *s, int type, uint64_t *v)
{
	char *end;
	int neg = 0;
	const char *p = s;

	if ((p[0] == '0') && (p[1] == 'f' || p[1] == 'F' || p[1] == 'd' || p[1] == 'D')) {
		*v = strtoull(p + 2, &end, 16);
		return *end ? -1 : 0;
	}
	if ((type & II_T_FLOAT) && strpbrk(p, ".eE") && !strpbrk(p, "xX")) {
		double x = strtod(p, &end);

		if (*end)
			return -1;
		if (II_T_BITS(type) == 32) {
			float f = (float)x;
			uint32_t u;

			memcpy(&u, &f, 4);
			*v = u;
		} else {
			memcpy(v, &x, 8);
		}
		return 0;
	}
	if (*p == '-') {
		neg = 1;
		p++;
	}
	if (!isdigit((unsigned char)*p))
		return -1;
	errno = 0;
	*v = strtoull(p, &end, 0);
	if (*end == 'U')
		end++;
	if (*end || errno)
		return -1;
	if (neg)
		*v = (uint64_t)0 - *v;
	return 0;
}

static uint64_t width_mask(int type)
{
	unsigned int b = type > 0 ? II_T_BITS(type) : 64;

	return b >= 64 ? ~0ull : (1ull << b) - 1;
}

/* A source operand into a slot: register, special register, immediate (masked to the
 * instruction's width) or the address of a symbol. */
static int src_slot(struct dec *d, const struct dec_index *ix, const char *s, int type, uint32_t *slot)
{
	unsigned int bits;
	uint64_t v;
	const struct dec_sym *sym;

	if (*s == '%') {
		if (reg_slot(d, s, slot, &bits) == 0 || special_slot(s, slot) == 0)
			return 0;
		return fail(d, "unknown or unsupported register %s", s);
	}
	if (reg_slot(d, s, slot, &bits) == 0) /* inline asm declares registers without a % */
		return 0;
	if (parse_imm(s, type, &v) == 0)
		return new_const(d, v & width_mask(type), slot);
	sym = find_sym(d, ix, s);
	if (sym) /* an offset in its space; for .global/.const the host address */
		return new_const(d, sym->off, slot);
	for (uint32_t i = 0; i < ix->nunsupported; i++)
		if (!strcmp(ix->unsupported[i], s))
			return fail(d, "module-scope .global/.const variable %s (not modeled)", s);
	return fail(d, "unknown operand %s", s);
}

static int dst_slot(struct dec *d, const char *s, uint32_t *slot, unsigned int *bits)
{
	if (!strcmp(s, "_")) {
		*slot = II_NONE;
		*bits = 64;
		return 0;
	}
	if (reg_slot(d, s, slot, bits) == 0)
		return 0;
	return fail(d, "unknown destination %s", s);
}

/* [reg], [reg+imm], [sym], [sym+imm], [imm]: slot, offset and, for a symbol, its space
 * (II_NSPACE when the address is a register or an absolute value). */
static int addr_operand(struct dec *d, const struct dec_index *ix, const char *s, uint32_t *slot,
			int64_t *off, unsigned int *space)
{
	char in[DEC_NAME * 2], *plus;
	uint64_t v = 0;
	unsigned int bits;
	const struct dec_sym *sym;

	*space = II_NSPACE;
	*off = 0;
	if (*s != '[' || s[strlen(s) - 1] != ']')
		return fail(d, "bad address %s", s);
	copy_trim(in, sizeof(in), s + 1, s + strlen(s) - 1);
	plus = strpbrk(in + 1, "+-");
	if (plus) {
		char *q = plus + (*plus == '+');

		while (isspace((unsigned char)*q))
			q++;
		if (parse_imm(q, 0, &v))
			return fail(d, "bad address offset in %s", s);
		*off = (int64_t)v;
		if (*plus == '-')
			*off = -*off;
		*plus = 0;
		copy_trim(in, sizeof(in), in, in + strlen(in));
	}
	if (in[0] == '%') {
		if (reg_slot(d, in, slot, &bits))
			return fail(d, "unknown address register %s", in);
		return 0;
	}
	if (reg_slot(d, in, slot, &bits) == 0) /* an inline asm register */
		return 0;
	*slot = II_S_ZERO;
	if (parse_imm(in, 0, &v) == 0) {
		*off += (int64_t)v;
		return 0;
	}
	sym = find_sym(d, ix, in);
	if (!sym) {
		for (uint32_t i = 0; i < ix->nunsupported; i++)
			if (!strcmp(ix->unsupported[i], in))
				return fail(d, "module-scope .global/.const variable %s (not modeled)", in);
		return fail(d, "unknown symbol %s", in);
	}
	*off += (int64_t)sym->off;
	*space = sym->space;
	return 0;
}

/* ------------------------------------------------------------------ declarations */

/* `.reg .b32 %r<47>;` or `.reg .pred %p, %q;` */
static int decl_reg(struct dec *d, char *stmt)
{
	char *p = stmt + 4, *t, *save = NULL;
	char type[16];
	int tc;

	p = (char *)skip_ws(p);
	t = p;
	p += strcspn(p, " \t");
	copy_trim(type, sizeof(type), t, p);
	if (!strncmp(type, ".v", 2))
		return fail(d, "vector registers (.reg %s)", type);
	tc = sim__interp_type(type + 1);
	if (tc <= 0)
		return fail(d, "register type %s", type);
	for (char *n = strtok_r(p, ",", &save); n; n = strtok_r(NULL, ",", &save)) {
		char name[DEC_NAME], *lt;
		struct dec_fam *fm;

		copy_trim(name, sizeof(name), n, n + strlen(n));
		if (grow((void **)&d->fams, d->nfams, &d->capfams, sizeof(*d->fams)))
			return fail(d, "out of memory");
		fm = &d->fams[d->nfams++];
		memset(fm, 0, sizeof(*fm));
		lt = strchr(name, '<');
		fm->bits = (uint8_t)II_T_BITS(tc);
		fm->base = d->f->nslots;
		if (lt) {
			fm->count = (uint32_t)strtoul(lt + 1, NULL, 10);
			*lt = 0;
		} else {
			fm->count = 1;
			fm->single = true;
		}
		snprintf(fm->name, sizeof(fm->name), "%s", name);
		d->f->nslots += fm->count;
	}
	return 0;
}

/* `.param .b32 name`, `.param .align 8 .b8 name[16]`, `.param .u64 .ptr .align 1 name`:
 * size and alignment; the name is copied out. */
static int param_decl(struct dec *d, const char *decl, char *name, uint32_t *size, uint32_t *align)
{
	char buf[512], *save = NULL;
	uint32_t elem = 0, count = 1, al = 0;
	bool after_ptr = false;

	snprintf(buf, sizeof(buf), "%s", decl);
	name[0] = 0;
	for (char *t = strtok_r(buf, " \t\r\n", &save); t; t = strtok_r(NULL, " \t\r\n", &save)) {
		if (!strcmp(t, ".param") || !strcmp(t, ".reg"))
			continue;
		if (!strcmp(t, ".ptr")) {
			after_ptr = true;
		} else if (!strcmp(t, ".align")) {
			char *n = strtok_r(NULL, " \t\r\n", &save);

			if (n && !after_ptr)
				al = (uint32_t)strtoul(n, NULL, 10);
		} else if (*t == '.') {
			if (!strcmp(t, ".global") || !strcmp(t, ".shared") || !strcmp(t, ".local") ||
			    !strcmp(t, ".const"))
				continue;
			elem = type_bytes(t);
			if (!elem)
				return fail(d, "parameter type %s", t);
		} else {
			char *br = strchr(t, '[');

			if (br) {
				count = (uint32_t)strtoul(br + 1, NULL, 10);
				*br = 0;
			}
			snprintf(name, DEC_NAME, "%s", t);
		}
	}
	if (!elem || !name[0])
		return fail(d, "parameter declaration %s", decl);
	*size = elem * count;
	*align = al ? al : elem;
	return 0;
}

/* `.shared/.local .align N .type name[count];` inside a body. */
static int decl_var(struct dec *d, char *stmt, uint8_t space)
{
	char name[DEC_NAME];
	uint32_t size, align;
	char tmp[512];

	snprintf(tmp, sizeof(tmp), "%s", stmt + 6 + (space == II_SP_SHARED ? 1 : 0));
	if (param_decl(d, tmp, name, &size, &align))
		return -1;
	if (space == II_SP_SHARED) {
		uint32_t at = (d->f->shared_static + align - 1) & ~(align - 1);

		d->f->shared_static = at + size;
		return add_sym(d, name, space, at);
	} else {
		uint32_t at = (d->im->local_next + align - 1) & ~(align - 1);

		d->im->local_next = at + size;
		return add_sym(d, name, space, at);
	}
}

/* The header's parameter lists: (ret)? name (formals). Kernels take offsets from ptx.c's
 * layout so they agree with the launch's parameter buffer. */
static int decl_header(struct dec *d, const struct dec_top *t)
{
	const char *p = t->head, *open, *close;
	const struct sim_ptx_entry *e = NULL;
	uint32_t off = 0, n = 0;

	if (t->is_kernel) {
		for (unsigned int i = 0; i < d->mod->ptx.nentries; i++)
			if (!strcmp(d->mod->ptx.entries[i].name, t->name))
				e = &d->mod->ptx.entries[i];
		if (!e)
			return fail(d, "entry %s not in the module's layout", t->name);
	}
	/* a .func's return parameter comes before its name */
	p = skip_ws(p);
	if (*p == '(') {
		char name[DEC_NAME], decl[512];
		uint32_t size, align;

		close = match_close(p);
		if (!close || close > t->body)
			return fail(d, "header of %s", t->name);
		copy_trim(decl, sizeof(decl), p + 1, close);
		if (param_decl(d, decl, name, &size, &align))
			return -1;
		d->f->ret.off = 0;
		d->f->ret.size = size;
		off = size;
		if (add_sym(d, name, II_SP_PARAM, 0))
			return -1;
		p = close + 1;
	}
	p = strstr(p, t->name);
	if (!p || p > t->body)
		return fail(d, "header of %s", t->name);
	p += strlen(t->name);
	open = strchr(p, '(');
	if (!open || open > t->body)
		return 0;
	close = match_close(open);
	if (!close)
		return fail(d, "parameter list of %s", t->name);
	for (const char *a = open + 1; a < close;) {
		const char *b = a + strcspn(a, ",)");
		char name[DEC_NAME], decl[512];
		uint32_t size, align, at;

		if (b > close)
			b = close;
		copy_trim(decl, sizeof(decl), a, b);
		a = b + 1;
		if (!decl[0])
			continue;
		if (param_decl(d, decl, name, &size, &align))
			return -1;
		if (t->is_kernel) {
			if (n >= e->nparams)
				return fail(d, "parameters of %s", t->name);
			at = (uint32_t)e->params[n].offset;
		} else {
			struct ii_pslot *fs;

			at = (off + align - 1) & ~(align - 1);
			off = at + size;
			fs = realloc(d->f->formals, (n + 1) * sizeof(*fs));
			if (!fs)
				return fail(d, "out of memory");
			d->f->formals = fs;
			fs[n].off = at;
			fs[n].size = size;
			d->f->nformals = n + 1;
		}
		if (add_sym(d, name, II_SP_PARAM, at))
			return -1;
		n++;
	}
	d->f->param_bytes = (off + 7) & ~7u;
	return 0;
}

/* ------------------------------------------------------------------ instructions */

static struct ii_insn *emit(struct dec *d)
{
	struct ii_insn *in;

	if (grow((void **)&d->f->code, d->f->ncode, &d->capcode, sizeof(*d->f->code))) {
		fail(d, "out of memory");
		return NULL;
	}
	in = &d->f->code[d->f->ncode++];
	memset(in, 0, sizeof(*in));
	for (int i = 0; i < 4; i++)
		in->d[i] = II_NONE;
	for (int i = 0; i < 5; i++)
		in->s[i] = II_NONE;
	in->guard = II_NONE;
	in->target = II_NONE;
	in->nvec = 1;
	in->line = (uint16_t)d->line;
	return in;
}

/* Split operands at top-level commas. */
static int split_ops(char *s, char **ops, int max)
{
	int n = 0, depth = 0;
	char *start = s;

	if (!*skip_ws(s))
		return 0;
	for (char *p = s;; p++) {
		if (*p == '[' || *p == '{' || *p == '(')
			depth++;
		else if (*p == ']' || *p == '}' || *p == ')')
			depth--;
		if ((*p == ',' && depth == 0) || !*p) {
			bool end = !*p;

			if (n == max)
				return -1;
			*p = 0;
			while (isspace((unsigned char)*start))
				start++;
			for (char *e = start + strlen(start); e > start && isspace((unsigned char)e[-1]);)
				*--e = 0;
			ops[n++] = start;
			start = p + 1;
			if (end)
				break;
		}
	}
	return n;
}

/* {a, b, c, d} into its elements (in place). */
static int split_vec(char *s, char **el, int max)
{
	size_t n = strlen(s);

	if (s[0] != '{' || s[n - 1] != '}')
		return -1;
	s[n - 1] = 0;
	return split_ops(s + 1, el, max);
}

/* Spaces whose addresses are host addresses (base 0): one symbol serves all three. */
static bool is_flat(unsigned int space)
{
	return space == II_SP_GENERIC || space == II_SP_GLOBAL || space == II_SP_CONST;
}

static uint8_t space_of(const struct ii_opinfo *oi)
{
	for (unsigned int i = 0; i < oi->nmods; i++) {
		const char *m = oi->mods[i];

		if (!strcmp(m, "global"))
			return II_SP_GLOBAL;
		if (!strcmp(m, "shared") || !strncmp(m, "shared::", 8))
			return II_SP_SHARED;
		if (!strcmp(m, "local"))
			return II_SP_LOCAL;
		if (!strcmp(m, "param"))
			return II_SP_PARAM;
		if (!strcmp(m, "const"))
			return II_SP_CONST;
	}
	return II_SP_GENERIC;
}

static int decode_func(struct dec_index *ix, struct sim_module *m, const char *name, uint32_t *index,
		       char *err, size_t errlen);

static bool has_body(const struct dec_index *ix, const char *name)
{
	for (uint32_t i = 0; i < ix->ntops; i++)
		if (!strcmp(ix->tops[i].name, name))
			return true;
	return false;
}

/* call(.uni) (ret), name, (args): the callee is decoded now (recursion is refused). */
static int decode_call(struct dec *d, struct dec_index *ix, struct ii_insn *in, char **ops, int nops)
{
	struct ii_call *c;
	const struct sim_ifunc *callee;
	const struct dec_sym *sym;
	char *retn = NULL, *name, *args = NULL;
	uint32_t idx;
	int i = 0;

	if (nops >= 1 && ops[0][0] == '(')
		retn = ops[i++];
	if (i >= nops)
		return fail(d, "call without a target");
	name = ops[i++];
	if (i < nops)
		args = ops[i++];
	if (i != nops || name[0] == '%')
		return fail(d, "indirect call or call with a prototype");
	if (!strcmp(name, "vprintf") && !has_body(ix, name)) {
		/* printf: (format, argument buffer) -> int, formatted by the executor */
		static struct ii_pslot vp_formals[2] = { { 0, 8 }, { 8, 8 } };
		static const struct sim_ifunc vp = { .formals = vp_formals, .nformals = 2, .ret = { 0, 4 } };

		callee = &vp;
		idx = II_CALL_VPRINTF;
	} else {
		if (decode_func(ix, d->mod, name, &idx, d->err, d->errlen))
			return -1;
		callee = d->im->funcs[idx];
	}
	if (callee->has_bar)
		return fail(d, "call of %s, which uses bar.sync", name);
	if (grow((void **)&d->im->calls, d->im->ncalls, &d->im->capcalls, sizeof(*d->im->calls)))
		return fail(d, "out of memory");
	c = &d->im->calls[d->im->ncalls];
	memset(c, 0, sizeof(*c));
	c->callee = idx;
	if (retn) {
		char rn[DEC_NAME];

		copy_trim(rn, sizeof(rn), retn + 1, retn + strlen(retn) - 1);
		sym = find_sym(d, ix, rn);
		if (!sym || sym->space != II_SP_CPARAM)
			return fail(d, "call return %s", rn);
		c->ret.off = (uint32_t)sym->off;
		c->ret.size = callee->ret.size;
	}
	if (args) {
		char *el[16];
		int n;

		args[strlen(args) - 1] = 0;
		n = args[0] == '(' ? split_ops(args + 1, el, 16) : -1;
		if (n < 0 || (uint32_t)n != callee->nformals)
			return fail(d, "call arguments of %s", name);
		for (int k = 0; k < n; k++) {
			sym = find_sym(d, ix, el[k]);
			if (!sym || sym->space != II_SP_CPARAM)
				return fail(d, "call argument %s", el[k]);
			c->args[k].off = (uint32_t)sym->off;
			c->args[k].size = callee->formals[k].size;
		}
		c->nargs = (uint32_t)n;
	} else if (callee->nformals) {
		return fail(d, "call arguments of %s", name);
	}
	in->kind = II_K_CALL;
	in->aux = d->im->ncalls++;
	return 0;
}

static int decode_insn(struct dec *d, struct dec_index *ix, char *stmt)
{
	char *p = stmt, *opcode, *rest, *ops[DEC_MAX_OPS], *mods[DEC_MAX_MODS], opbuf[96];
	const char *why = NULL;
	struct ii_opinfo oi = { 0 };
	struct ii_insn *in = emit(d);
	unsigned int bits, space;
	int nops, type;
	uint8_t ispace;

	if (!in)
		return -1;
	if (*p == '@') {
		char g[DEC_NAME];
		char *e = p + strcspn(p, " \t");

		copy_trim(g, sizeof(g), p + 1 + (p[1] == '!'), e);
		in->gneg = p[1] == '!';
		if (reg_slot(d, g, &in->guard, &bits))
			return fail(d, "guard %s", g);
		p = (char *)skip_ws(e);
	}
	opcode = p;
	p += strcspn(p, " \t\r\n");
	rest = *p ? p + 1 : p;
	*p = 0;
	snprintf(opbuf, sizeof(opbuf), "%s", opcode);
	oi.op = strtok_r(opbuf, ".", &p);
	for (char *t = strtok_r(NULL, ".", &p); t && oi.nmods < DEC_MAX_MODS; t = strtok_r(NULL, ".", &p))
		mods[oi.nmods++] = t;
	oi.mods = (const char *const *)mods;
	nops = split_ops(rest, ops, DEC_MAX_OPS);
	if (nops < 0)
		return fail(d, "too many operands");
	type = 0;
	for (unsigned int i = oi.nmods; i-- > 0;)
		if ((type = sim__interp_type(mods[i])) != 0)
			break;

	/* control flow */
	if (!strcmp(oi.op, "bra")) {
		struct dec_fix *fx;

		if (nops != 1)
			return fail(d, "bra operands");
		if (grow((void **)&d->fixes, d->nfixes, &d->capfixes, sizeof(*d->fixes)))
			return fail(d, "out of memory");
		fx = &d->fixes[d->nfixes++];
		fx->pc = d->f->ncode - 1;
		snprintf(fx->name, sizeof(fx->name), "%s", ops[0]);
		in->kind = II_K_BRA;
		return 0;
	}
	if (!strcmp(oi.op, "ret") || !strcmp(oi.op, "exit")) {
		if (!d->f->is_kernel && oi.op[0] == 'e')
			return fail(d, "exit in a .func");
		in->kind = d->f->is_kernel ? II_K_EXIT : II_K_RET;
		return 0;
	}
	if ((!strcmp(oi.op, "bar") || !strcmp(oi.op, "barrier")) &&
	    (oi.nmods == 0 || !strcmp(mods[0], "sync"))) {
		uint64_t v;

		if (nops != 1 || parse_imm(ops[0], 0, &v) || v != 0)
			return fail(d, "barrier other than bar.sync 0");
		in->kind = II_K_BAR;
		d->f->has_bar = true;
		return 0;
	}
	if (!strcmp(oi.op, "call"))
		return decode_call(d, ix, in, ops, nops);

	/* memory */
	if (!strcmp(oi.op, "ld") || !strcmp(oi.op, "ldu") || !strcmp(oi.op, "st")) {
		bool st = oi.op[0] == 's';
		char *el[4];
		int ne = 1;
		int64_t off;
		uint32_t slot;

		if (nops != 2)
			return fail(d, "operands");
		if (addr_operand(d, ix, ops[st ? 0 : 1], &slot, &off, &space))
			return -1;
		ispace = space_of(&oi);
		if (space != II_NSPACE) {
			if (space == II_SP_CPARAM && ispace == II_SP_PARAM)
				ispace = II_SP_CPARAM;
			else if (space == II_SP_PARAM && ispace == II_SP_GENERIC)
				return fail(d, "generic access to a parameter symbol");
			else if (space != ispace && !(is_flat(space) && is_flat(ispace)))
				return fail(d, "symbol of another state space");
		}
		in->space = ispace;
		in->s[0] = slot;
		in->off = off;
		el[0] = ops[st ? 1 : 0];
		if (el[0][0] == '{' && (ne = split_vec(el[0], el, 4)) <= 0)
			return fail(d, "vector operand");
		in->wm = ~0ull;
		for (int i = 0; i < ne; i++) {
			if (st) {
				if (src_slot(d, ix, el[i], type, &in->s[1 + i]))
					return -1;
			} else {
				if (dst_slot(d, el[i], &in->d[i], &bits))
					return -1;
				in->wm = bits >= 64 ? ~0ull : (1ull << bits) - 1;
			}
		}
		if (sim__interp_pick(&oi, in, &why))
			goto out_unsupported;
		if (in->nvec != ne)
			return fail(d, "vector width");
		return 0;
	}
	if (!strcmp(oi.op, "atom") || !strcmp(oi.op, "red")) {
		bool red = oi.op[0] == 'r';
		int64_t off;
		uint32_t slot;
		int a = red ? 0 : 1;

		if (nops < a + 2 || nops > a + 3)
			return fail(d, "operands");
		if (!red && dst_slot(d, ops[0], &in->d[0], &bits))
			return -1;
		if (addr_operand(d, ix, ops[a], &slot, &off, &space))
			return -1;
		ispace = space_of(&oi);
		if (ispace != II_SP_GLOBAL && ispace != II_SP_SHARED && ispace != II_SP_GENERIC)
			return fail(d, "atomic state space");
		if (space != II_NSPACE && space != ispace && !(is_flat(space) && is_flat(ispace)))
			return fail(d, "symbol of another state space");
		in->space = ispace;
		in->s[0] = slot;
		in->off = off;
		if (src_slot(d, ix, ops[a + 1], type, &in->s[1]))
			return -1;
		in->s[2] = II_S_ZERO;
		if (nops == a + 3 && src_slot(d, ix, ops[a + 2], type, &in->s[2]))
			return -1;
		if (sim__interp_pick(&oi, in, &why))
			goto out_unsupported;
		return 0;
	}
	if (!strcmp(oi.op, "mov") && nops == 2 && (ops[0][0] == '{' || ops[1][0] == '{')) {
		char *el[4];
		bool unpack = ops[0][0] == '{';
		int ne = split_vec(ops[unpack ? 0 : 1], el, 4);
		unsigned int eb = 0;

		if (ne < 2)
			return fail(d, "vector operand");
		for (int i = 0; i < ne; i++) {
			if (unpack) {
				if (dst_slot(d, el[i], &in->d[i], &bits))
					return -1;
			} else {
				uint32_t s;

				if (reg_slot(d, el[i], &s, &bits))
					return fail(d, "pack of %s", el[i]);
				in->s[i] = s;
			}
			if (el[i][0] != '_')
				eb = bits;
		}
		if (unpack) {
			if (src_slot(d, ix, ops[1], type, &in->s[0]))
				return -1;
		} else if (dst_slot(d, ops[0], &in->d[0], &bits)) {
			return -1;
		}
		if (!eb || eb * (unsigned int)ne != (unsigned int)II_T_BITS(type))
			return fail(d, "pack/unpack widths");
		in->size = (uint8_t)eb;
		in->nvec = (uint8_t)ne;
		in->fn = sim__interp_pack_fn(unpack);
		return 0;
	}
	if (!strcmp(oi.op, "cvta")) {
		ispace = space_of(&oi);
		if (ispace == II_SP_GENERIC)
			return fail(d, "cvta state space");
		if (nops != 2 || dst_slot(d, ops[0], &in->d[0], &bits) || src_slot(d, ix, ops[1], type, &in->s[0]))
			return fail(d, "operands");
		in->space = is_flat(ispace) ? II_SP_GENERIC : ispace;
		if (sim__interp_pick(&oi, in, &why))
			goto out_unsupported;
		return 0;
	}

	/* everything else: d[|q], sources */
	{
		int first = 1, src_type = type;
		bool nodst = !strcmp(oi.op, "membar") || !strcmp(oi.op, "fence") || !strcmp(oi.op, "prefetch") ||
			     !strcmp(oi.op, "bar") || !strcmp(oi.op, "nanosleep");

		if (!strcmp(oi.op, "mul") || !strcmp(oi.op, "mad") || !strcmp(oi.op, "cvt"))
			src_type = type; /* sources have the last type's width */
		if (nodst) {
			first = 0;
		} else {
			char *bar;

			if (nops < 1)
				return fail(d, "operands");
			bar = strchr(ops[0], '|');
			if (bar) {
				char q[DEC_NAME];

				copy_trim(q, sizeof(q), bar + 1, bar + strlen(bar));
				*bar = 0;
				if (dst_slot(d, q, &in->d[1], &bits))
					return -1;
			}
			if (dst_slot(d, ops[0], &in->d[0], &bits))
				return -1;
			if (in->d[0] == II_NONE)
				return fail(d, "sink destination");
		}
		if (nops - first > 4)
			return fail(d, "operands");
		for (int i = first; i < nops && !nodst; i++) {
			const char *o = ops[i];
			int st = src_type;

			if (*o == '!') {
				if (!strcmp(oi.op, "vote") && i == first) {
					in->sgn = 1;
					o++;
				} else {
					return fail(d, "negated operand %s", o);
				}
			}
			/* selp's c and setp's bool operand are predicates; vote's source too */
			if ((!strcmp(oi.op, "selp") && i == 3) || (!strcmp(oi.op, "setp") && i == 3))
				st = 1 | II_T_PRED;
			if (!strcmp(oi.op, "lop3") && i == 4) {
				uint64_t lut;

				if (parse_imm(o, 0, &lut))
					return fail(d, "lop3 table");
				in->off = (int64_t)lut;
				continue;
			}
			if (src_slot(d, ix, o, st, &in->s[i - first]))
				return -1;
		}
		if (!strcmp(oi.op, "lop3") && nops != 5)
			return fail(d, "lop3 operands");
		if (sim__interp_pick(&oi, in, &why))
			goto out_unsupported;
		if (!strcmp(oi.op, "shfl") && nops != 5)
			return fail(d, "shfl operands");
		if (!strcmp(oi.op, "setp") && in->aux2 && nops != 4)
			return fail(d, "setp bool operand");
		for (int i = 0; !nodst && i < 4 && i < nops - first; i++) /* bar.warp.sync's mask: unread */
			if (in->s[i] == II_NONE)
				return fail(d, "missing operand");
		if (!nodst && nops - first < 1 && strcmp(oi.op, "activemask"))
			return fail(d, "operands");
		return 0;
	}
out_unsupported:
	return fail(d, "unsupported %s (%s)", opcode, why ? why : "?");
}

/* ------------------------------------------------------------------ bodies */

static int decode_body(struct dec *d, struct dec_index *ix, const struct dec_top *t)
{
	const char *p = t->body + 1, *end = match_close(t->body);
	char stmt[1024];
	const char *line_pos = t->body;

	if (!end)
		return fail(d, "unbalanced body");
	d->depth = 0;
	while (p < end) {
		const char *q;

		p = skip_ws(p);
		if (p >= end)
			break;
		for (; line_pos < p; line_pos++) /* counted as the body is read, not from the top */
			d->line += *line_pos == '\n';
		if (*p == '{') {
			/* a call block starts its .param area afresh; inline asm inside one does not */
			if (d->depth++ == 0)
				d->cparam_cur = 0;
			p++;
			continue;
		}
		if (*p == '}') {
			d->depth--;
			p++;
			continue;
		}
		/* a label: name ':' (not '::') */
		q = p;
		while (q < end && is_ident((unsigned char)*q))
			q++;
		if (q < end && *q == ':' && q[1] != ':' && q > p) {
			struct dec_label *lb;

			if (grow((void **)&d->labels, d->nlabels, &d->caplabels, sizeof(*d->labels)))
				return fail(d, "out of memory");
			lb = &d->labels[d->nlabels++];
			copy_trim(lb->name, sizeof(lb->name), p, q);
			lb->pc = d->f->ncode;
			p = q + 1;
			continue;
		}
		/* vector operands hold braces: a statement runs to its ';' */
		q = p + strcspn(p, ";");
		if (q >= end || *q != ';')
			return fail(d, "statement without ';'");
		copy_trim(stmt, sizeof(stmt), p, q);
		p = q + 1;
		if (!strncmp(stmt, ".reg", 4)) {
			if (decl_reg(d, stmt))
				return -1;
		} else if (!strncmp(stmt, ".shared", 7)) {
			if (decl_var(d, stmt, II_SP_SHARED))
				return -1;
		} else if (!strncmp(stmt, ".local", 6)) {
			if (decl_var(d, stmt, II_SP_LOCAL))
				return -1;
		} else if (!strncmp(stmt, ".param", 6)) {
			char name[DEC_NAME];
			uint32_t size, align, at;

			if (d->depth == 0)
				return fail(d, ".param outside a call block");
			if (param_decl(d, stmt, name, &size, &align))
				return -1;
			at = (d->cparam_cur + align - 1) & ~(align - 1);
			d->cparam_cur = at + size;
			if (d->cparam_cur > d->f->cparam_bytes)
				d->f->cparam_bytes = d->cparam_cur;
			if (add_sym(d, name, II_SP_CPARAM, at))
				return -1;
		} else if (!strncmp(stmt, ".pragma", 7) || !strncmp(stmt, ".loc", 4) ||
			   !strncmp(stmt, ".file", 5)) {
			continue;
		} else if (stmt[0] == '.') {
			return fail(d, "directive %.40s", stmt);
		} else if (decode_insn(d, ix, stmt)) {
			return -1;
		}
	}
	/* falling off the end returns */
	{
		struct ii_insn *in = emit(d);

		if (!in)
			return -1;
		in->kind = d->f->is_kernel ? II_K_EXIT : II_K_RET;
	}
	for (uint32_t i = 0; i < d->nfixes; i++) {
		uint32_t k;

		for (k = 0; k < d->nlabels; k++)
			if (!strcmp(d->labels[k].name, d->fixes[i].name))
				break;
		if (k == d->nlabels) {
			d->line = d->f->code[d->fixes[i].pc].line;
			return fail(d, "branch to unknown label %s", d->fixes[i].name);
		}
		d->f->code[d->fixes[i].pc].target = d->labels[k].pc;
	}
	return 0;
}

static void ifunc_free(struct sim_ifunc *f)
{
	if (!f)
		return;
	free(f->name);
	free(f->code);
	free(f->consts);
	free(f->formals);
	free(f);
}

/* Decode function `name` of the module (or find it decoded); its index in im->funcs. */
static int decode_func(struct dec_index *ix, struct sim_module *m, const char *name, uint32_t *index,
		       char *err, size_t errlen)
{
	struct sim_imod *im = m->interp;
	struct dec d = { .mod = m, .im = im, .err = err, .errlen = errlen };
	const struct dec_top *t = NULL;
	struct sim_ifunc *f;
	uint32_t idx;
	int rc = -1;

	for (uint32_t i = 0; i < im->nfuncs; i++)
		if (!strcmp(im->funcs[i]->name, name)) {
			if (!im->funcs[i]->code) /* still being decoded: a recursive call */
				return fail(&d, "recursive call of %s", name);
			*index = i;
			return 0;
		}
	for (uint32_t i = 0; i < ix->ntops; i++)
		if (!strcmp(ix->tops[i].name, name))
			t = &ix->tops[i];
	if (!t)
		return fail(&d, "function %s has no body in this module", name);
	f = calloc(1, sizeof(*f));
	if (!f || grow((void **)&im->funcs, im->nfuncs, &im->capfuncs, sizeof(*im->funcs))) {
		free(f);
		return fail(&d, "out of memory");
	}
	f->name = strdup(name);
	f->is_kernel = t->is_kernel;
	f->nslots = II_S_NFIXED;
	f->shared_static = ix->shared_bytes;
	f->local_off = im->local_next;
	idx = im->nfuncs;
	im->funcs[im->nfuncs++] = f;
	d.f = f;
	d.line = line_at(m->ptx.text, t->body);
	if (!f->name) {
		fail(&d, "out of memory");
		goto out;
	}
	if (decl_header(&d, t) || decode_body(&d, ix, t))
		goto out;
	if (f->shared_static > II_DYN_SHARED_BASE) {
		fail(&d, "static shared memory of %u bytes", f->shared_static);
		goto out;
	}
	f->local_bytes = (im->local_next + 15) & ~15u;
	*index = idx;
	rc = 0;
out:
	if (rc && d.err[0]) {
		char msg[256];

		snprintf(msg, sizeof(msg), "%s", d.err);
		snprintf(err, errlen, "%s line %d: %s", name, d.line, msg);
	}
	if (rc) {
		/* keep the slot (a name without code) only while decoding; drop it on failure */
		if (im->nfuncs == idx + 1) {
			im->nfuncs--;
			ifunc_free(f);
		} else {
			free(f->code);
			f->code = NULL;
			f->ncode = 0;
		}
	}
	free(d.fams);
	free(d.syms);
	free(d.labels);
	free(d.fixes);
	return rc;
}

void sim_interp_mod_free(struct sim_imod *im)
{
	struct imod_full *full = (struct imod_full *)im;

	if (!im)
		return;
	for (uint32_t i = 0; i < im->nfuncs; i++)
		ifunc_free(im->funcs[i]);
	free(im->funcs);
	free(im->calls);
	free(full->ix.tops);
	free(full->ix.shared);
	free(full->ix.unsupported);
	for (uint32_t i = 0; i < full->ix.nglobals; i++)
		free(full->ix.blocks[i]);
	free(full->ix.blocks);
	free(full->ix.globals);
	free(full);
}

CUresult sim_interp_prepare(struct sim_func *fn)
{
	struct sim_module *m = fn->mod;
	struct dec_index *ix;
	char err[320] = "";
	uint32_t idx;

	if (fn->interp_tried)
		return (CUresult)fn->interp_rc;
	fn->interp_tried = true;
	fn->interp_rc = CUDA_ERROR_NOT_SUPPORTED;
	if (!m->ptx.text) {
		sim_log("kernel %s: no PTX text kept; the interpreter cannot run it", fn->entry->name);
		goto out;
	}
	if (!m->interp) {
		m->interp = calloc(1, sizeof(struct imod_full));
		if (!m->interp) {
			fn->interp_rc = CUDA_ERROR_OUT_OF_MEMORY;
			goto out;
		}
	}
	ix = mod_index(m, m->interp, err, sizeof(err));
	if (!ix || decode_func(ix, m, fn->entry->name, &idx, err, sizeof(err))) {
		sim_log("kernel %s: the PTX interpreter cannot run it: %s", fn->entry->name, err);
		goto out;
	}
	fn->interp = m->interp->funcs[idx];
	fn->interp_rc = CUDA_SUCCESS;
out:
	return (CUresult)fn->interp_rc;
}
