/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The probe sites of the riscv step suite (rvsuite.c): one function per
 * instruction class that kprobes on riscv simulate (the six conditional
 * branches, jal with and without a link, jalr with and without a link,
 * auipc, c.j, c.jr, c.jalr, c.beqz, c.bnez) or step out of line (add, c.add,
 * a load, a store), and two that kprobes refuse (a CSR read, and an address
 * inside an instruction).
 *
 * Every site is called as void rs_site_<name>(struct ss_regs *r): it loads
 * a0 to a7 from *r, runs its body, whose probed instruction is at the global
 * label rs_probe_<name> (local ones for the refused sites: the boundary walk
 * starts at the nearest symbol), and stores a0 to a7 back into *r. Branches
 * record the path they took in a7 (1: fell through, 2: took the branch);
 * calls leave their return address in a4 and 0x55 in a5. Each probed
 * instruction has the size its name says: 4 bytes (norvc) or 2 (c.*).
 */
#include <linux/export.h>
#include <linux/linkage.h>

#include "stepsuite.h"

	.option norelax

	.pushsection .data
	.balign 8
SYM_DATA(ss_data, .dword 0)
EXPORT_SYMBOL_GPL(ss_data)
	.popsection

	.text

.macro RS_BEGIN name
SYM_FUNC_START(rs_site_\name)
	addi	sp, sp, -32
	sd	ra, 24(sp)
	sd	s1, 16(sp)
	mv	s1, a0
	ld	a0, SS_X0(s1)
	ld	a1, SS_X0 + 8(s1)
	ld	a2, SS_X2(s1)
	ld	a3, SS_X2 + 8(s1)
	ld	a4, SS_X4(s1)
	ld	a5, SS_X4 + 8(s1)
	ld	a6, SS_X6(s1)
	ld	a7, SS_X6 + 8(s1)
.endm

.macro RS_PROBE name
SYM_INNER_LABEL(rs_probe_\name, SYM_L_GLOBAL)
.endm

.macro RS_END name
	sd	a0, SS_X0(s1)
	sd	a1, SS_X0 + 8(s1)
	sd	a2, SS_X2(s1)
	sd	a3, SS_X2 + 8(s1)
	sd	a4, SS_X4(s1)
	sd	a5, SS_X4 + 8(s1)
	sd	a6, SS_X6(s1)
	sd	a7, SS_X6 + 8(s1)
	ld	s1, 16(sp)
	ld	ra, 24(sp)
	addi	sp, sp, 32
	ret
SYM_FUNC_END(rs_site_\name)
.endm

/* The two paths of a branch: a7 = 1 falling through, 2 at the target 1:. */
.macro RS_PATHS
	li	a7, 1
	j	2f
1:	li	a7, 2
2:
.endm

/* A 4-byte conditional branch on a0 and a1. */
.macro RS_BRANCH name
RS_BEGIN \name
	.option push
	.option norvc
RS_PROBE \name
	\name	a0, a1, 1f
	.option pop
RS_PATHS
RS_END \name
.endm

/* One probed instruction, 4 bytes. */
.macro RS_NORVC name, insn:vararg
	.option push
	.option norvc
RS_PROBE \name
	\insn
	.option pop
.endm

SYM_FUNC_START(rs_callee)
	mv	a4, ra
	li	a5, 0x55
	ret
SYM_FUNC_END(rs_callee)

RS_BRANCH beq
RS_BRANCH bne
RS_BRANCH blt
RS_BRANCH bge
RS_BRANCH bltu
RS_BRANCH bgeu

RS_BEGIN j
RS_NORVC j, jal zero, 1f
RS_PATHS
RS_END j

RS_BEGIN jal
RS_NORVC jal, jal ra, rs_callee
RS_END jal

RS_BEGIN jr
	la	a2, 1f
RS_NORVC jr, jalr zero, 0(a2)
RS_PATHS
RS_END jr

RS_BEGIN jalr
	la	a2, rs_callee
RS_NORVC jalr, jalr ra, 0(a2)
RS_END jalr

RS_BEGIN auipc
RS_NORVC auipc, auipc a1, 0
RS_END auipc

RS_BEGIN c_j
RS_PROBE c_j
	c.j	1f
RS_PATHS
RS_END c_j

RS_BEGIN c_jr
	la	a2, 1f
RS_PROBE c_jr
	c.jr	a2
RS_PATHS
RS_END c_jr

RS_BEGIN c_jalr
	la	a2, rs_callee
RS_PROBE c_jalr
	c.jalr	a2
RS_END c_jalr

RS_BEGIN c_beqz
RS_PROBE c_beqz
	c.beqz	a0, 1f
RS_PATHS
RS_END c_beqz

RS_BEGIN c_bnez
RS_PROBE c_bnez
	c.bnez	a0, 1f
RS_PATHS
RS_END c_bnez

RS_BEGIN add
RS_NORVC add, add a0, a0, a1
RS_END add

RS_BEGIN c_add
RS_PROBE c_add
	c.add	a0, a1
RS_END c_add

RS_BEGIN ld
	la	a2, ss_data
RS_NORVC ld, ld a1, 0(a2)
RS_END ld

RS_BEGIN sd
	la	a2, ss_data
RS_NORVC sd, sd a1, 0(a2)
RS_END sd

/* Refused: a CSR access (the decoder refuses every SYSTEM instruction). */
RS_BEGIN csrr
	.option push
	.option norvc
.Lrs_probe_csrr:
	csrr	a1, sstatus
	.option pop
RS_END csrr

/* Refused: the probe is in the middle of a 4-byte instruction. */
RS_BEGIN mid
	.option push
	.option norvc
.Lrs_insn_mid:
	add	a0, a0, a1
	.option pop
RS_END mid

	.pushsection .rodata
	.balign 8
.macro RS_ENTRY name
	.dword	rs_site_\name, rs_probe_\name
.endm
SYM_DATA_START(ss_site_table)
	RS_ENTRY beq
	RS_ENTRY bne
	RS_ENTRY blt
	RS_ENTRY bge
	RS_ENTRY bltu
	RS_ENTRY bgeu
	RS_ENTRY j
	RS_ENTRY jal
	RS_ENTRY jr
	RS_ENTRY jalr
	RS_ENTRY auipc
	RS_ENTRY c_j
	RS_ENTRY c_jr
	RS_ENTRY c_jalr
	RS_ENTRY c_beqz
	RS_ENTRY c_bnez
	RS_ENTRY add
	RS_ENTRY c_add
	RS_ENTRY ld
	RS_ENTRY sd
	.dword	rs_site_csrr, .Lrs_probe_csrr
	.dword	rs_site_mid, .Lrs_insn_mid + 2
SYM_DATA_END(ss_site_table)
EXPORT_SYMBOL_GPL(ss_site_table)
	.popsection

	/* What MODULE_LICENSE() and MODULE_DESCRIPTION() would write. */
	.pushsection .modinfo, "a"
	.asciz	"license=GPL"
	.asciz	"description=probe sites of the riscv kprobes step suite"
	.popsection
