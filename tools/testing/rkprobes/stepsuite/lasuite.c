// SPDX-License-Identifier: GPL-2.0
/*
 * rkprobes_lasuite: KUnit suite of what a kprobe on loongarch must not change.
 *
 * One case per site of lasites.S, run by the step suites' runner
 * (stepsuite.c): one site per instruction class that the loongarch kprobes
 * simulate (pcaddi, pcaddu12i, pcaddu18i, pcalau12i, b, bl, jirl without a
 * link, with $ra and with another link register, beqz, bnez, beq, bne,
 * blt, bge, bltu, bgeu) or step out of line (add.d, a load, a store), and
 * four they refuse (amswap.d, ll.d and bceqz with -EINVAL, an address that
 * is not a multiple of 4 with -EILSEQ). loongarch has no integer flags:
 * its condition flags ($fcc) belong to the FPU, which no site uses.
 */
#include <kunit/test.h>
#include <linux/module.h>

#include "stepsuite.h"

/* The order of ss_site_table in lasites.S. */
enum ls_index {
	LS_IDX_pcaddi,
	LS_IDX_pcaddu12i,
	LS_IDX_pcaddu18i,
	LS_IDX_pcalau12i,
	LS_IDX_b,
	LS_IDX_bl,
	LS_IDX_jr,
	LS_IDX_jirl,
	LS_IDX_jirl_a6,
	LS_IDX_beqz,
	LS_IDX_bnez,
	LS_IDX_beq,
	LS_IDX_bne,
	LS_IDX_blt,
	LS_IDX_bge,
	LS_IDX_bltu,
	LS_IDX_bgeu,
	LS_IDX_add,
	LS_IDX_ld,
	LS_IDX_st,
	LS_IDX_amswap,
	LS_IDX_ll,
	LS_IDX_bceqz,
	LS_IDX_mid,
	LS_IDX_count,
};

/* Equal, less and greater, signed and unsigned apart. */
static const struct ss_input ls_in_pair[] = {
	{ .x0 = 1, .x1 = 1 }, { .x0 = 1, .x1 = 2 }, { .x0 = 2, .x1 = 1 },
	{ .x0 = -1UL, .x1 = 1 }, { .x0 = 1, .x1 = -1UL },
};

/* Zero and not. */
static const struct ss_input ls_in_zero[] = {
	{ .x0 = 0 }, { .x0 = 1 }, { .x0 = 0x100000000UL },
};

/* Carry out of the top bit and a plain sum. */
static const struct ss_input ls_in_sum[] = {
	{ .x0 = 0x7fffffffffffffffUL, .x1 = 1 },
	{ .x0 = ~0UL, .x1 = 1 },
	{ .x0 = 0x1234, .x1 = 0x4321 },
};

static const struct ss_input ls_in_one[] = {
	{ .x0 = 0x0123456789abcdefUL, .x1 = 0xfedcba9876543210UL },
};

#define LS_SITE(n, in, br)  { .name = #n, .idx = LS_IDX_##n, .inputs = in, \
			      .ninputs = ARRAY_SIZE(in), .branch = br }
#define LS_REFUSED(n, err)  { .name = #n, .idx = LS_IDX_##n, .inputs = ls_in_one, \
			      .ninputs = ARRAY_SIZE(ls_in_one), .refused = err }

static const struct ss_site ls_sites[] = {
	LS_SITE(pcaddi, ls_in_one, false),
	LS_SITE(pcaddu12i, ls_in_one, false),
	LS_SITE(pcaddu18i, ls_in_one, false),
	LS_SITE(pcalau12i, ls_in_one, false),
	LS_SITE(b, ls_in_one, false),
	LS_SITE(bl, ls_in_one, false),
	LS_SITE(jr, ls_in_one, false),
	LS_SITE(jirl, ls_in_one, false),
	LS_SITE(jirl_a6, ls_in_one, false),
	LS_SITE(beqz, ls_in_zero, true),
	LS_SITE(bnez, ls_in_zero, true),
	LS_SITE(beq, ls_in_pair, true),
	LS_SITE(bne, ls_in_pair, true),
	LS_SITE(blt, ls_in_pair, true),
	LS_SITE(bge, ls_in_pair, true),
	LS_SITE(bltu, ls_in_pair, true),
	LS_SITE(bgeu, ls_in_pair, true),
	LS_SITE(add, ls_in_sum, false),
	LS_SITE(ld, ls_in_one, false),
	LS_SITE(st, ls_in_one, false),
	LS_REFUSED(amswap, -EINVAL),
	LS_REFUSED(ll, -EINVAL),
	LS_REFUSED(bceqz, -EINVAL),
	LS_REFUSED(mid, -EILSEQ),
};

static_assert(ARRAY_SIZE(ls_sites) == LS_IDX_count);

#define LS_CASE_FN(n) \
static void ls_##n(struct kunit *test) { ss_run(test, &ls_sites[LS_IDX_##n], 0); }

LS_CASE_FN(pcaddi)
LS_CASE_FN(pcaddu12i)
LS_CASE_FN(pcaddu18i)
LS_CASE_FN(pcalau12i)
LS_CASE_FN(b)
LS_CASE_FN(bl)
LS_CASE_FN(jr)
LS_CASE_FN(jirl)
LS_CASE_FN(jirl_a6)
LS_CASE_FN(beqz)
LS_CASE_FN(bnez)
LS_CASE_FN(beq)
LS_CASE_FN(bne)
LS_CASE_FN(blt)
LS_CASE_FN(bge)
LS_CASE_FN(bltu)
LS_CASE_FN(bgeu)
LS_CASE_FN(add)
LS_CASE_FN(ld)
LS_CASE_FN(st)
LS_CASE_FN(amswap)
LS_CASE_FN(ll)
LS_CASE_FN(bceqz)
LS_CASE_FN(mid)

static struct kunit_case ls_cases[] = {
	KUNIT_CASE(ls_pcaddi),
	KUNIT_CASE(ls_pcaddu12i),
	KUNIT_CASE(ls_pcaddu18i),
	KUNIT_CASE(ls_pcalau12i),
	KUNIT_CASE(ls_b),
	KUNIT_CASE(ls_bl),
	KUNIT_CASE(ls_jr),
	KUNIT_CASE(ls_jirl),
	KUNIT_CASE(ls_jirl_a6),
	KUNIT_CASE(ls_beqz),
	KUNIT_CASE(ls_bnez),
	KUNIT_CASE(ls_beq),
	KUNIT_CASE(ls_bne),
	KUNIT_CASE(ls_blt),
	KUNIT_CASE(ls_bge),
	KUNIT_CASE(ls_bltu),
	KUNIT_CASE(ls_bgeu),
	KUNIT_CASE(ls_add),
	KUNIT_CASE(ls_ld),
	KUNIT_CASE(ls_st),
	KUNIT_CASE(ls_amswap),
	KUNIT_CASE(ls_ll),
	KUNIT_CASE(ls_bceqz),
	KUNIT_CASE(ls_mid),
	{}
};

static struct kunit_suite ls_suite = {
	.name = "rkprobes_lasuite",
	.test_cases = ls_cases,
};
kunit_test_suite(ls_suite);

MODULE_DESCRIPTION("loongarch kprobes behaviour suite: a probed site behaves as unprobed");
MODULE_LICENSE("GPL");
