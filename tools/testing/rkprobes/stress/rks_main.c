// SPDX-License-Identifier: GPL-2.0
/*
 * rkprobes_stress: the SMP stress of `scripts/rkprobes stress`.
 *
 * Like the benchmark module, it uses only the public kprobes API of
 * <linux/kprobes.h>, so the very same object stresses upstream's C core and
 * the Rust core. It runs on a guest with several CPUs, in three phases that
 * the initramfs /init (stress-init.sh) drives through
 * /sys/kernel/debug/rkprobes_stress/ctl:
 *
 * 1. Stress, from module init for `duration` seconds: one hitter kthread
 *    bound to each online CPU calls the probed functions in a tight loop and
 *    a per-CPU hrtimer (hard interrupt context) calls them every `timer_us`;
 *    a registrar kthread registers every probe, does each kind of operation
 *    once (its script; the phase lasts until it is done), then registers and
 *    unregisters single probes and a batch of 128 (register_kprobes), and
 *    enables and disables them, at random; a churn kthread (rks_churn.c)
 *    registers probes on rks_target.ko, which /init loads and unloads in a
 *    loop, and starts tasks that exit inside a kretprobe'd function.
 *    Meanwhile /init toggles kprobes/enabled and the optimization sysctl and
 *    churns kprobe_events. "stop" joins the threads and reports.
 * 2. Quiet ("quiet-arm", "quiet-run"): every probe registered and enabled
 *    (the kretprobe with enough instances for every CPU), nothing else
 *    changing, each CPU calls each target `quiet_calls` times: then handler
 *    runs plus nmissed must equal the calls exactly.
 * 3. "finish": everything unregistered, and the text of every probed
 *    function must be byte for byte what it was before the first probe.
 * 4. "faults" (a kernel with CONFIG_FAULT_INJECTION, `--debug faults`): each
 *    kind of registration with its n-th allocation failed, n = 1, 2, ...;
 *    see rks_cmd_faults().
 *
 * The probes: two kprobes on rks_agg_target() (an aggregate; one has a post
 * handler), a kretprobe with maxactive 2 on rks_ret_target(), a kprobe on
 * rks_opt_target() (an eight-byte NOP at its entry: optimizable), a kprobe
 * on the ftrace site of rks_ftrace_target(), and the batch, one kprobe on
 * the entry of each function of rks_fill.S.
 *
 * Every handler checks that its probe may run: the registrar sets a probe's
 * may_run word before registering it enabled or enabling it, and clears it
 * only after disable_kprobe() and synchronize_rcu() (a handler that passed
 * the disabled check before disable_kprobe() may still be running until
 * then), or after unregistration returned (it waits for a grace period
 * itself). A kretprobe's return handler may run after disable_kprobe() for
 * instances taken before, so it checks the probe's registered word, cleared
 * after unregister_kretprobe() returned. A handler finding its word clear is
 * a violation.
 *
 * Results go to the kernel log as "RKS ..." lines the host parses:
 *
 *   RKS ops register=N register-disabled=N unregister=N enable=N ...
 *   RKS hits <phase> <probe> handler=N post=N entry=N return=N nmissed=N calls=N
 *   RKS violations N
 *   RKS check <name> ok|FAIL <detail>
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/completion.h>
#include <linux/cpumask.h>
#include <linux/debugfs.h>
#include <linux/delay.h>
#include <linux/hrtimer.h>
#include <linux/jiffies.h>
#include <linux/kdebug.h>
#include <linux/kernel.h>
#include <linux/kprobes.h>
#include <linux/kthread.h>
#include <linux/math64.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/percpu.h>
#include <linux/random.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#ifdef CONFIG_X86
#include <asm/text-patching.h>
#endif

#include "rks_churn.h"
#include "rks_fill.h"

static unsigned int duration = 10;
module_param(duration, uint, 0444);
MODULE_PARM_DESC(duration, "seconds the stress phase runs (default 10)");

static unsigned int timer_us = 1000;
module_param(timer_us, uint, 0444);
MODULE_PARM_DESC(timer_us, "period of the per-CPU hrtimer calling the targets, in us (default 1000)");

static unsigned int quiet_calls = 2000;
module_param(quiet_calls, uint, 0444);
MODULE_PARM_DESC(quiet_calls, "calls of each target per CPU in the quiet phase (default 2000)");

#ifdef CONFIG_X86
/* nopl 0x0(%rax,%rax,1) with a 32-bit displacement: one 8-byte instruction. */
#define RKS_NOP8	".byte 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00\n\t"
#else
/* Elsewhere two NOPs (eight bytes on the fixed-length ISAs). */
#define RKS_NOP8	"nop\n\tnop\n\t"
#endif
/* Bytes of each probed function compared before and after. */
#define RKS_TEXT_BYTES	16
#define RKS_MAXACTIVE	2
/* Batch members enabled or disabled in one registrar step. */
#define RKS_BATCH_FLIP	8
/* Registration errors printed one by one (all are counted). */
#define RKS_MAX_ERROR_LINES	10

/*
 * The probed functions. notrace, but for rks_ftrace_target(), so that their
 * probes take the int3 (or optimized) path; each starts with eight-byte NOPs
 * (on x86) so that a probe on its entry can be copied, boosted and optimized.
 * Where kprobes has no ftrace path (arm64), rks_ftrace_target()'s probe is a
 * breakpoint like the others.
 */
static noinline notrace void rks_agg_target(void)
{
	asm volatile(RKS_NOP8 RKS_NOP8);
}

static noinline notrace void rks_opt_target(void)
{
	asm volatile(RKS_NOP8 RKS_NOP8);
}

static noinline void rks_ftrace_target(void)
{
	asm volatile(RKS_NOP8 RKS_NOP8);
}

/* Probed by the kretprobe; loops a little so that calls overlap. */
static noinline notrace int rks_ret_target(int n)
{
	int i, sum = 0;

	asm volatile(RKS_NOP8);
	for (i = 0; i < n; i++) {
		sum += i;
		asm volatile("" : "+r" (sum));
	}
	return sum;
}

enum rks_target {
	RKS_T_AGG, RKS_T_RET, RKS_T_OPT, RKS_T_FTRACE, RKS_NR_TARGETS
};

/* Targets, then the filler functions: the functions whose calls are counted. */
#define RKS_NR_FUNCS	(RKS_NR_TARGETS + RKS_FILL_FUNCS)

static DEFINE_PER_CPU(unsigned long [RKS_NR_FUNCS], rks_calls);
static DEFINE_PER_CPU(unsigned int, rks_irq_fill);
static DEFINE_PER_CPU(struct hrtimer, rks_timer);

static void *rks_func_addr(int f)
{
	switch (f) {
	case RKS_T_AGG:
		return rks_agg_target;
	case RKS_T_RET:
		return rks_ret_target;
	case RKS_T_OPT:
		return rks_opt_target;
	case RKS_T_FTRACE:
		return rks_ftrace_target;
	default:
		return rks_fill_funcs[f - RKS_NR_TARGETS];
	}
}

/* Call function `f` once and count the call on this CPU. */
static void rks_call(int f)
{
	switch (f) {
	case RKS_T_AGG:
		rks_agg_target();
		break;
	case RKS_T_RET:
		rks_ret_target(8);
		break;
	case RKS_T_OPT:
		rks_opt_target();
		break;
	case RKS_T_FTRACE:
		RKS_VIA_PTR(rks_ftrace_target)();
		break;
	default:
		rks_fill_funcs[f - RKS_NR_TARGETS]();
		break;
	}
	this_cpu_inc(rks_calls[f]);
}

static unsigned long rks_sum_calls(int f)
{
	unsigned long sum = 0;
	int cpu;

	for_each_possible_cpu(cpu)
		sum += per_cpu(rks_calls, cpu)[f];
	return sum;
}

enum rks_single {
	RKS_AGG_A, RKS_AGG_B, RKS_RET, RKS_OPT, RKS_FTRACE, RKS_NR_SINGLE
};

#define RKS_NR_PROBES	(RKS_NR_SINGLE + RKS_FILL_FUNCS)
#define RKS_BATCH	RKS_NR_SINGLE

/*
 * The registrar's last operations on a probe, for a violation's report:
 * when, what (an rks_op, or RKS_LOG_CLEAR: may_run cleared after a grace
 * period), its result, and the probe's flags and whether it sat in an
 * aggregate right after.
 */
#define RKS_LOG		8
#define RKS_LOG_CLEAR	RKS_NR_OPS
struct rks_op_rec {
	u64 ns;
	int ret;
	u8 op;
	u8 aggregated;
	u16 flags;
};

struct rks_probe {
	const char *name;
	int func;		/* index of the probed function (rks_call) */
	bool kret;
	bool post;
	struct kprobe kp;
	struct kretprobe rp;
	/* The registrar's state, read by the handlers (see the top comment). */
	int registered;
	int may_run;
	/* The registrar's counts. */
	unsigned long regs, unregs;
	unsigned long nmissed;	/* of the registrations already undone */
	struct rks_op_rec log[RKS_LOG];
	unsigned int nlog;
	/* The handlers' counts. */
	atomic_long_t hits, posts, entries, returns, violations;
	/* Snapshots: at the end of the stress phase, at the start of quiet. */
	unsigned long snap[5], snap_calls;
};

static struct rks_probe rks_probes[RKS_NR_PROBES];

static struct kprobe *rks_kp(struct rks_probe *p)
{
	return p->kret ? &p->rp.kp : &p->kp;
}
static struct kprobe *rks_batch_ptrs[RKS_FILL_FUNCS];
static bool rks_batch_registered;

enum rks_op {
	RKS_OP_REG, RKS_OP_REG_DISABLED, RKS_OP_UNREG, RKS_OP_ENABLE,
	RKS_OP_DISABLE, RKS_OP_BATCH_REG, RKS_OP_BATCH_UNREG,
	RKS_OP_BATCH_ENABLE, RKS_OP_BATCH_DISABLE, RKS_OP_ERRORS, RKS_NR_OPS
};

static const char *const rks_op_names[RKS_NR_OPS] = {
	[RKS_OP_REG] = "register",
	[RKS_OP_REG_DISABLED] = "register-disabled",
	[RKS_OP_UNREG] = "unregister",
	[RKS_OP_ENABLE] = "enable",
	[RKS_OP_DISABLE] = "disable",
	[RKS_OP_BATCH_REG] = "batch-register",
	[RKS_OP_BATCH_UNREG] = "batch-unregister",
	[RKS_OP_BATCH_ENABLE] = "batch-enable",
	[RKS_OP_BATCH_DISABLE] = "batch-disable",
	[RKS_OP_ERRORS] = "errors",
};

/*
 * maxactive of the kretprobe: RKS_MAXACTIVE in the stress phase; in the
 * quiet phase one instance per CPU and more, so that none is missed:
 * upstream's rp->nmissed++ is not atomic, so concurrent misses lose counts
 * and "entries + nmissed == calls" could not be asserted with misses.
 */
static int rks_maxactive = RKS_MAXACTIVE;
static unsigned long rks_ops[RKS_NR_OPS];
static u64 rks_op_ns[RKS_NR_OPS];	/* time spent in each kind of operation */

/* The first violation, for the report. */
static atomic_t rks_violation_seen = ATOMIC_INIT(0);
static int rks_violation_probe, rks_violation_cpu, rks_violation_state;
static const char *rks_violation_what;
/* What the first violation saw: the probe's flags and who called the handler. */
static unsigned int rks_violation_flags;
static void *rks_violation_caller;
/* For a kprobe: the byte it saved (p->opcode) and the byte in the text then. */
static int rks_violation_opcode = -1, rks_violation_text = -1;
/* When it happened, the trapped address, and the registrar's log then. */
static u64 rks_violation_ns;
static unsigned long rks_violation_ip;
static int rks_violation_aggregated = -1;
static struct rks_op_rec rks_violation_log[RKS_LOG];
static unsigned int rks_violation_nlog;
/* int3 traps in our functions that no kprobe claimed (upstream would oops). */
static atomic_long_t rks_orphan_int3 = ATOMIC_LONG_INIT(0);
static atomic_long_t rks_null_kretprobe = ATOMIC_LONG_INIT(0);

static u8 rks_saved_text[RKS_NR_FUNCS][RKS_TEXT_BYTES];

enum rks_phase { RKS_RUNNING, RKS_STOPPED, RKS_ARMED, RKS_RAN, RKS_FINISHED };
static enum rks_phase rks_phase;
static DEFINE_MUTEX(rks_mutex);		/* serialises ctl commands and exit */
static struct task_struct **rks_hitters;
static struct task_struct *rks_registrar;
static unsigned long rks_end;		/* jiffies when the stress phase ends */
static bool rks_script_done;		/* the registrar's first operations are done */
static ktime_t rks_period;
static atomic_t rks_quiet_left;
static DECLARE_COMPLETION(rks_quiet_done);
static struct dentry *rks_dir;

/* ---- handlers ---- */

static void rks_violation(struct rks_probe *p, const char *what,
			  unsigned int flags, void *caller)
{
	atomic_long_inc(&p->violations);
	if (!atomic_xchg(&rks_violation_seen, 1)) {
		rks_violation_flags = flags;
		rks_violation_caller = caller;
		rks_violation_probe = p - rks_probes;
		rks_violation_cpu = raw_smp_processor_id();
		rks_violation_what = what;
		rks_violation_state = READ_ONCE(p->registered) << 1 |
				      READ_ONCE(p->may_run);
		rks_violation_ns = ktime_get_ns();
		rks_violation_nlog = READ_ONCE(p->nlog);
		memcpy(rks_violation_log, p->log, sizeof(p->log));
	}
}

/* Whether the registrar's word allows a handler to run now. */
static bool rks_allowed(const int *word)
{
	smp_rmb();	/* the kprobe's own state was read before */
	return READ_ONCE(*word);
}

static int rks_pre(struct kprobe *kp, struct pt_regs *regs)
{
	struct rks_probe *p = container_of(kp, struct rks_probe, kp);

	atomic_long_inc(&p->hits);
	if (!rks_allowed(&p->may_run)) {
		u8 text;

		if (!atomic_read(&rks_violation_seen)) {
			rks_violation_opcode = kp->opcode;
			if (!copy_from_kernel_nofault(&text, kp->addr, 1))
				rks_violation_text = text;
			rks_violation_ip = instruction_pointer(regs);
			rks_violation_aggregated = !list_empty(&kp->list);
		}
		rks_violation(p, "pre", READ_ONCE(kp->flags), __builtin_return_address(0));
	}
	return 0;
}

static void rks_post(struct kprobe *kp, struct pt_regs *regs,
		     unsigned long flags)
{
	struct rks_probe *p = container_of(kp, struct rks_probe, kp);

	atomic_long_inc(&p->posts);
	if (!rks_allowed(&p->may_run))
		rks_violation(p, "post", READ_ONCE(kp->flags), __builtin_return_address(0));
}

static int rks_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct kretprobe *rp = get_kretprobe(ri);
	struct rks_probe *p;

	if (!rp) {
		atomic_long_inc(&rks_null_kretprobe);
		return 1;
	}
	p = container_of(rp, struct rks_probe, rp);
	atomic_long_inc(&p->entries);
	if (!rks_allowed(&p->may_run))
		rks_violation(p, "entry", READ_ONCE(rp->kp.flags), __builtin_return_address(0));
	return 0;
}

static int rks_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct kretprobe *rp = get_kretprobe(ri);
	struct rks_probe *p;

	if (!rp) {
		atomic_long_inc(&rks_null_kretprobe);
		return 0;
	}
	p = container_of(rp, struct rks_probe, rp);
	atomic_long_inc(&p->returns);
	if (!rks_allowed(&p->registered))
		rks_violation(p, "return", READ_ONCE(rp->kp.flags), __builtin_return_address(0));
	return 0;
}

/* The registrar's log of a probe, oldest first, relative to `now`. */
static void rks_print_log(const char *who, const struct rks_op_rec *log,
			  unsigned int n, u64 now)
{
	unsigned int i;

	for (i = n > RKS_LOG ? n - RKS_LOG : 0; i < n; i++) {
		const struct rks_op_rec *r = &log[i % RKS_LOG];

		pr_err("RKS log %s: %s ret=%d flags=%#x aggregated=%d, %lld us before\n",
		       who, r->op == RKS_LOG_CLEAR ? "may-run-cleared" : rks_op_names[r->op],
		       r->ret, r->flags, r->aggregated, div_s64((s64)(now - r->ns), 1000));
	}
}

#ifdef CONFIG_X86
/*
 * An int3 in one of our functions that no kprobe claimed: do_int3() asks the
 * die notifiers after kprobe_int3_handler() declined it, and upstream oopses
 * if none does. Say at once what the registrar last did to the probes of that
 * function; if the breakpoint goes away within 100 ms, run the instruction
 * again (the stress fails either way).
 */
static int rks_die(struct notifier_block *nb, unsigned long val, void *data)
{
	struct die_args *args = data;
	unsigned long addr;
	u64 now = ktime_get_ns();
	int f, i, us;
	u8 byte = INT3_INSN_OPCODE;

	if (val != DIE_INT3 || user_mode(args->regs))
		return NOTIFY_DONE;
	addr = instruction_pointer(args->regs) - INT3_INSN_SIZE;
	for (f = 0; f < RKS_NR_FUNCS; f++)
		if (addr - (unsigned long)rks_func_addr(f) < RKS_TEXT_BYTES)
			break;
	if (f == RKS_NR_FUNCS)
		return NOTIFY_DONE;
	atomic_long_inc(&rks_orphan_int3);
	for (us = 0; us < 100000; us++) {
		if (copy_from_kernel_nofault(&byte, (void *)addr, 1) ||
		    byte != INT3_INSN_OPCODE)
			break;
		udelay(1);
	}
	pr_err("RKS orphan-int3 at %pS on CPU %d: no kprobe claimed it; the text byte is %#x after %d us\n",
	       (void *)addr, raw_smp_processor_id(), byte, us);
	for (i = 0; i < RKS_NR_PROBES; i++) {
		struct rks_probe *p = &rks_probes[i];

		if (p->func != f)
			continue;
		pr_err("RKS orphan-int3 probe %s: registered %d, may run %d, flags %#x, opcode %#x, in an aggregate %d\n",
		       p->name, READ_ONCE(p->registered), READ_ONCE(p->may_run),
		       READ_ONCE(rks_kp(p)->flags), rks_kp(p)->opcode,
		       !list_empty(&rks_kp(p)->list));
		rks_print_log(p->name, p->log, READ_ONCE(p->nlog), now);
	}
	if (byte == INT3_INSN_OPCODE)
		return NOTIFY_DONE;
	instruction_pointer_set(args->regs, addr);
	return NOTIFY_STOP;
}

static struct notifier_block rks_die_nb = { .notifier_call = rks_die };
#endif

/* ---- the registrar's operations ---- */

/* Allow the handlers of a probe before the call that may start them. */
static void rks_allow(int *word)
{
	WRITE_ONCE(*word, 1);
	smp_mb();	/* before the probe is armed or enabled */
}

static void rks_log(struct rks_probe *p, unsigned int op, int ret)
{
	struct kprobe *kp = rks_kp(p);
	struct rks_op_rec *r = &p->log[p->nlog % RKS_LOG];

	r->ns = ktime_get_ns();
	r->op = op;
	r->ret = ret;
	r->flags = READ_ONCE(kp->flags);
	r->aggregated = !list_empty(&kp->list);
	smp_wmb();	/* the record before its count, for a handler's copy */
	WRITE_ONCE(p->nlog, p->nlog + 1);
}

/* Clear a probe's may_run word, after a grace period since it was disabled. */
static void rks_forbid(struct rks_probe *p)
{
	WRITE_ONCE(p->may_run, 0);
	rks_log(p, RKS_LOG_CLEAR, 0);
}

static void rks_error(struct rks_probe *p, const char *op, int err)
{
	if (rks_ops[RKS_OP_ERRORS]++ < RKS_MAX_ERROR_LINES)
		pr_err("RKS error %s %s %d\n", p ? p->name : "batch", op, err);
}

/* A fresh struct for a new registration (a registered struct cannot be reused as it is). */
static void rks_init_probe(struct rks_probe *p, bool disabled)
{
	struct kprobe *kp;

	if (p->kret) {
		memset(&p->rp, 0, sizeof(p->rp));
		p->rp.handler = rks_ret;
		p->rp.entry_handler = rks_entry;
		p->rp.maxactive = rks_maxactive;
	} else {
		memset(&p->kp, 0, sizeof(p->kp));
		p->kp.pre_handler = rks_pre;
		if (p->post)
			p->kp.post_handler = rks_post;
	}
	kp = rks_kp(p);
	kp->addr = rks_func_addr(p->func);
	if (disabled)
		kp->flags = KPROBE_FLAG_DISABLED;
}

static unsigned long rks_live_nmissed(struct rks_probe *p)
{
	if (!READ_ONCE(p->registered))
		return 0;
	return p->kret ? p->rp.nmissed + p->rp.kp.nmissed : p->kp.nmissed;
}

static int rks_register(struct rks_probe *p, bool disabled)
{
	int ret;

	rks_init_probe(p, disabled);
	rks_allow(&p->registered);
	if (!disabled)
		rks_allow(&p->may_run);
	ret = p->kret ? register_kretprobe(&p->rp) : register_kprobe(&p->kp);
	rks_log(p, disabled ? RKS_OP_REG_DISABLED : RKS_OP_REG, ret);
	if (ret) {
		rks_error(p, "register", ret);
		WRITE_ONCE(p->may_run, 0);
		WRITE_ONCE(p->registered, 0);
		return ret;
	}
	p->regs++;
	rks_ops[disabled ? RKS_OP_REG_DISABLED : RKS_OP_REG]++;
	return 0;
}

/* After an unregistration returned: it waited for a grace period. */
static void rks_unregistered(struct rks_probe *p)
{
	p->nmissed += rks_live_nmissed(p);
	WRITE_ONCE(p->may_run, 0);
	WRITE_ONCE(p->registered, 0);
	rks_log(p, RKS_OP_UNREG, 0);
	p->unregs++;
}

static void rks_unregister(struct rks_probe *p)
{
	if (p->kret)
		unregister_kretprobe(&p->rp);
	else
		unregister_kprobe(&p->kp);
	rks_unregistered(p);
	rks_ops[RKS_OP_UNREG]++;
}

static void rks_enable(struct rks_probe *p, enum rks_op op)
{
	int ret;

	rks_allow(&p->may_run);
	ret = enable_kprobe(rks_kp(p));
	rks_log(p, op, ret);
	if (ret)
		rks_error(p, "enable", ret);
	else
		rks_ops[op]++;
}

/* Disable; the caller clears may_run after a grace period. */
static bool rks_disable(struct rks_probe *p, enum rks_op op)
{
	int ret = disable_kprobe(rks_kp(p));

	rks_log(p, op, ret);
	if (ret) {
		rks_error(p, "disable", ret);
		return false;
	}
	rks_ops[op]++;
	return true;
}

/* The batch, a quarter of it registered disabled if `some_disabled`. */
static void rks_batch_register(bool some_disabled)
{
	int i, ret;

	for (i = 0; i < RKS_FILL_FUNCS; i++) {
		struct rks_probe *p = &rks_probes[RKS_BATCH + i];
		bool disabled = some_disabled && get_random_u32_below(4) == 0;

		rks_init_probe(p, disabled);
		WRITE_ONCE(p->registered, 1);
		WRITE_ONCE(p->may_run, !disabled);
		rks_batch_ptrs[i] = &p->kp;
	}
	smp_mb();	/* before the probes are armed */
	ret = register_kprobes(rks_batch_ptrs, RKS_FILL_FUNCS);
	if (ret) {
		/* register_kprobes() unregistered what it had registered. */
		rks_error(NULL, "register_kprobes", ret);
		for (i = 0; i < RKS_FILL_FUNCS; i++) {
			WRITE_ONCE(rks_probes[RKS_BATCH + i].may_run, 0);
			WRITE_ONCE(rks_probes[RKS_BATCH + i].registered, 0);
		}
		return;
	}
	for (i = 0; i < RKS_FILL_FUNCS; i++) {
		rks_probes[RKS_BATCH + i].regs++;
		rks_log(&rks_probes[RKS_BATCH + i], RKS_OP_BATCH_REG, 0);
	}
	rks_batch_registered = true;
	rks_ops[RKS_OP_BATCH_REG]++;
}

static void rks_batch_unregister(void)
{
	int i;

	unregister_kprobes(rks_batch_ptrs, RKS_FILL_FUNCS);
	for (i = 0; i < RKS_FILL_FUNCS; i++)
		rks_unregistered(&rks_probes[RKS_BATCH + i]);
	rks_batch_registered = false;
	rks_ops[RKS_OP_BATCH_UNREG]++;
}

/* Flip RKS_BATCH_FLIP consecutive members; the disabled ones share one grace period. */
static void rks_batch_flip(void)
{
	struct rks_probe *off[RKS_BATCH_FLIP];
	int start = get_random_u32_below(RKS_FILL_FUNCS);
	int i, n = 0;

	for (i = 0; i < RKS_BATCH_FLIP; i++) {
		struct rks_probe *p = &rks_probes[RKS_BATCH + (start + i) % RKS_FILL_FUNCS];

		if (!p->may_run)
			rks_enable(p, RKS_OP_BATCH_ENABLE);
		else if (rks_disable(p, RKS_OP_BATCH_DISABLE))
			off[n++] = p;
	}
	if (!n)
		return;
	synchronize_rcu();
	for (i = 0; i < n; i++)
		rks_forbid(off[i]);
}

/*
 * The stress phase lasts `duration` seconds, and at least until the
 * registrar has done its script (every kind of operation once).
 */
static bool rks_stress_on(void)
{
	return !kthread_should_stop() &&
	       (time_before(jiffies, rks_end) || !READ_ONCE(rks_script_done));
}

bool rks_stress_running(void)
{
	return rks_stress_on();
}

/*
 * One operation, at random: on a single probe five times in six, on the
 * batch once in six. Returns the kind of operation.
 */
static enum rks_op rks_registrar_op(void)
{
	u32 r = get_random_u32_below(2 * RKS_NR_SINGLE + 2);
	struct rks_probe *p;
	bool disabled;

	if (r >= 2 * RKS_NR_SINGLE) {
		if (!rks_batch_registered) {
			rks_batch_register(true);
			return RKS_OP_BATCH_REG;
		}
		if (r == 2 * RKS_NR_SINGLE) {
			rks_batch_unregister();
			return RKS_OP_BATCH_UNREG;
		}
		rks_batch_flip();
		return RKS_OP_BATCH_ENABLE;
	}
	p = &rks_probes[r / 2];
	if (!p->registered) {
		disabled = get_random_u32_below(4) == 0;
		rks_register(p, disabled);
		return disabled ? RKS_OP_REG_DISABLED : RKS_OP_REG;
	}
	if (get_random_u32_below(2)) {
		rks_unregister(p);
		return RKS_OP_UNREG;
	}
	if (!p->may_run) {
		rks_enable(p, RKS_OP_ENABLE);
		return RKS_OP_ENABLE;
	}
	if (rks_disable(p, RKS_OP_DISABLE)) {
		synchronize_rcu();
		rks_forbid(p);
	}
	return RKS_OP_DISABLE;
}

static void rks_registrar_script(void)
{
	struct rks_probe *opt = &rks_probes[RKS_OPT];
	struct rks_probe *agg_a = &rks_probes[RKS_AGG_A];
	struct rks_probe *ret = &rks_probes[RKS_RET];

	if (opt->registered && rks_disable(opt, RKS_OP_DISABLE)) {
		synchronize_rcu();
		rks_forbid(opt);
	}
	if (opt->registered)
		rks_enable(opt, RKS_OP_ENABLE);
	if (agg_a->registered)
		rks_unregister(agg_a);
	if (!agg_a->registered)
		rks_register(agg_a, true);
	if (agg_a->registered)
		rks_enable(agg_a, RKS_OP_ENABLE);
	if (ret->registered)
		rks_unregister(ret);
	if (!ret->registered)
		rks_register(ret, false);
	if (rks_batch_registered)
		rks_batch_flip();
	if (rks_batch_registered)
		rks_batch_unregister();
	if (!rks_batch_registered)
		rks_batch_register(true);
	WRITE_ONCE(rks_script_done, true);
}

static void rks_registrar_step(void)
{
	u64 start = ktime_get_ns();
	enum rks_op op = rks_registrar_op();

	rks_op_ns[op] += ktime_get_ns() - start;
}

/* Unregister everything still registered. */
static void rks_unregister_all(void)
{
	int i;

	if (rks_batch_registered)
		rks_batch_unregister();
	for (i = 0; i < RKS_NR_SINGLE; i++)
		if (rks_probes[i].registered)
			rks_unregister(&rks_probes[i]);
}

/* ---- threads and the timer ---- */


static int rks_registrar_fn(void *arg)
{
	int i;

	/* Every probe starts registered and enabled, so that each is hit. */
	for (i = 0; i < RKS_NR_SINGLE; i++)
		rks_register(&rks_probes[i], false);
	rks_batch_register(false);
	/*
	 * Then every kind of operation once, so that a short run has them
	 * all: under QEMU, with the switches toggled, a run does only a few
	 * operations per second (each text change of a probe waits for every
	 * CPU, and the optimizer holds kprobe_mutex while it works).
	 */
	rks_registrar_script();
	while (rks_stress_on()) {
		rks_registrar_step();
		cond_resched();
	}
	return 0;
}

static enum hrtimer_restart rks_timer_fn(struct hrtimer *t)
{
	unsigned int fill = this_cpu_inc_return(rks_irq_fill) % RKS_FILL_FUNCS;
	int f;

	for (f = 0; f < RKS_NR_TARGETS; f++)
		rks_call(f);
	rks_call(RKS_NR_TARGETS + fill);
	hrtimer_forward_now(t, rks_period);
	return HRTIMER_RESTART;
}

/*
 * A calling thread sleeps for a jiffy every RKS_SLEEP_ROUNDS rounds. With
 * preemption, the optimizer's synchronize_rcu_tasks() waits until every task
 * has switched out voluntarily, and neither a preemption nor cond_resched()
 * counts: threads that never sleep would hold optimization back for good
 * ("rcu_tasks grace period ... jiffies old").
 */
#define RKS_SLEEP_ROUNDS	16

static void rks_pause(unsigned int round)
{
	if (round % RKS_SLEEP_ROUNDS)
		cond_resched();
	else
		schedule_timeout_idle(1);
}

static int rks_hitter_fn(void *arg)
{
	struct hrtimer *t = per_cpu_ptr(&rks_timer, (long)arg);
	unsigned int round = 0;
	int f;

	hrtimer_init(t, CLOCK_MONOTONIC, HRTIMER_MODE_REL_PINNED_HARD);
	t->function = rks_timer_fn;
	hrtimer_start(t, rks_period, HRTIMER_MODE_REL_PINNED_HARD);
	while (rks_stress_on()) {
		for (f = 0; f < RKS_NR_FUNCS; f++)
			rks_call(f);
		rks_pause(++round);
	}
	hrtimer_cancel(t);
	return 0;
}

static int rks_quiet_fn(void *arg)
{
	unsigned int i;
	int f;

	for (i = 0; i < quiet_calls; i++) {
		for (f = 0; f < RKS_NR_TARGETS; f++)
			rks_call(f);
		if (i % 16 == 0)
			for (f = RKS_NR_TARGETS; f < RKS_NR_FUNCS; f++)
				rks_call(f);
		rks_pause(i + 1);
	}
	if (atomic_dec_and_test(&rks_quiet_left))
		complete(&rks_quiet_done);
	return 0;
}

/* One thread bound to each online CPU, started; NULL where it failed. */
static int rks_start_per_cpu(int (*fn)(void *), const char *name)
{
	int cpu, n = 0;

	for_each_online_cpu(cpu) {
		struct task_struct *t;

		t = kthread_create(fn, (void *)(long)cpu, "%s/%d", name, cpu);
		if (IS_ERR(t)) {
			pr_err("RKS error kthread %s/%d %ld\n", name, cpu, PTR_ERR(t));
			continue;
		}
		kthread_bind(t, cpu);
		get_task_struct(t);
		rks_hitters[cpu] = t;
		wake_up_process(t);
		n++;
	}
	return n;
}

static void rks_stop_per_cpu(void)
{
	int cpu;

	for_each_possible_cpu(cpu) {
		if (!rks_hitters[cpu])
			continue;
		kthread_stop(rks_hitters[cpu]);
		put_task_struct(rks_hitters[cpu]);
		rks_hitters[cpu] = NULL;
	}
}

static void rks_stop_stress(void)
{
	if (rks_registrar) {
		kthread_stop(rks_registrar);
		put_task_struct(rks_registrar);
		rks_registrar = NULL;
	}
	rks_stop_per_cpu();
}

/* ---- reports ---- */

static void rks_snapshot(struct rks_probe *p)
{
	p->snap[0] = atomic_long_read(&p->hits);
	p->snap[1] = atomic_long_read(&p->posts);
	p->snap[2] = atomic_long_read(&p->entries);
	p->snap[3] = atomic_long_read(&p->returns);
	p->snap[4] = p->nmissed + rks_live_nmissed(p);
	p->snap_calls = rks_sum_calls(p->func);
}

static void rks_print_hits(const char *phase, const char *name,
			   const unsigned long *v, unsigned long calls)
{
	pr_info("RKS hits %s %s handler=%lu post=%lu entry=%lu return=%lu nmissed=%lu calls=%lu\n",
		phase, name, v[0], v[1], v[2], v[3], v[4], calls);
}

static void rks_check(const char *name, bool ok, const char *fmt, ...)
{
	struct va_format vaf;
	va_list args;

	va_start(args, fmt);
	vaf.fmt = fmt;
	vaf.va = &args;
	pr_info("RKS check %s %s %pV\n", name, ok ? "ok" : "FAIL", &vaf);
	va_end(args);
}

static void rks_report_stress(void)
{
	unsigned long batch[5] = {}, batch_calls = 0;
	int i, j, over = 0, registered = 0;
	char line[320];
	int len;

	len = scnprintf(line, sizeof(line), "RKS ops");
	for (i = 0; i < RKS_NR_OPS; i++)
		len += scnprintf(line + len, sizeof(line) - len, " %s=%lu",
				 rks_op_names[i], rks_ops[i]);
	pr_info("%s\n", line);
	/* Batch flips count under batch-enable. */
	len = scnprintf(line, sizeof(line), "RKS optime");
	for (i = 0; i < RKS_OP_ERRORS; i++)
		len += scnprintf(line + len, sizeof(line) - len, " %s=%llu",
				 rks_op_names[i], div_u64(rks_op_ns[i], NSEC_PER_MSEC));
	pr_info("%s\n", line);
	for (i = 0; i < RKS_NR_PROBES; i++) {
		struct rks_probe *p = &rks_probes[i];
		unsigned long handled;

		rks_snapshot(p);
		handled = p->kret ? p->snap[2] : p->snap[0];
		registered += !!p->registered;
		if (handled > p->snap_calls || p->snap[3] > p->snap[2] ||
		    (i < RKS_NR_SINGLE && p->snap[1] > p->snap_calls)) {
			over++;
			pr_err("RKS more hits than calls: %s handler=%lu post=%lu entry=%lu return=%lu calls=%lu\n",
			       p->name, p->snap[0], p->snap[1], p->snap[2],
			       p->snap[3], p->snap_calls);
		}
		if (i < RKS_NR_SINGLE) {
			rks_print_hits("stress", p->name, p->snap, p->snap_calls);
			continue;
		}
		for (j = 0; j < 5; j++)
			batch[j] += p->snap[j];
		batch_calls += p->snap_calls;
	}
	rks_print_hits("stress", "batch", batch, batch_calls);
	pr_info("RKS stress-end registered=%d\n", registered);
	rks_check("hits-within-calls", !over,
		  "%d probe(s) with more handler runs than calls of their function", over);
}

/* ---- ctl commands ---- */

/* The stress phase may outlast `duration` until the script is done; wait for that. */
#define RKS_SCRIPT_WAIT_SECS	600

static int rks_cmd_stop(void)
{
	unsigned long deadline = jiffies + RKS_SCRIPT_WAIT_SECS * HZ;

	if (rks_phase != RKS_RUNNING)
		return -EINVAL;
	while (rks_registrar && !READ_ONCE(rks_script_done) &&
	       time_before(jiffies, deadline))
		msleep(50);
	pr_info("RKS stress-script %s\n", READ_ONCE(rks_script_done) ? "done" : "NOT DONE");
	rks_stop_stress();
	rks_churn_stop();
	rks_phase = RKS_STOPPED;
	rks_report_stress();
	return 0;
}

static int rks_cmd_quiet_arm(void)
{
	int i;

	if (rks_phase != RKS_STOPPED)
		return -EINVAL;
	rks_unregister_all();
	rks_maxactive = 2 * num_online_cpus();
	/*
	 * agg_b, which has a post handler, first: on a kernel without
	 * CONFIG_PREEMPTION, a probe with a post handler that joins an
	 * aggregate whose first probe was boosted stays boosted and its post
	 * handler never runs (x86, upstream C and the Rust core alike: the
	 * aggregate keeps the first probe's ainsn.boostable). That is not
	 * what this phase measures.
	 */
	rks_register(&rks_probes[RKS_AGG_B], false);
	for (i = 0; i < RKS_NR_SINGLE; i++)
		if (i != RKS_AGG_B)
			rks_register(&rks_probes[i], false);
	rks_batch_register(false);
	for (i = 0; i < RKS_NR_PROBES; i++)
		rks_snapshot(&rks_probes[i]);
	rks_phase = RKS_ARMED;
	return 0;
}

static int rks_cmd_quiet_run(void)
{
	unsigned long batch_hits = 0, batch_nmissed = 0, batch_calls = 0;
	int i, n, bad_members = 0;

	if (rks_phase != RKS_ARMED)
		return -EINVAL;
	atomic_set(&rks_quiet_left, num_online_cpus() + 1);
	reinit_completion(&rks_quiet_done);
	n = rks_start_per_cpu(rks_quiet_fn, "rks_quiet");
	/* Account for the threads that did not start, and for this one. */
	if (atomic_sub_and_test(num_online_cpus() - n + 1, &rks_quiet_left))
		complete(&rks_quiet_done);
	wait_for_completion(&rks_quiet_done);
	rks_stop_per_cpu();
	pr_info("RKS quiet cpus=%d calls=%u maxactive=%d\n", n, quiet_calls, rks_maxactive);
	rks_phase = RKS_RAN;
	for (i = 0; i < RKS_NR_PROBES; i++) {
		struct rks_probe *p = &rks_probes[i];
		unsigned long before[5], d[5], calls;
		bool ok;
		int j;

		memcpy(before, p->snap, sizeof(before));
		calls = p->snap_calls;
		rks_snapshot(p);
		for (j = 0; j < 5; j++)
			d[j] = p->snap[j] - before[j];
		calls = p->snap_calls - calls;
		if (p->kret)
			ok = d[2] + d[4] == calls && !d[4] && d[3] == d[2] && !d[0];
		else
			ok = d[0] + d[4] == calls && (p->post ? d[1] == d[0] : !d[1]);
		if (i < RKS_NR_SINGLE) {
			char name[32];

			snprintf(name, sizeof(name), "quiet-%s", p->name);
			rks_print_hits("quiet", p->name, d, calls);
			rks_check(name, ok, "%s %lu + nmissed %lu, %s %lu, calls %lu",
				  p->kret ? "entries" : "handler", p->kret ? d[2] : d[0],
				  d[4], p->kret ? "returns" : "post", p->kret ? d[3] : d[1],
				  calls);
			continue;
		}
		batch_hits += d[0];
		batch_nmissed += d[4];
		batch_calls += calls;
		bad_members += !ok;
	}
	pr_info("RKS hits quiet batch handler=%lu post=0 entry=0 return=0 nmissed=%lu calls=%lu\n",
		batch_hits, batch_nmissed, batch_calls);
	rks_check("quiet-batch", !bad_members && batch_calls,
		  "%d of %d members with handler + nmissed != calls (handler %lu, nmissed %lu, calls %lu)",
		  bad_members, RKS_FILL_FUNCS, batch_hits, batch_nmissed, batch_calls);
	return 0;
}

/* Whether every probed function's text is back; waits for the optimizer. */
static int rks_text_diff(void)
{
	int f;

	for (f = 0; f < RKS_NR_FUNCS; f++)
		if (memcmp(rks_func_addr(f), rks_saved_text[f], RKS_TEXT_BYTES))
			return f;
	return -1;
}

static int rks_cmd_finish(void)
{
	unsigned long regs = 0, unregs = 0, violations = 0;
	unsigned long deadline;
	int i, left = 0, unbalanced = 0, f;

	if (rks_phase != RKS_RAN && rks_phase != RKS_STOPPED)
		return -EINVAL;
	rks_unregister_all();
	for (i = 0; i < RKS_NR_PROBES; i++) {
		struct rks_probe *p = &rks_probes[i];

		regs += p->regs;
		unregs += p->unregs;
		left += !!p->registered;
		unbalanced += p->regs != p->unregs;
		violations += atomic_long_read(&p->violations);
	}
	rks_phase = RKS_FINISHED;
	rks_churn_finish();
	rks_check("unregistered", !left && !unbalanced,
		  "%lu registrations, %lu unregistrations, %d probe(s) still registered, %d unbalanced",
		  regs, unregs, left, unbalanced);
	/* An unregistered optimized probe's jump is undone by the optimizer, later. */
	deadline = jiffies + 20 * HZ;
	while ((f = rks_text_diff()) >= 0 && time_before(jiffies, deadline))
		msleep(20);
	if (f < 0)
		rks_check("text", true, "%d functions, %d bytes each, as before the first probe",
			  RKS_NR_FUNCS, RKS_TEXT_BYTES);
	else
		rks_check("text", false, "%ps: %*ph, before: %*ph", rks_func_addr(f),
			  RKS_TEXT_BYTES, rks_func_addr(f), RKS_TEXT_BYTES,
			  rks_saved_text[f]);
	rks_check("errors", !rks_ops[RKS_OP_ERRORS],
		  "%lu failed registrations, enables or disables", rks_ops[RKS_OP_ERRORS]);
	rks_check("kretprobe-null", !atomic_long_read(&rks_null_kretprobe),
		  "%ld kretprobe handler calls without their kretprobe",
		  atomic_long_read(&rks_null_kretprobe));
	rks_check("orphan-int3", !atomic_long_read(&rks_orphan_int3),
		  "%ld int3 trap(s) in our functions that no kprobe claimed",
		  atomic_long_read(&rks_orphan_int3));
	pr_info("RKS violations %lu\n", violations);
	if (violations) {
		rks_check("violations", false,
			  "first: %s handler of %s (%ps) on CPU %d while its probe was not %s (registered %d, may run %d; flags %#x, called from %pS; opcode %#x, text %#x)",
			  rks_violation_what, rks_probes[rks_violation_probe].name,
			  rks_func_addr(rks_probes[rks_violation_probe].func),
			  rks_violation_cpu,
			  strcmp(rks_violation_what, "return") ? "registered and enabled" :
			  "registered", rks_violation_state >> 1, rks_violation_state & 1,
			  rks_violation_flags, rks_violation_caller,
			  rks_violation_opcode, rks_violation_text);
		pr_err("RKS violation-detail ip %pS, in an aggregate %d\n",
		       (void *)rks_violation_ip, rks_violation_aggregated);
		rks_print_log(rks_probes[rks_violation_probe].name, rks_violation_log,
			      rks_violation_nlog, rks_violation_ns);
	} else
		rks_check("violations", true, "every handler ran while its probe was allowed to");
	pr_info("RKS end\n");
	return 0;
}

/*
 * "faults", after "finish" (no probe of ours registered): each kind of
 * registration is called again and again with its n-th allocation failed,
 * n = 1, 2, ...: current->fail_nth = n is what a write of n to
 * /proc/thread-self/fail-nth does, and failslab and fail_page_alloc count
 * down on it (/init makes them accept GFP_KERNEL and order-0 requests and
 * keeps them quiet). The runs end when a call injects nothing. A call that
 * failed must have failed because of the injection, with -ENOMEM, and left
 * nothing behind: the text is the original, and registering the same probe
 * again without injection works and its handler runs. A call that
 * succeeded despite an injection (an allocation whose failure is tolerated,
 * such as the optimizer's) must work as well. Results:
 *   RKS faults <kind> runs=N injected=N failed=N tolerated=N errnos=<list>
 *   RKS check faults-<kind> ok|FAIL <detail>
 */
#ifdef CONFIG_FAULT_INJECTION
enum {
	RKS_F_KPROBE, RKS_F_OPT, RKS_F_KRETPROBE, RKS_F_FTRACE, RKS_F_BATCH,
	RKS_F_BATCH_FTRACE, RKS_NR_F
};
static const char *const rks_f_names[RKS_NR_F] = {
	"kprobe", "opt", "kretprobe", "ftrace", "batch", "batch-ftrace"
};
static const char *const rks_f_check_names[RKS_NR_F] = {
	"faults-kprobe", "faults-opt", "faults-kretprobe", "faults-ftrace", "faults-batch",
	"faults-batch-ftrace"
};
#define RKS_F_BATCH_N	4
#define RKS_F_MAX_RUNS	400
#define RKS_F_MAX_ERRNOS	4

static struct kprobe rks_fkp[RKS_F_BATCH_N];
static struct kprobe *rks_fkp_ptrs[RKS_F_BATCH_N];
static struct kretprobe rks_fkrp;
static atomic_t rks_f_hits;

static int rks_f_pre(struct kprobe *kp, struct pt_regs *regs)
{
	atomic_inc(&rks_f_hits);
	return 0;
}

static void rks_f_post(struct kprobe *kp, struct pt_regs *regs,
		       unsigned long flags)
{
}

static int rks_f_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	atomic_inc(&rks_f_hits);
	return 0;
}

/* The functions kind `kind` probes: first and count. */
static void rks_f_funcs(int kind, int *first, int *n)
{
	static const int single[RKS_NR_F] = {
		[RKS_F_KPROBE] = RKS_T_AGG, [RKS_F_OPT] = RKS_T_OPT,
		[RKS_F_KRETPROBE] = RKS_T_RET, [RKS_F_FTRACE] = RKS_T_FTRACE,
	};

	*first = kind == RKS_F_BATCH ? RKS_NR_TARGETS : single[kind];
	*n = kind == RKS_F_BATCH || kind == RKS_F_BATCH_FTRACE ? RKS_F_BATCH_N : 1;
}

/*
 * Function `i` of kind `kind`: a range from `first`, but "batch-ftrace" is the
 * ftrace-site target followed by filler functions (int3 sites), so that a
 * batch records an ftrace arming next to breakpoints.
 */
static int rks_f_func(int kind, int i)
{
	int first, n;

	if (kind == RKS_F_BATCH_FTRACE)
		return i ? RKS_NR_TARGETS + i - 1 : RKS_T_FTRACE;
	rks_f_funcs(kind, &first, &n);
	return first + i;
}

/* Fresh probe structures for `kind`, as a caller would set them up. */
static void rks_f_setup(int kind)
{
	int i, first, n;

	rks_f_funcs(kind, &first, &n);
	memset(rks_fkp, 0, sizeof(rks_fkp));
	memset(&rks_fkrp, 0, sizeof(rks_fkrp));
	if (kind == RKS_F_KRETPROBE) {
		rks_fkrp.kp.addr = rks_func_addr(rks_f_func(kind, 0));
		rks_fkrp.handler = rks_f_ret;
		rks_fkrp.maxactive = 16;
		return;
	}
	for (i = 0; i < n; i++) {
		rks_fkp[i].addr = rks_func_addr(rks_f_func(kind, i));
		rks_fkp[i].pre_handler = rks_f_pre;
		/* A post handler keeps it on int3; "opt" is left optimizable. */
		if (kind == RKS_F_KPROBE)
			rks_fkp[i].post_handler = rks_f_post;
		rks_fkp_ptrs[i] = &rks_fkp[i];
	}
}

static int rks_f_register(int kind)
{
	switch (kind) {
	case RKS_F_KRETPROBE:
		return register_kretprobe(&rks_fkrp);
	case RKS_F_BATCH:
	case RKS_F_BATCH_FTRACE:
		return register_kprobes(rks_fkp_ptrs, RKS_F_BATCH_N);
	default:
		return register_kprobe(&rks_fkp[0]);
	}
}

static void rks_f_unregister(int kind)
{
	switch (kind) {
	case RKS_F_KRETPROBE:
		unregister_kretprobe(&rks_fkrp);
		break;
	case RKS_F_BATCH:
	case RKS_F_BATCH_FTRACE:
		unregister_kprobes(rks_fkp_ptrs, RKS_F_BATCH_N);
		break;
	default:
		unregister_kprobe(&rks_fkp[0]);
		break;
	}
}

/* Registered (without injection): do the handlers run? Then unregister. */
static bool rks_f_works(int kind)
{
	int i, first, n, before = atomic_read(&rks_f_hits);

	rks_f_funcs(kind, &first, &n);
	for (i = 0; i < n; i++)
		rks_call(rks_f_func(kind, i));
	rks_f_unregister(kind);
	return atomic_read(&rks_f_hits) - before == n;
}

/* The text of `kind`'s functions is the original (waits for the optimizer). */
static bool rks_f_text_clean(int kind)
{
	unsigned long deadline = jiffies + 20 * HZ;
	int i, first, n;

	rks_f_funcs(kind, &first, &n);
	for (i = 0; i < n; i++)
		while (memcmp(rks_func_addr(rks_f_func(kind, i)),
			      rks_saved_text[rks_f_func(kind, i)], RKS_TEXT_BYTES)) {
			if (!time_before(jiffies, deadline))
				return false;
			msleep(20);
		}
	return true;
}

static void rks_f_kind(int kind)
{
	int errnos[RKS_F_MAX_ERRNOS], nerr = 0, runs = 0, injected = 0;
	int failed = 0, tolerated = 0, n, i, ret = 0;
	unsigned int left = 0;
	char bad[96] = "", list[48] = "";

	for (n = 1; n <= RKS_F_MAX_RUNS; n++) {
		rks_f_setup(kind);
		WRITE_ONCE(current->fail_nth, n);
		ret = rks_f_register(kind);
		left = READ_ONCE(current->fail_nth);
		WRITE_ONCE(current->fail_nth, 0);
		runs++;
		if (left) {
			/* Nothing was injected: every allocation had its turn. */
			if (ret)
				snprintf(bad, sizeof(bad), "failed with %d without an injection", ret);
			else if (!rks_f_works(kind))
				snprintf(bad, sizeof(bad), "handler did not run after the last run");
			break;
		}
		injected++;
		if (!ret) {
			tolerated++;
			if (!rks_f_works(kind)) {
				snprintf(bad, sizeof(bad), "n=%d: registered despite the injection but its handler did not run", n);
				break;
			}
			continue;
		}
		failed++;
		for (i = 0; i < nerr && errnos[i] != ret; i++)
			;
		if (i == nerr && nerr < RKS_F_MAX_ERRNOS)
			errnos[nerr++] = ret;
		if (ret != -ENOMEM) {
			snprintf(bad, sizeof(bad), "n=%d: failed with %d, not -ENOMEM", n, ret);
			break;
		}
		if (!rks_f_text_clean(kind)) {
			snprintf(bad, sizeof(bad), "n=%d: the text is not the original after the failure", n);
			break;
		}
		rks_f_setup(kind);
		ret = rks_f_register(kind);
		if (ret) {
			snprintf(bad, sizeof(bad), "n=%d: registering again without injection failed: %d", n, ret);
			break;
		}
		if (!rks_f_works(kind)) {
			snprintf(bad, sizeof(bad), "n=%d: registered again but its handler did not run", n);
			break;
		}
	}
	if (!bad[0] && n > RKS_F_MAX_RUNS)
		snprintf(bad, sizeof(bad), "still injecting after %d runs", RKS_F_MAX_RUNS);
	if (!bad[0] && !rks_f_text_clean(kind))
		snprintf(bad, sizeof(bad), "the text is not the original at the end");
	for (i = 0; i < nerr; i++)
		snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%d",
			 i ? "," : "", errnos[i]);
	pr_info("RKS faults %s runs=%d injected=%d failed=%d tolerated=%d errnos=%s\n",
		rks_f_names[kind], runs, injected, failed, tolerated, nerr ? list : "none");
	/*
	 * A kind may have no failing run: a kprobe whose slot page has room
	 * allocates nothing it cannot do without (the optimizer's aggregate
	 * is optional), and the nested allocations of kmemleak fall back to
	 * its pool. The counts above say so.
	 */
	rks_check(rks_f_check_names[kind], !bad[0], "%s",
		  bad[0] ? bad : failed ?
		  "every injected failure returned -ENOMEM and left nothing behind; every registration that went through works" :
		  "no injected failure made the registration fail; every registration that went through works");
}

static int rks_cmd_faults(void)
{
	int kind;

	if (rks_phase != RKS_FINISHED)
		return -EINVAL;
	for (kind = 0; kind < RKS_NR_F; kind++)
		rks_f_kind(kind);
	pr_info("RKS faults-done 1\n");
	return 0;
}
#else
static int rks_cmd_faults(void)
{
	pr_info("RKS faults-unavailable 1\n");
	return 0;
}
#endif

static ssize_t rks_ctl_write(struct file *file, const char __user *ubuf,
			     size_t len, loff_t *ppos)
{
	char buf[32], *cmd;
	int ret = -EINVAL;

	if (len >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, len))
		return -EFAULT;
	buf[len] = '\0';
	cmd = strim(buf);
	mutex_lock(&rks_mutex);
	if (!strcmp(cmd, "stop"))
		ret = rks_cmd_stop();
	else if (!strcmp(cmd, "quiet-arm"))
		ret = rks_cmd_quiet_arm();
	else if (!strcmp(cmd, "quiet-run"))
		ret = rks_cmd_quiet_run();
	else if (!strcmp(cmd, "finish"))
		ret = rks_cmd_finish();
	else if (!strcmp(cmd, "faults"))
		ret = rks_cmd_faults();
	mutex_unlock(&rks_mutex);
	if (ret)
		pr_err("RKS error command '%s' %d\n", cmd, ret);
	return ret ? ret : len;
}

static const struct file_operations rks_ctl_fops = {
	.owner = THIS_MODULE,
	.write = rks_ctl_write,
	.llseek = noop_llseek,
};

static void rks_setup_probes(void)
{
	static const struct {
		const char *name;
		int func;
		bool kret, post;
	} singles[RKS_NR_SINGLE] = {
		[RKS_AGG_A] = { "agg_a", RKS_T_AGG, false, false },
		[RKS_AGG_B] = { "agg_b", RKS_T_AGG, false, true },
		[RKS_RET] = { "kretprobe", RKS_T_RET, true, false },
		[RKS_OPT] = { "opt", RKS_T_OPT, false, false },
		[RKS_FTRACE] = { "ftrace", RKS_T_FTRACE, false, false },
	};
	int i;

	for (i = 0; i < RKS_NR_PROBES; i++) {
		struct rks_probe *p = &rks_probes[i];

		if (i < RKS_NR_SINGLE) {
			p->name = singles[i].name;
			p->func = singles[i].func;
			p->kret = singles[i].kret;
			p->post = singles[i].post;
		} else {
			p->name = "batch";
			p->func = RKS_NR_TARGETS + i - RKS_BATCH;
		}
		atomic_long_set(&p->hits, 0);
		atomic_long_set(&p->posts, 0);
		atomic_long_set(&p->entries, 0);
		atomic_long_set(&p->returns, 0);
		atomic_long_set(&p->violations, 0);
	}
}

static int __init rks_init(void)
{
	int f, n;

	if (!duration || !timer_us || !quiet_calls) {
		pr_err("duration, timer_us and quiet_calls must be > 0\n");
		return -EINVAL;
	}
	rks_hitters = kcalloc(nr_cpu_ids, sizeof(*rks_hitters), GFP_KERNEL);
	if (!rks_hitters)
		return -ENOMEM;
	rks_setup_probes();
	/* Before any probe of ours exists. */
	for (f = 0; f < RKS_NR_FUNCS; f++)
		memcpy(rks_saved_text[f], rks_func_addr(f), RKS_TEXT_BYTES);
	rks_period = ns_to_ktime((u64)timer_us * NSEC_PER_USEC);
	rks_end = jiffies + duration * HZ;
	rks_dir = debugfs_create_dir(KBUILD_MODNAME, NULL);
	debugfs_create_file("ctl", 0200, rks_dir, NULL, &rks_ctl_fops);
#ifdef CONFIG_X86
	register_die_notifier(&rks_die_nb);
#endif
	rks_phase = RKS_RUNNING;
	n = rks_start_per_cpu(rks_hitter_fn, "rks_hit");
	rks_churn_start();
	rks_registrar = kthread_create(rks_registrar_fn, NULL, "rks_reg");
	if (IS_ERR(rks_registrar)) {
		pr_err("RKS error kthread rks_reg %ld\n", PTR_ERR(rks_registrar));
		rks_registrar = NULL;
	} else {
		get_task_struct(rks_registrar);
		wake_up_process(rks_registrar);
	}
	pr_info("RKS start cpus=%d hitters=%d registrar=%d duration=%u timer_us=%u batch=%d maxactive=%d\n",
		num_online_cpus(), n, !!rks_registrar, duration, timer_us,
		RKS_FILL_FUNCS, RKS_MAXACTIVE);
	return 0;
}

static void __exit rks_exit(void)
{
	debugfs_remove_recursive(rks_dir);
	mutex_lock(&rks_mutex);
	if (rks_phase == RKS_RUNNING) {
		rks_stop_stress();
		rks_churn_stop();
	}
	rks_unregister_all();
	mutex_unlock(&rks_mutex);
#ifdef CONFIG_X86
	unregister_die_notifier(&rks_die_nb);
#endif
	kfree(rks_hitters);
}

module_init(rks_init);
module_exit(rks_exit);
MODULE_DESCRIPTION("SMP stress of kprobes for scripts/rkprobes stress");
MODULE_LICENSE("GPL");
