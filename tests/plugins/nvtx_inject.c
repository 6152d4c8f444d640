/* nvtx_inject.c - a minimal NVTX injection library (what Nsight Systems is to NVTX): named in
 * NVTX_INJECTION64_PATH, it takes over the NVTX 3 domain calls and appends one line per event to
 * the file $NVTX_INJECT_OUT: "create DOMAIN", "push DOMAIN MESSAGE", "pop DOMAIN",
 * "mark DOMAIN MESSAGE". tests layer: includes only the toolkit's NVTX headers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpedantic"
#include <nvtx3/nvToolsExt.h>
#pragma GCC diagnostic pop

struct domain {
	char name[64]; /* as created */
};

static FILE *out; /* $NVTX_INJECT_OUT, line-buffered */

int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get);

static const char *name_of(nvtxDomainHandle_t d)
{
	return d ? ((const struct domain *)(const void *)d)->name : "(default)";
}

static const char *text_of(const nvtxEventAttributes_t *a)
{
	return a && a->messageType == NVTX_MESSAGE_TYPE_ASCII && a->message.ascii ? a->message.ascii : "";
}

static nvtxDomainHandle_t domain_create(const char *name)
{
	struct domain *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	snprintf(d->name, sizeof(d->name), "%s", name ? name : "");
	fprintf(out, "create %s\n", d->name);
	return (nvtxDomainHandle_t)(void *)d;
}

static int range_push(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
	fprintf(out, "push %s %s\n", name_of(d), text_of(a));
	return 0;
}

static int range_pop(nvtxDomainHandle_t d)
{
	fprintf(out, "pop %s\n", name_of(d));
	return 0;
}

static void mark(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
	fprintf(out, "mark %s %s\n", name_of(d), text_of(a));
}

int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get)
{
	const NvtxExportTableCallbacks *cb = get ? (const NvtxExportTableCallbacks *)get(NVTX_ETID_CALLBACKS) : NULL;
	const char *path = getenv("NVTX_INJECT_OUT");
	NvtxFunctionTable table = NULL;
	unsigned int size = 0;

	if (!cb || !path || !cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &table, &size) ||
	    size <= NVTX_CBID_CORE2_DomainCreateA)
		return 0;
	out = fopen(path, "a");
	if (!out)
		return 0;
	setvbuf(out, NULL, _IOLBF, 0);
	*table[NVTX_CBID_CORE2_DomainCreateA] = (NvtxFunctionPointer)domain_create;
	*table[NVTX_CBID_CORE2_DomainRangePushEx] = (NvtxFunctionPointer)range_push;
	*table[NVTX_CBID_CORE2_DomainRangePop] = (NvtxFunctionPointer)range_pop;
	*table[NVTX_CBID_CORE2_DomainMarkEx] = (NvtxFunctionPointer)mark;
	return 1;
}
