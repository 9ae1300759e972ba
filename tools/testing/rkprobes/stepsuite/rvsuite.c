// SPDX-License-Identifier: GPL-2.0
/*
 * rkprobes_rvsuite: KUnit suite of what a kprobe on riscv must not change.
 *
 * One case per site of rvsites.S, run by the step suites' runner
 * (stepsuite.c): one site per instruction class that the riscv kprobes
 * simulate (beq, bne, blt, bge, bltu, bgeu, jal without and with a link,
 * jalr without and with a link, auipc, and the compressed c.j, c.jr,
 * c.jalr, c.beqz, c.bnez) or step out of line (add, the 2-byte c.add, a
 * load, a store), and two they refuse (a CSR read with -EINVAL, an address
 * inside a 4-byte instruction with -EILSEQ). riscv has no flags.
 */
#include <kunit/test.h>
#include <linux/module.h>

#include "stepsuite.h"

/* The order of ss_site_table in rvsites.S. */
enum rs_index {
	RS_IDX_beq,
	RS_IDX_bne,
	RS_IDX_blt,
	RS_IDX_bge,
	RS_IDX_bltu,
	RS_IDX_bgeu,
	RS_IDX_j,
	RS_IDX_jal,
	RS_IDX_jr,
	RS_IDX_jalr,
	RS_IDX_auipc,
	RS_IDX_c_j,
	RS_IDX_c_jr,
	RS_IDX_c_jalr,
	RS_IDX_c_beqz,
	RS_IDX_c_bnez,
	RS_IDX_add,
	RS_IDX_c_add,
	RS_IDX_ld,
	RS_IDX_sd,
	RS_IDX_csrr,
	RS_IDX_mid,
	RS_IDX_count,
};

/* Equal, less and greater, signed and unsigned apart. */
static const struct ss_input rs_in_pair[] = {
	{ .x0 = 1, .x1 = 1 }, { .x0 = 1, .x1 = 2 }, { .x0 = 2, .x1 = 1 },
	{ .x0 = -1UL, .x1 = 1 }, { .x0 = 1, .x1 = -1UL },
};

/* Zero and not. */
static const struct ss_input rs_in_zero[] = {
	{ .x0 = 0 }, { .x0 = 1 }, { .x0 = 0x100000000UL },
};

/* Carry out of the top bit and a plain sum. */
static const struct ss_input rs_in_sum[] = {
	{ .x0 = 0x7fffffffffffffffUL, .x1 = 1 },
	{ .x0 = ~0UL, .x1 = 1 },
	{ .x0 = 0x1234, .x1 = 0x4321 },
};

static const struct ss_input rs_in_one[] = {
	{ .x0 = 0x0123456789abcdefUL, .x1 = 0xfedcba9876543210UL },
};

#define RS_SITE(n, in, br)  { .name = #n, .idx = RS_IDX_##n, .inputs = in, \
			      .ninputs = ARRAY_SIZE(in), .branch = br }
#define RS_REFUSED(n, err)  { .name = #n, .idx = RS_IDX_##n, .inputs = rs_in_one, \
			      .ninputs = ARRAY_SIZE(rs_in_one), .refused = err }

static const struct ss_site rs_sites[] = {
	RS_SITE(beq, rs_in_pair, true),
	RS_SITE(bne, rs_in_pair, true),
	RS_SITE(blt, rs_in_pair, true),
	RS_SITE(bge, rs_in_pair, true),
	RS_SITE(bltu, rs_in_pair, true),
	RS_SITE(bgeu, rs_in_pair, true),
	RS_SITE(j, rs_in_one, false),
	RS_SITE(jal, rs_in_one, false),
	RS_SITE(jr, rs_in_one, false),
	RS_SITE(jalr, rs_in_one, false),
	RS_SITE(auipc, rs_in_one, false),
	RS_SITE(c_j, rs_in_one, false),
	RS_SITE(c_jr, rs_in_one, false),
	RS_SITE(c_jalr, rs_in_one, false),
	RS_SITE(c_beqz, rs_in_zero, true),
	RS_SITE(c_bnez, rs_in_zero, true),
	RS_SITE(add, rs_in_sum, false),
	RS_SITE(c_add, rs_in_sum, false),
	RS_SITE(ld, rs_in_one, false),
	RS_SITE(sd, rs_in_one, false),
	RS_REFUSED(csrr, -EINVAL),
	RS_REFUSED(mid, -EILSEQ),
};

static_assert(ARRAY_SIZE(rs_sites) == RS_IDX_count);

#define RS_CASE_FN(n) \
static void rs_##n(struct kunit *test) { ss_run(test, &rs_sites[RS_IDX_##n], 0); }

RS_CASE_FN(beq)
RS_CASE_FN(bne)
RS_CASE_FN(blt)
RS_CASE_FN(bge)
RS_CASE_FN(bltu)
RS_CASE_FN(bgeu)
RS_CASE_FN(j)
RS_CASE_FN(jal)
RS_CASE_FN(jr)
RS_CASE_FN(jalr)
RS_CASE_FN(auipc)
RS_CASE_FN(c_j)
RS_CASE_FN(c_jr)
RS_CASE_FN(c_jalr)
RS_CASE_FN(c_beqz)
RS_CASE_FN(c_bnez)
RS_CASE_FN(add)
RS_CASE_FN(c_add)
RS_CASE_FN(ld)
RS_CASE_FN(sd)
RS_CASE_FN(csrr)
RS_CASE_FN(mid)

static struct kunit_case rs_cases[] = {
	KUNIT_CASE(rs_beq),
	KUNIT_CASE(rs_bne),
	KUNIT_CASE(rs_blt),
	KUNIT_CASE(rs_bge),
	KUNIT_CASE(rs_bltu),
	KUNIT_CASE(rs_bgeu),
	KUNIT_CASE(rs_j),
	KUNIT_CASE(rs_jal),
	KUNIT_CASE(rs_jr),
	KUNIT_CASE(rs_jalr),
	KUNIT_CASE(rs_auipc),
	KUNIT_CASE(rs_c_j),
	KUNIT_CASE(rs_c_jr),
	KUNIT_CASE(rs_c_jalr),
	KUNIT_CASE(rs_c_beqz),
	KUNIT_CASE(rs_c_bnez),
	KUNIT_CASE(rs_add),
	KUNIT_CASE(rs_c_add),
	KUNIT_CASE(rs_ld),
	KUNIT_CASE(rs_sd),
	KUNIT_CASE(rs_csrr),
	KUNIT_CASE(rs_mid),
	{}
};

static struct kunit_suite rs_suite = {
	.name = "rkprobes_rvsuite",
	.test_cases = rs_cases,
};
kunit_test_suite(rs_suite);

MODULE_DESCRIPTION("riscv kprobes behaviour suite: a probed site behaves as unprobed");
MODULE_LICENSE("GPL");
