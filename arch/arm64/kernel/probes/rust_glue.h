/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What rust_glue.c gives native.rs, which gets these prototypes from
 * bindgen (patch 0002 shows it this header), and the kernel interfaces
 * native.rs calls directly.
 */
#ifndef __ARM64_KERNEL_PROBES_RUST_GLUE_H
#define __ARM64_KERNEL_PROBES_RUST_GLUE_H

#include <linux/extable.h>
#include <linux/kprobes.h>
#include <asm/patching.h>

void *rkp_arm64_alloc_insn_page(void);
int rkp_arm64_text_areas(unsigned long *areas, int max);
bool rkp_arm64_read_literal(unsigned long addr, bool wide, u64 *val);
void __noreturn rkp_arm64_literal_fault(unsigned long insn, unsigned long literal);
void __noreturn rkp_arm64_unrecoverable(struct kprobe *p);
bool rkp_arm64_warn_no_probe(void);

#endif /* __ARM64_KERNEL_PROBES_RUST_GLUE_H */
