/* variant_table.h - the parameter block of a multi-instance variant (rewrite/variant.h): what
 * cufold writes at each fused launch and the software device's twin of a variant reads
 * (tests/simcuda/launch.c runs each instance with the kernel's own twin). C only.
 *
 *	u32 k                       at 0: instances
 *	u32 stride                  at 4: bytes between instances' parameter blocks (16-aligned)
 *	u32 first[k + 1]            at 8: instance j's blocks are [first[j], first[j + 1]) of grid x
 *	instance j's parameters     at CF_VARIANT_HEADER + j * stride, laid out as the kernel's own */
#ifndef CF_VARIANT_TABLE_H
#define CF_VARIANT_TABLE_H

#define CF_VARIANT_TABLE_BYTES 4096u /* the variant's one parameter */
#define CF_VARIANT_MAX 32u           /* instances at most */
#define CF_VARIANT_HEADER 144u       /* 8 + 4 * (CF_VARIANT_MAX + 1) = 140, rounded to 16 */
#define CF_VARIANT_SUFFIX "_cf_multi" /* E's variant is the entry E_cf_multi, in a module with E */

#endif
