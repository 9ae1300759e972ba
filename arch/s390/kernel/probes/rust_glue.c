// SPDX-License-Identifier: GPL-2.0
/*
 * The C side of the Rust s390 kprobes arch layer (CONFIG_KPROBES_RUST_ARCH).
 *
 * native.rs, built into the kprobes crate, implements the arch hooks, the
 * die notifier that takes the breakpoint (DIE_BPT), the end of the PER
 * single step (DIE_SSTEP) and program checks (DIE_TRAP), the fault handler
 * and the kprobes-on-ftrace handler. What stays here is what must be C: the
 * per-CPU kprobe state (data the rest of the kernel names), the kprobe slot
 * page (execmem), the preemption count a probe hit holds across its step,
 * the interrupt mask and PER control registers (inline assembly), upstream's
 * messages, and one-line wrappers of macros and linker symbols that bindgen
 * cannot call. Every function here that a probe hit reaches is
 * NOKPROBE_SYMBOL.
 */

#define pr_fmt(fmt) "kprobes: " fmt

#include <linux/build_bug.h>
#include <linux/execmem.h>
#include <linux/kprobes.h>
#include <linux/preempt.h>
#include <asm/ctlreg.h>
#include <asm/ptrace.h>
#include <asm/sections.h>
#include <asm/set_memory.h>
#include <asm/setup.h>

#include "rust_glue.h"

DEFINE_PER_CPU(struct kprobe *, current_kprobe);
DEFINE_PER_CPU(struct kprobe_ctlblk, kprobe_ctlblk);

/* native.rs uses these by value: bindgen cannot evaluate _AC()/UL suffixes. */
static_assert(PER_EVENT_IFETCH == 0x40000000UL);
static_assert(PSW_MASK_PER == 0x4000000000000000UL);
static_assert(PSW_MASK_IO == 0x0200000000000000UL);
static_assert(PSW_MASK_EXT == 0x0100000000000000UL);
static_assert(NOTIFY_DONE == 0 && NOTIFY_STOP == 0x8001);

/*
 * The slots' page: within the 2 GiB of the kernel image (EXECMEM_KPROBES),
 * so a relative-long instruction re-aimed from its slot still reaches its
 * target; read-only and executable, written with s390_kernel_write().
 */
void *alloc_insn_page(void)
{
	void *page;

	page = execmem_alloc(EXECMEM_KPROBES, PAGE_SIZE);
	if (!page)
		return NULL;
	set_memory_rox((unsigned long)page, 1);
	return page;
}

/*
 * A probe hit keeps preemption off from its breakpoint to the end of its
 * PER step, as upstream's kprobe_handler() and post_kprobe_handler() do.
 */
void rkp_s390_preempt_disable(void)
{
	preempt_disable();
}
NOKPROBE_SYMBOL(rkp_s390_preempt_disable);

void rkp_s390_preempt_enable_no_resched(void)
{
	preempt_enable_no_resched();
}
NOKPROBE_SYMBOL(rkp_s390_preempt_enable_no_resched);

/* preemptible(), which DIE_TRAP asks before it looks at kprobes. */
bool rkp_s390_preemptible(void)
{
	return preemptible();
}
NOKPROBE_SYMBOL(rkp_s390_preemptible);

/*
 * The die notifier and the fault handler run their kprobes part with
 * interrupts off when the interrupted PSW had them on, then restore them.
 */
void rkp_s390_local_irq_disable(void)
{
	local_irq_disable();
}
NOKPROBE_SYMBOL(rkp_s390_local_irq_disable);

void rkp_s390_local_irq_restore(unsigned long flags)
{
	local_irq_restore(flags);
}
NOKPROBE_SYMBOL(rkp_s390_local_irq_restore);

/* Whether one halfword write is seen whole by the other CPUs. */
bool rkp_s390_machine_has_seq_insn(void)
{
	return MACHINE_HAS_SEQ_INSN;
}
NOKPROBE_SYMBOL(rkp_s390_machine_has_seq_insn);

/* enable_singlestep(): the PER control registers %cr9-%cr11 are saved... */
void rkp_s390_per_save(struct kprobe_ctlblk *kcb)
{
	__local_ctl_store(9, 11, kcb->kprobe_saved_ctl);
}
NOKPROBE_SYMBOL(rkp_s390_per_save);

/* ...disable_singlestep(): ...and restored. */
void rkp_s390_per_restore(struct kprobe_ctlblk *kcb)
{
	__local_ctl_load(9, 11, kcb->kprobe_saved_ctl);
}
NOKPROBE_SYMBOL(rkp_s390_per_restore);

/* Loads %cr9-%cr11: the PER events and the address range they cover. */
void rkp_s390_per_load(unsigned long control, unsigned long start,
		       unsigned long end)
{
	struct ctlreg per[3] = { { control }, { start }, { end } };

	__local_ctl_load(9, 11, per);
}
NOKPROBE_SYMBOL(rkp_s390_per_load);

/* A probe hit while stepping or re-entering: kprobe_reenter_check()'s BUG. */
void rkp_s390_unrecoverable(struct kprobe *p)
{
	pr_err("Failed to recover from reentered kprobes.\n");
	dump_kprobe(p);
	BUG();
}
NOKPROBE_SYMBOL(rkp_s390_unrecoverable);
