// SPDX-License-Identifier: GPL-2.0
/*
 * Host build of upstream's loongarch kprobes decisions and simulators, for the
 * differential test of the Rust ones (arch/loongarch/kernel/probes/*.rs).
 *
 * asm/inst.h and asm/kprobes.h are the tree's own (copied by build.rs);
 * build.rs cuts the functions of inst.c and kprobes.c that make the decisions
 * and the simulators, and the helpers they use, out of the tree into
 * rk_pre.c, rk_inst.c and rk_kprobes.c. The entry points below (rk_*) are
 * what src/ffi.rs calls.
 *
 * The probed text is a host buffer of the harness (rk_set_text()); upstream
 * dereferences kprobe_opcode_t pointers into it, and rk_kaddr() turns such a
 * pointer back into the kernel address the harness knows.
 */

#include "rk_pre.c"
#include <asm/inst.h>
#include <asm/kprobes.h>
#include "rk_inst.c"

/* The fields of include/linux/kprobes.h's struct kprobe that arch code uses. */
struct kprobe {
	kprobe_opcode_t *addr;
	kprobe_opcode_t opcode;
	struct arch_specific_insn ainsn;
};

#include "rk_kprobes.c"

#include "rk_text.h" /* difftest-common/csrc */

static _Thread_local const char *rk_noted;
static _Thread_local kprobe_opcode_t rk_slot[MAX_INSN_SIZE];

void rk_note(const char *fmt)
{
	rk_noted = fmt;
}

/* What upstream logged since the last call (its format string), or NULL. */
const char *rk_take_note(void)
{
	const char *n = rk_noted;

	rk_noted = NULL;
	return n;
}

void *get_insn_slot(void)
{
	return rk_slot;
}

void flush_icache_range(unsigned long start, unsigned long end)
{
}

int rk_not_supported(u32 word)
{
	union loongarch_instruction insn = { .word = word };

	return insns_not_supported(insn);
}

int rk_need_simulation(u32 word)
{
	union loongarch_instruction insn = { .word = word };

	return insns_need_simulation(insn);
}

/* is_pc_ins(), is_branch_ins() and is_break_ins() as bits 0, 1 and 2. */
int rk_predicates(u32 word)
{
	union loongarch_instruction insn = { .word = word };

	return is_pc_ins(&insn) | is_branch_ins(&insn) << 1 |
	       is_break_ins(&insn) << 2;
}

/* What p->ainsn.restore holds before arch_prepare_kprobe(). */
#define RK_UNSET 0x5a5a5a5aUL

/*
 * arch_prepare_kprobe() at kaddr; restore is reported as ~0 when it was not
 * written, else as a kernel address (or 0). The handler is what arch_simulate_insn()
 * runs on p->opcode at a hit when no slot was taken: 0 none, 1 simu_pc(),
 * 2 simu_branch().
 */
int rk_prepare(unsigned long kaddr, u32 *opcode, int *handler, int *has_slot,
	       u32 *slot, unsigned long *restore)
{
	struct kprobe p = { 0 };
	union loongarch_instruction insn;
	int ret;

	p.addr = rk_host(kaddr);
	p.ainsn.restore = RK_UNSET;
	rk_slot[0] = rk_slot[1] = 0;
	ret = arch_prepare_kprobe(&p);
	*opcode = p.opcode;
	insn.word = p.opcode;
	*handler = 0;
	if (ret == 0 && !p.ainsn.insn)
		*handler = is_pc_ins(&insn) ? 1 : is_branch_ins(&insn) ? 2 : 0;
	*has_slot = p.ainsn.insn != NULL;
	slot[0] = rk_slot[0];
	slot[1] = rk_slot[1];
	if (p.ainsn.restore == RK_UNSET)
		*restore = ~0UL;
	else if (!p.ainsn.restore)
		*restore = 0;
	else
		*restore = rk_kaddr((void *)p.ainsn.restore);
	return ret;
}

/* Runs arch_simulate_insn() (which 0), simu_pc() (1) or simu_branch() (2). */
int rk_simulate(int which, u32 word, struct pt_regs *regs)
{
	union loongarch_instruction insn = { .word = word };

	switch (which) {
	case 0:
		arch_simulate_insn(insn, regs);
		return 0;
	case 1:
		simu_pc(regs, insn);
		return 0;
	case 2:
		simu_branch(regs, insn);
		return 0;
	}
	return -1;
}

u32 rk_bp_insn(void)
{
	return KPROBE_BP_INSN;
}

u32 rk_sstepbp_insn(void)
{
	return KPROBE_SSTEPBP_INSN;
}
