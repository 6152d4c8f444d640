/* fatbin.c - the software device's reading of binary images: nvcc's fat binaries, the wrappers
 * the runtime registers, and ELF cubins, reduced to the PTX text inside or, in machine-code
 * mode, to the machine code's kernels. tests/simcuda layer, built on cufold's one decoder of
 * images (driver/image.h: the layouts, decompression, the choice of PTX, ELF metadata); what is
 * left here is the device's policy and its messages.
 *
 * The device runs kernels as host twins or through its PTX interpreter and reads entry names
 * and parameter layouts, which PTX carries; machine code (SASS in an ELF cubin) is of no use to
 * it. So an image is accepted when it is PTX text or holds a PTX entry the device can JIT, and
 * refused otherwise with the kernels and the architectures it holds (the program's author then
 * knows to add `compute_XX` to -gencode).
 *
 * Machine-code mode (SIMCUDA_MACHINE_CODE=noop, core.c): an image without usable PTX loads from
 * its machine code for the device's architecture (an ELF for sm_9x, x <= the device's minor, as
 * the driver's binary compatibility rule says), whose kernels and parameter layouts come from
 * its .nv.info sections (img_elf_read). */
#include "sim_module_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "driver/image.h"

/* The decoder's error as the driver's. */
static CUresult image_result(int rc)
{
	return rc == -CF_ENOMEM ? CUDA_ERROR_OUT_OF_MEMORY :
	       rc == -CF_ENOSYS ? CUDA_ERROR_NOT_SUPPORTED : CUDA_ERROR_INVALID_IMAGE;
}

bool sim_elf_arch_runs(unsigned int arch)
{
	return img_sm_runs(arch, (unsigned int)sim_device_cc());
}

/* The machine code's kernels and variables as the device's module holds them; m's strings and
 * initial bytes move over (m is freed by the caller either way). */
static CUresult mcode_adopt(struct img_mcode *m, struct sim_ptx *out)
{
	memset(out, 0, sizeof(*out));
	out->entries = calloc(m->nkernels ? m->nkernels : 1, sizeof(*out->entries));
	out->globals = calloc(m->nglobals ? m->nglobals : 1, sizeof(*out->globals));
	if (!out->entries || !out->globals)
		goto out_oom;
	for (unsigned int i = 0; i < m->nkernels; i++, out->nentries++) {
		struct sim_ptx_entry *e = &out->entries[i];
		const struct img_kernel *k = &m->kernels[i];

		e->params = calloc(k->nparams ? k->nparams : 1, sizeof(*e->params));
		if (!e->params)
			goto out_oom;
		for (unsigned int p = 0; p < k->nparams; p++)
			e->params[p] = (struct sim_param_info){ k->params[p].offset, k->params[p].size, k->params[p].align };
		e->nparams = k->nparams;
		e->param_bytes = k->param_bytes;
		e->name = m->kernels[i].name;
		m->kernels[i].name = NULL;
	}
	for (unsigned int i = 0; i < m->nglobals; i++, out->nglobals++) {
		out->globals[i].name = m->globals[i].name;
		out->globals[i].size = m->globals[i].size;
		out->globals[i].init = m->globals[i].init;
		m->globals[i].name = NULL;
		m->globals[i].init = NULL;
	}
	out->target_sm = (int)m->arch;
	return CUDA_SUCCESS;
out_oom:
	sim_ptx_fini(out);
	return CUDA_ERROR_OUT_OF_MEMORY;
}

/* Machine-code mode: the kernels of the ELF entry e (or of the bare ELF at elf when e is NULL). */
static CUresult machine_code_entries(const struct img_entry *e, const void *elf, size_t len,
				     struct sim_ptx *mc, char *msg, size_t msglen)
{
	char *bytes = NULL;
	struct img_mcode m;
	int got = 0;
	CUresult rc;

	if (e) {
		got = img_entry_bytes(e, &bytes, &len, msg, msglen);
		elf = bytes;
	}
	if (got == 0)
		got = img_elf_read(elf, len, &m, msg, msglen);
	free(bytes);
	if (got < 0)
		return image_result(got);
	rc = mcode_adopt(&m, mc);
	img_mcode_free(&m);
	if (rc != CUDA_SUCCESS)
		snprintf(msg, msglen, "out of memory");
	return rc;
}

/* A bare ELF cubin: its kernels in machine-code mode, refused naming them otherwise. */
static CUresult elf_image(const void *elf, size_t limit, struct sim_ptx *mc, bool *is_mc, char *msg,
			  size_t msglen)
{
	char kernels[512] = "";
	size_t len = limit == SIZE_MAX ? img_elf_span(elf, limit) : limit;
	CUresult rc;

	if (mc) {
		rc = machine_code_entries(NULL, elf, len, mc, msg, msglen);
		if (rc == CUDA_SUCCESS && is_mc)
			*is_mc = true;
		return rc;
	}
	img_elf_kernels(elf, len, kernels, sizeof(kernels));
	snprintf(msg, msglen, "image is an ELF cubin for sm_%u (kernels: %s) and holds no PTX: the software "
		 "device runs PTX only (add compute_XX to nvcc's -gencode, or set SIMCUDA_MACHINE_CODE=noop "
		 "to run its kernels as no-ops)", img_elf_arch(elf, len), kernels[0] ? kernels : "none found");
	return CUDA_ERROR_NO_BINARY_FOR_GPU;
}

/* Why a fatbin without PTX the device can JIT is refused (machine-code mode off, or on with no
 * machine code at all). */
static CUresult fatbin_refused(const struct img_survey *s, bool mc_on, char *msg, size_t msglen)
{
	int cc = sim_device_cc();
	CUresult rc = CUDA_ERROR_NO_BINARY_FOR_GPU;

	if (!s->entries)
		snprintf(msg, msglen, "fatbin holds no code at all (as the device-link image of an nvcc "
			 "-rdc=true build for compute_XX only: relocatable code is not supported)");
	else if (s->ptx_no_decoder)
		snprintf(msg, msglen, "fatbin entry is zstd-compressed and libzstd.so.1 is not installed "
			 "(install it, or build with nvcc --compress-mode=none)");
	else if (s->too_new_arch && !mc_on)
		snprintf(msg, msglen, "fatbin's PTX is for compute_%u, newer than the device's %d.%d (entries: "
			 "%s; SIMCUDA_CC sets it)", s->too_new_arch, cc / 10, cc % 10, s->archs);
	else if (s->ptx_other_arch && !mc_on)
		snprintf(msg, msglen, "fatbin's PTX is specific to another architecture than the device's %d.%d "
			 "(entries: %s; SIMCUDA_CC sets it)", cc / 10, cc % 10, s->archs);
	else if (mc_on)
		snprintf(msg, msglen, "fatbin holds no code a device of compute capability %d.%d can run "
			 "(entries: %s)", cc / 10, cc % 10, s->archs);
	else
		snprintf(msg, msglen, "fatbin holds machine code only (%s; kernels: %s): the software device "
			 "runs PTX only (add compute_XX to nvcc's -gencode, or set SIMCUDA_MACHINE_CODE=noop to "
			 "run its kernels as no-ops)", s->archs,
			 s->kernels[0] ? s->kernels : s->err[0] ? s->err : "none found");
	if (s->ptx_no_decoder)
		rc = CUDA_ERROR_NOT_SUPPORTED;
	return rc;
}

/* A fatbin: its best PTX as text, or in machine-code mode its machine code's kernels. */
static CUresult fatbin_image(const void *fb, size_t limit, char **text, struct sim_ptx *mc, bool *is_mc,
			     char *msg, size_t msglen)
{
	struct img_survey *s = malloc(sizeof(*s));
	size_t n;
	CUresult rc;

	if (!s) {
		snprintf(msg, msglen, "out of memory");
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	/* In machine-code mode only the chosen ELF is decompressed: PyTorch's libraries register
	 * thousands of images with a dozen architectures each. */
	if (img_survey(fb, limit, (unsigned int)sim_device_cc(), !mc, s) < 0) {
		snprintf(msg, msglen, "fatbin is truncated or malformed");
		rc = CUDA_ERROR_INVALID_IMAGE;
	} else if (!s->have_ptx && mc && s->have_newest_elf) {
		rc = machine_code_entries(s->have_elf ? &s->elf : &s->newest_elf, NULL, 0, mc, msg, msglen);
		if (rc == CUDA_SUCCESS && is_mc)
			*is_mc = true;
	} else if (!s->have_ptx) {
		rc = fatbin_refused(s, mc != NULL, msg, msglen);
	} else {
		rc = image_result(img_entry_bytes(&s->ptx, text, &n, msg, msglen));
		if (*text)
			rc = CUDA_SUCCESS;
	}
	free(s);
	return rc;
}

CUresult sim_image_ptx(const char *who, const void *image, size_t limit, char **text, struct sim_ptx *mc,
		       bool *is_mc, char *err, size_t errlen)
{
	const void *b = image;
	CUresult rc = CUDA_SUCCESS;
	char msg[1024] = "";

	*text = NULL;
	if (is_mc)
		*is_mc = false;
	if (!mc || !sim_machine_code_is_on())
		mc = NULL;
	switch (b ? img_form_of(b, limit) : IMG_FORM_UNKNOWN) {
	case IMG_FORM_WRAPPER:
		b = img_unwrap(image, &limit);
		if (b) {
			rc = fatbin_image(b, limit, text, mc, is_mc, msg, sizeof(msg));
		} else {
			snprintf(msg, sizeof(msg), "fatbin wrapper does not point at a fatbin");
			rc = CUDA_ERROR_INVALID_IMAGE;
		}
		break;
	case IMG_FORM_FATBIN:
		rc = fatbin_image(b, limit, text, mc, is_mc, msg, sizeof(msg));
		break;
	case IMG_FORM_ELF:
		rc = elf_image(b, limit, mc, is_mc, msg, sizeof(msg));
		break;
	case IMG_FORM_PTX:
	case IMG_FORM_UNKNOWN:
		if (!b) {
			snprintf(msg, sizeof(msg), "no image");
			rc = CUDA_ERROR_INVALID_VALUE;
		}
		break; /* PTX text (or garbage the PTX reader will name) */
	}
	if (rc != CUDA_SUCCESS) {
		sim_log("%s: %s", who, msg);
		if (err && errlen)
			snprintf(err, errlen, "%s", msg);
	}
	return rc;
}
