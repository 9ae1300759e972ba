/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The kernel environment of upstream's riscv kprobes decisions, for a host
 * build (included first, with -include). The headers of csrc/include are
 * empty: this file stands for them. What the decisions read from the kernel
 * (kallsyms) is answered by the Rust harness (src/ffi.rs) through
 * rk_env_lookup().
 */
#ifndef RK_KERNEL_H
#define RK_KERNEL_H

#include "rk_types.h" /* difftest-common/csrc */

/* An RV64 kernel, with the C extension unless RK_NO_ISA_C (riscv_c_noc.c). */
#define __riscv_xlen 64
#define CONFIG_64BIT 1
#define CONFIG_KPROBES 1
#ifndef RK_NO_ISA_C
#define CONFIG_RISCV_ISA_C 1
#endif

#define __always_inline inline __attribute__((__always_inline__))
#define __kprobes
#define BUILD_BUG_ON(cond) ((void)sizeof(char[1 - 2 * !!(cond)]))
#define _AC(x, y) (x##y)
#define _UL(x) (_AC(x, UL))
#define BIT(nr) (1UL << (nr))
#define GENMASK(h, l) ((~0UL << (l)) & (~0UL >> (63 - (h))))
#define EINVAL 22
#define ENOMEM 12
#define EILSEQ 84

/*
 * asm/ptrace.h's struct pt_regs, by layout: epc, then x1 (ra) to x31 (t6),
 * then the CSRs (the simulators index it as an array of unsigned long).
 */
struct pt_regs {
	unsigned long epc;
	unsigned long x[31];
	unsigned long status;
	unsigned long badaddr;
	unsigned long cause;
	unsigned long orig_a0;
};

/* Kernel addresses: the probed text is a host buffer, see riscv_c_shim.c. */
unsigned long rk_kaddr(const void *host);

/* Answered by the Rust harness, on kernel addresses. */
int rk_env_lookup(unsigned long addr, unsigned long *size, unsigned long *offset);

static inline int kallsyms_lookup_size_offset(unsigned long addr,
					      unsigned long *symbolsize,
					      unsigned long *offset)
{
	unsigned long size = 0, off = 0;
	int found = rk_env_lookup(rk_kaddr((const void *)addr), &size, &off);

	if (found && symbolsize)
		*symbolsize = size;
	if (found && offset)
		*offset = off;
	return found;
}

/* The instruction slot of arch_prepare_kprobe(). */
void *get_insn_slot(void);
int patch_text_nosync(void *addr, const void *insns, size_t len);

#endif
