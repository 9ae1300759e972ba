/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The probe sites of the arm64 behaviour suite (a64suite.c): one
 * function per instruction class that kprobes on arm64 simulate (b.cond,
 * cbz/cbnz, tbz/tbnz, adr/adrp, b/bl, br/blr/ret, the literal loads) or
 * step out of line (an ALU instruction with and without flags, a load and a
 * store), and one that kprobes refuse (inside an exclusive sequence).
 *
 * Every site is called as void as_site_<name>(struct ss_regs *r): it loads
 * x0 to x7 and NZCV from *r, runs its body, whose probed instruction is at
 * the global label as_probe_<name> (a local one for in_atomic), and stores
 * x0 to x7 and NZCV back into *r. Branches record the path they took in x7 (1: fell through, 2: took
 * the branch); calls leave their return address in x4 and 0x55 in x5.
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

.macro AS_BEGIN name
SYM_FUNC_START(as_site_\name)
	stp	x29, x30, [sp, #-32]!
	mov	x29, sp
	str	x19, [sp, #16]
	mov	x19, x0
	ldr	x9, [x19, #SS_FLAGS]
	msr	nzcv, x9
	ldp	x0, x1, [x19, #SS_X0]
	ldp	x2, x3, [x19, #SS_X2]
	ldp	x4, x5, [x19, #SS_X4]
	ldp	x6, x7, [x19, #SS_X6]
.endm

.macro AS_PROBE name
SYM_INNER_LABEL(as_probe_\name, SYM_L_GLOBAL)
.endm

.macro AS_END name
	stp	x0, x1, [x19, #SS_X0]
	stp	x2, x3, [x19, #SS_X2]
	stp	x4, x5, [x19, #SS_X4]
	stp	x6, x7, [x19, #SS_X6]
	mrs	x9, nzcv
	str	x9, [x19, #SS_FLAGS]
	ldr	x19, [sp, #16]
	ldp	x29, x30, [sp], #32
	ret
SYM_FUNC_END(as_site_\name)
.endm

/* The two paths of a branch: x7 = 1 falling through, 2 at the target 1:. */
.macro AS_PATHS
	mov	x7, #1
	b	2f
1:	hint	#38			/* bti jc: an indirect branch may land here */
	mov	x7, #2
2:
.endm

.macro AS_BCOND name, cond
AS_BEGIN \name
AS_PROBE \name
	b.\cond	1f
AS_PATHS
AS_END \name
.endm

SYM_FUNC_START(as_callee)
	mov	x4, x30
	mov	x5, #0x55
	ret
SYM_FUNC_END(as_callee)

AS_BCOND beq, eq
AS_BCOND bne, ne
AS_BCOND bcs, cs
AS_BCOND bmi, mi
AS_BCOND bvs, vs
AS_BCOND bhi, hi
AS_BCOND bge, ge
AS_BCOND bgt, gt
AS_BCOND ble, le

AS_BEGIN cbz
AS_PROBE cbz
	cbz	x0, 1f
AS_PATHS
AS_END cbz

AS_BEGIN cbnz_w
AS_PROBE cbnz_w
	cbnz	w0, 1f
AS_PATHS
AS_END cbnz_w

AS_BEGIN tbz
AS_PROBE tbz
	tbz	x0, #3, 1f
AS_PATHS
AS_END tbz

AS_BEGIN tbnz
AS_PROBE tbnz
	tbnz	x0, #40, 1f
AS_PATHS
AS_END tbnz

AS_BEGIN adr
AS_PROBE adr
	adr	x1, as_callee
AS_END adr

AS_BEGIN adrp
AS_PROBE adrp
	adrp	x1, ss_data
AS_END adrp

AS_BEGIN b
AS_PROBE b
	b	1f
AS_PATHS
AS_END b

AS_BEGIN bl
AS_PROBE bl
	bl	as_callee
AS_END bl

AS_BEGIN br
	adr	x2, 1f
AS_PROBE br
	br	x2
AS_PATHS
AS_END br

AS_BEGIN blr
	adr	x2, as_callee
AS_PROBE blr
	blr	x2
AS_END blr

AS_BEGIN ret
	adr	x30, 1f
AS_PROBE ret
	ret
AS_PATHS
AS_END ret

AS_BEGIN ldr_lit_x
AS_PROBE ldr_lit_x
	ldr	x1, as_lit64
AS_END ldr_lit_x

AS_BEGIN ldr_lit_w
AS_PROBE ldr_lit_w
	ldr	w1, as_lit32
AS_END ldr_lit_w

AS_BEGIN ldrsw_lit
AS_PROBE ldrsw_lit
	ldrsw	x1, as_lit32
AS_END ldrsw_lit

AS_BEGIN add
AS_PROBE add
	add	x0, x0, x1
AS_END add

AS_BEGIN adds
AS_PROBE adds
	adds	x0, x0, x1
AS_END adds

AS_BEGIN ldr
	adrp	x2, ss_data
	add	x2, x2, :lo12:ss_data
AS_PROBE ldr
	ldr	x1, [x2]
AS_END ldr

AS_BEGIN str
	adrp	x2, ss_data
	add	x2, x2, :lo12:ss_data
AS_PROBE str
	str	x1, [x2]
AS_END str

/*
 * Refused: the probe lies between a load-exclusive and its store-exclusive.
 * Its label is local: the decoder scans back from the probe to the start of
 * the symbol that holds it, which must be the site's function.
 */
AS_BEGIN in_atomic
	adrp	x2, ss_data
	add	x2, x2, :lo12:ss_data
3:	ldxr	x1, [x2]
.Las_probe_in_atomic:
	add	x1, x1, #1
	stxr	w3, x1, [x2]
	cbnz	w3, 3b
AS_END in_atomic

/* The literals of the literal loads, in the text as compilers place them. */
	.balign 8
as_lit64:
	.quad	0x0123456789abcdef
as_lit32:
	.word	0x89abcdef
	.word	0

	.pushsection .rodata
	.balign 8
.macro AS_ENTRY name
	.quad	as_site_\name, as_probe_\name
.endm
SYM_DATA_START(ss_site_table)
	AS_ENTRY beq
	AS_ENTRY bne
	AS_ENTRY bcs
	AS_ENTRY bmi
	AS_ENTRY bvs
	AS_ENTRY bhi
	AS_ENTRY bge
	AS_ENTRY bgt
	AS_ENTRY ble
	AS_ENTRY cbz
	AS_ENTRY cbnz_w
	AS_ENTRY tbz
	AS_ENTRY tbnz
	AS_ENTRY adr
	AS_ENTRY adrp
	AS_ENTRY b
	AS_ENTRY bl
	AS_ENTRY br
	AS_ENTRY blr
	AS_ENTRY ret
	AS_ENTRY ldr_lit_x
	AS_ENTRY ldr_lit_w
	AS_ENTRY ldrsw_lit
	AS_ENTRY add
	AS_ENTRY adds
	AS_ENTRY ldr
	AS_ENTRY str
	.quad	as_site_in_atomic, .Las_probe_in_atomic
SYM_DATA_END(ss_site_table)
EXPORT_SYMBOL_GPL(ss_site_table)
	.popsection

	/* What MODULE_LICENSE() and MODULE_DESCRIPTION() would write. */
	.pushsection .modinfo, "a"
	.asciz	"license=GPL"
	.asciz	"description=probe sites of the arm64 kprobes behaviour suite"
	.popsection
