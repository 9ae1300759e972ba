// SPDX-License-Identifier: GPL-2.0
/*
 * rkprobes_conformance: KUnit suite that runs unchanged on upstream's C
 * kprobes core (CONFIG_KPROBES_RUST=n) and on the Rust core (=y) and asserts
 * upstream C's behaviour on both.
 *
 * Constraints first: only the public API of <linux/kprobes.h> and the
 * user-visible files (kprobes/list, kprobes/enabled, the
 * kprobes-optimization sysctl, tracefs kprobe_events); no internals, so the
 * very same module source tests both cores. Every observed value is also
 * printed as a transcript line "# <case>: rkc: <key>=<value>" (addresses
 * masked as ADDR) and `scripts/rkprobes test` diffs the C transcript against
 * the Rust one, so a difference is named even where C's value is not
 * asserted. The initramfs of the `run` kernel provides busybox (for the
 * files, see rkc_util.c) and the target module rkprobes_conf_target.ko.
 * The suite turns the optimizer off (sysctl 0) while it runs, so that no
 * list line depends on when the optimizer ran; only rkc_optimized turns it
 * on. A probe that is expected to be refused is registered with
 * KPROBE_FLAG_DISABLED, so that a core that wrongly accepts it never arms it.
 *
 * Cases, and what each proves:
 *
 * rkc_kprobe_errnos - register_kprobe()'s errno for each bad input C checks:
 *	both or neither of symbol_name/addr (-EINVAL), unknown symbol and an
 *	address no symbol covers (-ENOENT), an offset inside an instruction or
 *	inside ENDBR (-EILSEQ on x86; each arch's errno in rkc.h), and every
 *	refused site: this module's NOKPROBE_SYMBOL and .kprobes.text
 *	functions, the core's own hit path (get_kprobe,
 *	kprobes_inc_nmissed_count, opt_pre_handler, dump_kprobe,
 *	kprobe_exceptions_notify), the arch's breakpoint handler (x86's
 *	kprobe_int3_handler), entry text, noinstr text, a __pfx_ preamble, a BUG/WARN ud2 (-EINVAL); that a
 *	function C does not blacklist (kprobe_busy_begin) is accepted; that
 *	p->addr keeps the resolved address after a failure.
 * rkc_kretprobe_errnos - the same for register_kretprobe(), plus
 *	not-a-function-entry (-EINVAL), data_size > 4096 (-E2BIG), 4096 accepted,
 *	x86's kretprobe blacklist (__switch_to: -EINVAL, but accepted with IBT,
 *	an upstream quirk kept as C's behaviour), ENDBR+4 is an entry,
 *	register_k(ret)probes() with num <= 0 (-EINVAL).
 * rkc_register_fields - what registration writes: flags keep only
 *	KPROBE_FLAG_DISABLED (plus ON_FUNC_ENTRY at an entry), nmissed reset, a
 *	probe registered disabled is not hit until enabled; a kretprobe's
 *	post_handler is cleared, its maxactive <= 0 becomes
 *	max(10, 2 * possible CPUs), its nmissed counters are reset.
 * rkc_reregister - the same struct registered twice gives -EINVAL (by
 *	address, by symbol, kprobe and kretprobe) and stays registered once;
 *	unregistering leaves KPROBE_FLAG_DISABLED in flags, so registered again
 *	it is disabled until enable_kprobe().
 * rkc_unregister_big_batch - unregister_kprobes() of 2100 probes (the Rust
 *	core looks the hash entries of a batch of 2048 or more up in an index),
 *	with one of them given again at the end and a never-registered probe at
 *	the address of another: the n - 1 keep addr, the two others get NULL,
 *	nothing hits after, and an address of the batch takes a probe again.
 * rkc_unregister_unregistered - unregistering a never-registered kprobe
 *	sets addr to NULL and is harmless, also when another probe sits at that
 *	address and inside a batch; enable/disable of it give -EINVAL;
 *	unregistering twice is harmless.
 * rkc_unregister_unregistered_kretprobe - the same for a kretprobe; only on
 *	the Rust core (upstream C dereferences a NULL rethook there).
 * rkc_batch_rollback - register_kprobes()/register_kretprobes() with a bad
 *	entry in the middle return its errno and unregister the earlier ones;
 *	later ones are left untouched.
 * rkc_batch_ftrace - register_kprobes() of probes on ftrace sites (the Rust
 *	core adds them to ftrace's filter at once) leaves what the same probes
 *	registered one by one leave; an unknown symbol first, in the middle or
 *	last, and the same struct twice, roll back as C does; a batch whose
 *	only probe with a post_handler (the first user of kprobes' IPMODIFY
 *	ops) sits on a function another IPMODIFY ftrace user (this module's,
 *	as a livepatch would) holds fails with C's -EBUSY, rolled back, nothing
 *	fires; freed, the function takes the batch.
 * rkc_three_probes - three probes at one address (an aggregate): handler
 *	counts and call order, list lines and order, one disabled, the middle
 *	one unregistered, all disabled, one re-enabled, one added disabled.
 * rkc_recursion_nmissed - a probe whose handler calls probed functions: the
 *	inner int3, ftrace and kretprobe probes are not run and count nmissed
 *	(every child of an aggregate); called directly they run.
 * rkc_missed_by_cause - issue 40, only on the Rust core (C has no such
 *	file): debugfs kprobes/missed lists each probe that missed with its
 *	misses by cause, which add up to its nmissed (a kretprobe's
 *	rp->kp.nmissed + rp->nmissed, as trace_kprobe adds them): recursion
 *	(int3, ftrace and kretprobe probes hit from another probe's handler,
 *	every child of an aggregate) and no free instance (maxactive 1 and a
 *	recursive function); a probe that never missed is not listed.
 * rkc_kretprobe_pool - maxactive 1 and a recursive function: the pool runs
 *	out, rp->nmissed counts the misses, the outermost return is seen.
 * rkc_kretprobe_grow - issue 40, only on the Rust core (C ignores
 *	grow_max), on its rethook and objpool paths alike: a grow_max below 0
 *	or above OBJPOOL_NR_OBJECT_MAX is -EINVAL; one at most maxactive keeps
 *	the fixed pool; maxactive 1 with grow_max 8 and a recursive function:
 *	once its worker has run, depths that missed return without a miss,
 *	until the cap, beyond which each call misses what exceeds it;
 *	kprobes/missed counts them all as no_instance.
 * rkc_kretprobe_data - data_size (the maximum, 4096) reaches the handlers:
 *	the entry handler writes ri->data, the return handler reads it back.
 * rkc_kretprobe_entry_fail - an entry_handler returning non-zero suppresses
 *	the return handler and counts no miss.
 * rkc_list_tags - kprobes/list lines: plain, [DISABLED], [FTRACE], a
 *	kretprobe's "r" line, and [DISABLED][FTRACE].
 * rkc_optimized - the kprobes-optimization sysctl removes and restores
 *	[OPTIMIZED]; an optimized probe still runs its handler; a second probe
 *	with a post_handler unoptimizes, its removal re-optimizes.
 * rkc_enabled - kprobes/enabled 0/1: no hits while disarmed (int3 and
 *	ftrace probes), a probe registered while disarmed is not armed, all hit
 *	again after writing 1.
 * rkc_module_gone - probes in a module that is unloaded become [GONE] (also
 *	[GONE][FTRACE]), enable_kprobe() on them gives -EINVAL, the freed address
 *	gives -ENOENT, they unregister cleanly and the reloaded module is
 *	probeable again.
 * rkc_module_init_gone - a module that probes its own init text from its
 *	init (by address and by name, each probe hit once) finds both probes
 *	GONE once its init has returned (MODULE_STATE_LIVE), and unloads
 *	cleanly; on ppc64, whose modules keep their init text
 *	(RKC_MODULE_INIT_FREED), neither is GONE, as on C.
 * rkc_kprobe_events - tracefs p: and r: kprobe events: defined (list shows
 *	[DISABLED]), enabled, fired with their fetch args, removed.
 * rkc_optimized_kernel_text - powerpc optimizes only kernel text, so there
 *	rkc_optimized is skipped and this case probes vmlinux: the first offset
 *	of vfs_read from +8 (past the ELFv2 TOC setup) that the optimizer takes
 *	(an instruction it can emulate without memory) shows [OPTIMIZED], its
 *	handler runs on a read(2) through the detour, and the sysctl takes
 *	[OPTIMIZED] off and puts it back. The same offset on C and Rust.
 * rkc_optprobe_blocked_retry - upstream fix f76d1c41b609 (in both cores): an
 *	optimized probe B, a probe P under B's jump (B goes back to int3 and is
 *	blocked, P is optimized), P unregistered: B is optimized again once the
 *	optimizer frees P (6.12 left B an int3 for good).
 * rkc_ftrace_aggr_gains_post_handler - issue 41: a probe without a
 *	post_handler on an ftrace site (armed on kprobe_ftrace_ops), then one
 *	with a post_handler joining it: kprobes/enabled 0 and 1 succeed (three
 *	times), no handler runs while disarmed and all run after, and the two
 *	unregister leaving nothing listed. Only on the Rust core: upstream 6.12
 *	disarms the aggregate through kprobe_ipmodify_ops, where it never was
 *	(-ENOENT and a WARN; docs/findings/ftrace-aggregate-disarm.md).
 * rkc_blacklist_inside_symbol - the blacklist fix posted in April 2026 (in
 *	both cores): this module's _kprobe_blacklist entry inside rkc_f_bl_inner
 *	adds no range (6.12 added one running into rkc_f_bl_next, which it then
 *	refused).
 *
 * scripts/rkprobes test also compares what the kernel log says during each
 * case (the lines between two KTAP results): the `kprobes: ` lines, and WARN
 * splats reduced to the kernel/kprobes.c function that holds the WARN.
 * rkc_reregister provokes warn_kprobe_rereg()'s WARN_ON_ONCE (the same
 * struct registered twice by address), rkc_enabled and rkc_optimized the
 * messages of kprobes/enabled and of the optimization sysctl.
 */
#include <linux/delay.h>
#include <linux/ftrace.h>
#include <linux/kallsyms.h>
#include <linux/kernel.h>
#include <linux/kprobes.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <asm/ptrace.h>
#ifdef CONFIG_X86
#include <asm/ibt.h>
#endif
#ifdef CONFIG_PPC64_ELF_ABI_V2
#include <asm/code-patching.h>
#endif

#include "rkc.h"

/* ------------------------------------------------------------------ */
/* Probes that count their hits. */

struct rkc_kp {
	struct kprobe kp;
	unsigned int pre, post;
	char tag;		/* appended to rkc_order on every pre_handler run */
};

static char rkc_order[32];
static unsigned int rkc_order_len;

static int rkc_pre(struct kprobe *p, struct pt_regs *regs)
{
	struct rkc_kp *k = container_of(p, struct rkc_kp, kp);

	k->pre++;
	if (k->tag && rkc_order_len < sizeof(rkc_order) - 1)
		rkc_order[rkc_order_len++] = k->tag;
	return 0;
}

static void rkc_post(struct kprobe *p, struct pt_regs *regs, unsigned long flags)
{
	container_of(p, struct rkc_kp, kp)->post++;
}

static struct rkc_kp *rkc_kp_new(struct kunit *test, const char *sym, void *addr,
				 unsigned int offset, bool post)
{
	struct rkc_kp *k = kunit_kzalloc(test, sizeof(*k), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, k);
	k->kp.symbol_name = sym;
	k->kp.addr = addr;
	k->kp.offset = offset;
	k->kp.pre_handler = rkc_pre;
	if (post)
		k->kp.post_handler = rkc_post;
	return k;
}

static void rkc_order_reset(void)
{
	memset(rkc_order, 0, sizeof(rkc_order));
	rkc_order_len = 0;
}

#define RKC_MAGIC	0x726b635f64617461UL	/* "rkc_data" */
#define RKC_MAX_VALS	8

struct rkc_krp {
	struct kretprobe rp;
	unsigned int entry, ret, data_ok;
	bool fail_odd;		/* entry_handler returns its argument & 1 */
	long vals[RKC_MAX_VALS];	/* return values seen by the handler */
	unsigned int nvals;
};

static struct rkc_krp *rkc_of(struct kretprobe_instance *ri)
{
	return container_of(get_kretprobe(ri), struct rkc_krp, rp);
}

static int rkc_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct rkc_krp *k = rkc_of(ri);
	long arg = (long)RKC_ARG0(regs);

	k->entry++;
	if (k->rp.data_size >= 2 * sizeof(long)) {
		*(long *)ri->data = arg;
		*(unsigned long *)(ri->data + k->rp.data_size - sizeof(long)) = RKC_MAGIC;
	}
	return k->fail_odd ? (int)(arg & 1) : 0;
}

static int rkc_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct rkc_krp *k = rkc_of(ri);
	long rv = (long)regs_return_value(regs);

	k->ret++;
	if (k->nvals < RKC_MAX_VALS)
		k->vals[k->nvals++] = rv;
	if (k->rp.data_size >= 2 * sizeof(long) &&
	    *(long *)ri->data + 1 == rv &&
	    *(unsigned long *)(ri->data + k->rp.data_size - sizeof(long)) == RKC_MAGIC)
		k->data_ok++;
	return 0;
}

static struct rkc_krp *rkc_krp_new(struct kunit *test, const char *sym, void *addr,
				   unsigned int offset, bool entry)
{
	struct rkc_krp *k = kunit_kzalloc(test, sizeof(*k), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, k);
	k->rp.kp.symbol_name = sym;
	k->rp.kp.addr = addr;
	k->rp.kp.offset = offset;
	k->rp.handler = rkc_ret;
	if (entry)
		k->rp.entry_handler = rkc_entry;
	return k;
}

static char *rkc_vals(struct kunit *test, struct rkc_krp *k)
{
	char *s = rkc_fmt(test, "%s", "");
	unsigned int i;

	for (i = 0; i < k->nvals; i++)
		s = rkc_fmt(test, "%s%s%ld", s, i ? "," : "", k->vals[i]);
	return s;
}

/*
 * The offset a probe on the symbol @fn+0 lands at: x86 puts it after ENDBR,
 * ELFv2 powerpc at the local entry point (past the TOC setup).
 */
static unsigned long rkc_entry_off(void *fn)
{
#if defined(CONFIG_X86_KERNEL_IBT)
	if (is_endbr(*(u32 *)fn))
		return 4;
#elif defined(CONFIG_PPC64_ELF_ABI_V2)
	return ppc_function_entry(fn) - (unsigned long)fn;
#endif
	return 0;
}

static int rkc_nop_off(struct kunit *test, void *fn)
{
	int off = rkc_nop8_offset(fn);

	KUNIT_ASSERT_GE_MSG(test, off, 0, "no 8-byte NOP found in %ps", fn);
	return off;
}

static unsigned long rkc_off(const struct kprobe *kp, void *fn)
{
	return (unsigned long)kp->addr - (unsigned long)fn;
}

#define RKC_LIST(test, key, addr, expected) \
	RKC_EXPECT_STR(test, key, rkc_list_at(test, addr), expected)

static char *rkc_join(struct kunit *test, const char *a, const char *b)
{
	return rkc_fmt(test, "%s|%s", a, b);
}

/* ------------------------------------------------------------------ */
/* Bad input. */

/* Register a probe that must be refused; disabled, so that a wrong success never arms it. */
static int rkc_refuse_kp(struct kunit *test, const char *key, struct kprobe *kp, int expected)
{
	int ret;

	kp->flags |= KPROBE_FLAG_DISABLED;
	ret = register_kprobe(kp);
	RKC_EXPECT_INT(test, key, ret, expected);
	if (!ret)
		unregister_kprobe(kp);
	return ret;
}

static int rkc_refuse_krp(struct kunit *test, const char *key, struct kretprobe *rp,
			  int expected)
{
	int ret;

	rp->kp.flags |= KPROBE_FLAG_DISABLED;
	ret = register_kretprobe(rp);
	RKC_EXPECT_INT(test, key, ret, expected);
	if (!ret)
		unregister_kretprobe(rp);
	return ret;
}

static void rkc_kprobe_errnos(struct kunit *test)
{
	const char *pfx, *expected;
	struct rkc_kp *k;
	void *heap, *site;
	int nop = rkc_nop_off(test, rkc_f_plain);

	k = rkc_kp_new(test, "rkc_f_plain", rkc_f_plain, 0, false);
	rkc_refuse_kp(test, "kprobe.both", &k->kp, -EINVAL);
	k = rkc_kp_new(test, NULL, NULL, 0, false);
	rkc_refuse_kp(test, "kprobe.neither", &k->kp, -EINVAL);
	k = rkc_kp_new(test, "rkc_no_such_symbol", NULL, 0, false);
	rkc_refuse_kp(test, "kprobe.unknown_symbol", &k->kp, -ENOENT);
	RKC_EXPECT_INT(test, "kprobe.unknown_symbol.addr_null", k->kp.addr == NULL, 1);

	heap = kunit_kzalloc(test, 64, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, heap);
	k = rkc_kp_new(test, NULL, heap, 0, false);
	rkc_refuse_kp(test, "kprobe.heap_address", &k->kp, -ENOENT);
	/* Kernel data: no kallsyms entry without KALLSYMS_ALL, else not text. */
	k = rkc_kp_new(test, NULL, (void *)&jiffies, 0, false);
	rkc_refuse_kp(test, "kprobe.kernel_data", &k->kp,
		      IS_ENABLED(CONFIG_KALLSYMS_ALL) ? -EINVAL : -ENOENT);

	k = rkc_kp_new(test, "rkc_f_plain", NULL, nop + 3, false);
	rkc_refuse_kp(test, "kprobe.mid_insn.symbol", &k->kp, RKC_MID_INSN_ERRNO);
	RKC_EXPECT_INT(test, "kprobe.mid_insn.symbol.addr_kept",
		       k->kp.addr == (void *)rkc_f_plain + nop + 3, 1);
	/* Retried as it is: the address written back makes it "both", not -EILSEQ again. */
	rkc_refuse_kp(test, "kprobe.mid_insn.symbol.retry", &k->kp, -EINVAL);
	k = rkc_kp_new(test, NULL, (void *)rkc_f_plain + nop + 3, 0, false);
	rkc_refuse_kp(test, "kprobe.mid_insn.addr", &k->kp, RKC_MID_INSN_ERRNO);
	if (rkc_entry_off(rkc_f_plain) == 4) {
		k = rkc_kp_new(test, "rkc_f_plain", NULL, 2, false);
		rkc_refuse_kp(test, "kprobe.mid_endbr", &k->kp, -EILSEQ);
	} else {
		RKC_NOTE(test, "kprobe.mid_endbr", "%s", "n/a (no ENDBR)");
	}

	k = rkc_kp_new(test, "rkc_f_nokprobe", NULL, 0, false);
	rkc_refuse_kp(test, "kprobe.module_nokprobe_symbol", &k->kp, -EINVAL);
	RKC_EXPECT_INT(test, "kprobe.module_nokprobe_symbol.addr_written",
		       k->kp.addr == (void *)rkc_f_nokprobe + rkc_entry_off(rkc_f_nokprobe), 1);
	k = rkc_kp_new(test, "rkc_f_kprobes_text", NULL, 0, false);
	rkc_refuse_kp(test, "kprobe.module_kprobes_text", &k->kp, -EINVAL);

	/* The core's own hit path and what upstream blacklists around it. */
	k = rkc_kp_new(test, "get_kprobe", NULL, 0, false);
	rkc_refuse_kp(test, "kprobe.get_kprobe", &k->kp, -EINVAL);
	k = rkc_kp_new(test, "kprobes_inc_nmissed_count", NULL, 0, false);
	rkc_refuse_kp(test, "kprobe.kprobes_inc_nmissed_count", &k->kp, -EINVAL);
	if (IS_ENABLED(CONFIG_OPTPROBES)) {
		k = rkc_kp_new(test, "opt_pre_handler", NULL, 0, false);
		rkc_refuse_kp(test, "kprobe.opt_pre_handler", &k->kp, -EINVAL);
	}
	k = rkc_kp_new(test, "dump_kprobe", NULL, 0, false);
	rkc_refuse_kp(test, "kprobe.dump_kprobe", &k->kp, -EINVAL);
	k = rkc_kp_new(test, "kprobe_exceptions_notify", NULL, 0, false);
	rkc_refuse_kp(test, "kprobe.kprobe_exceptions_notify", &k->kp, -EINVAL);
	/* The arch's breakpoint handler, its entry text, a noinstr function (rkc.h). */
	k = rkc_kp_new(test, RKC_BREAK_HANDLER, NULL, 0, false);
	rkc_refuse_kp(test, "kprobe.break_handler", &k->kp, -EINVAL);
	RKC_NOTE(test, "kprobe.break_handler.symbol", "%s", RKC_BREAK_HANDLER);
#ifdef RKC_ENTRY_TEXT
	k = rkc_kp_new(test, RKC_ENTRY_TEXT, NULL, 0, false);
	rkc_refuse_kp(test, "kprobe.entry_text", &k->kp, -EINVAL);
#else
	RKC_NOTE(test, "kprobe.entry_text", "%s", "n/a (no entry text on this arch)");
#endif
	k = rkc_kp_new(test, RKC_NOINSTR, NULL, 0, false);
	rkc_refuse_kp(test, "kprobe.noinstr_text", &k->kp, -EINVAL);
	/*
	 * Upstream does not blacklist kprobe_busy_begin: accepted (disabled,
	 * never armed) where a traced function's entry can be probed.
	 */
	k = rkc_kp_new(test, "kprobe_busy_begin", NULL, 0, false);
	rkc_refuse_kp(test, "kprobe.kprobe_busy_begin", &k->kp,
		      RKC_TRACED_ENTRY_PROBEABLE ? 0 : -EINVAL);

	if (IS_ENABLED(CONFIG_CFI_CLANG) || IS_ENABLED(CONFIG_CALL_PADDING)) {
		k = rkc_kp_new(test, IS_ENABLED(CONFIG_CFI_CLANG) ?
			       "__cfi_vfs_read" : "__pfx_vfs_read", NULL, 0, false);
		rkc_refuse_kp(test, "kprobe.cfi_preamble", &k->kp, -EINVAL);
	} else {
		RKC_NOTE(test, "kprobe.cfi_preamble", "%s", "n/a (no preamble symbols)");
	}
	site = rkc_warn_site();
	if (site) {
		k = rkc_kp_new(test, NULL, site, 0, false);
		rkc_refuse_kp(test, "kprobe.bug_ud2", &k->kp, -EINVAL);
		RKC_NOTE(test, "kprobe.bug_ud2.site", "rkc_f_warn+0x%lx",
			 (unsigned long)site - (unsigned long)rkc_f_warn);
	} else {
		/* With GENERIC_BUG the WARN must be in the bug table: not finding it is a bug here. */
		KUNIT_EXPECT_FALSE_MSG(test, IS_ENABLED(CONFIG_GENERIC_BUG),
				       "no bug table entry found in rkc_f_warn()");
		RKC_NOTE(test, "kprobe.bug_ud2", "%s", "n/a (no GENERIC_BUG)");
	}
	if (!IS_ENABLED(CONFIG_KPROBES_ON_FTRACE) && IS_ENABLED(CONFIG_PPC64)) {
		RKC_NOTE(test, "kprobe.ftrace_site_without_kprobes_on_ftrace", "%s",
			 "n/a (the -pg _mcount call comes after the prologue)");
	} else if (!IS_ENABLED(CONFIG_KPROBES_ON_FTRACE)) {
		/*
		 * The ftrace call itself: arm64's is the second of its two
		 * patchable-entry NOPs (the first saves the link register),
		 * which come after the BTI landing pad where there is one.
		 */
		unsigned long call = IS_ENABLED(CONFIG_ARM64) ?
			4 + (IS_ENABLED(CONFIG_ARM64_BTI_KERNEL) ? 4 : 0) : 0;

		k = rkc_kp_new(test, "rkc_f_traced", NULL, call, false);
		rkc_refuse_kp(test, "kprobe.ftrace_site_without_kprobes_on_ftrace",
			      &k->kp, -EINVAL);
		RKC_NOTE(test, "kprobe.ftrace_site_without_kprobes_on_ftrace.offset", "%lu", call);
	}

	/*
	 * kprobes/blacklist lists this module's refused functions in that
	 * order, the .kprobes.text area symbol by symbol: its function's
	 * preamble symbol (__pfx_ or __cfi_) first, where there is one.
	 */
	pfx = IS_ENABLED(CONFIG_CFI_CLANG) ? "__cfi_" :
	      IS_ENABLED(CONFIG_CALL_PADDING) ? "__pfx_" : NULL;
	expected = "0xADDR-0xADDR\trkc_f_nokprobe [" RKC_MOD "]";
	if (pfx)
		expected = rkc_fmt(test, "%s|0xADDR-0xADDR\t%srkc_f_kprobes_text [%s]",
				   expected, pfx, RKC_MOD);
	expected = rkc_join(test, expected,
			    "0xADDR-0xADDR\trkc_f_kprobes_text [" RKC_MOD "]");
	RKC_EXPECT_STR(test, "blacklist_file",
		       rkc_file_sym(test, RKC_KP_DIR "/blacklist", "[" RKC_MOD "]"), expected);

	/* The good case, for contrast: accepted, on the entry after ENDBR. */
	k = rkc_kp_new(test, "rkc_f_plain", NULL, 0, false);
	RKC_EXPECT_INT(test, "kprobe.entry.ret", rkc_reg_kp(test, &k->kp), 0);
	RKC_EXPECT_INT(test, "kprobe.entry.offset", rkc_off(&k->kp, rkc_f_plain),
		       rkc_entry_off(rkc_f_plain));
	RKC_EXPECT_INT(test, "kprobe.entry.flags", k->kp.flags, KPROBE_FLAG_ON_FUNC_ENTRY);
	rkc_unreg_kp(test, &k->kp);
}

static void rkc_kretprobe_errnos(struct kunit *test)
{
	struct rkc_krp *r;
	int nop = rkc_nop_off(test, rkc_f_plain);

	if (!IS_ENABLED(CONFIG_KRETPROBES))
		kunit_skip(test, "CONFIG_KRETPROBES is off: no kretprobes to test");

	r = rkc_krp_new(test, "rkc_f_plain", rkc_f_plain, 0, false);
	rkc_refuse_krp(test, "kretprobe.both", &r->rp, -EINVAL);
	r = rkc_krp_new(test, NULL, NULL, 0, false);
	rkc_refuse_krp(test, "kretprobe.neither", &r->rp, -EINVAL);
	r = rkc_krp_new(test, "rkc_no_such_symbol", NULL, 0, false);
	rkc_refuse_krp(test, "kretprobe.unknown_symbol", &r->rp, -ENOENT);
	/* The second NOP: an instruction boundary, not the entry (which may be ENDBR + 4). */
	r = rkc_krp_new(test, "rkc_f_plain", NULL, nop + 8, false);
	rkc_refuse_krp(test, "kretprobe.not_entry", &r->rp, -EINVAL);
	r = rkc_krp_new(test, NULL, (void *)rkc_f_plain + nop + 8, 0, false);
	rkc_refuse_krp(test, "kretprobe.not_entry.addr", &r->rp, -EINVAL);
	r = rkc_krp_new(test, "rkc_f_plain", NULL, 0, false);
	r->rp.data_size = KRETPROBE_MAX_DATA_SIZE + 1;
	rkc_refuse_krp(test, "kretprobe.data_size_4097", &r->rp, -E2BIG);
	r = rkc_krp_new(test, "rkc_f_plain", NULL, 0, false);
	r->rp.data_size = KRETPROBE_MAX_DATA_SIZE;
	rkc_refuse_krp(test, "kretprobe.data_size_4096", &r->rp, 0);
	/* Absurd sizes, in C's order: the entry, then data_size, then the pool (maxactive). */
	r = rkc_krp_new(test, "rkc_f_plain", NULL, 0, false);
	r->rp.data_size = SIZE_MAX;
	rkc_refuse_krp(test, "kretprobe.data_size_max", &r->rp, -E2BIG);
	r = rkc_krp_new(test, "rkc_f_plain", NULL, nop + 8, false);
	r->rp.data_size = SIZE_MAX;
	rkc_refuse_krp(test, "kretprobe.not_entry.data_size_max", &r->rp, -EINVAL);
	r = rkc_krp_new(test, "rkc_f_plain", NULL, 0, false);
	r->rp.data_size = SIZE_MAX;
	r->rp.maxactive = INT_MAX;
	rkc_refuse_krp(test, "kretprobe.data_size_max.maxactive_int_max", &r->rp, -E2BIG);
	/*
	 * No maxactive limit in register_kretprobe() (KRETPROBE_MAXACTIVE_MAX is
	 * kprobe_events'): the pool refuses more than 1 << 24 objects before
	 * allocating (-ENOMEM). Never 1 << 24 itself, which really allocates.
	 */
	r = rkc_krp_new(test, "rkc_f_plain", NULL, 0, false);
	r->rp.maxactive = INT_MAX;
	rkc_refuse_krp(test, "kretprobe.maxactive_int_max", &r->rp, -ENOMEM);
	RKC_EXPECT_INT(test, "kretprobe.maxactive_int_max.addr_null", r->rp.kp.addr == NULL, 1);
	r->rp.maxactive = 1;
	rkc_refuse_krp(test, "kretprobe.maxactive_int_max.retry_1", &r->rp, 0);
	r = rkc_krp_new(test, "rkc_f_plain", NULL, 0, false);
	r->rp.maxactive = (1 << 24) + 1;
	rkc_refuse_krp(test, "kretprobe.maxactive_pool_max_plus_1", &r->rp, -ENOMEM);
	r = rkc_krp_new(test, "rkc_f_plain", NULL, 0, false);
	r->rp.maxactive = INT_MIN;
	rkc_refuse_krp(test, "kretprobe.maxactive_int_min", &r->rp, 0);
	r = rkc_krp_new(test, "rkc_f_nokprobe", NULL, 0, false);
	rkc_refuse_krp(test, "kretprobe.module_nokprobe_symbol", &r->rp, -EINVAL);
	r = rkc_krp_new(test, "get_kprobe", NULL, 0, false);
	rkc_refuse_krp(test, "kretprobe.get_kprobe", &r->rp, -EINVAL);
	/*
	 * x86's kretprobe_blacklist[]. Upstream compares the symbol's address
	 * with the probe's, which x86 moves past ENDBR: with IBT the blacklist
	 * never matches and C accepts __switch_to (registered disabled here,
	 * so never armed). riscv's __switch_to is irqentry text (rkc.h).
	 */
	r = rkc_krp_new(test, "__switch_to", NULL, 0, false);
	rkc_refuse_krp(test, "kretprobe.blacklist___switch_to", &r->rp, RKC_SWITCH_TO_ERRNO);
	if (rkc_entry_off(rkc_f_plain) == 4) {
		r = rkc_krp_new(test, "rkc_f_plain", NULL, 4, false);
		rkc_refuse_krp(test, "kretprobe.endbr_plus_4_is_entry", &r->rp, 0);
		r = rkc_krp_new(test, "rkc_f_plain", NULL, 1, false);
		rkc_refuse_krp(test, "kretprobe.endbr_plus_1", &r->rp, -EINVAL);
	}
	RKC_EXPECT_INT(test, "register_kprobes.num_0", register_kprobes(NULL, 0), -EINVAL);
	RKC_EXPECT_INT(test, "register_kprobes.num_-1", register_kprobes(NULL, -1), -EINVAL);
	RKC_EXPECT_INT(test, "register_kretprobes.num_0", register_kretprobes(NULL, 0), -EINVAL);
	unregister_kprobes(NULL, 0);
	unregister_kretprobes(NULL, 0);
}

/* ------------------------------------------------------------------ */
/* What registration writes. */

static void rkc_register_fields(struct kunit *test)
{
	struct rkc_kp *a, *b;
	struct rkc_krp *r, *r2;
	unsigned long eoff = rkc_entry_off(rkc_f_plain);
	/* The second NOP of rkc_f_plain2: not a function entry. */
	int nop = rkc_nop_off(test, rkc_f_plain2) + 8;
	int max_default = max_t(int, 10, 2 * num_possible_cpus());

	a = rkc_kp_new(test, "rkc_f_plain", NULL, 0, false);
	a->kp.flags = KPROBE_FLAG_GONE | KPROBE_FLAG_OPTIMIZED | KPROBE_FLAG_FTRACE;
	a->kp.nmissed = 42;
	RKC_EXPECT_INT(test, "garbage_flags.ret", rkc_reg_kp(test, &a->kp), 0);
	RKC_EXPECT_INT(test, "garbage_flags.flags", a->kp.flags, KPROBE_FLAG_ON_FUNC_ENTRY);
	RKC_EXPECT_INT(test, "garbage_flags.nmissed", a->kp.nmissed, 0);
	rkc_f_plain(1);
	RKC_EXPECT_INT(test, "garbage_flags.hits", a->pre, 1);
	RKC_LIST(test, "garbage_flags.list", a->kp.addr,
		 rkc_list_line(test, "k", "rkc_f_plain", eoff, RKC_MOD, ""));

	b = rkc_kp_new(test, NULL, (void *)rkc_f_plain2 + nop, 0, false);
	b->kp.flags = KPROBE_FLAG_DISABLED | KPROBE_FLAG_GONE;
	RKC_EXPECT_INT(test, "disabled.ret", rkc_reg_kp(test, &b->kp), 0);
	RKC_EXPECT_INT(test, "disabled.flags", b->kp.flags, KPROBE_FLAG_DISABLED);
	rkc_f_plain2(1);
	RKC_EXPECT_INT(test, "disabled.hits", b->pre, 0);
	RKC_LIST(test, "disabled.list", b->kp.addr,
		 rkc_list_line(test, "k", "rkc_f_plain2", nop, RKC_MOD, "[DISABLED]"));
	RKC_EXPECT_INT(test, "disabled.enable", enable_kprobe(&b->kp), 0);
	RKC_EXPECT_INT(test, "disabled.enabled_flags", b->kp.flags, 0);
	rkc_f_plain2(1);
	RKC_EXPECT_INT(test, "disabled.hits_after_enable", b->pre, 1);

	if (!IS_ENABLED(CONFIG_KRETPROBES))
		kunit_skip(test, "CONFIG_KRETPROBES is off: the kretprobe half is not tested");
	/* A kretprobe on the kprobe's address: the list shows both, newest first. */
	r = rkc_krp_new(test, "rkc_f_plain", NULL, 0, false);
	r->rp.kp.post_handler = rkc_post;
	r->rp.maxactive = 0;
	r->rp.nmissed = 7;
	r->rp.kp.nmissed = 9;
	RKC_EXPECT_INT(test, "kretprobe.ret", rkc_reg_krp(test, &r->rp), 0);
	RKC_EXPECT_INT(test, "kretprobe.post_handler_cleared", r->rp.kp.post_handler == NULL, 1);
	RKC_EXPECT_INT(test, "kretprobe.pre_handler_set", r->rp.kp.pre_handler != NULL, 1);
	RKC_EXPECT_INT(test, "kretprobe.maxactive_0", r->rp.maxactive, max_default);
	RKC_EXPECT_INT(test, "kretprobe.nmissed", r->rp.nmissed, 0);
	RKC_EXPECT_INT(test, "kretprobe.kp_nmissed", r->rp.kp.nmissed, 0);
	RKC_EXPECT_INT(test, "kretprobe.flags", r->rp.kp.flags, KPROBE_FLAG_ON_FUNC_ENTRY);
	rkc_f_plain(1);
	RKC_EXPECT_INT(test, "kretprobe.handler", r->ret, 1);
	RKC_EXPECT_INT(test, "kretprobe.kprobe_hits", a->pre, 2);
	RKC_LIST(test, "kretprobe.list", a->kp.addr,
		 rkc_join(test, rkc_list_line(test, "r", "rkc_f_plain", eoff, RKC_MOD, ""),
			  rkc_list_line(test, "k", "rkc_f_plain", eoff, RKC_MOD, "")));

	r2 = rkc_krp_new(test, NULL, rkc_f_plain2, 0, false);
	r2->rp.maxactive = -3;
	RKC_EXPECT_INT(test, "kretprobe_negative_maxactive.ret", rkc_reg_krp(test, &r2->rp), 0);
	RKC_EXPECT_INT(test, "kretprobe_negative_maxactive.maxactive", r2->rp.maxactive,
		       max_default);
	rkc_unreg_krp(test, &r2->rp);
	rkc_unreg_krp(test, &r->rp);
	rkc_unreg_kp(test, &b->kp);
	rkc_unreg_kp(test, &a->kp);
	RKC_LIST(test, "unregistered.list", (void *)rkc_f_plain + eoff, "");
}

static void rkc_reregister(struct kunit *test)
{
	struct rkc_kp *a, *b;
	struct rkc_krp *r, *r2;
	void *addr;

	a = rkc_kp_new(test, NULL, (void *)rkc_f_plain + rkc_entry_off(rkc_f_plain), 0, false);
	RKC_EXPECT_INT(test, "kprobe_by_addr.first", rkc_reg_kp(test, &a->kp), 0);
	addr = a->kp.addr;
	RKC_EXPECT_INT(test, "kprobe_by_addr.second", register_kprobe(&a->kp), -EINVAL);
	RKC_EXPECT_INT(test, "kprobe_by_addr.addr_unchanged", a->kp.addr == addr, 1);
	rkc_f_plain(1);
	RKC_EXPECT_INT(test, "kprobe_by_addr.hits", a->pre, 1);
	RKC_LIST(test, "kprobe_by_addr.list", addr,
		 rkc_list_line(test, "k", "rkc_f_plain", rkc_off(&a->kp, rkc_f_plain), RKC_MOD, ""));
	/*
	 * Unregistering leaves KPROBE_FLAG_DISABLED in flags (the core disables
	 * before it removes), and register_kprobe() keeps that flag: registered
	 * again, the probe is disabled until enabled.
	 */
	rkc_unreg_kp(test, &a->kp);
	RKC_EXPECT_INT(test, "kprobe_by_addr.flags_after_unregister", a->kp.flags,
		       KPROBE_FLAG_DISABLED | KPROBE_FLAG_ON_FUNC_ENTRY);
	RKC_EXPECT_INT(test, "kprobe_by_addr.again_after_unregister", rkc_reg_kp(test, &a->kp), 0);
	RKC_EXPECT_INT(test, "kprobe_by_addr.flags_after_again", a->kp.flags,
		       KPROBE_FLAG_DISABLED | KPROBE_FLAG_ON_FUNC_ENTRY);
	rkc_f_plain(1);
	RKC_EXPECT_INT(test, "kprobe_by_addr.hits_after_again", a->pre, 1);
	RKC_EXPECT_INT(test, "kprobe_by_addr.enable", enable_kprobe(&a->kp), 0);
	rkc_f_plain(1);
	RKC_EXPECT_INT(test, "kprobe_by_addr.hits_after_enable", a->pre, 2);
	rkc_unreg_kp(test, &a->kp);

	b = rkc_kp_new(test, "rkc_f_plain2", NULL, 0, false);
	RKC_EXPECT_INT(test, "kprobe_by_symbol.first", rkc_reg_kp(test, &b->kp), 0);
	/* addr was written, so symbol_name and addr are both set now. */
	RKC_EXPECT_INT(test, "kprobe_by_symbol.second", register_kprobe(&b->kp), -EINVAL);
	rkc_f_plain2(1);
	RKC_EXPECT_INT(test, "kprobe_by_symbol.hits", b->pre, 1);
	rkc_unreg_kp(test, &b->kp);
	/* Reused as it is: the address written back plus symbol_name (-EINVAL, no WARN). */
	rkc_refuse_kp(test, "kprobe_by_symbol.uncleared_after_unregister", &b->kp, -EINVAL);
	b->kp.addr = NULL;
	b->kp.flags = 0;
	RKC_EXPECT_INT(test, "kprobe_by_symbol.again_after_unregister", rkc_reg_kp(test, &b->kp), 0);
	rkc_f_plain2(1);
	RKC_EXPECT_INT(test, "kprobe_by_symbol.hits_after_again", b->pre, 2);
	rkc_unreg_kp(test, &b->kp);

	if (!IS_ENABLED(CONFIG_KRETPROBES))
		kunit_skip(test, "CONFIG_KRETPROBES is off: the kretprobe half is not tested");
	r = rkc_krp_new(test, NULL, rkc_f_batch1, 0, false);
	RKC_EXPECT_INT(test, "kretprobe_by_addr.first", rkc_reg_krp(test, &r->rp), 0);
	RKC_EXPECT_INT(test, "kretprobe_by_addr.second", register_kretprobe(&r->rp), -EINVAL);
	rkc_f_batch1(1);
	RKC_EXPECT_INT(test, "kretprobe_by_addr.handler", r->ret, 1);
	rkc_unreg_krp(test, &r->rp);
	r2 = rkc_krp_new(test, "rkc_f_batch2", NULL, 0, false);
	RKC_EXPECT_INT(test, "kretprobe_by_symbol.first", rkc_reg_krp(test, &r2->rp), 0);
	RKC_EXPECT_INT(test, "kretprobe_by_symbol.second", register_kretprobe(&r2->rp), -EINVAL);
	rkc_f_batch2(1);
	RKC_EXPECT_INT(test, "kretprobe_by_symbol.handler", r2->ret, 1);
	rkc_unreg_krp(test, &r2->rp);
}

/* ------------------------------------------------------------------ */
/* Unregistering what was never registered. */

static void rkc_unregister_unregistered(struct kunit *test)
{
	struct rkc_kp *never, *nul, *live, *same, *y, *z, *w, *x, *x2;
	struct kprobe *kps[2], *twice[4];

	never = rkc_kp_new(test, NULL, rkc_f_plain, 0, false);
	RKC_EXPECT_INT(test, "enable_never_registered", enable_kprobe(&never->kp), -EINVAL);
	RKC_EXPECT_INT(test, "disable_never_registered", disable_kprobe(&never->kp), -EINVAL);
	unregister_kprobe(&never->kp);
	RKC_EXPECT_INT(test, "never_registered.addr_null", never->kp.addr == NULL, 1);

	nul = rkc_kp_new(test, "rkc_f_plain", NULL, 0, false);
	unregister_kprobe(&nul->kp);
	RKC_EXPECT_INT(test, "never_registered_null_addr.addr_null", nul->kp.addr == NULL, 1);

	/* Another probe at the same address must survive. */
	live = rkc_kp_new(test, "rkc_f_plain2", NULL, 0, false);
	RKC_EXPECT_INT(test, "live.ret", rkc_reg_kp(test, &live->kp), 0);
	same = rkc_kp_new(test, NULL, live->kp.addr, 0, false);
	unregister_kprobe(&same->kp);
	RKC_EXPECT_INT(test, "same_address.addr_null", same->kp.addr == NULL, 1);
	rkc_f_plain2(1);
	RKC_EXPECT_INT(test, "same_address.live_hits", live->pre, 1);
	RKC_LIST(test, "same_address.list", live->kp.addr,
		 rkc_list_line(test, "k", "rkc_f_plain2", rkc_off(&live->kp, rkc_f_plain2),
			       RKC_MOD, ""));

	/* In a batch: the registered one goes, the other gets addr NULL. */
	y = rkc_kp_new(test, "rkc_f_batch1", NULL, 0, false);
	z = rkc_kp_new(test, NULL, rkc_f_batch2, 0, false);
	RKC_EXPECT_INT(test, "batch.y_ret", rkc_reg_kp(test, &y->kp), 0);
	kps[0] = &y->kp;
	kps[1] = &z->kp;
	unregister_kprobes(kps, 2);
	rkc_forget_kp(test, &y->kp);
	RKC_EXPECT_INT(test, "batch.registered_addr_kept", y->kp.addr != NULL, 1);
	RKC_EXPECT_INT(test, "batch.never_addr_null", z->kp.addr == NULL, 1);
	rkc_f_batch1(1);
	RKC_EXPECT_INT(test, "batch.registered_hits_after", y->pre, 0);

	/* Twice. */
	rkc_unreg_kp(test, &live->kp);
	RKC_EXPECT_INT(test, "twice.addr_kept_after_first", live->kp.addr != NULL, 1);
	unregister_kprobe(&live->kp);
	RKC_EXPECT_INT(test, "twice.addr_null_after_second", live->kp.addr == NULL, 1);
	rkc_f_plain2(1);
	RKC_EXPECT_INT(test, "twice.hits", live->pre, 1);

	/*
	 * The same probe twice in one batch of breakpoint probes, next to the two children of
	 * an aggregate: the second time it is gone (-EINVAL, addr NULL); the children go.
	 */
	w = rkc_kp_new(test, "rkc_f_batch3", NULL, 0, false);
	x = rkc_kp_new(test, "rkc_f_batch1", NULL, 0, false);
	x2 = rkc_kp_new(test, "rkc_f_batch1", NULL, 0, true);
	RKC_EXPECT_INT(test, "batch_twice.w_ret", rkc_reg_kp(test, &w->kp), 0);
	RKC_EXPECT_INT(test, "batch_twice.x_ret", rkc_reg_kp(test, &x->kp), 0);
	RKC_EXPECT_INT(test, "batch_twice.x2_ret", rkc_reg_kp(test, &x2->kp), 0);
	twice[0] = &w->kp;
	twice[1] = &x->kp;
	twice[2] = &w->kp;
	twice[3] = &x2->kp;
	unregister_kprobes(twice, 4);
	rkc_forget_kp(test, &w->kp);
	rkc_forget_kp(test, &x->kp);
	rkc_forget_kp(test, &x2->kp);
	RKC_EXPECT_INT(test, "batch_twice.w_addr_null", w->kp.addr == NULL, 1);
	RKC_EXPECT_INT(test, "batch_twice.children_addr_kept",
		       x->kp.addr != NULL && x2->kp.addr != NULL, 1);
	rkc_f_batch3(1);
	rkc_f_batch1(1);
	RKC_EXPECT_INT(test, "batch_twice.hits_after", w->pre + x->pre + x2->pre + x2->post, 0);
}

static atomic_t rkc_sled_hits;

static int rkc_sled_pre(struct kprobe *p, struct pt_regs *regs)
{
	atomic_inc(&rkc_sled_hits);
	return 0;
}

/* Calls every sled function (every probe of rkc_unregister_big_batch). */
static void rkc_run_sleds(void)
{
	int f;

	for (f = 0; f < RKC_SLED_FNS; f++)
		rkc_sleds[f](1);
}

/* The address of the @i-th site of the sleds, NULL if its function has none. */
static kprobe_opcode_t *rkc_sled_site(int i)
{
	void *fn = rkc_sleds[i / RKC_SLED_NOPS];
	int off = rkc_nop8_offset(fn);

	if (off < 0)
		return NULL;
	return (kprobe_opcode_t *)((u8 *)fn + off + (i % RKC_SLED_NOPS) * 8);
}

static void rkc_unregister_big_batch(struct kunit *test)
{
	int i, n = RKC_SLED_FNS * RKC_SLED_NOPS, kept = 0, ret;
	struct kprobe *probes, **kps, *stranger, *again;

	probes = kunit_kcalloc(test, n + 2, sizeof(*probes), GFP_KERNEL);
	kps = kunit_kcalloc(test, n + 2, sizeof(*kps), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, probes);
	KUNIT_ASSERT_NOT_NULL(test, kps);
	for (i = 0; i < n; i++) {
		probes[i].addr = rkc_sled_site(i);
		KUNIT_ASSERT_NOT_NULL(test, probes[i].addr);
		probes[i].pre_handler = rkc_sled_pre;
		kps[i] = &probes[i];
	}
	ret = register_kprobes(kps, n);
	RKC_EXPECT_INT(test, "register.ret", ret, 0);
	if (ret)
		return;
	atomic_set(&rkc_sled_hits, 0);
	rkc_run_sleds();
	RKC_EXPECT_INT(test, "hits_before", atomic_read(&rkc_sled_hits), n);

	/*
	 * After the n registered probes: one of them again (gone by then), and a
	 * never-registered probe at the address of another (gone too).
	 */
	stranger = &probes[n];
	stranger->addr = probes[5].addr;
	kps[n] = &probes[7];
	kps[n + 1] = stranger;
	unregister_kprobes(kps, n + 2);
	for (i = 0; i < n; i++)
		kept += i != 7 && probes[i].addr;
	RKC_EXPECT_INT(test, "unregister.addr_kept", kept, n - 1);
	RKC_EXPECT_INT(test, "unregister.twice_addr_null", probes[7].addr == NULL, 1);
	RKC_EXPECT_INT(test, "unregister.stranger_addr_null", stranger->addr == NULL, 1);
	atomic_set(&rkc_sled_hits, 0);
	rkc_run_sleds();
	RKC_EXPECT_INT(test, "hits_after", atomic_read(&rkc_sled_hits), 0);

	/* An address of the batch takes a probe again. */
	again = &probes[n + 1];
	again->addr = rkc_sled_site(5);
	again->pre_handler = rkc_sled_pre;
	RKC_EXPECT_INT(test, "again.ret", rkc_reg_kp(test, again), 0);
	rkc_run_sleds();
	RKC_EXPECT_INT(test, "again.hits", atomic_read(&rkc_sled_hits), 1);
	rkc_unreg_kp(test, again);
}

static void rkc_unregister_unregistered_kretprobe(struct kunit *test)
{
	struct rkc_krp *r;

	if (!IS_ENABLED(CONFIG_KPROBES_RUST))
		kunit_skip(test, "upstream C dereferences the NULL rp->rh (rethook) of a never-registered kretprobe, and frees it twice when unregistered twice: only run on the Rust core");
	r = rkc_krp_new(test, NULL, rkc_f_plain, 0, false);
	unregister_kretprobe(&r->rp);
	RKC_EXPECT_INT(test, "never_registered.addr_null", r->rp.kp.addr == NULL, 1);
	rkc_f_plain(1);
	RKC_EXPECT_INT(test, "never_registered.handler", r->ret, 0);

	/* Unregistered twice: C frees the rethook a second time (x86), Rust finds it gone. */
	r = rkc_krp_new(test, NULL, rkc_f_plain2, 0, false);
	RKC_EXPECT_INT(test, "twice.ret", rkc_reg_krp(test, &r->rp), 0);
	rkc_f_plain2(1);
	RKC_EXPECT_INT(test, "twice.handler", r->ret, 1);
	rkc_unreg_krp(test, &r->rp);
	RKC_EXPECT_INT(test, "twice.addr_kept_after_first", r->rp.kp.addr != NULL, 1);
	unregister_kretprobe(&r->rp);
	RKC_EXPECT_INT(test, "twice.addr_null_after_second", r->rp.kp.addr == NULL, 1);
	rkc_f_plain2(1);
	RKC_EXPECT_INT(test, "twice.handler_after", r->ret, 1);
}

/* ------------------------------------------------------------------ */
/* Batches. */

static void rkc_batch_rollback(struct kunit *test)
{
	struct rkc_kp *a, *b, *c, *d;
	struct rkc_krp *r1, *r2, *r3;
	struct kprobe *kps[4];
	struct kretprobe *rps[3];
	int i;

	a = rkc_kp_new(test, "rkc_f_batch1", NULL, 0, false);
	b = rkc_kp_new(test, "rkc_f_batch2", NULL, 0, false);
	c = rkc_kp_new(test, "rkc_no_such_symbol", NULL, 0, false);
	d = rkc_kp_new(test, "rkc_f_batch3", NULL, 0, false);
	kps[0] = &a->kp;
	kps[1] = &b->kp;
	kps[2] = &c->kp;
	kps[3] = &d->kp;
	RKC_EXPECT_INT(test, "kprobes_unknown.ret", rkc_reg_kps(test, kps, 4), -ENOENT);
	RKC_EXPECT_INT(test, "kprobes_unknown.first_addr_set", a->kp.addr != NULL, 1);
	RKC_EXPECT_INT(test, "kprobes_unknown.bad_addr_null", c->kp.addr == NULL, 1);
	RKC_EXPECT_INT(test, "kprobes_unknown.later_addr_null", d->kp.addr == NULL, 1);
	rkc_f_batch1(1);
	rkc_f_batch2(1);
	rkc_f_batch3(1);
	RKC_EXPECT_INT(test, "kprobes_unknown.hits", a->pre + b->pre + d->pre, 0);
	RKC_LIST(test, "kprobes_unknown.list_first", a->kp.addr, "");
	RKC_LIST(test, "kprobes_unknown.list_second", b->kp.addr, "");
	/* Harmless if rolled back; removes them if a core left them registered. */
	unregister_kprobe(&a->kp);
	unregister_kprobe(&b->kp);

	a = rkc_kp_new(test, "rkc_f_batch1", NULL, 0, false);
	c = rkc_kp_new(test, "rkc_f_nokprobe", NULL, 0, false);
	d = rkc_kp_new(test, "rkc_f_batch3", NULL, 0, false);
	kps[0] = &a->kp;
	kps[1] = &c->kp;
	kps[2] = &d->kp;
	RKC_EXPECT_INT(test, "kprobes_blacklisted.ret", rkc_reg_kps(test, kps, 3), -EINVAL);
	RKC_EXPECT_INT(test, "kprobes_blacklisted.bad_addr_written", c->kp.addr != NULL, 1);
	rkc_f_batch1(1);
	RKC_EXPECT_INT(test, "kprobes_blacklisted.hits", a->pre, 0);
	unregister_kprobe(&a->kp);

	/* And all good. */
	a = rkc_kp_new(test, "rkc_f_batch1", NULL, 0, false);
	b = rkc_kp_new(test, "rkc_f_batch2", NULL, 0, false);
	d = rkc_kp_new(test, "rkc_f_batch3", NULL, 0, false);
	kps[0] = &a->kp;
	kps[1] = &b->kp;
	kps[2] = &d->kp;
	RKC_EXPECT_INT(test, "kprobes_good.ret", rkc_reg_kps(test, kps, 3), 0);
	rkc_f_batch1(1);
	rkc_f_batch2(1);
	rkc_f_batch3(1);
	RKC_EXPECT_INT(test, "kprobes_good.hits", a->pre + b->pre + d->pre, 3);
	for (i = 0; i < 3; i++)
		rkc_unreg_kp(test, kps[i]);

	if (!IS_ENABLED(CONFIG_KRETPROBES))
		kunit_skip(test, "CONFIG_KRETPROBES is off: the kretprobe half is not tested");
	r1 = rkc_krp_new(test, "rkc_f_batch1", NULL, 0, false);
	r2 = rkc_krp_new(test, "rkc_no_such_symbol", NULL, 0, false);
	r3 = rkc_krp_new(test, "rkc_f_batch3", NULL, 0, false);
	rps[0] = &r1->rp;
	rps[1] = &r2->rp;
	rps[2] = &r3->rp;
	RKC_EXPECT_INT(test, "kretprobes_unknown.ret", rkc_reg_krps(test, rps, 3), -ENOENT);
	RKC_EXPECT_INT(test, "kretprobes_unknown.later_addr_null", r3->rp.kp.addr == NULL, 1);
	rkc_f_batch1(1);
	rkc_f_batch3(1);
	RKC_EXPECT_INT(test, "kretprobes_unknown.handlers", r1->ret + r3->ret, 0);
	RKC_LIST(test, "kretprobes_unknown.list_first", r1->rp.kp.addr, "");
}

/* ------------------------------------------------------------------ */
/* Aggregates. */

/*
 * register_kprobes() with kprobes on ftrace sites, where the Rust core records their arming and
 * adds them to ftrace's filter at once: each batch is also registered one by one, and both
 * must leave the same kprobes/list lines, addresses and hits.
 */
#define RKC_FTB_N 5

/* The batch: two ftrace sites, one with a post_handler, an int3 site, a second probe on the
 * first site (an aggregate made inside the batch), a third ftrace site.
 */
static void rkc_ftb_fill(struct kunit *test, struct rkc_kp **k, struct kprobe **kps)
{
	k[0] = rkc_kp_new(test, "rkc_ft_b1", NULL, 0, false);
	k[1] = rkc_kp_new(test, "rkc_ft_b2", NULL, 0, true);
	k[2] = rkc_kp_new(test, "rkc_f_batch1", NULL, 0, false);
	k[3] = rkc_kp_new(test, "rkc_ft_b1", NULL, 0, false);
	k[4] = rkc_kp_new(test, "rkc_ft_b3", NULL, 0, false);
	for (int i = 0; i < RKC_FTB_N; i++)
		kps[i] = &k[i]->kp;
}

/* What a registered batch shows: its kprobes/list lines and the hits of one call each. */
static char *rkc_ftb_seen(struct kunit *test, struct rkc_kp **k)
{
	char *s;

	rkc_ft_b1(1);
	rkc_ft_b2(1);
	rkc_f_batch1(1);
	rkc_ft_b3(1);
	s = rkc_fmt(test, "%s|%s|%s|%s|hits %u%u%u%u%u post %u",
		    rkc_list_at(test, k[0]->kp.addr), rkc_list_at(test, k[1]->kp.addr),
		    rkc_list_at(test, k[2]->kp.addr), rkc_list_at(test, k[4]->kp.addr),
		    k[0]->pre, k[1]->pre, k[2]->pre, k[3]->pre, k[4]->pre, k[1]->post);
	return s;
}

#if defined(CONFIG_KPROBES_ON_FTRACE) && defined(CONFIG_DYNAMIC_FTRACE_WITH_REGS)
/*
 * Another IPMODIFY ftrace user (what a livepatch is), holding one function: kprobes'
 * IPMODIFY ops (the one probes with a post_handler use) cannot take it.
 */
static void rkc_ipmodify_func(unsigned long ip, unsigned long parent_ip,
			      struct ftrace_ops *op, struct ftrace_regs *fregs)
{
}

static struct ftrace_ops rkc_ipmodify_ops = {
	.func = rkc_ipmodify_func,
	.flags = FTRACE_OPS_FL_SAVE_REGS | FTRACE_OPS_FL_IPMODIFY,
};

static unsigned long rkc_ipmodify_ip;

/*
 * The ftrace site of function @sym (ftrace_location() is not exported): the address a
 * disabled kprobe on it resolves to, when kprobes puts it on the ftrace site.
 */
static unsigned long rkc_ftrace_site(const char *sym)
{
	struct kprobe kp = { .symbol_name = sym, .flags = KPROBE_FLAG_DISABLED };
	unsigned long ip = 0;

	if (register_kprobe(&kp))
		return 0;
	if (kp.flags & KPROBE_FLAG_FTRACE)
		ip = (unsigned long)kp.addr;
	unregister_kprobe(&kp);
	return ip;
}

static int rkc_ipmodify_hold(const char *sym)
{
	int ret;

	rkc_ipmodify_ip = rkc_ftrace_site(sym);
	if (!rkc_ipmodify_ip)
		return -ENOENT;
	ret = ftrace_set_filter_ip(&rkc_ipmodify_ops, rkc_ipmodify_ip, 0, 1);
	if (ret)
		return ret;
	ret = register_ftrace_function(&rkc_ipmodify_ops);
	if (ret)
		ftrace_set_filter_ip(&rkc_ipmodify_ops, rkc_ipmodify_ip, 1, 1);
	return ret;
}

static void rkc_ipmodify_release(void)
{
	unregister_ftrace_function(&rkc_ipmodify_ops);
	ftrace_set_filter_ip(&rkc_ipmodify_ops, rkc_ipmodify_ip, 1, 1);
}

/*
 * A batch whose only probe with a post_handler (k[1], the first user of kprobes' IPMODIFY
 * ops) sits on a function another IPMODIFY user holds: C fails the call with -EBUSY from
 * register_ftrace_function() and rolls the batch back (the entry before it unregistered, the
 * entries after it never reached); no probe of it fires. The same batch registers once the
 * function is free again.
 */
static void rkc_batch_ftrace_ipmodify_busy(struct kunit *test)
{
	struct rkc_kp *k[RKC_FTB_N];
	struct kprobe *kps[RKC_FTB_N];
	int i, held;

	held = rkc_ipmodify_hold("rkc_ft_b2");
	RKC_EXPECT_INT(test, "ipmodify_busy.hold", held, 0);
	if (held)
		return;
	rkc_ftb_fill(test, k, kps);
	RKC_EXPECT_INT(test, "ipmodify_busy.ret", rkc_reg_kps(test, kps, RKC_FTB_N), -EBUSY);
	for (i = 0; i < RKC_FTB_N; i++)
		RKC_EXPECT_INT(test, rkc_fmt(test, "ipmodify_busy.%d.addr_set", i),
			       k[i]->kp.addr != NULL, i <= 1);
	RKC_LIST(test, "ipmodify_busy.list_b1", rkc_ft_b1, "");
	RKC_LIST(test, "ipmodify_busy.list_b3", rkc_ft_b3, "");
	rkc_ft_b1(1);
	rkc_ft_b2(1);
	rkc_f_batch1(1);
	rkc_ft_b3(1);
	RKC_EXPECT_INT(test, "ipmodify_busy.hits",
		       k[0]->pre + k[1]->pre + k[2]->pre + k[3]->pre + k[4]->pre, 0);
	rkc_ipmodify_release();

	rkc_ftb_fill(test, k, kps);
	RKC_EXPECT_INT(test, "ipmodify_free.ret", rkc_reg_kps(test, kps, RKC_FTB_N), 0);
	rkc_ft_b2(1);
	RKC_EXPECT_INT(test, "ipmodify_free.hits", k[1]->pre + k[1]->post, 2);
	unregister_kprobes(kps, RKC_FTB_N);
	for (i = 0; i < RKC_FTB_N; i++)
		rkc_forget_kp(test, kps[i]);
}
#else
static void rkc_batch_ftrace_ipmodify_busy(struct kunit *test)
{
	RKC_NOTE(test, "ipmodify_busy", "%s",
		 "n/a (no kprobes on ftrace with DYNAMIC_FTRACE_WITH_REGS)");
}
#endif

static void rkc_batch_ftrace(struct kunit *test)
{
	struct rkc_kp *k[RKC_FTB_N], *o[RKC_FTB_N];
	struct kprobe *kps[RKC_FTB_N];
	char *batched, *one_by_one;
	int i, bad;

	if (!IS_ENABLED(CONFIG_KPROBES_ON_FTRACE))
		kunit_skip(test, "CONFIG_KPROBES_ON_FTRACE is off: no ftrace-based probes");
	rkc_ftb_fill(test, k, kps);
	RKC_EXPECT_INT(test, "batch.ret", rkc_reg_kps(test, kps, RKC_FTB_N), 0);
	batched = rkc_ftb_seen(test, k);
	RKC_EXPECT_STR(test, "batch.seen", batched, batched);
	KUNIT_EXPECT_NOT_NULL(test, strstr(batched, "[FTRACE]"));
	unregister_kprobes(kps, RKC_FTB_N);
	for (i = 0; i < RKC_FTB_N; i++)
		rkc_forget_kp(test, kps[i]);
	RKC_LIST(test, "batch.unregistered", k[0]->kp.addr, "");
	rkc_ft_b1(1);
	RKC_EXPECT_INT(test, "batch.hits_after", k[0]->pre + k[3]->pre, 2);

	rkc_ftb_fill(test, o, kps);
	for (i = 0; i < RKC_FTB_N; i++)
		RKC_EXPECT_INT(test, rkc_fmt(test, "one_by_one.%d.ret", i), rkc_reg_kp(test, kps[i]), 0);
	one_by_one = rkc_ftb_seen(test, o);
	RKC_EXPECT_STR(test, "one_by_one.seen_as_batch", one_by_one, batched);
	for (i = 0; i < RKC_FTB_N; i++) {
		RKC_EXPECT_INT(test, rkc_fmt(test, "one_by_one.%d.addr_as_batch", i),
			       o[i]->kp.addr == k[i]->kp.addr, 1);
		rkc_unreg_kp(test, kps[i]);
	}

	/* An unknown symbol first, in the middle, last: nothing stays, C's addresses. */
	for (bad = 0; bad < RKC_FTB_N; bad += 2) {
		const char *key = rkc_fmt(test, "unknown_at_%d", bad);

		rkc_ftb_fill(test, k, kps);
		k[bad]->kp.symbol_name = "rkc_no_such_symbol";
		RKC_EXPECT_INT(test, rkc_fmt(test, "%s.ret", key),
			       rkc_reg_kps(test, kps, RKC_FTB_N), -ENOENT);
		for (i = 0; i < RKC_FTB_N; i++)
			RKC_EXPECT_INT(test, rkc_fmt(test, "%s.%d.addr_set", key, i),
				       k[i]->kp.addr != NULL, i < bad);
		RKC_LIST(test, rkc_fmt(test, "%s.list", key), rkc_ft_b1, "");
		rkc_ft_b1(1);
		rkc_ft_b2(1);
		rkc_ft_b3(1);
		RKC_EXPECT_INT(test, rkc_fmt(test, "%s.hits", key),
			       k[0]->pre + k[1]->pre + k[3]->pre + k[4]->pre, 0);
	}

	/* The same struct twice: -EINVAL (C's WARN), the entries before it rolled back. */
	rkc_ftb_fill(test, k, kps);
	kps[3] = kps[0];
	RKC_EXPECT_INT(test, "twice.ret", rkc_reg_kps(test, kps, RKC_FTB_N), -EINVAL);
	RKC_LIST(test, "twice.list", k[0]->kp.addr, "");
	rkc_ft_b1(1);
	RKC_EXPECT_INT(test, "twice.hits", k[0]->pre, 0);

	rkc_batch_ftrace_ipmodify_busy(test);
}

static void rkc_three_probes(struct kunit *test)
{
	struct rkc_kp *a, *b, *c, *d;
	unsigned long off = rkc_entry_off(rkc_f_three);
	char *la, *lb, *lc, *lad, *lcd, *ld;
	void *addr;

	a = rkc_kp_new(test, "rkc_f_three", NULL, 0, true);
	b = rkc_kp_new(test, "rkc_f_three", NULL, 0, false);
	c = rkc_kp_new(test, "rkc_f_three", NULL, 0, false);
	a->tag = 'A';
	b->tag = 'B';
	c->tag = 'C';
	la = rkc_list_line(test, "k", "rkc_f_three", off, RKC_MOD, "");
	lb = la;
	lc = la;
	lad = rkc_list_line(test, "k", "rkc_f_three", off, RKC_MOD, "[DISABLED]");
	lcd = lad;
	ld = lad;

	RKC_EXPECT_INT(test, "register.a", rkc_reg_kp(test, &a->kp), 0);
	RKC_EXPECT_INT(test, "register.b", rkc_reg_kp(test, &b->kp), 0);
	RKC_EXPECT_INT(test, "register.c", rkc_reg_kp(test, &c->kp), 0);
	addr = a->kp.addr;
	RKC_EXPECT_INT(test, "register.same_addr", b->kp.addr == addr && c->kp.addr == addr, 1);
	rkc_order_reset();
	rkc_f_three(1);
	RKC_EXPECT_STR(test, "all.order", rkc_order, "CBA");
	RKC_EXPECT_INT(test, "all.a_post", a->post, 1);
	RKC_LIST(test, "all.list", addr, rkc_join(test, rkc_join(test, lc, lb), la));

	RKC_EXPECT_INT(test, "disable_c.ret", disable_kprobe(&c->kp), 0);
	RKC_EXPECT_INT(test, "disable_c.flags", c->kp.flags & KPROBE_FLAG_DISABLED, KPROBE_FLAG_DISABLED);
	rkc_order_reset();
	rkc_f_three(1);
	RKC_EXPECT_STR(test, "disable_c.order", rkc_order, "BA");
	RKC_LIST(test, "disable_c.list", addr, rkc_join(test, rkc_join(test, lcd, lb), la));

	rkc_unreg_kp(test, &b->kp);
	rkc_order_reset();
	rkc_f_three(1);
	RKC_EXPECT_STR(test, "unregister_b.order", rkc_order, "A");
	RKC_EXPECT_INT(test, "unregister_b.counts", a->pre * 100 + b->pre * 10 + c->pre, 321);
	RKC_EXPECT_INT(test, "unregister_b.a_post", a->post, 3);
	RKC_LIST(test, "unregister_b.list", addr, rkc_join(test, lcd, la));

	RKC_EXPECT_INT(test, "disable_a.ret", disable_kprobe(&a->kp), 0);
	rkc_order_reset();
	rkc_f_three(1);
	RKC_EXPECT_STR(test, "disable_a.order", rkc_order, "");
	RKC_EXPECT_INT(test, "disable_a.a_post", a->post, 3);
	RKC_LIST(test, "disable_a.list", addr, rkc_join(test, lcd, lad));
	RKC_EXPECT_INT(test, "disable_a.again", disable_kprobe(&a->kp), 0);

	RKC_EXPECT_INT(test, "enable_c.ret", enable_kprobe(&c->kp), 0);
	rkc_order_reset();
	rkc_f_three(1);
	RKC_EXPECT_STR(test, "enable_c.order", rkc_order, "C");
	RKC_LIST(test, "enable_c.list", addr, rkc_join(test, lc, lad));

	d = rkc_kp_new(test, "rkc_f_three", NULL, 0, false);
	d->tag = 'D';
	d->kp.flags = KPROBE_FLAG_DISABLED;
	RKC_EXPECT_INT(test, "add_d_disabled.ret", rkc_reg_kp(test, &d->kp), 0);
	rkc_order_reset();
	rkc_f_three(1);
	RKC_EXPECT_STR(test, "add_d_disabled.order", rkc_order, "C");
	RKC_LIST(test, "add_d_disabled.list", addr,
		 rkc_join(test, rkc_join(test, ld, lc), lad));

	RKC_EXPECT_INT(test, "enable_a.ret", enable_kprobe(&a->kp), 0);
	RKC_EXPECT_INT(test, "enable_a.again", enable_kprobe(&a->kp), 0);
	rkc_order_reset();
	rkc_f_three(1);
	RKC_EXPECT_STR(test, "enable_a.order", rkc_order, "CA");
	RKC_EXPECT_INT(test, "enable_a.a_post", a->post, 4);
	RKC_EXPECT_INT(test, "final.nmissed", a->kp.nmissed + c->kp.nmissed + d->kp.nmissed, 0);

	rkc_unreg_kp(test, &c->kp);
	rkc_unreg_kp(test, &a->kp);
	RKC_LIST(test, "only_d.list", addr, ld);
	rkc_unreg_kp(test, &d->kp);
	RKC_LIST(test, "none.list", addr, "");
	rkc_order_reset();
	rkc_f_three(1);
	RKC_EXPECT_STR(test, "none.order", rkc_order, "");
}

/* ------------------------------------------------------------------ */
/* Misses. */

static int rkc_outer_pre(struct kprobe *p, struct pt_regs *regs)
{
	container_of(p, struct rkc_kp, kp)->pre++;
	rkc_f_inner(1);
	rkc_f_inner_traced(1);
	rkc_f_inner_ret(1);
	return 0;
}

static void rkc_recursion_nmissed(struct kunit *test)
{
	struct rkc_kp *outer, *inner, *inner2, *traced = NULL;
	struct rkc_krp *ret = NULL;
	int i;

	outer = rkc_kp_new(test, "rkc_f_outer", NULL, 0, false);
	outer->kp.pre_handler = rkc_outer_pre;
	inner = rkc_kp_new(test, "rkc_f_inner", NULL, 0, false);
	RKC_EXPECT_INT(test, "register.inner", rkc_reg_kp(test, &inner->kp), 0);
	if (IS_ENABLED(CONFIG_KPROBES_ON_FTRACE)) {
		traced = rkc_kp_new(test, "rkc_f_inner_traced", NULL, 0, false);
		RKC_EXPECT_INT(test, "register.inner_traced", rkc_reg_kp(test, &traced->kp), 0);
		RKC_EXPECT_INT(test, "register.inner_traced_is_ftrace",
			       !!(traced->kp.flags & KPROBE_FLAG_FTRACE), 1);
	} else {
		RKC_NOTE(test, "ftrace", "%s", "n/a (CONFIG_KPROBES_ON_FTRACE off)");
	}
	if (IS_ENABLED(CONFIG_KRETPROBES)) {
		ret = rkc_krp_new(test, "rkc_f_inner_ret", NULL, 0, false);
		RKC_EXPECT_INT(test, "register.inner_ret", rkc_reg_krp(test, &ret->rp), 0);
	} else {
		RKC_NOTE(test, "kretprobe", "%s", "n/a (CONFIG_KRETPROBES off)");
	}
	RKC_EXPECT_INT(test, "register.outer", rkc_reg_kp(test, &outer->kp), 0);

	for (i = 0; i < 3; i++)
		rkc_f_outer(1);
	RKC_EXPECT_INT(test, "nested.outer_hits", outer->pre, 3);
	RKC_EXPECT_INT(test, "nested.outer_nmissed", outer->kp.nmissed, 0);
	RKC_EXPECT_INT(test, "nested.inner_hits", inner->pre, 0);
	RKC_EXPECT_INT(test, "nested.inner_nmissed", inner->kp.nmissed, 3);
	if (traced) {
		RKC_EXPECT_INT(test, "nested.ftrace_hits", traced->pre, 0);
		RKC_EXPECT_INT(test, "nested.ftrace_nmissed", traced->kp.nmissed, 3);
	}
	if (ret) {
		RKC_EXPECT_INT(test, "nested.kretprobe_handler", ret->ret, 0);
		RKC_EXPECT_INT(test, "nested.kretprobe_kp_nmissed", ret->rp.kp.nmissed, 3);
		RKC_EXPECT_INT(test, "nested.kretprobe_nmissed", ret->rp.nmissed, 0);
	}

	/* Called directly, outside a handler, they run. */
	rkc_f_inner(1);
	rkc_f_inner_traced(1);
	rkc_f_inner_ret(1);
	RKC_EXPECT_INT(test, "direct.inner_hits", inner->pre, 1);
	RKC_EXPECT_INT(test, "direct.inner_nmissed", inner->kp.nmissed, 3);
	if (traced)
		RKC_EXPECT_INT(test, "direct.ftrace_hits", traced->pre, 1);
	if (ret)
		RKC_EXPECT_INT(test, "direct.kretprobe_handler", ret->ret, 1);

	/* An aggregate: every child counts the miss. */
	inner2 = rkc_kp_new(test, "rkc_f_inner", NULL, 0, false);
	RKC_EXPECT_INT(test, "register.inner2", rkc_reg_kp(test, &inner2->kp), 0);
	rkc_f_outer(1);
	RKC_EXPECT_INT(test, "aggregate.inner_nmissed", inner->kp.nmissed, 4);
	RKC_EXPECT_INT(test, "aggregate.inner2_nmissed", inner2->kp.nmissed, 1);
	RKC_EXPECT_INT(test, "aggregate.hits", inner->pre + inner2->pre, 1);
}

/* The kprobes/missed line the Rust core prints for a probe of this module. */
static char *rkc_missed_line(struct kunit *test, const char *type, const char *sym,
			     unsigned long off, unsigned long recursion,
			     unsigned long no_instance)
{
	return rkc_fmt(test, "ADDR  %s  %s+0x%lx  %s  nmissed=%lu recursion=%lu no_instance=%lu",
		       type, sym, off, RKC_MOD, recursion + no_instance, recursion,
		       no_instance);
}

/* The kprobes/missed lines of the probes on @sym, addresses masked. */
static char *rkc_missed_of(struct kunit *test, const char *sym)
{
	return rkc_file_sym(test, RKC_KP_DIR "/missed", rkc_fmt(test, "  %s+", sym));
}

static void rkc_missed_by_cause(struct kunit *test)
{
	struct rkc_kp *outer, *inner, *inner2, *quiet, *traced = NULL;
	struct rkc_krp *ret = NULL, *pool;
	unsigned long off;
	int i;

	if (!IS_ENABLED(CONFIG_KPROBES_RUST))
		kunit_skip(test, "upstream C has no kprobes/missed (misses by cause are the Rust core's, issue 40): only run on the Rust core");

	/* A probe that never missed is not listed. */
	quiet = rkc_kp_new(test, "rkc_f_plain", NULL, 0, false);
	RKC_EXPECT_INT(test, "register.quiet", rkc_reg_kp(test, &quiet->kp), 0);
	rkc_f_plain(1);
	RKC_EXPECT_INT(test, "quiet.hits", quiet->pre, 1);
	RKC_EXPECT_STR(test, "quiet.missed", rkc_missed_of(test, "rkc_f_plain"), "");

	/* Recursion: probes hit from another probe's handler. */
	outer = rkc_kp_new(test, "rkc_f_outer", NULL, 0, false);
	outer->kp.pre_handler = rkc_outer_pre;
	inner = rkc_kp_new(test, "rkc_f_inner", NULL, 0, false);
	RKC_EXPECT_INT(test, "register.inner", rkc_reg_kp(test, &inner->kp), 0);
	if (IS_ENABLED(CONFIG_KPROBES_ON_FTRACE)) {
		traced = rkc_kp_new(test, "rkc_f_inner_traced", NULL, 0, false);
		RKC_EXPECT_INT(test, "register.inner_traced", rkc_reg_kp(test, &traced->kp), 0);
	}
	if (IS_ENABLED(CONFIG_KRETPROBES)) {
		ret = rkc_krp_new(test, "rkc_f_inner_ret", NULL, 0, false);
		RKC_EXPECT_INT(test, "register.inner_ret", rkc_reg_krp(test, &ret->rp), 0);
	}
	RKC_EXPECT_INT(test, "register.outer", rkc_reg_kp(test, &outer->kp), 0);
	for (i = 0; i < 3; i++)
		rkc_f_outer(1);
	/* An aggregate: every child counts the miss. */
	inner2 = rkc_kp_new(test, "rkc_f_inner", NULL, 0, false);
	RKC_EXPECT_INT(test, "register.inner2", rkc_reg_kp(test, &inner2->kp), 0);
	rkc_f_outer(1);
	RKC_EXPECT_INT(test, "recursion.inner_nmissed", inner->kp.nmissed, 4);
	RKC_EXPECT_INT(test, "recursion.inner2_nmissed", inner2->kp.nmissed, 1);
	off = rkc_off(&inner->kp, rkc_f_inner);
	RKC_EXPECT_STR(test, "recursion.kprobe", rkc_missed_of(test, "rkc_f_inner"),
		       rkc_join(test,
				rkc_missed_line(test, "k", "rkc_f_inner", off, 1, 0),
				rkc_missed_line(test, "k", "rkc_f_inner", off, 4, 0)));
	if (traced) {
		RKC_EXPECT_INT(test, "recursion.ftrace_nmissed", traced->kp.nmissed, 4);
		RKC_EXPECT_STR(test, "recursion.ftrace", rkc_missed_of(test, "rkc_f_inner_traced"),
			       rkc_missed_line(test, "k", "rkc_f_inner_traced",
					       rkc_off(&traced->kp, rkc_f_inner_traced), 4, 0));
	}
	if (ret) {
		RKC_EXPECT_INT(test, "recursion.kretprobe_nmissed",
			       ret->rp.kp.nmissed + ret->rp.nmissed, 4);
		RKC_EXPECT_STR(test, "recursion.kretprobe", rkc_missed_of(test, "rkc_f_inner_ret"),
			       rkc_missed_line(test, "r", "rkc_f_inner_ret",
					       rkc_off(&ret->rp.kp, rkc_f_inner_ret), 4, 0));
	}
	RKC_EXPECT_STR(test, "recursion.outer", rkc_missed_of(test, "rkc_f_outer"), "");

	if (!IS_ENABLED(CONFIG_KRETPROBES))
		kunit_skip(test, "CONFIG_KRETPROBES is off: no instance pools");
	/* No free instance: maxactive 1, three calls in flight. */
	pool = rkc_krp_new(test, "rkc_f_recurse", NULL, 0, false);
	pool->rp.maxactive = 1;
	RKC_EXPECT_INT(test, "register.pool", rkc_reg_krp(test, &pool->rp), 0);
	RKC_EXPECT_INT(test, "pool.call", RKC_CALL(rkc_f_recurse, 2), 2);
	RKC_EXPECT_INT(test, "pool.handler", pool->ret, 1);
	RKC_EXPECT_INT(test, "pool.nmissed", pool->rp.kp.nmissed + pool->rp.nmissed, 2);
	RKC_EXPECT_STR(test, "pool.missed", rkc_missed_of(test, "rkc_f_recurse"),
		       rkc_missed_line(test, "r", "rkc_f_recurse",
				       rkc_off(&pool->rp.kp, rkc_f_recurse), 0, 2));
	/* Unregistered, a probe is no longer listed. */
	rkc_unreg_krp(test, &pool->rp);
	RKC_EXPECT_STR(test, "unregistered.missed", rkc_missed_of(test, "rkc_f_recurse"), "");
}

static void rkc_kretprobe_pool(struct kunit *test)
{
	struct rkc_krp *r, *r3;

	if (!IS_ENABLED(CONFIG_KRETPROBES))
		kunit_skip(test, "CONFIG_KRETPROBES is off");
	r = rkc_krp_new(test, "rkc_f_recurse", NULL, 0, false);
	r->rp.maxactive = 1;
	RKC_EXPECT_INT(test, "maxactive_1.ret", rkc_reg_krp(test, &r->rp), 0);
	RKC_EXPECT_INT(test, "maxactive_1.call", RKC_CALL(rkc_f_recurse, 2), 2);
	RKC_EXPECT_INT(test, "maxactive_1.handler", r->ret, 1);
	RKC_EXPECT_INT(test, "maxactive_1.nmissed", r->rp.nmissed, 2);
	RKC_EXPECT_INT(test, "maxactive_1.kp_nmissed", r->rp.kp.nmissed, 0);
	RKC_EXPECT_STR(test, "maxactive_1.return_values", rkc_vals(test, r), "2");
	/* The instance went back to the pool on return. */
	RKC_CALL(rkc_f_recurse, 0);
	RKC_EXPECT_INT(test, "maxactive_1.handler_after", r->ret, 2);
	RKC_EXPECT_INT(test, "maxactive_1.nmissed_after", r->rp.nmissed, 2);
	rkc_unreg_krp(test, &r->rp);

	r3 = rkc_krp_new(test, "rkc_f_recurse", NULL, 0, false);
	r3->rp.maxactive = 3;
	RKC_EXPECT_INT(test, "maxactive_3.ret", rkc_reg_krp(test, &r3->rp), 0);
	RKC_CALL(rkc_f_recurse, 2);
	RKC_EXPECT_INT(test, "maxactive_3.handler", r3->ret, 3);
	RKC_EXPECT_INT(test, "maxactive_3.nmissed", r3->rp.nmissed, 0);
	RKC_EXPECT_STR(test, "maxactive_3.return_values", rkc_vals(test, r3), "0,1,2");
	RKC_CALL(rkc_f_recurse, 4);
	RKC_EXPECT_INT(test, "maxactive_3.depth_5_handler", r3->ret, 6);
	RKC_EXPECT_INT(test, "maxactive_3.depth_5_nmissed", r3->rp.nmissed, 2);
	rkc_unreg_krp(test, &r3->rp);
}

/* Nested calls of rkc_f_recurse(depth) until one misses nothing, or 10 s. */
static bool rkc_grown_for(struct rkc_krp *r, int depth)
{
	int i;

	for (i = 0; i < 200; i++) {
		unsigned long before = r->rp.nmissed + r->rp.kp.nmissed;

		RKC_CALL(rkc_f_recurse, depth);
		if (r->rp.nmissed + r->rp.kp.nmissed == before)
			return true;
		msleep(50);
	}
	return false;
}

/* The misses of one rkc_f_recurse(depth): depth + 1 calls in flight. */
static long rkc_misses_of_call(struct rkc_krp *r, int depth)
{
	unsigned long before = r->rp.nmissed + r->rp.kp.nmissed;

	RKC_CALL(rkc_f_recurse, depth);
	return r->rp.nmissed + r->rp.kp.nmissed - before;
}

static void rkc_kretprobe_grow(struct kunit *test)
{
	struct rkc_krp *r;
	unsigned long off;
	int ret;

	if (!IS_ENABLED(CONFIG_KRETPROBES))
		kunit_skip(test, "CONFIG_KRETPROBES is off");
	if (!IS_ENABLED(CONFIG_KPROBES_RUST))
		kunit_skip(test, "upstream C has no growing kretprobe pools: it ignores grow_max (issue 40): only run on the Rust core");

	/* Refused: a negative cap, or one no objpool holds. */
	r = rkc_krp_new(test, "rkc_f_recurse", NULL, 0, false);
	r->rp.maxactive = 1;
	r->rp.grow_max = -1;
	RKC_EXPECT_INT(test, "negative.register", rkc_reg_krp(test, &r->rp), -EINVAL);
	r = rkc_krp_new(test, "rkc_f_recurse", NULL, 0, false);
	r->rp.maxactive = 1;
	r->rp.grow_max = (1 << 24) + 1;
	RKC_EXPECT_INT(test, "too_big.register", rkc_reg_krp(test, &r->rp), -EINVAL);

	/* A cap at maxactive: the fixed pool, misses and all. */
	r = rkc_krp_new(test, "rkc_f_recurse", NULL, 0, false);
	r->rp.maxactive = 1;
	r->rp.grow_max = 1;
	RKC_EXPECT_INT(test, "cap_1.register", rkc_reg_krp(test, &r->rp), 0);
	RKC_EXPECT_INT(test, "cap_1.first_call_missed", rkc_misses_of_call(r, 2), 2);
	msleep(200);
	RKC_EXPECT_INT(test, "cap_1.later_call_missed", rkc_misses_of_call(r, 2), 2);
	RKC_EXPECT_INT(test, "cap_1.handler", r->ret, 2);
	rkc_unreg_krp(test, &r->rp);

	/* maxactive 1 growing to 8. */
	r = rkc_krp_new(test, "rkc_f_recurse", NULL, 0, false);
	r->rp.maxactive = 1;
	r->rp.grow_max = 8;
	ret = rkc_reg_krp(test, &r->rp);
	RKC_EXPECT_INT(test, "grow_8.register", ret, 0);
	if (ret)
		return;
	/* The first entry kicks the worker, which may grow the pool before the nested ones. */
	RKC_EXPECT_INT(test, "grow_8.first_call_missed_at_most_2", rkc_misses_of_call(r, 2) <= 2, 1);
	RKC_EXPECT_INT(test, "grow_8.depth_3_grown_within_10s", rkc_grown_for(r, 2), 1);
	RKC_EXPECT_INT(test, "grow_8.depth_3_missed", rkc_misses_of_call(r, 2), 0);
	RKC_EXPECT_INT(test, "grow_8.depth_7_grown_within_10s", rkc_grown_for(r, 6), 1);
	RKC_EXPECT_INT(test, "grow_8.depth_7_missed", rkc_misses_of_call(r, 6), 0);
	/* At the cap: 8 instances (each chunk makes an even total or the cap), 10 calls in flight. */
	RKC_EXPECT_INT(test, "grow_8.depth_10_first_missed", rkc_misses_of_call(r, 9), 2);
	msleep(200);
	RKC_EXPECT_INT(test, "grow_8.depth_10_later_missed", rkc_misses_of_call(r, 9), 2);
	RKC_EXPECT_INT(test, "grow_8.kp_nmissed", r->rp.kp.nmissed, 0);
	off = rkc_off(&r->rp.kp, rkc_f_recurse);
	RKC_EXPECT_STR(test, "grow_8.missed", rkc_missed_of(test, "rkc_f_recurse"),
		       rkc_missed_line(test, "r", "rkc_f_recurse", off, 0, r->rp.nmissed));
	rkc_unreg_krp(test, &r->rp);
	RKC_EXPECT_STR(test, "unregistered.missed", rkc_missed_of(test, "rkc_f_recurse"), "");
}

static void rkc_kretprobe_data(struct kunit *test)
{
	struct rkc_krp *r;

	if (!IS_ENABLED(CONFIG_KRETPROBES))
		kunit_skip(test, "CONFIG_KRETPROBES is off");
	r = rkc_krp_new(test, "rkc_f_data", NULL, 0, true);
	r->rp.data_size = KRETPROBE_MAX_DATA_SIZE;
	RKC_EXPECT_INT(test, "register", rkc_reg_krp(test, &r->rp), 0);
	RKC_EXPECT_INT(test, "call_7", rkc_f_data(7), 8);
	RKC_EXPECT_INT(test, "call_11", rkc_f_data(11), 12);
	RKC_EXPECT_INT(test, "entry", r->entry, 2);
	RKC_EXPECT_INT(test, "handler", r->ret, 2);
	RKC_EXPECT_INT(test, "data_seen_by_handler", r->data_ok, 2);
	RKC_EXPECT_STR(test, "return_values", rkc_vals(test, r), "8,12");
	RKC_EXPECT_INT(test, "nmissed", r->rp.nmissed, 0);
	rkc_unreg_krp(test, &r->rp);
}

static void rkc_kretprobe_entry_fail(struct kunit *test)
{
	struct rkc_krp *r;
	int i;

	if (!IS_ENABLED(CONFIG_KRETPROBES))
		kunit_skip(test, "CONFIG_KRETPROBES is off");
	r = rkc_krp_new(test, "rkc_f_entry", NULL, 0, true);
	r->fail_odd = true;
	r->rp.maxactive = 1;
	RKC_EXPECT_INT(test, "register", rkc_reg_krp(test, &r->rp), 0);
	for (i = 1; i <= 4; i++)
		rkc_f_entry(i);
	RKC_EXPECT_INT(test, "entry", r->entry, 4);
	RKC_EXPECT_INT(test, "handler", r->ret, 2);
	RKC_EXPECT_STR(test, "return_values", rkc_vals(test, r), "3,5");
	/* A refused instance goes back to the pool (maxactive 1), no miss. */
	RKC_EXPECT_INT(test, "nmissed", r->rp.nmissed, 0);
	rkc_unreg_krp(test, &r->rp);
}

/* ------------------------------------------------------------------ */
/* kprobes/list, kprobes/enabled, the sysctl. */

static void rkc_list_tags(struct kunit *test)
{
	struct rkc_kp *p, *q, *f;
	struct rkc_krp *fr = NULL;
	unsigned long poff = rkc_entry_off(rkc_f_plain);
	unsigned long foff;

	p = rkc_kp_new(test, "rkc_f_plain", NULL, 0, false);
	RKC_EXPECT_INT(test, "plain.ret", rkc_reg_kp(test, &p->kp), 0);
	RKC_LIST(test, "plain.list", p->kp.addr,
		 rkc_list_line(test, "k", "rkc_f_plain", poff, RKC_MOD, ""));

	q = rkc_kp_new(test, "rkc_f_plain2", NULL, 0, false);
	q->kp.flags = KPROBE_FLAG_DISABLED;
	RKC_EXPECT_INT(test, "disabled.ret", rkc_reg_kp(test, &q->kp), 0);
	RKC_LIST(test, "disabled.list", q->kp.addr,
		 rkc_list_line(test, "k", "rkc_f_plain2", rkc_off(&q->kp, rkc_f_plain2),
			       RKC_MOD, "[DISABLED]"));
	RKC_EXPECT_INT(test, "disabled.enable", enable_kprobe(&q->kp), 0);
	RKC_LIST(test, "enabled.list", q->kp.addr,
		 rkc_list_line(test, "k", "rkc_f_plain2", rkc_off(&q->kp, rkc_f_plain2),
			       RKC_MOD, ""));
	RKC_EXPECT_INT(test, "enabled.disable", disable_kprobe(&q->kp), 0);
	RKC_LIST(test, "redisabled.list", q->kp.addr,
		 rkc_list_line(test, "k", "rkc_f_plain2", rkc_off(&q->kp, rkc_f_plain2),
			       RKC_MOD, "[DISABLED]"));
	rkc_f_plain(1);
	rkc_f_plain2(1);
	RKC_EXPECT_INT(test, "hits", p->pre * 10 + q->pre, 10);

	if (!IS_ENABLED(CONFIG_KPROBES_ON_FTRACE))
		kunit_skip(test, "CONFIG_KPROBES_ON_FTRACE is off: no [FTRACE] probes to list");
	f = rkc_kp_new(test, "rkc_f_traced", NULL, 0, true);
	RKC_EXPECT_INT(test, "ftrace.ret", rkc_reg_kp(test, &f->kp), 0);
	foff = rkc_off(&f->kp, rkc_f_traced);
	RKC_NOTE(test, "ftrace.offset", "%lu", foff);
	RKC_EXPECT_INT(test, "ftrace.flag", !!(f->kp.flags & KPROBE_FLAG_FTRACE), 1);
	RKC_LIST(test, "ftrace.list", f->kp.addr,
		 rkc_list_line(test, "k", "rkc_f_traced", foff, RKC_MOD, "[FTRACE]"));
	rkc_f_traced(1);
	RKC_EXPECT_INT(test, "ftrace.pre", f->pre, 1);
	RKC_EXPECT_INT(test, "ftrace.post", f->post, 1);
	if (IS_ENABLED(CONFIG_KRETPROBES)) {
		fr = rkc_krp_new(test, "rkc_f_traced", NULL, 0, false);
		RKC_EXPECT_INT(test, "ftrace_kretprobe.ret", rkc_reg_krp(test, &fr->rp), 0);
		RKC_LIST(test, "ftrace_kretprobe.list", f->kp.addr,
			 rkc_join(test,
				  rkc_list_line(test, "r", "rkc_f_traced", foff, RKC_MOD, "[FTRACE]"),
				  rkc_list_line(test, "k", "rkc_f_traced", foff, RKC_MOD, "[FTRACE]")));
		rkc_f_traced(1);
		RKC_EXPECT_INT(test, "ftrace_kretprobe.handler", fr->ret, 1);
	}
	RKC_EXPECT_INT(test, "ftrace.disable", disable_kprobe(&f->kp), 0);
	RKC_LIST(test, "ftrace_disabled.list", f->kp.addr,
		 fr ? rkc_join(test,
			       rkc_list_line(test, "r", "rkc_f_traced", foff, RKC_MOD, "[FTRACE]"),
			       rkc_list_line(test, "k", "rkc_f_traced", foff, RKC_MOD,
					     "[DISABLED][FTRACE]")) :
		 rkc_list_line(test, "k", "rkc_f_traced", foff, RKC_MOD, "[DISABLED][FTRACE]"));
	rkc_f_traced(1);
	RKC_EXPECT_INT(test, "ftrace_disabled.pre", f->pre, fr ? 2 : 1);
	if (fr) {
		RKC_EXPECT_INT(test, "ftrace_disabled.kretprobe_handler", fr->ret, 2);
		rkc_unreg_krp(test, &fr->rp);
	}
	RKC_LIST(test, "ftrace_only_disabled.list", f->kp.addr,
		 rkc_list_line(test, "k", "rkc_f_traced", foff, RKC_MOD, "[DISABLED][FTRACE]"));
	rkc_unreg_kp(test, &f->kp);
	RKC_LIST(test, "ftrace_none.list", (void *)rkc_f_traced + foff, "");
}

static void rkc_optimized(struct kunit *test)
{
	struct rkc_kp *o, *p;
	int nop = rkc_nop_off(test, rkc_f_opt);
	char *lo, *lopt;
	void *addr;
	int i;

	if (!IS_ENABLED(CONFIG_HAVE_OPTPROBES))
		kunit_skip(test, "this arch has no optprobes in 6.12 (it does not select HAVE_OPTPROBES; x86 and powerpc do): no [OPTIMIZED] probes");
	if (!IS_ENABLED(CONFIG_OPTPROBES))
		kunit_skip(test, "CONFIG_OPTPROBES is off in this kernel's config: no [OPTIMIZED] probes");
	if (IS_ENABLED(CONFIG_PPC64))
		kunit_skip(test, "powerpc 6.12 optimizes no probe in module text, which this case probes: detours live in optinsn_slot, kernel text beyond a branch's 32 MiB reach from modules (0xc008...); rkc_optimized_kernel_text probes vfs_read");
	RKC_EXPECT_STR(test, "sysctl.initial", rkc_read_trim(test, RKC_OPT_SYSCTL), "0");
	o = rkc_kp_new(test, "rkc_f_opt", NULL, nop, false);
	RKC_EXPECT_INT(test, "register", rkc_reg_kp(test, &o->kp), 0);
	addr = o->kp.addr;
	lo = rkc_list_line(test, "k", "rkc_f_opt", nop, RKC_MOD, "");
	lopt = rkc_list_line(test, "k", "rkc_f_opt", nop, RKC_MOD, "[OPTIMIZED]");
	RKC_LIST(test, "sysctl_0.list", addr, lo);

	RKC_EXPECT_INT(test, "sysctl_1.write", rkc_write(test, RKC_OPT_SYSCTL, "1"), 0);
	RKC_EXPECT_INT(test, "sysctl_1.optimized_within_30s",
		       rkc_wait_list(test, addr, "[OPTIMIZED]", true, 30), 1);
	RKC_LIST(test, "sysctl_1.list", addr, lopt);
	for (i = 0; i < 3; i++)
		rkc_f_opt(1);
	RKC_EXPECT_INT(test, "sysctl_1.hits", o->pre, 3);

	RKC_EXPECT_INT(test, "sysctl_0_again.write", rkc_write(test, RKC_OPT_SYSCTL, "0"), 0);
	RKC_EXPECT_STR(test, "sysctl_0_again.read", rkc_read_trim(test, RKC_OPT_SYSCTL), "0");
	RKC_LIST(test, "sysctl_0_again.list", addr, lo);
	rkc_f_opt(1);
	RKC_EXPECT_INT(test, "sysctl_0_again.hits", o->pre, 4);

	RKC_EXPECT_INT(test, "sysctl_1_again.write", rkc_write(test, RKC_OPT_SYSCTL, "1"), 0);
	RKC_EXPECT_STR(test, "sysctl_1_again.read", rkc_read_trim(test, RKC_OPT_SYSCTL), "1");
	RKC_EXPECT_INT(test, "sysctl_1_again.optimized_within_30s",
		       rkc_wait_list(test, addr, "[OPTIMIZED]", true, 30), 1);
	RKC_LIST(test, "sysctl_1_again.list", addr, lopt);

	/* A post_handler cannot run on an optimized probe: adding one unoptimizes at once. */
	p = rkc_kp_new(test, NULL, addr, 0, true);
	RKC_EXPECT_INT(test, "post_handler.register", rkc_reg_kp(test, &p->kp), 0);
	RKC_LIST(test, "post_handler.list", addr, rkc_join(test, lo, lo));
	rkc_f_opt(1);
	RKC_EXPECT_INT(test, "post_handler.hits", o->pre * 100 + p->pre * 10 + p->post, 511);
	rkc_unreg_kp(test, &p->kp);
	RKC_EXPECT_INT(test, "post_handler_removed.optimized_within_30s",
		       rkc_wait_list(test, addr, "[OPTIMIZED]", true, 30), 1);
	RKC_LIST(test, "post_handler_removed.list", addr, lopt);
	rkc_f_opt(1);
	RKC_EXPECT_INT(test, "post_handler_removed.hits", o->pre, 6);

	RKC_EXPECT_INT(test, "restore.write", rkc_write(test, RKC_OPT_SYSCTL, "0"), 0);
	RKC_LIST(test, "restore.list", addr, lo);
	rkc_unreg_kp(test, &o->kp);
	RKC_LIST(test, "unregistered.list", addr, "");
}

/* ------------------------------------------------------------------ */
/* Upstream fixes after 6.12, applied to both cores. */

static u8 rkc_text_byte(const void *addr)
{
	return READ_ONCE(*(const u8 *)addr);
}

/* Wait up to @secs seconds until the byte at @addr is @val (an x86 jmp: optimized). */
static bool rkc_wait_byte(const void *addr, u8 val, unsigned int secs)
{
	unsigned int i;

	for (i = 0; i <= secs * 10; i++) {
		if (rkc_text_byte(addr) == val)
			return true;
		msleep(100);
	}
	return false;
}

static void rkc_optimizer_off(void *test)
{
	rkc_write(test, RKC_OPT_SYSCTL, "0");
}

/* Offsets of vfs_read tried, and how long each may take to be optimized. */
#define RKC_KOPT_FIRST	8
#define RKC_KOPT_LAST	64
#define RKC_KOPT_SECS	30
/* A shell command that calls read(2), hence vfs_read(). */
#define RKC_READ_SYSCALL	"read l < /proc/version"

static void rkc_optimized_kernel_text(struct kunit *test)
{
	struct rkc_kp *o = NULL;
	unsigned int off;
	char *lo, *lopt;
	void *addr;
	int hits;

	if (!IS_ENABLED(CONFIG_HAVE_OPTPROBES))
		kunit_skip(test, "this arch has no optprobes in 6.12 (it does not select HAVE_OPTPROBES; x86 and powerpc do): no [OPTIMIZED] probes");
	if (!IS_ENABLED(CONFIG_OPTPROBES))
		kunit_skip(test, "CONFIG_OPTPROBES is off in this kernel's config: no [OPTIMIZED] probes");
	if (!IS_ENABLED(CONFIG_PPC64))
		kunit_skip(test, "rkc_optimized covers this arch on this module's text; only powerpc needs a probe in vmlinux");
	RKC_EXPECT_STR(test, "sysctl.initial", rkc_read_trim(test, RKC_OPT_SYSCTL), "0");
	RKC_EXPECT_INT(test, "sysctl_1.write", rkc_write(test, RKC_OPT_SYSCTL, "1"), 0);
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test, rkc_optimizer_off, test), 0);
	for (off = RKC_KOPT_FIRST; off <= RKC_KOPT_LAST; off += 4) {
		o = rkc_kp_new(test, "vfs_read", NULL, off, false);
		if (rkc_reg_kp(test, &o->kp) == 0) {
			if (rkc_wait_list(test, o->kp.addr, "[OPTIMIZED]", true, RKC_KOPT_SECS))
				break;
			rkc_unreg_kp(test, &o->kp);
		}
		o = NULL;
	}
	KUNIT_ASSERT_NOT_NULL_MSG(test, o, "no probe on vfs_read+%d..+%d was optimized",
				  RKC_KOPT_FIRST, RKC_KOPT_LAST);
	RKC_NOTE(test, "optimized.offset", "%u", off);
	addr = o->kp.addr;
	lo = rkc_list_line(test, "k", "vfs_read", off, NULL, "");
	lopt = rkc_list_line(test, "k", "vfs_read", off, NULL, "[OPTIMIZED]");
	RKC_LIST(test, "optimized.list", addr, lopt);

	/*
	 * A read() goes through the detour: the shell's read builtin calls
	 * read(2); busybox cat would not, it copies with sendfile(2).
	 */
	hits = o->pre;
	RKC_EXPECT_INT(test, "optimized.read", rkc_sh(test, RKC_READ_SYSCALL), 0);
	RKC_EXPECT_INT(test, "optimized.read_hit", o->pre > hits, 1);
	RKC_LIST(test, "optimized_after_hits.list", addr, lopt);

	RKC_EXPECT_INT(test, "sysctl_0.write", rkc_write(test, RKC_OPT_SYSCTL, "0"), 0);
	RKC_LIST(test, "sysctl_0.list", addr, lo);
	hits = o->pre;
	RKC_EXPECT_INT(test, "sysctl_0.read", rkc_sh(test, RKC_READ_SYSCALL), 0);
	RKC_EXPECT_INT(test, "sysctl_0.read_hit", o->pre > hits, 1);

	RKC_EXPECT_INT(test, "sysctl_1_again.write", rkc_write(test, RKC_OPT_SYSCTL, "1"), 0);
	RKC_EXPECT_INT(test, "sysctl_1_again.optimized_within_30s",
		       rkc_wait_list(test, addr, "[OPTIMIZED]", true, RKC_KOPT_SECS), 1);
	RKC_LIST(test, "sysctl_1_again.list", addr, lopt);
	rkc_unreg_kp(test, &o->kp);
	RKC_LIST(test, "unregistered.list", addr, "");
}

static void rkc_optprobe_blocked_retry(struct kunit *test)
{
	int off = rkc_optblock_offset(rkc_f_optblock);
	struct rkc_kp *b, *p;
	void *addr;

	if (!IS_ENABLED(CONFIG_OPTPROBES))
		kunit_skip(test, "CONFIG_OPTPROBES is off: no optprobe to block");
	if (!IS_ENABLED(CONFIG_X86))
		kunit_skip(test, "this case reads the optprobe's jump (0xe9) and breakpoint (0xcc) bytes of x86; not written for this arch");
	KUNIT_ASSERT_GE_MSG(test, off, 0, "no optblock site in rkc_f_optblock");
	addr = (void *)rkc_f_optblock + off;
	RKC_EXPECT_INT(test, "sysctl_1.write", rkc_write(test, RKC_OPT_SYSCTL, "1"), 0);
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test, rkc_optimizer_off, test), 0);

	b = rkc_kp_new(test, NULL, addr, 0, false);
	RKC_EXPECT_INT(test, "b.register", rkc_reg_kp(test, &b->kp), 0);
	RKC_EXPECT_INT(test, "b.optimized_within_30s", rkc_wait_byte(addr, 0xe9, 30), 1);

	/* Under b's jump: b goes back to a breakpoint at once, p is optimized. */
	p = rkc_kp_new(test, NULL, addr + 2, 0, false);
	RKC_EXPECT_INT(test, "p.register", rkc_reg_kp(test, &p->kp), 0);
	RKC_EXPECT_INT(test, "p.b_byte", rkc_text_byte(addr), 0xcc);
	RKC_EXPECT_INT(test, "p.optimized_within_30s", rkc_wait_byte(addr + 2, 0xe9, 30), 1);
	RKC_EXPECT_INT(test, "p.b_still_blocked", rkc_text_byte(addr), 0xcc);
	rkc_f_optblock(1);
	RKC_EXPECT_INT(test, "p.hits", b->pre * 10 + p->pre, 11);

	/* p queued for unoptimizing, then freed by the optimizer: b is retried. */
	rkc_unreg_kp(test, &p->kp);
	RKC_EXPECT_INT(test, "p_gone.b_optimized_within_30s", rkc_wait_byte(addr, 0xe9, 30), 1);
	RKC_LIST(test, "p_gone.b_list", addr,
		 rkc_list_line(test, "k", "rkc_f_optblock", off, RKC_MOD, "[OPTIMIZED]"));
	RKC_LIST(test, "p_gone.p_list", addr + 2, "");
	rkc_f_optblock(1);
	RKC_EXPECT_INT(test, "p_gone.hits", b->pre, 2);
	rkc_unreg_kp(test, &b->kp);
	RKC_LIST(test, "unregistered.list", addr, "");
}

/*
 * A used aggregate queued for unoptimizing (its only child disabled) is forced onto the freeing
 * list when a probe with a post_handler joins it; the child enabled again and the post_handler
 * gone, optimize_kprobe() finds it on that list without OPTIMIZED. Upstream 6.12 WARNs there
 * and the probe stays a breakpoint (seen first in the 600 s kmemleak stress); the Rust core
 * moves it to the optimizing queue.
 */
static void rkc_optimize_from_freeing(struct kunit *test)
{
	int nop = rkc_nop_off(test, rkc_f_opt);
	struct rkc_kp *o, *q;
	void *addr;

	if (!IS_ENABLED(CONFIG_OPTPROBES))
		kunit_skip(test, "CONFIG_OPTPROBES is off: no optimizer queues");
	if (!IS_ENABLED(CONFIG_X86))
		kunit_skip(test, "this case reads the optprobe's jump (0xe9) and breakpoint (0xcc) bytes of x86; not written for this arch");
	if (!IS_ENABLED(CONFIG_KPROBES_RUST))
		kunit_skip(test, "upstream 6.12 C WARNs in optimize_kprobe() (!list_empty(&op->list)) and leaves the probe a breakpoint for good: only run on the Rust core");
	RKC_EXPECT_INT(test, "sysctl_1.write", rkc_write(test, RKC_OPT_SYSCTL, "1"), 0);
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test, rkc_optimizer_off, test), 0);
	o = rkc_kp_new(test, "rkc_f_opt", NULL, nop, false);
	RKC_EXPECT_INT(test, "o.register", rkc_reg_kp(test, &o->kp), 0);
	addr = o->kp.addr;
	RKC_EXPECT_INT(test, "o.optimized_within_30s", rkc_wait_byte(addr, 0xe9, 30), 1);

	/* Queued for unoptimizing; the optimizer runs 5 jiffies later. */
	RKC_EXPECT_INT(test, "o.disable", disable_kprobe(&o->kp), 0);
	q = rkc_kp_new(test, NULL, addr, 0, true);
	RKC_EXPECT_INT(test, "o.still_queued", rkc_text_byte(addr), 0xe9);
	RKC_EXPECT_INT(test, "q.register", rkc_reg_kp(test, &q->kp), 0);
	RKC_EXPECT_INT(test, "q.o_byte", rkc_text_byte(addr), 0xcc);
	RKC_EXPECT_INT(test, "o.enable", enable_kprobe(&o->kp), 0);
	rkc_unreg_kp(test, &q->kp);

	RKC_EXPECT_INT(test, "q_gone.o_optimized_within_30s", rkc_wait_byte(addr, 0xe9, 30), 1);
	RKC_LIST(test, "q_gone.list", addr,
		 rkc_list_line(test, "k", "rkc_f_opt", nop, RKC_MOD, "[OPTIMIZED]"));
	rkc_f_opt(1);
	RKC_EXPECT_INT(test, "q_gone.hits", o->pre * 10 + q->pre, 10);
	rkc_unreg_kp(test, &o->kp);
	RKC_LIST(test, "unregistered.list", addr, "");
}

/* The size of @fn's symbol, from "name+0x0/0x<size> [mod]"; 0 if not found. */
static unsigned long rkc_sym_size(void *fn)
{
	char buf[KSYM_SYMBOL_LEN];
	unsigned long size;
	char *slash;

	sprint_symbol(buf, (unsigned long)fn);
	slash = strchr(buf, '/');
	if (!slash || sscanf(slash + 1, "%lx", &size) != 1)
		return 0;
	return size;
}

static void rkc_blacklist_inside_symbol(struct kunit *test)
{
	unsigned long inner = (unsigned long)rkc_f_bl_inner;
	unsigned long next = (unsigned long)rkc_f_bl_next;
	unsigned long size = rkc_sym_size(rkc_f_bl_inner);
	struct rkc_kp *a, *n;

	/* The range 6.12 added must cover rkc_f_bl_next, or this case proves nothing. */
	KUNIT_ASSERT_GT(test, size, (unsigned long)RKC_BL_INSIDE);
	KUNIT_ASSERT_TRUE_MSG(test, next >= inner + RKC_BL_INSIDE &&
			      next + rkc_entry_off(rkc_f_bl_next) < inner + RKC_BL_INSIDE + size,
			      "rkc_f_bl_next is not right after rkc_f_bl_inner");
	/* grep, not rkc_file_sym(): the file is longer than the output buffer. */
	RKC_EXPECT_STR(test, "blacklist_lines",
		       strim(rkc_sh_out(test, "grep -c rkc_f_bl_ " RKC_KP_DIR "/blacklist || true")),
		       "0");
	a = rkc_kp_new(test, "rkc_f_bl_inner", NULL, 0, false);
	RKC_EXPECT_INT(test, "inner.register", rkc_reg_kp(test, &a->kp), 0);
	n = rkc_kp_new(test, "rkc_f_bl_next", NULL, 0, false);
	RKC_EXPECT_INT(test, "next.register", rkc_reg_kp(test, &n->kp), 0);
	rkc_f_bl_inner(1);
	rkc_f_bl_next(1);
	RKC_EXPECT_INT(test, "hits", a->pre * 10 + n->pre, 11);
	rkc_unreg_kp(test, &n->kp);
	rkc_unreg_kp(test, &a->kp);
}

/*
 * C does not bound the offset by the symbol's size: _kprobe_addr() looks up
 * the symbol that holds sym + offset and decides "function entry" for that
 * one. A kprobe past the end of lo lands in hi; a kretprobe on
 * "lo + (hi - lo)" is a kretprobe on hi. The batch takes the Rust core's
 * symbol-batch path (glue/symbatch.rs) through the same inputs.
 */
static void rkc_offset_past_end(struct kunit *test)
{
	void *lo = rkc_f_past, *hi = rkc_f_past2;
	const char *lo_sym = "rkc_f_past", *hi_sym = "rkc_f_past2";
	unsigned long gap, eoff;
	struct rkc_kp *k, *b;
	struct rkc_krp *r;
	struct kprobe *kps[2];
	int nop2;

	if (lo > hi) {
		swap(lo, hi);
		swap(lo_sym, hi_sym);
	}
	gap = (unsigned long)hi - (unsigned long)lo;
	/* lo's kallsyms size ends at the next symbol, at or before hi: gap is past its end. */
	KUNIT_ASSERT_GT(test, rkc_sym_size(lo), 0UL);
	KUNIT_ASSERT_LE(test, rkc_sym_size(lo), gap);
	KUNIT_ASSERT_LT(test, gap, 0x10000UL);
	/* hi's second NOP: an instruction boundary that is not the entry. */
	nop2 = rkc_nop_off(test, hi) + 8;
	eoff = rkc_entry_off(hi);

	k = rkc_kp_new(test, lo_sym, NULL, gap + nop2, false);
	RKC_EXPECT_INT(test, "kprobe.ret", rkc_reg_kp(test, &k->kp), 0);
	RKC_EXPECT_INT(test, "kprobe.addr_in_next", k->kp.addr == hi + nop2, 1);
	RKC_EXPECT_INT(test, "kprobe.flags", k->kp.flags, 0);
	RKC_LIST(test, "kprobe.list", hi + nop2,
		 rkc_list_line(test, "k", hi_sym, nop2, RKC_MOD, ""));
	rkc_f_past(1);
	rkc_f_past2(1);
	RKC_EXPECT_INT(test, "kprobe.hits", k->pre, 1);
	rkc_unreg_kp(test, &k->kp);

	k = rkc_kp_new(test, lo_sym, NULL, gap + nop2 + 3, false);
	rkc_refuse_kp(test, "kprobe.mid_insn_in_next", &k->kp, RKC_MID_INSN_ERRNO);
	RKC_EXPECT_INT(test, "kprobe.mid_insn_in_next.addr_kept", k->kp.addr == hi + nop2 + 3, 1);

	/* A batch: the good entry is renormalised the same way, then rolled back. */
	k = rkc_kp_new(test, lo_sym, NULL, gap + nop2, false);
	b = rkc_kp_new(test, lo_sym, NULL, gap + nop2 + 3, false);
	b->kp.flags = KPROBE_FLAG_DISABLED;	/* never armed if wrongly accepted */
	kps[0] = &k->kp;
	kps[1] = &b->kp;
	RKC_EXPECT_INT(test, "batch.ret", rkc_reg_kps(test, kps, 2), RKC_MID_INSN_ERRNO);
	RKC_EXPECT_INT(test, "batch.first_addr_in_next", k->kp.addr == hi + nop2, 1);
	RKC_EXPECT_INT(test, "batch.bad_addr_kept", b->kp.addr == hi + nop2 + 3, 1);
	rkc_f_past2(1);
	RKC_EXPECT_INT(test, "batch.hits", k->pre, 0);
	RKC_LIST(test, "batch.list", hi + nop2, "");
	unregister_kprobe(&k->kp);	/* harmless if rolled back */

	if (IS_ENABLED(CONFIG_X86_64)) {
		/*
		 * Modules sit in the top 2 GiB: sym + 0xffffffff wraps below
		 * 4 GiB, where no symbol is (-ENOENT, addr not written).
		 */
		k = rkc_kp_new(test, lo_sym, NULL, UINT_MAX, false);
		rkc_refuse_kp(test, "kprobe.offset_uint_max", &k->kp, -ENOENT);
		RKC_EXPECT_INT(test, "kprobe.offset_uint_max.addr_null", k->kp.addr == NULL, 1);
	} else {
		RKC_NOTE(test, "kprobe.offset_uint_max", "%s", "n/a (not x86_64)");
	}

	if (!IS_ENABLED(CONFIG_KRETPROBES))
		kunit_skip(test, "CONFIG_KRETPROBES is off: the kretprobe half is not tested");
	/* Upstream quirk kept: "lo + (hi - lo)" is hi's entry, so a kretprobe there probes hi. */
	r = rkc_krp_new(test, lo_sym, NULL, gap + eoff, false);
	RKC_EXPECT_INT(test, "kretprobe_entry.ret", rkc_reg_krp(test, &r->rp), 0);
	RKC_EXPECT_INT(test, "kretprobe_entry.addr_in_next", r->rp.kp.addr == hi + eoff, 1);
	RKC_EXPECT_INT(test, "kretprobe_entry.flags", r->rp.kp.flags, KPROBE_FLAG_ON_FUNC_ENTRY);
	RKC_LIST(test, "kretprobe_entry.list", hi + eoff,
		 rkc_list_line(test, "r", hi_sym, eoff, RKC_MOD, ""));
	rkc_f_past(1);
	rkc_f_past2(1);
	RKC_EXPECT_INT(test, "kretprobe_entry.handler", r->ret, 1);
	RKC_EXPECT_STR(test, "kretprobe_entry.return_values", rkc_vals(test, r), "2");
	rkc_unreg_krp(test, &r->rp);

	r = rkc_krp_new(test, lo_sym, NULL, gap + nop2, false);
	rkc_refuse_krp(test, "kretprobe_not_entry", &r->rp, -EINVAL);
	if (IS_ENABLED(CONFIG_X86_64)) {
		r = rkc_krp_new(test, lo_sym, NULL, UINT_MAX, false);
		rkc_refuse_krp(test, "kretprobe.offset_uint_max", &r->rp, -ENOENT);
	}
}

static void rkc_enabled_restore(void *test)
{
	rkc_sh(NULL, "echo 1 > " RKC_KP_DIR "/enabled");
}

static void rkc_enabled(struct kunit *test)
{
	struct rkc_kp *q, *r, *s = NULL;

	q = rkc_kp_new(test, "rkc_f_enabled", NULL, 0, false);
	RKC_EXPECT_INT(test, "register.q", rkc_reg_kp(test, &q->kp), 0);
	if (IS_ENABLED(CONFIG_KPROBES_ON_FTRACE)) {
		s = rkc_kp_new(test, "rkc_f_enabled_traced", NULL, 0, false);
		RKC_EXPECT_INT(test, "register.ftrace", rkc_reg_kp(test, &s->kp), 0);
	}
	rkc_f_enabled(1);
	rkc_f_enabled_traced(1);
	RKC_EXPECT_INT(test, "armed.hits", q->pre, 1);
	if (s)
		RKC_EXPECT_INT(test, "armed.ftrace_hits", s->pre, 1);
	RKC_EXPECT_STR(test, "armed.read", rkc_read_trim(test, RKC_KP_DIR "/enabled"), "1");

	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test, rkc_enabled_restore, test), 0);
	RKC_EXPECT_INT(test, "disarm.write", rkc_write(test, RKC_KP_DIR "/enabled", "0"), 0);
	RKC_EXPECT_STR(test, "disarm.read", rkc_read_trim(test, RKC_KP_DIR "/enabled"), "0");
	rkc_f_enabled(1);
	rkc_f_enabled_traced(1);
	RKC_EXPECT_INT(test, "disarmed.hits", q->pre, 1);
	if (s)
		RKC_EXPECT_INT(test, "disarmed.ftrace_hits", s->pre, 1);
	RKC_LIST(test, "disarmed.list", q->kp.addr,
		 rkc_list_line(test, "k", "rkc_f_enabled", rkc_off(&q->kp, rkc_f_enabled),
			       RKC_MOD, ""));
	r = rkc_kp_new(test, "rkc_f_enabled2", NULL, 0, false);
	RKC_EXPECT_INT(test, "disarmed.register", rkc_reg_kp(test, &r->kp), 0);
	rkc_f_enabled2(1);
	RKC_EXPECT_INT(test, "disarmed.new_probe_hits", r->pre, 0);
	RKC_EXPECT_INT(test, "disarm.write_twice", rkc_write(test, RKC_KP_DIR "/enabled", "0"), 0);

	RKC_EXPECT_INT(test, "rearm.write", rkc_write(test, RKC_KP_DIR "/enabled", "1"), 0);
	RKC_EXPECT_STR(test, "rearm.read", rkc_read_trim(test, RKC_KP_DIR "/enabled"), "1");
	rkc_f_enabled(1);
	rkc_f_enabled_traced(1);
	rkc_f_enabled2(1);
	RKC_EXPECT_INT(test, "rearmed.hits", q->pre, 2);
	if (s)
		RKC_EXPECT_INT(test, "rearmed.ftrace_hits", s->pre, 2);
	RKC_EXPECT_INT(test, "rearmed.new_probe_hits", r->pre, 1);
	RKC_EXPECT_INT(test, "rearm.write_twice", rkc_write(test, RKC_KP_DIR "/enabled", "1"), 0);
}

/* The handler runs of a probe @p without and a probe @q with a post_handler. */
static int rkc_pq_hits(struct rkc_kp *p, struct rkc_kp *q)
{
	return p->pre * 100 + q->pre * 10 + q->post;
}

static void rkc_ftrace_aggr_gains_post_handler(struct kunit *test)
{
	struct rkc_kp *p, *q;
	void *addr;
	int i;

	if (!IS_ENABLED(CONFIG_KPROBES_ON_FTRACE))
		kunit_skip(test, "CONFIG_KPROBES_ON_FTRACE is off: no kprobes on ftrace");
	if (!IS_ENABLED(CONFIG_KPROBES_RUST))
		kunit_skip(test, "upstream 6.12 C disarms an ftrace aggregate that gained a post_handler through kprobe_ipmodify_ops, where it never was armed: kprobes/enabled 0 fails (-ENOENT) after a WARN, the probe keeps firing and kprobe_ftrace_ops keeps a user too many (docs/findings/ftrace-aggregate-disarm.md): only run on the Rust core");
	p = rkc_kp_new(test, "rkc_f_aggr_traced", NULL, 0, false);
	RKC_EXPECT_INT(test, "plain.register", rkc_reg_kp(test, &p->kp), 0);
	RKC_EXPECT_INT(test, "plain.ftrace", !!(p->kp.flags & KPROBE_FLAG_FTRACE), 1);
	addr = p->kp.addr;
	q = rkc_kp_new(test, "rkc_f_aggr_traced", NULL, 0, true);
	RKC_EXPECT_INT(test, "post.register", rkc_reg_kp(test, &q->kp), 0);
	rkc_f_aggr_traced(1);
	RKC_EXPECT_INT(test, "armed.hits", rkc_pq_hits(p, q), 111);

	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test, rkc_enabled_restore, test), 0);
	for (i = 1; i <= 3; i++) {
		RKC_EXPECT_INT(test, "disarm.write",
			       rkc_write(test, RKC_KP_DIR "/enabled", "0"), 0);
		rkc_f_aggr_traced(1);
		RKC_EXPECT_INT(test, "disarmed.hits", rkc_pq_hits(p, q), 111 * i);
		RKC_EXPECT_INT(test, "rearm.write",
			       rkc_write(test, RKC_KP_DIR "/enabled", "1"), 0);
		rkc_f_aggr_traced(1);
		RKC_EXPECT_INT(test, "rearmed.hits", rkc_pq_hits(p, q), 111 * (i + 1));
	}
	rkc_unreg_kp(test, &q->kp);
	rkc_f_aggr_traced(1);
	RKC_EXPECT_INT(test, "post_gone.hits", rkc_pq_hits(p, q), 544);
	rkc_unreg_kp(test, &p->kp);
	rkc_f_aggr_traced(1);
	RKC_EXPECT_INT(test, "unregistered.hits", p->pre, 5);
	RKC_LIST(test, "unregistered.list", addr, "");
}

/* ------------------------------------------------------------------ */
/* A module that goes away. */

/* The offset of @addr in its symbol, as kallsyms says. */
static unsigned long rkc_sym_off(void *addr)
{
	char buf[KSYM_SYMBOL_LEN];
	unsigned long off = ~0UL;
	char *plus;

	sprint_symbol(buf, (unsigned long)addr);
	plus = strchr(buf, '+');
	if (!plus || sscanf(plus, "+0x%lx", &off) != 1)
		return ~0UL;
	return off;
}

#define RKC_TARGET_KO	"/lib/modules/" RKC_TARGET_MOD ".ko"
#define RKC_TARGET_CALL	"/sys/module/" RKC_TARGET_MOD "/parameters/call"

static void rkc_target_unload(void *test)
{
	rkc_sh(NULL, "grep -q '^" RKC_TARGET_MOD " ' /proc/modules && rmmod " RKC_TARGET_MOD);
}

static void rkc_module_gone(struct kunit *test)
{
	struct rkc_kp *k1, *k2, *k3, *k4, *k5;
	struct rkc_krp *r1 = NULL;
	char *gone_ftrace, *lt;
	void *a1, *a2;

	if (!IS_ENABLED(CONFIG_MODULE_UNLOAD))
		kunit_skip(test, "CONFIG_MODULE_UNLOAD is off: cannot unload the target module");
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test, rkc_target_unload, test), 0);
	RKC_EXPECT_INT(test, "insmod", rkc_sh(test, "insmod " RKC_TARGET_KO), 0);

	k1 = rkc_kp_new(test, "rkc_target_notrace", NULL, 0, false);
	RKC_EXPECT_INT(test, "register.notrace", rkc_reg_kp(test, &k1->kp), 0);
	k2 = rkc_kp_new(test, "rkc_target_traced", NULL, 0, false);
	RKC_EXPECT_INT(test, "register.traced", rkc_reg_kp(test, &k2->kp), 0);
	if (IS_ENABLED(CONFIG_KRETPROBES)) {
		r1 = rkc_krp_new(test, "rkc_target_traced", NULL, 0, false);
		RKC_EXPECT_INT(test, "register.kretprobe", rkc_reg_krp(test, &r1->rp), 0);
	}
	a1 = k1->kp.addr;
	a2 = k2->kp.addr;
	KUNIT_ASSERT_NOT_NULL(test, a1);
	KUNIT_ASSERT_NOT_NULL(test, a2);
	RKC_EXPECT_INT(test, "trigger", rkc_write(test, RKC_TARGET_CALL, "1"), 0);
	RKC_EXPECT_INT(test, "live.hits", k1->pre * 10 + k2->pre, 11);
	if (r1)
		RKC_EXPECT_INT(test, "live.kretprobe_handler", r1->ret, 1);
	RKC_LIST(test, "live.list_notrace", a1,
		 rkc_list_line(test, "k", "rkc_target_notrace", rkc_sym_off(a1),
			       RKC_TARGET_MOD, ""));
	lt = rkc_list_line(test, "k", "rkc_target_traced", rkc_sym_off(a2), RKC_TARGET_MOD,
			   IS_ENABLED(CONFIG_KPROBES_ON_FTRACE) ? "[FTRACE]" : "");
	if (r1)
		lt = rkc_join(test,
			      rkc_list_line(test, "r", "rkc_target_traced", rkc_sym_off(a2),
					    RKC_TARGET_MOD,
					    IS_ENABLED(CONFIG_KPROBES_ON_FTRACE) ? "[FTRACE]" : ""),
			      lt);
	RKC_LIST(test, "live.list_traced", a2, lt);

	RKC_EXPECT_INT(test, "rmmod", rkc_sh(test, "rmmod " RKC_TARGET_MOD), 0);
	RKC_EXPECT_INT(test, "gone.flag", !!(k1->kp.flags & KPROBE_FLAG_GONE), 1);
	RKC_EXPECT_INT(test, "gone.flag_traced", !!(k2->kp.flags & KPROBE_FLAG_GONE), 1);
	RKC_LIST(test, "gone.list_notrace", a1, "ADDR  k  0xADDR [GONE]");
	gone_ftrace = IS_ENABLED(CONFIG_KPROBES_ON_FTRACE) ?
		      "ADDR  k  0xADDR [GONE][FTRACE]" : "ADDR  k  0xADDR [GONE]";
	if (r1) {
		RKC_EXPECT_INT(test, "gone.flag_kretprobe", !!(r1->rp.kp.flags & KPROBE_FLAG_GONE), 1);
		RKC_LIST(test, "gone.list_traced", a2,
			 rkc_fmt(test, "%s|%s", IS_ENABLED(CONFIG_KPROBES_ON_FTRACE) ?
				 "ADDR  r  0xADDR [GONE][FTRACE]" : "ADDR  r  0xADDR [GONE]",
				 gone_ftrace));
		RKC_EXPECT_INT(test, "gone.enable_kretprobe", enable_kprobe(&r1->rp.kp), -EINVAL);
	} else {
		RKC_LIST(test, "gone.list_traced", a2, gone_ftrace);
	}
	RKC_EXPECT_INT(test, "gone.enable", enable_kprobe(&k1->kp), -EINVAL);
	RKC_EXPECT_INT(test, "gone.enable_traced", enable_kprobe(&k2->kp), -EINVAL);
	RKC_EXPECT_INT(test, "gone.disable", disable_kprobe(&k1->kp), 0);
	RKC_LIST(test, "gone.list_after_disable", a1, "ADDR  k  0xADDR [GONE]");
	k3 = rkc_kp_new(test, "rkc_target_notrace", NULL, 0, false);
	rkc_refuse_kp(test, "gone.register_symbol", &k3->kp, -ENOENT);
	k4 = rkc_kp_new(test, NULL, a1, 0, false);
	rkc_refuse_kp(test, "gone.register_address", &k4->kp, -ENOENT);

	if (r1)
		rkc_unreg_krp(test, &r1->rp);
	rkc_unreg_kp(test, &k2->kp);
	rkc_unreg_kp(test, &k1->kp);
	RKC_LIST(test, "unregistered.list_notrace", a1, "");
	RKC_LIST(test, "unregistered.list_traced", a2, "");

	/* Loaded again, it is probeable again. */
	RKC_EXPECT_INT(test, "reload.insmod", rkc_sh(test, "insmod " RKC_TARGET_KO), 0);
	k5 = rkc_kp_new(test, "rkc_target_notrace", NULL, 0, false);
	RKC_EXPECT_INT(test, "reload.register", rkc_reg_kp(test, &k5->kp), 0);
	RKC_EXPECT_INT(test, "reload.trigger", rkc_write(test, RKC_TARGET_CALL, "1"), 0);
	RKC_EXPECT_INT(test, "reload.hits", k5->pre, 1);
	rkc_unreg_kp(test, &k5->kp);
	RKC_EXPECT_INT(test, "reload.rmmod", rkc_sh(test, "rmmod " RKC_TARGET_MOD), 0);
}

#define RKC_TARGET_INIT_STATE	"/sys/module/" RKC_TARGET_MOD "/parameters/init_probe_state"

static void rkc_module_init_gone(struct kunit *test)
{
	if (!IS_ENABLED(CONFIG_MODULE_UNLOAD))
		kunit_skip(test, "CONFIG_MODULE_UNLOAD is off: cannot unload the target module");
	/*
	 * Upstream 6.12 x86 oopses on this registration: can_optimize() decodes
	 * the probed function in place up to its kallsyms size, which for the
	 * last function of a module's init text runs to the end of the mapping,
	 * and insn_decode() reads past it (C, and the Rust core on C's arch).
	 */
	if (IS_ENABLED(CONFIG_X86) && IS_ENABLED(CONFIG_OPTPROBES))
		kunit_skip(test, "x86 OPTPROBES: upstream 6.12 oopses decoding past a module's init text (docs/findings/x86-optprobe-init-text-end.md)");
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test, rkc_target_unload, test), 0);
	RKC_EXPECT_INT(test, "insmod", rkc_sh(test, "insmod " RKC_TARGET_KO " init_probe=1"), 0);
	RKC_EXPECT_STR(test, "state", rkc_read_trim(test, RKC_TARGET_INIT_STATE),
		       RKC_MODULE_INIT_FREED ? "ret=0,0 hits=1,1 gone=1,1" :
		       "ret=0,0 hits=1,1 gone=0,0");
	RKC_EXPECT_INT(test, "rmmod", rkc_sh(test, "rmmod " RKC_TARGET_MOD), 0);
}

/* ------------------------------------------------------------------ */
/* tracefs kprobe events. */

#define RKC_EVENTS	RKC_TRACING "/kprobe_events"

static void rkc_events_cleanup(void *test)
{
	rkc_sh(NULL, "echo 0 > " RKC_TRACING "/events/rkc/enable; "
	       "echo '-:rkc/ent' >> " RKC_EVENTS "; echo '-:rkc/ret' >> " RKC_EVENTS);
}

/* The trace lines of @event, from the event name on (no task, CPU or time). */
static char *rkc_trace_lines(struct kunit *test, const char *event)
{
	char *trace = rkc_sh_out(test, "cat " RKC_TRACING "/trace");
	char *out = rkc_fmt(test, "%s", "");
	char *pat = rkc_fmt(test, " %s: ", event);
	char *line = trace;

	while (*line) {
		char *nl = strchr(line, '\n');
		char *hit;

		if (nl)
			*nl = '\0';
		hit = line[0] != '#' ? strstr(line, pat) : NULL;
		if (hit)
			out = rkc_fmt(test, "%s%s%s", out, *out ? "|" : "", hit + 1);
		if (!nl)
			break;
		line = nl + 1;
	}
	return out;
}

static void rkc_kprobe_events(struct kunit *test)
{
	unsigned long off = rkc_entry_off(rkc_f_event);
	const char *tags = IS_ENABLED(CONFIG_KPROBES_ON_FTRACE) ? "[FTRACE]" : "";
	char *defined, *ret, *hits;
	int i, n;

	if (!IS_ENABLED(CONFIG_KPROBE_EVENTS))
		kunit_skip(test, "CONFIG_KPROBE_EVENTS is off: no kprobe_events");
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test, rkc_events_cleanup, test), 0);
	RKC_EXPECT_INT(test, "define.p",
		       rkc_sh(test, "echo 'p:rkc/ent rkc_f_event a=$arg1' >> " RKC_EVENTS), 0);
	RKC_EXPECT_INT(test, "define.r",
		       rkc_sh(test, "echo 'r:rkc/ret rkc_f_event rv=$retval' >> " RKC_EVENTS), 0);
	defined = strim(rkc_sh_out(test, "grep rkc/ " RKC_EVENTS));
	strreplace(defined, '\n', '|');
	RKC_NOTE(test, "define.kprobe_events", "%s", defined);
	KUNIT_EXPECT_NOT_NULL(test, strstr(defined, "p:rkc/ent rkc_f_event a=$arg1"));
	KUNIT_EXPECT_NOT_NULL(test, strstr(defined, ":rkc/ret rkc_f_event rv=$retval"));
	RKC_EXPECT_STR(test, "define.list", rkc_list_sym(test, "rkc_f_event+"),
		       rkc_join(test,
				rkc_list_line(test, "r", "rkc_f_event", off, RKC_MOD,
					      rkc_fmt(test, "[DISABLED]%s", tags)),
				rkc_list_line(test, "k", "rkc_f_event", off, RKC_MOD,
					      rkc_fmt(test, "[DISABLED]%s", tags))));

	RKC_EXPECT_INT(test, "enable",
		       rkc_sh(test, "echo > " RKC_TRACING "/trace; echo 1 > "
			      RKC_TRACING "/events/rkc/enable"), 0);
	RKC_EXPECT_STR(test, "enabled.list", rkc_list_sym(test, "rkc_f_event+"),
		       rkc_join(test, rkc_list_line(test, "r", "rkc_f_event", off, RKC_MOD, tags),
				rkc_list_line(test, "k", "rkc_f_event", off, RKC_MOD, tags)));
	for (i = 0; i < 2; i++)
		rkc_event_caller(0x1234);
	RKC_EXPECT_INT(test, "disable",
		       rkc_sh(test, "echo 0 > " RKC_TRACING "/events/rkc/enable"), 0);
	rkc_event_caller(0x1234);
	/*
	 * A p: event on a breakpoint probe runs in the breakpoint handler, an
	 * NMI on riscv, where the ring buffer writes nothing without an
	 * NMI-safe cmpxchg (ARCH_HAVE_NMI_SAFE_CMPXCHG, which riscv 6.12 lacks):
	 * the event counts its hits in kprobe_profile and records none, on C
	 * as on Rust. An [FTRACE] probe's handler is no NMI.
	 */
	RKC_EXPECT_STR(test, "fired.p", rkc_trace_lines(test, "ent"),
		       IS_ENABLED(CONFIG_ARCH_HAVE_NMI_SAFE_CMPXCHG) ||
		       IS_ENABLED(CONFIG_KPROBES_ON_FTRACE) ?
		       rkc_fmt(test, "ent: (%pS) a=0x1234|ent: (%pS) a=0x1234",
			       (void *)rkc_f_event + off, (void *)rkc_f_event + off) : "");
	hits = rkc_sh_out(test, "grep -w ent %s | tr -s ' ' | cut -d' ' -f3",
			  RKC_TRACING "/kprobe_profile");
	RKC_EXPECT_STR(test, "fired.p_hits", strim(hits), "2");
	ret = rkc_trace_lines(test, "ret");
	RKC_NOTE(test, "fired.r", "%s", ret);
	for (n = 0; (ret = strstr(ret, "<- rkc_f_event) rv=0x1235")); n++)
		ret++;
	RKC_EXPECT_INT(test, "fired.r_count", n, 2);

	RKC_EXPECT_INT(test, "remove",
		       rkc_sh(test, "echo '-:rkc/ent' >> " RKC_EVENTS "; echo '-:rkc/ret' >> "
			      RKC_EVENTS), 0);
	RKC_EXPECT_STR(test, "removed.kprobe_events",
		       strim(rkc_sh_out(test, "grep rkc/ " RKC_EVENTS " || true")), "");
	RKC_EXPECT_STR(test, "removed.list", rkc_list_sym(test, "rkc_f_event+"), "");
}

/*
 * What users can trace of the kprobes core itself: kprobe_events accepts a
 * p: probe at the entry of the exported API (a [FTRACE] probe where the
 * functions have an ftrace site, as C's do; refused where the ftrace call
 * is the entry and there are no kprobes on ftrace, riscv) and refuses the
 * hit path (NOKPROBE_SYMBOL in C); the function tracer's filter takes the API.
 */
#define RKC_FN(f)	{ #f, (void *)f }
static const struct {
	const char *name;
	void *fn;
} rkc_core_api[] = {
	RKC_FN(register_kprobe), RKC_FN(unregister_kprobe), RKC_FN(register_kprobes),
	RKC_FN(unregister_kprobes), RKC_FN(enable_kprobe), RKC_FN(disable_kprobe),
	RKC_FN(register_kretprobe), RKC_FN(unregister_kretprobe),
	RKC_FN(register_kretprobes), RKC_FN(unregister_kretprobes),
};

static const char * const rkc_core_hit_path[] = {
	"get_kprobe", "kprobes_inc_nmissed_count", "opt_pre_handler",
};

static void rkc_core_events_cleanup(void *test)
{
	rkc_sh(NULL, "echo 0 > " RKC_TRACING "/events/rkc_core/enable; "
	       "echo > " RKC_TRACING "/set_ftrace_filter; "
	       "for e in $(grep -o 'rkc_core/[a-z0-9_]*' " RKC_EVENTS "); do "
	       "echo \"-:$e\" >> " RKC_EVENTS "; done");
}

static void rkc_core_traceable(struct kunit *test)
{
	const char *tags = IS_ENABLED(CONFIG_KPROBES_ON_FTRACE) ? "[FTRACE]" : "";
	struct kprobe kp = { .symbol_name = "rkc_f_plain" };
	char *trace;
	int i, n;

	if (!IS_ENABLED(CONFIG_KPROBE_EVENTS) || !IS_ENABLED(CONFIG_FUNCTION_TRACER))
		kunit_skip(test, "CONFIG_KPROBE_EVENTS or CONFIG_FUNCTION_TRACER is off");
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test, rkc_core_events_cleanup, test), 0);
	for (i = 0; i < ARRAY_SIZE(rkc_core_api); i++) {
		const char *fn = rkc_core_api[i].name;

		RKC_EXPECT_INT(test, rkc_fmt(test, "api.%s.define", fn),
			       rkc_sh(test, "echo 'p:rkc_core/p%d %s' >> " RKC_EVENTS
				      " 2>/dev/null", i, fn) != 0,
			       !RKC_TRACED_ENTRY_PROBEABLE);
		RKC_EXPECT_STR(test, rkc_fmt(test, "api.%s.list", fn),
			       rkc_list_sym(test, rkc_fmt(test, "  %s+", fn)),
			       !RKC_TRACED_ENTRY_PROBEABLE ? "" :
			       rkc_list_line(test, "k", fn, rkc_entry_off(rkc_core_api[i].fn),
					     NULL, rkc_fmt(test, "[DISABLED]%s", tags)));
		RKC_EXPECT_INT(test, rkc_fmt(test, "api.%s.ftrace_filter", fn),
			       rkc_sh(test, "echo %s >> " RKC_TRACING "/set_ftrace_filter", fn), 0);
	}
	for (i = 0; i < ARRAY_SIZE(rkc_core_hit_path); i++) {
		const char *fn = rkc_core_hit_path[i];

		RKC_EXPECT_INT(test, rkc_fmt(test, "hit.%s.refused", fn),
			       rkc_sh(test, "echo 'p:rkc_core/h%d %s' >> " RKC_EVENTS " 2>/dev/null",
				      i, fn) != 0, 1);
	}

	if (!RKC_TRACED_ENTRY_PROBEABLE)
		return;
	/* The register_kprobe event fires when this case registers a probe. */
	RKC_EXPECT_INT(test, "enable",
		       rkc_sh(test, "echo > " RKC_TRACING "/trace; echo 1 > "
			      RKC_TRACING "/events/rkc_core/p0/enable"), 0);
	RKC_EXPECT_INT(test, "register", rkc_reg_kp(test, &kp), 0);
	rkc_unreg_kp(test, &kp);
	RKC_EXPECT_INT(test, "disable",
		       rkc_sh(test, "echo 0 > " RKC_TRACING "/events/rkc_core/p0/enable"), 0);
	trace = rkc_trace_lines(test, "p0");
	for (n = 0; (trace = strstr(trace, "p0: (register_kprobe+")); n++)
		trace++;
	RKC_EXPECT_INT(test, "fired", n, 1);
}

/* ------------------------------------------------------------------ */

static char rkc_opt_saved[8];

/* Optimizer off while the suite runs (see the top comment); restored after. */
static int rkc_suite_init(struct kunit_suite *suite)
{
	char buf[8] = "";
	struct file *f;
	loff_t pos = 0;
	ssize_t n;

	if (!IS_ENABLED(CONFIG_OPTPROBES))
		return 0;
	f = filp_open(RKC_OPT_SYSCTL, O_RDWR, 0);
	if (IS_ERR(f)) {
		pr_err("rkprobes_conformance: cannot open " RKC_OPT_SYSCTL ": %ld\n", PTR_ERR(f));
		return PTR_ERR(f);
	}
	n = kernel_read(f, buf, sizeof(buf) - 1, &pos);
	if (n > 0)
		strscpy(rkc_opt_saved, strim(buf), sizeof(rkc_opt_saved));
	pos = 0;
	n = kernel_write(f, "0\n", 2, &pos);
	filp_close(f, NULL);
	if (n != 2) {
		pr_err("rkprobes_conformance: writing 0 to " RKC_OPT_SYSCTL ": %zd\n", n);
		return n < 0 ? n : -EIO;
	}
	return 0;
}

static void rkc_suite_exit(struct kunit_suite *suite)
{
	if (IS_ENABLED(CONFIG_OPTPROBES) && rkc_opt_saved[0])
		rkc_sh(NULL, "echo %s > " RKC_OPT_SYSCTL, rkc_opt_saved);
}

static struct kunit_case rkc_cases[] = {
	KUNIT_CASE(rkc_kprobe_errnos),
	KUNIT_CASE(rkc_kretprobe_errnos),
	KUNIT_CASE(rkc_register_fields),
	KUNIT_CASE(rkc_reregister),
	KUNIT_CASE(rkc_unregister_unregistered),
	KUNIT_CASE(rkc_unregister_big_batch),
	KUNIT_CASE(rkc_batch_rollback),
	KUNIT_CASE(rkc_batch_ftrace),
	KUNIT_CASE(rkc_three_probes),
	KUNIT_CASE(rkc_recursion_nmissed),
	KUNIT_CASE(rkc_missed_by_cause),
	KUNIT_CASE(rkc_kretprobe_pool),
	KUNIT_CASE(rkc_kretprobe_grow),
	KUNIT_CASE(rkc_kretprobe_data),
	KUNIT_CASE(rkc_kretprobe_entry_fail),
	KUNIT_CASE(rkc_list_tags),
	KUNIT_CASE(rkc_optimized),
	KUNIT_CASE(rkc_enabled),
	KUNIT_CASE(rkc_module_gone),
	KUNIT_CASE(rkc_module_init_gone),
	KUNIT_CASE(rkc_kprobe_events),
	KUNIT_CASE(rkc_core_traceable),
	KUNIT_CASE(rkc_optimized_kernel_text),
	KUNIT_CASE(rkc_optprobe_blocked_retry),
	KUNIT_CASE(rkc_blacklist_inside_symbol),
	KUNIT_CASE(rkc_optimize_from_freeing),
	KUNIT_CASE(rkc_ftrace_aggr_gains_post_handler),
	KUNIT_CASE(rkc_offset_past_end),
	/* Last: if a core crashes here, every other case has reported already. */
	KUNIT_CASE(rkc_unregister_unregistered_kretprobe),
	{}
};

static struct kunit_suite rkc_suite = {
	.name = "rkprobes_conformance",
	.suite_init = rkc_suite_init,
	.suite_exit = rkc_suite_exit,
	.test_cases = rkc_cases,
};
kunit_test_suite(rkc_suite);

MODULE_DESCRIPTION("kprobes conformance suite: the same assertions on the C and the Rust core");
MODULE_LICENSE("GPL");
