// SPDX-License-Identifier: GPL-2.0
/*
 * The C side of the Rust arm64 kprobes arch layer (CONFIG_KPROBES_RUST_ARCH).
 *
 * native.rs, built into the kprobes crate, implements the arch hooks, the
 * BRK handlers of a probe, its single step and the kretprobe trampoline,
 * and the fault handler. What stays here is what must be C: the per-CPU
 * kprobe state (data the rest of the kernel names), and one-line wrappers
 * of macros, static inlines and linker symbols that bindgen cannot call.
 * Every function here that a probe hit reaches is NOKPROBE_SYMBOL.
 */

#define pr_fmt(fmt) "kprobes: " fmt

#include <linux/execmem.h>
#include <linux/kprobes.h>
#include <linux/set_memory.h>
#include <linux/uaccess.h>
#include <asm/sections.h>
#include <asm/virt.h>

#include "rust_glue.h"

DEFINE_PER_CPU(struct kprobe *, current_kprobe);
DEFINE_PER_CPU(struct kprobe_ctlblk, kprobe_ctlblk);

/* alloc_insn_page(): an execmem page for kprobes, read-only and executable. */
void *rkp_arm64_alloc_insn_page(void)
{
	void *addr = execmem_alloc(EXECMEM_KPROBES, PAGE_SIZE);

	if (!addr)
		return NULL;
	if (set_memory_rox((unsigned long)addr, 1)) {
		execmem_free(addr);
		return NULL;
	}
	return addr;
}

/*
 * The text areas arch_populate_kprobe_blacklist() adds, as [start, end)
 * pairs in @areas (room for @max pairs): the entry, irqentry and hyp text,
 * and the hyp idmap text unless the kernel runs in hyp mode. Returns how many
 * pairs were filled.
 */
int rkp_arm64_text_areas(unsigned long *areas, int max)
{
	int n = 0;

#define RKP_AREA(s, e)						\
	do {							\
		if (n < max) {					\
			areas[2 * n] = (unsigned long)(s);	\
			areas[2 * n + 1] = (unsigned long)(e);	\
			n++;					\
		}						\
	} while (0)

	RKP_AREA(__entry_text_start, __entry_text_end);
	RKP_AREA(__irqentry_text_start, __irqentry_text_end);
	RKP_AREA(__hyp_text_start, __hyp_text_end);
	if (!is_kernel_in_hyp_mode())
		RKP_AREA(__hyp_idmap_text_start, __hyp_idmap_text_end);
#undef RKP_AREA
	return n;
}

/*
 * The literal of a simulated ldr/ldrsw: 8 bytes at @addr if @wide, else 4
 * (simulate_ldr_literal() reads it with READ_ONCE). False if it cannot be
 * read.
 */
bool rkp_arm64_read_literal(unsigned long addr, bool wide, u64 *val)
{
	u32 w;

	if (wide)
		return !get_kernel_nofault(*val, (u64 *)addr);
	if (get_kernel_nofault(w, (u32 *)addr))
		return false;
	*val = w;
	return true;
}
NOKPROBE_SYMBOL(rkp_arm64_read_literal);

/*
 * The literal at @literal of the ldr/ldrsw at @insn, simulated for a probe,
 * could not be read: C's READ_ONCE would have oopsed in the BRK handler.
 * Say why, then BUG().
 */
void rkp_arm64_literal_fault(unsigned long insn, unsigned long literal)
{
	pr_err("cannot read the literal at %pS of the load at %pS, simulated for a kprobe\n",
	       (void *)literal, (void *)insn);
	BUG();
}
NOKPROBE_SYMBOL(rkp_arm64_literal_fault);

/* A probe hit while re-entering: reenter_kprobe()'s KPROBE_REENTER case. */
void rkp_arm64_unrecoverable(struct kprobe *p)
{
	pr_warn("Failed to recover from reentered kprobes.\n");
	dump_kprobe(p);
	BUG();
}
NOKPROBE_SYMBOL(rkp_arm64_unrecoverable);

/*
 * kprobe_brk_handler(): a BRK with the kprobes immediate where no probe is.
 * Returns true (WARN_ON_ONCE's value).
 */
bool rkp_arm64_warn_no_probe(void)
{
	return WARN_ON_ONCE(1);
}
NOKPROBE_SYMBOL(rkp_arm64_warn_no_probe);
