// SPDX-License-Identifier: GPL-2.0
/*
 * rkprobes_a64suite: KUnit suite of what a kprobe on arm64 must not change.
 *
 * One case per site of a64sites.S, run by the step suites' runner
 * (stepsuite.c): one site per instruction class that the arm64 kprobes
 * simulate (b.cond under nine conditions, cbz, cbnz on a W register, tbz,
 * tbnz, adr, adrp, b, bl, br, blr, ret, ldr (literal) of an X and a W
 * register, ldrsw (literal)) or step out of line (add, adds, a load, a
 * store), and one they refuse (inside an exclusive sequence). The flags
 * compared are NZCV.
 */
#include <kunit/test.h>
#include <linux/module.h>

#include "stepsuite.h"

/* The NZCV bits of PSTATE. */
#define AS_NZCV_MASK	0xf0000000UL
#define AS_N		0x80000000UL
#define AS_Z		0x40000000UL
#define AS_C		0x20000000UL
#define AS_V		0x10000000UL

/* The order of ss_site_table in a64sites.S. */
enum as_index {
	AS_IDX_beq,
	AS_IDX_bne,
	AS_IDX_bcs,
	AS_IDX_bmi,
	AS_IDX_bvs,
	AS_IDX_bhi,
	AS_IDX_bge,
	AS_IDX_bgt,
	AS_IDX_ble,
	AS_IDX_cbz,
	AS_IDX_cbnz_w,
	AS_IDX_tbz,
	AS_IDX_tbnz,
	AS_IDX_adr,
	AS_IDX_adrp,
	AS_IDX_b,
	AS_IDX_bl,
	AS_IDX_br,
	AS_IDX_blr,
	AS_IDX_ret,
	AS_IDX_ldr_lit_x,
	AS_IDX_ldr_lit_w,
	AS_IDX_ldrsw_lit,
	AS_IDX_add,
	AS_IDX_adds,
	AS_IDX_ldr,
	AS_IDX_str,
	AS_IDX_in_atomic,
	AS_IDX_count,
};

/* Every combination of the four flags. */
static const struct ss_input as_in_flags[] = {
	{ .flags = 0 }, { .flags = AS_V }, { .flags = AS_C }, { .flags = AS_C | AS_V },
	{ .flags = AS_Z }, { .flags = AS_Z | AS_V }, { .flags = AS_Z | AS_C },
	{ .flags = AS_Z | AS_C | AS_V }, { .flags = AS_N }, { .flags = AS_N | AS_V },
	{ .flags = AS_N | AS_C }, { .flags = AS_N | AS_C | AS_V }, { .flags = AS_N | AS_Z },
	{ .flags = AS_N | AS_Z | AS_V }, { .flags = AS_N | AS_Z | AS_C },
	{ .flags = AS_N | AS_Z | AS_C | AS_V },
};

/* Zero and not in X, zero in W only, bit 3 and bit 40 each set and clear. */
static const struct ss_input as_in_x0[] = {
	{ .x0 = 0 }, { .x0 = 1 }, { .x0 = 0x100000000UL }, { .x0 = 8 },
	{ .x0 = 1UL << 40 }, { .x0 = ~0UL },
};

/* Carry, overflow and a plain sum. */
static const struct ss_input as_in_sum[] = {
	{ .x0 = 0x7fffffffffffffffUL, .x1 = 1, .flags = AS_Z },
	{ .x0 = ~0UL, .x1 = 1 },
	{ .x0 = 0x1234, .x1 = 0x4321, .flags = AS_N | AS_C },
};

static const struct ss_input as_in_one[] = {
	{ .x0 = 0x0123456789abcdefUL, .x1 = 0xfedcba9876543210UL, .flags = AS_Z | AS_C },
};

#define AS_SITE(n, in, br)  { .name = #n, .idx = AS_IDX_##n, .inputs = in, \
			      .ninputs = ARRAY_SIZE(in), .branch = br }

static const struct ss_site as_sites[] = {
	AS_SITE(beq, as_in_flags, true),
	AS_SITE(bne, as_in_flags, true),
	AS_SITE(bcs, as_in_flags, true),
	AS_SITE(bmi, as_in_flags, true),
	AS_SITE(bvs, as_in_flags, true),
	AS_SITE(bhi, as_in_flags, true),
	AS_SITE(bge, as_in_flags, true),
	AS_SITE(bgt, as_in_flags, true),
	AS_SITE(ble, as_in_flags, true),
	AS_SITE(cbz, as_in_x0, true),
	AS_SITE(cbnz_w, as_in_x0, true),
	AS_SITE(tbz, as_in_x0, true),
	AS_SITE(tbnz, as_in_x0, true),
	AS_SITE(adr, as_in_one, false),
	AS_SITE(adrp, as_in_one, false),
	AS_SITE(b, as_in_one, false),
	AS_SITE(bl, as_in_one, false),
	AS_SITE(br, as_in_one, false),
	AS_SITE(blr, as_in_one, false),
	AS_SITE(ret, as_in_one, false),
	AS_SITE(ldr_lit_x, as_in_one, false),
	AS_SITE(ldr_lit_w, as_in_one, false),
	AS_SITE(ldrsw_lit, as_in_one, false),
	AS_SITE(add, as_in_sum, false),
	AS_SITE(adds, as_in_sum, false),
	AS_SITE(ldr, as_in_one, false),
	AS_SITE(str, as_in_one, false),
	{ .name = "in_atomic", .idx = AS_IDX_in_atomic, .inputs = as_in_one,
	  .ninputs = ARRAY_SIZE(as_in_one), .refused = -EINVAL },
};

static_assert(ARRAY_SIZE(as_sites) == AS_IDX_count);

#define AS_CASE_FN(n) \
static void as_##n(struct kunit *test) { ss_run(test, &as_sites[AS_IDX_##n], AS_NZCV_MASK); }

AS_CASE_FN(beq)
AS_CASE_FN(bne)
AS_CASE_FN(bcs)
AS_CASE_FN(bmi)
AS_CASE_FN(bvs)
AS_CASE_FN(bhi)
AS_CASE_FN(bge)
AS_CASE_FN(bgt)
AS_CASE_FN(ble)
AS_CASE_FN(cbz)
AS_CASE_FN(cbnz_w)
AS_CASE_FN(tbz)
AS_CASE_FN(tbnz)
AS_CASE_FN(adr)
AS_CASE_FN(adrp)
AS_CASE_FN(b)
AS_CASE_FN(bl)
AS_CASE_FN(br)
AS_CASE_FN(blr)
AS_CASE_FN(ret)
AS_CASE_FN(ldr_lit_x)
AS_CASE_FN(ldr_lit_w)
AS_CASE_FN(ldrsw_lit)
AS_CASE_FN(add)
AS_CASE_FN(adds)
AS_CASE_FN(ldr)
AS_CASE_FN(str)
AS_CASE_FN(in_atomic)

static struct kunit_case as_cases[] = {
	KUNIT_CASE(as_beq),
	KUNIT_CASE(as_bne),
	KUNIT_CASE(as_bcs),
	KUNIT_CASE(as_bmi),
	KUNIT_CASE(as_bvs),
	KUNIT_CASE(as_bhi),
	KUNIT_CASE(as_bge),
	KUNIT_CASE(as_bgt),
	KUNIT_CASE(as_ble),
	KUNIT_CASE(as_cbz),
	KUNIT_CASE(as_cbnz_w),
	KUNIT_CASE(as_tbz),
	KUNIT_CASE(as_tbnz),
	KUNIT_CASE(as_adr),
	KUNIT_CASE(as_adrp),
	KUNIT_CASE(as_b),
	KUNIT_CASE(as_bl),
	KUNIT_CASE(as_br),
	KUNIT_CASE(as_blr),
	KUNIT_CASE(as_ret),
	KUNIT_CASE(as_ldr_lit_x),
	KUNIT_CASE(as_ldr_lit_w),
	KUNIT_CASE(as_ldrsw_lit),
	KUNIT_CASE(as_add),
	KUNIT_CASE(as_adds),
	KUNIT_CASE(as_ldr),
	KUNIT_CASE(as_str),
	KUNIT_CASE(as_in_atomic),
	{}
};

static struct kunit_suite as_suite = {
	.name = "rkprobes_a64suite",
	.test_cases = as_cases,
};
kunit_test_suite(as_suite);

MODULE_DESCRIPTION("arm64 kprobes behaviour suite: a probed site behaves as unprobed");
MODULE_LICENSE("GPL");
