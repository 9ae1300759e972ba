/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Shared by the sites (rkprobes_x86sites.S) and the cases
 * (rkprobes_x86suite.c) of the x86 behaviour suite: the register block a
 * site reads its inputs from and writes its results to, and the sites.
 */
#ifndef _XS_H
#define _XS_H

/* Offsets in struct xs_regs, for the assembler. */
#define XS_AX		0
#define XS_CX		8
#define XS_DX		16
#define XS_SI		24
#define XS_DI		32
#define XS_R8		40
#define XS_R9		48
#define XS_R10		56
#define XS_R11		64
#define XS_FLAGS	72

#ifndef __ASSEMBLY__

#include <linux/types.h>

/*
 * The caller-saved registers a site loads before its probed instruction
 * and stores after it; flags is loaded with popf and stored with pushf.
 */
struct xs_regs {
	unsigned long ax, cx, dx, si, di, r8, r9, r10, r11, flags;
};

/* Read and written by the RIP-relative sites. */
extern unsigned long xs_rip_data;

/* A site's function, which takes its register block, and its probed instruction. */
struct xs_code {
	void (*fn)(struct xs_regs *r);
	const u8 *probe;
};

/*
 * The sites, in the order of enum xs_index; the last one, xs_site_endbr,
 * has its probe registered by symbol at offset 0 (probe NULL): past the
 * ENDBR with IBT.
 */
extern const struct xs_code xs_site_table[];

/* The order of xs_site_table in rkprobes_x86sites.S. */
enum xs_index {
	XS_IDX_jz8,
	XS_IDX_jnz8,
	XS_IDX_jc8,
	XS_IDX_jbe8,
	XS_IDX_jl8,
	XS_IDX_jg8,
	XS_IDX_jo8,
	XS_IDX_js8,
	XS_IDX_jp8,
	XS_IDX_jnz32,
	XS_IDX_jle32,
	XS_IDX_ja32,
	XS_IDX_jmp8,
	XS_IDX_jmp8_back,
	XS_IDX_jmp32,
	XS_IDX_call32,
	XS_IDX_call32_next,
	XS_IDX_ret,
	XS_IDX_jmp_rax,
	XS_IDX_jmp_r11,
	XS_IDX_call_r10,
	XS_IDX_loop,
	XS_IDX_loope,
	XS_IDX_loopne,
	XS_IDX_jrcxz,
	XS_IDX_loop_addr32,
	XS_IDX_loopne_addr32,
	XS_IDX_jecxz,
	XS_IDX_cli,
	XS_IDX_sti,
	XS_IDX_pushf,
	XS_IDX_popf_if_on,
	XS_IDX_popf_if_off,
	XS_IDX_alu,
	XS_IDX_rip_load,
	XS_IDX_rip_store,
	XS_IDX_rip_add,
	XS_IDX_int3,
	XS_IDX_ud2,
	XS_IDX_endbr,
};

#endif /* __ASSEMBLY__ */
#endif /* _XS_H */
