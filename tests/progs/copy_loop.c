/* copy_loop.c - a host-bound loop of copies and memsets, 158 ops a step, for cufold's overhead
 * measurements (scripts/bench-overhead): no kernels, so what is counted is cufold's own work per
 * op and per window close. It knows nothing of cufold; the checksum is the same with and without.
 * usage: copy_loop MODE [steps [k]]   (k buffers a set, 3k + 2 ops a step; default 52) tests layer.
 *
 * Modes:
 *   fixed   every step the same 158 calls with the same arguments
 *   move    the same calls, but every step's buffers are another third of a pool (pointers move
 *           every step: replay patches its graphs, or rebuilds them)
 *   drift   fixed, but mid-window some steps change one call: every 5th a memset's value (a
 *           binding: patched), every 7th a copy's size (the key: replay's mismatch there, after
 *           the calls before it went by the fast lanes, capture's and replay's, issue 22)
 * COPY_LOOP_QUERY=1: a cuStreamQuery of the stream after every enqueue (answered or not, the
 * program goes on): another call into the engine between every two ops (replay's armed lane,
 * issue 22, must not take the op after it). COPY_LOOP_QUERY=N: after every N-th enqueue (the
 * lane takes the ops between, and each query finds some it has not settled). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"
#include "app_time.h" /* APP_US=N: N us of host time before every enqueue */

static int nbuf = 52;     /* buffers per set: 3 * nbuf + 2 ops a step */
#define WORDS 256         /* 32-bit words per buffer */
#define BUF (WORDS * 4)   /* bytes per buffer */
#define SETS 3            /* move: the pool's thirds */

static uint64_t h64 = TL_HASH_INIT;
static int query; /* COPY_LOOP_QUERY: every query-th enqueue is followed by a query, 0: none */
static unsigned long enqueued;

/* After an enqueue: with COPY_LOOP_QUERY, ask whether the stream is done (the answer is not
 * needed: CUDA_ERROR_NOT_READY or CUDA_SUCCESS). */
static void queried(CUstream s)
{
	if (query && ++enqueued % (unsigned long)query == 0) {
		CUresult rc = cuStreamQuery(s);

		if (rc != CUDA_SUCCESS && rc != CUDA_ERROR_NOT_READY)
			CHECK(rc);
	}
}

/* One step: memset the first half of a[i], copy a[i] to b[i], copy b[i]'s first half to the
 * second half of a[(i + 1) % nbuf] (so the data rotates from step to step), a byte memset of the
 * scratch word, then the host reads a word back (the window's end). 3 * nbuf + 2 = 158 ops. */
static void step_work(CUdeviceptr a, CUdeviceptr b, CUdeviceptr scratch, int step, CUstream s, int drift)
{
	uint32_t host = 0;

	for (int i = 0; i < nbuf; i++) {
		unsigned int v = (unsigned int)(i * 7 + 1);

		if (drift && step % 5 == 3 && i == nbuf / 2)
			v += (unsigned int)step; /* another value: a binding */
		CHECK(cuMemsetD32Async(a + (CUdeviceptr)i * BUF, v, WORDS / 2, s));
		queried(s);
	}
	for (int i = 0; i < nbuf; i++) {
		CHECK(cuMemcpyDtoDAsync(b + (CUdeviceptr)i * BUF, a + (CUdeviceptr)i * BUF, BUF, s));
		queried(s);
	}
	for (int i = 0; i < nbuf; i++) {
		size_t n = drift && step % 7 == 4 && i == nbuf / 3 ? BUF / 4 : BUF / 2; /* another size: the key */

		CHECK(cuMemcpyDtoDAsync(a + (CUdeviceptr)((i + 1) % nbuf) * BUF + BUF / 2, b + (CUdeviceptr)i * BUF, n, s));
		queried(s);
	}
	CHECK(cuMemsetD8Async(scratch, (unsigned char)3, 4, s));
	queried(s);
	CHECK(cuMemcpyDtoHAsync(&host, b + (CUdeviceptr)(step % nbuf) * BUF + BUF - 4, sizeof(host), s));
	CHECK(cuStreamSynchronize(s));
	h64 = tl_hash(&host, sizeof(host), h64);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "fixed";
	int steps = argc > 2 ? atoi(argv[2]) : 12;
	int move = !strcmp(mode, "move"), drift = !strcmp(mode, "drift");
	CUdeviceptr pool, scratch;
	CUstream s;

	if (argc > 3)
		nbuf = atoi(argv[3]);
	query = getenv("COPY_LOOP_QUERY") ? atoi(getenv("COPY_LOOP_QUERY")) : 0;
	if (nbuf < 1 || nbuf > 4096 || query < 0 || (!move && !drift && strcmp(mode, "fixed"))) {
		fprintf(stderr, "copy_loop: unknown mode %s\n", mode);
		return 2;
	}
	tl_init();
	CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CHECK(cuMemAlloc(&pool, (size_t)SETS * 2 * nbuf * BUF));
	CHECK(cuMemAlloc(&scratch, 64));
	CHECK(cuMemsetD32(pool, 5, (size_t)SETS * 2 * nbuf * WORDS));
	for (int step = 0; step < steps; step++) {
		CUdeviceptr base = pool + (CUdeviceptr)(move ? step % SETS : 0) * 2 * nbuf * BUF;

		step_work(base, base + (CUdeviceptr)nbuf * BUF, scratch, step, s, drift);
	}
	h64 = tl_hash_device(pool, (size_t)SETS * 2 * nbuf * BUF, h64);
	printf("copy_loop %s steps=%d checksum=%016llx\n", mode, steps, (unsigned long long)h64);
	CHECK(cuMemFree(pool));
	CHECK(cuMemFree(scratch));
	return 0;
}
