/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The probe sites of the s390 step suite (s390suite.c): one function per
 * instruction class by the fix-up kprobes on s390 apply after stepping it
 * in its slot (resume_execution()): plain instructions of each length
 * (ar, agr, agfi, a load, a store), the relative-long ones whose
 * displacement is re-aimed from the slot (larl, lgrl, stgrl), relative
 * branches (brc, brcl, brct, cgrj), branches to a register or an address
 * that must be moved back only when not taken (bcr, bc, cgrb), and the
 * calls whose return register must be moved back (bras, brasl, basr, and
 * basr with r0, which does not branch); and two that kprobes refuse (epsw,
 * and an address inside an instruction), both with -EINVAL.
 *
 * Every site is called as void sz_site_<name>(struct ss_regs *r): it loads
 * r2 to r9 from r->x[0..7] and the condition code from r->flags (spm), runs
 * its body, whose probed instruction is at the global label sz_probe_<name>
 * (local ones for the refused sites: the boundary walk starts at the
 * nearest symbol), and stores r2 to r9 back into r->x and the condition code
 * and program mask (ipm) into r->flags. r10 holds r. Branches record the
 * path they took in r9 (1: fell through, 2: took the branch); calls go to
 * sz_callee, which sets r5 to 0x55 and returns through r4.
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

.macro SZ_BEGIN name
SYM_FUNC_START(sz_site_\name)
	stmg	%r6,%r15,48(%r15)
	lgr	%r10,%r2
	lmg	%r2,%r9,SS_X0(%r10)
	lg	%r0,SS_FLAGS(%r10)
	spm	%r0
.endm

.macro SZ_PROBE name
SYM_INNER_LABEL(sz_probe_\name, SYM_L_GLOBAL)
.endm

.macro SZ_END name
	ipm	%r0
	stmg	%r2,%r9,SS_X0(%r10)
	stg	%r0,SS_FLAGS(%r10)
	lmg	%r6,%r15,48(%r15)
	br	%r14
SYM_FUNC_END(sz_site_\name)
.endm

/* The two paths of a branch: r9 = 1 falling through, 2 at the target 1:. */
.macro SZ_PATHS
	lghi	%r9,1
	j	2f
1:	lghi	%r9,2
2:
.endm

/* A site that is its probed instruction only. */
.macro SZ_SITE name, insn:vararg
SZ_BEGIN \name
SZ_PROBE \name
	\insn
SZ_END \name
.endm

SYM_FUNC_START(sz_callee)
	lghi	%r5,0x55
	br	%r4
SYM_FUNC_END(sz_callee)

SZ_SITE ar, ar %r2,%r3
SZ_SITE agr, agr %r2,%r3
SZ_SITE agfi, agfi %r2,0x12345

SZ_BEGIN lg
	larl	%r5,ss_data
SZ_PROBE lg
	lg	%r3,0(%r5)
SZ_END lg

SZ_BEGIN stg
	larl	%r5,ss_data
SZ_PROBE stg
	stg	%r3,0(%r5)
SZ_END stg

SZ_SITE larl, larl %r4,ss_data
SZ_SITE lgrl, lgrl %r4,ss_data
SZ_SITE stgrl, stgrl %r3,ss_data

SZ_BEGIN brc
	cgr	%r2,%r3
SZ_PROBE brc
	brc	8,1f
SZ_PATHS
SZ_END brc

SZ_BEGIN brcl
	cgr	%r2,%r3
SZ_PROBE brcl
	brcl	4,1f
SZ_PATHS
SZ_END brcl

SZ_BEGIN brct
SZ_PROBE brct
	brct	%r2,1f
SZ_PATHS
SZ_END brct

SZ_BEGIN cgrj
SZ_PROBE cgrj
	cgrj	%r2,%r3,2,1f
SZ_PATHS
SZ_END cgrj

SZ_BEGIN bcr
	larl	%r5,1f
	cgr	%r2,%r3
SZ_PROBE bcr
	bcr	8,%r5
SZ_PATHS
SZ_END bcr

SZ_BEGIN bc
	larl	%r5,1f
	clgr	%r2,%r3
SZ_PROBE bc
	bc	4,0(%r5)
SZ_PATHS
SZ_END bc

SZ_BEGIN cgrb
	larl	%r5,1f
SZ_PROBE cgrb
	cgrb	%r2,%r3,4,0(%r5)
SZ_PATHS
SZ_END cgrb

SZ_SITE bras, bras %r4,sz_callee
SZ_SITE brasl, brasl %r4,sz_callee

SZ_BEGIN basr
	larl	%r6,sz_callee
SZ_PROBE basr
	basr	%r4,%r6
SZ_END basr

SZ_SITE basr0, basr %r4,%r0

/* Refused: epsw (probe_is_prohibited_opcode()). */
SZ_BEGIN epsw
.Lsz_probe_epsw:
	epsw	%r4,%r5
SZ_END epsw

/* Refused: the probe is in the middle of a 4-byte instruction (can_probe()). */
SZ_BEGIN mid
.Lsz_insn_mid:
	agr	%r2,%r3
SZ_END mid

	.pushsection .rodata
	.balign 8
.macro SZ_ENTRY name
	.quad	sz_site_\name, sz_probe_\name
.endm
SYM_DATA_START(ss_site_table)
	SZ_ENTRY ar
	SZ_ENTRY agr
	SZ_ENTRY agfi
	SZ_ENTRY lg
	SZ_ENTRY stg
	SZ_ENTRY larl
	SZ_ENTRY lgrl
	SZ_ENTRY stgrl
	SZ_ENTRY brc
	SZ_ENTRY brcl
	SZ_ENTRY brct
	SZ_ENTRY cgrj
	SZ_ENTRY bcr
	SZ_ENTRY bc
	SZ_ENTRY cgrb
	SZ_ENTRY bras
	SZ_ENTRY brasl
	SZ_ENTRY basr
	SZ_ENTRY basr0
	.quad	sz_site_epsw, .Lsz_probe_epsw
	.quad	sz_site_mid, .Lsz_insn_mid + 2
SYM_DATA_END(ss_site_table)
EXPORT_SYMBOL_GPL(ss_site_table)
	.popsection

	/* What MODULE_LICENSE() and MODULE_DESCRIPTION() would write. */
	.pushsection .modinfo, "a"
	.asciz	"license=GPL"
	.asciz	"description=probe sites of the s390 kprobes step suite"
	.popsection
