/* nvml.c - the software device's stand-in for NVML (libnvidia-ml.so.1), the few calls PyTorch
 * makes. software device (tests layer), built as build/simcuda/libnvidia-ml.so.1 beside the
 * software device's libcuda.so.1, found through the same LD_LIBRARY_PATH.
 *
 * Why it exists: with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True PyTorch's caching
 * allocator asks NVML whether the GPU has fabric memory (get_fabric_access) before its first
 * allocation. Without an NVML library its table of NVML functions stays empty and it calls
 * through a null pointer (segfault) on this machine. A GPU machine always has the real one. The
 * stand-in answers as NVML does on a GPU without fabric memory: initialised, devices found by PCI
 * bus id, fabric info NOT_SUPPORTED (PyTorch then shares memory through POSIX file descriptors),
 * no NVLink, no processes. Its devices are the software device's: SIMCUDA_DEVICES (default 1),
 * PCI bus ids "0000:XX:00.0" with XX = 0x18 + ordinal, as tests/simcuda/device.c reports them.
 * Nothing in cufold reads NVML; this only lets PyTorch's allocator start. nvml.h is not in the
 * toolkit here: the types below are NVML's ABI (an int result, opaque device pointers). */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int nvmlReturn_t;
typedef struct nvml_device *nvmlDevice_t;

enum {
	NVML_SUCCESS = 0,
	NVML_ERROR_UNINITIALIZED = 1,
	NVML_ERROR_INVALID_ARGUMENT = 2,
	NVML_ERROR_NOT_SUPPORTED = 3,
	NVML_ERROR_NOT_FOUND = 6,
	NVML_ERROR_INSUFFICIENT_SIZE = 7,
};

#define NVML_MAX_DEVICES 8 /* SIM_MAX_DEVICES */
#define NVML_API __attribute__((visibility("default")))

/* What is exported (NVML's names and ABI). */
NVML_API nvmlReturn_t nvmlInit_v2(void);
NVML_API nvmlReturn_t nvmlInit(void);
NVML_API nvmlReturn_t nvmlShutdown(void);
NVML_API const char *nvmlErrorString(nvmlReturn_t r);
NVML_API nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *bus_id, nvmlDevice_t *device);
NVML_API nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count);
NVML_API nvmlReturn_t nvmlDeviceGetGpuFabricInfoV(nvmlDevice_t device, void *info);
NVML_API nvmlReturn_t nvmlDeviceGetNvLinkRemoteDeviceType(nvmlDevice_t device, unsigned int link, int *type);
NVML_API nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t device, unsigned int link, void *pci);
NVML_API nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t device, unsigned int *count, void *infos);
NVML_API nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *version);

struct nvml_device {
	int ordinal;
};

static struct nvml_device devices[NVML_MAX_DEVICES];
static int init_count; /* nvmlInit / nvmlShutdown pairs, as NVML counts them */

static int device_count(void)
{
	const char *n = getenv("SIMCUDA_DEVICES");
	int v = n && *n ? atoi(n) : 1;

	return v >= 1 && v <= NVML_MAX_DEVICES ? v : 1;
}

NVML_API nvmlReturn_t nvmlInit_v2(void)
{
	for (int i = 0; i < NVML_MAX_DEVICES; i++)
		devices[i].ordinal = i;
	__atomic_fetch_add(&init_count, 1, __ATOMIC_ACQ_REL);
	return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlInit(void)
{
	return nvmlInit_v2();
}

NVML_API nvmlReturn_t nvmlShutdown(void)
{
	int old = __atomic_load_n(&init_count, __ATOMIC_ACQUIRE);

	while (old > 0 && !__atomic_compare_exchange_n(&init_count, &old, old - 1, false, __ATOMIC_ACQ_REL,
						       __ATOMIC_ACQUIRE))
		;
	return old > 0 ? NVML_SUCCESS : NVML_ERROR_UNINITIALIZED;
}

static bool initialized(void)
{
	return __atomic_load_n(&init_count, __ATOMIC_ACQUIRE) > 0;
}

NVML_API const char *nvmlErrorString(nvmlReturn_t r)
{
	switch (r) {
	case NVML_SUCCESS: return "Success";
	case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
	case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
	case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
	case NVML_ERROR_NOT_FOUND: return "Not Found";
	case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
	default: return "Unknown Error";
	}
}

/* "0000:19:00.0" (case and leading zeros of the domain as NVML accepts them) -> ordinal, or -1 */
static int ordinal_of(const char *bus_id)
{
	unsigned dom, bus, dev, fn;
	char tail;

	if (!bus_id || sscanf(bus_id, "%x:%x:%x.%x%c", &dom, &bus, &dev, &fn, &tail) != 4)
		return -1;
	if (dom != 0 || dev != 0 || fn != 0 || bus < 0x18 || (int)(bus - 0x18) >= device_count())
		return -1;
	return (int)(bus - 0x18);
}

NVML_API nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *bus_id,
										    nvmlDevice_t *device)
{
	int i;

	if (!initialized())
		return NVML_ERROR_UNINITIALIZED;
	if (!bus_id || !device)
		return NVML_ERROR_INVALID_ARGUMENT;
	i = ordinal_of(bus_id);
	if (i < 0)
		return NVML_ERROR_NOT_FOUND;
	*device = &devices[i];
	return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count)
{
	if (!initialized())
		return NVML_ERROR_UNINITIALIZED;
	if (!count)
		return NVML_ERROR_INVALID_ARGUMENT;
	*count = (unsigned)device_count();
	return NVML_SUCCESS;
}

static bool is_device(nvmlDevice_t d)
{
	return d >= &devices[0] && d < &devices[device_count()];
}

/* No fabric memory (NVLink switch systems only): PyTorch falls back to POSIX descriptors. */
NVML_API nvmlReturn_t nvmlDeviceGetGpuFabricInfoV(nvmlDevice_t device, void *info)
{
	if (!initialized())
		return NVML_ERROR_UNINITIALIZED;
	if (!is_device(device) || !info)
		return NVML_ERROR_INVALID_ARGUMENT;
	return NVML_ERROR_NOT_SUPPORTED;
}

/* No NVLink: every link is not supported. */
NVML_API nvmlReturn_t nvmlDeviceGetNvLinkRemoteDeviceType(nvmlDevice_t device,
										       unsigned int link, int *type)
{
	(void)link;
	if (!initialized())
		return NVML_ERROR_UNINITIALIZED;
	if (!is_device(device) || !type)
		return NVML_ERROR_INVALID_ARGUMENT;
	return NVML_ERROR_NOT_SUPPORTED;
}

NVML_API nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t device,
										       unsigned int link, void *pci)
{
	(void)link;
	if (!initialized())
		return NVML_ERROR_UNINITIALIZED;
	if (!is_device(device) || !pci)
		return NVML_ERROR_INVALID_ARGUMENT;
	return NVML_ERROR_NOT_SUPPORTED;
}

/* No process accounting here: zero processes. */
NVML_API nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t device,
											unsigned int *count, void *infos)
{
	(void)infos;
	if (!initialized())
		return NVML_ERROR_UNINITIALIZED;
	if (!is_device(device) || !count)
		return NVML_ERROR_INVALID_ARGUMENT;
	*count = 0;
	return NVML_SUCCESS;
}

/* The CUDA version the driver supports, as NVML reports it (1000 * major + 10 * minor). */
NVML_API nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *version)
{
	if (!version)
		return NVML_ERROR_INVALID_ARGUMENT;
	*version = 13000;
	return NVML_SUCCESS;
}
