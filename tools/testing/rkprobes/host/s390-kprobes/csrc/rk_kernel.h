/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The kernel environment of upstream's s390 kprobes decisions, for a host
 * build (included first, with -include): s390x. Nothing here is cut out of
 * the tree: these are the types, constants and services the cut-out code
 * expects, declared for the shim (which defines the services).
 *
 * The probed text is mapped by the shim at its kernel address, in halfwords
 * of host byte order, so upstream's kprobe_opcode_t accesses read what s390
 * reads; RK_S32_GET()/RK_S32_SET() stand for the big-endian 32-bit accesses
 * of copy_instruction() (build.rs puts them in its place).
 */
#ifndef RK_KERNEL_H
#define RK_KERNEL_H

#include "rk_types.h" /* difftest-common/csrc */
#include <string.h>

#define CONFIG_KPROBES 1
#define NOKPROBE_SYMBOL(fname)
#define __packed __attribute__((__packed__))
#define ARRAY_SIZE(arr) (sizeof(arr) / sizeof((arr)[0]))
#define EINVAL 22
#define ENOMEM 12
#define EFAULT 14

typedef u16 kprobe_opcode_t;

#define RK_S32_GET(p) ((s32)(((u32)(p)[0] << 16) | (p)[1]))
#define RK_S32_SET(p, v)                          \
	do {                                      \
		u32 __v = (u32)(v);               \
		(p)[0] = __v >> 16;               \
		(p)[1] = (u16)__v;                \
	} while (0)

/* asm/ptrace.h of s390x, as far as the code touches it. */
typedef struct {
	unsigned long mask;
	unsigned long addr;
} psw_t;

struct pt_regs {
	unsigned long args[1];
	psw_t psw;
	unsigned long gprs[16];
};

#define PSW_MASK_PER 0x4000000000000000UL
#define PSW_MASK_IO 0x0200000000000000UL
#define PSW_MASK_EXT 0x0100000000000000UL

struct ctlreg {
	unsigned long val;
};

struct kprobe;

struct prev_kprobe {
	struct kprobe *kp;
	unsigned long status;
};

struct kprobe_ctlblk {
	unsigned long kprobe_status;
	unsigned long kprobe_saved_imask;
	struct ctlreg kprobe_saved_ctl[3];
	struct prev_kprobe prev_kprobe;
};

/* The kernel services the cut-out code calls; the shim defines them. */
int kallsyms_lookup_size_offset(unsigned long addr, unsigned long *symbolsize,
				unsigned long *offset);
long copy_from_kernel_nofault(void *dst, const void *src, size_t size);
void *s390_kernel_write(void *dst, const void *src, size_t size);
struct kprobe_ctlblk *get_kprobe_ctlblk(void);
void __local_ctl_load(int low, int high, struct ctlreg *array);

#endif
