/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What rust_glue.c gives native.rs, which gets these prototypes from
 * bindgen (patch 0002 shows it this header), and the kernel interfaces
 * native.rs calls directly.
 */
#ifndef __RISCV_KERNEL_PROBES_RUST_GLUE_H
#define __RISCV_KERNEL_PROBES_RUST_GLUE_H

#include <linux/kprobes.h>
#include <asm/extable.h>
#include <asm/patch.h>

void __noreturn rkp_riscv_unrecoverable(struct kprobe *p);

#endif /* __RISCV_KERNEL_PROBES_RUST_GLUE_H */
