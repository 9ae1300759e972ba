// SPDX-License-Identifier: GPL-2.0
/*
 * The C side of the Rust loongarch kprobes arch layer
 * (CONFIG_KPROBES_RUST_ARCH).
 *
 * native.rs, built into the kprobes crate, implements the arch hooks, the
 * breakpoint and single-step handlers that do_bp() calls, the fault handler
 * and the kprobes-on-ftrace handler. What stays here is what must be C: the
 * per-CPU kprobe state (data the rest of the kernel names), the preemption
 * count a probe hit holds across its step, upstream's messages, and one-line
 * wrappers of macros and linker symbols that bindgen cannot call. Every
 * function here that a probe hit reaches is NOKPROBE_SYMBOL.
 */

#include <linux/build_bug.h>
#include <linux/kprobes.h>
#include <linux/preempt.h>
#include <asm/loongarch.h>
#include <asm/sections.h>

#include "rust_glue.h"

DEFINE_PER_CPU(struct kprobe *, current_kprobe);
DEFINE_PER_CPU(struct kprobe_ctlblk, kprobe_ctlblk);

/* native.rs clears CSR_PRMD_PIE by value: bindgen cannot evaluate _ULCAST_(). */
static_assert(CSR_PRMD_PIE == 0x4);

/*
 * do_bp() runs the handlers with interrupts on where the break came from
 * code that had them on: a probe hit keeps preemption off from its break
 * to the end of its step, as upstream's handlers do.
 */
void rkp_loongarch_preempt_disable(void)
{
	preempt_disable();
}
NOKPROBE_SYMBOL(rkp_loongarch_preempt_disable);

void rkp_loongarch_preempt_enable_no_resched(void)
{
	preempt_enable_no_resched();
}
NOKPROBE_SYMBOL(rkp_loongarch_preempt_enable_no_resched);

/*
 * insns_not_supported()'s notices, by the index native.rs gives the
 * refusal (the order of its Unsupported enum).
 */
void rkp_loongarch_not_supported(unsigned int why)
{
	static const char *const what[] = {
		"atomic memory access instructions are not supported\n",
		"sc.q instruction is not supported\n",
		"ll and sc instructions are not supported\n",
		"llacq and screl instructions are not supported\n",
		"bceqz and bcnez instructions are not supported\n",
	};

	if (!WARN_ON_ONCE(why >= ARRAY_SIZE(what)))
		pr_notice("%s", what[why]);
}

/* What simu_pc() and simu_branch() print when they leave the frame alone. */
void rkp_loongarch_simu_error(bool pc_ins, bool invalid_pc, unsigned long pc)
{
	const char *fn = pc_ins ? "simu_pc" : "simu_branch";

	if (invalid_pc)
		pr_warn("%s: invalid pc 0x%lx\n", fn, pc);
	else
		pr_info("%s: unknown opcode\n", fn);
}
NOKPROBE_SYMBOL(rkp_loongarch_simu_error);

/* A probe hit while re-entering or stepping: reenter_kprobe()'s BUG. */
void rkp_loongarch_unrecoverable(struct kprobe *p)
{
	pr_warn("Failed to recover from reentered kprobes.\n");
	dump_kprobe(p);
	BUG();
}
NOKPROBE_SYMBOL(rkp_loongarch_unrecoverable);
