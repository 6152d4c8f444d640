/* ptx_names.c - the name tables of ptx.h (types, special registers) and the small lookups a
 * consumer uses on a parsed module. driver layer, libc only. Kept apart from the parser so the
 * tables that the parser, the interpreter and the effects analysis all match on are one copy. */
#include <string.h>

#include "driver/ptx.h"

/* Indexed by enum ptx_type; "" for NONE so a message never prints NULL. */
static const struct {
	const char *name;
	unsigned bytes;
} type_table[] = {
	[PTX_T_NONE] = { "", 0 },       [PTX_T_PRED] = { "pred", 0 },
	[PTX_T_B8] = { "b8", 1 },       [PTX_T_B16] = { "b16", 2 },
	[PTX_T_B32] = { "b32", 4 },     [PTX_T_B64] = { "b64", 8 },
	[PTX_T_B128] = { "b128", 16 },  [PTX_T_U8] = { "u8", 1 },
	[PTX_T_U16] = { "u16", 2 },     [PTX_T_U32] = { "u32", 4 },
	[PTX_T_U64] = { "u64", 8 },     [PTX_T_S8] = { "s8", 1 },
	[PTX_T_S16] = { "s16", 2 },     [PTX_T_S32] = { "s32", 4 },
	[PTX_T_S64] = { "s64", 8 },     [PTX_T_F16] = { "f16", 2 },
	[PTX_T_F16X2] = { "f16x2", 4 }, [PTX_T_BF16] = { "bf16", 2 },
	[PTX_T_BF16X2] = { "bf16x2", 4 }, [PTX_T_F32] = { "f32", 4 },
	[PTX_T_F64] = { "f64", 8 },
};

#define NTYPES (sizeof(type_table) / sizeof(type_table[0]))

/* Indexed by enum ptx_special; %envreg's number is the operand's imm, so its name has none. */
static const char *const special_table[PTX_SR_COUNT] = {
	[PTX_SR_TID_X] = "%tid.x",         [PTX_SR_TID_Y] = "%tid.y",
	[PTX_SR_TID_Z] = "%tid.z",         [PTX_SR_NTID_X] = "%ntid.x",
	[PTX_SR_NTID_Y] = "%ntid.y",       [PTX_SR_NTID_Z] = "%ntid.z",
	[PTX_SR_CTAID_X] = "%ctaid.x",     [PTX_SR_CTAID_Y] = "%ctaid.y",
	[PTX_SR_CTAID_Z] = "%ctaid.z",     [PTX_SR_NCTAID_X] = "%nctaid.x",
	[PTX_SR_NCTAID_Y] = "%nctaid.y",   [PTX_SR_NCTAID_Z] = "%nctaid.z",
	[PTX_SR_LANEID] = "%laneid",       [PTX_SR_WARPID] = "%warpid",
	[PTX_SR_NWARPID] = "%nwarpid",     [PTX_SR_SMID] = "%smid",
	[PTX_SR_NSMID] = "%nsmid",         [PTX_SR_GRIDID] = "%gridid",
	[PTX_SR_LANEMASK_EQ] = "%lanemask_eq", [PTX_SR_LANEMASK_LT] = "%lanemask_lt",
	[PTX_SR_LANEMASK_LE] = "%lanemask_le", [PTX_SR_LANEMASK_GT] = "%lanemask_gt",
	[PTX_SR_LANEMASK_GE] = "%lanemask_ge", [PTX_SR_CLOCK] = "%clock",
	[PTX_SR_CLOCK64] = "%clock64",     [PTX_SR_GLOBALTIMER] = "%globaltimer",
	[PTX_SR_GLOBALTIMER_LO] = "%globaltimer_lo", [PTX_SR_GLOBALTIMER_HI] = "%globaltimer_hi",
	[PTX_SR_DYNAMIC_SMEM_SIZE] = "%dynamic_smem_size",
	[PTX_SR_TOTAL_SMEM_SIZE] = "%total_smem_size",
	[PTX_SR_ENVREG] = "%envreg",
};

const char *ptx_type_name(enum ptx_type t)
{
	return (unsigned)t < NTYPES ? type_table[t].name : "";
}

unsigned ptx_type_bytes(enum ptx_type t)
{
	return (unsigned)t < NTYPES ? type_table[t].bytes : 0;
}

enum ptx_type ptx_type_from_name(const char *s)
{
	if (!s || !*s)
		return PTX_T_NONE;
	for (unsigned t = PTX_T_PRED; t < NTYPES; t++)
		if (strcmp(s, type_table[t].name) == 0)
			return (enum ptx_type)t;
	return PTX_T_NONE;
}

const char *ptx_special_name(enum ptx_special s)
{
	return (unsigned)s < PTX_SR_COUNT && special_table[s] ? special_table[s] : "";
}

bool ptx_insn_has_mod(const struct ptx_insn *in, const char *mod)
{
	for (unsigned i = 0; i < in->nmods; i++)
		if (strcmp(in->mods[i], mod) == 0)
			return true;
	return false;
}

const struct ptx_func *ptx_find_func(const struct ptx_module *m, const char *name)
{
	uint32_t i = ptx_func_index(m, name);

	return i == PTX_NONE ? NULL : &m->funcs[i];
}

uint32_t ptx_func_index(const struct ptx_module *m, const char *name)
{
	for (uint32_t i = 0; m && i < m->nfuncs; i++)
		if (strcmp(m->funcs[i].name, name) == 0)
			return i;
	return PTX_NONE;
}
