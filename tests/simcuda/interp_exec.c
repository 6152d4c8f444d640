/* interp_exec.c - the PTX interpreter's executor: runs a decoded kernel over its grid, block
 * after block in an order drawn from SIMCUDA_SEED (block_order below), warps of 32 lanes in
 * lockstep. tests/simcuda layer.
 *
 * A warp's lanes are scheduled as in interp_int.h (invariant 3). State of a warp (struct
 * ii_sched), one function at a time:
 *
 *   mask     lanes running now, all at pc
 *   waiting  lanes parked at lpc[lane] (a branch split them off, or they reached a pc another
 *            group has not): the lowest parked pc runs next, lanes at equal pcs run together
 *   at_bar   lanes parked after a bar.sync, released when no lane of the block can run
 *   live     lanes not exited (returned, for a .func)
 *
 * After every instruction, `pc >= next` (next = lowest parked pc) says the running group has
 * caught up with, or passed, a parked one: it parks too and the lowest group runs (resched).
 * A block runs each warp until it has no running lane, then releases the barrier if any lane
 * waits at one; all lanes exited ends the block. A .func call runs the callee to its return
 * for the calling lanes (a nested run on the C stack); the decoder refuses a .func with a
 * barrier, which such a nested run could not let other warps reach. A call of vprintf is
 * formatted here (device_printf). An access outside shared, local or parameter space stops the
 * warp and the grid with one log line (report_fault). */
#include "interp_int.h"
#include "simcuda.h"
#include "oracle.h"

#include <fenv.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ii_sched {
	uint32_t pc;                 /* pc of the running group */
	uint32_t mask;               /* running lanes */
	uint32_t live;               /* lanes not exited */
	uint32_t waiting;            /* parked lanes (at lpc) */
	uint32_t at_bar;             /* lanes parked after a barrier (at lpc) */
	uint32_t next;               /* lowest lpc over waiting, II_NONE when none */
	uint32_t lpc[II_LANES];      /* parked lanes' pcs */
};

struct ii_wstate {
	struct ii_warp w;            /* what handlers see */
	struct ii_sched s;           /* its schedule */
	uint32_t lanes;              /* lanes that are threads of the block */
	uintptr_t base[II_NSPACE][II_LANES]; /* the kernel frame's bases */
};

struct ii_run {
	const struct sim_kernel_call *k; /* the launch */
	const struct sim_ifunc *f;   /* its kernel */
	struct sim_imod *im;         /* its module's decoded functions */
	uint32_t nthreads, nwarps;   /* per block */
	char *shared;                /* the block's shared memory */
	char *local;                 /* every thread's local area */
	char *cparam;                /* every warp's call area */
	uint64_t *regs;              /* every warp's register file */
	struct ii_wstate *warps;     /* nwarps */
};

static uint64_t total_count;         /* thread-instructions interpreted, all launches */

/* The order of a grid's blocks (issue 24). Hardware promises none, so the software device does
 * not run them in index order by default: a kernel that relies on the order of its blocks, or a
 * fusion of launches that were not independent (cufold's batch-kernel rule runs several
 * launches as the blocks of one), gives other results under some SIMCUDA_SEED.
 * SIMCUDA_BLOCK_ORDER=linear runs blocks in index order (x fastest); shuffled, the default, runs
 * a permutation drawn from SIMCUDA_SEED and the launch's number among the process's interpreted
 * launches. simcuda_block_order_force overrides the environment (tests). */
enum { ORDER_UNREAD = -1, ORDER_LINEAR = 0, ORDER_SHUFFLED = 1 };
static int block_order = ORDER_UNREAD;
static int block_order_forced = ORDER_UNREAD;
static uint64_t order_seed;          /* from SIMCUDA_SEED */
static uint64_t launches_run;        /* interpreted launches so far */
#define ORDER_TABLE_MAX (1u << 22)   /* blocks shuffled through a table; more: an affine order */

static const int rnd_modes[] = { FE_TONEAREST, FE_TOWARDZERO, FE_DOWNWARD, FE_UPWARD };

uint64_t sim__interp_count(void)
{
	return __atomic_load_n(&total_count, __ATOMIC_RELAXED);
}

/* Thread-instructions the interpreter has executed in this process (the benchmark's count). */
uint64_t simcuda_interp_instructions(void);
uint64_t simcuda_interp_instructions(void)
{
	return sim__interp_count();
}

static int forced = -1;             /* SIMCUDA_INTERPRET, or simcuda_interp_force's override */

/* Tests: interpret every kernel (on != 0) or only those without a twin (on == 0), from the
 * next launch on; work already queued keeps the path it was prepared for. */
void simcuda_interp_force(int on);
void simcuda_interp_force(int on)
{
	__atomic_store_n(&forced, on != 0, __ATOMIC_RELAXED);
}

/* Launches ask under the device lock, runs on the scheduler's threads: atomics keep it clean. */
bool sim_interp_is_forced(void)
{
	int f = __atomic_load_n(&forced, __ATOMIC_RELAXED);

	if (f < 0) {
		const char *e = getenv("SIMCUDA_INTERPRET");
		int want = (e && *e && strcmp(e, "0") != 0) || sim_oracle_enabled(), none = -1;

		__atomic_compare_exchange_n(&forced, &none, want, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
		f = __atomic_load_n(&forced, __ATOMIC_RELAXED);
	}
	return f;
}

static void resched(struct ii_sched *s)
{
	uint32_t minpc = II_NONE, next = II_NONE, mask = 0;

	for (uint32_t mm = s->mask; mm; mm &= mm - 1)
		s->lpc[__builtin_ctz(mm)] = s->pc;
	s->waiting |= s->mask;
	s->mask = 0;
	for (uint32_t mm = s->waiting; mm; mm &= mm - 1)
		if (s->lpc[__builtin_ctz(mm)] < minpc)
			minpc = s->lpc[__builtin_ctz(mm)];
	for (uint32_t mm = s->waiting; mm; mm &= mm - 1) {
		unsigned int l = (unsigned int)__builtin_ctz(mm);

		if (s->lpc[l] == minpc)
			mask |= 1u << l;
		else if (s->lpc[l] < next)
			next = s->lpc[l];
	}
	s->waiting &= ~mask;
	s->mask = mask;
	s->pc = minpc;
	s->next = next;
}

static void run(struct ii_run *R, struct ii_warp *w, struct ii_sched *s, const struct sim_ifunc *f);

/* SIMCUDA_INTERP_TRACE=1: one line per warp-instruction on stderr (debugging the decoder). */
static int trace_on = -1;

static void trace(struct ii_warp *w, const struct ii_insn *in, const struct ii_sched *s, uint32_t m)
{
	unsigned int l = m ? (unsigned int)__builtin_ctz(m) : 0;

	fprintf(stderr, "pc %u line %u kind %u mask %08x m %08x", s->pc, in->line, in->kind, s->mask, m);
	for (int i = 0; i < 4; i++)
		if (in->s[i] != II_NONE)
			fprintf(stderr, " s%d[%u]=%llx", i, in->s[i], (unsigned long long)II_R(w, in->s[i])[l]);
	fprintf(stderr, "\n");
}

/* Fill the fixed slots a frame shares with its caller and its constants. */
static void frame_consts(uint64_t *regs, const struct sim_ifunc *f)
{
	for (uint32_t i = 0; i < f->nconsts; i++) {
		uint64_t *r = regs + (size_t)f->consts[i].slot * II_LANES, v = f->consts[i].value;

		for (unsigned int l = 0; l < II_LANES; l++)
			r[l] = v;
	}
}

/* Append to out (size cap, used *len) what printf would for one conversion `spec` (flags,
 * width, precision and the conversion letter, no length), reading its argument from args at
 * *off: ints are 4 bytes (8 with a l/ll/z/j/t length), floats are doubles, %s and %p pointers,
 * each aligned to its size, as nvcc packs them. */
static void one_conversion(char *out, size_t cap, size_t *len, const char *spec, char conv, bool wide,
			   const char *args, size_t *off)
{
	char f[40];
	size_t sz = strchr("diouxXc", conv) ? (wide ? 8 : 4) : 8;
	uint64_t raw = 0;
	int n;

	*off = (*off + sz - 1) & ~(sz - 1);
	memcpy(&raw, args + *off, sz);
	*off += sz;
	/* The format is built from the kernel's own format string, one conversion at a time. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
	if (strchr("diouxX", conv)) {
		long long v = conv == 'd' || conv == 'i' ? (sz == 4 ? (long long)(int32_t)raw : (long long)raw)
							  : (long long)(sz == 4 ? (uint32_t)raw : raw);

		snprintf(f, sizeof(f), "%%%sll%c", spec, conv);
		n = snprintf(out + *len, cap - *len, f, v);
	} else if (conv == 'c') {
		snprintf(f, sizeof(f), "%%%sc", spec);
		n = snprintf(out + *len, cap - *len, f, (int)(int32_t)raw);
	} else if (conv == 's') {
		const char *str = (const char *)(uintptr_t)raw;

		snprintf(f, sizeof(f), "%%%ss", spec);
		n = snprintf(out + *len, cap - *len, f, str ? str : "(null)");
	} else if (conv == 'p') {
		snprintf(f, sizeof(f), "%%%sp", spec);
		n = snprintf(out + *len, cap - *len, f, (void *)(uintptr_t)raw);
	} else {
		double x;

		memcpy(&x, &raw, sizeof(x));
		snprintf(f, sizeof(f), "%%%s%c", spec, conv);
		n = snprintf(out + *len, cap - *len, f, x);
	}
#pragma GCC diagnostic pop
	if (n > 0)
		*len = *len + (size_t)n < cap ? *len + (size_t)n : cap - 1;
}

/* CUDA's printf for one thread: format at fmt, arguments packed at args. Returns the length. */
static int device_printf(const char *fmt, const char *args)
{
	char out[4096];
	size_t len = 0, off = 0;

	for (const char *p = fmt; *p && len < sizeof(out) - 1;) {
		const char *q = p + 1;
		char spec[24];
		bool wide = false;

		if (*p != '%' || p[1] == '%') {
			out[len++] = *p;
			p += *p == '%' ? 2 : 1;
			continue;
		}
		q += strspn(q, "-+ #0");
		q += strspn(q, "0123456789");
		if (*q == '.') {
			q++;
			q += strspn(q, "0123456789");
		}
		if ((size_t)(q - p - 1) >= sizeof(spec) || !*q)
			break;
		memcpy(spec, p + 1, (size_t)(q - p - 1));
		spec[q - p - 1] = 0;
		while (*q && strchr("hlzjtL", *q))
			wide |= *q++ != 'h';
		if (!*q || !strchr("diouxXcspfFeEgGaA", *q)) { /* not a conversion: as written */
			out[len++] = *p++;
			continue;
		}
		one_conversion(out, sizeof(out), &len, spec, *q, wide, args, &off);
		p = q + 1;
	}
	out[len] = 0;
	fputs(out, stdout);
	return (int)len;
}

static void do_vprintf(struct ii_warp *w, const struct ii_call *c, uint32_t m)
{
	for (uint32_t mm = m; mm; mm &= mm - 1) {
		unsigned int l = (unsigned int)__builtin_ctz(mm);
		char *area = (char *)w->base[II_SP_CPARAM][l];
		uint64_t fmt, args;
		int32_t n;

		memcpy(&fmt, area + c->args[0].off, sizeof(fmt));
		memcpy(&args, area + c->args[1].off, sizeof(args));
		n = fmt ? device_printf((const char *)(uintptr_t)fmt, (const char *)(uintptr_t)args) : -1;
		if (c->ret.size)
			memcpy(area + c->ret.off, &n, sizeof(n));
	}
}

static void do_call(struct ii_run *R, struct ii_warp *w, const struct ii_insn *in, uint32_t m)
{
	const struct ii_call *c = &R->im->calls[in->aux];
	const struct sim_ifunc *g = R->im->funcs[c->callee];
	size_t pb = g->param_bytes ? g->param_bytes : 8, cb = g->cparam_bytes ? g->cparam_bytes : 8;
	uint64_t *regs = calloc((size_t)g->nslots * II_LANES, sizeof(*regs));
	char *params = calloc(II_LANES, pb), *cparams = calloc(II_LANES, cb);
	uintptr_t (*base)[II_LANES] = malloc(sizeof(uintptr_t) * II_NSPACE * II_LANES);
	struct ii_warp cw;
	struct ii_sched cs = { .mask = m, .live = m, .next = II_NONE };

	if (!regs || !params || !cparams || !base) {
		sim_log("kernel %s: out of memory calling %s; the call is skipped", R->f->name, g->name);
		goto out;
	}
	memcpy(regs, w->r, sizeof(uint64_t) * II_S_NFIXED * II_LANES);
	frame_consts(regs, g);
	memcpy(base, w->base, sizeof(uintptr_t) * II_NSPACE * II_LANES);
	for (unsigned int l = 0; l < II_LANES; l++) {
		base[II_SP_PARAM][l] = (uintptr_t)(params + l * pb);
		base[II_SP_CPARAM][l] = (uintptr_t)(cparams + l * cb);
	}
	for (uint32_t mm = m; mm; mm &= mm - 1) {
		unsigned int l = (unsigned int)__builtin_ctz(mm);

		for (uint32_t i = 0; i < c->nargs; i++)
			memcpy(params + l * pb + g->formals[i].off,
			       (const char *)w->base[II_SP_CPARAM][l] + c->args[i].off, c->args[i].size);
	}
	cw = (struct ii_warp){ .r = regs, .base = base, .dyn_shared = w->dyn_shared };
	memcpy(cw.lim, w->lim, sizeof(cw.lim));
	cw.lim[II_SP_PARAM] = g->param_bytes;
	cw.lim[II_SP_CPARAM] = g->cparam_bytes;
	run(R, &cw, &cs, g);
	w->count += cw.count;
	if (cw.fault && !w->fault) {
		w->fault = cw.fault;
		w->fault_off = cw.fault_off;
		w->fault_space = cw.fault_space;
	}
	if (c->ret.size)
		for (uint32_t mm = m; mm; mm &= mm - 1) {
			unsigned int l = (unsigned int)__builtin_ctz(mm);

			memcpy((char *)w->base[II_SP_CPARAM][l] + c->ret.off, params + l * pb + g->ret.off,
			       c->ret.size);
		}
out:
	free(regs);
	free(params);
	free(cparams);
	free(base);
}

/* Run the warp's running lanes until none can run (all exited/returned, or at a barrier). */
static void run(struct ii_run *R, struct ii_warp *w, struct ii_sched *s, const struct sim_ifunc *f)
{
	const struct ii_insn *code = f->code;

	while (s->mask) {
		const struct ii_insn *in = &code[s->pc];
		uint32_t m = s->mask;

		if (in->guard != II_NONE) {
			const uint64_t *P = II_R(w, in->guard);
			uint32_t g = 0;

			for (uint32_t mm = m; mm; mm &= mm - 1) {
				unsigned int l = (unsigned int)__builtin_ctz(mm);

				g |= (uint32_t)((P[l] != 0) != in->gneg) << l;
			}
			m = g;
		}
		w->count += (uint64_t)__builtin_popcount(s->mask);
		if (__atomic_load_n(&trace_on, __ATOMIC_RELAXED) > 0)
			trace(w, in, s, m);
		switch (in->kind) {
		case II_K_OP:
			if (m) {
				if (in->rnd) {
					fesetround(rnd_modes[in->rnd]);
					in->fn(w, in, m);
					fesetround(FE_TONEAREST);
				} else {
					in->fn(w, in, m);
				}
			}
			s->pc++;
			if (w->fault) /* an access out of its space: this warp stops, the launch too */
				goto out_fault;
			break;
		case II_K_BRA: {
			uint32_t nt = s->mask & ~m;

			if (!nt) {
				s->pc = in->target;
			} else if (!m) {
				s->pc++;
			} else {
				for (uint32_t mm = m; mm; mm &= mm - 1)
					s->lpc[__builtin_ctz(mm)] = in->target;
				s->waiting |= m;
				if (in->target < s->next)
					s->next = in->target;
				s->mask = nt;
				s->pc++;
			}
			break;
		}
		case II_K_EXIT:
		case II_K_RET:
			s->live &= ~m;
			s->mask &= ~m;
			if (s->mask)
				s->pc++;
			else
				resched(s);
			break;
		case II_K_BAR:
			for (uint32_t mm = m; mm; mm &= mm - 1)
				s->lpc[__builtin_ctz(mm)] = s->pc + 1;
			s->at_bar |= m;
			s->mask &= ~m;
			if (s->mask)
				s->pc++;
			else
				resched(s);
			break;
		case II_K_CALL:
			if (m && R->im->calls[in->aux].callee == II_CALL_VPRINTF)
				do_vprintf(w, &R->im->calls[in->aux], m);
			else if (m)
				do_call(R, w, in, m);
			s->pc++;
			if (w->fault)
				goto out_fault;
			break;
		}
		if (s->pc >= s->next)
			resched(s);
	}
	return;
out_fault:
	*s = (struct ii_sched){ .next = II_NONE };
}

/* Lane l of warp wi: its thread's fixed slots that do not change between blocks. */
static void warp_init(struct ii_run *R, uint32_t wi)
{
	const struct sim_kernel_call *k = R->k;
	struct ii_wstate *ws = &R->warps[wi];
	uint64_t *r = R->regs + (size_t)wi * R->f->nslots * II_LANES;
	const struct sim_ifunc *f = R->f;
	size_t cb = f->cparam_bytes ? f->cparam_bytes : 8;

	memset(ws, 0, sizeof(*ws));
	ws->w.r = r;
	ws->w.base = ws->base;
	for (unsigned int sp = 0; sp < II_NSPACE; sp++)
		ws->w.lim[sp] = ~0ull;
	ws->w.lim[II_SP_SHARED] = f->shared_static;
	ws->w.lim[II_SP_LOCAL] = f->local_bytes;
	ws->w.lim[II_SP_PARAM] = k->fn->entry->param_bytes;
	ws->w.lim[II_SP_CPARAM] = f->cparam_bytes;
	ws->w.dyn_shared = k->shared_bytes;
	for (unsigned int l = 0; l < II_LANES; l++) {
		uint32_t t = wi * II_LANES + l;

		if (t < R->nthreads)
			ws->lanes |= 1u << l;
		r[II_S_TID_X * II_LANES + l] = t % k->block.x;
		r[II_S_TID_Y * II_LANES + l] = (t / k->block.x) % k->block.y;
		r[II_S_TID_Z * II_LANES + l] = t / (k->block.x * k->block.y);
		r[II_S_NTID_X * II_LANES + l] = k->block.x;
		r[II_S_NTID_Y * II_LANES + l] = k->block.y;
		r[II_S_NTID_Z * II_LANES + l] = k->block.z;
		r[II_S_NCTAID_X * II_LANES + l] = k->grid.x;
		r[II_S_NCTAID_Y * II_LANES + l] = k->grid.y;
		r[II_S_NCTAID_Z * II_LANES + l] = k->grid.z;
		r[II_S_LANEID * II_LANES + l] = l;
		r[II_S_WARPID * II_LANES + l] = wi;
		r[II_S_NWARPID * II_LANES + l] = R->nwarps;
		r[II_S_LANEMASK_EQ * II_LANES + l] = 1u << l;
		r[II_S_LANEMASK_LT * II_LANES + l] = (1u << l) - 1;
		r[II_S_LANEMASK_LE * II_LANES + l] = (uint32_t)((2ull << l) - 1);
		r[II_S_LANEMASK_GT * II_LANES + l] = (uint32_t)~((2ull << l) - 1);
		r[II_S_LANEMASK_GE * II_LANES + l] = (uint32_t)~((1u << l) - 1);
		r[II_S_DYNSMEM * II_LANES + l] = k->shared_bytes;
		ws->base[II_SP_SHARED][l] = (uintptr_t)R->shared;
		ws->base[II_SP_LOCAL][l] = (uintptr_t)(R->local + (size_t)t * f->local_bytes);
		ws->base[II_SP_PARAM][l] = (uintptr_t)k->param_buf;
		ws->base[II_SP_CPARAM][l] = (uintptr_t)(R->cparam + ((size_t)wi * II_LANES + l) * cb);
	}
	frame_consts(r, f);
}

static void run_block(struct ii_run *R, uint32_t bx, uint32_t by, uint32_t bz)
{
	memset(R->shared, 0, R->f->shared_static);
	memset(R->shared + II_DYN_SHARED_BASE, 0, R->k->shared_bytes);
	for (uint32_t wi = 0; wi < R->nwarps; wi++) {
		struct ii_wstate *ws = &R->warps[wi];

		for (unsigned int l = 0; l < II_LANES; l++) {
			ws->w.r[II_S_CTAID_X * II_LANES + l] = bx;
			ws->w.r[II_S_CTAID_Y * II_LANES + l] = by;
			ws->w.r[II_S_CTAID_Z * II_LANES + l] = bz;
		}
		ws->s = (struct ii_sched){ .mask = ws->lanes, .live = ws->lanes, .next = II_NONE };
	}
	for (;;) {
		bool barrier = false;

		for (uint32_t wi = 0; wi < R->nwarps; wi++) {
			struct ii_wstate *ws = &R->warps[wi];

			if (ws->s.mask)
				run(R, &ws->w, &ws->s, R->f);
			barrier |= ws->s.at_bar != 0;
		}
		if (!barrier)
			break;
		for (uint32_t wi = 0; wi < R->nwarps; wi++) {
			struct ii_sched *s = &R->warps[wi].s;

			if (!s->at_bar)
				continue;
			s->waiting |= s->at_bar;
			s->at_bar = 0;
			resched(s);
		}
	}
}

/* A warp of the block touched memory outside a state space: say so once and stop the grid
 * (a GPU stops the kernel with an illegal-address error; the device has no sticky error for
 * that, so the loud line and the kernel's partial effects are what the program gets). */
static bool report_fault(struct ii_run *R, uint32_t bx, uint32_t by, uint32_t bz)
{
	static const char *const names[II_NSPACE] = { "generic", "global", "shared", "local",
						      "param", "call param", "const" };

	for (uint32_t wi = 0; wi < R->nwarps; wi++) {
		const struct ii_warp *w = &R->warps[wi].w;

		if (!w->fault)
			continue;
		sim_log("kernel %s: %s memory access out of bounds (offset %llu) at PTX line %u, block "
			"(%u,%u,%u) warp %u; the kernel is stopped there",
			R->f->name, names[w->fault_space], (unsigned long long)w->fault_off, w->fault, bx, by,
			bz, wi);
		return true;
	}
	return false;
}

static uint64_t mix64(uint64_t x)
{
	x += 0x9E3779B97F4A7C15ull;
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
	x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
	return x ^ (x >> 31);
}

static int order_of_env(void)
{
	const char *v = getenv("SIMCUDA_BLOCK_ORDER");
	const char *seed = getenv("SIMCUDA_SEED");

	__atomic_store_n(&order_seed, seed && *seed ? strtoull(seed, NULL, 10) : 1, __ATOMIC_RELAXED);
	if (v && *v && strcmp(v, "linear") && strcmp(v, "shuffled"))
		sim_log("SIMCUDA_BLOCK_ORDER=%s is not linear or shuffled; using shuffled", v);
	return v && !strcmp(v, "linear") ? ORDER_LINEAR : ORDER_SHUFFLED;
}

void simcuda_block_order_force(int order)
{
	__atomic_store_n(&block_order_forced, order < 0 ? ORDER_UNREAD : order ? ORDER_SHUFFLED : ORDER_LINEAR,
			 __ATOMIC_RELAXED);
}

static uint64_t gcd64(uint64_t a, uint64_t b)
{
	while (b) {
		uint64_t t = a % b;

		a = b;
		b = t;
	}
	return a;
}

/* The order this launch runs its nb blocks in: order[i] is the linear index of the i-th block
 * to run (x fastest), or, with *a set, the affine order (a * i + c) mod nb (grids too large for
 * a table). NULL with *a == 0: index order. */
struct ii_order {
	uint32_t *table;
	uint64_t a, c;
};

static void order_make(uint64_t nb, struct ii_order *o)
{
	int mode = __atomic_load_n(&block_order_forced, __ATOMIC_RELAXED);
	uint64_t r;

	o->table = NULL;
	o->a = o->c = 0;
	if (mode == ORDER_UNREAD) {
		mode = __atomic_load_n(&block_order, __ATOMIC_RELAXED);
		if (mode == ORDER_UNREAD) {
			mode = order_of_env();
			__atomic_store_n(&block_order, mode, __ATOMIC_RELAXED);
		}
	}
	if (mode != ORDER_SHUFFLED || nb < 2)
		return;
	r = mix64(__atomic_load_n(&order_seed, __ATOMIC_RELAXED) * 0x100000001B3ull ^
		  __atomic_fetch_add(&launches_run, 1, __ATOMIC_RELAXED));
	if (nb <= ORDER_TABLE_MAX && (o->table = malloc(nb * sizeof(*o->table)))) {
		for (uint32_t i = 0; i < nb; i++)
			o->table[i] = i;
		for (uint32_t i = (uint32_t)nb - 1; i > 0; i--) { /* Fisher-Yates */
			uint32_t j = (uint32_t)((r = mix64(r)) % (i + 1)), t = o->table[i];

			o->table[i] = o->table[j];
			o->table[j] = t;
		}
		return;
	}
	for (o->a = (mix64(r) % nb) | 1; gcd64(o->a, nb) != 1; o->a += 2)
		;
	o->c = mix64(r + 1) % nb;
}

__extension__ typedef unsigned __int128 u128;

static uint64_t order_at(const struct ii_order *o, uint64_t i, uint64_t nb)
{
	if (o->table)
		return o->table[i];
	if (o->a)
		return (uint64_t)(((u128)o->a * i + o->c) % nb);
	return i;
}

/* The oracle's record of this launch starts: generic accesses into the run's own shared, local
 * and call-parameter buffers are not global memory. */
static void oracle_begin(const struct ii_run *R, size_t cb)
{
	const struct sim_kernel_call *k = R->k;
	const unsigned grid[3] = { k->grid.x, k->grid.y, k->grid.z };
	const unsigned block[3] = { k->block.x, k->block.y, k->block.z };
	const void *const excl[3][2] = {
		{ R->shared, R->shared + II_DYN_SHARED_BASE + k->shared_bytes },
		{ R->local, R->local + (size_t)R->nwarps * II_LANES * (R->f->local_bytes ? R->f->local_bytes : 1) },
		{ R->cparam, R->cparam + (size_t)R->nwarps * II_LANES * cb },
	};

	sim_oracle_begin(k->fn->entry->name, grid, block, k->param_buf, k->fn->entry->param_bytes, excl);
}

void sim_interp_run(const struct sim_kernel_call *k)
{
	struct ii_order order;
	uint64_t nb = (uint64_t)k->grid.x * k->grid.y * k->grid.z;
	struct ii_run R = { .k = k, .f = k->fn->interp, .im = k->fn->mod->interp };
	uint64_t count = 0;
	size_t cb;

	if (!R.f) {
		sim_log("kernel %s queued without a decoded body; not run", k->fn->entry->name);
		return;
	}
	if (__atomic_load_n(&trace_on, __ATOMIC_RELAXED) < 0)
		__atomic_store_n(&trace_on, getenv("SIMCUDA_INTERP_TRACE") != NULL, __ATOMIC_RELAXED);
	cb = R.f->cparam_bytes ? R.f->cparam_bytes : 8;
	R.nthreads = k->block.x * k->block.y * k->block.z;
	R.nwarps = (R.nthreads + II_LANES - 1) / II_LANES;
	R.shared = malloc(II_DYN_SHARED_BASE + (size_t)k->shared_bytes);
	R.local = calloc((size_t)R.nwarps * II_LANES, R.f->local_bytes ? R.f->local_bytes : 1);
	R.cparam = calloc((size_t)R.nwarps * II_LANES, cb);
	R.regs = calloc((size_t)R.nwarps * R.f->nslots * II_LANES, sizeof(uint64_t));
	R.warps = calloc(R.nwarps, sizeof(*R.warps));
	if (!R.shared || !R.local || !R.cparam || !R.regs || !R.warps) {
		sim_log("kernel %s: out of memory for the interpreter; not run", k->fn->entry->name);
		goto out;
	}
	for (uint32_t wi = 0; wi < R.nwarps; wi++)
		warp_init(&R, wi);
	order_make(nb, &order);
	if (sim_oracle_enabled())
		oracle_begin(&R, cb);
	for (uint64_t i = 0; i < nb; i++) {
		uint64_t l = order_at(&order, i, nb);
		uint32_t bx = (uint32_t)(l % k->grid.x), by = (uint32_t)(l / k->grid.x % k->grid.y);
		uint32_t bz = (uint32_t)(l / ((uint64_t)k->grid.x * k->grid.y));

		run_block(&R, bx, by, bz);
		if (report_fault(&R, bx, by, bz))
			break;
	}
	if (sim_oracle_recording)
		sim_oracle_end();
	free(order.table);
	for (uint32_t wi = 0; wi < R.nwarps; wi++)
		count += R.warps[wi].w.count;
	__atomic_fetch_add(&total_count, count, __ATOMIC_RELAXED);
out:
	free(R.shared);
	free(R.local);
	free(R.cparam);
	free(R.regs);
	free(R.warps);
}
