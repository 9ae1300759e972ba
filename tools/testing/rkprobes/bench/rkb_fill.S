/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Filler functions of rkprobes_bench: 256 functions that are never called,
 * each 16 eight-byte NOPs long, and the table of their addresses. They give
 * the benchmark 4096 distinct probe sites that can be single-stepped,
 * boosted and optimized (every NOP is five bytes or more, and nothing
 * jumps into them), and 256 function entries for kretprobes.
 *
 * Then three probed functions, one per kind of instruction x86 kprobes do
 * not step as it is: a conditional jump (rkb_jcc) and a near call
 * (rkb_call), which the int3 handler emulates, and a RIP-relative load
 * (rkb_riprel), stepped out of line with its displacement adjusted to the
 * slot. rkb_main.c knows where each probed instruction is and checks its
 * opcode before probing it; as it takes that address, which is no ENDBR,
 * each is annotated for objtool.
 */
#include <linux/linkage.h>
#include <linux/objtool.h>

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

/* Probed at the jz, which is always taken: xor sets ZF. */
SYM_FUNC_START(rkb_jcc)
	xorl	%eax, %eax
	ANNOTATE_NOENDBR
	jz	.Lrkb_jcc_taken
	incl	%eax
.Lrkb_jcc_taken:
	RET
SYM_FUNC_END(rkb_jcc)

SYM_FUNC_START_LOCAL(rkb_callee)
	RET
SYM_FUNC_END(rkb_callee)

/* Probed at the call rel32. */
SYM_FUNC_START(rkb_call)
	ANNOTATE_NOENDBR
	call	rkb_callee
	RET
SYM_FUNC_END(rkb_call)

/* Probed at the mov rel32(%rip), %rax. */
SYM_FUNC_START(rkb_riprel)
	ANNOTATE_NOENDBR
	movq	rkb_riprel_var(%rip), %rax
	RET
SYM_FUNC_END(rkb_riprel)

	.data
	.balign 8
SYM_DATA_LOCAL(rkb_riprel_var, .quad 0)

	.section .rodata, "a"
	.balign 8
SYM_DATA_START(rkb_fill_funcs)
.irp h, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, a, b, c, d, e, f
.irp l, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, a, b, c, d, e, f
	.quad rkb_fill_\h\l
.endr
.endr
SYM_DATA_END(rkb_fill_funcs)
