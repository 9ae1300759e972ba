/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The kernel environment of upstream's arm64 kprobes decisions, for a host
 * build (included first, with -include). The headers of csrc/include are
 * empty: this file stands for them. Everything the decisions read from the
 * kernel (kallsyms, the exception tables, the literal pool) is answered by the
 * Rust harness (src/ffi.rs) through the rk_env_*() callbacks.
 */
#ifndef RK_KERNEL_H
#define RK_KERNEL_H

#include "rk_types.h" /* difftest-common/csrc */

#define CONFIG_KPROBES 1
#define __always_inline inline __attribute__((__always_inline__))
#define __kprobes
#define BUILD_BUG_ON(cond) ((void)sizeof(char[1 - 2 * !!(cond)]))
#define BIT(nr) (1UL << (nr))
#define EINVAL 22
#define ENOMEM 12

/* The host is little-endian, as the arm64 kernels we compare with. */
#define le32_to_cpu(x) ((u32)(x))

/* asm/ptrace.h: the fields of struct pt_regs the decisions use. */
struct pt_regs {
	u64 regs[31];
	u64 sp;
	u64 pc;
	u64 pstate;
};

/* Kernel addresses: the probed text is a host buffer, see arm64_c_shim.c. */
unsigned long rk_kaddr(const void *host);

/* Answered by the Rust harness, on kernel addresses. */
int rk_env_lookup(unsigned long addr, unsigned long *size, unsigned long *offset);
int rk_env_extable(unsigned long addr);
u64 rk_env_mem_read(unsigned long addr, int size, int *fault);

static inline int kallsyms_lookup_size_offset(unsigned long addr,
					      unsigned long *symbolsize,
					      unsigned long *offset)
{
	return rk_env_lookup(rk_kaddr((const void *)addr), symbolsize, offset);
}

static inline const void *search_exception_tables(unsigned long addr)
{
	return rk_env_extable(rk_kaddr((const void *)addr)) ? (const void *)1 : NULL;
}

/*
 * The literal loads: READ_ONCE(*(u64 *)load_addr) reads the harness's memory
 * model at load_addr; a faulting read is recorded and reads 0.
 */
u64 rk_mem_read(unsigned long addr, int size);
#define READ_ONCE(x) ((__typeof__(x))rk_mem_read((unsigned long)&(x), sizeof(x)))

/* The instruction slot of arch_prepare_kprobe(). */
void *get_insn_slot(void);
int aarch64_insn_patch_text_nosync(void *addr, u32 insn);

#endif
