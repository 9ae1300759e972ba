// SPDX-License-Identifier: GPL-2.0
/*
 * rkprobes_ppcsuite: KUnit suite of what a kprobe on ppc64 must not change.
 *
 * One case per site of ppcsites.S, run by the step suites' runner
 * (stepsuite.c): one site per instruction class that the ppc64 kprobes
 * emulate with emulate_step() (add, add., cmpd, a load and a store, b, bl,
 * beq, bdnz, bctr, bctrl, blr, mflr) or step out of line with MSR_SE
 * because emulate_step() declines it (mfspr of the PVR), and three they
 * refuse with -EINVAL (mtmsrd, rfid, an address inside a word). The flags
 * are cr0, loaded with mtcrf and stored with mfcr.
 */
#include <kunit/test.h>
#include <linux/module.h>

#include "stepsuite.h"

/* cr0 (LT, GT, EQ, SO) in the word mfcr stores. */
#define PC_FLAGS_MASK	0xf0000000UL
#define PC_CR0(n)	((unsigned long)(n) << 28)

/* The order of ss_site_table in ppcsites.S. */
enum pc_index {
	PC_IDX_add,
	PC_IDX_add_dot,
	PC_IDX_cmpd,
	PC_IDX_ld,
	PC_IDX_std,
	PC_IDX_b,
	PC_IDX_bl,
	PC_IDX_beq,
	PC_IDX_bdnz,
	PC_IDX_bctr,
	PC_IDX_blr,
	PC_IDX_bctrl,
	PC_IDX_mflr,
	PC_IDX_mfpvr,
	PC_IDX_mtmsrd,
	PC_IDX_rfid,
	PC_IDX_unaligned,
	PC_IDX_count,
};

/* Equal, less and greater, signed and unsigned apart. */
static const struct ss_input pc_in_pair[] = {
	{ .x0 = 1, .x1 = 1 }, { .x0 = 1, .x1 = 2 }, { .x0 = 2, .x1 = 1 },
	{ .x0 = -1UL, .x1 = 1 }, { .x0 = 1, .x1 = -1UL },
};

/* bdnz counts down: to zero and to one. */
static const struct ss_input pc_in_count[] = {
	{ .x0 = 1 }, { .x0 = 2 }, { .x0 = 0x100000001UL },
};

/* Overflow, zero, negative and a plain sum, from different cr0 values. */
static const struct ss_input pc_in_sum[] = {
	{ .x0 = 0x7fffffffffffffffUL, .x1 = 1, .flags = PC_CR0(0) },
	{ .x0 = ~0UL, .x1 = 1, .flags = PC_CR0(2) },
	{ .x0 = 0, .x1 = -2UL, .flags = PC_CR0(4) },
	{ .x0 = 0x1234, .x1 = 0x4321, .flags = PC_CR0(8) },
};

/* One value, and cr0 values that must come through. */
static const struct ss_input pc_in_one[] = {
	{ .x0 = 0x0123456789abcdefUL, .x1 = 0xfedcba9876543210UL, .flags = PC_CR0(0) },
	{ .x0 = 0x0123456789abcdefUL, .x1 = 0xfedcba9876543210UL, .flags = PC_CR0(5) },
	{ .x0 = 0x0123456789abcdefUL, .x1 = 0xfedcba9876543210UL, .flags = PC_CR0(0xa) },
};

#define PC_SITE(n, in, br)  { .name = #n, .idx = PC_IDX_##n, .inputs = in, \
			      .ninputs = ARRAY_SIZE(in), .branch = br }
#define PC_REFUSED(n, err)  { .name = #n, .idx = PC_IDX_##n, .inputs = pc_in_one, \
			      .ninputs = ARRAY_SIZE(pc_in_one), .refused = err }

static const struct ss_site pc_sites[] = {
	PC_SITE(add, pc_in_sum, false),
	PC_SITE(add_dot, pc_in_sum, false),
	PC_SITE(cmpd, pc_in_pair, false),
	PC_SITE(ld, pc_in_one, false),
	PC_SITE(std, pc_in_one, false),
	PC_SITE(b, pc_in_one, false),
	PC_SITE(bl, pc_in_one, false),
	PC_SITE(beq, pc_in_pair, true),
	PC_SITE(bdnz, pc_in_count, true),
	PC_SITE(bctr, pc_in_one, false),
	PC_SITE(blr, pc_in_one, false),
	PC_SITE(bctrl, pc_in_one, false),
	PC_SITE(mflr, pc_in_one, false),
	PC_SITE(mfpvr, pc_in_one, false),
	PC_REFUSED(mtmsrd, -EINVAL),
	PC_REFUSED(rfid, -EINVAL),
	PC_REFUSED(unaligned, -EINVAL),
};

static_assert(ARRAY_SIZE(pc_sites) == PC_IDX_count);

#define PC_CASE_FN(n) \
static void pc_##n(struct kunit *test) { ss_run(test, &pc_sites[PC_IDX_##n], PC_FLAGS_MASK); }

PC_CASE_FN(add)
PC_CASE_FN(add_dot)
PC_CASE_FN(cmpd)
PC_CASE_FN(ld)
PC_CASE_FN(std)
PC_CASE_FN(b)
PC_CASE_FN(bl)
PC_CASE_FN(beq)
PC_CASE_FN(bdnz)
PC_CASE_FN(bctr)
PC_CASE_FN(blr)
PC_CASE_FN(bctrl)
PC_CASE_FN(mflr)
PC_CASE_FN(mfpvr)
PC_CASE_FN(mtmsrd)
PC_CASE_FN(rfid)
PC_CASE_FN(unaligned)

static struct kunit_case pc_cases[] = {
	KUNIT_CASE(pc_add),
	KUNIT_CASE(pc_add_dot),
	KUNIT_CASE(pc_cmpd),
	KUNIT_CASE(pc_ld),
	KUNIT_CASE(pc_std),
	KUNIT_CASE(pc_b),
	KUNIT_CASE(pc_bl),
	KUNIT_CASE(pc_beq),
	KUNIT_CASE(pc_bdnz),
	KUNIT_CASE(pc_bctr),
	KUNIT_CASE(pc_blr),
	KUNIT_CASE(pc_bctrl),
	KUNIT_CASE(pc_mflr),
	KUNIT_CASE(pc_mfpvr),
	KUNIT_CASE(pc_mtmsrd),
	KUNIT_CASE(pc_rfid),
	KUNIT_CASE(pc_unaligned),
	{}
};

static struct kunit_suite pc_suite = {
	.name = "rkprobes_ppcsuite",
	.test_cases = pc_cases,
};
kunit_test_suite(pc_suite);

MODULE_DESCRIPTION("ppc64 kprobes behaviour suite: a probed site behaves as unprobed");
MODULE_LICENSE("GPL");
