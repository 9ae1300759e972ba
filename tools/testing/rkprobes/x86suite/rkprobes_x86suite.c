// SPDX-License-Identifier: GPL-2.0
/*
 * rkprobes_x86suite: KUnit suite of what a kprobe on x86 must not change.
 *
 * Constraints first: only the public API of <linux/kprobes.h>, the
 * kprobes-optimization sysctl and the probed text itself (an optimized probe
 * is a jmp where an int3 probe has its int3), so the same source runs on the C kprobes, on the Rust core with the C x86
 * arch and on the Rust core with the Rust x86 arch. A case must leave
 * interrupts as it found them: the sites that change IF run where that is
 * safe (cli with interrupts on, sti and popf-to-on with them off, each site
 * restores the caller's flags before it returns).
 *
 * One case per site of xs_sites.S, one site per instruction class that the
 * x86 kprobes emulate (jcc, jmp, call, ret, indirect jmp and call, loop*,
 * j*cxz with and without an address-size prefix, cli/sti/pushf/popf),
 * single-step or boost (an ALU instruction, RIP-relative load, store and
 * read-modify-write) or refuse (int3, ud2), and an ENDBR function entry.
 * Each site is run for each of its inputs unprobed, then probed with a
 * pre_handler only (boosted where the instruction can be), with pre and post
 * handlers (never boosted), and optimized where the kernel optimizes it.
 * The registers, the arithmetic flags, IF and DF and the memory the site
 * touches must be those of the unprobed run, and the handlers must run once
 * per execution. Every case prints what it saw as "# <case>: xs: <key>=<v>"
 * lines; xs_optimizable prints which sites were optimized.
 */
#include <kunit/test.h>
#include <linux/delay.h>
#include <linux/fs.h>
#include <linux/irqflags.h>
#include <linux/kallsyms.h>
#include <linux/kprobes.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <asm/ibt.h>
#include <asm/processor-flags.h>

#include "xs.h"

#define XS_NOTE(test, key, fmt, ...) \
	kunit_info(test, "xs: %s=" fmt, key, ##__VA_ARGS__)

#define XS_FLAGS_ARITH	(X86_EFLAGS_CF | X86_EFLAGS_PF | X86_EFLAGS_AF | X86_EFLAGS_ZF | \
			 X86_EFLAGS_SF | X86_EFLAGS_OF)
/* The flags a site's result is compared on. */
#define XS_FLAGS_CMP	(XS_FLAGS_ARITH | X86_EFLAGS_IF | X86_EFLAGS_DF)

#define XS_OPT_SYSCTL	"/proc/sys/debug/kprobes-optimization"
#define XS_JMP32_OPCODE	0xe9
/* Executions of each input in each probed mode. */
#define XS_RUNS		2
/* Seconds to wait for the optimizer. */
#define XS_OPT_WAIT	10
#define XS_RIP_INIT	0x1122334455667788UL

/*
 * Where upstream's kprobe_emulate_loop() differs from the CPU, kept by every
 * implementation (arch/x86/kernel/kprobes/emulate.rs says why): it tests the
 * count before the decrement, so it takes the other path when the count is
 * 1 or 0 (XS_UP_FLIP), and a 32-bit loop keeps bits 63:32 of %rcx where the
 * CPU zeroes them (XS_UP_CX_HI). A probed run must then give the unprobed
 * result with these changes.
 */
#define XS_UP_FLIP	BIT(0)
#define XS_UP_CX_HI	BIT(1)

/* What a site consumes; the other registers get fixed values (xs_exec). */
struct xs_input {
	unsigned long cx, dx, si, di, flags;
	unsigned int upstream;		/* XS_UP_*: upstream's emulation differs */
};

enum xs_marker {
	XS_MARK_NONE,	/* %r8 must stay 0: no fall-through path was run */
	XS_MARK_BOTH,	/* a branch: over the inputs both paths (1 and 2) are taken */
};

struct xs_site {
	const char *name;
	enum xs_index idx;		/* in xs_site_table */
	const struct xs_input *inputs;
	unsigned int ninputs;
	enum xs_marker marker;
	bool irqs_off;			/* run inside local_irq_save() */
	bool r9_flags;			/* %r9 holds pushed flags: compared like flags */
	bool dx_flags;			/* %rdx holds flags to pop: other bits as now */
	bool opt;			/* upstream optimizes a probe here */
	int refused;			/* registration must fail with this errno */
};

static const struct xs_input xs_in_flags[] = {
	{ .flags = 0 },
	{ .flags = X86_EFLAGS_CF },
	{ .flags = X86_EFLAGS_ZF },
	{ .flags = X86_EFLAGS_SF },
	{ .flags = X86_EFLAGS_OF },
	{ .flags = X86_EFLAGS_PF },
	{ .flags = X86_EFLAGS_SF | X86_EFLAGS_OF },
	{ .flags = X86_EFLAGS_CF | X86_EFLAGS_ZF | X86_EFLAGS_DF },
};

static const struct xs_input xs_in_one[] = {
	{ .si = 0x0123456789abcdefUL, .di = 0xfedcba9876543210UL, .flags = X86_EFLAGS_ZF },
};

static const struct xs_input xs_in_loop[] = {
	{ .cx = 5 },
	{ .cx = 1, .upstream = XS_UP_FLIP },
	{ .cx = 0, .upstream = XS_UP_FLIP },
	{ .cx = 0x100000001UL },
};

static const struct xs_input xs_in_loope[] = {
	{ .cx = 5, .flags = X86_EFLAGS_ZF },
	{ .cx = 5 },
	{ .cx = 1, .flags = X86_EFLAGS_ZF, .upstream = XS_UP_FLIP },
	{ .cx = 0x100000001UL, .flags = X86_EFLAGS_ZF },
};

static const struct xs_input xs_in_loopne[] = {
	{ .cx = 5 },
	{ .cx = 5, .flags = X86_EFLAGS_ZF },
	{ .cx = 1, .upstream = XS_UP_FLIP },
	{ .cx = 0x100000001UL },
};

static const struct xs_input xs_in_jcxz[] = {
	{ .cx = 0 }, { .cx = 1 }, { .cx = 0x100000000UL }, { .cx = 0xffffffff00000001UL },
};

/* The counter is %ecx: bits 63:32 must not count. */
static const struct xs_input xs_in_loop32[] = {
	{ .cx = 5 },
	{ .cx = 1, .upstream = XS_UP_FLIP },
	{ .cx = 0x100000001UL, .upstream = XS_UP_FLIP | XS_UP_CX_HI },
	{ .cx = 0x100000000UL, .upstream = XS_UP_FLIP | XS_UP_CX_HI },
	{ .cx = 0x200000005UL, .upstream = XS_UP_CX_HI },
};

static const struct xs_input xs_in_loopne32[] = {
	{ .cx = 5 },
	{ .cx = 0x100000005UL, .flags = X86_EFLAGS_ZF, .upstream = XS_UP_CX_HI },
	{ .cx = 0x100000001UL, .upstream = XS_UP_FLIP | XS_UP_CX_HI },
};

static const struct xs_input xs_in_popf_on[] = {
	{ .dx = X86_EFLAGS_IF },
	{ .dx = X86_EFLAGS_IF | XS_FLAGS_ARITH | X86_EFLAGS_DF },
	{ .dx = X86_EFLAGS_IF | X86_EFLAGS_ZF | X86_EFLAGS_OF, .flags = X86_EFLAGS_CF },
};

static const struct xs_input xs_in_popf_off[] = {
	{ .dx = 0, .flags = XS_FLAGS_ARITH },
	{ .dx = XS_FLAGS_ARITH | X86_EFLAGS_DF },
	{ .dx = X86_EFLAGS_SF | X86_EFLAGS_PF },
};

static const struct xs_input xs_in_alu[] = {
	{ .si = 3, .di = 4 },
	{ .si = 1, .di = 0x7fffffffffffffffUL },
	{ .si = 1, .di = ~0UL, .flags = X86_EFLAGS_SF },
	{ .si = 0x8000000000000000UL, .di = 0x8000000000000000UL, .flags = X86_EFLAGS_DF },
};

static const struct xs_input xs_in_rip[] = {
	{ .si = 0xfeedface12345678UL },
	{ .si = 0xeeddccbbaa998878UL, .flags = XS_FLAGS_ARITH },
};

#define XS_IN(arr)	.inputs = arr, .ninputs = ARRAY_SIZE(arr)
#define XS_SITE(n, ...)	{ .name = #n, .idx = XS_IDX_##n, __VA_ARGS__ }
#define XS_BRANCH(n, in)	XS_SITE(n, XS_IN(in), .marker = XS_MARK_BOTH)

static const struct xs_site xs_sites[] = {
	XS_BRANCH(jz8, xs_in_flags),
	XS_BRANCH(jnz8, xs_in_flags),
	XS_BRANCH(jc8, xs_in_flags),
	XS_BRANCH(jbe8, xs_in_flags),
	XS_BRANCH(jl8, xs_in_flags),
	XS_BRANCH(jg8, xs_in_flags),
	XS_BRANCH(jo8, xs_in_flags),
	XS_BRANCH(js8, xs_in_flags),
	XS_BRANCH(jp8, xs_in_flags),
	XS_BRANCH(jnz32, xs_in_flags),
	XS_BRANCH(jle32, xs_in_flags),
	XS_BRANCH(ja32, xs_in_flags),
	XS_SITE(jmp8, XS_IN(xs_in_one)),
	XS_SITE(jmp8_back, XS_IN(xs_in_one)),
	XS_SITE(jmp32, XS_IN(xs_in_one)),
	XS_SITE(call32, XS_IN(xs_in_one)),
	XS_SITE(call32_next, XS_IN(xs_in_one)),
	XS_SITE(ret, XS_IN(xs_in_one), .opt = true),
	XS_SITE(jmp_rax, XS_IN(xs_in_one), .opt = true),
	XS_SITE(jmp_r11, XS_IN(xs_in_one), .opt = true),
	XS_SITE(call_r10, XS_IN(xs_in_one)),
	XS_BRANCH(loop, xs_in_loop),
	XS_BRANCH(loope, xs_in_loope),
	XS_BRANCH(loopne, xs_in_loopne),
	XS_BRANCH(jrcxz, xs_in_jcxz),
	XS_BRANCH(loop_addr32, xs_in_loop32),
	XS_BRANCH(loopne_addr32, xs_in_loopne32),
	XS_BRANCH(jecxz, xs_in_jcxz),
	XS_SITE(cli, XS_IN(xs_in_flags), .opt = true),
	XS_SITE(sti, XS_IN(xs_in_flags), .irqs_off = true, .r9_flags = true, .opt = true),
	XS_SITE(pushf, XS_IN(xs_in_flags), .r9_flags = true, .opt = true),
	XS_SITE(popf_if_on, XS_IN(xs_in_popf_on), .irqs_off = true, .r9_flags = true,
		.dx_flags = true, .opt = true),
	XS_SITE(popf_if_off, XS_IN(xs_in_popf_off), .r9_flags = true, .dx_flags = true,
		.opt = true),
	XS_SITE(alu, XS_IN(xs_in_alu), .opt = true),
	XS_SITE(rip_load, XS_IN(xs_in_rip), .opt = true),
	XS_SITE(rip_store, XS_IN(xs_in_rip), .opt = true),
	XS_SITE(rip_add, XS_IN(xs_in_rip), .opt = true),
	/* Not optimized: the entry is the prologue, whose pushq 0x48(%rdi) (ff /6) cannot be boosted. */
	XS_SITE(endbr, XS_IN(xs_in_alu)),
	XS_SITE(int3, .refused = -EILSEQ),
	XS_SITE(ud2, .refused = -EILSEQ),
};

/* The probed instruction of @s, NULL for the one probed by symbol. */
static const u8 *xs_probe(const struct xs_site *s)
{
	return xs_site_table[s->idx].probe;
}

static void *xs_fn(const struct xs_site *s)
{
	return xs_site_table[s->idx].fn;
}

/* Where the probe on @s lands: for the one by symbol, past the ENDBR with IBT. */
static const u8 *xs_addr(const struct xs_site *s)
{
	if (xs_probe(s))
		return xs_probe(s);
	return (u8 *)xs_fn(s) + (IS_ENABLED(CONFIG_X86_KERNEL_IBT) ? 4 : 0);
}

static atomic_t xs_pre_hits, xs_post_hits;
static unsigned long xs_pre_ip;

static int xs_pre(struct kprobe *p, struct pt_regs *regs)
{
	atomic_inc(&xs_pre_hits);
	WRITE_ONCE(xs_pre_ip, regs->ip);
	return 0;
}

static void xs_post(struct kprobe *p, struct pt_regs *regs, unsigned long flags)
{
	atomic_inc(&xs_post_hits);
}

static const struct xs_site *xs_find(const char *name)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(xs_sites); i++)
		if (!strcmp(xs_sites[i].name, name))
			return &xs_sites[i];
	return NULL;
}

static void xs_init_kp(const struct xs_site *s, struct kprobe *kp, bool post)
{
	memset(kp, 0, sizeof(*kp));
	if (xs_probe(s))
		kp->addr = (kprobe_opcode_t *)xs_probe(s);
	else
		kp->symbol_name = "xs_site_endbr";
	kp->pre_handler = xs_pre;
	if (post)
		kp->post_handler = xs_post;
}

static int xs_write_file(const char *path, const char *val)
{
	struct file *f = filp_open(path, O_WRONLY, 0);
	loff_t pos = 0;
	ssize_t n;

	if (IS_ERR(f))
		return PTR_ERR(f);
	n = kernel_write(f, val, strlen(val), &pos);
	filp_close(f, NULL);
	return n < 0 ? n : 0;
}

/*
 * Whether the probe at @addr is optimized: its first byte is then the jmp to
 * the detour buffer (an armed int3 probe has int3 there). @orig is the
 * byte before the probe was registered.
 */
static bool xs_text_optimized(const void *addr, u8 orig)
{
	u8 now;

	if (copy_from_kernel_nofault(&now, addr, 1))
		return false;
	return now == XS_JMP32_OPCODE && orig != XS_JMP32_OPCODE;
}

static int xs_set_optimization(struct kunit *test, bool on)
{
	int ret = xs_write_file(XS_OPT_SYSCTL, on ? "1\n" : "0\n");

	KUNIT_EXPECT_EQ_MSG(test, ret, 0, "writing %s", XS_OPT_SYSCTL);
	return ret;
}

/* Run @s once on @in: the registers and flags after it, and xs_rip_data. */
static void xs_exec(const struct xs_site *s, const struct xs_input *in, struct xs_regs *out,
		    unsigned long *mem)
{
	struct xs_regs r = {
		.ax = 0xa0a0a0a0a0a0a0a0UL,
		.cx = in->cx,
		.dx = in->dx,
		.si = in->si,
		.di = in->di,
		.r8 = 0,
		.r9 = 0x9090909090909090UL,
		.r10 = 0x1010101010101010UL,
		.r11 = 0x1111111111111111UL,
	};
	unsigned long irqflags = 0;

	WRITE_ONCE(xs_rip_data, XS_RIP_INIT);
	if (s->irqs_off)
		local_irq_save(irqflags);
	r.flags = (native_save_fl() & ~(XS_FLAGS_ARITH | X86_EFLAGS_DF)) | in->flags;
	if (s->dx_flags)
		r.dx = (native_save_fl() & ~XS_FLAGS_CMP) | in->dx;
	xs_site_table[s->idx].fn(&r);
	if (s->irqs_off)
		local_irq_restore(irqflags);
	*mem = READ_ONCE(xs_rip_data);
	*out = r;
}

/* Expect @got to be @want, the unprobed result of input @i. */
static void xs_compare(struct kunit *test, const struct xs_site *s, const char *mode,
		       unsigned int i, const struct xs_regs *got, unsigned long got_mem,
		       const struct xs_regs *want, unsigned long want_mem)
{
	unsigned long r9_mask = s->r9_flags ? XS_FLAGS_CMP : ~0UL;

#define XS_EXPECT_REG(reg, mask)						\
	KUNIT_EXPECT_EQ_MSG(test, got->reg & (mask), want->reg & (mask),	\
			    "%s %s input %u: %s", s->name, mode, i, #reg)
	XS_EXPECT_REG(ax, ~0UL);
	XS_EXPECT_REG(cx, ~0UL);
	XS_EXPECT_REG(dx, ~0UL);
	XS_EXPECT_REG(si, ~0UL);
	XS_EXPECT_REG(di, ~0UL);
	XS_EXPECT_REG(r8, ~0UL);
	XS_EXPECT_REG(r9, r9_mask);
	XS_EXPECT_REG(r10, ~0UL);
	XS_EXPECT_REG(r11, ~0UL);
	XS_EXPECT_REG(flags, XS_FLAGS_CMP);
#undef XS_EXPECT_REG
	KUNIT_EXPECT_EQ_MSG(test, got_mem, want_mem, "%s %s input %u: memory", s->name, mode, i);
}

enum xs_mode { XS_PRE, XS_PRE_POST, XS_OPTIMIZED };
static const char * const xs_mode_names[] = { "pre", "pre+post", "optimized" };

/* Which sites a pre-handler-only probe was optimized at (xs_survey). */
static bool xs_surveyed, xs_was_optimized[ARRAY_SIZE(xs_sites)];

/*
 * Register a pre-handler probe on every runnable site at once, wait for the
 * optimizer and note which it optimized: one wait for all the sites.
 */
static void xs_survey(struct kunit *test)
{
	bool registered[ARRAY_SIZE(xs_sites)] = {};
	u8 orig[ARRAY_SIZE(xs_sites)] = {};
	unsigned int i, n, tries;
	struct kprobe *kps;
	bool pending;

	if (xs_surveyed)
		return;
	kps = kunit_kcalloc(test, ARRAY_SIZE(xs_sites), sizeof(*kps), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, kps);
	if (xs_set_optimization(test, true))
		return;
	for (i = 0; i < ARRAY_SIZE(xs_sites); i++) {
		if (xs_sites[i].refused)
			continue;
		orig[i] = *xs_addr(&xs_sites[i]);
		xs_init_kp(&xs_sites[i], &kps[i], false);
		registered[i] = !register_kprobe(&kps[i]);
		KUNIT_EXPECT_TRUE_MSG(test, registered[i], "%s: register_kprobe", xs_sites[i].name);
	}
	/* Until every site upstream optimizes is, and one more second for any other. */
	for (tries = 0, pending = true; tries < XS_OPT_WAIT * 10; tries++) {
		msleep(100);
		for (i = 0, n = 0; i < ARRAY_SIZE(xs_sites); i++) {
			xs_was_optimized[i] = registered[i] &&
					      xs_text_optimized(xs_addr(&xs_sites[i]), orig[i]);
			n += xs_sites[i].opt && !xs_was_optimized[i];
		}
		if (!n && pending) {
			pending = false;
			tries = XS_OPT_WAIT * 10 - 10;
		}
	}
	for (i = 0; i < ARRAY_SIZE(xs_sites); i++)
		if (registered[i])
			unregister_kprobe(&kps[i]);
	xs_set_optimization(test, false);
	xs_surveyed = true;
}

static void xs_optimizable(struct kunit *test)
{
	char *yes, *no;
	unsigned int i;

	xs_survey(test);
	yes = kunit_kzalloc(test, 1024, GFP_KERNEL);
	no = kunit_kzalloc(test, 1024, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, yes);
	KUNIT_ASSERT_NOT_NULL(test, no);
	for (i = 0; i < ARRAY_SIZE(xs_sites); i++) {
		const struct xs_site *s = &xs_sites[i];

		if (s->refused)
			continue;
		strlcat(xs_was_optimized[i] ? yes : no, " ", 1024);
		strlcat(xs_was_optimized[i] ? yes : no, s->name, 1024);
		KUNIT_EXPECT_EQ_MSG(test, xs_was_optimized[i], s->opt,
				    "%s: optimized as upstream's can_optimize() decides", s->name);
	}
	XS_NOTE(test, "optimized", "%s", yes);
	XS_NOTE(test, "not_optimized", "%s", no);
}

/* One probed mode of @s: every input XS_RUNS times, checked against @want. */
static void xs_probed(struct kunit *test, const struct xs_site *s, unsigned int idx,
		      enum xs_mode mode, const struct xs_regs *want, const unsigned long *want_mem)
{
	const char *mname = xs_mode_names[mode];
	unsigned long probe, mem;
	unsigned int i, run, tries;
	struct xs_regs got;
	struct kprobe kp;
	char key[64];
	u8 orig;
	int ret;

	snprintf(key, sizeof(key), "%s.%s", s->name, mname);
	if (mode == XS_OPTIMIZED) {
		xs_survey(test);
		if (!xs_was_optimized[idx]) {
			XS_NOTE(test, key, "not optimizable");
			return;
		}
		if (xs_set_optimization(test, true))
			return;
	}
	orig = *xs_addr(s);
	xs_init_kp(s, &kp, mode == XS_PRE_POST);
	ret = register_kprobe(&kp);
	KUNIT_EXPECT_EQ_MSG(test, ret, 0, "%s: register_kprobe", key);
	if (ret) {
		XS_NOTE(test, key, "register_kprobe %d", ret);
		goto out;
	}
	probe = (unsigned long)kp.addr;
	if (mode == XS_OPTIMIZED) {
		bool optimized = false;

		for (tries = 0; !optimized && tries < XS_OPT_WAIT * 10; tries++) {
			msleep(100);
			optimized = xs_text_optimized(kp.addr, orig);
		}
		KUNIT_EXPECT_TRUE_MSG(test, optimized, "%s: not [OPTIMIZED] after %d s", key,
				      XS_OPT_WAIT);
		if (!optimized) {
			XS_NOTE(test, key, "not optimized in time");
			goto unregister;
		}
	}
	atomic_set(&xs_pre_hits, 0);
	atomic_set(&xs_post_hits, 0);
	for (i = 0; i < s->ninputs; i++) {
		const struct xs_input *in = &s->inputs[i];
		struct xs_regs exp = want[i];

		/* Only the int3 path emulates: an optimized probe runs the copy itself. */
		if (mode != XS_OPTIMIZED && (in->upstream & XS_UP_FLIP))
			exp.r8 = 3 - exp.r8;
		if (mode != XS_OPTIMIZED && (in->upstream & XS_UP_CX_HI))
			exp.cx = (in->cx & ~0xffffffffUL) | (exp.cx & 0xffffffffUL);
		for (run = 0; run < XS_RUNS; run++) {
			WRITE_ONCE(xs_pre_ip, 0);
			xs_exec(s, in, &got, &mem);
			xs_compare(test, s, mname, i, &got, mem, &exp, want_mem[i]);
			KUNIT_EXPECT_EQ_MSG(test, READ_ONCE(xs_pre_ip), probe + 1,
					    "%s input %u: regs->ip in the pre_handler", key, i);
		}
	}
	KUNIT_EXPECT_EQ_MSG(test, atomic_read(&xs_pre_hits), s->ninputs * XS_RUNS,
			    "%s: pre_handler runs", key);
	KUNIT_EXPECT_EQ_MSG(test, atomic_read(&xs_post_hits),
			    mode == XS_PRE_POST ? s->ninputs * XS_RUNS : 0,
			    "%s: post_handler runs", key);
	XS_NOTE(test, key, "pre=%d post=%d of %u executions", atomic_read(&xs_pre_hits),
		atomic_read(&xs_post_hits), s->ninputs * XS_RUNS);
unregister:
	unregister_kprobe(&kp);
out:
	if (mode == XS_OPTIMIZED)
		xs_set_optimization(test, false);
}

static void xs_check_site(struct kunit *test, const char *name)
{
	const struct xs_site *s = xs_find(name);
	unsigned long *want_mem;
	struct xs_regs *want;
	char sym[KSYM_SYMBOL_LEN], want_sym[KSYM_SYMBOL_LEN];
	unsigned int i, paths = 0;
	enum xs_mode mode;
	struct kprobe kp;
	int ret;

	KUNIT_ASSERT_NOT_NULL(test, s);
	sprint_symbol_no_offset(sym, (unsigned long)xs_fn(s));
	snprintf(want_sym, sizeof(want_sym), "xs_site_%s [rkprobes_x86sites]", name);
	KUNIT_ASSERT_STREQ_MSG(test, sym, want_sym, "xs_site_table and enum xs_index disagree");
	if (s->refused) {
		memset(&kp, 0, sizeof(kp));
		kp.addr = (kprobe_opcode_t *)xs_probe(s);
		kp.pre_handler = xs_pre;
		/* Disabled: a kernel that wrongly accepts it never arms it. */
		kp.flags = KPROBE_FLAG_DISABLED;
		ret = register_kprobe(&kp);
		XS_NOTE(test, "register", "%d", ret);
		KUNIT_EXPECT_EQ_MSG(test, ret, s->refused, "%s: register_kprobe's errno", name);
		if (!ret)
			unregister_kprobe(&kp);
		return;
	}
	if (!xs_probe(s)) {
		if (!IS_ENABLED(CONFIG_X86_KERNEL_IBT))
			kunit_skip(test, "CONFIG_X86_KERNEL_IBT is off: no ENDBR at function entry");
		KUNIT_ASSERT_TRUE_MSG(test, is_endbr(*(u32 *)xs_fn(s)), "%s starts with ENDBR", name);
		xs_init_kp(s, &kp, false);
		ret = register_kprobe(&kp);
		KUNIT_ASSERT_EQ_MSG(test, ret, 0, "register_kprobe by symbol");
		XS_NOTE(test, "entry_offset", "%ld", (long)((u8 *)kp.addr - (u8 *)xs_fn(s)));
		KUNIT_EXPECT_PTR_EQ_MSG(test, (void *)kp.addr, (void *)xs_addr(s),
					"the probe on the entry lands past ENDBR");
		unregister_kprobe(&kp);
	}

	want = kunit_kcalloc(test, s->ninputs, sizeof(*want), GFP_KERNEL);
	want_mem = kunit_kcalloc(test, s->ninputs, sizeof(*want_mem), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, want);
	KUNIT_ASSERT_NOT_NULL(test, want_mem);
	for (i = 0; i < s->ninputs; i++) {
		xs_exec(s, &s->inputs[i], &want[i], &want_mem[i]);
		if (want[i].r8 == 1 || want[i].r8 == 2)
			paths |= want[i].r8;
	}
	XS_NOTE(test, "paths", "%u", paths);
	for (i = 0; i < s->ninputs; i++)
		if (s->inputs[i].upstream)
			XS_NOTE(test, "upstream_emulation", "input %u:%s%s", i,
				s->inputs[i].upstream & XS_UP_FLIP ?
				" takes the other path (count tested before the decrement)" : "",
				s->inputs[i].upstream & XS_UP_CX_HI ?
				" keeps %rcx bits 63:32" : "");
	if (s->marker == XS_MARK_BOTH)
		KUNIT_EXPECT_EQ_MSG(test, paths, 3U, "%s: the inputs take both paths", name);
	else
		KUNIT_EXPECT_EQ_MSG(test, paths, 0U, "%s: jumped over its fall-through", name);

	for (mode = XS_PRE; mode <= XS_OPTIMIZED; mode++)
		xs_probed(test, s, s - xs_sites, mode, want, want_mem);
}

#define XS_CASE(n)						\
	static void xs_##n(struct kunit *test)			\
	{							\
		xs_check_site(test, #n);			\
	}

XS_CASE(jz8)
XS_CASE(jnz8)
XS_CASE(jc8)
XS_CASE(jbe8)
XS_CASE(jl8)
XS_CASE(jg8)
XS_CASE(jo8)
XS_CASE(js8)
XS_CASE(jp8)
XS_CASE(jnz32)
XS_CASE(jle32)
XS_CASE(ja32)
XS_CASE(jmp8)
XS_CASE(jmp8_back)
XS_CASE(jmp32)
XS_CASE(call32)
XS_CASE(call32_next)
XS_CASE(ret)
XS_CASE(jmp_rax)
XS_CASE(jmp_r11)
XS_CASE(call_r10)
XS_CASE(loop)
XS_CASE(loope)
XS_CASE(loopne)
XS_CASE(jrcxz)
XS_CASE(loop_addr32)
XS_CASE(loopne_addr32)
XS_CASE(jecxz)
XS_CASE(cli)
XS_CASE(sti)
XS_CASE(pushf)
XS_CASE(popf_if_on)
XS_CASE(popf_if_off)
XS_CASE(alu)
XS_CASE(rip_load)
XS_CASE(rip_store)
XS_CASE(rip_add)
XS_CASE(endbr)
XS_CASE(int3)
XS_CASE(ud2)

static struct kunit_case xs_cases[] = {
	KUNIT_CASE(xs_optimizable),
	KUNIT_CASE(xs_jz8),
	KUNIT_CASE(xs_jnz8),
	KUNIT_CASE(xs_jc8),
	KUNIT_CASE(xs_jbe8),
	KUNIT_CASE(xs_jl8),
	KUNIT_CASE(xs_jg8),
	KUNIT_CASE(xs_jo8),
	KUNIT_CASE(xs_js8),
	KUNIT_CASE(xs_jp8),
	KUNIT_CASE(xs_jnz32),
	KUNIT_CASE(xs_jle32),
	KUNIT_CASE(xs_ja32),
	KUNIT_CASE(xs_jmp8),
	KUNIT_CASE(xs_jmp8_back),
	KUNIT_CASE(xs_jmp32),
	KUNIT_CASE(xs_call32),
	KUNIT_CASE(xs_call32_next),
	KUNIT_CASE(xs_ret),
	KUNIT_CASE(xs_jmp_rax),
	KUNIT_CASE(xs_jmp_r11),
	KUNIT_CASE(xs_call_r10),
	KUNIT_CASE(xs_loop),
	KUNIT_CASE(xs_loope),
	KUNIT_CASE(xs_loopne),
	KUNIT_CASE(xs_jrcxz),
	KUNIT_CASE(xs_loop_addr32),
	KUNIT_CASE(xs_loopne_addr32),
	KUNIT_CASE(xs_jecxz),
	KUNIT_CASE(xs_cli),
	KUNIT_CASE(xs_sti),
	KUNIT_CASE(xs_pushf),
	KUNIT_CASE(xs_popf_if_on),
	KUNIT_CASE(xs_popf_if_off),
	KUNIT_CASE(xs_alu),
	KUNIT_CASE(xs_rip_load),
	KUNIT_CASE(xs_rip_store),
	KUNIT_CASE(xs_rip_add),
	KUNIT_CASE(xs_endbr),
	KUNIT_CASE(xs_int3),
	KUNIT_CASE(xs_ud2),
	{}
};

/* Probed modes other than XS_OPTIMIZED run with the optimizer off: never optimized midway. */
static int xs_suite_init(struct kunit_suite *suite)
{
	return xs_write_file(XS_OPT_SYSCTL, "0\n");
}

static void xs_suite_exit(struct kunit_suite *suite)
{
	xs_write_file(XS_OPT_SYSCTL, "1\n");
}

static struct kunit_suite xs_suite = {
	.name = "rkprobes_x86suite",
	.suite_init = xs_suite_init,
	.suite_exit = xs_suite_exit,
	.test_cases = xs_cases,
};
kunit_test_suite(xs_suite);

MODULE_DESCRIPTION("x86 kprobes behaviour suite: probed sites must behave as unprobed");
MODULE_LICENSE("GPL");
