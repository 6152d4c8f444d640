/* hooks_attr.c - hand-written hooks of the kernel attribute setters, cuFuncSetAttribute and
 * cuKernelSetAttribute. shim layer.
 *
 * An attribute changes how later launches of the kernel may run (the dynamic shared memory it
 * may ask for, its carveout, its cluster shape), which cufold does not model: a call that changes
 * a value ends the open window, as any unmodeled call does. But frameworks set the same value
 * again and again: the CUDA runtime inside PyTorch calls cudaFuncSetAttribute(MaxDynamic-
 * SharedMemorySize) before launches of kernels that use more than 48 KiB, every step, and each
 * of those calls ended a window in the middle of the step (issue 25: torch_transformer.py, 20 of
 * its 60 cuKernelSetAttribute calls). Setting a value that is already set changes nothing, so
 * where the driver says the attribute already has the value, the call is only counted (neutral),
 * like a pure query, and reaches the driver in place: its order against work replay holds back
 * does not matter, because it changes nothing.
 *
 * The current value is asked of the driver (cuFuncGetAttribute / cuKernelGetAttribute, pure
 * queries, sent as cufold's own calls), so nothing is remembered here and another handle of the
 * same kernel, or a set cufold did not see, cannot mislead it. A query that fails, or a driver
 * without it, leaves the call unmodeled. */
#include "shim/engine.h"

static bool func_has_value(CUfunction f, CUfunction_attribute attrib, int value)
{
	int now = 0;
	CUresult rc;

	if (!drv_real.p_cuFuncGetAttribute)
		return false;
	shim_note_call(DRV_ID_cuFuncGetAttribute); /* counted like all we send */
	shim_inside_enter();
	rc = drv_real.p_cuFuncGetAttribute(&now, attrib, f);
	shim_inside_leave();
	return rc == CUDA_SUCCESS && now == value;
}

static bool kernel_has_value(CUkernel k, CUdevice dev, CUfunction_attribute attrib, int value)
{
	int now = 0;
	CUresult rc;

	if (!drv_real.p_cuKernelGetAttribute)
		return false;
	shim_note_call(DRV_ID_cuKernelGetAttribute);
	shim_inside_enter();
	rc = drv_real.p_cuKernelGetAttribute(&now, attrib, k, dev);
	shim_inside_leave();
	return rc == CUDA_SUCCESS && now == value;
}

SHIM_HOOK(cuFuncSetAttribute)(CUfunction hfunc, CUfunction_attribute attrib, int value)
{
	if (!shim_is_inside()) {
		if (func_has_value(hfunc, attrib, value))
			shim_engine_neutral(DRV_ID_cuFuncSetAttribute);
		else
			shim_note_unmodeled(DRV_ID_cuFuncSetAttribute);
	}
	return drv_real.p_cuFuncSetAttribute(hfunc, attrib, value);
}

SHIM_HOOK(cuKernelSetAttribute)(CUfunction_attribute attrib, int val, CUkernel kernel, CUdevice dev)
{
	if (!shim_is_inside()) {
		if (kernel_has_value(kernel, dev, attrib, val))
			shim_engine_neutral(DRV_ID_cuKernelSetAttribute);
		else
			shim_note_unmodeled(DRV_ID_cuKernelSetAttribute);
	}
	return drv_real.p_cuKernelSetAttribute(attrib, val, kernel, dev);
}
