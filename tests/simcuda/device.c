/* device.c - initialization, driver version, device queries (an H200-like device) and error
 * names. tests/simcuda layer.
 *
 * SIMCUDA_DEVICES=N (1..8, default 1) sets how many identical devices exist.
 * SIMCUDA_CC=NN (major*10+minor, 50..199, default 90) sets the compute capability every device
 * reports and the newest PTX a fatbin may offer (fatbin.c): a framework whose prebuilt kernels
 * carry PTX only for a newer architecture (CuPy's CUB kernels: compute_120) loads them with
 * SIMCUDA_CC=120; whether the interpreter can run them is decided at their first launch, which
 * fails with one log line naming the instruction it does not model. */
#include "sim_int.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SIM_DRIVER_VERSION 13000

static bool initialized;
static int ndevices = 1;

static int device_cc = 90;
static pthread_once_t device_cc_once = PTHREAD_ONCE_INIT;

static void device_cc_read(void)
{
	const char *v = getenv("SIMCUDA_CC");
	char *end;
	long cc;

	if (!v || !*v)
		return;
	cc = strtol(v, &end, 10);
	if (*end || cc < 50 || cc > 199)
		sim_log("SIMCUDA_CC=%s is not a compute capability major*10+minor in 50..199 (e.g. 120); "
			"using 90", v);
	else
		device_cc = (int)cc;
}

int sim_device_cc(void)
{
	pthread_once(&device_cc_once, device_cc_read);
	return device_cc;
}

bool sim_is_initialized(void)
{
	return initialized;
}

int sim__device_count(void);
int sim__device_count(void)
{
	return ndevices;
}

CUresult sim_api_cuInit(unsigned int flags)
{
	CUresult rc = CUDA_SUCCESS;
	const char *n;

	if (flags != 0) {
		rc = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	n = getenv("SIMCUDA_DEVICES");
	if (n && *n) {
		int v = atoi(n);

		if (v >= 1 && v <= SIM_MAX_DEVICES)
			ndevices = v;
		else
			sim_log("SIMCUDA_DEVICES=%s is not 1..%d; using 1", n, SIM_MAX_DEVICES);
	}
	initialized = true;
out:
	return rc;
}

CUresult sim_api_cuDriverGetVersion(int *version)
{
	CUresult rc = CUDA_SUCCESS;

	if (!version)
		rc = CUDA_ERROR_INVALID_VALUE;
	else
		*version = SIM_DRIVER_VERSION;
	return rc;
}

static CUresult check_device(CUdevice dev)
{
	if (!initialized)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (dev < 0 || dev >= ndevices)
		return CUDA_ERROR_INVALID_DEVICE;
	return CUDA_SUCCESS;
}

CUresult sim_api_cuDeviceGet(CUdevice *device, int ordinal)
{
	CUresult rc = CUDA_SUCCESS;

	if (!device)
		rc = CUDA_ERROR_INVALID_VALUE;
	else
		rc = check_device(ordinal);
	if (rc == CUDA_SUCCESS)
		*device = ordinal;
	return rc;
}

CUresult sim_api_cuDeviceGetCount(int *count)
{
	CUresult rc = CUDA_SUCCESS;

	if (!count)
		rc = CUDA_ERROR_INVALID_VALUE;
	else if (!initialized)
		rc = CUDA_ERROR_NOT_INITIALIZED;
	else
		*count = ndevices;
	return rc;
}

CUresult sim_api_cuDeviceGetName(char *name, int len, CUdevice dev)
{
	CUresult rc = CUDA_SUCCESS;

	if (!name || len <= 0)
		rc = CUDA_ERROR_INVALID_VALUE;
	else
		rc = check_device(dev);
	if (rc == CUDA_SUCCESS)
		snprintf(name, (size_t)len, "NVIDIA H200 (simcuda)");
	return rc;
}

CUresult sim_api_cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
	CUresult rc = CUDA_SUCCESS;

	if (!bytes)
		rc = CUDA_ERROR_INVALID_VALUE;
	else
		rc = check_device(dev);
	if (rc == CUDA_SUCCESS)
		*bytes = sim_mem_total();
	return rc;
}

/* H200 SXM values (compute capability 9.0, 132 SMs); attributes not listed read as 0. */
static int attribute_value(CUdevice_attribute a, CUdevice dev)
{
	switch (a) {
	case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: return 1024;
	case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: return 1024;
	case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: return 1024;
	case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: return 64;
	case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: return 2147483647;
	case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: return 65535;
	case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: return 65535;
	case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: return 49152;
	case CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY: return 65536;
	case CU_DEVICE_ATTRIBUTE_WARP_SIZE: return 32;
	case CU_DEVICE_ATTRIBUTE_MAX_PITCH: return 2147483647;
	case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK: return 65536;
	case CU_DEVICE_ATTRIBUTE_CLOCK_RATE: return 1980000;
	case CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT: return 512;
	case CU_DEVICE_ATTRIBUTE_GPU_OVERLAP: return 1;
	case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: return 132;
	case CU_DEVICE_ATTRIBUTE_INTEGRATED: return 0;
	case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY: return 1;
	case CU_DEVICE_ATTRIBUTE_COMPUTE_MODE: return CU_COMPUTEMODE_DEFAULT;
	case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS: return 1;
	case CU_DEVICE_ATTRIBUTE_ECC_ENABLED: return 1;
	case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: return 0x18 + dev;
	case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID: return 0;
	case CU_DEVICE_ATTRIBUTE_TCC_DRIVER: return 0;
	case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE: return 2619000;
	case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH: return 6144;
	case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: return 52428800;
	case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: return 2048;
	case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT: return 5;
	case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: return 1;
	case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID: return 0;
	case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: return sim_device_cc() / 10;
	case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: return sim_device_cc() % 10;
	case CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED: return 1;
	case CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED: return 1;
	case CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED: return 1;
	case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: return 233472;
	case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR: return 65536;
	case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY: return 1;
	case CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD: return 0;
	case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS: return 1;
	case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH: return 1;
	case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: return 232448;
	case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED: return 1;
	case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR: return 32;
	case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED: return 1;
	case CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK: return 1024; /* occupancy.c */
	default: return 0;
	}
}

CUresult sim_api_cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
	CUresult rc = CUDA_SUCCESS;

	if (!pi || (int)attrib <= 0 || attrib >= CU_DEVICE_ATTRIBUTE_MAX)
		rc = CUDA_ERROR_INVALID_VALUE;
	else
		rc = check_device(dev);
	if (rc == CUDA_SUCCESS)
		*pi = attribute_value(attrib, dev);
	return rc;
}

CUresult sim_api_cuDeviceComputeCapability(int *major, int *minor, CUdevice dev)
{
	CUresult rc = CUDA_SUCCESS;

	if (!major || !minor)
		rc = CUDA_ERROR_INVALID_VALUE;
	else
		rc = check_device(dev);
	if (rc == CUDA_SUCCESS) {
		*major = sim_device_cc() / 10;
		*minor = sim_device_cc() % 10;
	}
	return rc;
}

/* The CUDA 9.2 ABI, exported as plain cuDeviceGetUuid (cuda.h maps the name to _v2). */
CUresult sim_api_cuDeviceGetUuid(CUuuid *uuid, CUdevice dev)
{
	CUresult rc = CUDA_SUCCESS;

	if (!uuid)
		rc = CUDA_ERROR_INVALID_VALUE;
	else
		rc = check_device(dev);
	if (rc == CUDA_SUCCESS) {
		memset(uuid->bytes, 0x5a, sizeof(uuid->bytes));
		uuid->bytes[15] = (char)dev;
	}
	return rc;
}

CUresult sim_api_cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev)
{
	CUresult rc = CUDA_SUCCESS;

	if (!uuid)
		rc = CUDA_ERROR_INVALID_VALUE;
	else
		rc = check_device(dev);
	if (rc == CUDA_SUCCESS) {
		memset(uuid->bytes, 0x5a, sizeof(uuid->bytes));
		uuid->bytes[15] = (char)dev;
	}
	return rc;
}

CUresult sim_api_cuDeviceGetPCIBusId(char *pciBusId, int len, CUdevice dev)
{
	CUresult rc = CUDA_SUCCESS;

	if (!pciBusId || len <= 0)
		rc = CUDA_ERROR_INVALID_VALUE;
	else
		rc = check_device(dev);
	if (rc == CUDA_SUCCESS)
		snprintf(pciBusId, (size_t)len, "0000:%02x:00.0", 0x18 + dev);
	return rc;
}

CUresult sim_api_cuDeviceCanAccessPeer(int *canAccessPeer, CUdevice dev, CUdevice peerDev)
{
	CUresult rc = CUDA_SUCCESS;

	if (!canAccessPeer)
		rc = CUDA_ERROR_INVALID_VALUE;
	else if ((rc = check_device(dev)) == CUDA_SUCCESS && (rc = check_device(peerDev)) == CUDA_SUCCESS)
		*canAccessPeer = dev != peerDev;
	return rc;
}

/* ------------------------------------------------------------------ error names */

struct error_name {
	int value;                   /* CUresult */
	const char *name;            /* CUDA_ERROR_... */
	const char *desc;            /* first sentence of cuda.h's comment */
};

static const struct error_name error_names[] = {
#define CF_CUDA_ERROR(value, name, desc) {value, #name, desc},
#include "cuda_errors.h"
#undef CF_CUDA_ERROR
};

static const struct error_name *find_error(CUresult e)
{
	for (size_t i = 0; i < sizeof(error_names) / sizeof(error_names[0]); i++)
		if (error_names[i].value == (int)e)
			return &error_names[i];
	return NULL;
}

CUresult sim_api_cuGetErrorName(CUresult error, const char **pStr)
{
	CUresult rc = CUDA_SUCCESS;
	const struct error_name *e;

	e = find_error(error);
	if (!pStr) {
		rc = CUDA_ERROR_INVALID_VALUE;
	} else if (!e) {
		*pStr = NULL;
		rc = CUDA_ERROR_INVALID_VALUE;
	} else {
		*pStr = e->name;
	}
	return rc;
}

CUresult sim_api_cuGetErrorString(CUresult error, const char **pStr)
{
	CUresult rc = CUDA_SUCCESS;
	const struct error_name *e;

	e = find_error(error);
	if (!pStr) {
		rc = CUDA_ERROR_INVALID_VALUE;
	} else if (!e) {
		*pStr = NULL;
		rc = CUDA_ERROR_INVALID_VALUE;
	} else {
		*pStr = e->desc;
	}
	return rc;
}
