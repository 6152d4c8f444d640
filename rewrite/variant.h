/* variant.h - multi-instance variants of programs' kernels (issue 24): the PTX of one launch
 * that runs k launches of the same kernel, as the blocks of one grid. rewrite layer (reads the
 * kernel's parsed PTX, driver/ptx.h; loading and launching the variant is rewrite/kernels.c's).
 *
 * The variant of entry E is E_cf_multi, with one parameter: a table of RW_MULTI_TABLE_BYTES
 * (rewrite/plan.h) in its parameter block,
 *	u32 k, u32 stride, u32 first[RW_MULTI_MAX + 1], then at RW_VARIANT_HEADER + j * stride the
 *	parameter bytes of instance j, laid out as E's own parameter block;
 * first[j] is the first block of instance j in the variant's grid (first[0] = 0, first[k] = the
 * grid's x). A block finds its instance j (the last j with first[j] <= %ctaid.x) and then runs
 * E's body unchanged except that %ctaid.x and %nctaid.x read as the instance's own
 * (%ctaid.x - first[j], first[j + 1] - first[j]) and every use of a parameter names the
 * instance's bytes (the address of E's parameter i becomes the table's instance block + its
 * offset: `ld.param [p + 8]`, `mov %rd, p` and `cvta.param` alike, through one register per
 * parameter). Grid y and z, the block and dynamic shared memory are the instances' own (they
 * must be equal: rw_multi_fits). Launching instances together is only right when they are
 * independent (the batch-kernel rule proves it); the software device's shuffled block order
 * shows when they are not.
 *
 * Refused (with the reason): a declaration only; calls (.func bodies would still read the
 * launch's %ctaid.x, and printf's order would change); %ctaid / %nctaid as vectors; module-scope
 * .global / .const variables (the variant is a module of its own: it would get its own copy);
 * a parameter block too large for k instances. */
#ifndef RW_VARIANT_H
#define RW_VARIANT_H

#include <stddef.h>
#include <stdint.h>

#include "rewrite/kernels/variant_table.h"
#include "rewrite/plan.h"

struct ptx_module;

#define RW_VARIANT_HEADER CF_VARIANT_HEADER /* the table's layout: rewrite/kernels/variant_table.h */
#define RW_VARIANT_SUFFIX CF_VARIANT_SUFFIX
_Static_assert(RW_MULTI_TABLE_BYTES == CF_VARIANT_TABLE_BYTES && RW_MULTI_MAX == CF_VARIANT_MAX,
	       "the rule's table and the variant's are one");

/* The PTX module text (malloc'ed, NUL-terminated, *len bytes) holding entry's variant, named
 * entry RW_VARIANT_SUFFIX, and entry itself unchanged (a device that plays kernels by name, the
 * software device, runs each instance as entry). 0, or -CF_ENOENT (no such entry), -CF_ENOSYS (refused: why says
 * which construct), -CF_ENOMEM. */
int rw_variant_ptx(const struct ptx_module *m, const char *entry, char **text, size_t *len, char *why,
		   size_t whylen);

/* The most instances of a kernel whose parameter block is param_bytes one table holds. */
uint32_t rw_variant_capacity(uint64_t param_bytes);

/* Fill table (cap bytes, at least RW_MULTI_TABLE_BYTES) for k instances: grid_x[j] blocks each,
 * params[j] their parameter blocks of param_bytes. *grid_x_total: the variant's grid x. 0, or
 * -CF_EINVAL (k out of 1..RW_MULTI_MAX, a zero grid, the total over 2^31 - 1) or -CF_ERANGE (the
 * parameters do not fit). */
int rw_variant_table(uint32_t k, const uint32_t *grid_x, const void *const *params, uint32_t param_bytes,
		     void *table, uint32_t cap, uint32_t *grid_x_total);

#endif
