// SPDX-License-Identifier: GPL-2.0
/*
 * upstream's riscv_probe_decode_insn() once more, built without
 * CONFIG_RISCV_ISA_C (-DRK_NO_ISA_C) and renamed, for the Rust decision's
 * isa_c = false. The simulators it names are those of riscv_c_shim.c.
 */

#include "rk_pre.c"
#include <asm/insn.h>
#define riscv_probe_decode_insn rk_noc_riscv_probe_decode_insn
#include <decode-insn.c>

int rk_handler_index(probes_handler_t *h);

int rk_noc_decode_word(u32 insn, int *handler)
{
	struct arch_probe_insn api = { 0 };
	probe_opcode_t w = insn;
	enum probe_insn r = rk_noc_riscv_probe_decode_insn(&w, &api);

	*handler = rk_handler_index(api.handler);
	return r;
}
