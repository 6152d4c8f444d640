/* effects_cupy.cu - kernels shaped as CuPy generates its elementwise kernels with 32-bit
 * indexing (cupy/_core/include/cupy/carray.cuh): every array passed by value as a CArray (data
 * pointer, size, shape[], strides[] in bytes, all ptrdiff_t), the loop bounded by a CIndexer's
 * size, a grid-stride loop over a ptrdiff_t index (CUPY_FOR; CuPy's NVRTC PTX keeps it rolled,
 * `.pragma "nounroll"`, as `#pragma unroll 1` does here), and an element's byte offset
 * (int)stride * (int)i, which nvcc writes as shl 32 / shr.s64 32 on a phi of its own beside i.
 * For the effects analysis and its oracle (tests/unit/test_derive_card.c: exact spans, never
 * narrower than what the device touches). tests layer (compiled to PTX by nvcc). */

struct fx_carray1 {
	float *data;
	long long size;
	long long shape[1];
	long long strides[1];      /* bytes; 0 for a broadcast operand */
};

struct fx_cindexer1 {
	long long size;            /* the elements the launch computes */
	long long shape[1];
	long long index[1];
};

/* CArray<float, 1, false, true>::operator[](ptrdiff_t): with 32-bit indexing (index_t int) the
 * byte offset is computed in int */
__device__ __forceinline__ float *fx_at(const fx_carray1 &a, long long i)
{
	int diff = (int)a.strides[0] * (int)i;

	return (float *)((char *)a.data + diff);
}

/* cupy_multiply__float32_float32_float32: out = a * b, operands possibly broadcast */
extern "C" __global__ void fx_cupy_multiply(fx_carray1 a, fx_carray1 b, fx_carray1 out, fx_cindexer1 ind)
{
#pragma unroll 1
	for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < ind.size;
	     i += (long long)blockDim.x * gridDim.x)
		*fx_at(out, i) = *fx_at(a, i) * *fx_at(b, i);
}

/* cupy_tanh__float32_float32 */
extern "C" __global__ void fx_cupy_tanh(fx_carray1 in, fx_carray1 out, fx_cindexer1 ind)
{
#pragma unroll 1
	for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < ind.size;
	     i += (long long)blockDim.x * gridDim.x)
		*fx_at(out, i) = tanhf(*fx_at(in, i));
}
