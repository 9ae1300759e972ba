/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The kernel environment of upstream's loongarch kprobes decisions and
 * simulators, for a host build (included first, with -include). The headers of
 * csrc/include are empty: this file stands for them. What upstream logs
 * (pr_notice(), pr_warn(), pr_info()) is recorded for the harness by
 * rk_note(), which keeps the format string.
 */
#ifndef RK_KERNEL_H
#define RK_KERNEL_H

#include "rk_types.h" /* difftest-common/csrc */

#define CONFIG_KPROBES 1
#define __always_inline inline __attribute__((__always_inline__))
#define __aligned(x) __attribute__((__aligned__(x)))
#define __user
#define EINVAL 22
#define ENOMEM 12
#define EILSEQ 84

/* The logging the decisions and simulators do, recorded for the harness. */
void rk_note(const char *fmt);
#define pr_notice(fmt, ...) rk_note(fmt)
#define pr_warn(fmt, ...) rk_note(fmt)
#define pr_info(fmt, ...) rk_note(fmt)

/* asm/ptrace.h: struct pt_regs, field for field (without __last[]). */
struct pt_regs {
	unsigned long regs[32];
	unsigned long orig_a0;
	unsigned long csr_era;
	unsigned long csr_badvaddr;
	unsigned long csr_crmd;
	unsigned long csr_prmd;
	unsigned long csr_euen;
	unsigned long csr_ecfg;
	unsigned long csr_estat;
} __aligned(8);

/* asm/cacheflush.h, used by asm/kprobes.h's flush_insn_slot() (never called). */
void flush_icache_range(unsigned long start, unsigned long end);

/* The instruction slot of arch_prepare_kprobe(). */
void *get_insn_slot(void);

#endif
