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

/* A probe hit while re-entering or stepping: reenter_kprobe()'s BUG. */
void rkp_riscv_unrecoverable(struct kprobe *p)
{
	pr_warn("Failed to recover from reentered kprobes.\n");
	dump_kprobe(p);
	BUG();
}
NOKPROBE_SYMBOL(rkp_riscv_unrecoverable);
