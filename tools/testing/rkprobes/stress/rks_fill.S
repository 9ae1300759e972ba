/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Filler functions of rkprobes_stress: 128 functions, each two eight-byte
 * NOPs and a return, and the table of their addresses. The stress module
 * probes their entries in batches (register_kprobes of all 128) while its
 * hitters call every one of them through the table. Their entry is a NOP
 * of eight bytes, so a probe there can be boosted and optimized.
 */
#include <linux/linkage.h>

	.text
.irp h, 0, 1, 2, 3, 4, 5, 6, 7
.irp l, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, a, b, c, d, e, f
SYM_FUNC_START_LOCAL(rks_fill_\h\l)
	.byte 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00
	.byte 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00
	RET
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
