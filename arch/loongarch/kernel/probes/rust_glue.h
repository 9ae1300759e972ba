/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What rust_glue.c gives native.rs, which gets these prototypes from
 * bindgen (patch 0002 shows it this header), and the kernel interfaces
 * native.rs calls directly.
 */
#ifndef __LOONGARCH_KERNEL_PROBES_RUST_GLUE_H
#define __LOONGARCH_KERNEL_PROBES_RUST_GLUE_H

#include <linux/kprobes.h>
#include <asm/cacheflush.h>

void rkp_loongarch_preempt_disable(void);
void rkp_loongarch_preempt_enable_no_resched(void);
void rkp_loongarch_not_supported(unsigned int why);
void rkp_loongarch_simu_error(bool pc_ins, bool invalid_pc, unsigned long pc);
void __noreturn rkp_loongarch_unrecoverable(struct kprobe *p);

#endif /* __LOONGARCH_KERNEL_PROBES_RUST_GLUE_H */
