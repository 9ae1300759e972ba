/* SPDX-License-Identifier: GPL-2.0 */
/*
 * PER instruction-fetch single-step of a branch, bare metal (no Linux).
 *
 * What s390 kprobes do to step a copied instruction (enable_singlestep() in
 * arch/s390/kernel/kprobes.c): CR9 = instruction-fetch event only
 * (0x40000000), CR10 = CR11 = the instruction's address, a PSW with the PER
 * bit and I/O and external interrupts masked, whose address is the
 * instruction. The Principles of Operation report the event when the
 * instruction completes: the program-old PSW addresses the next instruction
 * to run (a branch's target or its fall-through), which has not run yet.
 *
 * Each case below runs one instruction at A that way and prints, on the SCLP
 * ASCII console, what it expected and what it saw: the program interruption
 * code, the PER code and address, the program-old PSW address, and r1 and
 * r2, which only the instructions after A set (to 1). A program check
 * handler records the lowcore fields and returns to the case. The run ends
 * in a disabled wait at address 0xfff, which QEMU takes as a shutdown.
 */

/* Lowcore (z/Architecture) */
#define LC_PGM_INT_CODE		0x8c	/* ILC halfword, code halfword */
#define LC_PER_CODE		0x96
#define LC_PER_ADDRESS		0x98
#define LC_PGM_OLD_PSW		0x150
#define LC_PGM_NEW_PSW		0x1d0

#define PSW_MASK_PER		0x4000000000000000
#define PSW_MASK_WAIT		0x0002000000000000
#define PSW_MASK_CC1		0x0000100000000000	/* condition code 1 */
#define PSW_MASK_64		0x0000000180000000	/* EA and BA */
#define PER_EVENT_IFETCH	0x40000000

#define PGM_CODE_PER		0x0080

#define SCLP_CMD_WRITE_EVENT_DATA	0x00760005
#define SCLP_EVENT_ASCII_CONSOLE	0x1a

/* Case descriptor */
#define CASE_NAME	0	/* NUL-terminated name */
#define CASE_WHAT	8	/* NUL-terminated description */
#define CASE_PSW_MASK	16	/* PSW mask for the step, with PER */
#define CASE_ADDR	24	/* A: PSW address, CR10 and CR11 */
#define CASE_EXP_OLD	32	/* expected program-old PSW address */
#define CASE_TARGET	40	/* T: the branch target, in r5 */

/* What the program check handler records */
#define INFO_INT_CODE	0	/* 4 bytes: ILC, code */
#define INFO_PER_CODE	4	/* 1 byte */
#define INFO_PER_ADDR	8
#define INFO_OLD_MASK	16
#define INFO_OLD_ADDR	24
#define INFO_R1		32
#define INFO_R2		40

	.macro	PUTS str
	.pushsection .rodata.str, "a"
	.balign	2
.Lstr\@:
	.asciz	"\str"
	.popsection
	larl	%r2, .Lstr\@
	brasl	%r14, puts
	.endm

	/* Print the 64-bit value at off(base) in hex, ndigits digits. */
	.macro	PUTHEX off, base, ndigits
	lg	%r2, \off(\base)
	lghi	%r3, \ndigits
	brasl	%r14, puthex
	.endm

	.section .text.entry, "ax"
	.globl	_start
_start:
	j	main
	.org	_start + 0x600

	.text
main:
	lghi	%r1, 0
	larl	%r2, pgm_new_psw
	mvc	LC_PGM_NEW_PSW(16, %r1), 0(%r2)

	PUTS	"per-branch: PER instruction-fetch single-step of a branch, bare metal\n"
	.irp	id, control, nt, tk, j, bras, bcrnt, bcrtk, fnt, ftk, fbcr, fj, fbras
	larl	%r9, case_\id
	brasl	%r14, run_case
	.endr

	PUTS	"per-branch: RESULT "
	larl	%r10, counters
	lg	%r2, 0(%r10)
	brasl	%r14, putdec
	PUTS	" passed, "
	lg	%r2, 8(%r10)
	brasl	%r14, putdec
	PUTS	" failed\n"
	j	shutdown

/*
 * Run the case r9 points to. Clobbers r0-r8 and r10-r13; r13 holds the
 * return address (puts and puthex leave it alone).
 */
run_case:
	lgr	%r13, %r14

	/* Clear what the handler will record, then arm it. */
	lghi	%r11, 0
	xc	LC_PGM_INT_CODE(4, %r11), LC_PGM_INT_CODE(%r11)
	xc	LC_PER_CODE(2, %r11), LC_PER_CODE(%r11)
	xc	LC_PER_ADDRESS(8, %r11), LC_PER_ADDRESS(%r11)
	xc	LC_PGM_OLD_PSW(16, %r11), LC_PGM_OLD_PSW(%r11)
	larl	%r10, pgm_info
	xc	0(48, %r10), 0(%r10)
	larl	%r3, case_done
	larl	%r4, pgm_cont
	stg	%r3, 0(%r4)

	/* CR9: instruction fetch only; CR10 = CR11 = A. */
	larl	%r4, per_ctl
	llilf	%r3, PER_EVENT_IFETCH
	stg	%r3, 0(%r4)
	lg	%r3, CASE_ADDR(%r9)
	stg	%r3, 8(%r4)
	stg	%r3, 16(%r4)
	lctlg	%c9, %c11, 0(%r4)

	/* PSW: PER on, interrupts masked, the case's condition code, at A. */
	larl	%r4, step_psw
	lg	%r3, CASE_PSW_MASK(%r9)
	stg	%r3, 0(%r4)
	lg	%r3, CASE_ADDR(%r9)
	stg	%r3, 8(%r4)
	lghi	%r1, 0
	lghi	%r2, 0
	lghi	%r3, 1
	lg	%r5, CASE_TARGET(%r9)
	lpswe	0(%r4)

case_done:
	/* Compare: r12 = 0 if everything is as expected. */
	larl	%r10, pgm_info
	lghi	%r12, 0
	llh	%r3, INFO_INT_CODE + 2(%r10)
	chi	%r3, PGM_CODE_PER
	je	1f
	lghi	%r12, 1
1:	lg	%r3, INFO_PER_ADDR(%r10)
	clg	%r3, CASE_ADDR(%r9)
	je	2f
	lghi	%r12, 1
2:	lg	%r3, INFO_OLD_ADDR(%r10)
	clg	%r3, CASE_EXP_OLD(%r9)
	je	3f
	lghi	%r12, 1
3:	lg	%r3, INFO_R1(%r10)
	ltgr	%r3, %r3
	je	4f
	lghi	%r12, 1
4:	lg	%r3, INFO_R2(%r10)
	ltgr	%r3, %r3
	je	5f
	lghi	%r12, 1
5:
	PUTS	"per-branch: case "
	lg	%r2, CASE_NAME(%r9)
	brasl	%r14, puts
	PUTS	": "
	lg	%r2, CASE_WHAT(%r9)
	brasl	%r14, puts
	PUTS	", A="
	PUTHEX	CASE_ADDR, %r9, 8
	PUTS	" T="
	PUTHEX	CASE_TARGET, %r9, 8
	PUTS	"\n  expected: pgm code 0080, PER address "
	PUTHEX	CASE_ADDR, %r9, 8
	PUTS	", old PSW address "
	PUTHEX	CASE_EXP_OLD, %r9, 8
	PUTS	", r1 0, r2 0\n  seen:     pgm code "
	llh	%r2, INFO_INT_CODE + 2(%r10)
	lghi	%r3, 4
	brasl	%r14, puthex
	PUTS	", PER address "
	PUTHEX	INFO_PER_ADDR, %r10, 8
	PUTS	", old PSW address "
	PUTHEX	INFO_OLD_ADDR, %r10, 8
	PUTS	", r1 "
	PUTHEX	INFO_R1, %r10, 1
	PUTS	", r2 "
	PUTHEX	INFO_R2, %r10, 1
	PUTS	" (PER code "
	llc	%r2, INFO_PER_CODE(%r10)
	lghi	%r3, 2
	brasl	%r14, puthex
	PUTS	", ILC "
	llh	%r2, INFO_INT_CODE(%r10)
	lghi	%r3, 1
	brasl	%r14, puthex
	PUTS	")\n"

	larl	%r10, counters
	ltgr	%r12, %r12
	jne	6f
	agsi	0(%r10), 1
	PUTS	"PASS "
	j	7f
6:	agsi	8(%r10), 1
	PUTS	"FAIL "
7:	lg	%r2, CASE_NAME(%r9)
	brasl	%r14, puts
	PUTS	"\n"
	br	%r13

/*
 * Program check handler: record the lowcore fields and r1/r2, then go to
 * pgm_cont. An unarmed program check (pgm_cont 0) is reported and stops.
 * Uses r10-r12 only.
 */
pgm_handler:
	larl	%r10, pgm_info
	lghi	%r11, 0
	mvc	INFO_INT_CODE(4, %r10), LC_PGM_INT_CODE(%r11)
	mvc	INFO_PER_CODE(1, %r10), LC_PER_CODE(%r11)
	mvc	INFO_PER_ADDR(8, %r10), LC_PER_ADDRESS(%r11)
	mvc	INFO_OLD_MASK(16, %r10), LC_PGM_OLD_PSW(%r11)
	stg	%r1, INFO_R1(%r10)
	stg	%r2, INFO_R2(%r10)
	larl	%r11, pgm_cont
	lg	%r12, 0(%r11)
	ltgr	%r12, %r12
	je	unexpected
	xc	0(8, %r11), 0(%r11)
	br	%r12

unexpected:
	PUTS	"FAIL unexpected program interruption, code "
	larl	%r10, pgm_info
	llh	%r2, INFO_INT_CODE + 2(%r10)
	lghi	%r3, 4
	brasl	%r14, puthex
	PUTS	" at old PSW address "
	PUTHEX	INFO_OLD_ADDR, %r10, 16
	PUTS	"\n"
shutdown:
	larl	%r1, wait_psw
	lpswe	0(%r1)

/* puts: print the NUL-terminated string at r2. Clobbers r0-r8. */
puts:
	lgr	%r3, %r2
1:	cli	0(%r3), 0
	je	2f
	la	%r3, 1(%r3)
	j	1b
2:	sgr	%r3, %r2
	j	sclp_write

/* puthex: print the low r3 hex digits of r2. Clobbers r0-r8. */
puthex:
	larl	%r4, hexbuf
	larl	%r7, hexdigits
	lgr	%r5, %r3
	la	%r6, 0(%r3, %r4)
1:	aghi	%r6, -1
	lghi	%r8, 15
	ngr	%r8, %r2
	ic	%r0, 0(%r8, %r7)
	stc	%r0, 0(%r6)
	srlg	%r2, %r2, 4
	brctg	%r5, 1b
	lgr	%r2, %r4
	j	sclp_write

/* putdec: print r2, below 100, in decimal. Clobbers r0-r8. */
putdec:
	lghi	%r0, 0
	lgr	%r1, %r2
	lghi	%r5, 10
	dlgr	%r0, %r5		/* r1 = tens, r0 = ones */
	larl	%r4, hexbuf
	lgr	%r2, %r4
	lghi	%r3, 1
	ltgr	%r1, %r1
	je	1f
	ahi	%r1, '0'
	stc	%r1, 0(%r4)
	la	%r4, 1(%r4)
	lghi	%r3, 2
1:	ahi	%r0, '0'
	stc	%r0, 0(%r4)
	j	sclp_write

/*
 * sclp_write: write r3 bytes at r2 to the SCLP ASCII console, one Write
 * Event Data SCCB. QEMU completes the service call before servc returns;
 * the service-signal interruption it raises stays pending (masked).
 * Clobbers r0-r8.
 */
sclp_write:
	larl	%r4, sccb
	lgr	%r5, %r3
	aghi	%r5, 8 + 6
	sth	%r5, 0(%r4)		/* SCCB length */
	xc	2(6, %r4), 2(%r4)	/* function code, control mask, response */
	lgr	%r5, %r3
	aghi	%r5, 6
	sth	%r5, 8(%r4)		/* event buffer length */
	mvi	10(%r4), SCLP_EVENT_ASCII_CONSOLE
	xc	11(3, %r4), 11(%r4)
	la	%r6, 14(%r4)
	ltgr	%r5, %r3
	je	2f
1:	ic	%r0, 0(%r2)
	stc	%r0, 0(%r6)
	la	%r2, 1(%r2)
	la	%r6, 1(%r6)
	brctg	%r5, 1b
2:	llilf	%r5, SCLP_CMD_WRITE_EVENT_DATA
	.insn	rre, 0xb2200000, %r5, %r4	/* servc %r5,%r4 */
	br	%r14

/*
 * The stepped code. Each case has a page; A is the stepped instruction, N the
 * instruction after it and T its branch target. N and T are 2-byte
 * instructions that set r1 and r2 to 1 (r3 is 1, r5 is T), and each is
 * followed by an invalid opcode (0000), so a step that runs on stops there
 * with an operation exception.
 */
	.macro	STEPCASE name, insn:vararg
	.section .text.cases, "ax"
	.balign	4096
\name\()_A:
	\insn
\name\()_N:
	lr	%r1, %r3
	.short	0, 0
\name\()_T:
	lr	%r2, %r3
	.short	0, 0
	.endm

	/* The same with T at the start of the next page. */
	.macro	STEPCASE_FAR name, insn:vararg
	.section .text.cases, "ax"
	.balign	4096
\name\()_A:
	\insn
\name\()_N:
	lr	%r1, %r3
	.short	0, 0
	.balign	4096
\name\()_T:
	lr	%r2, %r3
	.short	0, 0
	.endm

	STEPCASE control, lghi %r0, 7
	STEPCASE nt, brc 8, nt_T	/* jz, condition code 1: not taken */
	STEPCASE tk, brc 8, tk_T	/* jz, condition code 0: taken */
	STEPCASE j, brc 15, j_T		/* j: unconditional */
	STEPCASE bras, bras %r6, bras_T	/* unconditional call */
	STEPCASE bcrnt, bcr 8, %r5	/* condition code 1: not taken */
	STEPCASE bcrtk, bcr 8, %r5	/* condition code 0: taken */
	STEPCASE_FAR fnt, brc 8, fnt_T	/* condition code 1: not taken */
	STEPCASE_FAR ftk, brc 8, ftk_T	/* condition code 0: taken */
	STEPCASE_FAR fbcr, bcr 8, %r5	/* condition code 0: taken */
	STEPCASE_FAR fj, brc 15, fj_T	/* j: unconditional */
	STEPCASE_FAR fbras, bras %r6, fbras_T	/* unconditional call */

	.section .rodata, "a"
	.balign	8
pgm_new_psw:
	.quad	PSW_MASK_64, pgm_handler
wait_psw:
	.quad	PSW_MASK_WAIT | PSW_MASK_64, 0xfff

	.macro	CASEDESC id, name, what, mask, a, old, t
	.balign	8
case_\id:
	.quad	name_\id, what_\id
	.quad	\mask, \a, \old, \t
	.pushsection .rodata.str, "a"
name_\id:	.asciz	"\name"
what_\id:	.asciz	"\what"
	.popsection
	.endm

#define PER_NOCC	(PSW_MASK_PER | PSW_MASK_64)
#define PER_CC1		(PSW_MASK_PER | PSW_MASK_CC1 | PSW_MASK_64)

	CASEDESC control, control, "lghi %r0,7 (not a branch)", PER_NOCC, control_A, control_N, control_T
	CASEDESC nt, brc-not-taken, "brc 8,T with condition code 1", PER_CC1, nt_A, nt_N, nt_T
	CASEDESC tk, brc-taken, "brc 8,T with condition code 0", PER_NOCC, tk_A, tk_T, tk_T
	CASEDESC j, j-taken, "brc 15,T (j)", PER_NOCC, j_A, j_T, j_T
	CASEDESC bras, bras-taken, "bras %r6,T", PER_NOCC, bras_A, bras_T, bras_T
	CASEDESC bcrnt, bcr-not-taken, "bcr 8,%r5 (r5 = T) with condition code 1", PER_CC1, bcrnt_A, bcrnt_N, bcrnt_T
	CASEDESC bcrtk, bcr-taken, "bcr 8,%r5 (r5 = T) with condition code 0", PER_NOCC, bcrtk_A, bcrtk_T, bcrtk_T
	CASEDESC fnt, brc-not-taken-far, "brc 8,T with condition code 1, T in the next page", PER_CC1, fnt_A, fnt_N, fnt_T
	CASEDESC ftk, brc-taken-far, "brc 8,T with condition code 0, T in the next page", PER_NOCC, ftk_A, ftk_T, ftk_T
	CASEDESC fbcr, bcr-taken-far, "bcr 8,%r5 (r5 = T) with condition code 0, T in the next page", PER_NOCC, fbcr_A, fbcr_T, fbcr_T
	CASEDESC fj, j-taken-far, "brc 15,T (j), T in the next page", PER_NOCC, fj_A, fj_T, fj_T
	CASEDESC fbras, bras-taken-far, "bras %r6,T, T in the next page", PER_NOCC, fbras_A, fbras_T, fbras_T

	.balign	2
hexdigits:	.ascii	"0123456789abcdef"

	.data
	.balign	8
pgm_cont:	.quad	0
counters:	.quad	0, 0		/* passed, failed */
per_ctl:	.quad	0, 0, 0
step_psw:	.quad	0, 0
pgm_info:	.fill	48, 1, 0
hexbuf:		.fill	16, 1, 0

	.bss
	.balign	4096
sccb:		.fill	4096, 1, 0
