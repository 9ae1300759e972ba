// SPDX-License-Identifier: GPL-2.0
/*
 * The C side of the Rust x86 kprobes arch layer (CONFIG_KPROBES_RUST_ARCH).
 *
 * native.rs, built into the kprobes crate, implements the arch hooks and the
 * int3, fault, optprobe and ftrace entry points. What stays here is what
 * must be C or assembly: the per-CPU kprobe state and the kretprobe
 * blacklist (data the rest of the kernel names), the optprobe detour
 * template (copied into every detour, so its layout is the pt_regs layout),
 * and one-line wrappers for static inlines and macros that bindgen cannot
 * call. Every function here that a probe hit reaches is NOKPROBE_SYMBOL.
 */

#include <linux/bug.h>
#include <linux/execmem.h>
#include <linux/extable.h>
#include <linux/ftrace.h>
#include <linux/jump_label.h>
#include <linux/kgdb.h>
#include <linux/kprobes.h>
#include <linux/perf_event.h>
#include <linux/static_call.h>
#include <linux/trace_recursion.h>
#include <asm/cfi.h>
#include <asm/cpufeature.h>
#include <asm/sections.h>
#include <asm/set_memory.h>
#include <asm/text-patching.h>

#include "common.h"
#include "rust_glue.h"

DEFINE_PER_CPU(struct kprobe *, current_kprobe);
DEFINE_PER_CPU(struct kprobe_ctlblk, kprobe_ctlblk);

/* Functions a kretprobe must not be put on: __switch_to changes stacks. */
struct kretprobe_blackpoint kretprobe_blacklist[] = {
	{ .name = "__switch_to" },
	{ .name = NULL }
};
const int kretprobe_blacklist_size = ARRAY_SIZE(kretprobe_blacklist);

#ifdef CONFIG_OPTPROBES
/*
 * The detour template. The jump of an optimized probe lands in a copy of
 * it, which builds a struct pt_regs on the stack as an int3 trap would
 * (ss, sp, flags, then the registers; cs, ip and orig_ax are filled in by
 * the callback), calls optimized_callback(op, regs), restores every
 * register and the flags, and falls through into the copied instructions.
 * arch_prepare_optimized_kprobe() patches three holes in the copy: a NOP3
 * that becomes clac with SMAP, a 10-byte hole for "movabs $op, %rdi" and
 * a 5-byte hole for the call.
 */
asm (
	".pushsection .rodata\n"
	"optprobe_template_func:\n"
	".global optprobe_template_entry\n"
	"optprobe_template_entry:\n"
	"	pushq $" __stringify(__KERNEL_DS) "\n"
	/* regs->sp: the value before these pushes is fixed up by the callback. */
	"	pushq %rsp\n"
	"	pushfq\n"
	".global optprobe_template_clac\n"
	"optprobe_template_clac:\n"
	ASM_NOP3
	SAVE_REGS_STRING
	"	movq %rsp, %rsi\n"
	".global optprobe_template_val\n"
	"optprobe_template_val:\n"
	ASM_NOP5
	ASM_NOP5
	".global optprobe_template_call\n"
	"optprobe_template_call:\n"
	ASM_NOP5
	/* The saved flags go to regs->ss, to be popped last. */
	"	movq 18*8(%rsp), %rdx\n"
	"	movq %rdx, 20*8(%rsp)\n"
	RESTORE_REGS_STRING
	/* Drop regs->flags and regs->sp, pop the flags from regs->ss. */
	"	addq $16, %rsp\n"
	"	popfq\n"
	".global optprobe_template_end\n"
	"optprobe_template_end:\n"
	".popsection\n");

STACK_FRAME_NON_STANDARD(optprobe_template_func);

void rkp_x86_warn_optimize_disabled(bool disabled)
{
	WARN_ON(disabled);
}

#endif /* CONFIG_OPTPROBES */

/* __copy_instruction()'s message: a copy that cannot reach its RIP-relative target. */
void rkp_x86_pr_displacement_does_not_fit(s64 newdisp)
{
	pr_err("Kprobes error: new displacement does not fit into s32 (%llx)\n", newdisp);
}

/* alloc_insn_page(): an execmem page for kprobes, read-only and executable. */
void *rkp_x86_execmem_alloc_page(void)
{
	return execmem_alloc(EXECMEM_KPROBES, PAGE_SIZE);
}

void rkp_x86_set_memory_rox(void *page)
{
	set_memory_rox((unsigned long)page, 1);
}

bool rkp_x86_smap(void)
{
	return boot_cpu_has(X86_FEATURE_SMAP);
}

bool rkp_x86_in_entry_text(unsigned long addr)
{
	return addr >= (unsigned long)__entry_text_start &&
	       addr < (unsigned long)__entry_text_end;
}

void rkp_x86_entry_text(unsigned long *start, unsigned long *end)
{
	*start = (unsigned long)__entry_text_start;
	*end = (unsigned long)__entry_text_end;
}

bool rkp_x86_is_cfi_trap(unsigned long addr)
{
	return is_cfi_trap(addr);
}

bool rkp_x86_kgdb_has_hit_break(unsigned long addr)
{
#ifdef CONFIG_KGDB
	return kgdb_has_hit_break(addr);
#else
	return false;
#endif
}

bool rkp_x86_alternatives_text_reserved(unsigned long start, unsigned long end)
{
	return alternatives_text_reserved((void *)start, (void *)end);
}

/* What can_optimize() asks before it lets a jump cover [start, end]. */
bool rkp_x86_text_reserved(unsigned long start, unsigned long end)
{
	return ftrace_text_reserved((void *)start, (void *)end) ||
	       alternatives_text_reserved((void *)start, (void *)end) ||
	       jump_label_text_reserved((void *)start, (void *)end) ||
	       static_call_text_reserved((void *)start, (void *)end);
}

/* A probe hit while re-entering: reenter_kprobe()'s KPROBE_REENTER case. */
void rkp_x86_unrecoverable(struct kprobe *p)
{
	pr_err("Unrecoverable kprobe detected.\n");
	dump_kprobe(p);
	BUG();
}
NOKPROBE_SYMBOL(rkp_x86_unrecoverable);
