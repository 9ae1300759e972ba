// SPDX-License-Identifier: GPL-2.0
/*
 * The C side of the Rust ppc64 kprobes arch layer (CONFIG_KPROBES_RUST_ARCH).
 *
 * native.rs, built into the kprobes crate, implements the arch hooks, the
 * handlers the program check and single-step interrupts call
 * (kprobe_handler(), kprobe_post_handler()), the fault handler, the optprobe
 * callback and the kprobes-on-ftrace handler. What stays here is what must
 * be C: the per-CPU kprobe state (data the rest of the kernel names), the
 * preemption count a probe hit holds across its step, the optprobe slot
 * page (optinsn_slot of optprobes_head.S, which stays assembly), upstream's
 * messages, and one-line wrappers of static inlines, macros and linker
 * symbols that bindgen cannot call: ppc_inst_t, the return registers of an
 * interrupt, code patching, and emulate_step()/analyse_instr() of
 * lib/sstep.c, which stay C and are called as a service. Every function
 * here that a probe hit reaches is NOKPROBE_SYMBOL.
 */

#include <linux/build_bug.h>
#include <linux/extable.h>
#include <linux/kprobes.h>
#include <linux/preempt.h>
#include <linux/rethook.h>
#include <linux/string.h>
#include <asm/code-patching.h>
#include <asm/inst.h>
#include <asm/sections.h>
#include <asm/sstep.h>

#include "rust_glue.h"

DEFINE_PER_CPU(struct kprobe *, current_kprobe);
DEFINE_PER_CPU(struct kprobe_ctlblk, kprobe_ctlblk);

/* native.rs uses these by value: bindgen cannot evaluate them. */
static_assert(MSR_SINGLESTEP == 0x400);
static_assert(BREAKPOINT_INSTRUCTION == 0x7fe00008);

/* The instruction of the words native.rs passes: prefixed when val is a prefix. */
static __always_inline ppc_inst_t rkp_ppc_inst(u32 val, u32 suffix)
{
	if (get_op(val) == OP_PREFIX)
		return ppc_inst_prefix(val, suffix);
	return ppc_inst(val);
}

/*
 * A probe hit keeps preemption off from its trap to the end of its step,
 * as upstream's kprobe_handler() and kprobe_post_handler() do.
 */
void rkp_ppc_preempt_disable(void)
{
	preempt_disable();
}
NOKPROBE_SYMBOL(rkp_ppc_preempt_disable);

void rkp_ppc_preempt_enable(void)
{
	preempt_enable();
}
NOKPROBE_SYMBOL(rkp_ppc_preempt_enable);

/* The interrupt returns to what these set (SRR0/SRR1 are reloaded). */
void rkp_ppc_set_return_ip(struct pt_regs *regs, unsigned long ip)
{
	regs_set_return_ip(regs, ip);
}
NOKPROBE_SYMBOL(rkp_ppc_set_return_ip);

void rkp_ppc_set_return_msr(struct pt_regs *regs, unsigned long msr)
{
	regs_set_return_msr(regs, msr);
}
NOKPROBE_SYMBOL(rkp_ppc_set_return_msr);

/* What arch_within_kprobe_blacklist() adds to .kprobes.text: the head. */
void rkp_ppc_head_text(unsigned long *start, unsigned long *end)
{
	*start = (unsigned long)_stext;
	*end = (unsigned long)__head_end;
}

/* The trampoline rethook.c probes (arch_trampoline_kprobe()). */
unsigned long rkp_ppc_rethook_trampoline(void)
{
	return (unsigned long)arch_rethook_trampoline;
}
NOKPROBE_SYMBOL(rkp_ppc_rethook_trampoline);

/* The local entry of a function, by name (optprobes' callees). */
unsigned long rkp_ppc_kallsyms_lookup_name(const char *name)
{
	return ppc_kallsyms_lookup_name(name);
}

int rkp_ppc_patch_insn(u32 *addr, u32 val, u32 suffix)
{
	return patch_instruction(addr, rkp_ppc_inst(val, suffix));
}

/* arch_arm_kprobe() and arch_disarm_kprobe(): one word, which must stick. */
void rkp_ppc_patch_word_warn(u32 *addr, u32 word)
{
	WARN_ON_ONCE(patch_instruction(addr, ppc_inst(word)));
}
NOKPROBE_SYMBOL(rkp_ppc_patch_word_warn);

/* emulate_step() of lib/sstep.c, as try_to_emulate() calls it. */
int rkp_ppc_emulate_step(struct pt_regs *regs, u32 val, u32 suffix)
{
	return emulate_step(regs, rkp_ppc_inst(val, suffix));
}
NOKPROBE_SYMBOL(rkp_ppc_emulate_step);

/*
 * can_optimize()'s emulation: analyse_instr() on a frame that is all zero
 * but nip (the probe), msr (MSR_KERNEL) and trap (0); when it returns 1,
 * the nip emulate_update_regs() leaves.
 */
bool rkp_ppc_emulated_nip(u32 val, u32 suffix, unsigned long nip,
			  unsigned long *out)
{
	struct instruction_op op;
	struct pt_regs regs;

	memset(&regs, 0, sizeof(regs));
	regs.nip = nip;
	regs.trap = 0x0;
	regs.msr = MSR_KERNEL;
	if (analyse_instr(&op, &regs, rkp_ppc_inst(val, suffix)) != 1)
		return false;
	emulate_update_regs(&regs, &op);
	*out = regs.nip;
	return true;
}

/* kprobe_fault_handler(): a fault in a handler, fixed up where it can be. */
bool rkp_ppc_fixup_exception(struct pt_regs *regs)
{
	const struct exception_table_entry *entry;

	entry = search_exception_tables(regs->nip);
	if (!entry)
		return false;
	regs_set_return_ip(regs, extable_fixup(entry));
	return true;
}
NOKPROBE_SYMBOL(rkp_ppc_fixup_exception);

/*
 * What arch_prepare_kprobe() prints for a refusal, by native.rs's index.
 * Upstream's printk()s have no level: the default one, warning.
 */
void rkp_ppc_refused(unsigned int why)
{
	switch (why) {
	case 0:
		pr_warn("Attempt to register kprobe at an unaligned address\n");
		break;
	case 1:
		pr_warn("Cannot register a kprobe on instructions that can't be single stepped\n");
		break;
	case 2:
		pr_warn("Cannot register a kprobe on the second word of prefixed instruction\n");
		break;
	default:
		break;
	}
}

/* try_to_emulate(): emulate_step() refused an instruction we accepted. */
void rkp_ppc_cant_step(u32 val, u32 suffix)
{
	pr_warn("Can't step on instruction %08lx\n",
		ppc_inst_as_ulong(rkp_ppc_inst(val, suffix)));
	BUG();
}
NOKPROBE_SYMBOL(rkp_ppc_cant_step);

/* A probe hit while re-entering: the hit cannot nest deeper. */
void rkp_ppc_unrecoverable(struct kprobe *p)
{
	pr_err("Unrecoverable kprobe detected.\n");
	dump_kprobe(p);
	BUG();
}
NOKPROBE_SYMBOL(rkp_ppc_unrecoverable);

#ifdef CONFIG_OPTPROBES
static bool insn_page_in_use;

/* The one optinsn page: optinsn_slot, within 32 MiB of the kernel text. */
void *alloc_optinsn_page(void)
{
	if (insn_page_in_use)
		return NULL;
	insn_page_in_use = true;
	return &optinsn_slot;
}

void free_optinsn_page(void *page)
{
	insn_page_in_use = false;
}

/*
 * The detour template of optprobes_head.S and its labels, in words from
 * its entry: TMPL_OP_IDX, TMPL_CALL_HDLR_IDX, TMPL_INSN_IDX,
 * TMPL_EMULATE_IDX, TMPL_RET_IDX, TMPL_END_IDX.
 */
void rkp_ppc_opt_template(const u32 **entry, unsigned long idx[6])
{
	*entry = optprobe_template_entry;
	idx[0] = optprobe_template_op_address - optprobe_template_entry;
	idx[1] = optprobe_template_call_handler - optprobe_template_entry;
	idx[2] = optprobe_template_insn - optprobe_template_entry;
	idx[3] = optprobe_template_call_emulate - optprobe_template_entry;
	idx[4] = optprobe_template_ret - optprobe_template_entry;
	idx[5] = optprobe_template_end - optprobe_template_entry;
}

void rkp_ppc_warn_opt_lookup(void)
{
	WARN(1, "Unable to lookup optimized_callback()/emulate_step()\n");
}
#endif /* CONFIG_OPTPROBES */
