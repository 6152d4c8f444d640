/* markers.c - NVTX ranges and marks of what replay does (segment launches, eager flushes, template
 * builds, fallbacks) in the "cufold" domain, for Nsight Systems and other NVTX tools. replay layer.
 *
 * NVTX 3 is header-only: the first NVTX call loads the tool named by NVTX_INJECTION64_PATH (Nsight
 * sets it), and without one every later call is a test of a null function pointer. The domain is
 * created once per process, when the first replay part is made (rpl_engine_create, under the
 * engine's start); without a tool nvtxDomainCreateA answers NULL, and then every rpl__mark_*
 * returns at its first test: no string is formatted and NVTX is not called again. Ranges are
 * per thread in NVTX, so a template build marked outside the engine's lock nests on its own
 * thread.
 * In a setuid or setgid process NVTX is never called (it would load a library the environment
 * names). */
#include <stdio.h>
#include <string.h>

/* the header casts dlsym's answer to a function pointer, which -Wpedantic reports */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpedantic"
#include <nvtx3/nvToolsExt.h>
#pragma GCC diagnostic pop

#include "common/compiler.h"
#include "common/config.h"
#include "replay/replay_int.h"

static nvtxDomainHandle_t domain; /* the "cufold" domain, or NULL: no tool is attached */
static bool domain_asked;         /* nvtxDomainCreateA was called (once per process) */

void rpl__mark_init(void)
{
	if (domain_asked)
		return; /* a forked child keeps the parent's tool and domain */
	domain_asked = true;
	/* NVTX loads the library its environment names (getenv): never in a setuid process */
	if (cf_config_get()->secure)
		return;
	domain = nvtxDomainCreateA("cufold");
}

static void attrs(nvtxEventAttributes_t *a, const char *text, uint64_t payload)
{
	memset(a, 0, sizeof(*a));
	a->version = NVTX_VERSION;
	a->size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
	a->messageType = NVTX_MESSAGE_TYPE_ASCII;
	a->message.ascii = text;
	a->payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT64;
	a->payload.ullValue = payload;
}

static void push(const char *text, uint64_t payload)
{
	nvtxEventAttributes_t a;

	attrs(&a, text, payload);
	nvtxDomainRangePushEx(domain, &a);
}

void rpl__mark_launch_begin(uint64_t shape_id, uint32_t seg, uint32_t nops)
{
	char text[96];

	if (cf_likely(!domain))
		return;
	snprintf(text, sizeof(text), "cufold: launch shape %llu segment %u (%u ops)", (unsigned long long)shape_id,
		 seg, nops);
	push(text, nops);
}

void rpl__mark_flush_begin(uint32_t nops, enum rpl_fallback why)
{
	char text[96];

	if (cf_likely(!domain))
		return;
	snprintf(text, sizeof(text), "cufold: flush %u ops (%s)", nops, rpl_fallback_name(why));
	push(text, nops);
}

void rpl__mark_build_begin(uint64_t shape_id)
{
	char text[64];

	if (cf_likely(!domain))
		return;
	snprintf(text, sizeof(text), "cufold: build shape %llu", (unsigned long long)shape_id);
	push(text, shape_id);
}

void rpl__mark_end(void)
{
	if (cf_likely(!domain))
		return;
	nvtxDomainRangePop(domain);
}

void rpl__mark_event(const char *what, const char *why)
{
	nvtxEventAttributes_t a;
	char text[192];

	if (cf_likely(!domain))
		return;
	snprintf(text, sizeof(text), "cufold: %s: %s", what, why);
	attrs(&a, text, 0);
	nvtxDomainMarkEx(domain, &a);
}
