/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What rust_glue.c gives native.rs, which gets these prototypes from
 * bindgen (patch 0002 shows it this header), and the kernel interfaces
 * native.rs calls directly.
 */
#ifndef __POWERPC_KERNEL_PROBES_RUST_GLUE_H
#define __POWERPC_KERNEL_PROBES_RUST_GLUE_H

#include <linux/kprobes.h>
#include <asm/cacheflush.h>

void rkp_ppc_preempt_disable(void);
void rkp_ppc_preempt_enable(void);
void rkp_ppc_set_return_ip(struct pt_regs *regs, unsigned long ip);
void rkp_ppc_set_return_msr(struct pt_regs *regs, unsigned long msr);
void rkp_ppc_head_text(unsigned long *start, unsigned long *end);
unsigned long rkp_ppc_rethook_trampoline(void);
unsigned long rkp_ppc_kallsyms_lookup_name(const char *name);
int rkp_ppc_patch_insn(u32 *addr, u32 val, u32 suffix);
void rkp_ppc_patch_word_warn(u32 *addr, u32 word);
int rkp_ppc_emulate_step(struct pt_regs *regs, u32 val, u32 suffix);
bool rkp_ppc_emulated_nip(u32 val, u32 suffix, unsigned long nip,
			  unsigned long *out);
bool rkp_ppc_fixup_exception(struct pt_regs *regs);
void rkp_ppc_refused(unsigned int why);
void __noreturn rkp_ppc_cant_step(u32 val, u32 suffix);
void __noreturn rkp_ppc_unrecoverable(struct kprobe *p);
#ifdef CONFIG_OPTPROBES
void rkp_ppc_opt_template(const u32 **entry, unsigned long idx[6]);
void rkp_ppc_warn_opt_lookup(void);
#endif

#endif /* __POWERPC_KERNEL_PROBES_RUST_GLUE_H */
