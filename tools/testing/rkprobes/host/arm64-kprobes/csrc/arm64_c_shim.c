// SPDX-License-Identifier: GPL-2.0
/*
 * Host build of upstream's arm64 kprobes decisions and simulators, for the
 * differential test of the Rust ones (arch/arm64/kernel/probes/*.rs).
 *
 * decode-insn.c and simulate-insn.c are included from the Linux tree as they
 * are; build.rs cuts the kernel helpers they call (and arch_prepare_kprobe())
 * out of the tree into rk_pre.c, rk_traps.c and rk_kprobes.c. The entry points
 * below (rk_*) are what src/ffi.rs calls.
 *
 * The probed text is a host buffer of the harness (rk_set_text()); upstream
 * dereferences kprobe_opcode_t pointers into it, and rk_kaddr() turns such a
 * pointer back into the kernel address the harness knows.
 */

#include "rk_pre.c"
#include <asm/insn.h>
#include "rk_traps.c"
#include <decode-insn.c>
#include <simulate-insn.c>

/* The fields of include/linux/kprobes.h's struct kprobe that arch code uses. */
struct kprobe {
	kprobe_opcode_t *addr;
	kprobe_opcode_t opcode;
	struct arch_specific_insn ainsn;
};

#include "rk_kprobes.c"

#include "rk_text.h" /* difftest-common/csrc */

static _Thread_local int rk_faulted;
static _Thread_local u32 rk_slot[2];
static _Thread_local int rk_slot_fail;

u64 rk_mem_read(unsigned long addr, int size)
{
	int fault = 0;
	u64 v = rk_env_mem_read(addr, size, &fault);

	if (fault) {
		rk_faulted = 1;
		return 0;
	}
	return v;
}

void *get_insn_slot(void)
{
	return rk_slot_fail ? NULL : rk_slot;
}

int aarch64_insn_patch_text_nosync(void *addr, u32 insn)
{
	*(u32 *)addr = insn;
	return 0;
}

/* Handlers as numbers: 0 none, then in the order of simulate-insn.h. */
static int rk_handler_index(probes_handler_t *h)
{
	static probes_handler_t *const all[] = {
		simulate_adr_adrp,	simulate_b_bl,
		simulate_b_cond,	simulate_br_blr_ret,
		simulate_cbz_cbnz,	simulate_tbz_tbnz,
		simulate_ldr_literal,	simulate_ldrsw_literal,
	};
	int i;

	if (!h)
		return 0;
	for (i = 0; i < 8; i++)
		if (all[i] == h)
			return i + 1;
	return -1;
}

int rk_is_steppable(u32 insn)
{
	return aarch64_insn_is_steppable(insn);
}

int rk_probe_decode(u32 insn, int *handler)
{
	struct arch_probe_insn api = { 0 };
	enum probe_insn r = arm_probe_decode_insn(insn, &api);

	*handler = rk_handler_index(api.handler);
	return r;
}

int rk_kprobe_decode(unsigned long kaddr, int *handler)
{
	struct arch_specific_insn asi = { 0 };
	enum probe_insn r = arm_kprobe_decode_insn(rk_host(kaddr), &asi);

	*handler = rk_handler_index(asi.api.handler);
	return r;
}

int rk_prepare(unsigned long kaddr, u32 *opcode, int *handler, int *has_slot,
	       u32 *slot, unsigned long *restore)
{
	struct kprobe p = { 0 };
	int ret;

	p.addr = rk_host(kaddr);
	rk_slot[0] = rk_slot[1] = 0;
	rk_slot_fail = 0;
	ret = arch_prepare_kprobe(&p);
	*opcode = p.opcode;
	*handler = rk_handler_index(p.ainsn.api.handler);
	*has_slot = p.ainsn.api.insn != NULL;
	slot[0] = rk_slot[0];
	slot[1] = rk_slot[1];
	*restore = p.ainsn.api.restore ? rk_kaddr((void *)p.ainsn.api.restore) : 0;
	return ret;
}

int rk_simulate(int handler, u32 opcode, unsigned long addr,
		struct pt_regs *regs, int *faulted)
{
	static probes_handler_t *const all[] = {
		simulate_adr_adrp,	simulate_b_bl,
		simulate_b_cond,	simulate_br_blr_ret,
		simulate_cbz_cbnz,	simulate_tbz_tbnz,
		simulate_ldr_literal,	simulate_ldrsw_literal,
	};

	if (handler < 1 || handler > 8)
		return -1;
	rk_faulted = 0;
	all[handler - 1](opcode, (long)addr, regs);
	*faulted = rk_faulted;
	return 0;
}

int rk_cond(unsigned int cond, unsigned long pstate)
{
	return aarch32_opcode_cond_checks[cond & 0xf](pstate);
}
