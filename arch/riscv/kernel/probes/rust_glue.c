// SPDX-License-Identifier: GPL-2.0
/*
 * The C side of the Rust riscv kprobes arch layer (CONFIG_KPROBES_RUST_ARCH).
 *
 * native.rs, built into the kprobes crate, implements the arch hooks, the
 * breakpoint and single-step handlers that handle_break() calls, the fault
 * handler and the simulators. What stays here is what must be C: the per-CPU
 * kprobe state (data the rest of the kernel names), and one-line wrappers of
 * macros and linker symbols that bindgen cannot call. Every function here
 * that a probe hit reaches is NOKPROBE_SYMBOL.
 */

#define pr_fmt(fmt) "kprobes: " fmt

#include <linux/build_bug.h>
#include <linux/kprobes.h>
#include <asm/csr.h>
#include <asm/sections.h>

#include "rust_glue.h"

DEFINE_PER_CPU(struct kprobe *, current_kprobe);
DEFINE_PER_CPU(struct kprobe_ctlblk, kprobe_ctlblk);

/* native.rs clears SR_SPIE by value: bindgen cannot evaluate _AC(). */
static_assert(SR_SPIE == 0x20);

/* This CPU's kprobe state, for the probe-hit path in Rust. */
void rkp_riscv_this_cpu(struct kprobe_ctlblk **kcb, struct kprobe ***cur)
{
	*kcb = this_cpu_ptr(&kprobe_ctlblk);
	*cur = this_cpu_ptr(&current_kprobe);
}
NOKPROBE_SYMBOL(rkp_riscv_this_cpu);

/* The area arch_populate_kprobe_blacklist() adds: the irqentry text. */
void rkp_riscv_irqentry_text(unsigned long *start, unsigned long *end)
{
	*start = (unsigned long)__irqentry_text_start;
	*end = (unsigned long)__irqentry_text_end;
}

/* A probe hit while re-entering or stepping: reenter_kprobe()'s BUG. */
void rkp_riscv_unrecoverable(struct kprobe *p)
{
	pr_warn("Failed to recover from reentered kprobes.\n");
	dump_kprobe(p);
	BUG();
}
NOKPROBE_SYMBOL(rkp_riscv_unrecoverable);

/* reenter_kprobe()'s default case: a status the state machine never sets. */
void rkp_riscv_warn_bad_status(void)
{
	WARN_ON(1);
}
NOKPROBE_SYMBOL(rkp_riscv_warn_bad_status);

/* kprobe_fault_handler(): a fault in the step slot while not stepping. */
void rkp_riscv_warn_fault_status(void)
{
	WARN_ON(1);
}
NOKPROBE_SYMBOL(rkp_riscv_warn_fault_status);
