/* cxx_once.cpp - a C++ shared library that throws an exception inside std::call_once and
 * catches it, as C++ libraries a Python or C program dlopens do (tests/progs/cxx_once.c loads
 * it; tests/e2e/shim_exports.sh). tests layer.
 *
 * The exception unwinds through glibc's pthread_once, so it needs libgcc_s's unwinder: a
 * preloaded library exporting another _Unwind_RaiseException (libunwind's) makes it abort. */
#include <mutex>
#include <stdexcept>
#include <string>

static std::once_flag once; /* never set: every call_once throws, so every call unwinds */

/* 1 when the exception thrown inside call_once was caught here, 0 when call_once returned. */
extern "C" __attribute__((visibility("default"))) int cxx_once_throw(int n)
{
	try {
		std::call_once(once, [n] { throw std::runtime_error("thrown inside call_once " + std::to_string(n)); });
	} catch (const std::runtime_error &e) {
		return 1;
	}
	return 0;
}
