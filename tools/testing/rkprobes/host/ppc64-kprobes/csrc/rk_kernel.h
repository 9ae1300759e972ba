/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The kernel environment of upstream's ppc64 kprobes decisions, for a host
 * build (included first, with -include): a 64-bit little-endian Book3S ELFv2
 * kernel with kprobes on ftrace, as the pseries machine the project boots.
 * Nothing here is cut out of the tree: these are the types, constants and
 * services the cut-out code expects, declared for the shim (which defines the
 * services). What upstream logs (printk(), WARN()) is recorded for the
 * harness.
 */
#ifndef RK_KERNEL_H
#define RK_KERNEL_H

#include "rk_types.h" /* difftest-common/csrc */
#include <string.h>

#define CONFIG_PPC64 1
#define CONFIG_PPC32 0
#define CONFIG_CPU_LITTLE_ENDIAN 1
#define CONFIG_PPC64_ELF_ABI_V2 1
#define CONFIG_PPC_BOOK3S_64 1
#define CONFIG_KPROBES 1
#define CONFIG_KPROBES_ON_FTRACE 1
#define CONFIG_BOOKE 0
#define IS_ENABLED(option) (option)

#define __packed __attribute__((__packed__))
#define unlikely(x) __builtin_expect(!!(x), 0)
#define nokprobe_inline inline __attribute__((__always_inline__))
#define NOKPROBE_SYMBOL(fname)
#define EINVAL 22
#define ENOMEM 12
#define EILSEQ 84
#define ERANGE 34

/* asm/reg.h of ppc64: an instruction and, when prefixed, its suffix. */
typedef struct {
	u32 val;
	u32 suffix;
} __packed ppc_inst_t;

typedef u32 kprobe_opcode_t;

/* Book3S-64 (asm/page.h): kernel addresses start at PAGE_OFFSET. */
#define is_kernel_addr(x) ((x) >= 0xc000000000000000UL)

/* PAGE_SIZE is the harness's, so both 4K and 64K pages are tried. */
extern _Thread_local unsigned long rk_page_size;
#define PAGE_MASK (~(rk_page_size - 1))

/* What can_optimize() puts in the frame it hands analyse_instr(). */
#define MSR_KERNEL 0x9000000000001033UL

/* asm/reg.h's MSR bits the handlers test; MSR_SINGLESTEP is MSR_SE on Book3S. */
#define MSR_PR (1UL << 14)
#define MSR_SE (1UL << 10)
#define MSR_IR (1UL << 5)
#define MSR_DR (1UL << 4)
#define MSR_SINGLESTEP (MSR_SE)

/* The frame and the analysis of asm/sstep.h, as far as the code touches them. */
struct pt_regs {
	unsigned long gpr[32];
	unsigned long nip;
	unsigned long msr;
	unsigned long orig_gpr3;
	unsigned long ctr;
	unsigned long link;
	unsigned long xer;
	unsigned long ccr;
	unsigned long softe;
	unsigned long trap;
	unsigned long dar;
	unsigned long dsisr;
	unsigned long result;
};

struct instruction_op {
	int type;
};

/* Logging, recorded for the harness. */
void rk_note(const char *fmt);
void rk_bug(void);
void rk_warn(const char *fmt);
#define printk(fmt, ...) rk_note(fmt)
#define BUG() rk_bug()
#define WARN(cond, fmt, ...)                    \
	({                                      \
		int __c = !!(cond);             \
		if (__c)                        \
			rk_warn(fmt);           \
		__c;                            \
	})
#define pr_devel(fmt, ...) do { } while (0)

/* What the register setters note (Book3S-64 interrupt return); nothing here. */
static inline void set_return_regs_changed(void)
{
}

/* The kernel services the cut-out code calls; the shim defines them. */
int patch_instruction(u32 *addr, ppc_inst_t instr);
void flush_icache_range(unsigned long start, unsigned long end);
int emulate_step(struct pt_regs *regs, ppc_inst_t instr);
int analyse_instr(struct instruction_op *op, const struct pt_regs *regs,
		  ppc_inst_t instr);
void emulate_update_regs(struct pt_regs *reg, struct instruction_op *op);
unsigned long ppc_kallsyms_lookup_name(const char *name);

#endif
