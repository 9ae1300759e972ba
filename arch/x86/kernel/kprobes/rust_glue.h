/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What rust_glue.c gives native.rs, which gets these prototypes from
 * bindgen (patch 0002 shows it this header).
 */
#ifndef __X86_KERNEL_KPROBES_RUST_GLUE_H
#define __X86_KERNEL_KPROBES_RUST_GLUE_H

#include <linux/extable.h>
#include <linux/kprobes.h>
#include <linux/perf_event.h>

struct ftrace_regs;

void *rkp_x86_execmem_alloc_page(void);
void rkp_x86_set_memory_rox(void *page);
/* The detour template (assembly in rust_glue.c), for objtool. */
void optprobe_template_func(void);
void rkp_x86_warn_optimize_disabled(bool disabled);
void rkp_x86_pr_displacement_does_not_fit(s64 newdisp);
bool rkp_x86_smap(void);
bool rkp_x86_in_entry_text(unsigned long addr);
void rkp_x86_entry_text(unsigned long *start, unsigned long *end);
bool rkp_x86_is_cfi_trap(unsigned long addr);
bool rkp_x86_kgdb_has_hit_break(unsigned long addr);
bool rkp_x86_alternatives_text_reserved(unsigned long start, unsigned long end);
bool rkp_x86_text_reserved(unsigned long start, unsigned long end);
void __noreturn rkp_x86_unrecoverable(struct kprobe *p);

#endif /* __X86_KERNEL_KPROBES_RUST_GLUE_H */
