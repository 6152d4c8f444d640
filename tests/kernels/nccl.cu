/* nccl.cu - a kernel named like NCCL's ring all-reduce, so barrier-kernel handling can be
 * tested on one device. Twin in tests/simcuda/twins_builtin.c. tests layer.
 *
 * With a single rank an all-reduce of a sum is the identity: each element is reloaded and
 * stored unchanged (volatile, so the kernel really touches buf like a collective would). */

extern "C" __global__ void ncclDevKernel_AllReduce_Sum_f32_RING_LL(float *buf, int n)
{
	volatile float *v = buf;
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		v[i] = v[i];
}
