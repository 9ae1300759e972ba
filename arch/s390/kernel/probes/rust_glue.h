/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What rust_glue.c gives native.rs, which gets these prototypes from
 * bindgen (patch 0002 shows it this header), and the kernel interfaces
 * native.rs calls directly.
 */
#ifndef __S390_KERNEL_PROBES_RUST_GLUE_H
#define __S390_KERNEL_PROBES_RUST_GLUE_H

#include <linux/kdebug.h>
#include <linux/kprobes.h>
#include <linux/notifier.h>
#include <linux/stop_machine.h>
#include <linux/uaccess.h>
#include <asm/extable.h>
#include <asm/text-patching.h>

void rkp_s390_preempt_disable(void);
void rkp_s390_preempt_enable_no_resched(void);
bool rkp_s390_preemptible(void);
void rkp_s390_local_irq_disable(void);
void rkp_s390_local_irq_restore(unsigned long flags);
bool rkp_s390_machine_has_seq_insn(void);
void rkp_s390_per_save(struct kprobe_ctlblk *kcb);
void rkp_s390_per_restore(struct kprobe_ctlblk *kcb);
void rkp_s390_per_load(unsigned long control, unsigned long start,
		       unsigned long end);
void __noreturn rkp_s390_unrecoverable(struct kprobe *p);

#endif /* __S390_KERNEL_PROBES_RUST_GLUE_H */
