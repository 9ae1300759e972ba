// SPDX-License-Identifier: GPL-2.0
/*
 * Module and task churn of the stress, in the stress phase, from one kthread
 * of its own ("rks_churn"):
 *
 * - Module churn. /init loads and unloads rks_target.ko in a loop (and keeps
 *   a kprobe event on it); each round here registers a probe by symbol name
 *   on one of its functions: a kprobe on rks_tgt_work() (an ftrace site), a
 *   kprobe and a kretprobe on rks_tgt_work_int3(), or a kprobe on its init
 *   text (rks_tgt_init_work(), which only a coming module accepts). Then it
 *   either waits until the module is gone (the probe GONE, at most 2 s) or
 *   keeps the probe a few ms, and unregisters it. Registration may fail only
 *   as C fails it when the module is absent or going: -ENOENT or -EINVAL;
 *   and on init text -EILSEQ, when the module's init returned between the
 *   address checks and the arch's (which no longer finds the init symbol).
 *   rks_target reports its own probes (on its init text: GONE once init
 *   returned, but on ppc64, see RKS_INIT_TEXT_FREED) through
 *   rks_churn_target_loaded()/_unloaded().
 *
 * - Task churn. Each round also starts a kthread that enters
 *   rks_exit_target() (a kretprobe with RKS_EXIT_MAXACTIVE instances) one to
 *   three levels deep, sleeps there and exits inside it: its instances are
 *   never returned by a function return, only when the task is freed. Every
 *   RKS_EXIT_REREGISTER rounds the kretprobe is unregistered and registered
 *   again, with tasks still inside. At "stop", once every such task has
 *   exited, the kretprobe (registered) must hand out all RKS_EXIT_MAXACTIVE
 *   instances to one nested call of that depth: none was leaked.
 *
 * Every handler checks that its probe is registered (set before the
 * registration, cleared after the unregistration returned).
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/delay.h>
#include <linux/jiffies.h>
#include <linux/kprobes.h>
#include <linux/kthread.h>
#include <linux/module.h>
#include <linux/random.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/string.h>

#include "rks_churn.h"

#define RKS_EXIT_MAXACTIVE	4
#define RKS_EXIT_REREGISTER	16
/* Tasks inside rks_exit_target() at most; more wait for a later round. */
#define RKS_EXIT_MAX_LIVE	64

/* ---- module churn ---- */

enum { RKS_MP_FTRACE, RKS_MP_INT3, RKS_MP_KRET, RKS_MP_INIT, RKS_NR_MP };

struct rks_mprobe {
	const char *name;
	const char *symbol;
	bool kret;
	struct kprobe kp;
	struct kretprobe rp;
	int registered;
	unsigned long attempts, regs, enoent, einval, eilseq, other, gone;
	int other_errno;
	atomic_long_t hits, returns, violations;
};

static struct rks_mprobe rks_mprobes[RKS_NR_MP] = {
	[RKS_MP_FTRACE] = { .name = "kprobe-ftrace", .symbol = "rks_tgt_work" },
	[RKS_MP_INT3] = { .name = "kprobe-int3", .symbol = "rks_tgt_work_int3" },
	[RKS_MP_KRET] = { .name = "kretprobe", .symbol = "rks_tgt_work_int3", .kret = true },
	[RKS_MP_INIT] = { .name = "kprobe-init", .symbol = "rks_tgt_init_work" },
};

/*
 * Upstream powerpc's C arch code (the c and rust builds) oopses when a probe
 * is registered where a GONE probe of an earlier load still waits: its
 * can_optimize() reads the GONE probe's freed slot, NULL
 * (docs/findings/ppc64-gone-probe-optprobe-null.md). The churn thread's
 * probes on rks_target are such probes between an unload and their
 * unregistration, and the next load registers the kprobe event's probe and
 * rks_target's own probes at their addresses. So on those builds the churn
 * thread does not probe rks_target: said in an "RKS skipped" line the host
 * prints, and the module-churn check then asks no registrations of ours.
 */
#define RKS_GONE_REREG_OOPSES	(IS_ENABLED(CONFIG_PPC64) && IS_ENABLED(CONFIG_OPTPROBES) && \
				 !IS_ENABLED(CONFIG_KPROBES_RUST_ARCH))

/* What rks_target reported. */
static atomic_t rks_tgt_loads = ATOMIC_INIT(0);
static atomic_t rks_tgt_unloads = ATOMIC_INIT(0);
static atomic_t rks_tgt_init_gone = ATOMIC_INIT(0);
static atomic_t rks_tgt_bad_loads = ATOMIC_INIT(0);
static atomic_t rks_tgt_exact = ATOMIC_INIT(0);
static atomic_long_t rks_tgt_hits = ATOMIC_LONG_INIT(0);
static atomic_long_t rks_tgt_calls = ATOMIC_LONG_INIT(0);
static atomic_long_t rks_tgt_over = ATOMIC_LONG_INIT(0);
static int rks_tgt_first_bad[2];

void rks_churn_target_loaded(int init_ret, int work_ret, unsigned long init_hits,
			     unsigned long work_hits, unsigned long calls)
{
	atomic_inc(&rks_tgt_loads);
	/* kprobes/enabled may be off for a while (--toggles both): hits <= calls. */
	if (init_ret || work_ret || init_hits > calls || work_hits > calls) {
		if (atomic_inc_return(&rks_tgt_bad_loads) == 1) {
			rks_tgt_first_bad[0] = init_ret;
			rks_tgt_first_bad[1] = work_ret;
		}
	}
}
EXPORT_SYMBOL_GPL(rks_churn_target_loaded);

void rks_churn_target_unloaded(bool init_gone, unsigned long work_hits,
			       unsigned long calls)
{
	atomic_inc(&rks_tgt_unloads);
	if (init_gone)
		atomic_inc(&rks_tgt_init_gone);
	if (work_hits > calls)
		atomic_long_inc(&rks_tgt_over);
	if (work_hits == calls)
		atomic_inc(&rks_tgt_exact);
	atomic_long_add(work_hits, &rks_tgt_hits);
	atomic_long_add(calls, &rks_tgt_calls);
}
EXPORT_SYMBOL_GPL(rks_churn_target_unloaded);

static struct kprobe *rks_mp_kp(struct rks_mprobe *m)
{
	return m->kret ? &m->rp.kp : &m->kp;
}

static int rks_mp_pre(struct kprobe *kp, struct pt_regs *regs)
{
	struct rks_mprobe *m = container_of(kp, struct rks_mprobe, kp);

	atomic_long_inc(&m->hits);
	if (!READ_ONCE(m->registered))
		atomic_long_inc(&m->violations);
	return 0;
}

static int rks_mp_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct kretprobe *rp = get_kretprobe(ri);
	struct rks_mprobe *m;

	if (!rp)
		return 1;
	m = container_of(rp, struct rks_mprobe, rp);
	atomic_long_inc(&m->hits);
	if (!READ_ONCE(m->registered))
		atomic_long_inc(&m->violations);
	return 0;
}

static int rks_mp_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	struct kretprobe *rp = get_kretprobe(ri);
	struct rks_mprobe *m;

	if (!rp)
		return 0;
	m = container_of(rp, struct rks_mprobe, rp);
	atomic_long_inc(&m->returns);
	if (!READ_ONCE(m->registered))
		atomic_long_inc(&m->violations);
	return 0;
}

/* Wait until `kp` is GONE (its module unloaded or its init done), at most 2 s. */
static void rks_mp_wait_gone(struct kprobe *kp)
{
	unsigned long deadline = jiffies + 2 * HZ;

	while (!(READ_ONCE(kp->flags) & KPROBE_FLAG_GONE) &&
	       time_before(jiffies, deadline) && !kthread_should_stop())
		msleep(20);
}

static void rks_mp_round(void)
{
	struct rks_mprobe *m = &rks_mprobes[get_random_u32_below(RKS_NR_MP)];
	struct kprobe *kp = rks_mp_kp(m);
	int ret;

	if (m->kret) {
		memset(&m->rp, 0, sizeof(m->rp));
		m->rp.entry_handler = rks_mp_entry;
		m->rp.handler = rks_mp_ret;
		m->rp.maxactive = 4;
	} else {
		memset(&m->kp, 0, sizeof(m->kp));
		m->kp.pre_handler = rks_mp_pre;
	}
	kp->symbol_name = m->symbol;
	m->attempts++;
	WRITE_ONCE(m->registered, 1);
	smp_mb();	/* before the probe can be hit */
	ret = m->kret ? register_kretprobe(&m->rp) : register_kprobe(&m->kp);
	if (ret) {
		WRITE_ONCE(m->registered, 0);
		if (ret == -ENOENT)
			m->enoent++;
		else if (ret == -EINVAL)
			m->einval++;
		else if (ret == -EILSEQ && m == &rks_mprobes[RKS_MP_INIT])
			m->eilseq++;
		else if (!m->other++)
			m->other_errno = ret;
		return;
	}
	m->regs++;
	if (get_random_u32_below(2))
		rks_mp_wait_gone(kp);
	else
		msleep(get_random_u32_below(30));
	if (READ_ONCE(kp->flags) & KPROBE_FLAG_GONE)
		m->gone++;
	if (m->kret)
		unregister_kretprobe(&m->rp);
	else
		unregister_kprobe(&m->kp);
	WRITE_ONCE(m->registered, 0);
}

/* ---- task churn ---- */

static atomic_long_t rks_exit_calls = ATOMIC_LONG_INIT(0);
static atomic_long_t rks_exit_entries = ATOMIC_LONG_INIT(0);
static atomic_long_t rks_exit_returns = ATOMIC_LONG_INIT(0);
static atomic_long_t rks_exit_violations = ATOMIC_LONG_INIT(0);
static atomic_t rks_exit_live = ATOMIC_INIT(0);
static unsigned long rks_exit_started, rks_exit_start_errors, rks_exit_nmissed;
static unsigned long rks_exit_regs, rks_exit_reg_errors;
static atomic_long_t rks_exit_exited = ATOMIC_LONG_INIT(0);
static int rks_exit_registered;
static struct kretprobe rks_exit_rp;
static struct task_struct *rks_churn_thread;

static int rks_exit_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	if (!get_kretprobe(ri))
		return 1;
	atomic_long_inc(&rks_exit_entries);
	if (!READ_ONCE(rks_exit_registered))
		atomic_long_inc(&rks_exit_violations);
	return 0;
}

static int rks_exit_ret(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	if (!get_kretprobe(ri))
		return 0;
	atomic_long_inc(&rks_exit_returns);
	if (!READ_ONCE(rks_exit_registered))
		atomic_long_inc(&rks_exit_violations);
	return 0;
}

/*
 * Probed by the kretprobe. `depth` more levels of itself below; at the
 * bottom, with `exit_inside`, the task sleeps a little and exits.
 */
static noinline notrace int rks_exit_target(int depth, bool exit_inside)
{
	int ret = 0;

	atomic_long_inc(&rks_exit_calls);
	if (depth > 0) {
		ret = RKS_VIA_PTR(rks_exit_target)(depth - 1, exit_inside);
		/* Hides the result, so that the recursion is not made a loop. */
		asm volatile("" : "+r" (ret));
	} else if (exit_inside) {
		msleep(get_random_u32_below(20));
		atomic_long_inc(&rks_exit_exited);
		atomic_dec(&rks_exit_live);
		module_put_and_kthread_exit(0);
	}
	/* Not a tail call: each level keeps its frame and its return. */
	return ret + 1;
}

static int rks_exiter_fn(void *arg)
{
	RKS_VIA_PTR(rks_exit_target)(get_random_u32_below(3), true);
	/* Not reached: the task exits inside rks_exit_target(). */
	return 0;
}

static int rks_exit_register(void)
{
	int ret;

	memset(&rks_exit_rp, 0, sizeof(rks_exit_rp));
	rks_exit_rp.kp.addr = (kprobe_opcode_t *)rks_exit_target;
	rks_exit_rp.entry_handler = rks_exit_entry;
	rks_exit_rp.handler = rks_exit_ret;
	rks_exit_rp.maxactive = RKS_EXIT_MAXACTIVE;
	WRITE_ONCE(rks_exit_registered, 1);
	smp_mb();	/* before the probe can be hit */
	ret = register_kretprobe(&rks_exit_rp);
	if (ret) {
		WRITE_ONCE(rks_exit_registered, 0);
		if (!rks_exit_reg_errors++)
			pr_err("RKS error register exit kretprobe %d\n", ret);
		return ret;
	}
	rks_exit_regs++;
	return 0;
}

static void rks_exit_unregister(void)
{
	unregister_kretprobe(&rks_exit_rp);
	rks_exit_nmissed += rks_exit_rp.nmissed + rks_exit_rp.kp.nmissed;
	WRITE_ONCE(rks_exit_registered, 0);
}

/* Start one task that exits inside the kretprobe'd function. */
static void rks_exit_spawn(void)
{
	struct task_struct *t;

	if (atomic_read(&rks_exit_live) >= RKS_EXIT_MAX_LIVE)
		return;
	/* Dropped by module_put_and_kthread_exit() in the task. */
	__module_get(THIS_MODULE);
	atomic_inc(&rks_exit_live);
	t = kthread_run(rks_exiter_fn, NULL, "rks_exit");
	if (IS_ERR(t)) {
		atomic_dec(&rks_exit_live);
		module_put(THIS_MODULE);
		rks_exit_start_errors++;
		return;
	}
	rks_exit_started++;
}

static int rks_churn_fn(void *arg)
{
	unsigned int round = 0;

	rks_exit_register();
	while (rks_stress_running()) {
		if (!RKS_GONE_REREG_OOPSES)
			rks_mp_round();
		rks_exit_spawn();
		if (++round % RKS_EXIT_REREGISTER == 0) {
			if (rks_exit_registered)
				rks_exit_unregister();
			rks_exit_register();
		}
		schedule_timeout_idle(1 + get_random_u32_below(HZ / 50 + 1));
	}
	return 0;
}

int rks_churn_start(void)
{
	int i;

	if (RKS_GONE_REREG_OOPSES)
		pr_info("RKS skipped module-churn-probes: the churn thread registers no probes on rks_target on this build: upstream powerpc's C arch code oopses in arch_prepare_optimized_kprobe() when a probe is registered where a GONE probe of an earlier load still waits, which those probes make happen (docs/findings/ppc64-gone-probe-optprobe-null.md); rks_target's own probes and its init-text GONE check still run\n");
	for (i = 0; i < RKS_NR_MP; i++) {
		atomic_long_set(&rks_mprobes[i].hits, 0);
		atomic_long_set(&rks_mprobes[i].returns, 0);
		atomic_long_set(&rks_mprobes[i].violations, 0);
	}
	rks_churn_thread = kthread_create(rks_churn_fn, NULL, "rks_churn");
	if (IS_ERR(rks_churn_thread)) {
		int err = PTR_ERR(rks_churn_thread);

		rks_churn_thread = NULL;
		pr_err("RKS error kthread rks_churn %d\n", err);
		return err;
	}
	get_task_struct(rks_churn_thread);
	wake_up_process(rks_churn_thread);
	return 0;
}

/* Wait until every task started has exited inside rks_exit_target(). */
static bool rks_exit_wait_live(void)
{
	unsigned long deadline = jiffies + 10 * HZ;

	while (atomic_read(&rks_exit_live) && time_before(jiffies, deadline))
		msleep(20);
	return !atomic_read(&rks_exit_live);
}

/*
 * One nested call of RKS_EXIT_MAXACTIVE levels, returning: every level must
 * get an instance. The instances of exited tasks come back when the task is
 * freed, after an RCU grace period: retried for up to 10 s.
 */
static bool rks_exit_pool_full(int *tries)
{
	unsigned long deadline = jiffies + 10 * HZ;
	long entries, returns;
	unsigned long missed;

	for (*tries = 1;; (*tries)++) {
		rcu_barrier();
		entries = atomic_long_read(&rks_exit_entries);
		returns = atomic_long_read(&rks_exit_returns);
		missed = rks_exit_rp.nmissed;
		RKS_VIA_PTR(rks_exit_target)(RKS_EXIT_MAXACTIVE - 1, false);
		if (atomic_long_read(&rks_exit_entries) - entries == RKS_EXIT_MAXACTIVE &&
		    atomic_long_read(&rks_exit_returns) - returns == RKS_EXIT_MAXACTIVE &&
		    rks_exit_rp.nmissed == missed)
			return true;
		if (!time_before(jiffies, deadline))
			return false;
		msleep(100);
	}
}

void rks_churn_stop(void)
{
	long returns_in_churn;
	bool all_exited, pool = false;
	int i, tries = 0;

	if (!rks_churn_thread)
		return;
	kthread_stop(rks_churn_thread);
	put_task_struct(rks_churn_thread);
	rks_churn_thread = NULL;
	all_exited = rks_exit_wait_live();
	returns_in_churn = atomic_long_read(&rks_exit_returns);
	if (all_exited && rks_exit_registered)
		pool = rks_exit_pool_full(&tries);
	if (rks_exit_registered)
		rks_exit_unregister();
	for (i = 0; i < RKS_NR_MP; i++) {
		struct rks_mprobe *m = &rks_mprobes[i];

		pr_info("RKS churn-probe %s attempts=%lu registered=%lu enoent=%lu einval=%lu eilseq=%lu other=%lu gone=%lu hits=%ld returns=%ld violations=%ld\n",
			m->name, m->attempts, m->regs, m->enoent, m->einval, m->eilseq, m->other,
			m->gone, atomic_long_read(&m->hits), atomic_long_read(&m->returns),
			atomic_long_read(&m->violations));
		if (m->other)
			pr_err("RKS error churn-probe %s first unexpected errno %d\n",
			       m->name, m->other_errno);
	}
	pr_info("RKS churn-tasks started=%lu start-errors=%lu exited=%ld calls=%ld entries=%ld returns=%ld nmissed=%lu registrations=%lu registration-errors=%lu violations=%ld pool-tries=%d\n",
		rks_exit_started, rks_exit_start_errors, atomic_long_read(&rks_exit_exited),
		atomic_long_read(&rks_exit_calls), atomic_long_read(&rks_exit_entries),
		atomic_long_read(&rks_exit_returns), rks_exit_nmissed, rks_exit_regs,
		rks_exit_reg_errors, atomic_long_read(&rks_exit_violations), tries);
	pr_info("RKS check task-exit %s %lu tasks exited inside the kretprobe'd function (%s); %ld returns before the final call; %ld handler runs while unregistered; %s\n",
		all_exited && pool && !returns_in_churn && !rks_exit_reg_errors &&
		!atomic_long_read(&rks_exit_violations) && rks_exit_started ? "ok" : "FAIL",
		rks_exit_started, all_exited ? "all gone" : "NOT ALL GONE after 10 s",
		returns_in_churn, atomic_long_read(&rks_exit_violations),
		pool ? "all instances back in the pool" :
		"NOT all instances back in the pool after 10 s");
}

void rks_churn_finish(void)
{
	int loads = atomic_read(&rks_tgt_loads), unloads = atomic_read(&rks_tgt_unloads);
	int bad = atomic_read(&rks_tgt_bad_loads), gone = atomic_read(&rks_tgt_init_gone);
	unsigned long regs = 0, other = 0, violations = 0;
	int i;

	for (i = 0; i < RKS_NR_MP; i++) {
		regs += rks_mprobes[i].regs;
		other += rks_mprobes[i].other;
		violations += atomic_long_read(&rks_mprobes[i].violations);
	}
	pr_info("RKS churn-modules loaded=%d unloaded=%d init-probe-gone=%d bad-loads=%d exact=%d hits=%ld calls=%ld\n",
		loads, unloads, gone, bad, atomic_read(&rks_tgt_exact),
		atomic_long_read(&rks_tgt_hits), atomic_long_read(&rks_tgt_calls));
	if (bad)
		pr_err("RKS error rks_target init: first bad load: init probe %d, work probe %d\n",
		       rks_tgt_first_bad[0], rks_tgt_first_bad[1]);
	pr_info("RKS check module-churn %s rks_target loaded %d and unloaded %d times, its init-text probe GONE at %d exits (%s), %d bad loads, %ld with more hits than calls; %lu probes of ours registered on it, %lu unexpected errnos, %lu handler runs while unregistered\n",
		loads && loads == unloads && gone == (RKS_INIT_TEXT_FREED ? unloads : 0) && !bad &&
		!atomic_long_read(&rks_tgt_over) && (regs || RKS_GONE_REREG_OOPSES) && !other &&
		!violations ?
		"ok" : "FAIL", loads, unloads, gone,
		RKS_INIT_TEXT_FREED ? "expected at every exit" :
		"expected at none: ppc64 modules keep their init text, so it is never GONE before the unload",
		bad, atomic_long_read(&rks_tgt_over),
		regs, other, violations);
}
