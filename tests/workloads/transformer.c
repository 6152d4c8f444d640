/* transformer.c - a small pre-norm transformer training step on the driver API (the
 * `transformer` workload): token embedding lookup plus positions; per layer layer norm, a fused
 * QKV projection split into heads with pitched copies, batched attention scores, softmax,
 * attention output concatenated back with copies, output projection, residual add, layer norm,
 * MLP, residual add; a final layer norm and projection with a squared-error loss; the backward
 * of all of it; zero_grad as one memset per gradient and for-loop momentum SGD (three launches
 * per parameter); the loss copied to the host every step. tests layer; knows nothing of cufold.
 *
 * Shape (../../shared/reference/costs.md s8, s10): 4 layers, model width 32, 4 heads of 8,
 * MLP width 64, 2 sequences of 16*scale tokens, vocabulary 64, output width 16; 54 parameters.
 * Head split/merge is done with copies, as `transpose().contiguous()` does in eager PyTorch.
 * usage: transformer [--steps N] [--scale S] [--time] [--census] */
#include "wl.h"

#define NLAYER 4
#define DM 32        /* model width */
#define NHEAD 4
#define HD (DM / NHEAD)
#define FF 64        /* MLP width */
#define NSEQ 2       /* sequences per batch */
#define VOCAB 64
#define DOUT 16

struct tlayer {
	int ln1g, ln1b, wqkv, bqkv, wo, bo, ln2g, ln2b, w1, b1, w2, b2; /* parameter indices */
	CUdeviceptr x;               /* block input, tokens x DM */
	CUdeviceptr h1, xhat1;       /* ln1 output, its normalized input (backward) */
	CUdeviceptr qkv;             /* tokens x 3*DM, rows of [q | k | v] */
	CUdeviceptr q, k, v;         /* heads: NHEAD x tokens x HD, head-major */
	CUdeviceptr p;               /* attention probabilities: NHEAD*NSEQ x seq x seq */
	CUdeviceptr o;               /* attention output per head, like q */
	CUdeviceptr attn;            /* heads concatenated back: tokens x DM */
	CUdeviceptr proj, xmid;      /* output projection; xmid = x + proj */
	CUdeviceptr h2, xhat2;       /* ln2 output and normalized input */
	CUdeviceptr f1, f2;          /* MLP hidden (after relu) and output */
};

/* Copy `parts` column blocks of `width` floats: dst block i (pitch dpitch floats, at dst +
 * i*dstep floats) from src block i (pitch spitch floats, at src + i*sstep floats), rows rows
 * each; one pitched copy per block, like a strided .contiguous(). */
static void copy_blocks(CUdeviceptr dst, size_t dpitch, size_t dstep, CUdeviceptr src, size_t spitch,
			size_t sstep, int parts, int width, int rows, CUstream s)
{
	for (int i = 0; i < parts; i++) {
		CUDA_MEMCPY2D c;

		memset(&c, 0, sizeof(c));
		c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
		c.srcDevice = src + (size_t)i * sstep * sizeof(float);
		c.srcPitch = spitch * sizeof(float);
		c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
		c.dstDevice = dst + (size_t)i * dstep * sizeof(float);
		c.dstPitch = dpitch * sizeof(float);
		c.WidthInBytes = (size_t)width * sizeof(float);
		c.Height = (size_t)rows;
		CHECK(cuMemcpy2DAsync(&c, s));
	}
}

int main(int argc, char **argv)
{
	struct wl_opts o;
	struct wl_kernels k;
	struct wl_params ps = {.momentum = true};
	struct wl_timer tm;
	struct tlayer L[NLAYER];
	CUstream s;
	CUdeviceptr ids, offs, xfinal, hf, xhatf, y, target, terms, dy, loss;
	CUdeviceptr dres, dmid, dtmp, dh, df1, dattn, dO, dP, dS, dQ, dK, dV, dqkv;
	int tok, pos, lnfg, lnfb, wout, bout, seq, ntok, nbatch;
	int *h_ids, *h_offs;
	float *h_target, *h_loss, h_table[VOCAB * DOUT];
	float lr = 0.02f, mu = 0.9f, eps = 1e-5f, last_loss = 0.0f, att_scale = 1.0f / sqrtf((float)HD);
	int one = 1, dm = DM;
	uint64_t h = TL_HASH_INIT;

	wl_parse(argc, argv, &o, 20);
	seq = 16 * o.scale;
	ntok = NSEQ * seq;
	nbatch = NHEAD * NSEQ;
	tl_init();
	wl_load_kernels(&k);
	CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));

	tok = wl_param_new(&ps, VOCAB * DM, 0.5f, 0.0f, 1);
	pos = wl_param_new(&ps, seq * DM, 0.1f, 0.0f, 2);
	for (int l = 0; l < NLAYER; l++) {
		struct tlayer *t = &L[l];
		uint32_t sd = 100u * (uint32_t)(l + 1);

		t->ln1g = wl_param_new(&ps, DM, 0.0f, 1.0f, 0);
		t->ln1b = wl_param_new(&ps, DM, 0.0f, 0.0f, 0);
		t->wqkv = wl_param_new(&ps, DM * 3 * DM, 1.0f / sqrtf((float)DM), 0.0f, sd + 1);
		t->bqkv = wl_param_new(&ps, 3 * DM, 0.01f, 0.0f, sd + 2);
		t->wo = wl_param_new(&ps, DM * DM, 1.0f / sqrtf((float)DM), 0.0f, sd + 3);
		t->bo = wl_param_new(&ps, DM, 0.01f, 0.0f, sd + 4);
		t->ln2g = wl_param_new(&ps, DM, 0.0f, 1.0f, 0);
		t->ln2b = wl_param_new(&ps, DM, 0.0f, 0.0f, 0);
		t->w1 = wl_param_new(&ps, DM * FF, 1.0f / sqrtf((float)DM), 0.0f, sd + 5);
		t->b1 = wl_param_new(&ps, FF, 0.01f, 0.0f, sd + 6);
		t->w2 = wl_param_new(&ps, FF * DM, 1.0f / sqrtf((float)FF), 0.0f, sd + 7);
		t->b2 = wl_param_new(&ps, DM, 0.01f, 0.0f, sd + 8);
		t->x = wl_alloc((size_t)ntok * DM);
		t->h1 = wl_alloc((size_t)ntok * DM);
		t->xhat1 = wl_alloc((size_t)ntok * DM);
		t->qkv = wl_alloc((size_t)ntok * 3 * DM);
		t->q = wl_alloc((size_t)ntok * DM);
		t->k = wl_alloc((size_t)ntok * DM);
		t->v = wl_alloc((size_t)ntok * DM);
		t->p = wl_alloc((size_t)nbatch * seq * seq);
		t->o = wl_alloc((size_t)ntok * DM);
		t->attn = wl_alloc((size_t)ntok * DM);
		t->proj = wl_alloc((size_t)ntok * DM);
		t->xmid = wl_alloc((size_t)ntok * DM);
		t->h2 = wl_alloc((size_t)ntok * DM);
		t->xhat2 = wl_alloc((size_t)ntok * DM);
		t->f1 = wl_alloc((size_t)ntok * FF);
		t->f2 = wl_alloc((size_t)ntok * DM);
	}
	lnfg = wl_param_new(&ps, DM, 0.0f, 1.0f, 0);
	lnfb = wl_param_new(&ps, DM, 0.0f, 0.0f, 0);
	wout = wl_param_new(&ps, DM * DOUT, 1.0f / sqrtf((float)DM), 0.0f, 7);
	bout = wl_param_new(&ps, DOUT, 0.01f, 0.0f, 8);

	ids = wl_alloc((size_t)ntok);
	offs = wl_alloc((size_t)ntok + 1);
	xfinal = wl_alloc((size_t)ntok * DM);
	hf = wl_alloc((size_t)ntok * DM);
	xhatf = wl_alloc((size_t)ntok * DM);
	y = wl_alloc((size_t)ntok * DOUT);
	target = wl_alloc((size_t)ntok * DOUT);
	terms = wl_alloc((size_t)ntok * DOUT);
	dy = wl_alloc((size_t)ntok * DOUT);
	loss = wl_alloc(1);
	dres = wl_alloc((size_t)ntok * DM);
	dmid = wl_alloc((size_t)ntok * DM);
	dtmp = wl_alloc((size_t)ntok * DM);
	dh = wl_alloc((size_t)ntok * DM);
	df1 = wl_alloc((size_t)ntok * FF);
	dattn = wl_alloc((size_t)ntok * DM);
	dO = wl_alloc((size_t)ntok * DM);
	dP = wl_alloc((size_t)nbatch * seq * seq);
	dS = wl_alloc((size_t)nbatch * seq * seq);
	dQ = wl_alloc((size_t)ntok * DM);
	dK = wl_alloc((size_t)ntok * DM);
	dV = wl_alloc((size_t)ntok * DM);
	dqkv = wl_alloc((size_t)ntok * 3 * DM);
	h_ids = wl_alloc_host((size_t)ntok * sizeof(int));
	h_offs = wl_alloc_host(((size_t)ntok + 1) * sizeof(int));
	h_target = wl_alloc_host((size_t)ntok * DOUT * sizeof(float));
	h_loss = wl_alloc_host(sizeof(float));
	for (int i = 0; i <= ntok; i++)
		h_offs[i] = i;
	tl_fill_random(h_table, VOCAB * DOUT, 4242);
	CHECK(cuMemcpyHtoD(offs, h_offs, ((size_t)ntok + 1) * sizeof(int)));
	CHECK(cuCtxSynchronize());
	wl_timer_init(&tm, &o, s);

	for (int step = 0; step < o.steps; step++) {
		int nall = ntok * DM, nout = ntok * DOUT, nsd = seq * DM, nprob = nbatch * seq * seq;
		int sq = seq * HD, ss = seq * seq;
		float inv_n = 1.0f / (float)nout;

		wl_timer_step(&tm, step);
		for (int i = 0; i < ntok; i++)
			h_ids[i] = (int)(((unsigned)(step * 131 + i * 17) ^ (unsigned)(i >> 2)) % VOCAB);
		/* the target of a token is a fixed function of its id and position (learnable) */
		for (int i = 0; i < ntok; i++)
			for (int j = 0; j < DOUT; j++)
				h_target[i * DOUT + j] = h_table[h_ids[i] * DOUT + j] + 0.1f * h_table[(i % seq % VOCAB) * DOUT + j];

		wl_zero_grads(&ps, s);
		CHECK(cuMemcpyHtoDAsync(ids, h_ids, (size_t)ntok * sizeof(int), s));
		CHECK(cuMemcpyHtoDAsync(target, h_target, (size_t)nout * sizeof(float), s));

		/* embedding + positions */
		{
			void *eb[] = {&ps.p[tok].w, &ids, &offs, &ntok, &dm, &L[0].x};

			wl_1d(k.embedding_bag_sum, nall, s, eb);
			for (int b = 0; b < NSEQ; b++) {
				CUdeviceptr xs = L[0].x + (size_t)b * nsd * sizeof(float);
				void *ad[] = {&xs, &xs, &ps.p[pos].w, &nsd};

				wl_1d(k.add, nsd, s, ad);
			}
		}

		/* forward */
		for (int l = 0; l < NLAYER; l++) {
			struct tlayer *t = &L[l];
			CUdeviceptr xnext = l + 1 < NLAYER ? L[l + 1].x : xfinal;
			void *ln1[] = {&t->h1, &t->x, &ps.p[t->ln1g].w, &ps.p[t->ln1b].w, &dm, &eps};
			void *sm[] = {&t->p, &t->p, &seq};
			void *r1[] = {&t->xmid, &t->x, &t->proj, &nall};
			void *ln2[] = {&t->h2, &t->xmid, &ps.p[t->ln2g].w, &ps.p[t->ln2b].w, &dm, &eps};
			void *r2[] = {&xnext, &t->xmid, &t->f2, &nall};

			wl_rows(k.layernorm_row, ntok, s, ln1);
			wl_linear(&k, t->qkv, t->h1, ps.p[t->wqkv].w, ps.p[t->bqkv].w, ntok, DM, 3 * DM, false, s);
			/* split q, k, v into heads: head h of q is columns h*HD.. of the q block */
			copy_blocks(t->q, HD, (size_t)ntok * HD, t->qkv, 3 * DM, HD, NHEAD, HD, ntok, s);
			copy_blocks(t->k, HD, (size_t)ntok * HD, t->qkv + DM * sizeof(float), 3 * DM, HD, NHEAD,
				    HD, ntok, s);
			copy_blocks(t->v, HD, (size_t)ntok * HD, t->qkv + 2 * DM * sizeof(float), 3 * DM, HD,
				    NHEAD, HD, ntok, s);
			/* scores = q k^T / sqrt(HD), one batch per (head, sequence) */
			wl_gemm_ex(&k, t->p, t->q, t->k, seq, seq, HD, 0, 1, att_scale, 0.0f, nbatch, sq, sq, ss, s);
			wl_rows(k.softmax_row, nprob / seq, s, sm);
			wl_gemm_ex(&k, t->o, t->p, t->v, seq, HD, seq, 0, 0, 1.0f, 0.0f, nbatch, ss, sq, sq, s);
			/* heads concatenated back into tokens x DM */
			copy_blocks(t->attn, DM, HD, t->o, HD, (size_t)ntok * HD, NHEAD, HD, ntok, s);
			wl_linear(&k, t->proj, t->attn, ps.p[t->wo].w, ps.p[t->bo].w, ntok, DM, DM, false, s);
			wl_1d(k.add, nall, s, r1);
			wl_rows(k.layernorm_row, ntok, s, ln2);
			wl_linear(&k, t->f1, t->h2, ps.p[t->w1].w, ps.p[t->b1].w, ntok, DM, FF, true, s);
			wl_linear(&k, t->f2, t->f1, ps.p[t->w2].w, ps.p[t->b2].w, ntok, FF, DM, false, s);
			wl_1d(k.add, nall, s, r2);
		}
		/* head and loss */
		{
			void *lnf[] = {&hf, &xfinal, &ps.p[lnfg].w, &ps.p[lnfb].w, &dm, &eps};
			void *ms[] = {&terms, &dy, &y, &target, &nout, &inv_n};
			void *rs[] = {&loss, &terms, &nout};
			void *sc[] = {&loss, &loss, &inv_n, &one};

			wl_rows(k.layernorm_row, ntok, s, lnf);
			wl_linear(&k, y, hf, ps.p[wout].w, ps.p[bout].w, ntok, DM, DOUT, false, s);
			wl_1d(k.mse_loss, nout, s, ms);
			CHECK(cuLaunchKernel(k.reduce_sum, 1, 1, 1, WL_BLOCK, 1, 1, 0, s, rs, NULL));
			wl_1d(k.scale, 1, s, sc);
		}

		/* backward: head */
		wl_linear_backward(&k, ps.p[wout].g, ps.p[bout].g, dh, hf, ps.p[wout].w, dy, ntok, DM, DOUT, s);
		{
			void *lb[] = {&dres, &xhatf, &dh, &xfinal, &ps.p[lnfg].w, &dm, &eps};
			void *lp[] = {&ps.p[lnfg].g, &ps.p[lnfb].g, &dh, &xhatf, &ntok, &dm};

			wl_rows(k.layernorm_backward_row, ntok, s, lb);
			wl_1d(k.layernorm_param_grad, DM, s, lp);
		}
		/* backward: layers; dres is the gradient of the residual stream */
		for (int l = NLAYER - 1; l >= 0; l--) {
			struct tlayer *t = &L[l];
			int nff = ntok * FF;
			void *rb[] = {&df1, &df1, &t->f1, &nff};
			void *lb2[] = {&dtmp, &t->xhat2, &dh, &t->xmid, &ps.p[t->ln2g].w, &dm, &eps};
			void *lp2[] = {&ps.p[t->ln2g].g, &ps.p[t->ln2b].g, &dh, &t->xhat2, &ntok, &dm};
			void *a2[] = {&dmid, &dres, &dtmp, &nall};
			void *smb[] = {&dS, &dP, &t->p, &seq};
			void *scb[] = {&dS, &dS, &att_scale, &nprob};
			void *lb1[] = {&dtmp, &t->xhat1, &dh, &t->x, &ps.p[t->ln1g].w, &dm, &eps};
			void *lp1[] = {&ps.p[t->ln1g].g, &ps.p[t->ln1b].g, &dh, &t->xhat1, &ntok, &dm};
			void *a1[] = {&dres, &dmid, &dtmp, &nall};

			/* MLP */
			wl_linear_backward(&k, ps.p[t->w2].g, ps.p[t->b2].g, df1, t->f1, ps.p[t->w2].w, dres,
					   ntok, FF, DM, s);
			wl_1d(k.relu_backward, nff, s, rb);
			wl_linear_backward(&k, ps.p[t->w1].g, ps.p[t->b1].g, dh, t->h2, ps.p[t->w1].w, df1,
					   ntok, DM, FF, s);
			wl_rows(k.layernorm_backward_row, ntok, s, lb2);
			wl_1d(k.layernorm_param_grad, DM, s, lp2);
			wl_1d(k.add, nall, s, a2);
			/* attention */
			wl_linear_backward(&k, ps.p[t->wo].g, ps.p[t->bo].g, dattn, t->attn, ps.p[t->wo].w, dmid,
					   ntok, DM, DM, s);
			copy_blocks(dO, HD, (size_t)ntok * HD, dattn, DM, HD, NHEAD, HD, ntok, s);
			wl_gemm_ex(&k, dP, dO, t->v, seq, seq, HD, 0, 1, 1.0f, 0.0f, nbatch, sq, sq, ss, s);
			wl_gemm_ex(&k, dV, t->p, dO, seq, HD, seq, 1, 0, 1.0f, 0.0f, nbatch, ss, sq, sq, s);
			wl_rows(k.softmax_backward_row, nprob / seq, s, smb);
			wl_1d(k.scale, nprob, s, scb);
			wl_gemm_ex(&k, dQ, dS, t->k, seq, HD, seq, 0, 0, 1.0f, 0.0f, nbatch, ss, sq, sq, s);
			wl_gemm_ex(&k, dK, dS, t->q, seq, HD, seq, 1, 0, 1.0f, 0.0f, nbatch, ss, sq, sq, s);
			/* heads concatenated back into the fused qkv gradient */
			copy_blocks(dqkv, 3 * DM, HD, dQ, HD, (size_t)ntok * HD, NHEAD, HD, ntok, s);
			copy_blocks(dqkv + DM * sizeof(float), 3 * DM, HD, dK, HD, (size_t)ntok * HD, NHEAD, HD,
				    ntok, s);
			copy_blocks(dqkv + 2 * DM * sizeof(float), 3 * DM, HD, dV, HD, (size_t)ntok * HD, NHEAD,
				    HD, ntok, s);
			wl_linear_backward(&k, ps.p[t->wqkv].g, ps.p[t->bqkv].g, dh, t->h1, ps.p[t->wqkv].w,
					   dqkv, ntok, DM, 3 * DM, s);
			wl_rows(k.layernorm_backward_row, ntok, s, lb1);
			wl_1d(k.layernorm_param_grad, DM, s, lp1);
			wl_1d(k.add, nall, s, a1);
		}
		/* embedding and positions */
		{
			void *eb[] = {&ps.p[tok].g, &ids, &offs, &ntok, &dm, &dres};

			for (int b = 0; b < NSEQ; b++) {
				CUdeviceptr ds = dres + (size_t)b * nsd * sizeof(float);
				void *ad[] = {&ps.p[pos].g, &ps.p[pos].g, &ds, &nsd};

				wl_1d(k.add, nsd, s, ad);
			}
			wl_1d(k.embedding_bag_backward, DM, s, eb);
		}

		wl_sgd_momentum(&k, &ps, lr, mu, s);
		CHECK(cuMemcpyDtoHAsync(h_loss, loss, sizeof(float), s));
		CHECK(cuStreamSynchronize(s));
		last_loss = *h_loss;
		h = tl_hash(h_loss, sizeof(float), h);
	}
	wl_timer_report(&tm);
	h = wl_hash_params(&ps, h);
	wl_print("transformer", &o, ps.count, last_loss, h);
	/* head split and merge copies, forward (3 + 1) and backward (1 + 3) per head and layer */
	wl_print_census(&o, NLAYER * 8 * NHEAD, ps.count, 3 * ps.count);
	return 0;
}
