/* sim_nvml.c - unit tests of the software device's NVML stand-in (tests/simcuda/nvml/nvml.c,
 * build/simcuda/libnvidia-ml.so.1): loaded by name as PyTorch loads it, it finds the software
 * device's devices by the PCI bus ids cuDeviceGetPCIBusId reports, answers fabric info and NVLink
 * with NOT_SUPPORTED (PyTorch's expandable segments then use POSIX descriptors), and refuses
 * what NVML refuses. tests layer; runs against libcuda.so.1. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cuda.h>
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"

typedef int (*init_fn)(void);
typedef int (*by_bus_fn)(const char *bus, void **device);
typedef int (*fabric_fn)(void *device, void *info);
typedef int (*procs_fn)(void *device, unsigned int *count, void *infos);

static void *nvml(void)
{
	void *h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL); /* LD_LIBRARY_PATH, as PyTorch */

	if (!h)
		fail_msg("libnvidia-ml.so.1: %s", dlerror());
	return h;
}

/* The stand-in's functions, looked up as PyTorch looks them up (dlsym's object pointer copied
 * into a function pointer, the way POSIX allows). */
struct nvml_api {
	init_fn init, shutdown;
	by_bus_fn by_bus;
	fabric_fn fabric;
	procs_fn procs;
};

static void sym(void *h, const char *name, void *fn, size_t size)
{
	void *p = dlsym(h, name);

	if (!p)
		fail_msg("%s: not exported", name);
	memcpy(fn, &p, size);
}

static void *load(struct nvml_api *a)
{
	void *h = nvml();

	sym(h, "nvmlInit_v2", &a->init, sizeof(a->init));
	sym(h, "nvmlShutdown", &a->shutdown, sizeof(a->shutdown));
	sym(h, "nvmlDeviceGetHandleByPciBusId_v2", &a->by_bus, sizeof(a->by_bus));
	sym(h, "nvmlDeviceGetGpuFabricInfoV", &a->fabric, sizeof(a->fabric));
	sym(h, "nvmlDeviceGetComputeRunningProcesses", &a->procs, sizeof(a->procs));
	return h;
}

static void test_devices_by_bus_id(void **state)
{
	struct nvml_api a;
	void *h = load(&a), *dev = NULL, *dev1 = NULL;
	char bus[32], info[256];
	unsigned int n = 7;

	(void)state;
	assert_int_equal(a.by_bus("0000:18:00.0", &dev), 1); /* UNINITIALIZED before nvmlInit */
	assert_int_equal(a.init(), 0);
	CHECK(cuDeviceGetPCIBusId(bus, sizeof(bus), 0));
	assert_int_equal(a.by_bus(bus, &dev), 0);
	assert_non_null(dev);
	assert_int_equal(a.by_bus("0000:19:00.0", &dev1), 6); /* one device: NOT_FOUND */
	assert_int_equal(a.by_bus("not a bus id", &dev1), 6);
	assert_int_equal(a.by_bus(bus, NULL), 2);             /* INVALID_ARGUMENT */
	assert_int_equal(a.fabric(dev, info), 3);             /* NOT_SUPPORTED: no fabric memory */
	assert_int_equal(a.fabric(info, info), 2);            /* not a device handle */
	assert_int_equal(a.procs(dev, &n, NULL), 0);
	assert_int_equal(n, 0);
	assert_int_equal(a.shutdown(), 0);
	assert_int_equal(a.shutdown(), 1); /* more shutdowns than inits */
	dlclose(h);
}

static void test_two_devices(void **state)
{
	struct nvml_api api;
	void *h = load(&api), *a = NULL, *b = NULL;

	(void)state;
	setenv("SIMCUDA_DEVICES", "2", 1);
	assert_int_equal(api.init(), 0);
	assert_int_equal(api.by_bus("0000:18:00.0", &a), 0);
	assert_int_equal(api.by_bus("0000:19:00.0", &b), 0);
	assert_ptr_not_equal(a, b);
	unsetenv("SIMCUDA_DEVICES");
	api.shutdown();
	dlclose(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_devices_by_bus_id),
		cmocka_unit_test(test_two_devices),
	};

	tl_init();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
