/* recsys.c - a DLRM-shaped training step on the driver API (the `recsys` workload): 26 sparse
 * features through per-table embedding-bag lookups on a second stream, each followed by its own
 * layer norm and tanh and its own small tower (linear + relu, linear: the per-feature transform
 * after pooling of Meta's production models and DHEN-style architectures); 13 dense features
 * split into per-feature slices, each through its own learned affine normalization (scale and
 * shift), and glued back with copies; bottom and top MLPs; a pairwise dot interaction built from
 * cat, split and row concat; the backward of all of it (sparse backward on the lookup stream, as
 * autograd runs a backward op on its forward op's stream); zero_grad as one memset per gradient
 * and a for-loop SGD update per parameter; the loss copied to the host every step. tests layer;
 * knows nothing of cufold.
 *
 * Shapes follow the reference configs (../../shared/reference/costs.md s7, s10): 26 tables with
 * the MLPerf row counts capped at 1000, embedding dim 16, per-feature towers 16-16-16, bottom
 * MLP 13-128-64-32-16, top MLP 367-64-32-1 (367 = 16 + 27*26/2), batch 32*scale, pooling factor
 * 1-4; 222 parameters, each its own allocation: per sparse feature 7 (table, layer-norm gain
 * and bias, two tower weights and biases), per dense feature 2 (affine scale and shift, an
 * nn.Linear(1, 1)), and the MLPs' 14 weights and biases; per table one host-to-device copy of
 * indices and one of offsets (Meta's "2 x #features").
 * usage: recsys [--steps N] [--scale S] [--time] [--census] [--drop-wait]
 * (--drop-wait leaves out the two joins of the lookup stream: a deliberate race for the tests.) */
#include "wl.h"

#define NSPARSE 26
#define NDENSE 13
#define DIM 16
#define NFEAT (NSPARSE + 1)                  /* interaction inputs: bottom output + tables */
#define NPAIRS (NFEAT * (NFEAT - 1) / 2)     /* 351 */
#define TOP_IN (DIM + NPAIRS)                /* 367 */
#define MAX_ROWS 1000
#define MAX_POOL 4
#define CAT_MAX 8                            /* inputs per cat / split_copy launch (copy.cu) */
#define NBOT 4
#define NTOP 3

/* MLPerf DLRM table sizes (TorchRec's copy, costs.md s7). */
static const int table_rows[NSPARSE] = {
	45833188, 36746, 17245, 7413, 20243, 3, 7114, 1441, 62, 29275261, 1572176, 345138, 10,
	2209, 11267, 128, 4, 974, 14, 48937457, 11316796, 40094537, 452104, 12606, 104, 35,
};

static const int bot_dims[NBOT + 1] = {NDENSE, 128, 64, 32, DIM};
static const int top_dims[NTOP + 1] = {TOP_IN, 64, 32, 1};

/* Must match tests/kernels/copy.cu. */
struct cat_args {
	CUdeviceptr src[CAT_MAX];    /* input pointers, in output order */
	int len[CAT_MAX];            /* floats taken from each input */
	int count;                   /* inputs used */
};

struct split_args {
	CUdeviceptr dst[CAT_MAX];    /* output pointers, in source order */
	int len[CAT_MAX];            /* floats written to each output */
	int count;                   /* outputs used */
};

struct sparse {
	int rows;                    /* table rows */
	int table, gamma, beta;      /* parameter indices: table and layer norm */
	int w1, b1, w2, b2;          /* parameter indices: the tower's two linears */
	CUdeviceptr idx, off;        /* indices (B * MAX_POOL ints) and offsets (B + 1 ints) */
	CUdeviceptr pooled, ln, e;   /* bag sums, after layer norm, after tanh: B x DIM each */
	CUdeviceptr h1, t;           /* tower: after linear + relu, after the second linear */
	CUdeviceptr dt, dh1, dz1;    /* gradients of t, of h1, and of h1 before the relu */
	CUdeviceptr de, dln, dpool, xhat; /* gradients of e, ln, pooled, and the normalized input */
	int *h_idx, *h_off;          /* pinned host staging of this step's indices and offsets */
};

struct layer {
	int w, b;                    /* parameter indices */
	CUdeviceptr y;               /* output (after relu when it has one), rows x out */
	CUdeviceptr dy;              /* gradient of the output (before relu backward) */
	CUdeviceptr dh;              /* gradient after relu backward */
};

static uint32_t mix(uint32_t x)
{
	x ^= x >> 16;
	x *= 0x7feb352du;
	x ^= x >> 15;
	x *= 0x846ca68bu;
	x ^= x >> 16;
	return x;
}

/* This step's bags for table f: 1..MAX_POOL indices each, deterministic in (step, f, bag). */
static void make_bags(struct sparse *sp, int f, int step, int batch)
{
	int at = 0;

	sp->h_off[0] = 0;
	for (int b = 0; b < batch; b++) {
		uint32_t r = mix((uint32_t)(step * 7919 + f * 104729 + b * 31));
		int pool = 1 + (int)(r % MAX_POOL);

		for (int j = 0; j < pool; j++)
			sp->h_idx[at++] = (int)(mix(r + (uint32_t)j * 2654435761u) % (uint32_t)sp->rows);
		sp->h_off[b + 1] = at;
	}
}

/* Concatenate (or split) a list of equally sized feature blocks, CAT_MAX per launch. */
static void cat_blocks(const struct wl_kernels *k, CUdeviceptr out, const CUdeviceptr *in, int n,
		       int len, CUstream s)
{
	for (int first = 0; first < n; first += CAT_MAX) {
		struct cat_args a;
		CUdeviceptr dst = out + (size_t)first * len * sizeof(float);
		void *args[] = {&a, &dst};
		int total;

		memset(&a, 0, sizeof(a));
		a.count = n - first < CAT_MAX ? n - first : CAT_MAX;
		for (int i = 0; i < a.count; i++) {
			a.src[i] = in[first + i];
			a.len[i] = len;
		}
		total = a.count * len;
		wl_1d(k->cat, total, s, args);
	}
}

static void split_blocks(const struct wl_kernels *k, const CUdeviceptr *out, CUdeviceptr in, int n,
			 int len, CUstream s)
{
	for (int first = 0; first < n; first += CAT_MAX) {
		struct split_args a;
		CUdeviceptr src = in + (size_t)first * len * sizeof(float);
		void *args[] = {&src, &a};

		memset(&a, 0, sizeof(a));
		a.count = n - first < CAT_MAX ? n - first : CAT_MAX;
		for (int i = 0; i < a.count; i++) {
			a.dst[i] = out[first + i];
			a.len[i] = len;
		}
		wl_1d(k->split_copy, a.count * len, s, args);
	}
}

int main(int argc, char **argv)
{
	struct wl_opts o;
	struct wl_kernels k;
	struct wl_params ps = {0};
	struct wl_timer tm;
	struct sparse sp[NSPARSE];
	struct layer bot[NBOT], top[NTOP];
	CUstream s, se;
	CUevent ev_start, ev_emb, ev_dT, ev_sbwd;
	CUdeviceptr dense, feat[NDENSE], fnorm[NDENSE], xin, dxin, T, Z, R, dR, dZ, dT;
	CUdeviceptr dxb_a, dxb_b, dxb;
	CUdeviceptr labels, terms, dz, lsum, loss, cat_in[NFEAT], split_out[NFEAT];
	float *h_dense, *h_labels, *h_loss;
	float lr = 0.05f, wd = 1e-4f, eps = 1e-5f, last_loss = 0.0f;
	int batch, nbd, one = 1, dscale[NDENSE], dshift[NDENSE];
	uint64_t h = TL_HASH_INIT;

	wl_parse(argc, argv, &o, 20);
	batch = 32 * o.scale;
	nbd = batch * DIM;
	tl_init();
	wl_load_kernels(&k);
	CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CHECK(cuStreamCreate(&se, CU_STREAM_NON_BLOCKING));
	CHECK(cuEventCreate(&ev_start, CU_EVENT_DISABLE_TIMING));
	CHECK(cuEventCreate(&ev_emb, CU_EVENT_DISABLE_TIMING));
	CHECK(cuEventCreate(&ev_dT, CU_EVENT_DISABLE_TIMING));
	CHECK(cuEventCreate(&ev_sbwd, CU_EVENT_DISABLE_TIMING));

	/* parameters: per sparse feature (table, layer norm, tower), per dense feature, MLPs */
	for (int f = 0; f < NSPARSE; f++) {
		struct sparse *q = &sp[f];

		q->rows = table_rows[f] < MAX_ROWS ? table_rows[f] : MAX_ROWS;
		q->table = wl_param_new(&ps, q->rows * DIM, 0.1f, 0.0f, 100u + (uint32_t)f);
		q->gamma = wl_param_new(&ps, DIM, 0.0f, 1.0f, 0);
		q->beta = wl_param_new(&ps, DIM, 0.0f, 0.0f, 0);
		q->w1 = wl_param_new(&ps, DIM * DIM, 1.0f / sqrtf((float)DIM), 0.0f, 400u + (uint32_t)f);
		q->b1 = wl_param_new(&ps, DIM, 0.01f, 0.0f, 430u + (uint32_t)f);
		q->w2 = wl_param_new(&ps, DIM * DIM, 1.0f / sqrtf((float)DIM), 0.0f, 460u + (uint32_t)f);
		q->b2 = wl_param_new(&ps, DIM, 0.01f, 0.0f, 490u + (uint32_t)f);
		q->idx = wl_alloc((size_t)batch * MAX_POOL);
		q->off = wl_alloc((size_t)batch + 1);
		q->pooled = wl_alloc((size_t)nbd);
		q->ln = wl_alloc((size_t)nbd);
		q->e = wl_alloc((size_t)nbd);
		q->h1 = wl_alloc((size_t)nbd);
		q->t = wl_alloc((size_t)nbd);
		q->dt = wl_alloc((size_t)nbd);
		q->dh1 = wl_alloc((size_t)nbd);
		q->dz1 = wl_alloc((size_t)nbd);
		q->de = wl_alloc((size_t)nbd);
		q->dln = wl_alloc((size_t)nbd);
		q->dpool = wl_alloc((size_t)nbd);
		q->xhat = wl_alloc((size_t)nbd);
		q->h_idx = wl_alloc_host((size_t)batch * MAX_POOL * sizeof(int));
		q->h_off = wl_alloc_host(((size_t)batch + 1) * sizeof(int));
	}
	/* a learned scale and shift per dense feature, starting as the identity */
	for (int i = 0; i < NDENSE; i++) {
		dscale[i] = wl_param_new(&ps, 1, 0.0f, 1.0f, 0);
		dshift[i] = wl_param_new(&ps, 1, 0.0f, 0.0f, 0);
	}
	for (int l = 0; l < NBOT; l++) {
		int in = bot_dims[l], out = bot_dims[l + 1];

		bot[l].w = wl_param_new(&ps, in * out, 1.0f / sqrtf((float)in), 0.0f, 200u + (uint32_t)l);
		bot[l].b = wl_param_new(&ps, out, 0.01f, 0.0f, 210u + (uint32_t)l);
		bot[l].y = wl_alloc((size_t)batch * out);
		bot[l].dy = wl_alloc((size_t)batch * out);
		bot[l].dh = wl_alloc((size_t)batch * out);
	}
	for (int l = 0; l < NTOP; l++) {
		int in = top_dims[l], out = top_dims[l + 1];

		top[l].w = wl_param_new(&ps, in * out, 1.0f / sqrtf((float)in), 0.0f, 300u + (uint32_t)l);
		top[l].b = wl_param_new(&ps, out, 0.01f, 0.0f, 310u + (uint32_t)l);
		top[l].y = wl_alloc((size_t)batch * out);
		top[l].dy = wl_alloc((size_t)batch * out);
		top[l].dh = wl_alloc((size_t)batch * out);
	}
	/* activations */
	dense = wl_alloc((size_t)NDENSE * batch);
	for (int i = 0; i < NDENSE; i++) {
		feat[i] = wl_alloc((size_t)batch);
		fnorm[i] = wl_alloc((size_t)batch);
	}
	xin = wl_alloc((size_t)NDENSE * batch);
	dxin = wl_alloc((size_t)NDENSE * batch);
	T = wl_alloc((size_t)NFEAT * nbd);
	dT = wl_alloc((size_t)NFEAT * nbd);
	Z = wl_alloc((size_t)batch * NPAIRS);
	dZ = wl_alloc((size_t)batch * NPAIRS);
	R = wl_alloc((size_t)batch * TOP_IN);
	dR = wl_alloc((size_t)batch * TOP_IN);
	dxb_a = wl_alloc((size_t)nbd);
	dxb_b = wl_alloc((size_t)nbd);
	dxb = wl_alloc((size_t)nbd);
	labels = wl_alloc((size_t)batch);
	terms = wl_alloc((size_t)batch);
	dz = wl_alloc((size_t)batch);
	lsum = wl_alloc(1);
	loss = wl_alloc(1);
	h_dense = wl_alloc_host((size_t)NDENSE * batch * sizeof(float));
	h_labels = wl_alloc_host((size_t)batch * sizeof(float));
	h_loss = wl_alloc_host(sizeof(float));
	cat_in[0] = bot[NBOT - 1].y;
	split_out[0] = dxb_b;
	for (int f = 0; f < NSPARSE; f++) {
		cat_in[f + 1] = sp[f].t;
		split_out[f + 1] = sp[f].dt;
	}
	CHECK(cuCtxSynchronize());
	wl_timer_init(&tm, &o, s);

	for (int step = 0; step < o.steps; step++) {
		size_t fb = (size_t)batch * sizeof(float);
		float inv_b = 1.0f / (float)batch;

		wl_timer_step(&tm, step);
		/* the data loader's batch, in pinned memory (the previous step has completed) */
		tl_fill_random(h_dense, (size_t)NDENSE * batch, 1000u + (uint32_t)step);
		/* clicks depend on the first two dense features, so the model has something to learn */
		for (int b = 0; b < batch; b++)
			h_labels[b] = h_dense[b] + h_dense[batch + b] > 0.0f ? 1.0f : 0.0f;
		for (int f = 0; f < NSPARSE; f++)
			make_bags(&sp[f], f, step, batch);

		wl_zero_grads(&ps, s);
		CHECK(cuEventRecord(ev_start, s));

		/* sparse forward on the lookup stream */
		CHECK(cuStreamWaitEvent(se, ev_start, 0));
		for (int f = 0; f < NSPARSE; f++) {
			CHECK(cuMemcpyHtoDAsync(sp[f].idx, sp[f].h_idx, (size_t)batch * MAX_POOL * sizeof(int), se));
			CHECK(cuMemcpyHtoDAsync(sp[f].off, sp[f].h_off, ((size_t)batch + 1) * sizeof(int), se));
		}
		for (int f = 0; f < NSPARSE; f++) {
			struct sparse *q = &sp[f];
			int dim = DIM;
			void *eb[] = {&ps.p[q->table].w, &q->idx, &q->off, &batch, &dim, &q->pooled};
			void *ln[] = {&q->ln, &q->pooled, &ps.p[q->gamma].w, &ps.p[q->beta].w, &dim, &eps};
			void *th[] = {&q->e, &q->ln, &nbd};

			wl_1d(k.embedding_bag_sum, nbd, se, eb);
			wl_rows(k.layernorm_row, batch, se, ln);
			wl_1d(k.tanh_k, nbd, se, th);
			wl_linear(&k, q->h1, q->e, ps.p[q->w1].w, ps.p[q->b1].w, batch, DIM, DIM, true, se);
			wl_linear(&k, q->t, q->h1, ps.p[q->w2].w, ps.p[q->b2].w, batch, DIM, DIM, false, se);
		}
		CHECK(cuEventRecord(ev_emb, se));

		/* dense forward: inputs, per-feature slices through their affines glued back, bottom MLP */
		CHECK(cuMemcpyHtoDAsync(dense, h_dense, (size_t)NDENSE * fb, s));
		CHECK(cuMemcpyHtoDAsync(labels, h_labels, fb, s));
		for (int i = 0; i < NDENSE; i++)
			CHECK(cuMemcpyDtoDAsync(feat[i], dense + (size_t)i * fb, fb, s));
		for (int i = 0; i < NDENSE; i++)
			wl_linear(&k, fnorm[i], feat[i], ps.p[dscale[i]].w, ps.p[dshift[i]].w, batch, 1, 1,
				  false, s);
		for (int i = 0; i < NDENSE; i++)
			CHECK(cuMemcpyDtoDAsync(xin + (size_t)i * fb, fnorm[i], fb, s));
		for (int l = 0; l < NBOT; l++) {
			int in = bot_dims[l], out = bot_dims[l + 1], n = batch * out;
			CUdeviceptr y = bot[l].y, bias = ps.p[bot[l].b].w;
			void *ba[] = {&y, &bias, &batch, &out};
			void *re[] = {&y, &y, &n};

			if (l == 0) /* xin is feature-major: X = xin^T */
				wl_gemm_ex(&k, y, xin, ps.p[bot[0].w].w, batch, out, in, 1, 0, 1.0f, 0.0f, 1, 0, 0, 0, s);
			else
				wl_gemm(&k, y, bot[l - 1].y, ps.p[bot[l].w].w, batch, out, in, 0.0f, s);
			wl_1d(k.bias_add, n, s, ba);
			wl_1d(k.relu, n, s, re);
		}

		/* interaction: cat the 27 feature blocks, pairwise dots, glue with the dense output */
		if (!o.drop_wait)
			CHECK(cuStreamWaitEvent(s, ev_emb, 0));
		cat_blocks(&k, T, cat_in, NFEAT, nbd, s);
		{
			int nf = NFEAT, dim = DIM, dcols = DIM, pcols = NPAIRS, n = batch * NPAIRS;
			void *di[] = {&Z, &T, &nf, &batch, &dim};
			void *c2[] = {&R, &bot[NBOT - 1].y, &dcols, &Z, &pcols, &batch};

			wl_1d(k.dot_interaction, n, s, di);
			wl_1d(k.concat2_rows, batch * TOP_IN, s, c2);
		}
		/* top MLP and loss */
		for (int l = 0; l < NTOP; l++)
			wl_linear(&k, top[l].y, l ? top[l - 1].y : R, ps.p[top[l].w].w, ps.p[top[l].b].w,
				  batch, top_dims[l], top_dims[l + 1], l < NTOP - 1, s);
		{
			void *bc[] = {&terms, &dz, &top[NTOP - 1].y, &labels, &batch, &inv_b};
			void *rs[] = {&lsum, &terms, &batch};
			void *sc[] = {&loss, &lsum, &inv_b, &one};

			wl_1d(k.bce_logits, batch, s, bc);
			CHECK(cuLaunchKernel(k.reduce_sum, 1, 1, 1, WL_BLOCK, 1, 1, 0, s, rs, NULL));
			wl_1d(k.scale, 1, s, sc);
		}

		/* backward: top MLP */
		for (int l = NTOP - 1; l >= 0; l--) {
			int in = top_dims[l], out = top_dims[l + 1], n = batch * out;
			CUdeviceptr g = l == NTOP - 1 ? dz : top[l].dh;
			CUdeviceptr x = l ? top[l - 1].y : R;
			CUdeviceptr dx = l ? top[l - 1].dy : dR;

			if (l < NTOP - 1) {
				void *rb[] = {&top[l].dh, &top[l].dy, &top[l].y, &n};

				wl_1d(k.relu_backward, n, s, rb);
			}
			wl_linear_backward(&k, ps.p[top[l].w].g, ps.p[top[l].b].g, dx, x,
					   ps.p[top[l].w].w, g, batch, in, out, s);
		}
		/* interaction backward: split the row concat, dots backward, split the 27 blocks */
		{
			int nf = NFEAT, dim = DIM, dcols = DIM, pcols = NPAIRS;
			void *s2[] = {&dxb_a, &dcols, &dZ, &pcols, &dR, &batch};
			void *db[] = {&dT, &dZ, &T, &nf, &batch, &dim};

			wl_1d(k.split2_rows, batch * TOP_IN, s, s2);
			wl_1d(k.dot_interaction_backward, NFEAT * nbd, s, db);
			split_blocks(&k, split_out, dT, NFEAT, nbd, s);
		}
		CHECK(cuEventRecord(ev_dT, s));

		/* sparse backward on the lookup stream */
		CHECK(cuStreamWaitEvent(se, ev_dT, 0));
		for (int f = 0; f < NSPARSE; f++) {
			struct sparse *q = &sp[f];
			int dim = DIM;
			void *rb[] = {&q->dz1, &q->dh1, &q->h1, &nbd};
			void *tb[] = {&q->dln, &q->de, &q->e, &nbd};
			void *lb[] = {&q->dpool, &q->xhat, &q->dln, &q->pooled, &ps.p[q->gamma].w, &dim, &eps};
			void *lp[] = {&ps.p[q->gamma].g, &ps.p[q->beta].g, &q->dln, &q->xhat, &batch, &dim};
			void *eb[] = {&ps.p[q->table].g, &q->idx, &q->off, &batch, &dim, &q->dpool};

			wl_linear_backward(&k, ps.p[q->w2].g, ps.p[q->b2].g, q->dh1, q->h1, ps.p[q->w2].w,
					   q->dt, batch, DIM, DIM, se);
			wl_1d(k.relu_backward, nbd, se, rb);
			wl_linear_backward(&k, ps.p[q->w1].g, ps.p[q->b1].g, q->de, q->e, ps.p[q->w1].w,
					   q->dz1, batch, DIM, DIM, se);
			wl_1d(k.tanh_backward, nbd, se, tb);
			wl_rows(k.layernorm_backward_row, batch, se, lb);
			wl_1d(k.layernorm_param_grad, DIM, se, lp);
			wl_1d(k.embedding_bag_backward, DIM, se, eb);
		}
		CHECK(cuEventRecord(ev_sbwd, se));

		/* bottom MLP backward, then the dense affines' (the first layer's input gradient, split
		 * per feature as views of dxin: the inputs themselves need no gradient) */
		{
			void *ad[] = {&dxb, &dxb_a, &dxb_b, &nbd};

			wl_1d(k.add, nbd, s, ad);
		}
		for (int l = NBOT - 1; l >= 0; l--) {
			int in = bot_dims[l], out = bot_dims[l + 1], n = batch * out;
			CUdeviceptr g = l == NBOT - 1 ? dxb : bot[l].dy;
			void *rb[] = {&bot[l].dh, &g, &bot[l].y, &n};

			wl_1d(k.relu_backward, n, s, rb);
			if (l == 0) { /* gW[13, out] += xin[13, B] dh[B, out]; dxin[13, B] = W dh^T */
				void *bg[] = {&ps.p[bot[0].b].g, &bot[0].dh, &batch, &out};

				wl_gemm_ex(&k, ps.p[bot[0].w].g, xin, bot[0].dh, in, out, batch, 0, 0, 1.0f,
					   1.0f, 1, 0, 0, 0, s);
				wl_1d(k.bias_grad, out, s, bg);
				wl_gemm_ex(&k, dxin, ps.p[bot[0].w].w, bot[0].dh, in, batch, out, 0, 1, 1.0f,
					   0.0f, 1, 0, 0, 0, s);
			} else {
				wl_linear_backward(&k, ps.p[bot[l].w].g, ps.p[bot[l].b].g, bot[l - 1].dy,
						   bot[l - 1].y, ps.p[bot[l].w].w, bot[l].dh, batch, in, out, s);
			}
		}

		for (int i = 0; i < NDENSE; i++)
			wl_linear_backward(&k, ps.p[dscale[i]].g, ps.p[dshift[i]].g, 0, feat[i],
					   ps.p[dscale[i]].w, dxin + (size_t)i * fb, batch, 1, 1, s);

		/* optimizer, once every gradient is in */
		if (!o.drop_wait)
			CHECK(cuStreamWaitEvent(s, ev_sbwd, 0));
		wl_sgd(&k, &ps, lr, wd, s);

		CHECK(cuMemcpyDtoHAsync(h_loss, loss, sizeof(float), s));
		CHECK(cuStreamSynchronize(s));
		last_loss = *h_loss;
		h = tl_hash(h_loss, sizeof(float), h);
	}
	wl_timer_report(&tm);
	h = wl_hash_params(&ps, h);
	wl_print("recsys", &o, ps.count, last_loss, h);
	/* slice/glue: the dense slices and the glue copies; a memset per gradient; repeated
	 * elementwise (scripts/bench's list, bias_add included): the SGD's two axpys per parameter,
	 * per sparse feature tanh, the towers' two bias_adds and relu, relu and tanh backward, and
	 * per dense feature its bias_add. The MLP layers' launches are not counted: they differ in
	 * shape from layer to layer, though a size may happen to recur. */
	wl_print_census(&o, 2 * NDENSE, ps.count, 2 * ps.count + 6 * NSPARSE + NDENSE);
	return 0;
}
