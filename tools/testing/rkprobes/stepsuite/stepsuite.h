/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The step suites of scripts/rkprobes test: arches whose kprobes step the
 * probed instruction out of line behind a break instruction or with a
 * hardware single step, or simulate it (arm64: a64sites.S, a64suite.c;
 * riscv: rvsites.S, rvsuite.c; loongarch: lasites.S, lasuite.c; s390:
 * s390sites.S, s390suite.c; ppc64: ppcsites.S, ppcsuite.c). Shared by the sites (assembly), the per-arch
 * case lists and the runner (stepsuite.c): the register block a site reads
 * its inputs from and writes its results to, the site table and the
 * runner. One /init, stepsuite-init.sh, loads any arch's two modules.
 */
#ifndef _STEPSUITE_H
#define _STEPSUITE_H

/* Offsets in struct ss_regs, for the assembler. */
#define SS_X0		0
#define SS_X2		16
#define SS_X4		32
#define SS_X6		48
#define SS_FLAGS	64

#ifndef __ASSEMBLY__

#include <kunit/test.h>
#include <linux/types.h>

/*
 * Eight registers a site loads before its probed instruction and stores
 * after it (arm64: x0 to x7; riscv: a0 to a7; loongarch: $a0 to $a7, that
 * is $r4 to $r11; s390: r2 to r9; ppc64: r3 to r10), and the flags (arm64:
 * NZCV, loaded and stored with msr/mrs; s390: the condition code and
 * program mask, loaded with spm and stored with ipm; ppc64: cr0, loaded
 * with mtcrf and stored with mfcr; riscv and loongarch: none).
 */
struct ss_regs {
	unsigned long x[8];
	unsigned long flags;
};

/*
 * Where a pre_handler sees the PC, from the probe: on s390 the breakpoint
 * is an invalid opcode, whose program check leaves the PSW past its
 * halfword (upstream's kprobe_handler() looks the probe up 2 bytes back).
 */
#ifdef CONFIG_S390
#define SS_PRE_PC_OFFSET	2
#else
#define SS_PRE_PC_OFFSET	0
#endif

/* Read and written by the load and store sites. */
extern unsigned long ss_data;

/* A site's function, which takes its register block, and its probed instruction. */
struct ss_code {
	void (*fn)(struct ss_regs *r);
	const void *probe;
};

/* The sites, in the order of the arch's case list (its enum). */
extern const struct ss_code ss_site_table[];

/* What a site consumes; the other registers get fixed values. */
struct ss_input {
	unsigned long x0, x1, flags;
};

struct ss_site {
	const char *name;
	unsigned int idx;		/* in ss_site_table */
	const struct ss_input *inputs;
	unsigned int ninputs;
	bool branch;			/* over the inputs, x[7] must be 1 and 2 */
	int refused;			/* registration must fail with this errno */
};

/*
 * Run @s unprobed on each input, then probed with a pre_handler and with
 * pre and post handlers; expect the same registers, the flags under
 * @flags_mask and memory, and one handler run per execution at the probe.
 */
void ss_run(struct kunit *test, const struct ss_site *s, unsigned long flags_mask);

#endif /* __ASSEMBLY__ */
#endif /* _STEPSUITE_H */
