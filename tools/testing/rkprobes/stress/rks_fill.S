/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Filler functions of rkprobes_stress: 128 functions, each NOPs and a
 * return, and the table of their addresses. The stress module probes their
 * entries in batches (register_kprobes of all 128) while its hitters call
 * every one of them through the table. On x86 their entry is a NOP of eight
 * bytes, so a probe there can be boosted and optimized; elsewhere four NOPs
 * (after arm64's BTI landing pad, which SYM_FUNC_START_LOCAL puts there).
 */
#include <linux/linkage.h>

#if defined(CONFIG_X86)
#define RKS_FILL_BODY					\
	.byte 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00;	\
	.byte 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00;	\
	RET
#elif defined(CONFIG_ARM64) || defined(CONFIG_RISCV)
#define RKS_FILL_BODY	nop; nop; nop; nop; ret
#elif defined(CONFIG_LOONGARCH)
#define RKS_FILL_BODY	nop; nop; nop; nop; jr $ra
#elif defined(CONFIG_PPC64)
#define RKS_FILL_BODY	nop; nop; nop; nop; blr
#elif defined(CONFIG_S390)
#define RKS_FILL_BODY	nopr; nopr; nopr; nopr; br %r14
#else
#error "rks_fill.S: no filler body for this arch"
#endif

	.text
.irp h, 0, 1, 2, 3, 4, 5, 6, 7
.irp l, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, a, b, c, d, e, f
SYM_FUNC_START_LOCAL(rks_fill_\h\l)
	RKS_FILL_BODY
SYM_FUNC_END(rks_fill_\h\l)
.endr
.endr

	.section .rodata, "a"
	.balign 8
SYM_DATA_START(rks_fill_funcs)
.irp h, 0, 1, 2, 3, 4, 5, 6, 7
.irp l, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, a, b, c, d, e, f
	.quad rks_fill_\h\l
.endr
.endr
SYM_DATA_END(rks_fill_funcs)
