/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The probe sites of the ppc64 step suite (ppcsuite.c): one function per
 * instruction class that kprobes on ppc64 emulate with emulate_step()
 * (add, add., cmpd, a load, a store, b, bl, beq, bdnz, bctr, bctrl, blr,
 * mflr) or step out of line because emulate_step() declines it (mfspr of
 * the PVR), and three they refuse with -EINVAL (mtmsrd, rfid: they cannot
 * be single-stepped; an address that is not a multiple of 4).
 *
 * Every site is called as void pc_site_<name>(struct ss_regs *r): it loads
 * r3 to r10 from r->x[0..7] and cr0 from r->flags, runs its body, whose
 * probed instruction is at the global label pc_probe_<name>, and stores r3
 * to r10 back into r->x and the condition register into r->flags. r11
 * holds r, r12 the link register and r0 the condition register on entry,
 * whose non-volatile fields (cr2-cr4) come back on return. Branches record
 * the path they took in r10 (1: fell through, 2: took the branch); calls go
 * to pc_callee, which leaves its return address in r7 and 0x55 in r8. The
 * load and store sites use the red zone below r1.
 */
#include <linux/export.h>
#include <linux/linkage.h>

#include "stepsuite.h"

	.pushsection .data
	.balign 8
SYM_DATA(ss_data, .8byte 0)
EXPORT_SYMBOL_GPL(ss_data)
	.popsection

	.text

.macro PC_BEGIN name
SYM_FUNC_START(pc_site_\name)
	mfcr	0
	mflr	12
	mr	11,3
	ld	3,SS_FLAGS(11)
	mtcrf	0x80,3
	ld	3,SS_X0(11)
	ld	4,SS_X0+8(11)
	ld	5,SS_X2(11)
	ld	6,SS_X2+8(11)
	ld	7,SS_X4(11)
	ld	8,SS_X4+8(11)
	ld	9,SS_X6(11)
	ld	10,SS_X6+8(11)
.endm

.macro PC_PROBE name
SYM_INNER_LABEL(pc_probe_\name, SYM_L_GLOBAL)
.endm

.macro PC_END name
	std	3,SS_X0(11)
	std	4,SS_X0+8(11)
	std	5,SS_X2(11)
	std	6,SS_X2+8(11)
	std	7,SS_X4(11)
	std	8,SS_X4+8(11)
	std	9,SS_X6(11)
	std	10,SS_X6+8(11)
	mfcr	3
	std	3,SS_FLAGS(11)
	mtcrf	0x38,0
	mtlr	12
	blr
SYM_FUNC_END(pc_site_\name)
.endm

/* The two paths of a branch: r10 = 1 falling through, 2 at the target 1:. */
.macro PC_PATHS
	li	10,1
	b	2f
1:	li	10,2
2:
.endm

/* A site that is its probed instruction only. */
.macro PC_SITE name, insn:vararg
PC_BEGIN \name
PC_PROBE \name
	\insn
PC_END \name
.endm

SYM_FUNC_START(pc_callee)
	mflr	7
	li	8,0x55
	blr
SYM_FUNC_END(pc_callee)

PC_SITE add, add 3,3,4
PC_SITE add_dot, add. 3,3,4
PC_SITE cmpd, cmpd 3,4

PC_BEGIN ld
	std	4,-16(1)
PC_PROBE ld
	ld	5,-16(1)
PC_END ld

PC_BEGIN std
PC_PROBE std
	std	4,-16(1)
	ld	5,-16(1)
PC_END std

PC_BEGIN b
PC_PROBE b
	b	1f
PC_PATHS
PC_END b

PC_BEGIN bl
	mflr	6
PC_PROBE bl
	bl	pc_callee
	mtlr	6
PC_END bl

PC_BEGIN beq
	cmpd	3,4
PC_PROBE beq
	beq	1f
PC_PATHS
PC_END beq

PC_BEGIN bdnz
	mtctr	3
PC_PROBE bdnz
	bdnz	1f
PC_PATHS
PC_END bdnz

/* r5 = the address of 1: (bcl 20,31 is the "get PC" that no return predicts). */
.macro PC_TARGET
	mflr	6
	bcl	20,31,3f
3:	mflr	5
	addi	5,5,1f-3b
	mtlr	6
.endm

PC_BEGIN bctr
	PC_TARGET
	mtctr	5
PC_PROBE bctr
	bctr
PC_PATHS
PC_END bctr

PC_BEGIN blr
	mflr	6
	PC_TARGET
	mtlr	5
PC_PROBE blr
	blr
PC_PATHS
	mtlr	6
PC_END blr

PC_BEGIN bctrl
	mflr	6
	bcl	20,31,3f
3:	mflr	5
	addi	5,5,pc_callee-3b
	mtctr	5
PC_PROBE bctrl
	bctrl
	mtlr	6
PC_END bctrl

PC_BEGIN mflr
	mflr	6
	mtlr	4
PC_PROBE mflr
	mflr	5
	mtlr	6
PC_END mflr

/* mfspr of the PVR: emulate_step() emulates mfspr of XER, LR and CTR only. */
PC_SITE mfpvr, mfspr 5,287

/* Refused: mtmsrd and rfid cannot be single-stepped (can_single_step()). */
PC_BEGIN mtmsrd
.Lpc_probe_mtmsrd:
	mtmsrd	5
PC_END mtmsrd

PC_BEGIN rfid
.Lpc_probe_rfid:
	rfid
PC_END rfid

/* Refused: an address that is not a multiple of 4. */
PC_BEGIN unaligned
.Lpc_insn_unaligned:
	add	3,3,4
PC_END unaligned

	.pushsection .rodata
	.balign 8
.macro PC_ENTRY name
	.8byte	pc_site_\name, pc_probe_\name
.endm
SYM_DATA_START(ss_site_table)
	PC_ENTRY add
	PC_ENTRY add_dot
	PC_ENTRY cmpd
	PC_ENTRY ld
	PC_ENTRY std
	PC_ENTRY b
	PC_ENTRY bl
	PC_ENTRY beq
	PC_ENTRY bdnz
	PC_ENTRY bctr
	PC_ENTRY blr
	PC_ENTRY bctrl
	PC_ENTRY mflr
	PC_ENTRY mfpvr
	.8byte	pc_site_mtmsrd, .Lpc_probe_mtmsrd
	.8byte	pc_site_rfid, .Lpc_probe_rfid
	.8byte	pc_site_unaligned, .Lpc_insn_unaligned + 2
SYM_DATA_END(ss_site_table)
EXPORT_SYMBOL_GPL(ss_site_table)
	.popsection

	/* What MODULE_LICENSE() and MODULE_DESCRIPTION() would write. */
	.pushsection .modinfo, "a"
	.asciz	"license=GPL"
	.asciz	"description=probe sites of the ppc64 kprobes step suite"
	.popsection
