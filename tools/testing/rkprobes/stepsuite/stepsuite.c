// SPDX-License-Identifier: GPL-2.0
/*
 * The runner of the step suites (stepsuite.h), built into each arch's suite
 * module. Only the public API of <linux/kprobes.h> is used, so the same
 * source runs on the C kprobes, on the Rust core with the C arch and on the
 * Rust core with the Rust arch.
 *
 * A site runs for each of its inputs unprobed, then probed with a
 * pre_handler, then with pre and post handlers. The eight registers, the
 * flags and the memory the site touches must be those of the unprobed run,
 * every branch must take both of its paths over the inputs, and the
 * handlers must run once per execution with the PC at the probe. Every case
 * prints what it saw as "# <case>: ss: <key>=<v>" lines.
 */
#include <kunit/test.h>
#include <linux/kprobes.h>
#include <linux/slab.h>

#include "stepsuite.h"

#define SS_NOTE(test, key, fmt, ...) \
	kunit_info(test, "ss: %s=" fmt, key, ##__VA_ARGS__)

/* Executions of each input in each probed mode. */
#define SS_RUNS		2
#define SS_DATA_INIT	0x5a5a5a5a5a5a5a5aUL

static atomic_t ss_pre_hits, ss_post_hits;
static unsigned long ss_pre_pc;

static int ss_pre(struct kprobe *p, struct pt_regs *regs)
{
	atomic_inc(&ss_pre_hits);
	WRITE_ONCE(ss_pre_pc, instruction_pointer(regs));
	return 0;
}

static void ss_post(struct kprobe *p, struct pt_regs *regs, unsigned long flags)
{
	atomic_inc(&ss_post_hits);
}

/*
 * Run @s once on @in: the registers and flags after it, and ss_data. Not
 * inlined: a site may read the link register it was called with (the ppc64
 * ones keep it in a register they store), so the probed and the unprobed
 * runs must call it from the same instruction.
 */
static noinline void ss_exec(const struct ss_site *s, const struct ss_input *in, struct ss_regs *out,
		    unsigned long *mem)
{
	struct ss_regs r = {
		.x = { in->x0, in->x1, 0x2222222222222222UL, 0x3333333333333333UL,
		       0x4444444444444444UL, 0x5555555555555555UL, 0x6666666666666666UL, 0 },
		.flags = in->flags,
	};

	WRITE_ONCE(ss_data, SS_DATA_INIT);
	ss_site_table[s->idx].fn(&r);
	*mem = READ_ONCE(ss_data);
	*out = r;
}

/* Expect @got to be @want, the unprobed result of input @i. */
static void ss_compare(struct kunit *test, const struct ss_site *s, const char *mode,
		       unsigned int i, const struct ss_regs *got, unsigned long got_mem,
		       const struct ss_regs *want, unsigned long want_mem, unsigned long flags_mask)
{
	unsigned int r;

	for (r = 0; r < ARRAY_SIZE(got->x); r++)
		KUNIT_EXPECT_EQ_MSG(test, got->x[r], want->x[r], "%s %s input %u: x%u",
				    s->name, mode, i, r);
	KUNIT_EXPECT_EQ_MSG(test, got->flags & flags_mask, want->flags & flags_mask,
			    "%s %s input %u: flags", s->name, mode, i);
	KUNIT_EXPECT_EQ_MSG(test, got_mem, want_mem, "%s %s input %u: memory", s->name, mode, i);
}

/* One probed mode of @s: every input SS_RUNS times, checked against @want. */
static void ss_probed(struct kunit *test, const struct ss_site *s, bool post,
		      const struct ss_regs *want, const unsigned long *want_mem,
		      unsigned long flags_mask)
{
	const char *mode = post ? "pre+post" : "pre";
	const void *probe = ss_site_table[s->idx].probe;
	unsigned int i, run, expected;
	struct ss_regs got;
	unsigned long mem;
	struct kprobe *kp;
	char key[64];
	int ret;

	/*
	 * Not on the stack, and not freed by KUnit: a site that oopses kills
	 * this thread with the probe registered, and the probe must stay valid
	 * memory that no later case's kprobe can share an address with (a
	 * stack one was, and the next case got -EINVAL from register_kprobe()).
	 */
	kp = kzalloc(sizeof(*kp), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, kp);
	kp->addr = (kprobe_opcode_t *)probe;
	kp->pre_handler = ss_pre;
	kp->post_handler = post ? ss_post : NULL;

	snprintf(key, sizeof(key), "%s.%s", s->name, mode);
	ret = register_kprobe(kp);
	if (s->refused) {
		KUNIT_EXPECT_EQ_MSG(test, ret, s->refused, "%s: register_kprobe refused", key);
		SS_NOTE(test, key, "register_kprobe %d", ret);
		if (!ret)
			unregister_kprobe(kp);
		kfree(kp);
		return;
	}
	KUNIT_EXPECT_EQ_MSG(test, ret, 0, "%s: register_kprobe", key);
	if (ret) {
		SS_NOTE(test, key, "register_kprobe %d", ret);
		kfree(kp);
		return;
	}
	atomic_set(&ss_pre_hits, 0);
	atomic_set(&ss_post_hits, 0);
	WRITE_ONCE(ss_pre_pc, 0);
	for (i = 0; i < s->ninputs; i++) {
		for (run = 0; run < SS_RUNS; run++) {
			ss_exec(s, &s->inputs[i], &got, &mem);
			ss_compare(test, s, mode, i, &got, mem, &want[i], want_mem[i], flags_mask);
		}
	}
	unregister_kprobe(kp);
	kfree(kp);
	expected = s->ninputs * SS_RUNS;
	KUNIT_EXPECT_EQ_MSG(test, atomic_read(&ss_pre_hits), expected, "%s: pre_handler runs", key);
	KUNIT_EXPECT_EQ_MSG(test, atomic_read(&ss_post_hits), post ? expected : 0,
			    "%s: post_handler runs", key);
	KUNIT_EXPECT_EQ_MSG(test, READ_ONCE(ss_pre_pc), (unsigned long)probe + SS_PRE_PC_OFFSET,
			    "%s: pc seen by the pre_handler", key);
	SS_NOTE(test, key, "pre=%d post=%d", atomic_read(&ss_pre_hits),
		atomic_read(&ss_post_hits));
}

void ss_run(struct kunit *test, const struct ss_site *s, unsigned long flags_mask)
{
	struct ss_regs *want;
	unsigned long *want_mem;
	bool paths[3] = {};
	unsigned int i;

	want = kunit_kcalloc(test, s->ninputs, sizeof(*want), GFP_KERNEL);
	want_mem = kunit_kcalloc(test, s->ninputs, sizeof(*want_mem), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, want);
	KUNIT_ASSERT_NOT_NULL(test, want_mem);
	if (!s->refused) {
		for (i = 0; i < s->ninputs; i++) {
			ss_exec(s, &s->inputs[i], &want[i], &want_mem[i]);
			if (want[i].x[7] <= 2)
				paths[want[i].x[7]] = true;
		}
		if (s->branch)
			KUNIT_EXPECT_TRUE_MSG(test, paths[1] && paths[2],
					      "%s: the inputs take both paths unprobed", s->name);
		SS_NOTE(test, s->name, "x0=%lx x1=%lx x4=%lx x5=%lx x7=%lx flags=%lx mem=%lx",
			want[0].x[0], want[0].x[1], want[0].x[4], want[0].x[5], want[0].x[7],
			want[0].flags & flags_mask, want_mem[0]);
	}
	ss_probed(test, s, false, want, want_mem, flags_mask);
	ss_probed(test, s, true, want, want_mem, flags_mask);
}
