/* link.c - the software device's JIT linker for PTX inputs: cuLinkCreate, cuLinkAddData,
 * cuLinkAddFile, cuLinkComplete, cuLinkDestroy. tests/simcuda layer.
 *
 * The software device runs kernels by their entry names (twins), so linking PTX is joining
 * texts: each input is checked with the module loader's PTX reader when it is added (a bad
 * one is CUDA_ERROR_INVALID_PTX, its reason in the error log, as the real JIT reports it),
 * and cuLinkComplete returns the inputs one after the other as one PTX text, the headers
 * (.version, .target, .address_size) of all but the first commented out. That "cubin" is
 * what cuModuleLoadData and cuLibraryLoadData accept, and what cufold reads parameter
 * layouts from. An entry defined by two inputs is a link error (CUDA_ERROR_INVALID_PTX from
 * cuLinkComplete, "entry X defined twice" in the error log).
 * Only PTX inputs are linked: cubins, fat binaries, objects and libraries hold machine code
 * the device cannot run (CUDA_ERROR_NOT_SUPPORTED, with one log line); NVVM IR is refused.
 * The image lives until cuLinkDestroy, as CUDA documents. */
#include "sim_module_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SIM_MAGIC_LINK 0x4c4e4b31u   /* "LNK1" */
#define LINK_ERR_LEN 256             /* longest reason kept for the error log */

struct sim_link {
	uint32_t magic;              /* SIM_MAGIC_LINK; cleared when destroyed */
	char *text;                  /* the joined PTX so far, NUL-terminated (NULL: no input) */
	size_t len;                  /* its length without the NUL */
	unsigned int ninputs;        /* inputs added */
	unsigned int nopts;          /* options given at cuLinkCreate */
	CUjit_option *opts;          /* their kinds (a copy) */
	void **vals;                 /* their values (a copy of the array; log buffers are the program's) */
};

static struct sim_link *link_from(CUlinkState h)
{
	struct sim_link *l = (struct sim_link *)h;

	return sim_handle_is_live(l, SIM_MAGIC_LINK) ? l : NULL;
}

/* Write msg into the error log buffer given at cuLinkCreate (if any), and clear the info log. */
static void link_log(struct sim_link *l, const char *msg)
{
	char *errbuf = NULL, *info = NULL;
	size_t err_len = 0, info_len = 0;

	for (unsigned int i = 0; i < l->nopts; i++) {
		if (l->opts[i] == CU_JIT_ERROR_LOG_BUFFER)
			errbuf = l->vals[i];
		else if (l->opts[i] == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
			err_len = (size_t)(uintptr_t)l->vals[i];
		else if (l->opts[i] == CU_JIT_INFO_LOG_BUFFER)
			info = l->vals[i];
		else if (l->opts[i] == CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES)
			info_len = (size_t)(uintptr_t)l->vals[i];
	}
	if (errbuf && err_len)
		snprintf(errbuf, err_len, "%s", msg);
	if (info && info_len)
		info[0] = 0;
}

/* Whether the line at p (up to its end) is a module header directive. */
static bool is_header_line(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return !strncmp(p, ".version", 8) || !strncmp(p, ".target", 7) || !strncmp(p, ".address_size", 13);
}

/* Append PTX text (n bytes, up to a NUL) to the link; headers are commented out after the first
 * input. Checks the text first. */
static CUresult link_add_ptx(struct sim_link *l, const char *data, size_t n, const char *name)
{
	char err[LINK_ERR_LEN], msg[LINK_ERR_LEN + 128];
	struct sim_ptx ptx;
	size_t len = strnlen(data, n), cap, out;
	char *text = malloc(len + 1), *grown;
	CUresult rc = CUDA_SUCCESS;

	if (!text)
		return CUDA_ERROR_OUT_OF_MEMORY;
	memcpy(text, data, len);
	text[len] = 0;
	rc = sim_ptx_parse(text, &ptx, err, sizeof(err));
	if (rc != CUDA_SUCCESS) {
		snprintf(msg, sizeof(msg), "%s: %s", name ? name : "(input)", err);
		link_log(l, msg);
		goto out;
	}
	sim_ptx_fini(&ptx);
	/* worst case: "// " before every line, plus a newline between inputs */
	cap = l->len + 1 + len + 3 * (len / 2 + 1) + 1;
	grown = realloc(l->text, cap);
	if (!grown) {
		rc = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	l->text = grown;
	out = l->len;
	if (out)
		l->text[out++] = '\n';
	for (const char *p = text; *p;) {
		const char *eol = strchr(p, '\n');
		size_t line = eol ? (size_t)(eol - p) + 1 : strlen(p);

		if (l->ninputs > 0 && is_header_line(p)) {
			memcpy(l->text + out, "// ", 3);
			out += 3;
		}
		memcpy(l->text + out, p, line);
		out += line;
		p += line;
	}
	l->text[out] = 0;
	l->len = out;
	l->ninputs++;
out:
	free(text);
	return rc;
}

static CUresult read_whole_file(const char *path, char **out, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long n;
	CUresult rc = CUDA_SUCCESS;

	if (!f)
		return CUDA_ERROR_FILE_NOT_FOUND;
	if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
		rc = CUDA_ERROR_FILE_NOT_FOUND;
		goto out;
	}
	buf = malloc((size_t)n + 1);
	if (!buf) {
		rc = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		rc = CUDA_ERROR_FILE_NOT_FOUND;
		goto out;
	}
	buf[n] = 0;
	*out = buf;
	*len = (size_t)n;
out:
	fclose(f);
	return rc;
}

/* What the device does with an input of this type: CUDA_SUCCESS for PTX. */
static CUresult input_type_check(CUjitInputType type, const char *name)
{
	switch (type) {
	case CU_JIT_INPUT_PTX:
		return CUDA_SUCCESS;
	case CU_JIT_INPUT_CUBIN:
	case CU_JIT_INPUT_FATBINARY:
	case CU_JIT_INPUT_OBJECT:
	case CU_JIT_INPUT_LIBRARY:
		sim_log("link: %s: only PTX inputs can be linked on the software device (type %d holds machine code)",
			name ? name : "(input)", (int)type);
		return CUDA_ERROR_NOT_SUPPORTED;
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
}

/* ------------------------------------------------------------------ the entry points */

static CUresult link_create(unsigned int n, CUjit_option *options, void **values, CUlinkState *out)
{
	struct sim_ctx *ctx;
	struct sim_link *l = NULL;
	CUresult rc = sim_ctx_require(&ctx);

	if (rc != CUDA_SUCCESS)
		return rc;
	if (!out || (n && (!options || !values)))
		return CUDA_ERROR_INVALID_VALUE;
	l = calloc(1, sizeof(*l));
	if (!l)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (n) {
		l->opts = malloc(n * sizeof(*l->opts));
		l->vals = malloc(n * sizeof(*l->vals));
		if (!l->opts || !l->vals) {
			free(l->opts);
			free(l->vals);
			free(l);
			return CUDA_ERROR_OUT_OF_MEMORY;
		}
		memcpy(l->opts, options, n * sizeof(*l->opts));
		memcpy(l->vals, values, n * sizeof(*l->vals));
	}
	l->nopts = n;
	l->magic = SIM_MAGIC_LINK;
	sim_handle_add(l);
	*out = (CUlinkState)l;
	return CUDA_SUCCESS;
}

static CUresult link_add_data(CUlinkState state, CUjitInputType type, void *data, size_t size, const char *name)
{
	struct sim_link *l = link_from(state);
	CUresult rc;

	if (!l)
		return CUDA_ERROR_INVALID_HANDLE;
	if (!data || size == 0)
		return CUDA_ERROR_INVALID_VALUE;
	rc = input_type_check(type, name);
	if (rc == CUDA_SUCCESS)
		rc = link_add_ptx(l, data, size, name);
	return rc;
}

static CUresult link_add_file(CUlinkState state, CUjitInputType type, const char *path)
{
	struct sim_link *l = link_from(state);
	char *text = NULL;
	size_t len = 0;
	CUresult rc;

	if (!l)
		return CUDA_ERROR_INVALID_HANDLE;
	if (!path)
		return CUDA_ERROR_INVALID_VALUE;
	rc = input_type_check(type, path);
	if (rc == CUDA_SUCCESS)
		rc = read_whole_file(path, &text, &len);
	if (rc == CUDA_SUCCESS)
		rc = len ? link_add_ptx(l, text, len, path) : CUDA_ERROR_INVALID_PTX;
	free(text);
	return rc;
}

static CUresult link_complete(CUlinkState state, void **cubin, size_t *size)
{
	struct sim_link *l = link_from(state);
	char err[LINK_ERR_LEN];
	struct sim_ptx ptx;
	CUresult rc;

	if (!l)
		return CUDA_ERROR_INVALID_HANDLE;
	if (!cubin || !size || l->ninputs == 0)
		return CUDA_ERROR_INVALID_VALUE;
	/* each input parsed alone; together they may still define an entry twice */
	rc = sim_ptx_parse(l->text, &ptx, err, sizeof(err));
	link_log(l, rc == CUDA_SUCCESS ? "" : err);
	if (rc == CUDA_SUCCESS) {
		sim_ptx_fini(&ptx);
		*cubin = l->text;
		*size = l->len + 1;
	}
	return rc;
}

static CUresult link_destroy(CUlinkState state)
{
	struct sim_link *l = link_from(state);

	if (!l)
		return CUDA_ERROR_INVALID_HANDLE;
	sim_handle_remove(l);
	l->magic = 0;
	free(l->text);
	free(l->opts);
	free(l->vals);
	free(l);
	return CUDA_SUCCESS;
}

/* cuda.h names the current entry points cuLinkCreate_v2 etc.; the unsuffixed ones (CUDA 5.5)
 * take the same arguments and are exported too. */
CUresult sim_api_cuLinkCreate_v2(unsigned int numOptions, CUjit_option *options, void **optionValues,
				 CUlinkState *stateOut)
{
	return link_create(numOptions, options, optionValues, stateOut);
}

CUresult sim_api_cuLinkCreate(unsigned int numOptions, CUjit_option *options, void **optionValues,
			      CUlinkState *stateOut)
{
	return link_create(numOptions, options, optionValues, stateOut);
}

/* Per-input options (numOptions, options, optionValues) change nothing the device does. */
CUresult sim_api_cuLinkAddData_v2(CUlinkState state, CUjitInputType type, void *data, size_t size, const char *name,
				  unsigned int numOptions, CUjit_option *options, void **optionValues)
{
	CUresult rc = CUDA_SUCCESS;

	(void)numOptions, (void)options, (void)optionValues;
	rc = link_add_data(state, type, data, size, name);
	return rc;
}

CUresult sim_api_cuLinkAddData(CUlinkState state, CUjitInputType type, void *data, size_t size, const char *name,
			       unsigned int numOptions, CUjit_option *options, void **optionValues)
{
	CUresult rc = CUDA_SUCCESS;

	(void)numOptions, (void)options, (void)optionValues;
	rc = link_add_data(state, type, data, size, name);
	return rc;
}

CUresult sim_api_cuLinkAddFile_v2(CUlinkState state, CUjitInputType type, const char *path, unsigned int numOptions,
				  CUjit_option *options, void **optionValues)
{
	CUresult rc = CUDA_SUCCESS;

	(void)numOptions, (void)options, (void)optionValues;
	rc = link_add_file(state, type, path);
	return rc;
}

CUresult sim_api_cuLinkAddFile(CUlinkState state, CUjitInputType type, const char *path, unsigned int numOptions,
			       CUjit_option *options, void **optionValues)
{
	CUresult rc = CUDA_SUCCESS;

	(void)numOptions, (void)options, (void)optionValues;
	rc = link_add_file(state, type, path);
	return rc;
}

CUresult sim_api_cuLinkComplete(CUlinkState state, void **cubinOut, size_t *sizeOut)
{
	return link_complete(state, cubinOut, sizeOut);
}

CUresult sim_api_cuLinkDestroy(CUlinkState state)
{
	return link_destroy(state);
}
