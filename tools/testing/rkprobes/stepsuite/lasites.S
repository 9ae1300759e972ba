/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The probe sites of the loongarch step suite (lasuite.c): one function per
 * instruction class that kprobes on loongarch simulate (simu_pc(): pcaddi,
 * pcaddu12i, pcaddu18i, pcalau12i; simu_branch(): b, bl, jirl without a
 * link, with $ra and with another link register, beqz, bnez, beq, bne, blt,
 * bge, bltu, bgeu) or step out of line (add.d, a load, a store), and four
 * that kprobes refuse (amswap.d, ll.d, bceqz, and an address that is not a
 * multiple of 4).
 *
 * Every site is called as void ls_site_<name>(struct ss_regs *r): it loads
 * $a0 to $a7 from *r, runs its body, whose probed instruction is at the
 * global label ls_probe_<name>, and stores $a0 to $a7 back into *r. Branches
 * record the path they took in $a7 (1: fell through, 2: took the branch);
 * calls leave their return address in $a4 and 0x55 in $a5. The pc-relative
 * sites leave their result in $a1 and its distance from the probed
 * instruction in $a5. No site touches the FPU.
 */
#include <linux/export.h>
#include <linux/linkage.h>

#include "stepsuite.h"

	.pushsection .data
	.balign 8
SYM_DATA(ss_data, .quad 0)
EXPORT_SYMBOL_GPL(ss_data)
	.popsection

	.text

.macro LS_BEGIN name
SYM_FUNC_START(ls_site_\name)
	addi.d	$sp, $sp, -32
	st.d	$ra, $sp, 24
	st.d	$s0, $sp, 16
	move	$s0, $a0
	ld.d	$a0, $s0, SS_X0
	ld.d	$a1, $s0, SS_X0 + 8
	ld.d	$a2, $s0, SS_X2
	ld.d	$a3, $s0, SS_X2 + 8
	ld.d	$a4, $s0, SS_X4
	ld.d	$a5, $s0, SS_X4 + 8
	ld.d	$a6, $s0, SS_X6
	ld.d	$a7, $s0, SS_X6 + 8
.endm

.macro LS_PROBE name
SYM_INNER_LABEL(ls_probe_\name, SYM_L_GLOBAL)
.endm

.macro LS_END name
	st.d	$a0, $s0, SS_X0
	st.d	$a1, $s0, SS_X0 + 8
	st.d	$a2, $s0, SS_X2
	st.d	$a3, $s0, SS_X2 + 8
	st.d	$a4, $s0, SS_X4
	st.d	$a5, $s0, SS_X4 + 8
	st.d	$a6, $s0, SS_X6
	st.d	$a7, $s0, SS_X6 + 8
	ld.d	$s0, $sp, 16
	ld.d	$ra, $sp, 24
	addi.d	$sp, $sp, 32
	jirl	$zero, $ra, 0
SYM_FUNC_END(ls_site_\name)
.endm

/* The two paths of a branch: $a7 = 1 falling through, 2 at the target 1:. */
.macro LS_PATHS
	li.d	$a7, 1
	b	2f
1:	li.d	$a7, 2
2:
.endm

/* A conditional branch on $a0 and $a1. */
.macro LS_BRANCH name
LS_BEGIN \name
LS_PROBE \name
	\name	$a0, $a1, 1f
LS_PATHS
LS_END \name
.endm

/* A pc-relative instruction: $a1, and $a5 = $a1 - the probe's address. */
.macro LS_PC name, imm
LS_BEGIN \name
LS_PROBE \name
	\name	$a1, \imm
	la.pcrel $a2, ls_probe_\name
	sub.d	$a5, $a1, $a2
LS_END \name
.endm

SYM_FUNC_START(ls_callee)
	move	$a4, $ra
	li.d	$a5, 0x55
	jirl	$zero, $ra, 0
SYM_FUNC_END(ls_callee)

/*
 * Negative immediates check the sign extension; pcaddu18i's is below 2^13,
 * where upstream 6.12's 32-bit shift (simu_pc()) gives the manual's result.
 */
LS_PC pcaddi, -3
LS_PC pcaddu12i, -2
LS_PC pcaddu18i, 3
LS_PC pcalau12i, -1

LS_BEGIN b
LS_PROBE b
	b	1f
LS_PATHS
LS_END b

LS_BEGIN bl
LS_PROBE bl
	bl	ls_callee
LS_END bl

/* jirl without a link, and with an offset: the target is $a2 + 8. */
LS_BEGIN jr
	la.pcrel $a2, 1f
	addi.d	$a2, $a2, -8
LS_PROBE jr
	jirl	$zero, $a2, 8
LS_PATHS
LS_END jr

LS_BEGIN jirl
	la.pcrel $a2, ls_callee
LS_PROBE jirl
	jirl	$ra, $a2, 0
LS_END jirl

/* jirl linking into another register than $ra: $a6 = the return address. */
LS_BEGIN jirl_a6
	la.pcrel $a2, 1f
LS_PROBE jirl_a6
	jirl	$a6, $a2, 0
LS_PATHS
LS_END jirl_a6

LS_BEGIN beqz
LS_PROBE beqz
	beqz	$a0, 1f
LS_PATHS
LS_END beqz

LS_BEGIN bnez
LS_PROBE bnez
	bnez	$a0, 1f
LS_PATHS
LS_END bnez

LS_BRANCH beq
LS_BRANCH bne
LS_BRANCH blt
LS_BRANCH bge
LS_BRANCH bltu
LS_BRANCH bgeu

LS_BEGIN add
LS_PROBE add
	add.d	$a0, $a0, $a1
LS_END add

LS_BEGIN ld
	la.pcrel $a2, ss_data
LS_PROBE ld
	ld.d	$a1, $a2, 0
LS_END ld

LS_BEGIN st
	la.pcrel $a2, ss_data
LS_PROBE st
	st.d	$a1, $a2, 0
LS_END st

/*
 * Refused (the suite only registers these): an atomic memory access, a
 * load-linked, and bceqz, which reads an FP condition flag; the site jumps
 * over it, as a kernel function may not use the FPU.
 */
LS_BEGIN amswap
	la.pcrel $a2, ss_data
LS_PROBE amswap
	amswap.d $a3, $a1, $a2
LS_END amswap

LS_BEGIN ll
	la.pcrel $a2, ss_data
LS_PROBE ll
	ll.d	$a1, $a2, 0
LS_END ll

LS_BEGIN bceqz
	b	1f
LS_PROBE bceqz
	bceqz	$fcc0, 1f
1:
LS_END bceqz

/* Refused: the probe is 2 bytes into an instruction (-EILSEQ). */
LS_BEGIN mid
LS_PROBE mid
	add.d	$a0, $a0, $a1
LS_END mid

	.pushsection .rodata
	.balign 8
.macro LS_ENTRY name
	.quad	ls_site_\name, ls_probe_\name
.endm
SYM_DATA_START(ss_site_table)
	LS_ENTRY pcaddi
	LS_ENTRY pcaddu12i
	LS_ENTRY pcaddu18i
	LS_ENTRY pcalau12i
	LS_ENTRY b
	LS_ENTRY bl
	LS_ENTRY jr
	LS_ENTRY jirl
	LS_ENTRY jirl_a6
	LS_ENTRY beqz
	LS_ENTRY bnez
	LS_ENTRY beq
	LS_ENTRY bne
	LS_ENTRY blt
	LS_ENTRY bge
	LS_ENTRY bltu
	LS_ENTRY bgeu
	LS_ENTRY add
	LS_ENTRY ld
	LS_ENTRY st
	LS_ENTRY amswap
	LS_ENTRY ll
	LS_ENTRY bceqz
	.quad	ls_site_mid, ls_probe_mid + 2
SYM_DATA_END(ss_site_table)
EXPORT_SYMBOL_GPL(ss_site_table)
	.popsection

	/* What MODULE_LICENSE() and MODULE_DESCRIPTION() would write. */
	.pushsection .modinfo, "a"
	.asciz	"license=GPL"
	.asciz	"description=probe sites of the loongarch kprobes step suite"
	.popsection
