/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Filler functions of rkprobes_bench: 256 functions that are never called,
 * each 16 eight-byte NOPs long, and the table of their addresses. They give
 * the benchmark 4096 distinct probe sites that can be single-stepped,
 * boosted and optimized (every NOP is five bytes or more, and nothing
 * jumps into them), and 256 function entries for kretprobes.
 */
#include <linux/linkage.h>

	.text
.irp h, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, a, b, c, d, e, f
.irp l, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, a, b, c, d, e, f
SYM_FUNC_START_LOCAL(rkb_fill_\h\l)
	.rept 16
	.byte 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00
	.endr
	RET
SYM_FUNC_END(rkb_fill_\h\l)
.endr
.endr

	.section .rodata, "a"
	.balign 8
SYM_DATA_START(rkb_fill_funcs)
.irp h, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, a, b, c, d, e, f
.irp l, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, a, b, c, d, e, f
	.quad rkb_fill_\h\l
.endr
.endr
SYM_DATA_END(rkb_fill_funcs)
