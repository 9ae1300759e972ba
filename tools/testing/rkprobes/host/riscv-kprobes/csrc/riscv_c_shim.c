// SPDX-License-Identifier: GPL-2.0
/*
 * Host build of upstream's riscv kprobes decisions and simulators, for the
 * differential test of the Rust ones (arch/riscv/kernel/probes/*.rs).
 *
 * decode-insn.c and simulate-insn.c are included from the Linux tree as they
 * are; build.rs cuts the kernel helpers they call (and arch_check_kprobe(),
 * arch_prepare_kprobe() with its two helpers) out of the tree into rk_pre.c
 * and rk_kprobes.c. The entry points below (rk_*) are what src/ffi.rs calls.
 *
 * The probed text is a host buffer of the harness (rk_set_text()); upstream
 * dereferences pointers into it, and rk_kaddr() turns such a pointer back into
 * the kernel address the harness knows.
 */

#include "rk_pre.c"
#include <asm/insn.h>
#include <decode-insn.c>
#include <simulate-insn.c>

/* The fields of include/linux/kprobes.h's struct kprobe that arch code uses. */
struct kprobe {
	kprobe_opcode_t *addr;
	kprobe_opcode_t opcode;
	struct arch_specific_insn ainsn;
};

#include "rk_kprobes.c"

#define RK_SLOT_FILL 0xa5

#include "rk_text.h" /* difftest-common/csrc */

static _Thread_local u8 rk_slot[16];
static _Thread_local int rk_slot_fail;

void *get_insn_slot(void)
{
	return rk_slot_fail ? NULL : rk_slot;
}

int patch_text_nosync(void *addr, const void *insns, size_t len)
{
	unsigned char *d = addr;
	const unsigned char *s = insns;

	if (d < rk_slot || d + len > rk_slot + sizeof(rk_slot))
		return -1; /* not the slot: the harness sees it as untouched */
	while (len--)
		*d++ = *s++;
	return 0;
}

/* Handlers as numbers: 0 none, then in the order of simulate-insn.h. */
static probes_handler_t *const rk_all[] = {
	simulate_auipc,	simulate_branch, simulate_jal,
	simulate_jalr,	simulate_c_j,	 simulate_c_jr,
	simulate_c_jalr, simulate_c_bnez, simulate_c_beqz,
};
#define RK_NHANDLERS ((int)(sizeof(rk_all) / sizeof(rk_all[0])))

int rk_handler_index(probes_handler_t *h)
{
	int i;

	if (!h)
		return 0;
	for (i = 0; i < RK_NHANDLERS; i++)
		if (rk_all[i] == h)
			return i + 1;
	return -1;
}

/* riscv_probe_decode_insn() on a word of its own (the 32 bits it reads). */
int rk_decode_word(u32 insn, int *handler)
{
	struct arch_probe_insn api = { 0 };
	probe_opcode_t w = insn;
	enum probe_insn r = riscv_probe_decode_insn(&w, &api);

	*handler = rk_handler_index(api.handler);
	return r;
}

/* riscv_probe_decode_insn() at a (2-byte aligned) kernel address of the text. */
int rk_decode_at(unsigned long kaddr, int *handler)
{
	struct arch_probe_insn api = { 0 };
	enum probe_insn r = riscv_probe_decode_insn(rk_host(kaddr), &api);

	*handler = rk_handler_index(api.handler);
	return r;
}

int rk_check(unsigned long kaddr)
{
	return arch_check_kprobe((unsigned long)rk_host(kaddr));
}

int rk_prepare(unsigned long kaddr, u32 *opcode, int *handler, int *has_slot,
	       u8 *slot, unsigned long *restore)
{
	struct kprobe p = { 0 };
	unsigned int i;
	int ret;

	p.addr = rk_host(kaddr);
	for (i = 0; i < sizeof(rk_slot); i++)
		rk_slot[i] = RK_SLOT_FILL;
	rk_slot_fail = 0;
	ret = arch_prepare_kprobe(&p);
	*opcode = p.opcode;
	*handler = rk_handler_index(p.ainsn.api.handler);
	*has_slot = p.ainsn.api.insn != NULL;
	for (i = 0; i < sizeof(rk_slot); i++)
		slot[i] = rk_slot[i];
	*restore = p.ainsn.api.restore ?
		rk_kaddr((void *)p.ainsn.api.restore) : 0;
	return ret;
}

/* Runs simulator number handler (1..9); its bool, or -1 for no such handler. */
int rk_simulate(int handler, u32 opcode, unsigned long addr,
		struct pt_regs *regs)
{
	if (handler < 1 || handler > RK_NHANDLERS)
		return -1;
	return rk_all[handler - 1](opcode, addr, regs);
}
