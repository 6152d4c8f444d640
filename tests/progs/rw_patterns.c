/* rw_patterns.c - the end-to-end program of cufold's rewrite rules: a training-loop-shaped step
 * on one stream full of the patterns the rules target (slice/glue, copy chains, repeated
 * memsets, repeated elementwise launches), with real compute reading every result; each step
 * ends with a synchronize and a device-to-host copy of a checksum; prints a hash of everything.
 * Knows nothing of cufold; with and without it the output must be identical. tests layer.
 *
 * usage: rw_patterns MODE STEPS [--census]
 *
 * Modes (every mode issues the same operations per step, so the census is the same):
 *   steady    the same buffers every step: every rewrite guard holds on every launch. Per step:
 *             (a) 4 groups slicing a source into 8 abutting pieces (8 scratch buffers shared by
 *                 every group) and gluing them back into an output (slice-glue; the slices of
 *                 groups 0-2 are overwritten by the next group's before anyone reads them:
 *                 dead-write);
 *             (b) 4 copy chains X_i -> tmp -> Y_i through one tmp (copy-chain, dead-write);
 *             (c) a gradient zeroed as 16 abutting memsets of one value (coalesce) and one
 *                 buffer zeroed twice in a row (duplicate);
 *             (d) `scale` over 16 abutting chunks with one scalar, grid derived from the count
 *                 (batch-elementwise, CUFOLD_OPT=2) and `relu` launched twice alike (duplicate).
 *   moving    steady, but in blocks of 3 steps taking turns: the steady buffers; other outputs,
 *             pieces and tmp (the guards hold with new pointers); overlapping or gapped ranges
 *             of the same sizes (a glue output inside its source, a chain's output overlapping
 *             its input, gaps in the memsets and in the scale chunks: guards fail mid-run).
 *   nearmiss  the same skeleton, each pattern nearly there but unsafe to rewrite, so that no
 *             operation of the census may be removed:
 *             (a) group 0: an indirect kernel (embedding_bag_backward: its card cannot say which
 *                 rows it touches) adds into each piece between the slices and the glue; group 1:
 *                 the glue destinations leave a gap, and a `cat` kernel reads every piece after
 *                 the glue (scratch read later: group 1's slices are not dead, though group 2
 *                 overwrites them); group 2: a second stream waits for the slices and changes a
 *                 piece before the glue (joined back by an event); group 3: the slices leave a
 *                 gap in the source;
 *             (b) chain 0: tmp is read by a kernel after the chain (its first copy is not
 *                 dead); chain 1: the indirect kernel writes X_1 between the two copies; chain
 *                 2: the second copy reads tmp on a second stream, between the two writes of
 *                 tmp (events); chain 3: Y_3 overlaps X_3;
 *             (c) the gradient's memsets leave a gap after each chunk (padded rows) or take
 *                 turns with their value; the indirect kernel reads and writes the twice-zeroed
 *                 buffer between its two memsets;
 *             (d) the scale chunks take turns with their scalar or leave gaps; the indirect
 *                 kernel writes relu's input between the two relu launches (and the first
 *                 relu's output is read before that: neither launch is dead).
 *             Copy-chain may still fire (it removes nothing); every rule that would remove one
 *             of these operations must not (tests/e2e/rewrite_patterns.sh compares the
 *             device's counts with CUFOLD_OPT=0).
 *
 * --census prints, before the hash, the pattern operations one step issues by kind:
 *   census: copies=72 memsets=18 elementwise_launches=18
 * (copies: 64 slice/glue + 8 chain; memsets: 16 chunks + 2; elementwise: 16 scale + 2 relu). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"
#include "app_time.h" /* APP_US=N: N us of host time before every enqueue */

#define BLOCK 256      /* threads per block of the 1-D launches */
#define SPARE 256      /* bytes allocated after each buffer, so no two buffers abut */

#define GROUPS 4       /* slice/glue groups per step */
#define PIECES 8       /* slices per group */
#define SG_CH 128      /* floats per piece */
#define SG_N (PIECES * SG_CH)
#define SG_ROOM (SG_N + 2 * SG_CH) /* source/output floats: room for a shifted glue or a gap */

#define CHAINS 4       /* copy chains per step */
#define CC_N 1024      /* floats per chain copy */
#define CC_ROOM (CC_N + 64) /* X floats: room for an overlapping Y */

#define CHUNKS 16      /* memset and scale chunks */
#define CH 256         /* floats per chunk */
#define CH_N (CHUNKS * CH)
#define CH_GAP 16      /* floats of gap in the gapped variants */
#define CH_ROOM (CH_N + CHUNKS * CH_GAP)

#define R_N 1024       /* floats of the duplicate memset's and relu's buffers */
#define ACC_N CH_N     /* floats of the accumulator */
#define EMB_DIM 128    /* floats the indirect kernel adds into */

#define BLOCK_STEPS 3  /* moving: steps per block of one variant */

enum mode { MODE_STEADY, MODE_MOVING, MODE_NEARMISS };

/* What a step of moving mode looks like. */
enum variant {
	V_STEADY,      /* the steady buffers */
	V_OTHER,       /* other outputs, pieces and tmp: the same relations */
	V_OVERLAP,     /* overlaps and gaps: the guards fail */
};

struct kern {
	CUfunction scale, relu;            /* the repeated elementwise launches (census) */
	CUfunction add, axpy, reduce_sum;  /* the step's own compute */
	CUfunction emb_bwd, cat;           /* nearmiss: the indirect writer, the pieces' reader */
};

struct bufs {
	CUdeviceptr src[GROUPS], out[GROUPS], out_alt[GROUPS];  /* SG_ROOM floats */
	CUdeviceptr piece[PIECES], piece_alt[PIECES];           /* SG_CH floats */
	CUdeviceptr x[CHAINS], y[CHAINS];                       /* CC_ROOM, CC_N floats */
	CUdeviceptr tmp, tmp_alt;                               /* CC_N floats */
	CUdeviceptr grad;                                       /* CH_ROOM floats */
	CUdeviceptr dz;                                         /* R_N floats, zeroed twice */
	CUdeviceptr ew_in, ew_out;                              /* CH_ROOM floats */
	CUdeviceptr r_in, r_out;                                /* R_N floats */
	CUdeviceptr acc, sum, noise, side;                      /* ACC_N, 1, CH_ROOM, CC_N floats */
	CUdeviceptr catbuf;                                     /* SG_N floats: the pieces gathered */
	CUdeviceptr idx, offs;                                  /* the indirect kernel's {0}, {0, 1} */
};

static struct kern kfn; /* the kernels, loaded once */

static unsigned grid_for(int n)
{
	return (unsigned)((n + BLOCK - 1) / BLOCK);
}

static void k_scale(CUdeviceptr out, CUdeviceptr in, float s, int n, CUstream st)
{
	void *a[] = { &out, &in, &s, &n };

	CHECK(cuLaunchKernel(kfn.scale, grid_for(n), 1, 1, BLOCK, 1, 1, 0, st, a, NULL));
}

static void k_add(CUdeviceptr out, CUdeviceptr x, CUdeviceptr y, int n, CUstream st)
{
	void *a[] = { &out, &x, &y, &n };

	CHECK(cuLaunchKernel(kfn.add, grid_for(n), 1, 1, BLOCK, 1, 1, 0, st, a, NULL));
}

static void k_axpy(CUdeviceptr y, CUdeviceptr x, float s, int n, CUstream st)
{
	void *a[] = { &y, &x, &s, &n };

	CHECK(cuLaunchKernel(kfn.axpy, grid_for(n), 1, 1, BLOCK, 1, 1, 0, st, a, NULL));
}

static void k_relu(CUdeviceptr out, CUdeviceptr in, int n, CUstream st)
{
	void *a[] = { &out, &in, &n };

	CHECK(cuLaunchKernel(kfn.relu, grid_for(n), 1, 1, BLOCK, 1, 1, 0, st, a, NULL));
}

static void k_reduce(CUdeviceptr out, CUdeviceptr in, int n, CUstream st)
{
	void *a[] = { &out, &in, &n };

	CHECK(cuLaunchKernel(kfn.reduce_sum, 1, 1, 1, BLOCK, 1, 1, 0, st, a, NULL));
}

/* The indirect write: t[0 .. EMB_DIM) += noise[0 .. EMB_DIM), through an index read from device
 * memory (one bag of one index, 0), so no card can say what it touches. */
static void k_indirect(const struct bufs *b, CUdeviceptr t, CUstream st)
{
	CUdeviceptr idx = b->idx, offs = b->offs, dout = b->noise;
	int nbags = 1, dim = EMB_DIM;
	void *a[] = { &t, &idx, &offs, &nbags, &dim, &dout };

	CHECK(cuLaunchKernel(kfn.emb_bwd, grid_for(dim), 1, 1, BLOCK, 1, 1, 0, st, a, NULL));
}

/* catbuf = piece[0] ++ piece[1] ++ ... (tests/kernels/copy.cu's cat: the table by value). */
static void k_cat(const struct bufs *b, const CUdeviceptr *piece, CUstream st)
{
	struct {
		CUdeviceptr src[PIECES];
		int len[PIECES];
		int count;
		int pad;
	} args;
	CUdeviceptr out = b->catbuf;
	void *a[] = { &args, &out };

	memset(&args, 0, sizeof(args));
	for (int k = 0; k < PIECES; k++) {
		args.src[k] = piece[k];
		args.len[k] = SG_CH;
	}
	args.count = PIECES;
	CHECK(cuLaunchKernel(kfn.cat, grid_for(SG_N), 1, 1, BLOCK, 1, 1, 0, st, a, NULL));
}

static void copy_f(CUdeviceptr dst, CUdeviceptr src, int floats, CUstream st)
{
	CHECK(cuMemcpyDtoDAsync(dst, src, (size_t)floats * sizeof(float), st));
}

static void zero_f(CUdeviceptr dst, unsigned value, int floats, CUstream st)
{
	CHECK(cuMemsetD32Async(dst, value, (size_t)floats, st));
}

/* A device buffer of floats, with a spare allocation after it (allocations are handed out
 * first-fit: without the spare, two buffers could abut and rules would find patterns the
 * program did not write). */
static CUdeviceptr alloc_f(size_t floats)
{
	CUdeviceptr p, spare;

	CHECK(cuMemAlloc(&p, floats * sizeof(float)));
	CHECK(cuMemAlloc(&spare, SPARE));
	return p;
}

static void upload_random(CUdeviceptr p, size_t floats, uint32_t seed)
{
	float *h = malloc(floats * sizeof(float));

	if (!h) {
		fprintf(stderr, "rw_patterns: out of memory\n");
		exit(1);
	}
	tl_fill_random(h, floats, seed);
	CHECK(cuMemcpyHtoD(p, h, floats * sizeof(float)));
	free(h);
}

static void alloc_all(struct bufs *b)
{
	static const int idx[1] = { 0 }, offs[2] = { 0, 1 };
	uint32_t seed = 100;

	for (int g = 0; g < GROUPS; g++) {
		b->src[g] = alloc_f(SG_ROOM);
		b->out[g] = alloc_f(SG_ROOM);
		b->out_alt[g] = alloc_f(SG_ROOM);
		upload_random(b->src[g], SG_ROOM, seed++);
		upload_random(b->out[g], SG_ROOM, seed++);
		upload_random(b->out_alt[g], SG_ROOM, seed++);
	}
	for (int k = 0; k < PIECES; k++) {
		b->piece[k] = alloc_f(SG_CH);
		b->piece_alt[k] = alloc_f(SG_CH);
		upload_random(b->piece[k], SG_CH, seed++);
		upload_random(b->piece_alt[k], SG_CH, seed++);
	}
	for (int i = 0; i < CHAINS; i++) {
		b->x[i] = alloc_f(CC_ROOM);
		b->y[i] = alloc_f(CC_N);
		upload_random(b->x[i], CC_ROOM, seed++);
		upload_random(b->y[i], CC_N, seed++);
	}
	b->tmp = alloc_f(CC_N);
	b->tmp_alt = alloc_f(CC_N);
	b->grad = alloc_f(CH_ROOM);
	b->dz = alloc_f(R_N);
	b->ew_in = alloc_f(CH_ROOM);
	b->ew_out = alloc_f(CH_ROOM);
	b->r_in = alloc_f(R_N);
	b->r_out = alloc_f(R_N);
	b->acc = alloc_f(ACC_N);
	b->sum = alloc_f(1);
	b->noise = alloc_f(CH_ROOM);
	b->side = alloc_f(CC_N);
	b->catbuf = alloc_f(SG_N);
	upload_random(b->tmp, CC_N, seed++);
	upload_random(b->tmp_alt, CC_N, seed++);
	upload_random(b->grad, CH_ROOM, seed++);
	upload_random(b->dz, R_N, seed++);
	upload_random(b->ew_in, CH_ROOM, seed++);
	upload_random(b->ew_out, CH_ROOM, seed++);
	upload_random(b->r_in, R_N, seed++);
	upload_random(b->r_out, R_N, seed++);
	upload_random(b->acc, ACC_N, seed++);
	upload_random(b->noise, CH_ROOM, seed++);
	upload_random(b->side, CC_N, seed++);
	upload_random(b->catbuf, SG_N, seed++);
	CHECK(cuMemAlloc(&b->idx, sizeof(idx)));
	CHECK(cuMemAlloc(&b->offs, sizeof(offs)));
	CHECK(cuMemcpyHtoD(b->idx, idx, sizeof(idx)));
	CHECK(cuMemcpyHtoD(b->offs, offs, sizeof(offs)));
}

/* Moving mode's variant for a step (steady and nearmiss: always V_STEADY's pointers). */
static enum variant variant_of(enum mode m, int step)
{
	static const enum variant turn[4] = { V_STEADY, V_OTHER, V_OVERLAP, V_STEADY };

	return m == MODE_MOVING ? turn[(step / BLOCK_STEPS) % 4] : V_STEADY;
}

/* Everything the step's patterns read changes a little every step. */
static void step_inputs(const struct bufs *b, CUstream st)
{
	for (int g = 0; g < GROUPS; g++)
		k_axpy(b->src[g], b->noise, 0.5f, SG_ROOM, st);
	for (int i = 0; i < CHAINS; i++)
		k_axpy(b->x[i], b->noise, 0.25f, CC_ROOM, st);
	k_axpy(b->ew_in, b->noise, 0.125f, CH_ROOM, st);
	k_axpy(b->r_in, b->noise, -0.5f, R_N, st);
}

/* (a) slice/glue: 4 groups of 8 slices and 8 glue copies through the shared pieces. */
static void phase_slice_glue(const struct bufs *b, enum mode m, enum variant v, CUstream st, CUstream st2,
			     CUevent ev_a, CUevent ev_b)
{
	const CUdeviceptr *piece = v == V_OTHER ? b->piece_alt : b->piece;

	for (int g = 0; g < GROUPS; g++) {
		CUdeviceptr src = b->src[g], out = v == V_OTHER ? b->out_alt[g] : b->out[g];
		bool src_gap = m == MODE_NEARMISS && g == 3, dst_gap = m == MODE_NEARMISS && g == 1;

		if (v == V_OVERLAP && g == 1)
			out = src + SG_CH * sizeof(float); /* the glue output one piece inside its source */
		for (int k = 0; k < PIECES; k++)
			copy_f(piece[k], src + (size_t)(k * SG_CH + (src_gap && k >= 4 ? SG_CH / 4 : 0)) * sizeof(float),
			       SG_CH, st);
		/* into every piece: an unknown span is its allocation (each piece's own), and a piece
		 * the kernel left alone would let copy-chain read the glue from the source and
		 * dead-write drop that piece's slice */
		for (int k = 0; m == MODE_NEARMISS && g == 0 && k < PIECES; k++)
			k_indirect(b, piece[k], st);
		if (m == MODE_NEARMISS && g == 2) {
			/* another stream changes a piece between the slices and the glue */
			CHECK(cuEventRecord(ev_a, st));
			CHECK(cuStreamWaitEvent(st2, ev_a, 0));
			k_axpy(piece[5], b->noise, 2.0f, SG_CH, st2);
			CHECK(cuEventRecord(ev_b, st2));
			CHECK(cuStreamWaitEvent(st, ev_b, 0));
		}
		for (int k = 0; k < PIECES; k++)
			copy_f(out + (size_t)(k * SG_CH + (dst_gap && k >= 4 ? SG_CH / 4 : 0)) * sizeof(float), piece[k],
			       SG_CH, st);
		if (m == MODE_NEARMISS && g == 1)
			k_cat(b, piece, st); /* the pieces are read again */
	}
	for (int g = 0; g < GROUPS; g++) {
		CUdeviceptr out = v == V_OTHER ? b->out_alt[g] : b->out[g];

		if (v == V_OVERLAP && g == 1)
			out = b->src[g] + SG_CH * sizeof(float);
		k_add(b->acc, b->acc, out, SG_ROOM - SG_CH, st);
	}
}

/* (b) copy chains X_i -> tmp -> Y_i through one tmp. */
static void phase_chains(const struct bufs *b, enum mode m, enum variant v, CUstream st, CUstream st2, CUevent ev_a,
			 CUevent ev_b)
{
	CUdeviceptr tmp = v == V_OTHER ? b->tmp_alt : b->tmp;

	for (int i = 0; i < CHAINS; i++) {
		CUdeviceptr y = b->y[i];

		if ((v == V_OVERLAP && i == 2) || (m == MODE_NEARMISS && i == 3))
			y = b->x[i] + 64 * sizeof(float); /* the chain's output overlaps its input */
		copy_f(tmp, b->x[i], CC_N, st);
		if (m == MODE_NEARMISS && i == 1)
			k_indirect(b, b->x[i], st); /* the chain's source changes before the second copy */
		if (m == MODE_NEARMISS && i == 2) {
			/* the second copy reads tmp on another stream, before the next write of tmp */
			CHECK(cuEventRecord(ev_a, st));
			CHECK(cuStreamWaitEvent(st2, ev_a, 0));
			copy_f(y, tmp, CC_N, st2);
			CHECK(cuEventRecord(ev_b, st2));
			CHECK(cuStreamWaitEvent(st, ev_b, 0));
		} else {
			copy_f(y, tmp, CC_N, st);
		}
		if (m == MODE_NEARMISS && i == 0)
			k_add(b->side, b->side, tmp, CC_N, st); /* tmp is read after the chain */
	}
	for (int i = 0; i < CHAINS; i++) {
		bool shifted = (v == V_OVERLAP && i == 2) || (m == MODE_NEARMISS && i == 3);

		k_add(b->acc, b->acc, shifted ? b->x[i] : b->y[i], CC_N, st);
	}
	k_add(b->acc, b->acc, b->side, CC_N, st);
	k_add(b->acc, b->acc, b->catbuf, SG_N, st);
}

/* (c) the gradient zeroed in 16 chunks, and one buffer zeroed twice. */
static void phase_memsets(const struct bufs *b, enum mode m, enum variant v, CUstream st)
{
	for (int k = 0; k < CHUNKS; k++) {
		size_t at = (size_t)k * CH;
		unsigned value = 0;

		if (v == V_OVERLAP && k >= CHUNKS / 2)
			at += CH_GAP;
		if (m == MODE_NEARMISS && k < CHUNKS / 2)
			at = (size_t)k * (CH + CH_GAP); /* padded rows: a gap after each */
		if (m == MODE_NEARMISS && k >= CHUNKS / 2) {
			at = (size_t)k * CH + CHUNKS / 2 * CH_GAP;
			value = k % 2 ? 0x3f800000u : 0; /* 1.0f and 0.0f in turn */
		}
		zero_f(b->grad + at * sizeof(float), value, CH, st);
	}
	zero_f(b->dz, 0, R_N, st);
	if (m == MODE_NEARMISS)
		k_indirect(b, b->dz, st);
	zero_f(b->dz, 0, R_N, st);
	/* the gradient and dz are used: they are live after the step */
	k_axpy(b->grad, b->noise, 0.5f, CH_ROOM, st);
	k_axpy(b->dz, b->noise, 0.25f, R_N, st);
	k_add(b->acc, b->acc, b->grad, CH_N, st);
	k_add(b->acc, b->acc, b->dz, R_N, st);
}

/* (d) scale over 16 chunks with one scalar, and relu launched twice. */
static void phase_elementwise(const struct bufs *b, enum mode m, enum variant v, CUstream st)
{
	for (int c = 0; c < CHUNKS; c++) {
		size_t at = (size_t)c * CH;
		float s = 0.5f;

		if ((v == V_OVERLAP || m == MODE_NEARMISS) && c >= CHUNKS / 2)
			at = (size_t)c * CH + (size_t)(m == MODE_NEARMISS ? c - CHUNKS / 2 + 1 : 1) * CH_GAP;
		if (m == MODE_NEARMISS && c < CHUNKS / 2)
			s = c % 2 ? 0.25f : 0.5f;
		k_scale(b->ew_out + at * sizeof(float), b->ew_in + at * sizeof(float), s, CH, st);
	}
	k_relu(b->r_out, b->r_in, R_N, st);
	if (m == MODE_NEARMISS) {
		k_add(b->acc, b->acc, b->r_out, R_N, st);
		k_indirect(b, b->r_in, st);
	}
	k_relu(b->r_out, b->r_in, R_N, st);
	k_add(b->acc, b->acc, b->ew_out, CH_N, st);
	k_add(b->acc, b->acc, b->r_out, R_N, st);
}

static uint64_t hash_all(const struct bufs *b, uint64_t h)
{
	for (int g = 0; g < GROUPS; g++) {
		h = tl_hash_device(b->src[g], SG_ROOM * sizeof(float), h);
		h = tl_hash_device(b->out[g], SG_ROOM * sizeof(float), h);
		h = tl_hash_device(b->out_alt[g], SG_ROOM * sizeof(float), h);
	}
	for (int k = 0; k < PIECES; k++) {
		h = tl_hash_device(b->piece[k], SG_CH * sizeof(float), h);
		h = tl_hash_device(b->piece_alt[k], SG_CH * sizeof(float), h);
	}
	for (int i = 0; i < CHAINS; i++) {
		h = tl_hash_device(b->x[i], CC_ROOM * sizeof(float), h);
		h = tl_hash_device(b->y[i], CC_N * sizeof(float), h);
	}
	h = tl_hash_device(b->tmp, CC_N * sizeof(float), h);
	h = tl_hash_device(b->tmp_alt, CC_N * sizeof(float), h);
	h = tl_hash_device(b->grad, CH_ROOM * sizeof(float), h);
	h = tl_hash_device(b->dz, R_N * sizeof(float), h);
	h = tl_hash_device(b->ew_in, CH_ROOM * sizeof(float), h);
	h = tl_hash_device(b->ew_out, CH_ROOM * sizeof(float), h);
	h = tl_hash_device(b->r_in, R_N * sizeof(float), h);
	h = tl_hash_device(b->r_out, R_N * sizeof(float), h);
	h = tl_hash_device(b->acc, ACC_N * sizeof(float), h);
	h = tl_hash_device(b->catbuf, SG_N * sizeof(float), h);
	return tl_hash_device(b->side, CC_N * sizeof(float), h);
}

static void usage(void)
{
	fprintf(stderr, "usage: rw_patterns steady|moving|nearmiss STEPS [--census]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *mode_name = NULL;
	int steps = -1;
	bool census = false;
	enum mode m;
	struct bufs b;
	CUmodule elem, linalg, train, copy;
	CUstream st, st2;
	CUevent ev_a, ev_b;
	uint64_t hash = TL_HASH_INIT;

	for (int i = 1; i < argc; i++) {
		char *end = NULL;

		if (!strcmp(argv[i], "--census")) {
			census = true;
		} else if (!mode_name) {
			mode_name = argv[i];
		} else if (steps < 0) {
			steps = (int)strtol(argv[i], &end, 10);
			if (*end || end == argv[i] || steps < 0)
				usage();
		} else {
			usage();
		}
	}
	if (!mode_name || steps < 0)
		usage();
	if (!strcmp(mode_name, "steady"))
		m = MODE_STEADY;
	else if (!strcmp(mode_name, "moving"))
		m = MODE_MOVING;
	else if (!strcmp(mode_name, "nearmiss"))
		m = MODE_NEARMISS;
	else
		usage();

	tl_init();
	elem = tl_load_module("elementwise");
	linalg = tl_load_module("linalg");
	train = tl_load_module("train");
	copy = tl_load_module("copy");
	kfn.scale = tl_func(elem, "scale");
	kfn.add = tl_func(elem, "add");
	kfn.axpy = tl_func(elem, "axpy");
	kfn.relu = tl_func(elem, "relu");
	kfn.reduce_sum = tl_func(linalg, "reduce_sum");
	kfn.emb_bwd = tl_func(train, "embedding_bag_backward");
	kfn.cat = tl_func(copy, "cat");
	CHECK(cuStreamCreate(&st, CU_STREAM_NON_BLOCKING));
	CHECK(cuStreamCreate(&st2, CU_STREAM_NON_BLOCKING));
	CHECK(cuEventCreate(&ev_a, CU_EVENT_DISABLE_TIMING));
	CHECK(cuEventCreate(&ev_b, CU_EVENT_DISABLE_TIMING));
	alloc_all(&b);

	for (int step = 0; step < steps; step++) {
		enum variant v = variant_of(m, step);
		float s;

		step_inputs(&b, st);
		phase_slice_glue(&b, m, v, st, st2, ev_a, ev_b);
		phase_chains(&b, m, v, st, st2, ev_a, ev_b);
		phase_memsets(&b, m, v, st);
		phase_elementwise(&b, m, v, st);
		k_reduce(b.sum, b.acc, ACC_N, st);
		CHECK(cuStreamSynchronize(st));
		CHECK(cuMemcpyDtoH(&s, b.sum, sizeof(s)));
		hash = tl_hash(&s, sizeof(s), hash);
	}
	hash = hash_all(&b, hash);
	if (census)
		printf("census: copies=%d memsets=%d elementwise_launches=%d\n", GROUPS * PIECES * 2 + CHAINS * 2,
		       CHUNKS + 2, CHUNKS + 2);
	printf("rw_patterns %s %d: %016llx\n", mode_name, steps, (unsigned long long)hash);
	return 0;
}
