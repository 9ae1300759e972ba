/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The probe sites of the x86 behaviour suite (rkprobes_x86suite.c), a
 * module of their own so that objtool leaves them alone: one function per instruction
 * class that kprobes on x86 emulates, single-steps, boosts or refuses.
 *
 * Every site is called as void xs_site_<name>(struct xs_regs *r): it saves
 * the caller's flags, loads the caller-saved registers and the flags from
 * *r, runs its body, whose probed instruction is at the global label
 * xs_probe_<name>, stores the registers and the flags back into *r and
 * restores the caller's flags (IF and DF included), so a body may change IF
 * and DF. Branches record the path they took in %r8 (1: fell through where
 * they should have jumped, 2: took the branch); calls and pushes leave the
 * pushed value in %r9.
 */
#include <linux/export.h>
#include <linux/linkage.h>
#include <asm/ibt.h>

#include "xs.h"

	.pushsection .data
	.balign 8
SYM_DATA(xs_rip_data, .quad 0)
EXPORT_SYMBOL_GPL(xs_rip_data)
	.popsection

	.text

.macro XS_BEGIN name
SYM_FUNC_START(xs_site_\name)
	pushfq
	pushq	%rdi
	pushq	XS_FLAGS(%rdi)
	movq	XS_AX(%rdi), %rax
	movq	XS_CX(%rdi), %rcx
	movq	XS_DX(%rdi), %rdx
	movq	XS_SI(%rdi), %rsi
	movq	XS_R8(%rdi), %r8
	movq	XS_R9(%rdi), %r9
	movq	XS_R10(%rdi), %r10
	movq	XS_R11(%rdi), %r11
	movq	XS_DI(%rdi), %rdi
	popfq
.endm

.macro XS_PROBE name
SYM_INNER_LABEL(xs_probe_\name, SYM_L_GLOBAL)
.endm

.macro XS_END name
	pushfq
	pushq	%rdi
	movq	16(%rsp), %rdi
	movq	%rax, XS_AX(%rdi)
	movq	%rcx, XS_CX(%rdi)
	movq	%rdx, XS_DX(%rdi)
	movq	%rsi, XS_SI(%rdi)
	movq	%r8, XS_R8(%rdi)
	movq	%r9, XS_R9(%rdi)
	movq	%r10, XS_R10(%rdi)
	movq	%r11, XS_R11(%rdi)
	popq	XS_DI(%rdi)
	popq	XS_FLAGS(%rdi)
	addq	$8, %rsp
	popfq
	RET
SYM_FUNC_END(xs_site_\name)
.endm

/* A conditional branch (jcc, loop*, j*cxz), with an optional prefix byte. */
.macro XS_BRANCH name, insn, prefix
	XS_BEGIN \name
	XS_PROBE \name
	.ifnb \prefix
	.byte	\prefix
	.endif
	\insn	1f
	movl	$1, %r8d
	jmp	2f
1:	movl	$2, %r8d
2:
	XS_END \name
.endm

/* jcc rel32 (0f 8x), whatever the distance, so that the assembler cannot relax it. */
.macro XS_JCC32 name, cc
	XS_BEGIN \name
	XS_PROBE \name
	.byte	0x0f, 0x80 + \cc
	.long	1f - . - 4
	movl	$1, %r8d
	jmp	2f
1:	movl	$2, %r8d
2:
	XS_END \name
.endm

	XS_BRANCH jz8, jz
	XS_BRANCH jnz8, jnz
	XS_BRANCH jc8, jc
	XS_BRANCH jbe8, jbe
	XS_BRANCH jl8, jl
	XS_BRANCH jg8, jg
	XS_BRANCH jo8, jo
	XS_BRANCH js8, js
	XS_BRANCH jp8, jp
	XS_JCC32 jnz32, 0x5
	XS_JCC32 jle32, 0xe
	XS_JCC32 ja32, 0x7

	XS_BRANCH loop, loop
	XS_BRANCH loope, loope
	XS_BRANCH loopne, loopne
	XS_BRANCH jrcxz, jrcxz
	/* With an address-size prefix the counter is %ecx. */
	XS_BRANCH loop_addr32, loop, 0x67
	XS_BRANCH loopne_addr32, loopne, 0x67
	XS_BRANCH jecxz, jrcxz, 0x67

	XS_BEGIN jmp8
	XS_PROBE jmp8
	jmp	1f
	movl	$1, %r8d
1:
	XS_END jmp8

	XS_BEGIN jmp8_back
	jmp	2f
1:	jmp	3f
2:
	XS_PROBE jmp8_back
	jmp	1b
	movl	$1, %r8d
3:
	XS_END jmp8_back

	XS_BEGIN jmp32
	XS_PROBE jmp32
	.byte	0xe9
	.long	1f - . - 4
	movl	$1, %r8d
1:
	XS_END jmp32

	XS_BEGIN call32
	XS_PROBE call32
	call	1f
	movl	$1, %r8d
1:	popq	%r9
	XS_END call32

	XS_BEGIN call32_next
	XS_PROBE call32_next
	call	1f
1:	popq	%r9
	XS_END call32_next

	XS_BEGIN ret
	leaq	1f(%rip), %r9
	pushq	%r9
	XS_PROBE ret
	ret
	movl	$1, %r8d
1:
	XS_END ret

	XS_BEGIN jmp_rax
	leaq	1f(%rip), %rax
	XS_PROBE jmp_rax
	jmp	*%rax
	movl	$1, %r8d
1:	ENDBR
	XS_END jmp_rax

	XS_BEGIN jmp_r11
	leaq	1f(%rip), %r11
	XS_PROBE jmp_r11
	jmp	*%r11
	movl	$1, %r8d
1:	ENDBR
	XS_END jmp_r11

	XS_BEGIN call_r10
	leaq	1f(%rip), %r10
	XS_PROBE call_r10
	call	*%r10
	movl	$1, %r8d
1:	ENDBR
	popq	%r9
	XS_END call_r10

	XS_BEGIN cli
	XS_PROBE cli
	cli
	XS_END cli

	/* IF is cleared again right away: the window with interrupts on is short. */
	XS_BEGIN sti
	XS_PROBE sti
	sti
	pushfq
	popq	%r9
	cli
	XS_END sti

	XS_BEGIN pushf
	XS_PROBE pushf
	pushfq
	popq	%r9
	XS_END pushf

	/* %rdx holds the flags to pop; %r9 gets them back as the CPU took them. */
	XS_BEGIN popf_if_on
	pushq	%rdx
	XS_PROBE popf_if_on
	popfq
	pushfq
	popq	%r9
	cli
	XS_END popf_if_on

	XS_BEGIN popf_if_off
	pushq	%rdx
	XS_PROBE popf_if_off
	popfq
	pushfq
	popq	%r9
	cli
	XS_END popf_if_off

	XS_BEGIN alu
	XS_PROBE alu
	addq	%rsi, %rdi
	XS_END alu

	XS_BEGIN rip_load
	XS_PROBE rip_load
	movq	xs_rip_data(%rip), %rax
	XS_END rip_load

	XS_BEGIN rip_store
	XS_PROBE rip_store
	movq	%rsi, xs_rip_data(%rip)
	XS_END rip_store

	XS_BEGIN rip_add
	XS_PROBE rip_add
	addq	%rsi, xs_rip_data(%rip)
	XS_END rip_add

	/* Probed at its entry, by symbol: with IBT the probe lands past the ENDBR. */
	XS_BEGIN endbr
	addq	%rsi, %rdi
	XS_END endbr

	/* Never run: only registered, and refused. */
	XS_BEGIN int3
	XS_PROBE int3
	int3
	XS_END int3

	XS_BEGIN ud2
	XS_PROBE ud2
	ud2
	XS_END ud2

	.pushsection .rodata
	.balign 8
/* In the order of enum xs_index (xs.h); the suite checks the names. */
SYM_DATA_START(xs_site_table)
	.quad	xs_site_jz8, xs_probe_jz8
	.quad	xs_site_jnz8, xs_probe_jnz8
	.quad	xs_site_jc8, xs_probe_jc8
	.quad	xs_site_jbe8, xs_probe_jbe8
	.quad	xs_site_jl8, xs_probe_jl8
	.quad	xs_site_jg8, xs_probe_jg8
	.quad	xs_site_jo8, xs_probe_jo8
	.quad	xs_site_js8, xs_probe_js8
	.quad	xs_site_jp8, xs_probe_jp8
	.quad	xs_site_jnz32, xs_probe_jnz32
	.quad	xs_site_jle32, xs_probe_jle32
	.quad	xs_site_ja32, xs_probe_ja32
	.quad	xs_site_jmp8, xs_probe_jmp8
	.quad	xs_site_jmp8_back, xs_probe_jmp8_back
	.quad	xs_site_jmp32, xs_probe_jmp32
	.quad	xs_site_call32, xs_probe_call32
	.quad	xs_site_call32_next, xs_probe_call32_next
	.quad	xs_site_ret, xs_probe_ret
	.quad	xs_site_jmp_rax, xs_probe_jmp_rax
	.quad	xs_site_jmp_r11, xs_probe_jmp_r11
	.quad	xs_site_call_r10, xs_probe_call_r10
	.quad	xs_site_loop, xs_probe_loop
	.quad	xs_site_loope, xs_probe_loope
	.quad	xs_site_loopne, xs_probe_loopne
	.quad	xs_site_jrcxz, xs_probe_jrcxz
	.quad	xs_site_loop_addr32, xs_probe_loop_addr32
	.quad	xs_site_loopne_addr32, xs_probe_loopne_addr32
	.quad	xs_site_jecxz, xs_probe_jecxz
	.quad	xs_site_cli, xs_probe_cli
	.quad	xs_site_sti, xs_probe_sti
	.quad	xs_site_pushf, xs_probe_pushf
	.quad	xs_site_popf_if_on, xs_probe_popf_if_on
	.quad	xs_site_popf_if_off, xs_probe_popf_if_off
	.quad	xs_site_alu, xs_probe_alu
	.quad	xs_site_rip_load, xs_probe_rip_load
	.quad	xs_site_rip_store, xs_probe_rip_store
	.quad	xs_site_rip_add, xs_probe_rip_add
	.quad	xs_site_int3, xs_probe_int3
	.quad	xs_site_ud2, xs_probe_ud2
	.quad	xs_site_endbr, 0
SYM_DATA_END(xs_site_table)
EXPORT_SYMBOL_GPL(xs_site_table)
	.popsection

	/* What MODULE_LICENSE() and MODULE_DESCRIPTION() would write. */
	.pushsection .modinfo, "a"
	.asciz	"license=GPL"
	.asciz	"description=probe sites of the x86 kprobes behaviour suite"
	.popsection
