/* copy.cu - PyTorch-like batched cat and split kernels that take their pointer tables BY
 * VALUE as a struct parameter (the pattern cufold's identity-cat rule decodes).
 * Twins in tests/simcuda/twins_builtin.c. tests layer. */

#define CAT_MAX 8

/* 104 bytes, 8-aligned: the PTX parameter is `.param .align 8 .b8 cat_param_0[104]`. */
struct cat_args {
	const float *src[CAT_MAX]; /* input pointers, in output order */
	int len[CAT_MAX];          /* floats taken from each input */
	int count;                 /* inputs used, <= CAT_MAX */
};

struct split_args {
	float *dst[CAT_MAX];       /* output pointers, in source order */
	int len[CAT_MAX];          /* floats written to each output */
	int count;                 /* outputs used, <= CAT_MAX */
};

/* out = src[0][0..len[0]) ++ src[1][0..len[1]) ++ ...; thread i writes out[i]. */
extern "C" __global__ void cat(struct cat_args args, float *out)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	int at = i;

	if (i < 0)
		return;
	for (int s = 0; s < args.count && s < CAT_MAX; s++) {
		if (at < args.len[s]) {
			out[i] = args.src[s][at];
			return;
		}
		at -= args.len[s];
	}
}

/* dst[0][0..len[0]) = src[0..len[0]), dst[1][..] = the next len[1] floats, ...;
 * thread i reads src[i]. */
extern "C" __global__ void split_copy(const float *src, struct split_args args)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	int at = i;

	if (i < 0)
		return;
	for (int s = 0; s < args.count && s < CAT_MAX; s++) {
		if (at < args.len[s]) {
			args.dst[s][at] = src[i];
			return;
		}
		at -= args.len[s];
	}
}
