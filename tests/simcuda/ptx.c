/* ptx.c - the software device's PTX index: entry names and the byte layout of their parameters,
 * as cuFuncGetParamInfo reports them, from the product's PTX front end (driver/ptx.h). tests/simcuda
 * layer (tests may use the product, never the reverse).
 *
 * The parsed module is kept (sim_ptx.parsed): the interpreter decodes its functions from it at
 * their first launch, so the device reads PTX exactly as cufold does, and refuses what the
 * parser refuses, with the parser's message. */
#include "sim_module_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PTX_MAX_PARAM_BYTES (1u << 20) /* far above the driver's 32764: a garbage guard */

/* The entries (defined .entry functions) of the parsed module, in file order. */
static CUresult index_entries(struct sim_ptx *out, char *err, size_t errlen)
{
	const struct ptx_module *m = out->parsed;
	unsigned int n = 0;

	for (uint32_t i = 0; i < m->nfuncs; i++)
		n += m->funcs[i].is_entry && !m->funcs[i].is_decl;
	out->entries = calloc(n ? n : 1, sizeof(*out->entries));
	if (!out->entries)
		return CUDA_ERROR_OUT_OF_MEMORY;
	for (uint32_t i = 0; i < m->nfuncs; i++) {
		const struct ptx_func *f = &m->funcs[i];
		struct sim_ptx_entry *e = &out->entries[out->nentries];

		if (!f->is_entry || f->is_decl)
			continue;
		if (f->param_bytes > PTX_MAX_PARAM_BYTES) {
			if (err && errlen)
				snprintf(err, errlen, "line %u: parameters of %s are too large", f->line, f->name);
			return CUDA_ERROR_INVALID_PTX;
		}
		e->name = strdup(f->name);
		e->params = calloc(f->nparams ? f->nparams : 1, sizeof(*e->params));
		out->nentries++;
		if (!e->name || !e->params)
			return CUDA_ERROR_OUT_OF_MEMORY;
		e->nparams = f->nparams;
		e->param_bytes = f->param_bytes;
		for (uint32_t k = 0; k < f->nparams; k++) {
			e->params[k].offset = f->params[k].offset;
			e->params[k].size = f->params[k].size;
			e->params[k].align = f->params[k].align;
		}
	}
	return CUDA_SUCCESS;
}

CUresult sim_ptx_parse(const char *text, struct sim_ptx *out, char *err, size_t errlen)
{
	char msg[256] = "";
	CUresult rc;

	memset(out, 0, sizeof(*out));
	if (err && errlen)
		err[0] = 0;
	out->parsed = ptx_parse(text, strlen(text), msg, sizeof(msg));
	if (!out->parsed) {
		if (err && errlen)
			snprintf(err, errlen, "%s", msg);
		return strcmp(msg, "out of memory") ? CUDA_ERROR_INVALID_PTX : CUDA_ERROR_OUT_OF_MEMORY;
	}
	out->version = (int)(out->parsed->version_major * 10 + out->parsed->version_minor);
	out->target_sm = (int)out->parsed->sm;
	rc = index_entries(out, err, errlen);
	if (rc != CUDA_SUCCESS) {
		if (rc == CUDA_ERROR_OUT_OF_MEMORY && err && errlen)
			snprintf(err, errlen, "out of memory");
		sim_ptx_fini(out);
	}
	return rc;
}

void sim_ptx_fini(struct sim_ptx *p)
{
	for (unsigned int i = 0; i < p->nentries; i++) {
		free(p->entries[i].name);
		free(p->entries[i].params);
	}
	free(p->entries);
	for (unsigned int i = 0; i < p->nglobals; i++) {
		free(p->globals[i].name);
		free(p->globals[i].init);
	}
	free(p->globals);
	ptx_module_free(p->parsed);
	memset(p, 0, sizeof(*p));
}
