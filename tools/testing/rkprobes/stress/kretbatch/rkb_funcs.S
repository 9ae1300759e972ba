/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The functions rkprobes_kretbatch puts its kretprobes on: 128 of them and
 * the table of their addresses. Each starts with `notl %eax` (f7 d0, a
 * Grp3 instruction: the x86 arch never boosts it, so every hit traps, steps
 * out of line and traps again) and holds a conditional jump back into its
 * first five bytes (never taken: %edx is zero), so the optimizer never puts
 * a jump there: every probe is a lone int3 for as long as it is registered.
 */
#include <linux/linkage.h>

#ifndef CONFIG_X86_64
#error "rkb_funcs.S: the kretprobe-batch scenario's sites are x86_64 code"
#endif

	.text
.irp h, 0, 1, 2, 3, 4, 5, 6, 7
.irp l, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, a, b, c, d, e, f
SYM_FUNC_START_LOCAL(rkb_fn_\h\l)
	notl	%eax
1:	notl	%eax
	xorl	%edx, %edx
	testl	%edx, %edx
	jnz	1b
	RET
SYM_FUNC_END(rkb_fn_\h\l)
.endr
.endr

	.section .rodata, "a"
	.balign 8
SYM_DATA_START(rkb_funcs)
.irp h, 0, 1, 2, 3, 4, 5, 6, 7
.irp l, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, a, b, c, d, e, f
	.quad rkb_fn_\h\l
.endr
.endr
SYM_DATA_END(rkb_funcs)
